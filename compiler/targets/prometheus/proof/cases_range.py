"""Cases for range alerts: past a static bound and back, just inside it, and a relative move.

A static bound is crossed (pending, firing, resolved when the value returns, held by
``keep_firing_for``) and approached from inside (silent). A relative bound is crossed by
a rise or drop against the value ``offset`` ago; slice b makes the same move below the
floor and stays quiet.
"""

from __future__ import annotations

import math

from compiler.model import Range
from compiler.model.windows import minutes
from compiler.targets.prometheus import AlertRule
from compiler.targets.prometheus.proof import timing
from compiler.targets.prometheus.proof.asserts import firing_exactly, nothing_until, states_at
from compiler.targets.prometheus.proof.context import ALL_BAD, SpecContext, halfway, readable
from compiler.targets.prometheus.proof.group import Group, duration_text
from compiler.targets.prometheus.proof.inputs import InputError
from compiler.targets.prometheus.proof.timeline import DEFAULT_RATE, RATE_WINDOW_SECONDS, Timeline
from compiler.targets.prometheus.proof.timing import INCIDENT_PAST_FIRING_MIN, STEP_MIN
from compiler.text.numbers import go_float

OVER_BOUND = 1.1  # 10% over a positive static bound: past a maximum, inside a minimum
UNDER_BOUND = 0.9  # 10% under a positive static bound: inside a maximum, past a minimum
PAST_NONPOSITIVE = 1  # past a bound at or below zero by one unit, where a factor cannot move it

# (move as a multiple of the factor, most of 1 an error ratio may end at): a clear move first,
# smaller ones when a floor or a static bound leaves little room.
RISE_MOVES = ((1.25, 0.9), (1.1, 0.99), (1.02, 0.999))
FALL_MOVES = ((0.8, 0.9), (0.9, 0.9), (0.98, 0.9))
RISE_FLOOR_CLEARANCE = 1.2  # a rise ends 20% above the floor, so the floor cannot hide it
RISE_MIN_CLEARANCE = 1.2  # a rise starts 20% above a static minimum, so the min alert stays out of it
FALL_FLOOR_MULTIPLE = 2  # a drop starts at twice the floor (only a start above the floor counts)
FALL_MIN_CLEARANCE = 1.5  # a drop ends 50% above a static minimum, so the min alert stays out of it
FIT_RISE_CLEARANCE = 1.1  # a fitted rise starts 10% under moved / factor, so it passes the factor
FIT_FALL_START = 1.5  # a fitted drop starts 50% above the floor (or the minimum / factor)
FIT_ABOVE_ZERO = 1e-9  # keeps a fitted drop's start above 0 when the floor and minimum are both 0
BASELINE_MIN = 5  # the value before a move holds this long past the warm-up, so the offset window reads it whole
OVER_FLOOR_SHARE = 2  # a crossing past a traffic floor carries twice the floor's bad events in 5 minutes
UNDER_FLOOR_SHARE = 0.5  # the trickle past the bound carries half of them: the floor alone holds it back
QUIET_SHARE = 0.5  # slice b starts at half the value whose move would reach the floor: the same move stays under it


def range_groups(ctx: SpecContext, rule: AlertRule) -> list[Group]:
    """The static and relative cases of one side (above or below) of a range alert."""
    band = rule.band
    assert band is not None
    groups = []
    above = rule.spec.side == "Above"
    bound = band.maximum if above else band.minimum
    if bound is not None:
        groups.extend(static_range(ctx, rule, bound, above))
    rel = band.relative
    if rel is not None and (rel.max_factor if above else rel.min_factor) is not None:
        group = relative_range(ctx, rule, above)
        if group is None:
            raise InputError(
                f"no reachable values move past the relative bound of {rule.name} (factor, floor and static "
                "bounds together), so it could never be shown to fire"
            )
        groups.append(group)
    return groups


# -- static bounds ---------------------------------------------------------------------------


def static_values(ctx: SpecContext, bound: float, above: bool) -> tuple[float | None, float | None]:
    """(a reachable value just beyond ``bound``, one just inside it), None where there is none."""
    if above:
        beyond = ctx.inputs.achievable(
            readable(bound * OVER_BOUND) if bound > 0 else bound + PAST_NONPOSITIVE, above=bound
        )
        inside = ctx.inputs.achievable(readable(bound * UNDER_BOUND) if bound > 0 else bound, below=bound)
    else:
        beyond = ctx.inputs.achievable(
            readable(bound * UNDER_BOUND) if bound > 0 else bound - PAST_NONPOSITIVE,
            below=math.nextafter(bound, -math.inf),
        )
        inside = ctx.inputs.achievable(
            readable(bound * OVER_BOUND) if bound > 0 else bound, above=math.nextafter(bound, -math.inf)
        )
    return beyond, inside


