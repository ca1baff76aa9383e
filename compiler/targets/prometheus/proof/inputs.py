"""Raw synthetic input series that make a spec's SLI follow a given timeline.

A generated test states what the SLI does (an error ratio, a gauge value, a share of
units in the bad state) minute by minute, per slice; this module works out which raw
series, with which labels and values, produce exactly that through the spec's own
selectors and expressions:

- label values are synthesised to satisfy every matcher (``compiler.promql.synth``);
- ratio and latency SLIs solve the few counters they read for the wanted bad share,
  taking into account which selector matches which series;
- gauge and state expressions are driven through a small steady-state evaluator
  (``compiler.promql.evaluate``): one input is scaled, the others held at values that keep the
  expression linear in it (or, for states, equal to it);
- quantiles place all observations in one bucket, so only bucket-interpolated values are
  reachable (``achievable`` says which).

When no input can be derived the spec is reported: every alert must be provable.
"""

from __future__ import annotations

import functools
import itertools
import math
import re
from collections.abc import Callable, Iterator, Mapping, Sequence
from dataclasses import dataclass
from functools import cached_property

from compiler import promql
from compiler.model import SLO, Condition, GaugeSLI, LatencySLI, QuantileSLI, RatioSLI, Selector, StalenessSLI, StateSLI
from compiler.model.windows import MINUTE, RAW_RANGE_MS, SECOND, minutes
from compiler.promql import Matcher, synth
from compiler.promql import evaluate as minieval
from compiler.targets.prometheus.proof import conditions
from compiler.targets.prometheus.proof.conditions import ConditionSeries, State
from compiler.targets.prometheus.proof.timeline import (
    SAMPLE_SECONDS,
    Timeline,
    render_counter,
    render_counter_runs,
    render_gauge,
    render_gauge_runs,
    render_steps,
)
from compiler.text.numbers import clean_number, go_float

STATE_UNITS = 100  # units (nodes) in the driven slice: error ratios in steps of 1%
CALM_STATE_UNITS = 4  # the calm slice only needs to exist (unless a lower bound needs finer shares)
SLICE_NAMES = ("a", "b")
# Labels tried, in order, to tell a state SLI's units apart when the spec names none.
UNIT_LABEL_CANDIDATES = ("node", "instance", "pod", "unit")
FIRST_RATE_MINUTE = 1  # rate() needs two samples: inputs from minute 0 give a first value at minute 1
TOTAL_LABEL_VARIANTS = 4  # label sets tried for a total series that must not also be an event series
BUSY = "while"  # the state key of a staleness SLI's ``while`` series in a case's condition states
TIME_HORIZON_SECONDS = 1e7  # later than any generated test ends: an expression of time() must read the same then
HELD_INPUT_VALUES = (1.0, 0.0, 2.0)  # values tried, in order, for the inputs a driven expression holds still
LINEAR_TOLERANCE = 1e-9  # float noise allowed when checking that an expression is proportional to its driver

# value, rate (events/s), unit index, units -> gauge value or counter slope (per second)
Coefficient = Callable[[float, float, int, int], float]


class InputError(ValueError):
    """No synthetic input can drive this SLI; the message says why."""


@dataclass(frozen=True)
class _Template:
    labels: dict[str, str]
    counter: bool
    coefficient: Coefficient
    unit: int  # index of the unit this series belongs to (0 when there is one per slice)
    # A timestamp gauge (Unix seconds): its sample is the sample's own time minus the coefficient,
    # so ``time() - series`` reads the coefficient at every minute.
    clock: bool = False

    @cached_property
    def series_text(self) -> str:
        """The series as promtool's ``input_series`` names it, written once per template."""
        return _series_text(self.labels)


@functools.lru_cache(maxsize=4096)
def _name_matcher(name: str | None) -> tuple[Matcher, ...]:
    return (Matcher("__name__", "=", name),) if name else ()


def _on_label(label: str, matchers: Sequence[Matcher]) -> list[Matcher]:
    return [m for m in matchers if m.name == label]


def _series_text(labels: Mapping[str, str]) -> str:
    return _series_text_of(tuple(labels.items()))


@functools.lru_cache(maxsize=16_384)  # a spec's cases write the same series again
def _series_text_of(items: tuple[tuple[str, str], ...]) -> str:
    labels = dict(items)
    name = labels.pop("__name__", None)
    return promql.render_series(name, sorted(labels.items()))


def _fmt(value: float) -> float:
    """Round away binary noise so promtool input stays readable and exact."""
    return clean_number(value)


def _presence_unprovable(presence: str, value: float, holds: bool) -> str:
    state = "up" if holds else "down"
    reads = "nothing above 0" if holds else "above 0"
    return (
        f"cannot derive test inputs: absent_as_zero_while {presence!r} reads {reads} with its series at "
        f"{go_float(value)} (targets {state}), so the tests cannot show that it tells a scraped component "
        "from one that is down; write a check above 0 exactly while the component is scraped (e.g. 'up == 1')"
    )


def _finite(template: _Template, sample: float) -> float:
    """A sample the tests can feed promtool: an expression that scales its input by a tiny factor
    (``x * 5e-324``) needs inputs that overflow to infinity, which no series holds."""
    if not math.isfinite(sample):
        name = template.labels.get("__name__", "an input")
        raise InputError(
            f"cannot derive test inputs: no finite value of {name} gives the values the tests need "
            f"(it would have to be {go_float(sample)})"
        )
    return _fmt(sample)


