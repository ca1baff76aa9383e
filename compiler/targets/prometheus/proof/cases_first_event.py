"""Cases of a gauge over counters created on their first event (``absent_as_zero_while``).

On a healthy cluster such a counter has no series at all, so the tests give only the
presence series (the component's ``up``): at 1 the value reads 0 and nothing fires or even
pends; at 0 (targets down) the value is absent and the no-data alert fires after its wait.
"""

from __future__ import annotations

from compiler import promql
from compiler.model import GaugeSLI, series
from compiler.model.windows import minutes
from compiler.promql import quote
from compiler.targets.prometheus import AlertRule
from compiler.targets.prometheus.proof.asserts import alerts_sample, expect, firing_exactly, nothing_until
from compiler.targets.prometheus.proof.cases_baseline import calm_horizon
from compiler.targets.prometheus.proof.context import SpecContext
from compiler.targets.prometheus.proof.group import Group, duration_text, selector
from compiler.targets.prometheus.proof.timing import STEP_MIN

TARGETS_UP = 1.0  # the presence series while the component's targets are scraped
TARGETS_DOWN = 0.0  # up of a target that fails its scrapes: still a series, but not present


def applies(ctx: SpecContext) -> bool:
    sli = ctx.slo.sli
    return isinstance(sli, GaugeSLI) and sli.absent_as_zero_while is not None


def presence_text(ctx: SpecContext) -> str:
    sli = ctx.slo.sli
    assert isinstance(sli, GaugeSLI) and sli.absent_as_zero_while is not None
    return sli.absent_as_zero_while


def not_created_yet(ctx: SpecContext) -> Group:
    """Targets up, counters never created: every slice reads 0 and no alert fires or pends (once the
    presence expression has a value: an offset or range delays it, and no-data pends until then)."""
    ctx.inputs.check_presence(TARGETS_UP, TARGETS_DOWN)
    since = presence_onset(ctx)
    horizon = since + calm_horizon(ctx) + STEP_MIN
    group = Group(
        f"counters created on first event: none yet, {presence_text(ctx)} holds, so every slice reads 0 "
        f"and nothing fires or pends for {duration_text(horizon)}",
        {},
        None,
        extra_series=[*ctx.inputs.presence_series(TARGETS_UP, horizon), *ctx.inputs.condition_series(horizon)],
    )
    zero = f"count({series.recorded(series.VALUE, ctx.slo)} == 0)"
    expect(group, zero, horizon, [{"labels": "{}", "value": len(ctx.inputs.slices)}])
    nothing_until(group, horizon, {"slo": ctx.slo.name}, since=since)
    return group


def presence_onset(ctx: SpecContext) -> int:
    """The minute by which the presence expression surely has a value: inputs start at minute 0, and its
    offsets and ranges delay the first one."""
    presence = presence_text(ctx)
    delay = promql.offsets_ms(presence) + promql.lookback_ms(presence)
    return minutes(delay) + STEP_MIN if delay else 0


def targets_down(ctx: SpecContext, rule: AlertRule) -> Group:
    """Counters never created and the targets down (up at 0): the value is absent, so no-data fires."""
    wait = minutes(rule.for_ms)
    group = Group(
        f"{rule.name}: counters created on first event, none yet, and {presence_text(ctx)} does not hold "
        f"(targets down), so it fires after {duration_text(wait)}",
        {},
        None,
        extra_series=[*ctx.inputs.presence_series(TARGETS_DOWN, wait), *ctx.inputs.condition_series(wait)],
    )
    if (before := wait - STEP_MIN) > 0:
        expect(group, selector("ALERTS", {"alertname": rule.name}), before, [alerts_sample(rule, "pending", {})])
    firing_exactly(ctx, group, wait, [rule], None, {})
    others = f"ALERTS{{slo={quote(ctx.slo.name)}, alertname!={quote(rule.name)}}}"
    expect(group, f"max_over_time({others}[{duration_text(wait)}])", wait, [])
    return group