def static_range(ctx: SpecContext, rule: AlertRule, bound: float, above: bool) -> list[Group]:
    beyond, inside = static_values(ctx, bound, above)
    groups = []
    calm = ctx.calm_value()
    if beyond is None:
        raise InputError(
            f"no reachable value lies beyond the {'max' if above else 'min'} {go_float(bound)} of {rule.name}, "
            "so it could never be shown to fire"
        )
    groups.append(static_beyond(ctx, rule, bound, above, beyond, calm))
    if inside is not None:
        groups.append(static_inside(ctx, rule, bound, above, inside, calm))
    if band_floor(rule) is not None:
        groups.append(static_under_floor(ctx, rule, bound, beyond, calm))
    return groups


def band_floor(rule: AlertRule) -> float | None:
    """The band's traffic floor (bad events in 5 minutes), for an event SLI's static bound."""
    band = rule.band
    return None if band is None else band.min_bad_events


def floor_rate(rule: AlertRule, value: float, share: float) -> float:
    """The event rate at which an error ratio of ``value`` makes ``share`` x the floor's bad events in 5m."""
    floor = band_floor(rule)
    assert floor is not None and value > 0
    return floor * share / (value * RATE_WINDOW_SECONDS)


def static_under_floor(ctx: SpecContext, rule: AlertRule, bound: float, beyond: float, calm: float) -> Group:
    """Past the bound on a trickle, with half the floor's bad events in 5 minutes: silent for as long."""
    rate = floor_rate(rule, beyond, UNDER_FLOOR_SHARE)
    since = timing.warmup_end(rule, ctx.inputs)
    horizon = max(ctx.steady, since) + minutes(rule.for_ms) + INCIDENT_PAST_FIRING_MIN
    floor = band_floor(rule)
    assert floor is not None
    group = Group(
        f"{rule.name}: {go_float(beyond)} beyond the max {go_float(bound)} on a trickle of {go_float(readable(rate))} "
        f"events/s (half of its {go_float(floor)} bad events in 5 minutes) stays silent",
        ctx.timelines(Timeline.constant(beyond, horizon, rate), calm),
        ctx.inputs,
    )
    nothing_until(group, horizon, {"alertname": rule.name}, since=since)
    return group


def static_beyond(ctx: SpecContext, rule: AlertRule, bound: float, above: bool, beyond: float, calm: float) -> Group:
    """The value past the bound pends, fires after ``for``, and resolves once it returns (plus the hold)."""
    wait = minutes(rule.for_ms)
    keep = minutes(rule.keep_firing_for_ms)
    fires = ctx.steady + wait
    stop = fires + INCIDENT_PAST_FIRING_MIN
    resolved = stop + ctx.inputs.settle + STEP_MIN + keep
    rate = DEFAULT_RATE
    if band_floor(rule) is not None and beyond > 0:  # enough traffic that the bad events clear the floor
        rate = max(rate, floor_rate(rule, beyond, OVER_FLOOR_SHARE))
    timeline = Timeline.constant(beyond, stop, rate).then(calm, resolved - stop)
    group = Group(
        f"{rule.name}: {go_float(beyond)} beyond the {'max' if above else 'min'} {go_float(bound)} is pending, "
        f"fires after {duration_text(wait)}, and resolves when the value returns",
        ctx.timelines(timeline, calm),
        ctx.inputs,
    )
    if wait and ctx.steady < ctx.first + wait:
        states_at(ctx, group, ctx.steady, [rule], ["pending"])
    firing_exactly(ctx, group, fires, [rule], ctx.inputs.shown(beyond), ctx.slice_a)
    states_at(ctx, group, stop, [rule], ["firing"])
    if keep > ctx.inputs.settle + STEP_MIN:  # back in range, yet held by keep_firing_for
        states_at(ctx, group, stop + keep, [rule], ["firing"])
    states_at(ctx, group, resolved, [rule], [None])
    return group


def static_inside(ctx: SpecContext, rule: AlertRule, bound: float, above: bool, inside: float, calm: float) -> Group:
    """The value just inside the bound stays silent (judged once the warm-up is over)."""
    since = timing.warmup_end(rule, ctx.inputs)
    horizon = max(ctx.steady, since) + minutes(rule.for_ms) + STEP_MIN
    group = Group(
        f"{rule.name}: {go_float(inside)} just inside the {'max' if above else 'min'} {go_float(bound)} stays silent",
        ctx.timelines(Timeline.constant(inside, horizon), calm),
        ctx.inputs,
    )
    nothing_until(group, horizon, {"alertname": rule.name}, since=since)
    return group


# -- relative bounds -------------------------------------------------------------------------