class Inputs:
    """Synthetic raw inputs for one spec: slice ``a`` is driven by tests, ``b`` stays calm."""

    def __init__(
        self, slo: SLO, scenario_slice: Mapping[str, str] | None = None, slice_names: tuple[str, ...] = SLICE_NAMES
    ) -> None:
        self.slo = slo
        self.sli = slo.sli
        self.slices = slice_names if slo.slice.by else slice_names[:1]
        self.unit_label = self._synthetic_unit_label()
        many = isinstance(self.sli, StateSLI) and (self.unit_label is not None or bool(self._spec_unit_labels()))
        # A state expression that aggregates to one series per slice has a single unit per slice.
        self.units = STATE_UNITS if many else 1
        self.calm_units = self._calm_units() if many else 1
        onset, self.settle = self._timing()
        self.onset = max(onset, *(_first_minute(c.expr) for c in slo.page_conditions)) if slo.page_conditions else onset
        self.drive: Drive | None = None  # how a gauge or state expression is driven, once solved
        # A driven gauge's expression as a function of its inputs, and which inputs are counters.
        self._written: tuple[Callable[[Sequence[float]], float | None], tuple[bool, ...]] | None = None
        self._slice_values: dict[str, dict[str, str]] = {}
        taken: dict[str, set[str]] = {}
        for index, name in enumerate(self.slices):
            given = dict(scenario_slice or {}) if name == "a" else {}
            self._slice_values[name] = self._choose_slice_values(index, given, taken)
            for label, value in self._slice_values[name].items():
                taken.setdefault(label, set()).add(value)
        if len(self.slices) > 1 and all(v == self._slice_values[self.slices[0]] for v in self._slice_values.values()):
            shown = ", ".join(f"{label}={value!r}" for label, value in self._slice_values[self.slices[0]].items())
            raise InputError(
                f"the selectors admit one value of each slice label ({shown}), so every slice would be the same "
                "series: slicing by labels the selectors pin gives one slice; slice by a label whose values tell "
                "the slices apart"
            )
        self._templates = {name: self._build(name, index) for index, name in enumerate(self.slices)}
        self._conditions = {name: self._condition_series(name) for name in self.slices}

    def _calm_units(self) -> int:
        """Units in the calm slice: a few suffice to exist, unless a lower bound on the bad share puts its
        calm value (above the bound) between the quarters that four units can hold."""
        bands = (self.slo.normal_range, self.slo.critical_range)
        bounded_below = any(band is not None and band.minimum is not None for band in bands)
        return STATE_UNITS if bounded_below else CALM_STATE_UNITS

    # -- what tests need to know --------------------------------------------------------

    def alert_labels(self, slice_name: str) -> dict[str, str]:
        """The slice labels every alert of this slice carries."""
        return {label: self._slice_values[slice_name][label] for label in self.slo.slice.by}

    def achievable(self, wanted: float, *, above: float | None = None, below: float | None = None) -> float | None:
        """The reachable value closest to ``wanted`` that lies strictly above ``above`` and at most ``below``."""
        fitting = [
            c
            for c in self._reachable(wanted)
            if (above is None or c > above) and (below is None or c <= below) and (c >= 0 or self._signed)
        ]
        return min(fitting, key=lambda c: (abs(c - wanted), c)) if fitting else None

    def shown(self, value: float) -> float:
        """The value Prometheus computes (and an alert's annotation shows) for the inputs written for ``value``.

        Inputs are written with 12 significant digits, so a gauge that scales its input (``x * 3.3``) reads
        0.999999999999 for a wanted 1: humanize shows ``1000m``, not ``1``. The expression is evaluated
        on the inputs as written; a value that cannot be told apart from ``value`` is ``value``.
        """
        if self._written is None or self.drive is None:
            return value
        value_of, counters = self._written
        inputs = self.drive.inputs(value, len(counters))
        as_written = [
            clean_number(x * SAMPLE_SECONDS) / SAMPLE_SECONDS if counter else clean_number(x)
            for x, counter in zip(inputs, counters, strict=True)
        ]
        got = value_of(as_written)
        return value if got is None or not math.isfinite(got) else got

    @property
    def _signed(self) -> bool:
        return isinstance(self.sli, GaugeSLI)

    def _reachable(self, wanted: float) -> list[float]:
        if isinstance(self.sli, StateSLI):
            return [k / self.units for k in range(self.units + 1)]
        if isinstance(self.sli, QuantileSLI):
            return [value for value, _ in self._quantile_buckets()]
        if isinstance(self.sli, RatioSLI | LatencySLI):
            return [min(1.0, max(0.0, _fmt(wanted)))]
        low, high = self._gauge_reach()
        return [min(high, max(low, _fmt(wanted)))]

    def _gauge_reach(self) -> tuple[float, float]:
        """The values a gauge reaches with inputs real series can have: what its drive allows, and
        0..1 for a gauge whose unit is ratio (a share: more hits than requests is no input)."""
        low, high = (self.drive.low, self.drive.high) if self.drive is not None else (-math.inf, math.inf)
        if self.slo.unit == "ratio":
            low, high = max(low, 0.0), min(high, 1.0)
        return low, high

    def per_minute(self, timelines: Mapping[str, Timeline]) -> list[tuple[_Template, list[float | None]]]:
        """Each raw series with its per-minute gauge value or counter increment (None: no sample)."""
        return [
            (template, [sample for sample, count in runs for _ in range(count)])
            for template, runs in self.per_run(timelines)
        ]

    def per_run(
        self, timelines: Mapping[str, Timeline], states: Mapping[str, State] | None = None
    ) -> list[tuple[_Template, list[tuple[float | None, int]]]]:
        """``per_minute`` as runs of equal samples, (sample, minutes): a case holds its values for hours,
        so inputs are computed and written once per run. Adjacent equal runs are merged.

        Then the series of the spec's conditions, constant for as long as the slice's timeline, each
        condition holding unless ``states`` says it is broken or absent."""
        result = self._sli_runs(timelines)
        for name in self.slices:
            timeline = timelines.get(name)
            if timeline is None:
                continue
            length = sum(count for _, count, _, _ in timeline.runs)
            for condition_name, series in self._conditions[name]:
                state = (states or {}).get(condition_name, "holds")
                value = series.value(state)
                if value is None:
                    continue
                sample = _fmt(value * SAMPLE_SECONDS) if series.counter else _fmt(value)
                template = _Template(series.labels, series.counter, _constant(value), 0)
                result.append((template, [(sample, length)]))
        return result

    def _sli_runs(self, timelines: Mapping[str, Timeline]) -> list[tuple[_Template, list[tuple[float | None, int]]]]:
        result = []
        for name in self.slices:
            timeline = timelines.get(name)
            if timeline is None:
                continue
            units = self.units if name == "a" else self.calm_units
            for template in self._templates[name]:
                runs: list[tuple[float | None, int]] = []
                for start, count, value, rate in timeline.runs:
                    if value is None:
                        _extend(runs, None, count)
                    elif template.clock:
                        for minute in range(start, start + count):
                            _extend(runs, self._sample(template, value, rate, units, minute), 1)
                    else:
                        _extend(runs, self._sample(template, value, rate, units, start), count)
                result.append((template, runs))
        return result

    @staticmethod
    def _sample(template: _Template, value: float, rate: float, units: int, minute: int) -> float:
        """One series' sample (a gauge) or increment (a counter) at ``minute`` for the SLI's value and rate."""
        slope_or_value = template.coefficient(value, rate, template.unit, units)
        if template.clock:
            slope_or_value = minute * SAMPLE_SECONDS - slope_or_value
        if template.counter and slope_or_value < 0:
            raise InputError(_backwards(template.labels, value))
        sample = slope_or_value * SAMPLE_SECONDS if template.counter else slope_or_value
        return _finite(template, sample)

    def input_series(
        self, timelines: Mapping[str, Timeline], states: Mapping[str, State] | None = None
    ) -> list[dict[str, str]]:
        """promtool ``input_series`` for the given per-slice timelines (a missing slice has no series)."""
        return [
            {
                "series": template.series_text,
                "values": _render(template, samples),
            }
            for template, samples in self.per_run(timelines, states)
        ]

    def condition_series(self, minutes: int, states: Mapping[str, State] | None = None) -> list[dict[str, str]]:
        """promtool ``input_series`` of the conditions alone, every slice, ``minutes`` long (no SLI input)."""
        timelines = {name: Timeline.constant(None, minutes) for name in self.slices}
        return [
            {"series": template.series_text, "values": _render(template, samples)}
            for template, samples in self.per_run(timelines, states)
            if any(sample is not None for sample, _ in samples)
        ]

    def breakable(self, name: str) -> bool:
        """Whether some value of a condition's series breaks it (not only their absence)."""
        return any(
            series.broken is not None for found in self._conditions.values() for key, series in found if key == name
        )

    @property
    def held_conditions(self) -> tuple[Condition, ...]:
        """The conditions whose series the tests hold constant: the spec's, and a staleness SLI's ``while``
        (named ``BUSY``: a case breaks it to show an idle unit reads 0)."""
        busy = self.sli.busy if isinstance(self.sli, StalenessSLI) else None
        extra = (Condition("confirmed_by", BUSY, busy, ""),) if busy else ()
        return (*self.slo.page_conditions, *extra)

    def _condition_series(self, slice_name: str) -> list[tuple[str, ConditionSeries]]:
        """Each condition's series in one slice with the values that make it hold and break it."""
        found: list[tuple[str, ConditionSeries]] = []
        seen: set[str] = set()
        for condition in self.held_conditions:
            labels, counters = self._expr_series(slice_name, 0, condition.expr)
            try:
                holds, broken = conditions.solve(condition, labels, counters)
            except conditions.ConditionError as exc:
                raise InputError(str(exc)) from exc
            downs: Sequence[float | None] = broken if broken is not None else [None] * len(labels)
            for series_labels, counter, up, down in zip(labels, counters, holds, downs, strict=True):
                text = _series_text(series_labels)
                if text not in seen:
                    seen.add(text)
                    found.append((condition.name, ConditionSeries(series_labels, counter, up, down)))
        return found

    def presence_series(self, value: float, minutes: int) -> list[dict[str, str]]:
        """promtool ``input_series`` of the presence expression alone, held at ``value`` in every slice
        (a counter it reads increases at ``value`` per second).

        A gauge over counters created on their first event is proven with these only: the
        component's targets up (1) or down (0), and its counters not created yet.
        """
        sli = self.sli
        assert isinstance(sli, GaugeSLI) and sli.absent_as_zero_while is not None
        found: dict[str, bool] = {}
        for name in self.slices:
            labels, counters = self._expr_series(name, 0, sli.absent_as_zero_while)
            found.update((_series_text(series), counter) for series, counter in zip(labels, counters, strict=True))
        gauge = render_gauge([value] * (minutes + 1))
        counter = render_counter([_fmt(value * SAMPLE_SECONDS)] * (minutes + 1))  # rate() reads ``value``
        return [{"series": series, "values": counter if rate else gauge} for series, rate in found.items()]

    def check_presence(self, up: float, down: float) -> None:
        """The presence expression must read above 0 in each slice with its series at ``up`` (targets
        scraped) and not at ``down``: the tests show the 0 it stands for, and no data without it."""
        sli = self.sli
        assert isinstance(sli, GaugeSLI) and sli.absent_as_zero_while is not None
        presence = sli.absent_as_zero_while
        for name in self.slices:
            labels, counters = self._expr_series(name, 0, presence)
            for value, holds in ((up, True), (down, False)):
                series = [minieval.Series(lab, value, counter) for lab, counter in zip(labels, counters, strict=True)]
                try:
                    result = minieval.evaluate(presence, series)
                except minieval.Unsupported as exc:
                    raise InputError(
                        f"cannot derive test inputs: {exc}; the generated tests compute absent_as_zero_while's "
                        "value for their inputs, so write it without that construct (e.g. 'up == 1')"
                    ) from exc
                values = [result] if isinstance(result, float) else [sample for _, sample in result]
                if any(sample > 0 for sample in values) != holds:
                    raise InputError(_presence_unprovable(presence, value, holds))

    def openmetrics(self, timelines: Mapping[str, Timeline], start_seconds: int) -> str:
        """The same inputs as OpenMetrics text with timestamps one minute apart, for backfilling a real TSDB."""
        families: dict[str, list[str]] = {}
        for template, samples in self.per_minute(timelines):
            name = template.labels["__name__"]
            labels = ",".join(
                f"{key}={promql.quote(value)}" for key, value in sorted(template.labels.items()) if key != "__name__"
            )
            total = 0.0
            started = False
            lines = families.setdefault(name, [])
            for minute, sample in enumerate(samples):
                if sample is None:
                    continue
                if template.counter:
                    total = total + sample if started else 0.0
                    started = True
                    value = total
                elif template.clock:
                    value = _fmt(sample + start_seconds)
                else:
                    value = sample
                lines.append(f"{name}{{{labels}}} {value!r} {start_seconds + minute * MINUTE // SECOND}")
        text = []
        for name in sorted(families):
            # "unknown" keeps each sample name equal to its family name (OpenMetrics counters would need
            # the family without _total); the TSDB stores samples the same way whatever the type.
            text.append(f"# TYPE {name} unknown")
            text.extend(families[name])
        return "\n".join(text) + "\n# EOF\n"

    # -- timing -------------------------------------------------------------------------

    def _timing(self) -> tuple[int, int]:
        """(minute the recorded value first exists, minutes a change needs to show fully).

        An ``offset`` delays the first value by its length, as inputs start at minute 0;
        nested ranges (subqueries of ranges) add up to how long a change takes to show.
        """
        if isinstance(self.sli, StateSLI | GaugeSLI):
            offset = minutes(promql.offsets_ms(self.sli.expr))
            lookback = minutes(promql.lookback_ms(self.sli.expr))
            if isinstance(self.sli, StateSLI):
                return offset, lookback
            # rate() and its kin need two samples, so their value exists from minute 1;
            # max_over_time(x[5m]) and subqueries already read the sample at minute 0.
            ranges = promql.analyse(self.sli.expr).ranges_ms
            calls = promql.range_calls(self.sli.expr)
            two_samples = len(calls) == len(ranges) and all(f in promql.TWO_SAMPLE_FUNCTIONS for f, _ in calls)
            return (FIRST_RATE_MINUTE if ranges and two_samples else 0) + offset, lookback
        # Event SLIs read the 5m rate: a change shows fully once its window holds only the change.
        return FIRST_RATE_MINUTE, minutes(RAW_RANGE_MS)

    @property
    def ramps(self) -> bool:
        """Whether a gauge's value builds up from its ranges' partial first windows.

        With input from minute 0 a ``rate(x[5m])`` reads one minute of increase over five
        at minute 1: the value climbs to its input over the window, so a lower bound reads
        as breached until it has (real series have history and do not).
        """
        if not isinstance(self.sli, GaugeSLI):
            return False
        return any(function in promql.TWO_SAMPLE_FUNCTIONS for function, _ in promql.range_calls(self.sli.expr))

    # -- slice and unit labels ----------------------------------------------------------

    def _slice_matchers(self, slice_index: int) -> list[Matcher]:
        """Matchers that bind slice label values for this kind of SLI."""
        sli = self.sli
        found: list[Matcher] = list(self.slo.slice.matchers)
        if isinstance(sli, RatioSLI):
            for selector in (*sli.bad, *sli.good, *sli.total):
                found.extend(selector.matchers)
        elif isinstance(sli, LatencySLI):
            found.extend(sli.matchers)
            found.extend(sli.thresholds[slice_index % len(sli.thresholds)].when)
        elif isinstance(sli, QuantileSLI):
            found.extend(sli.matchers)
        else:
            for _, matchers in promql.analyse(sli.expr).selectors:
                found.extend(matchers)
        for join in self.slo.slice.joins:
            found.extend(m for m in join.info.matchers if m.name in join.labels)
        return found

    def _choose_slice_values(self, index: int, given: dict[str, str], taken: Mapping[str, set[str]]) -> dict[str, str]:
        """Readable values (``cluster-a``) that satisfy the selectors and differ between slices."""
        matchers = self._slice_matchers(index)
        values: dict[str, str] = {}
        for label in self.slo.slice.by:
            on_label = _on_label(label, matchers)
            if label in given:
                if not synth.satisfies(given[label], on_label):
                    raise InputError(f"slice value {label}={given[label]!r} does not match the spec's selectors")
                values[label] = given[label]
                continue
            prefer = f"{label.replace('_', '-')}-{self.slices[index]}"
            value = synth.label_value(label, on_label, prefer=prefer)
            if value in taken.get(label, set()):
                value = synth.label_value(label, on_label, index=index, prefer=prefer)
            if value is None or value == "":
                raise InputError(f"no value of slice label '{label}' satisfies every selector of the SLI")
            values[label] = value
        return values

    def _unit_value(self, label: str, slice_name: str, unit: int) -> str:
        return f"{label.replace('_', '-')}-{slice_name}-{unit}"

    def _spec_unit_labels(self) -> list[str]:
        """Labels the spec itself makes tell units apart: what the joins and ``on (...)`` match on."""
        attached = set(self.slo.slice.joined_labels)
        names = [label for label in self.slo.slice.source_labels if label not in self.slo.slice.by]
        if isinstance(self.sli, StateSLI | GaugeSLI):
            extra = promql.matching_labels(self.sli.expr)
            names += [label for label in extra if label not in names and label not in attached]
        return names + [label for label in self._fleet_units() if label not in names]

    def _fleet_units(self) -> tuple[str, ...]:
        """A fleet's unit labels: the raw series carry them, as the per-unit rules read them."""
        return self.slo.fleet.units if self.slo.fleet is not None else ()

    def _synthetic_unit_label(self) -> str | None:
        """A label that tells a state SLI's units apart when the spec names none.

        ``kube_node_status_condition{condition="Ready"}`` sliced by cluster has one series
        per node, but nothing in the spec says which label tells nodes apart: without one,
        the test's units would be identical series. None when the spec names one, or when
        the expression aggregates every candidate away (one state per slice).
        """
        if not isinstance(self.sli, StateSLI) or self._spec_unit_labels():
            return None
        constrained = {matcher.name for _, matchers in promql.analyse(self.sli.expr).selectors for matcher in matchers}
        constrained.update(matcher.name for matcher in self.slo.slice.matchers)
        taken = {*self.slo.slice.by, *self.slo.slice.joined_labels, *constrained}
        for label in UNIT_LABEL_CANDIDATES:
            if label not in taken and not promql.labels_lost(self.sli.expr, (label,)):
                return label
        return None

    def _unit_labels(self, slice_name: str, unit: int, extra: Sequence[str]) -> dict[str, str]:
        """Labels that tell units (nodes, instances) apart and that the joins match on, as raw series carry them."""
        attached = set(self.slo.slice.joined_labels)
        names = [label for label in self.slo.slice.source_labels if label not in self.slo.slice.by]
        names += [label for label in extra if label not in names and label not in attached]
        names += [label for label in self._fleet_units() if label not in names]
        if self.unit_label is not None and self.unit_label not in names:
            names.append(self.unit_label)
        return {label: self._unit_value(label, slice_name, unit) for label in names if label not in self.slo.slice.by}

    def _fixed(self, slice_name: str, unit: int, extra: Sequence[str] = ()) -> dict[str, str]:
        joined = set(self.slo.slice.joined_labels)
        fixed = {k: v for k, v in self._slice_values[slice_name].items() if k not in joined}
        fixed.update(self._unit_labels(slice_name, unit, extra))
        return fixed

    def _labels_for(self, selector: Selector, fixed: Mapping[str, str], what: str) -> dict[str, str]:
        matchers = (*_name_matcher(selector.metric), *selector.matchers)
        labels = synth.series_labels(matchers, fixed)
        if labels is None:
            rendered = promql.render_selector(selector.metric, selector.matchers)
            raise InputError(f"cannot synthesise a series for {what} {rendered} in slice {dict(fixed)}")
        return labels

    def _info_series(self, slice_name: str, unit: int, extra: Sequence[str] = ()) -> list[_Template]:
        """One info series per join for this unit; a unit label keeps one value across all of them."""
        templates = []
        slice_values = self._slice_values[slice_name]
        for join in self.slo.slice.joins:
            fixed = {
                label: slice_values[label] if label in slice_values else self._unit_value(label, slice_name, unit)
                for label in (*join.on, *join.labels)
            }
            labels = self._labels_for(join.info, fixed, "a join's info metric")
            templates.append(_Template(labels, False, lambda v, r, u, n: 1.0, unit))
        return templates

    # -- per kind -----------------------------------------------------------------------

    def _build(self, slice_name: str, index: int) -> list[_Template]:
        sli = self.sli
        if isinstance(sli, RatioSLI):
            return self._ratio(slice_name, sli)
        if isinstance(sli, LatencySLI):
            return self._latency(slice_name, index, sli)
        if isinstance(sli, QuantileSLI):
            return self._quantile(slice_name, sli)
        if isinstance(sli, StateSLI):
            return self._state(slice_name, sli)
        if isinstance(sli, StalenessSLI):
            return self._staleness(slice_name, sli)
        return self._gauge(slice_name, sli)

    def _ratio(self, slice_name: str, sli: RatioSLI) -> list[_Template]:
        fixed = self._fixed(slice_name, 0)
        events = sli.bad or sli.good
        event_labels = self._labels_for(events[0], fixed, "bad events" if sli.bad else "good events")
        other_labels = None
        for selector in sli.total:
            for variant in range(TOTAL_LABEL_VARIANTS):
                candidate = synth.series_labels((*_name_matcher(selector.metric), *selector.matchers), fixed, variant)
                if candidate is None:
                    continue
                if not any(synth.matches(candidate, _full(s)) for s in events) and candidate != event_labels:
                    other_labels = candidate
                    break
            if other_labels is not None:
                break
        if other_labels is None:
            raise InputError("every synthetic total series is also a bad (or good) event: cannot set a ratio")

        def count(labels: Mapping[str, str], selectors: Sequence[Selector]) -> int:
            return sum(1 for s in selectors if synth.matches(labels, _full(s)))

        in_total_e, in_total_o = count(event_labels, sli.total), count(other_labels, sli.total)
        in_events_e = count(event_labels, events)
        if in_events_e == 0 or in_total_o == 0:
            raise InputError("the synthetic series do not reach the SLI's selectors")
        bad_form = bool(sli.bad)

        def event_rate(value: float, rate: float, unit: int, units: int) -> float:
            share = value if bad_form else 1.0 - value
            return share * rate / in_events_e

        def other_rate(value: float, rate: float, unit: int, units: int) -> float:
            return max(0.0, (rate - in_total_e * event_rate(value, rate, unit, units)) / in_total_o)

        if in_total_e and in_total_e / in_events_e > 1:
            raise InputError("a bad-event series is counted more than once in the total")
        return [
            _Template(event_labels, True, event_rate, 0),
            _Template(other_labels, True, other_rate, 0),
            *self._info_series(slice_name, 0),
        ]

    def _latency(self, slice_name: str, index: int, sli: LatencySLI) -> list[_Template]:
        fixed = self._fixed(slice_name, 0)
        threshold = sli.thresholds[index % len(sli.thresholds)]
        base = Selector(f"{sli.histogram}_count", (*sli.matchers, *threshold.when))
        count_labels = self._labels_for(base, fixed, "the histogram")
        bucket_labels = {**count_labels, "__name__": f"{sli.histogram}_bucket", "le": go_float(threshold.le)}
        inf_labels = {**bucket_labels, "le": "+Inf"}
        templates = [
            _Template(count_labels, True, lambda v, r, u, n: r, 0),
            _Template(bucket_labels, True, lambda v, r, u, n: (1.0 - v) * r, 0),
            _Template(inf_labels, True, lambda v, r, u, n: r, 0),
        ]
        for selector in sli.total:
            labels = self._labels_for(selector, fixed, "total events")
            if any(synth.matches(labels, _full(e)) for e in sli.errors):
                raise InputError("the synthetic total series also matches the errors selector")
            templates.append(_Template(labels, True, lambda v, r, u, n: r, 0))
            break
        for selector in sli.errors:
            labels = self._labels_for(selector, fixed, "error events")
            templates.append(_Template(labels, True, lambda v, r, u, n: 0.0, 0))
            break
        return [*templates, *self._info_series(slice_name, 0)]

    def _quantile_buckets(self) -> list[tuple[float, int]]:
        """(the quantile's value, index of the bucket holding every observation), ``len(edges)`` for +Inf."""
        sli = self.sli
        assert isinstance(sli, QuantileSLI)
        result = []
        lower = 0.0
        for index, edge in enumerate(sli.buckets):
            start = lower if index else (0.0 if edge > 0 else edge)
            result.append((start + (edge - start) * sli.quantile, index))
            lower = edge
        result.append((sli.buckets[-1], len(sli.buckets)))
        return result

    def _quantile(self, slice_name: str, sli: QuantileSLI) -> list[_Template]:
        fixed = self._fixed(slice_name, 0)
        base = self._labels_for(Selector(f"{sli.histogram}_bucket", sli.matchers), fixed, "the histogram")
        buckets = self._quantile_buckets()

        def holder(value: float) -> int:
            return min(buckets, key=lambda b: abs(b[0] - value))[1]

        templates = []
        for index, edge in enumerate([*sli.buckets, math.inf]):
            labels = {**base, "le": "+Inf" if edge == math.inf else go_float(edge)}

            def slope(v: float, r: float, u: int, n: int, index: int = index) -> float:
                return 1.0 if index >= holder(v) else 0.0

            templates.append(_Template(labels, True, slope, 0))
        return [*templates, *self._info_series(slice_name, 0)]

    def _expr_series(self, slice_name: str, unit: int, expr: str) -> tuple[list[dict[str, str]], list[bool]]:
        counters = {(name, matchers) for name, matchers in promql.counter_selectors(expr)}
        selectors = list(dict.fromkeys(promql.analyse(expr).selectors))
        on_labels = promql.matching_labels(expr)
        fixed = self._fixed(slice_name, unit, on_labels)
        labels = [
            self._labels_for(Selector(name, matchers), fixed, "the expression's input") for name, matchers in selectors
        ]
        return labels, [(name, matchers) in counters for name, matchers in selectors]

    def _value_of(
        self, expr: str, labels: list[dict[str, str]], counters: list[bool]
    ) -> Callable[[Sequence[float]], float | None]:
        """The expression's steady-state value for given input values (None unless one series)."""
        return _value_of(expr, labels, counters)

    def _solve(self, expr: str, labels: list[dict[str, str]], counters: list[bool], state: bool) -> Drive:
        """How to set the inputs so ``expr`` follows the wanted value (``_solved``, asked once per distinct
        expression, input series and kind: a fleet's units and a spec's cases share their calm slice, and
        a fleet's units, whose series differ only in label values the expression never reads, one solve)."""
        return solve(expr, labels, counters, state)

    def _driven(self, slice_name: str, expr: str, state: bool) -> list[_Template]:
        templates: list[_Template] = []
        solution: Drive | None = None
        for unit in range(self.units if slice_name == "a" else self.calm_units):
            labels, counters = self._expr_series(slice_name, unit, expr)
            if solution is None:
                solution = self._solve(expr, labels, counters, state)
                self.drive = solution
                if not state:
                    self._written = (self._value_of(expr, labels, counters), tuple(counters))
            for index, (series_labels, counter) in enumerate(zip(labels, counters, strict=True)):
                coefficient = _state_coefficient if state and index == solution.driver else solution.coefficient(index)
                templates.append(_Template(series_labels, counter, coefficient, unit))
            templates.extend(self._info_series(slice_name, unit, promql.matching_labels(expr)))
        return templates

    def _state(self, slice_name: str, sli: StateSLI) -> list[_Template]:
        return self._driven(slice_name, sli.expr, state=True)

    def _gauge(self, slice_name: str, sli: GaugeSLI) -> list[_Template]:
        return self._driven(slice_name, sli.expr, state=False)

    def _staleness(self, slice_name: str, sli: StalenessSLI) -> list[_Template]:
        """One timestamp gauge per slice that lags the clock by the wanted staleness.

        A staleness of 0 is a gauge that advances with every sample (``0+60x30``); one held
        above the bound is a gauge that stopped advancing that long ago. The value never goes
        below 0: a timestamp from the future is no input.
        """
        name, matchers = promql.parse_selector(sli.timestamp)
        labels = self._labels_for(Selector(name, matchers), self._fixed(slice_name, 0), "the timestamp gauge")
        self.drive = Drive(0, None, (), 1.0, 0.0, math.inf)
        return [_Template(labels, False, _scaled(1.0), 0, clock=True), *self._info_series(slice_name, 0)]


