"""promtool unit tests that prove every alert a spec emits: it fires, it stays silent, it resolves.

A pure function of the model, like every target. For each alert the generator builds
synthetic raw input series (``compiler.targets.prometheus.proof.inputs``) from an SLI-level timeline and states
what promtool must see:

- a calm baseline in which nothing fires (also the slice every other test leaves alone);
- just under each threshold (0.9x a burn factor, just inside a range): silent;
- just over it, and a full outage: pending before ``for``, firing after it, with the
  exact labels and annotations;
- recovery: resolved once the short window clears (plus ``keep_firing_for``);
- zero traffic (no alert, no NaN poisoning) and missing data (the no-data alert);
- for ranges: above the maximum, below the minimum, a relative spike or drop against the
  value ``offset`` ago, and a move that the floor keeps quiet;
- every scenario declared in the spec.

Inputs hold constant from minute 0, so every window of the SLI equals the input and the
first minute a window has data is known exactly: the test times follow from the rule's
``for`` and the recorded series, not from guesses. promtool 2.42 needs ``interval`` on
every group, compares floats exactly and shows only firing alerts to ``alert_rule_test``;
pending alerts are asserted through the ``ALERTS`` series.
"""

from __future__ import annotations

import math
import re
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

from compiler.model import SLO, LatencySLI, Model, Range, RatioSLI, StateSLI, series
from compiler.model.links import rules_path
from compiler.model.windows import MINUTE, WindowSource, first_hourly_point_minute, first_point_minute, minutes
from compiler.plan import Plan, SpecPlan
from compiler.promql import Matcher, format_duration, quote, render_selector
from compiler.targets import TargetError
from compiler.targets.prometheus import AlertRule, alert_rules
from compiler.targets.prometheus.proof import gotemplate
from compiler.targets.prometheus.proof.inputs import InputError, Inputs
from compiler.targets.prometheus.proof.timeline import EventSeries, Timeline
from compiler.text.numbers import go_float
from compiler.text.yamlout import dump

TESTS_DIR = "prometheus/tests"


def tests_path(slo: SLO) -> str:
    return f"{TESTS_DIR}/{slo.name}.test.yaml"


def _t(minutes: int) -> str:
    return format_duration(minutes * MINUTE)


def _sig(value: float, digits: int = 3) -> float:
    return float(f"{value:.{digits}g}")


def _selector(name: str, labels: Mapping[str, str]) -> str:
    return render_selector(name, [Matcher(key, "=", value) for key, value in sorted(labels.items())])


def _label_text(labels: Mapping[str, str]) -> str:
    return "{" + ", ".join(f"{key}={quote(value)}" for key, value in sorted(labels.items())) + "}"


@dataclass
class Group:
    """One promtool test group: its own inputs, evaluated from minute 0."""

    name: str
    timelines: dict[str, Timeline]
    inputs: Inputs | None
    promql: list[dict[str, Any]] = field(default_factory=list)
    alerts: list[dict[str, Any]] = field(default_factory=list)

    def to_test(self) -> dict[str, Any]:
        test: dict[str, Any] = {"name": self.name, "interval": "1m"}
        test["input_series"] = self.inputs.input_series(self.timelines) if self.inputs else []
        if self.promql:
            test["promql_expr_test"] = sorted(self.promql, key=lambda p: (p["eval_time_m"], p["expr"]))
        if self.alerts:
            test["alert_rule_test"] = sorted(self.alerts, key=lambda a: (a["eval_time_m"], a["alertname"]))
        for key in ("promql_expr_test", "alert_rule_test"):
            if key in test:
                test[key] = [_with_eval_time(check) for check in test[key]]
        return test


def _with_eval_time(check: dict[str, Any]) -> dict[str, Any]:
    """Put ``eval_time`` right after the expression or alert name, as people write these tests."""
    ordered: dict[str, Any] = {}
    for key, value in check.items():
        if key == "eval_time_m":
            continue
        ordered[key] = value
        if key in ("expr", "alertname"):
            ordered["eval_time"] = _t(check["eval_time_m"])
    return ordered


