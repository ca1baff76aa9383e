"""A relative crossing that outlasts the offset stays alerted; a level that stays becomes the new normal.

Compared with the value ``offset`` ago, a storm longer than the offset would become its own
baseline and resolve while it still runs. The rules hold the pre-storm baseline while the
bound is crossed (``compiler.targets.prometheus.baseline``), for at most ``hold``:

- a storm that lasts past the offset (three offsets, at most 2h past it, within the hold) fires, is still
  firing one offset in and at its last minute, and resolves within the settle time (plus
  ``keep_firing_for``) once the value returns;
- a step that never returns resolves once it has lasted ``hold``: it is the new normal;
- growth spread over several offsets (never a factor within one) never fires, so it never
  holds the baseline either.

They simulate a whole hold or several offsets, so they are generated for offsets up to
``LONG_OFFSET_MS`` only.
"""

from __future__ import annotations

from compiler.model import Range
from compiler.model.windows import HOUR, minutes
from compiler.targets.prometheus import AlertRule
from compiler.targets.prometheus.proof.asserts import firing_exactly, nothing_until, states_at
from compiler.targets.prometheus.proof.cases_range import BASELINE_MIN, relative_move
from compiler.targets.prometheus.proof.context import SpecContext, readable
from compiler.targets.prometheus.proof.group import Group, duration_text
from compiler.targets.prometheus.proof.timeline import Timeline
from compiler.targets.prometheus.proof.timing import STEP_MIN
from compiler.text.numbers import go_float

STORM_OFFSETS = 3  # a storm lasts three offsets (3h for a 1h offset), within the hold
STORM_PAST_OFFSET_MAX_MS = 2 * HOUR  # ... but at most 2h past the offset
# Past this offset no storm case is generated: with a 1d offset the three would simulate a week of minutes
# per side (promtool runs every rule at every minute). The baseline rule is the same PromQL for every offset,
# so the cases on shorter offsets (apiserver-list-storm, 1h) prove it.
LONG_OFFSET_MS = 6 * HOUR
GROWTH_OFFSETS = (2, 3, 4, 6)  # organic growth spreads the same rise over this many offsets (the first that fits)
RAMP_DIGITS = 6  # each minute of the growth to six significant digits: smooth, and readable in a failing test
HOLD_SETTLE_MIN = 2  # the hold ends once the value is no longer crossed against its level `hold` ago: a step or two


def applies(rule: AlertRule) -> bool:
    band = rule.band
    if rule.kind != "range" or band is None or band.relative is None:
        return False
    return (band.relative.max_factor if rule.spec.side == "Above" else band.relative.min_factor) is not None


def _move(ctx: SpecContext, band: Range, above: bool) -> tuple[float, float, float] | None:
    rel = band.relative
    assert rel is not None
    factor = rel.max_factor if above else rel.min_factor
    assert factor is not None
    found = relative_move(ctx, band, factor, above)
    return None if found is None else (factor, found[1], found[2])


def storm_minutes(band: Range) -> int:
    """How long the generated storm lasts: past the offset, within the hold."""
    rel = band.relative
    assert rel is not None
    offset = minutes(rel.offset_ms)
    return min(minutes(rel.hold_ms), STORM_OFFSETS * offset, offset + minutes(STORM_PAST_OFFSET_MAX_MS))


def groups(ctx: SpecContext, rule: AlertRule) -> list[Group]:
    """The long storm and the step that stays; the slow growth for a rise."""
    band = rule.band
    assert band is not None
    above = rule.spec.side == "Above"
    found = _move(ctx, band, above)
    if found is None:  # cases_range already reports a relative bound no input can cross
        return []
    factor, start, moved = found
    if band.relative is not None and band.relative.offset_ms > LONG_OFFSET_MS:
        return []
    result = [long_storm(ctx, rule, start, moved), new_normal(ctx, rule, start, moved)]
    if above and (growth := slow_growth(ctx, rule, factor, start, moved)) is not None:
        result.append(growth)
    return result


def _timing(ctx: SpecContext, rule: AlertRule) -> tuple[int, int]:
    """(first minute at the moved value, minute the alert fires)."""
    band = rule.band
    assert band is not None and band.relative is not None
    jump = minutes(band.relative.offset_ms) + ctx.steady + BASELINE_MIN
    return jump, jump + ctx.inputs.settle + minutes(rule.for_ms)