@dataclass(frozen=True)
class Drive:
    """Inputs as functions of the wanted value ``v``: ``driver`` at ``v * scale``, ``partner`` (a share's
    other side) at ``1 - v * scale``, every other input held at its constant.

    ``low`` and ``high`` bound the values this reaches with inputs real series can have:
    a counter never runs backwards, and a share's two sides stay within 0..1 of their sum.
    """

    driver: int | None
    partner: int | None
    held: tuple[tuple[int, float], ...]
    scale: float = 1.0
    low: float = -math.inf
    high: float = math.inf

    def inputs(self, value: float, count: int) -> list[float]:
        """The value of each of the ``count`` inputs that gives ``value``."""
        values = [0.0] * count
        for index, constant in self.held:
            values[index] = constant
        if self.driver is not None:
            values[self.driver] = value * self.scale
        if self.partner is not None:
            values[self.partner] = 1.0 - value * self.scale
        return values

    def coefficient(self, index: int) -> Coefficient:
        """Input ``index`` as a function of the wanted value, for the per-minute series."""
        if index == self.driver:
            return _scaled(self.scale)
        if index == self.partner:
            return _complement(self.scale)
        return _constant(dict(self.held)[index])

    def fit(self, value_of: Callable[[Sequence[float]], float | None], state: bool) -> Drive | None:
        """This drive with its scale and reach when the expression follows it, else None."""
        count = len(self.held) + (self.driver is not None) + (self.partner is not None)

        def at(value: float) -> float | None:
            return value_of(self.inputs(value, count))

        if state:
            return self if at(1.0) == 1.0 and at(0.0) == 0.0 else None
        probes = (1.0, 0.5, 0.25) if self.partner is not None else (1.0, 2.0, 0.5)
        one = at(1.0)
        if one is None or one == 0 or not math.isfinite(one):
            return None
        for probe in probes[1:]:
            got = at(probe)
            if got is None or not math.isclose(got, probe * one, rel_tol=LINEAR_TOLERANCE):
                return None
        if self.partner is not None and at(0.0) != 0.0:
            return None
        zero = at(0.0)  # proportional down to 0 too: a guard such as (x == bool 0) * ... can jump there
        if zero is not None and math.isfinite(zero) and zero != 0.0:
            return None
        return self._reach(1.0 / one, one)

    def _reach(self, scale: float, one: float) -> Drive:
        low, high = -math.inf, math.inf
        if self.partner is not None:  # the share v * scale within 0..1
            low, high = min(0.0, one), max(0.0, one)
        return Drive(self.driver, self.partner, self.held, scale, low, high)

    def within_counters(self, counters: Sequence[bool]) -> Drive:
        """A driven counter only grows: its value v * scale is at least 0."""
        if self.driver is None or not counters[self.driver]:
            return self
        low, high = (max(self.low, 0.0), self.high) if self.scale > 0 else (self.low, min(self.high, 0.0))
        return Drive(self.driver, self.partner, self.held, self.scale, low, high)


