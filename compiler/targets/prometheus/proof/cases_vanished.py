"""Cases for the vanished-slice alert (``no_data.vanished``): a slice whose series disappear.

- slice a's series stop (its units deleted) while slice b reports: the alert fires for slice
  a after its wait and resolves once the slice's last sample is older than the window;
- every slice stops: the vanished alert stays quiet and the spec-wide NoData alert fires;
- slice a's series move to new label values (slice c, a rename): the slice count holds,
  nothing vanishes.

A slice stops only once the spec has reported for two windows: "fewer slices than a window
ago" needs a past to compare with, and a slice younger than two windows is new (a rename).
A series takes a few evaluations to disappear (the raw lookback, then the SLI's own ranges):
``LOOKBACK_MIN`` plus the inputs' settle time bounds that.
"""

from __future__ import annotations

from compiler.model import series
from compiler.model.windows import RAW_RANGE_MS, minutes
from compiler.targets.prometheus import AlertRule
from compiler.targets.prometheus.proof.asserts import expect, firing_exactly, nothing_until, one_series, states_at
from compiler.targets.prometheus.proof.cases_range import BASELINE_MIN
from compiler.targets.prometheus.proof.context import SpecContext
from compiler.targets.prometheus.proof.group import Group, duration_text, selector
from compiler.targets.prometheus.proof.inputs import Inputs
from compiler.targets.prometheus.proof.timeline import Timeline
from compiler.targets.prometheus.proof.timing import STEP_MIN

LOOKBACK_MIN = minutes(RAW_RANGE_MS)  # an instant selector still sees a series this long after its last sample
GONE_SLICES = 1.0  # the alert's value: how many slices fewer the spec has (one, slice a)
RENAMED = ("a", "b", "c")  # slice c takes over slice a's units under new label values
NOT_NEW_WINDOWS = 2  # a slice younger than two windows counts as new (a rename under way): slices stop after that


def _times(ctx: SpecContext, rule: AlertRule) -> tuple[int, int, int]:
    """(the first minute slice a has no sample, the minute its recorded series is surely gone, the window)."""
    vanished = ctx.slo.no_data.vanished
    assert vanished is not None
    window = minutes(vanished.window_ms)
    stop = NOT_NEW_WINDOWS * window + ctx.steady + BASELINE_MIN
    return stop, stop + LOOKBACK_MIN + ctx.inputs.settle + STEP_MIN, window


def groups(ctx: SpecContext, rule: AlertRule) -> list[Group]:
    found = [slice_deleted(ctx, rule), everything_gone(ctx, rule)]
    if "b" in ctx.inputs.slices:
        found.append(renamed(ctx, rule))
    return found


def slice_deleted(ctx: SpecContext, rule: AlertRule) -> Group:
    stop, gone, window = _times(ctx, rule)
    wait = minutes(rule.for_ms)
    calm = ctx.calm_value()
    resolved = gone + window + STEP_MIN
    group = Group(
        f"{rule.name}: slice a stops reporting at {duration_text(stop)} while slice b reports: it fires for "
        f"slice a after {duration_text(wait)} and resolves once its last sample is {duration_text(window)} old",
        {
            "a": Timeline.constant(calm, stop - STEP_MIN).then(None, resolved - stop + 1),
            "b": Timeline.constant(calm, resolved),
        },
        ctx.inputs,
    )
    nothing_until(group, stop, {"alertname": rule.name})
    firing_exactly(ctx, group, gone + wait, [rule], GONE_SLICES, ctx.slice_a)
    states_at(ctx, group, resolved, [rule], [None])
    return group


def everything_gone(ctx: SpecContext, rule: AlertRule) -> Group:
    stop, gone, window = _times(ctx, rule)
    calm = ctx.calm_value()
    end = gone + window
    timeline = Timeline.constant(calm, stop - STEP_MIN).then(None, end - stop + 1)
    no_data = [r for r in ctx.rules if r.kind == "no_data"]
    also = f"; {no_data[0].name} fires instead" if no_data else ""
    group = Group(
        f"{rule.name}: every slice stops reporting at {duration_text(stop)}: a whole-spec absence is not a "
        f"vanished slice, it stays quiet{also}",
        {name: timeline for name in ctx.inputs.slices},
        ctx.inputs,
    )
    nothing_until(group, end, {"alertname": rule.name})
    if no_data and gone + minutes(no_data[0].for_ms) < end:
        firing_exactly(ctx, group, gone + minutes(no_data[0].for_ms), no_data, None, {})
    return group


def renamed(ctx: SpecContext, rule: AlertRule) -> Group:
    stop, gone, window = _times(ctx, rule)
    calm = ctx.calm_value()
    end = gone + window
    inputs = Inputs(ctx.slo, slice_names=RENAMED)
    group = Group(
        f"{rule.name}: slice a's units report under new label values (slice c) from {duration_text(stop)}: "
        "the spec has as many slices as before, so nothing vanished",
        {
            "a": Timeline.constant(calm, stop - STEP_MIN).then(None, end - stop + 1),
            "b": Timeline.constant(calm, end),
            "c": Timeline.constant(None, stop - STEP_MIN).then(calm, end - stop + 1),
        },
        inputs,
    )
    nothing_until(group, end, {"alertname": rule.name})
    # slice c does report: the rename is seen, not missed
    labels = {"slo": ctx.slo.name, **inputs.alert_labels("c")}
    expect(group, f"count({selector(series.presence_series(ctx.slo), labels)})", gone, one_series())
    return group
