"""Cases for the burn-rate pairs: just under, just over, a full outage, and zero traffic.

Each pair is shown to stay silent just under its threshold, to pend and fire just over
it (with the exact labels and annotations) and to resolve once its short window clears
(plus ``keep_firing_for``); an outage shows every pair at once, and zero traffic shows
that 0 bad of 0 total is no alert and no NaN.
"""

from __future__ import annotations

import math
from collections.abc import Sequence

from compiler.model import StateSLI, series
from compiler.model.windows import RAW_RANGE_MS, first_hourly_point_minute, minutes
from compiler.targets.prometheus import AlertRule
from compiler.targets.prometheus.proof import timing
from compiler.targets.prometheus.proof.asserts import (
    alerts_sample,
    expect,
    firing_exactly,
    nothing_until,
    one_series,
    states_at,
)
from compiler.targets.prometheus.proof.context import ALL_BAD, NONE_BAD, SpecContext, readable
from compiler.targets.prometheus.proof.group import Group, duration_text, label_text, selector
from compiler.targets.prometheus.proof.inputs import InputError
from compiler.targets.prometheus.proof.timeline import DEFAULT_RATE, Timeline
from compiler.targets.prometheus.proof.timing import (
    INCIDENT_PAST_FIRING_MIN,
    RECOVERY_SLACK_MIN,
    STEP_MIN,
)
from compiler.text.numbers import clean_number, go_float

UNDER = 0.9  # just under the threshold: stays silent
OVER = 1.1  # just over the threshold: fires
RECOVERY_TAIL_MIN = 2  # recovery input past the latest resolution it may need, before the timeline is trimmed
KEEP_CHECK_LEAD_MIN = 4  # checked this long before keep_firing_for ends: after the clear, so only the hold fires it
ZERO_TRAFFIC_MIN = 30  # counters stand still for six 5m windows: every rate reads 0 of 0, and nothing is NaN


def pair(rule: AlertRule) -> str:
    """A burn alert's identity among the spec's (``1h/5m/page/14.4``): two pairs may share their windows
    (with another severity or factor), and each keeps its own ``for`` and ``keep_firing_for``."""
    keys = ("long_window", "short_window", "severity", "burn_factor")
    return "/".join(rule.labels.get(key, "") for key in keys)


def _title(rule: AlertRule, text: str) -> str:
    return f"{rule.name} {rule.labels['long_window']}/{rule.labels['short_window']}: {text}"


def burn_under(ctx: SpecContext, rule: AlertRule) -> Group:
    """An error ratio just under the pair's threshold: silent when the windows first have points, and after."""
    theta = ctx.threshold(rule)
    value = ctx.inputs.achievable(readable(UNDER * theta), below=math.nextafter(theta, 0))
    if value is None:
        raise InputError(f"cannot reach an error ratio under the burn threshold {theta}")
    onset, fires = timing.burn_times(rule, ctx.inputs)
    group = Group(
        _title(rule, f"error ratio {go_float(value)} just under the threshold {go_float(theta)} stays silent"),
        ctx.timelines(Timeline.constant(value, fires + STEP_MIN), ctx.calm_value()),
        ctx.inputs,
    )
    states_at(ctx, group, onset, [rule], [None])
    states_at(ctx, group, fires + STEP_MIN, [rule], [None])  # the evaluation it would have fired by
    return group


def burn_over(ctx: SpecContext, rule: AlertRule, burns: Sequence[AlertRule]) -> Group:
    """An error ratio just over the threshold: pending, firing after ``for``, resolved once the short window clears."""
    assert rule.burn is not None
    theta = ctx.threshold(rule)
    value = ctx.inputs.achievable(readable(OVER * theta), above=theta)
    if value is None:
        raise InputError(f"cannot reach an error ratio over the burn threshold {theta}")
    onset, fires = timing.burn_times(rule, ctx.inputs)
    stop = fires + INCIDENT_PAST_FIRING_MIN
    keep = minutes(rule.keep_firing_for_ms)
    recovery = timing.recovery_minutes(rule.burn.short_ms) + keep + RECOVERY_TAIL_MIN
    timeline = Timeline.constant(value, stop).then(NONE_BAD, recovery)
    clears = timing.clears(ctx.inputs, timeline, rule.burn.short_ms, theta, stop)
    resolved = clears + STEP_MIN + keep
    group = Group(
        _title(
            rule,
            f"error ratio {go_float(value)} just over {go_float(theta)} is pending, fires after "
            f"{duration_text(minutes(rule.for_ms))}, and resolves once the {rule.labels['short_window']} window clears",
        ),
        ctx.timelines(timeline.until(resolved), ctx.calm_value()),
        ctx.inputs,
    )
    if fires > onset:
        states_at(ctx, group, onset, [rule], ["pending"])
        if fires - STEP_MIN > onset:
            states_at(ctx, group, fires - STEP_MIN, [rule], ["pending"])
    firing_now = [r for r in burns if ctx.threshold(r) < value and timing.burn_times(r, ctx.inputs)[1] <= fires]
    firing_exactly(ctx, group, fires, firing_now, value, ctx.slice_a)
    states_at(ctx, group, stop, [rule], ["firing"])
    if keep > KEEP_CHECK_LEAD_MIN:  # still firing after the window cleared, held by keep_firing_for
        states_at(ctx, group, held(ctx, clears, stop, rule.burn.short_ms) + keep, [rule], ["firing"])
    states_at(ctx, group, resolved, [rule], [None])
    return group