def _value_of(
    expr: str, labels: list[dict[str, str]], counters: list[bool]
) -> Callable[[Sequence[float]], float | None]:
    """The expression's steady-state value for given input values (None unless one series)."""

    evaluate = minieval.bind(expr, labels, counters)

    def at(values: Sequence[float], now: float | None) -> float | None:
        try:
            result = evaluate(values, now)
        except minieval.Unsupported as exc:
            raise InputError(
                f"cannot derive test inputs: {exc}; the generated tests compute the expression's value "
                "for their inputs, so write it without that construct (or record that part in its own "
                f"rule and read the recorded series){_staleness_hint(expr)}"
            ) from exc
        if isinstance(result, float):
            return result
        if len(result) != 1:
            return None
        return result[0][1]

    def value_of(values: Sequence[float]) -> float | None:
        if not promql.calls_time(expr):
            return at(values, None)
        # time() is 0 at the first evaluation; inputs whose value moves with the clock cannot be
        # held constant, so only values that stay the same a long test later are usable.
        first = at(values, 0.0)
        return first if first == at(values, TIME_HORIZON_SECONDS) else None

    known: dict[tuple[float, ...], float | None] = {}

    def remembered(values: Sequence[float]) -> float | None:
        """``value_of``, once per distinct input: the candidate drives of a solve share many (a third of the
        library's evaluations were repeats). -0.0 is a key equal to 0.0 that an expression may read apart
        (``1 / x``), so inputs holding it are evaluated each time."""
        key = tuple(values)
        if any(value == 0 and math.copysign(1.0, value) < 0 for value in key):
            return value_of(key)
        if key not in known:
            known[key] = value_of(key)
        return known[key]

    return remembered