def long_storm(ctx: SpecContext, rule: AlertRule, start: float, moved: float) -> Group:
    band = rule.band
    assert band is not None and band.relative is not None
    offset, length = minutes(band.relative.offset_ms), storm_minutes(band)
    jump, fires = _timing(ctx, rule)
    back = jump + length  # the first minute at the old value again
    resolved = back + ctx.inputs.settle + STEP_MIN + minutes(rule.keep_firing_for_ms)
    timeline = Timeline.constant(start, jump - STEP_MIN).then(moved, length).then(start, resolved - back + 1)
    group = Group(
        f"{rule.name}: a storm from {go_float(start)} to {go_float(moved)} lasting {duration_text(length)}, "
        f"longer than the offset {duration_text(offset)}, fires and stays firing for its whole length against "
        "the held pre-storm baseline, and resolves once the value returns",
        ctx.timelines(timeline, ctx.calm_value()),
        ctx.inputs,
    )
    firing_exactly(ctx, group, fires, [rule], moved, ctx.slice_a)
    past_offset = jump + offset + ctx.inputs.settle + STEP_MIN
    for minute in sorted({past_offset, back - STEP_MIN} - {fires}):
        if fires < minute < back:
            states_at(ctx, group, minute, [rule], ["firing"])
    states_at(ctx, group, resolved, [rule], [None])
    return group


def new_normal(ctx: SpecContext, rule: AlertRule, start: float, moved: float) -> Group:
    band = rule.band
    assert band is not None and band.relative is not None
    hold = minutes(band.relative.hold_ms)
    jump, fires = _timing(ctx, rule)
    released = jump + hold + ctx.inputs.settle + HOLD_SETTLE_MIN + minutes(rule.keep_firing_for_ms)
    timeline = Timeline.constant(start, jump - STEP_MIN).then(moved, released - jump + 1)
    group = Group(
        f"{rule.name}: a step from {go_float(start)} to {go_float(moved)} that never returns fires, is held "
        f"for {duration_text(hold)} (relative.hold), then resolves as the new normal",
        ctx.timelines(timeline, ctx.calm_value()),
        ctx.inputs,
    )
    firing_exactly(ctx, group, fires, [rule], moved, ctx.slice_a)
    if fires < jump + hold - STEP_MIN:
        states_at(ctx, group, jump + hold - STEP_MIN, [rule], ["firing"])
    states_at(ctx, group, released, [rule], [None])
    return group


def _growth_minutes(band: Range, factor: float, start: float, moved: float) -> int | None:
    """The shortest spread (in offsets) over which a linear rise never crosses the factor within an offset."""
    rel = band.relative
    assert rel is not None
    offset = minutes(rel.offset_ms)
    for count in GROWTH_OFFSETS:
        step = (moved - start) / (count * offset)
        if start + step * offset < factor * start * 0.9:  # the steepest offset-long rise, with a 10% margin
            return count * offset
    return None


def slow_growth(ctx: SpecContext, rule: AlertRule, factor: float, start: float, moved: float) -> Group | None:
    band = rule.band
    assert band is not None and band.relative is not None
    spread = _growth_minutes(band, factor, start, moved)
    if spread is None:
        return None
    jump, _ = _timing(ctx, rule)
    values = [readable(start + (moved - start) * step / spread, RAMP_DIGITS) for step in range(1, spread + 1)]
    if any(ctx.inputs.achievable(value) != value for value in values):
        return None  # a state or quantile SLI moves in steps: no smooth growth to drive
    horizon = jump + spread + minutes(band.relative.offset_ms) + minutes(rule.for_ms) + STEP_MIN
    timeline = Timeline.constant(start, jump - STEP_MIN)
    timeline = Timeline(timeline.values + tuple(values), timeline.rates + (timeline.rates[-1],) * spread)
    timeline = timeline.then(moved, horizon - timeline.minutes)
    group = Group(
        f"{rule.name}: organic growth from {go_float(start)} to {go_float(moved)} spread over "
        f"{duration_text(spread)} never reaches {go_float(factor)}x its value an offset earlier: nothing fires, "
        "so nothing holds the baseline",
        ctx.timelines(timeline, ctx.calm_value()),
        ctx.inputs,
    )
    nothing_until(group, horizon, {"alertname": rule.name}, since=jump)
    return group
