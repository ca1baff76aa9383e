"""Cases for the burn-rate pairs: just under, just over, a full outage, and zero traffic.

Each pair is shown to stay silent just under its threshold, to pend and fire just over
it (with the exact labels and annotations) and to resolve once its short window clears
(plus ``keep_firing_for``); an outage shows every pair at once, and zero traffic shows
that 0 bad of 0 total is no alert and no NaN.
"""

from __future__ import annotations

import math
from collections.abc import Sequence

from compiler.model import series
from compiler.model.windows import first_hourly_point_minute, minutes
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
    RECOVERY_SLACK_HOURLY_MIN,
    STEP_MIN,
)
from compiler.text.numbers import go_float

UNDER = 0.9  # just under the threshold: stays silent
OVER = 1.1  # just over the threshold: fires
RECOVERY_TAIL_MIN = 2  # recovery input past the latest resolution it may need, before the timeline is trimmed
KEEP_CHECK_LEAD_MIN = 4  # checked this long before keep_firing_for ends: after the clear, so only the hold fires it
ZERO_TRAFFIC_MIN = 30  # counters stand still for six 5m windows: every rate reads 0 of 0, and nothing is NaN


def pair(rule: AlertRule) -> str:
    """``1h/5m``: the windows that tell a spec's burn pairs apart."""
    return f"{rule.labels.get('long_window')}/{rule.labels.get('short_window')}"


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
        ctx.timelines(Timeline.constant(value, fires + STEP_MIN), NONE_BAD),
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
        ctx.timelines(timeline.until(resolved), NONE_BAD),
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
        states_at(ctx, group, clears - KEEP_CHECK_LEAD_MIN + keep, [rule], ["firing"])
    states_at(ctx, group, resolved, [rule], [None])
    return group


def outage(ctx: SpecContext, burns: Sequence[AlertRule]) -> Group:
    """Every pair pends, fires after its own ``for``, then resolves when its short window clears."""
    times = {pair(rule): timing.burn_times(rule, ctx.inputs) for rule in burns}
    last = max(fires for _, fires in times.values())
    stop = last + INCIDENT_PAST_FIRING_MIN
    # Long enough for the slowest short window to clear, as if every one read hourly points.
    longest = max(minutes(rule.burn.short_ms) for rule in burns if rule.burn) + RECOVERY_SLACK_HOURLY_MIN
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
        ctx.timelines(draft.until(end), NONE_BAD),
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
        long_ratio = series.window_ratio(ctx.slo, rule.burn.long_ms, hourly_days=rule.burn.hourly_days)
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
        ctx.timelines(timeline, NONE_BAD),
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