# Functions and aggregations whose result depends on label values beyond their equality (or, for ties,
# on their order): an expression using one is solved over its real series.
_READS_LABEL_VALUES = re.compile(r"\b(?:label_replace|label_join|topk|bottomk|sort|sort_desc|count_values)\s*\(")


def _unread_values_ranked(
    expr: str, series: tuple[tuple[tuple[str, str], ...], ...]
) -> tuple[tuple[tuple[str, str], ...], ...] | None:
    """``series`` with each value of a label no matcher of ``expr`` names replaced by its rank among that
    label's values (``~0``, ``~1``, ...), or None when the expression reads label values otherwise.

    The evaluation cannot tell the two apart: it compares such values only for equality (grouping,
    ``on``/``by`` matching), which ranks keep, and keeps the series in their given order. So a fleet's
    units, which differ only in their unit label values, share one solve.
    """
    if _READS_LABEL_VALUES.search(expr):
        return None
    matched = {"__name__"} | {matcher.name for _, matchers in promql.analyse(expr).selectors for matcher in matchers}
    values: dict[str, set[str]] = {}
    for labels in series:
        for name, value in labels:
            if name not in matched:
                values.setdefault(name, set()).add(value)
    ranks = {name: {value: f"~{rank}" for rank, value in enumerate(sorted(found))} for name, found in values.items()}
    return tuple(
        tuple((name, ranks[name][value] if name in ranks else value) for name, value in labels) for labels in series
    )


