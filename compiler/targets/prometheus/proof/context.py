"""What every test case of one spec reads: its rules, inputs, slices, and the calm value.

Built once per spec by ``SpecContext.of``; the case modules (``cases_*``), ``asserts``
and ``timing`` take it, or the parts of it they need, as arguments.
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from functools import cached_property

from compiler.model import SLO, Model, Range
from compiler.plan import SpecPlan
from compiler.targets.prometheus import AlertRule, alert_rules
from compiler.targets.prometheus.proof import timing
from compiler.targets.prometheus.proof.inputs import InputError, Inputs
from compiler.targets.prometheus.proof.timeline import DEFAULT_RATE, Timeline

SIGNIFICANT_DIGITS = 3  # test values rounded this far stay readable in a failing test's output
ALL_BAD = 1.0  # every event failing: the largest error ratio, and a full outage
NONE_BAD = 0.0  # no event failing: a recovery (the calm slice holds calm_value, inside every band)
CALM_HEADROOM = 2  # a calm value sits this factor inside a one-sided bound: half an upper, twice a lower or a floor
CALM_ABOVE_NONPOSITIVE = 1  # calm is one unit above a lower bound at or below zero, where a factor cannot move it
CALM_UNBOUNDED = 10.0  # calm for a gauge that no static bound constrains


def readable(value: float, digits: int = SIGNIFICANT_DIGITS) -> float:
    """``value`` to ``digits`` significant digits, so a failing test shows values people can read."""
    return float(f"{value:.{digits}g}")


def halfway(low: float, high: float) -> float:
    """The midpoint of ``low`` and ``high``: as far from either bound as a value can be."""
    return (low + high) / 2


@dataclass(frozen=True)
class SpecContext:
    """One spec's rules and synthetic inputs; slice ``a`` is driven by the tests, ``b`` stays calm."""

    slo: SLO
    inputs: Inputs
    rules: list[AlertRule]
    slice_a: dict[str, str]
    # Pairs sharing their windows (a page and a ticket at different factors) are told apart by these too.
    pair_keys: tuple[str, ...]

    @staticmethod
    def of(model: Model, spec: SpecPlan) -> SpecContext:
        inputs = Inputs(spec.slo)
        rules = alert_rules(model, spec)
        pairs = [(r.labels.get("long_window"), r.labels.get("short_window")) for r in rules if r.kind == "burn"]
        pair_keys: tuple[str, ...] = ("burn_factor", "severity") if len(set(pairs)) < len(pairs) else ()
        return SpecContext(spec.slo, inputs, rules, inputs.alert_labels("a"), pair_keys)

    @property
    def events(self) -> bool:
        """Whether the SLI counts events (an error ratio) rather than reading a gauge or states."""
        return self.slo.counts_events

    @property
    def first(self) -> int:
        """The first minute the SLI value exists (maybe partial)."""
        return self.inputs.onset

    @cached_property
    def steady(self) -> int:
        return timing.steady_minute(self.inputs)

    @property
    def burns(self) -> list[AlertRule]:
        return [rule for rule in self.rules if rule.kind == "burn"]

    def threshold(self, rule: AlertRule) -> float:
        """The error ratio above which a burn pair's windows alert."""
        assert rule.burn is not None and self.slo.objective is not None
        return self.slo.objective.threshold(rule.burn)

    def bands(self) -> list[Range]:
        return [b for b in (self.slo.normal_range, self.slo.critical_range) if b is not None]

    def timelines(self, active: Timeline, calm: float) -> dict[str, Timeline]:
        """Slice ``a`` follows ``active``; slice ``b`` (when the spec is sliced) holds ``calm`` as long."""
        result = {"a": active}
        if "b" in self.inputs.slices:
            result["b"] = Timeline.constant(calm, active.minutes, active.rates[0] or DEFAULT_RATE)
        return result

    def calm_value(self) -> float:
        """A value inside every band and under every burn threshold (worked out once: most cases ask)."""
        return self._calm_value

    @cached_property
    def _calm_value(self) -> float:
        uppers: list[float] = []
        lowers: list[float] = []
        if self.slo.objective is not None:
            uppers += [b.factor * self.slo.objective.budget for b in self.slo.objective.burn_alerts]
        for band in self.bands():
            if band.maximum is not None:
                uppers.append(band.maximum)
            if band.minimum is not None:
                lowers.append(band.minimum)
        lo = max(lowers) if lowers else None
        hi = min(uppers) if uppers else None
        value = self.inputs.achievable(
            readable(self._calm_target(lo, hi)),
            above=None if lo is None else math.nextafter(lo, -math.inf),
            below=None if hi is None else hi,
        )
        if value is None:
            raise InputError("no reachable value lies inside every band and under every burn threshold")
        return value

    def _calm_target(self, lo: float | None, hi: float | None) -> float:
        """The value a calm slice aims for between the highest lower and the lowest upper bound."""
        if self.events:
            return 0.0 if lo is None else halfway(lo, hi if hi is not None else ALL_BAD)
        if lo is not None and hi is not None:
            return halfway(lo, hi)
        if hi is not None:
            return hi / CALM_HEADROOM if hi > 0 else hi
        if lo is not None:
            return lo * CALM_HEADROOM if lo > 0 else lo + CALM_ABOVE_NONPOSITIVE
        floor = max((b.relative.floor for b in self.bands() if b.relative), default=0.0)
        return max(floor * CALM_HEADROOM, CALM_UNBOUNDED)