def held(ctx: SpecContext, clears: int, stop: int, short_ms: int) -> int:
    """A minute after the short window cleared, plus ``keep_firing_for``, at which the alert surely still fires.

    ``clears`` bounds the clearing from above; a state SLI's 5m window reads the units directly (no
    average), so it clears up to KEEP_CHECK_LEAD_MIN earlier than simulated: from then the condition is
    known only to hold through ``stop``.
    """
    if isinstance(ctx.inputs.sli, StateSLI) and short_ms == RAW_RANGE_MS:
        return min(clears - KEEP_CHECK_LEAD_MIN, stop)
    return clears - KEEP_CHECK_LEAD_MIN


def outage(ctx: SpecContext, burns: Sequence[AlertRule]) -> Group:
    """Every pair pends, fires after its own ``for``, then resolves when its short window clears."""
    times = {pair(rule): timing.burn_times(rule, ctx.inputs) for rule in burns}
    last = max(fires for _, fires in times.values())
    stop = last + INCIDENT_PAST_FIRING_MIN
    # Long enough for the slowest short window to clear.
    longest = max(minutes(rule.burn.short_ms) for rule in burns if rule.burn) + RECOVERY_SLACK_MIN
    keep = max(minutes(rule.keep_firing_for_ms) for rule in burns)
    draft = Timeline.constant(ALL_BAD, stop).then(NONE_BAD, longest + keep + RECOVERY_TAIL_MIN)
    cleared = {}
    for rule in burns:
        assert rule.burn is not None
        clears = timing.clears(ctx.inputs, draft, rule.burn.short_ms, ctx.threshold(rule), stop)
        cleared[pair(rule)] = clears + STEP_MIN
    resolved = {pair(rule): cleared[pair(rule)] + minutes(rule.keep_firing_for_ms) for rule in burns}
    end = max(resolved.values())
    group = Group(
        "full outage: every burn-rate pair goes pending, fires after its own `for`, and resolves once its "
        "short window clears while the long window still shows the incident",
        ctx.timelines(draft.until(end), ctx.calm_value()),
        ctx.inputs,
    )
    for minute in sorted({t for pair_times in times.values() for t in pair_times}):
        states = []
        for rule in burns:
            onset, fires = times[pair(rule)]
            states.append("firing" if minute >= fires else "pending" if minute >= onset else None)
        samples = [alerts_sample(r, s, ctx.slice_a) for r, s in zip(burns, states, strict=True) if s]
        expect(group, selector("ALERTS", {"alertname": burns[0].name}), minute, sorted(samples, key=str))
    firing_exactly(ctx, group, last, burns, ALL_BAD, ctx.slice_a)
    for rule in burns:
        assert rule.burn is not None
        states_at(ctx, group, resolved[pair(rule)], [rule], [None])
        if not timing.long_window_holds(ctx.inputs, draft, rule.burn.long_ms, ctx.threshold(rule), cleared[pair(rule)]):
            continue  # a threshold near 100% errors: both windows clear together, the long one is no witness
        long_ratio = series.window_ratio(ctx.slo, rule.burn.long_ms)
        # When the short window clears (keep_firing_for may hold the alert past the long window's memory).
        expect(group, f"count(({long_ratio}) > {go_float(ctx.threshold(rule))})", cleared[pair(rule)], one_series())
    return group