def solve(expr: str, labels: Sequence[Mapping[str, str]], counters: Sequence[bool], state: bool) -> Drive:
    """``_solved`` for these series, shared with every set of series that differs only in values ``expr``
    never reads; a problem names the real series."""
    series = tuple(tuple(labels_of.items()) for labels_of in labels)
    unread = _unread_values_ranked(expr, series)
    if unread is not None and unread != series:
        try:
            return _solved(expr, unread, tuple(counters), state)
        except InputError:
            pass  # solved again below, so the problem names the real series
    return _solved(expr, series, tuple(counters), state)


@functools.lru_cache(maxsize=4096)
def _solved(
    expr: str, series: tuple[tuple[tuple[str, str], ...], ...], counters: tuple[bool, ...], state: bool
) -> Drive:
    """How to set the inputs so ``expr`` follows the wanted value: one input scaled (or, for a
    share such as ``hits / (hits + misses)``, one input at the share and another at the rest),
    the others held at 0, 1 or 2."""
    labels = [dict(items) for items in series]
    value_of = _value_of(expr, labels, list(counters))
    extended = _held_values(expr)
    for held in (HELD_INPUT_VALUES, extended) if extended != HELD_INPUT_VALUES else (HELD_INPUT_VALUES,):
        for drive in _candidate_drives(len(labels), state, held):
            fitted = drive.fit(value_of, state)
            if fitted is not None:
                return fitted.within_counters(counters)
    raise InputError(_underivable(expr, labels, state))


