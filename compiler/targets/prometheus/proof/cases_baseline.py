"""Cases about every alert of a spec at once: the calm baseline, and no input at all.

The calm baseline is also the slice every other test leaves alone: if it fired, every
other group's "exactly these alerts" would be wrong.
"""

from __future__ import annotations

from compiler.model.windows import minutes
from compiler.promql import quote
from compiler.targets.prometheus import AlertRule
from compiler.targets.prometheus.proof import timing
from compiler.targets.prometheus.proof.asserts import alerts_sample, expect, firing_exactly, nothing_until
from compiler.targets.prometheus.proof.context import SpecContext
from compiler.targets.prometheus.proof.group import Group, duration_text, selector
from compiler.targets.prometheus.proof.timeline import Timeline
from compiler.targets.prometheus.proof.timing import STEP_MIN
from compiler.text.numbers import go_float


def calm_horizon(ctx: SpecContext) -> int:
    """The last minute any alert would have fired by, had the calm value breached its condition."""
    horizon = STEP_MIN
    for rule in ctx.rules:
        if rule.kind == "burn":
            horizon = max(horizon, timing.burn_times(rule, ctx.inputs)[1])
        elif rule.kind == "range" and rule.band is not None:
            offset = minutes(rule.band.relative.offset_ms) if rule.band.relative else 0
            horizon = max(horizon, offset + ctx.steady + minutes(rule.for_ms))
        else:
            horizon = max(horizon, minutes(rule.for_ms))
    return horizon


def calm(ctx: SpecContext) -> Group:
    """Every slice at the calm value: nothing fires (warm-up alerts judged once their windows are whole)."""
    calm = ctx.calm_value()
    warming = timing.warming(ctx.rules, ctx.inputs)
    settled = max(warming.values(), default=0)
    horizon = max(calm_horizon(ctx), settled + STEP_MIN) + STEP_MIN  # one evaluation past the last that could fire
    group = Group(
        f"calm baseline: every slice at {go_float(calm)}, nothing fires for {duration_text(horizon)}",
        ctx.timelines(Timeline.constant(calm, horizon), calm),
        ctx.inputs,
    )
    # Firing only: before the first rate exists the no-data alert is briefly pending, as in Prometheus.
    firing = {"slo": ctx.slo.name, "alertstate": "firing"}
    nothing_until(group, horizon, firing, excluding=sorted(warming))
    if warming:  # those alerts too, once the first windows are whole
        nothing_until(group, horizon, firing, since=settled)
    return group


def missing(ctx: SpecContext, rule: AlertRule) -> Group:
    """No input series at all: the no-data alert pends, fires after its wait, and nothing else does."""
    wait = minutes(rule.for_ms)
    title = "no input series at all" if not ctx.slo.page_conditions else "no SLI input series (its conditions hold)"
    group = Group(f"{rule.name}: {title}, so it fires after {duration_text(wait)}", {}, None)
    group.extra_series = ctx.inputs.condition_series(wait)
    if (before := wait - STEP_MIN) > 0:  # pending the evaluation before it fires, when that is after the start
        expect(group, selector("ALERTS", {"alertname": rule.name}), before, [alerts_sample(rule, "pending", {})])
    firing_exactly(ctx, group, wait, [rule], None, {})
    others = f"ALERTS{{slo={quote(ctx.slo.name)}, alertname!={quote(rule.name)}}}"
    expect(group, f"max_over_time({others}[{duration_text(wait)}])", wait, [])
    return group