def zero_traffic(ctx: SpecContext, burns: Sequence[AlertRule]) -> Group:
    """Counters that stop moving give 0 bad of 0 total, not NaN; traffic that returns alerts on time."""
    quiet = ZERO_TRAFFIC_MIN
    resumed = {}
    for rule in burns:
        start = timing.pair_onset(rule, quiet + ctx.first)
        resumed[pair(rule)] = (start, start + minutes(rule.for_ms))
    check = max(start for start, _ in resumed.values())
    budget_at = max(check, first_hourly_point_minute(ctx.first))  # the budget reads hourly points
    end = max(budget_at, min(fires for _, fires in resumed.values())) + STEP_MIN
    # All bad while nothing counts (0 of 0), then failing traffic at the usual rate.
    timeline = Timeline.constant(ALL_BAD, quiet, rate=0.0).then(ALL_BAD, end - quiet, rate=DEFAULT_RATE)
    group = Group(
        f"zero traffic for {duration_text(quiet)}: nothing fires and nothing is NaN; when failing traffic returns, "
        "every window sees it at once",
        ctx.timelines(timeline, ctx.calm_value()),
        ctx.inputs,
    )
    nothing_until(group, quiet, {"slo": ctx.slo.name, "alertstate": "firing"})
    labels = {"slo": ctx.slo.name, **ctx.slice_a}
    for record in (series.BAD_5M, series.TOTAL_5M):
        expect(group, selector(record, labels), quiet, [{"labels": record + label_text(labels), "value": 0}])
    states = ["firing" if check >= resumed[pair(rule)][1] else "pending" for rule in burns]
    samples = [alerts_sample(r, st, ctx.slice_a) for r, st in zip(burns, states, strict=True)]
    expect(group, selector("ALERTS", {"alertname": burns[0].name}), check, sorted(samples, key=str))
    budget = selector(series.BUDGET_REMAINING, labels)
    expect(group, f"count({budget} == {budget})", budget_at, one_series())
    fastest = min(burns, key=lambda r: resumed[pair(r)][1])
    states_at(ctx, group, resumed[pair(fastest)][1], [fastest], ["firing"])
    return group


TRICKLE_HISTORY_MIN = 60  # full traffic up to the first full hour, which the period's events count
TRICKLE_GUARD_SHARE = 0.1  # the trickle's bad events in the long window: a tenth of what the guard asks for


def trickle(ctx: SpecContext, burns: Sequence[AlertRule]) -> Group | None:
    """Traffic drops to a trickle, all of it failing: no pair pages over a negligible share of the budget.

    After an hour at the usual rate, a trickle so small that the fastest pair's long window
    holds a tenth of the bad events the traffic guard asks for. Once that window holds only
    the trickle, its error ratio is 100% and both its windows are over the threshold (also
    asserted, so the case cannot pass for another reason), yet nothing pends or fires.
    """
    objective = ctx.slo.objective
    assert objective is not None
    if not objective.traffic_guard:
        return None
    fastest = min(burns, key=lambda r: (r.burn.long_ms if r.burn else 0, r.for_ms))
    assert fastest.burn is not None
    long_min = minutes(fastest.burn.long_ms)
    history_events = DEFAULT_RATE * TRICKLE_HISTORY_MIN * 60
    # Sized by the smallest guard of any pair: pairs sharing an alert name (budget shares under 1x
    # burn included) are all held back, and the check by name cannot see one of them pend.
    allowed = min(objective.guard_share(r.burn) for r in burns if r.burn) * objective.budget * history_events
    rate = clean_number(TRICKLE_GUARD_SHARE * allowed / (long_min * 60))
    end = TRICKLE_HISTORY_MIN + long_min + minutes(fastest.for_ms) + STEP_MIN  # the evaluation it would fire by
    timeline = Timeline.constant(NONE_BAD, TRICKLE_HISTORY_MIN).then(ALL_BAD, end - TRICKLE_HISTORY_MIN, rate=rate)
    group = Group(
        f"{pair(fastest)} traffic guard: after an hour at {go_float(DEFAULT_RATE)}/s, a trickle of "
        f"{go_float(rate)}/s all failing fills the {fastest.labels['long_window']} window, yet its bad events are "
        "a tenth of the pair's share of the budget: nothing pends or fires",
        ctx.timelines(timeline, NONE_BAD),
        ctx.inputs,
    )
    nothing_until(group, end, {"alertname": fastest.name, "slo": ctx.slo.name})
    theta = go_float(ctx.threshold(fastest))
    long_ratio = series.window_ratio(ctx.slo, fastest.burn.long_ms)
    short_ratio = series.window_ratio(ctx.slo, fastest.burn.short_ms)
    expect(group, f"count(({long_ratio}) > {theta} and ({short_ratio}) > {theta})", end, one_series())
    return group