def _first_minute(expr: str) -> int:
    """The first minute an expression over inputs from minute 0 has a value: its offsets, and one more for
    ``rate()`` and its kin, which need two samples. A page gated on a condition waits for it as long."""
    ranges = promql.analyse(expr).ranges_ms
    calls = promql.range_calls(expr)
    two = bool(ranges) and len(calls) == len(ranges) and all(f in promql.TWO_SAMPLE_FUNCTIONS for f, _ in calls)
    return minutes(promql.offsets_ms(expr)) + (FIRST_RATE_MINUTE if two else 0)


def _held_values(expr: str) -> tuple[float, ...]:
    """The values held inputs are tried at when 1, 0 and 2 do not fit: each number the expression states,
    twice it and one more (a guard such as ``maxerror >= bool 16``), and for an expression that reads
    ``time()`` (0 at the tests' first evaluation) timestamps twice and once that far in the past, so an age
    such as ``time() - kube_node_created > 900`` holds from the first minute."""
    literals = [literal for literal in promql.number_literals(expr) if literal > 0]
    stated = [clean_number(literal * factor) for literal in literals for factor in (1, 2)]
    stated += [clean_number(literal + 1) for literal in literals]
    clock = promql.calls_time(expr)
    past = [-clean_number(literal * factor) for literal in literals for factor in (2, 1)] if clock else []
    return tuple(dict.fromkeys((*HELD_INPUT_VALUES, *stated, *past)))