def relative_values(
    ctx: SpecContext, band: Range, factor: float, above: bool, move: float, headroom: float
) -> tuple[float, float] | None:
    """(value before, value after) a move of ``move`` x the factor that crosses the relative bound, or None.

    An error ratio ends at most ``headroom`` (of 1) after the move.
    """
    rel = band.relative
    assert rel is not None
    lo_static = band.minimum
    if above:
        base = rel.floor / (factor * move) * RISE_FLOOR_CLEARANCE if rel.floor else ctx.calm_value()
        base = max(base, lo_static * RISE_MIN_CLEARANCE if lo_static else 0.0)
    else:
        base = rel.floor * FALL_FLOOR_MULTIPLE if rel.floor else ctx.calm_value()
        if lo_static is not None:
            base = max(base, lo_static / (factor * move) * FALL_MIN_CLEARANCE)
    if ctx.events:
        base = min(base, ALL_BAD / (factor * move) * headroom if above else ALL_BAD)
    start = ctx.inputs.achievable(readable(base))
    if start is None or start <= 0:
        return None
    moved = ctx.inputs.achievable(readable(start * factor * move))
    if moved is None:
        return None
    return (start, moved) if moves_past(band, factor, above, start, moved) else None


def relative_fit(ctx: SpecContext, band: Range, factor: float, above: bool) -> tuple[float, float] | None:
    """Values placed in the room a floor and a static bound leave, when a proportional move does not fit."""
    rel = band.relative
    assert rel is not None
    if above:
        upper = band.maximum if band.maximum is not None else (ALL_BAD if ctx.events else None)
        if upper is None or upper <= rel.floor:
            return None
        moved = ctx.inputs.achievable(readable(halfway(max(rel.floor, 0.0), upper)), above=rel.floor, below=upper)
        start = None if moved is None else ctx.inputs.achievable(readable(moved / factor / FIT_RISE_CLEARANCE))
    else:
        lowest_start = max(rel.floor, (band.minimum or 0.0) / factor)
        start = ctx.inputs.achievable(readable(lowest_start * FIT_FALL_START + FIT_ABOVE_ZERO))
        if ctx.events and start is not None:
            start = min(start, ALL_BAD)
        low = band.minimum if band.minimum is not None else 0.0
        moved = None if start is None else ctx.inputs.achievable(readable(halfway(low, factor * start)))
    if start is None or moved is None or start <= 0:
        return None
    return (start, moved) if moves_past(band, factor, above, start, moved) else None


def moves_past(band: Range, factor: float, above: bool, start: float, moved: float) -> bool:
    """Whether ``start`` -> ``moved`` crosses the relative bound, past its floor, within the static one."""
    assert band.relative is not None
    floor = band.relative.floor
    if above:
        return moved > factor * start and moved > floor and (band.maximum is None or moved <= band.maximum)
    return moved < factor * start and start > floor and (band.minimum is None or moved >= band.minimum)


def relative_move(ctx: SpecContext, band: Range, factor: float, above: bool) -> tuple[float, float, float] | None:
    """(move, value before, value after): a clear move first; smaller ones when a floor or bound leaves little room."""
    for move, headroom in RISE_MOVES if above else FALL_MOVES:
        if (values := relative_values(ctx, band, factor, above, move, headroom)) is not None:
            return move, *values
    if (fit := relative_fit(ctx, band, factor, above)) is not None:
        return fit[1] / fit[0] / factor, *fit
    return None


def relative_range(ctx: SpecContext, rule: AlertRule, above: bool) -> Group | None:
    band = rule.band
    assert band is not None and band.relative is not None
    rel = band.relative
    factor = rel.max_factor if above else rel.min_factor
    assert factor is not None
    found = relative_move(ctx, band, factor, above)
    if found is None:
        return None
    move, start, moved = found
    offset = minutes(rel.offset_ms)
    since = timing.warmup_end(rule, ctx.inputs)
    jump = max(offset + ctx.steady, since) + BASELINE_MIN  # the first minute at the moved value
    before = jump - STEP_MIN
    wait = minutes(rule.for_ms)
    settle = ctx.inputs.settle
    fires = jump + settle + wait
    end = fires + STEP_MIN
    timelines = ctx.timelines(Timeline.constant(start, before).then(moved, end - before), ctx.calm_value())
    quiet_note = ""
    if above and rel.floor and "b" in timelines:
        small = ctx.inputs.achievable(readable(rel.floor / (factor * move) * QUIET_SHARE))
        if small is not None and small > 0:
            spike = ctx.inputs.achievable(readable(small * factor * move))
            if spike is not None and factor * small < spike <= rel.floor:
                timelines["b"] = Timeline.constant(small, before).then(spike, end - before)
                quiet_note = f"; slice b moves the same way below the floor {go_float(rel.floor)} and stays quiet"
    group = Group(
        f"{rule.name}: the value {'rises' if above else 'falls'} from {go_float(start)} to {go_float(moved)}, "
        f"past {go_float(factor)}x its value {duration_text(offset)} earlier, and fires{quiet_note}",
        timelines,
        ctx.inputs,
    )
    nothing_until(group, before, {"alertname": rule.name}, since=since)
    if wait > settle:  # pending once the move shows fully; a max or a quantile may show it from the jump itself
        states_at(ctx, group, jump + settle, [rule], ["pending"])
    firing_exactly(ctx, group, fires, [rule], ctx.inputs.shown(moved), ctx.slice_a)
    return group