class _SpecTests:
    """Builds every test group of one spec."""

    def __init__(self, model: Model, spec: SpecPlan) -> None:
        slo = spec.slo
        self.model = model
        self.slo = slo
        self.inputs = Inputs(slo)
        self.rules = alert_rules(model, spec)
        self.events = slo.counts_events
        self.slice_a = self.inputs.alert_labels("a")
        self.first = self.inputs.onset  # first minute the SLI value exists (maybe partial)
        # Pairs sharing their windows (a page and a ticket at different factors) are told apart by these too.
        pairs = [(r.labels.get("long_window"), r.labels.get("short_window")) for r in self.rules if r.kind == "burn"]
        self.pair_keys: tuple[str, ...] = ("burn_factor", "severity") if len(set(pairs)) < len(pairs) else ()
        self.steady = max(self.first, self.inputs.settle if not self.events else self.first)

    # -- assertions -------------------------------------------------------------------

    def alert_labels(self, rule: AlertRule, slice_labels: Mapping[str, str]) -> dict[str, str]:
        labels = dict(rule.labels)
        if rule.kind != "no_data":
            labels.update(slice_labels)
        return labels

    def alerts_sample(self, rule: AlertRule, state: str, slice_labels: Mapping[str, str]) -> dict[str, Any]:
        labels = {"__name__": "ALERTS", "alertname": rule.name, "alertstate": state}
        labels.update(self.alert_labels(rule, slice_labels))
        name = labels.pop("__name__")
        return {"labels": name + _label_text(labels), "value": 1}

    def states_at(self, group: Group, minute: int, rules: Sequence[AlertRule], states: Sequence[str | None]) -> None:
        """Assert through ALERTS the exact state of ``rules`` (for slice a) at ``minute``."""
        matchers = {"alertname": rules[0].name}
        for key in ("long_window", "short_window", *self.pair_keys):
            if len(rules) == 1 and key in rules[0].labels:
                matchers[key] = rules[0].labels[key]
        samples = [self.alerts_sample(r, s, self.slice_a) for r, s in zip(rules, states, strict=True) if s]
        group.promql.append(
            {"expr": _selector("ALERTS", matchers), "eval_time_m": minute, "exp_samples": sorted(samples, key=str)}
        )

    def firing_exactly(
        self,
        group: Group,
        minute: int,
        rules: Sequence[AlertRule],
        value: float | None,
        slice_labels: Mapping[str, str],
    ) -> None:
        """alert_rule_test: exactly these alerts fire, with these labels and annotations."""
        expected = []
        for rule in rules:
            labels = self.alert_labels(rule, slice_labels)
            expr_labels = {"slo": self.slo.name, **({} if rule.kind == "no_data" else slice_labels)}
            annotations = {key: gotemplate.render(text, expr_labels, value) for key, text in rule.annotations.items()}
            expected.append({"exp_labels": labels, "exp_annotations": annotations})
        group.alerts.append(
            {"eval_time_m": minute, "alertname": rules[0].name, "exp_alerts": sorted(expected, key=str)}
        )

    def nothing_until(
        self,
        group: Group,
        minute: int,
        selector: Mapping[str, str],
        since: int = 0,
        excluding: Sequence[str] = (),
    ) -> None:
        """No ALERTS sample matching ``selector`` (pending or firing unless it says) from ``since`` to ``minute``.

        ``excluding`` leaves out alert names (by regex alternation) that the check must not see.
        """
        matchers = [Matcher(key, "=", value) for key, value in sorted(selector.items())]
        if excluding:
            matchers.append(Matcher("alertname", "!~", "|".join(re.escape(name) for name in excluding)))
        group.promql.append(
            {
                "expr": f"max_over_time({render_selector('ALERTS', matchers)}[{_t(minute - since)}])",
                "eval_time_m": minute,
                "exp_samples": [],
            }
        )

    # -- warm-up: inputs start at minute 0, real series have history -----------------

    def warmup_end(self, rule: AlertRule) -> int:
        """The minute from which ``rule`` judges the test's input rather than its first partial windows.

        0 when it is judged from the start. The no-data alert fires while an ``offset``
        delays the first value longer than its wait; a lower bound on a gauge whose value
        still builds up from partial rate windows reads as breached. Either may fire, then
        resolve once the value is whole (plus ``keep_firing_for``).
        """
        if rule.kind == "no_data" and minutes(rule.for_ms) < self.first:
            return self.first
        if rule.kind == "range" and rule.spec.side == "Below" and self.inputs.ramps:
            return self.steady + minutes(rule.keep_firing_for_ms) + 1
        return 0

    def warming(self) -> dict[str, int]:
        """Alert names that may fire during the warm-up, with the minute each is judged from."""
        found: dict[str, int] = {}
        for rule in self.rules:
            end = self.warmup_end(rule)
            if end and minutes(rule.for_ms) < end:
                found[rule.name] = max(found.get(rule.name, 0), end)
        return found

    # -- timelines --------------------------------------------------------------------

    def calm_value(self) -> float:
        """A value inside every band and under every burn threshold."""
        uppers: list[float] = []
        lowers: list[float] = []
        if self.slo.objective is not None:
            uppers += [b.factor * self.slo.objective.budget for b in self.slo.objective.burn_alerts]
        for band in (self.slo.normal_range, self.slo.critical_range):
            if band is None:
                continue
            if band.maximum is not None:
                uppers.append(band.maximum)
            if band.minimum is not None:
                lowers.append(band.minimum)
        lo = max(lowers) if lowers else None
        hi = min(uppers) if uppers else None
        if self.events:
            wanted = 0.0 if lo is None else (lo + (hi if hi is not None else 1.0)) / 2
        elif lo is not None and hi is not None:
            wanted = (lo + hi) / 2
        elif hi is not None:
            wanted = hi / 2 if hi > 0 else hi
        elif lo is not None:
            wanted = lo * 2 if lo > 0 else lo + 1
        else:
            floor = max((b.relative.floor for b in self._bands() if b.relative), default=0.0)
            wanted = max(floor * 2, 10.0)
        value = self.inputs.achievable(
            _sig(wanted),
            above=None if lo is None else math.nextafter(lo, -math.inf),
            below=None if hi is None else hi,
        )
        if value is None:
            raise InputError("no reachable value lies inside every band and under every burn threshold")
        return value

    def _bands(self) -> list[Any]:
        return [b for b in (self.slo.normal_range, self.slo.critical_range) if b is not None]

    def timelines(self, active: Timeline, calm: float) -> dict[str, Timeline]:
        result = {"a": active}
        if "b" in self.inputs.slices:
            result["b"] = Timeline.constant(calm, active.minutes, active.rates[0] or 10.0)
        return result

    # -- groups -----------------------------------------------------------------------

    def groups(self) -> list[Group]:
        groups = [self.calm()]
        burns = [r for r in self.rules if r.kind == "burn"]
        for rule in burns:
            groups.append(self.burn_under(rule))
            groups.append(self.burn_over(rule, burns))
        if burns:
            groups.append(self.outage(burns))
            if isinstance(self.slo.sli, RatioSLI | LatencySLI):
                groups.append(self.zero_traffic(burns))
        for rule in self.rules:
            if rule.kind == "range":
                groups.extend(self.range_groups(rule))
            elif rule.kind == "no_data":
                groups.append(self.missing(rule))
        for scenario in self.slo.scenarios:
            groups.append(self.scenario(scenario))
        return groups

    def burn_times(self, rule: AlertRule) -> tuple[int, int]:
        """(minute the pair's condition first holds, minute it fires) for input constant from 0."""
        onset = self.pair_onset(rule, self.first)
        return onset, onset + minutes(rule.for_ms)

    @staticmethod
    def pair_onset(rule: AlertRule, data_start: int) -> int:
        """The first minute both windows of a burn pair have a point, when their input starts at ``data_start``."""
        burn = rule.burn
        assert burn is not None
        return max(first_point_minute(window, data_start) for window in (burn.long_ms, burn.short_ms))

    def threshold(self, rule: AlertRule) -> float:
        assert rule.burn is not None and self.slo.objective is not None
        return self.slo.objective.threshold(rule.burn)

    def calm(self) -> Group:
        calm = self.calm_value()
        horizon = 1
        for rule in self.rules:
            if rule.kind == "burn":
                horizon = max(horizon, self.burn_times(rule)[1])
            elif rule.kind == "range" and rule.band is not None:
                offset = minutes(rule.band.relative.offset_ms) if rule.band.relative else 0
                horizon = max(horizon, offset + self.steady + minutes(rule.for_ms))
            else:
                horizon = max(horizon, minutes(rule.for_ms))
        warming = self.warming()
        settled = max(warming.values(), default=0)
        horizon = max(horizon, settled + 1) + 1
        group = Group(
            f"calm baseline: every slice at {go_float(calm)}, nothing fires for {_t(horizon)}",
            self.timelines(Timeline.constant(calm, horizon), calm),
            self.inputs,
        )
        # Firing only: before the first rate exists the no-data alert is briefly pending, as in Prometheus.
        firing = {"slo": self.slo.name, "alertstate": "firing"}
        self.nothing_until(group, horizon, firing, excluding=sorted(warming))
        if warming:  # those alerts too, once the first windows are whole
            self.nothing_until(group, horizon, firing, since=settled)
        return group

    def burn_under(self, rule: AlertRule) -> Group:
        theta = self.threshold(rule)
        value = self.inputs.achievable(_sig(0.9 * theta), below=math.nextafter(theta, 0))
        if value is None:
            raise InputError(f"cannot reach an error ratio under the burn threshold {theta}")
        onset, fires = self.burn_times(rule)
        group = Group(
            f"{rule.name} {rule.labels['long_window']}/{rule.labels['short_window']}: error ratio "
            f"{go_float(value)} just under the threshold {go_float(theta)} stays silent",
            self.timelines(Timeline.constant(value, fires + 1), 0.0),
            self.inputs,
        )
        self.states_at(group, onset, [rule], [None])
        self.states_at(group, fires + 1, [rule], [None])
        return group

    def burn_over(self, rule: AlertRule, burns: Sequence[AlertRule]) -> Group:
        assert rule.burn is not None
        theta = self.threshold(rule)
        value = self.inputs.achievable(_sig(1.1 * theta), above=theta)
        if value is None:
            raise InputError(f"cannot reach an error ratio over the burn threshold {theta}")
        onset, fires = self.burn_times(rule)
        stop = fires + 3
        short = minutes(rule.burn.short_ms)
        keep = minutes(rule.keep_firing_for_ms)
        incident = Timeline.constant(value, stop)
        hourly = WindowSource.of(rule.burn.short_ms) is WindowSource.HOURLY
        after = short + 70 if hourly else short + 10
        timeline = incident.then(0.0, after + keep + 2)
        clears = self.clears(timeline, rule.burn.short_ms, theta, stop)
        resolved = clears + 1 + keep
        timeline = Timeline(timeline.values[: resolved + 1], timeline.rates[: resolved + 1])
        group = Group(
            f"{rule.name} {rule.labels['long_window']}/{rule.labels['short_window']}: error ratio "
            f"{go_float(value)} just over {go_float(theta)} is pending, fires after {_t(minutes(rule.for_ms))}, "
            f"and resolves once the {rule.labels['short_window']} window clears",
            self.timelines(timeline, 0.0),
            self.inputs,
        )
        if fires > onset:
            self.states_at(group, onset, [rule], ["pending"])
            if fires - 1 > onset:
                self.states_at(group, fires - 1, [rule], ["pending"])
        firing_now = [r for r in burns if self.threshold(r) < value and self.burn_times(r)[1] <= fires]
        self.firing_exactly(group, fires, firing_now, value, self.slice_a)
        self.states_at(group, stop, [rule], ["firing"])
        if keep >= 5:  # still firing after the window cleared, held by keep_firing_for
            self.states_at(group, clears - 4 + keep, [rule], ["firing"])
        self.states_at(group, resolved, [rule], [None])
        return group

    def clears(self, timeline: Timeline, short_ms: int, theta: float, stop: int) -> int:
        """The minute the short window's error ratio drops to the threshold after ``stop`` (upper bound)."""
        short_minutes = minutes(short_ms)
        if WindowSource.of(short_ms) is WindowSource.HOURLY:
            return stop + short_minutes + 65
        if isinstance(self.slo.sli, StateSLI):
            recorded = EventSeries.from_states(timeline, self.inputs.units)
        else:
            recorded = EventSeries.from_counters(timeline)
        minute = recorded.clears_at(short_minutes, theta, stop)
        if minute is None:
            raise InputError("the short window never clears in the recovery test")
        if isinstance(self.slo.sli, StateSLI):
            minute += self.inputs.settle  # a state expression's offset or ranges delay every change
        return minute + 2  # margin for float rounding near the crossing (promtool sums differently)

    def outage(self, burns: Sequence[AlertRule]) -> Group:
        """Every pair pends, fires after its own ``for``, then resolves when its short window clears."""
        times = {self.pair(rule): self.burn_times(rule) for rule in burns}
        last = max(fires for _, fires in times.values())
        stop = last + 3
        longest = max(minutes(rule.burn.short_ms) for rule in burns if rule.burn) + 70
        keep = max(minutes(rule.keep_firing_for_ms) for rule in burns)
        draft = Timeline.constant(1.0, stop).then(0.0, longest + keep + 2)
        resolved = {}
        cleared = {}
        for rule in burns:
            assert rule.burn is not None
            clears = self.clears(draft, rule.burn.short_ms, self.threshold(rule), stop)
            resolved[self.pair(rule)] = clears + 1 + minutes(rule.keep_firing_for_ms)
            cleared[self.pair(rule)] = clears + 1
        end = max(resolved.values())
        group = Group(
            "full outage: every burn-rate pair goes pending, fires after its own `for`, and resolves once its "
            "short window clears while the long window still shows the incident",
            self.timelines(Timeline(draft.values[: end + 1], draft.rates[: end + 1]), 0.0),
            self.inputs,
        )
        checkpoints = sorted({t for pair in times.values() for t in pair})
        for minute in checkpoints:
            states = []
            for rule in burns:
                onset, fires = times[self.pair(rule)]
                states.append("firing" if minute >= fires else "pending" if minute >= onset else None)
            matchers = {"alertname": burns[0].name}
            samples = [self.alerts_sample(r, s, self.slice_a) for r, s in zip(burns, states, strict=True) if s]
            group.promql.append(
                {"expr": _selector("ALERTS", matchers), "eval_time_m": minute, "exp_samples": sorted(samples, key=str)}
            )
        self.firing_exactly(group, last, burns, 1.0, self.slice_a)
        for rule in burns:
            assert rule.burn is not None
            self.states_at(group, resolved[self.pair(rule)], [rule], [None])
            long_ratio = series.window_ratio(self.slo, rule.burn.long_ms)
            # When the short window clears (keep_firing_for may hold the alert past the long window's memory).
            group.promql.append(
                {
                    "expr": f"count(({long_ratio}) > {go_float(self.threshold(rule))})",
                    "eval_time_m": cleared[self.pair(rule)],
                    "exp_samples": [{"labels": "{}", "value": 1}],
                }
            )
        return group

    @staticmethod
    def pair(rule: AlertRule) -> str:
        return f"{rule.labels.get('long_window')}/{rule.labels.get('short_window')}"

    def zero_traffic(self, burns: Sequence[AlertRule]) -> Group:
        """Counters that stop moving give 0 bad of 0 total, not NaN; traffic that returns alerts on time."""
        quiet = 30
        resumed = {}
        for rule in burns:
            start = self.pair_onset(rule, quiet + self.first)
            resumed[self.pair(rule)] = (start, start + minutes(rule.for_ms))
        check = max(start for start, _ in resumed.values())
        budget_at = max(check, first_hourly_point_minute(self.first))  # the budget reads hourly points
        end = max(budget_at, min(fires for _, fires in resumed.values())) + 1
        timeline = Timeline((1.0,) * (quiet + 1), (0.0,) * (quiet + 1)).then(1.0, end - quiet, rate=10.0)
        group = Group(
            f"zero traffic for {_t(quiet)}: nothing fires and nothing is NaN; when failing traffic returns, "
            "every window sees it at once",
            self.timelines(timeline, 0.0),
            self.inputs,
        )
        self.nothing_until(group, quiet, {"slo": self.slo.name, "alertstate": "firing"})
        labels = {"slo": self.slo.name, **self.slice_a}
        for record in (series.BAD_5M, series.TOTAL_5M):
            group.promql.append(
                {
                    "expr": _selector(record, labels),
                    "eval_time_m": quiet,
                    "exp_samples": [{"labels": record + _label_text(labels), "value": 0}],
                }
            )
        states = []
        for rule in burns:
            start, fires = resumed[self.pair(rule)]
            states.append("firing" if check >= fires else "pending")
        samples = [self.alerts_sample(r, st, self.slice_a) for r, st in zip(burns, states, strict=True)]
        group.promql.append(
            {
                "expr": _selector("ALERTS", {"alertname": burns[0].name}),
                "eval_time_m": check,
                "exp_samples": sorted(samples, key=str),
            }
        )
        budget = _selector(series.BUDGET_REMAINING, labels)
        group.promql.append(
            {
                "expr": f"count({budget} == {budget})",
                "eval_time_m": budget_at,
                "exp_samples": [{"labels": "{}", "value": 1}],
            }
        )
        fastest = min(burns, key=lambda r: resumed[self.pair(r)][1])
        self.states_at(group, resumed[self.pair(fastest)][1], [fastest], ["firing"])
        return group

    def missing(self, rule: AlertRule) -> Group:
        wait = minutes(rule.for_ms)
        group = Group(f"{rule.name}: no input series at all, so it fires after {_t(wait)}", {}, None)
        if wait >= 2:
            group.promql.append(
                {
                    "expr": _selector("ALERTS", {"alertname": rule.name}),
                    "eval_time_m": wait - 1,
                    "exp_samples": [self.alerts_sample(rule, "pending", {})],
                }
            )
        self.firing_exactly(group, wait, [rule], None, {})
        group.promql.append(
            {
                "expr": (
                    f"max_over_time(ALERTS{{slo={quote(self.slo.name)}, alertname!={quote(rule.name)}}}[{_t(wait)}])"
                ),
                "eval_time_m": wait,
                "exp_samples": [],
            }
        )
        return group

    # -- ranges -----------------------------------------------------------------------

    def range_groups(self, rule: AlertRule) -> list[Group]:
        band = rule.band
        assert band is not None
        groups = []
        above = rule.spec.side == "Above"
        bound = band.maximum if above else band.minimum
        if bound is not None:
            groups.extend(self.static_range(rule, bound, above))
        rel = band.relative
        if rel is not None and (rel.max_factor if above else rel.min_factor) is not None:
            group = self.relative_range(rule, above)
            if group is None:
                raise InputError(
                    f"no reachable values move past the relative bound of {rule.name} (factor, floor and static "
                    "bounds together), so it could never be shown to fire"
                )
            groups.append(group)
        return groups

    def static_range(self, rule: AlertRule, bound: float, above: bool) -> list[Group]:
        if above:
            beyond = self.inputs.achievable(_sig(bound * 1.1) if bound > 0 else bound + 1, above=bound)
            inside = self.inputs.achievable(_sig(bound * 0.9) if bound > 0 else bound, below=bound)
        else:
            beyond = self.inputs.achievable(
                _sig(bound * 0.9) if bound > 0 else bound - 1, below=math.nextafter(bound, -math.inf)
            )
            inside = self.inputs.achievable(
                _sig(bound * 1.1) if bound > 0 else bound, above=math.nextafter(bound, -math.inf)
            )
        groups = []
        calm = self.calm_value()
        wait = minutes(rule.for_ms)
        keep = minutes(rule.keep_firing_for_ms)
        word = "max" if above else "min"
        if beyond is None:
            raise InputError(
                f"no reachable value lies beyond the {'max' if above else 'min'} {go_float(bound)} of {rule.name}, "
                "so it could never be shown to fire"
            )
        if beyond is not None:
            fires = self.steady + wait
            stop = fires + 3
            resolved = stop + self.inputs.settle + 1 + keep
            timeline = Timeline.constant(beyond, stop).then(calm, resolved - stop)
            group = Group(
                f"{rule.name}: {go_float(beyond)} beyond the {word} {go_float(bound)} is pending, fires after "
                f"{_t(wait)}, and resolves when the value returns",
                self.timelines(timeline, calm),
                self.inputs,
            )
            if wait and self.steady < self.first + wait:
                self.states_at(group, self.steady, [rule], ["pending"])
            self.firing_exactly(group, fires, [rule], beyond, self.slice_a)
            self.states_at(group, stop, [rule], ["firing"])
            if keep > self.inputs.settle + 1:  # back in range, yet held by keep_firing_for
                self.states_at(group, stop + keep, [rule], ["firing"])
            self.states_at(group, resolved, [rule], [None])
            groups.append(group)
        if inside is not None:
            since = self.warmup_end(rule)
            horizon = max(self.steady, since) + wait + 1
            group = Group(
                f"{rule.name}: {go_float(inside)} just inside the {word} {go_float(bound)} stays silent",
                self.timelines(Timeline.constant(inside, horizon), calm),
                self.inputs,
            )
            self.nothing_until(group, horizon, {"alertname": rule.name}, since=since)
            groups.append(group)
        return groups

    def relative_values(
        self, band: Range, factor: float, above: bool, move: float, headroom: float
    ) -> tuple[float, float] | None:
        """(value before, value after) a move of ``move`` x the factor that crosses the relative bound, or None.

        An error ratio ends at most ``headroom`` (of 1) after the move.
        """
        rel = band.relative
        assert rel is not None
        lo_static = band.minimum
        if above:
            base = rel.floor / (factor * move) * 1.2 if rel.floor else self.calm_value()
            base = max(base, lo_static * 1.2 if lo_static else 0.0)
        else:
            base = rel.floor * 2 if rel.floor else self.calm_value()
            if lo_static is not None:
                base = max(base, lo_static / (factor * move) * 1.5)
        if self.events:
            base = min(base, 1.0 / (factor * move) * headroom if above else 1.0)
        start = self.inputs.achievable(_sig(base))
        if start is None or start <= 0:
            return None
        moved = self.inputs.achievable(_sig(start * factor * move))
        if moved is None:
            return None
        return (start, moved) if self.moves_past(band, factor, above, start, moved) else None

    def relative_fit(self, band: Range, factor: float, above: bool) -> tuple[float, float] | None:
        """Values placed in the room a floor and a static bound leave, when a proportional move does not fit."""
        rel = band.relative
        assert rel is not None
        if above:
            upper = band.maximum if band.maximum is not None else (1.0 if self.events else None)
            if upper is None or upper <= rel.floor:
                return None
            moved = self.inputs.achievable(_sig((max(rel.floor, 0.0) + upper) / 2), above=rel.floor, below=upper)
            start = None if moved is None else self.inputs.achievable(_sig(moved / factor / 1.1))
        else:
            start = self.inputs.achievable(_sig(max(rel.floor, (band.minimum or 0.0) / factor) * 1.5 + 1e-9))
            if self.events and start is not None:
                start = min(start, 1.0)
            low = band.minimum if band.minimum is not None else 0.0
            moved = None if start is None else self.inputs.achievable(_sig((low + factor * start) / 2))
        if start is None or moved is None or start <= 0:
            return None
        return (start, moved) if self.moves_past(band, factor, above, start, moved) else None

    @staticmethod
    def moves_past(band: Range, factor: float, above: bool, start: float, moved: float) -> bool:
        """Whether ``start`` -> ``moved`` crosses the relative bound, past its floor, within the static one."""
        assert band.relative is not None
        floor = band.relative.floor
        if above:
            return moved > factor * start and moved > floor and (band.maximum is None or moved <= band.maximum)
        return moved < factor * start and start > floor and (band.minimum is None or moved >= band.minimum)

    def relative_range(self, rule: AlertRule, above: bool) -> Group | None:
        band = rule.band
        assert band is not None and band.relative is not None
        rel = band.relative
        factor = rel.max_factor if above else rel.min_factor
        assert factor is not None
        # A clear move first; smaller ones when a floor or a static bound leaves little room.
        moves = ((1.25, 0.9), (1.1, 0.99), (1.02, 0.999)) if above else ((0.8, 0.9), (0.9, 0.9), (0.98, 0.9))
        found = next(((m, v) for m, room in moves if (v := self.relative_values(band, factor, above, m, room))), None)
        if found is None and (fit := self.relative_fit(band, factor, above)) is not None:
            found = (fit[1] / fit[0] / factor, fit)
        if found is None:
            return None
        move, (start, moved) = found
        offset = minutes(rel.offset_ms)
        jump = offset + self.steady + 5
        wait = minutes(rule.for_ms)
        settle = self.inputs.settle
        fires = jump + settle + wait
        active = Timeline.constant(start, jump - 1).then(moved, fires - jump + 2)
        calm = self.calm_value()
        timelines = self.timelines(active, calm)
        quiet_note = ""
        if above and rel.floor and "b" in timelines:
            small = self.inputs.achievable(_sig(rel.floor / (factor * move) * 0.5))
            if small is not None and small > 0:
                spike = self.inputs.achievable(_sig(small * factor * move))
                if spike is not None and factor * small < spike <= rel.floor:
                    timelines["b"] = Timeline.constant(small, jump - 1).then(spike, fires - jump + 2)
                    quiet_note = f"; slice b moves the same way below the floor {go_float(rel.floor)} and stays quiet"
        verb = "rises" if above else "falls"
        group = Group(
            f"{rule.name}: the value {verb} from {go_float(start)} to {go_float(moved)}, past {go_float(factor)}x "
            f"its value {_t(offset)} earlier, and fires{quiet_note}",
            timelines,
            self.inputs,
        )
        self.nothing_until(group, jump - 1, {"alertname": rule.name})
        if wait and settle < 1 + wait:
            self.states_at(group, jump + settle, [rule], ["pending"])
        self.firing_exactly(group, fires, [rule], moved, self.slice_a)
        return group

    # -- scenarios --------------------------------------------------------------------

    def scenario(self, scenario: Any) -> Group:
        inputs = Inputs(self.slo, dict(scenario.slice_values))
        active = Timeline.from_segments(scenario.segments)
        calm = self.calm_value()
        timelines = {"a": active}
        if "b" in inputs.slices:
            # Missing scrapes miss every slice, so the spec-wide no-data alert can see them.
            values = tuple(None if value is None else calm for value in active.values)
            timelines["b"] = Timeline(values, (Timeline.constant(calm, active.minutes).rates))
        title = f"scenario {scenario.name}" + (f": {scenario.description}" if scenario.description else "")
        group = Group(title, timelines, inputs)
        slice_a = inputs.alert_labels("a")
        for expectation in scenario.expectations:
            minute = expectation.at_ms // MINUTE
            if expectation.kind == "nothing":
                self.nothing_until(group, minute, {"slo": self.slo.name, "alertstate": "firing"})
                continue
            spec_wide = expectation.alert in {rule.name for rule in self.rules if rule.kind == "no_data"}
            selector = {"alertname": expectation.alert or "", "alertstate": "firing", **({} if spec_wide else slice_a)}
            query = f"max(max_over_time({_selector('ALERTS', selector)}[{_t(minute)}]))"
            samples = [{"labels": "{}", "value": 1}] if expectation.kind == "firing" else []
            group.promql.append({"expr": query, "eval_time_m": minute, "exp_samples": samples})
        return group


def render(alert_plan: Plan) -> dict[str, bytes]:
    files: dict[str, bytes] = {}
    problems: list[tuple[SLO, str]] = []
    for spec in alert_plan:
        slo = spec.slo
        try:
            builder = _SpecTests(alert_plan.model, spec)
            tests = [group.to_test() for group in builder.groups()]
        except InputError as exc:
            problems.append((slo, f"cannot generate the promtool tests that prove its alerts: {exc}"))
            continue
        document = {
            "rule_files": [f"../rules/{rules_path(slo).rsplit('/', 1)[1]}"],
            "evaluation_interval": "1m",
            "tests": tests,
        }
        header = (
            f"# promtool unit tests generated by slo-compiler from {slo.source} (spec {slo.name}, "
            f"sha256 {slo.spec_hash}).\n# Run: promtool test rules {tests_path(slo).rsplit('/', 1)[1]}\n"
        )
        files[tests_path(slo)] = (header + dump(document)).encode("utf-8")
    if problems:
        raise TargetError(problems)
    return files