def _candidate_drives(count: int, state: bool, held: Sequence[float] = HELD_INPUT_VALUES) -> Iterator[Drive]:
    """Every way of driving the inputs, simplest first: one input scaled, then a share of two
    (``hits / (hits + misses)``) or the rest of one (``(total - errors) / total``)."""
    pairs: list[tuple[int | None, int | None]] = [(driver, None) for driver in range(count)]
    if not state:
        pairs += [(driver, partner) for driver in range(count) for partner in range(count) if driver != partner]
        pairs += [(None, partner) for partner in range(count)]
    for driver, partner in pairs:
        others = [i for i in range(count) if i not in (driver, partner)]
        for constants in itertools.product(held, repeat=len(others)):
            yield Drive(driver, partner, tuple(zip(others, constants, strict=True)))


def _backwards(labels: Mapping[str, str], value: float) -> str:
    """A value that only a counter running backwards would give: no real series does that."""
    return (
        f"the value {go_float(value)} would need the counter {_series_text(labels)} to decrease, which no real "
        "counter does, so no test may feed it; keep the bounds and scenario values within what the expression "
        "reaches with growing counters (a share within 0..1, a rate at least 0)"
    )


def _underivable(expr: str, labels: Sequence[Mapping[str, str]], state: bool) -> str:
    """Why no input follows the expression, and what to write instead."""
    names = ", ".join(dict.fromkeys(_series_text(label) for label in labels)) or "none"
    if state:
        return (
            f"cannot derive test inputs: no input of {expr!r} ({names}) turns it from 1 (good) to 0 (bad) with the "
            "others held at 0, 1 or 2; write the state as a 0/1 comparison of one series per unit (e.g. "
            '\'kube_node_status_condition{condition="Ready",status="true"} == 1\') so the tests can drive it'
        )
    if promql.calls_time(expr):
        return (
            f"cannot derive test inputs: the value of {expr!r} moves with time() (time() depends on the evaluation "
            "time), and the generated tests hold their inputs still; an age compared with a bound that stays true "
            "as time passes (time() - created > 900) can be proven, an age as the value cannot"
            f"{_staleness_hint(expr)}"
        )
    return (
        f"cannot derive test inputs: {expr!r} moves in proportion to none of its inputs ({names}) with the others "
        "held at 0, 1 or 2, nor as a share of two of them (a / (a + b)) or the rest of one ((total - bad) / total); "
        "the generated tests need the value to follow one input. Write it so one input scales it (e.g. "
        "'sum by (cluster) (x) / 100'), or record the complex part in its own rule and gauge the recorded series"
    )


def _staleness_hint(expr: str) -> str:
    """For ``time() - x``: the SLI kind whose tests feed a timestamp that follows the clock."""
    if "time()" not in expr:
        return ""
    return (
        "; for the age of a timestamp gauge (time() - x) write sli: {staleness: {timestamp: 'x'}}, "
        "whose tests feed x as a clock"
    )


def _extend(runs: list[tuple[float | None, int]], sample: float | None, count: int) -> None:
    """Add ``count`` minutes of ``sample``, merged into the last run when it holds the same sample."""
    if runs and runs[-1][0] == sample:
        runs[-1] = (runs[-1][0], runs[-1][1] + count)
    else:
        runs.append((sample, count))


def _render(template: _Template, runs: Sequence[tuple[float | None, int]]) -> str:
    if template.clock:
        return render_steps([sample for sample, count in runs for _ in range(count)])
    return render_counter_runs(runs) if template.counter else render_gauge_runs(runs)


def _full(selector: Selector) -> tuple[Matcher, ...]:
    return (*_name_matcher(selector.metric), *selector.matchers)


def _state_coefficient(value: float, rate: float, unit: int, units: int) -> float:
    """Units 0..k-1 are in the bad state (0), the rest good (1), for a bad share of k/units."""
    return 0.0 if unit < round(value * units) else 1.0


def _scaled(scale: float) -> Coefficient:
    return lambda value, rate, unit, units: value * scale


def _complement(scale: float) -> Coefficient:
    return lambda value, rate, unit, units: 1.0 - value * scale


def _constant(constant: float) -> Coefficient:
    return lambda value, rate, unit, units: constant
