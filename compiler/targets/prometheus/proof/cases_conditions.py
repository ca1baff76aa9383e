"""Cases for the conditions a spec's pages need (``assumes``, ``confirmed_by``).

For each condition: a case in which a page fires (the first such case of the file, inputs
and all) is replayed with the condition broken and with its series absent, and no page
fires or pends; for an assumption, a calm slice with the assumption broken, and with its
series absent, raises the assumption's ticket once its ``for`` has passed, and nothing else.
"""

from __future__ import annotations

from collections.abc import Sequence

from compiler.model import Condition
from compiler.model.windows import minutes
from compiler.targets.prometheus import AlertRule
from compiler.targets.prometheus.proof import timing
from compiler.targets.prometheus.proof.asserts import firing_exactly, nothing_until
from compiler.targets.prometheus.proof.conditions import State
from compiler.targets.prometheus.proof.context import SpecContext
from compiler.targets.prometheus.proof.group import Group, duration_text
from compiler.targets.prometheus.proof.timeline import Timeline
from compiler.targets.prometheus.proof.timing import STEP_MIN

_STATES: tuple[tuple[State, str], ...] = (("broken", "does not hold"), ("absent", "has no series"))


def groups(ctx: SpecContext, found: Sequence[Group]) -> list[Group]:
    """The gating cases of every condition, after the cases ``found`` that show the pages firing."""
    pages = [rule for rule in ctx.rules if rule.spec.gated]
    if not ctx.slo.page_conditions:
        return []
    # A spec without pages still raises its assumptions' tickets: those cases are made, the held-back ones not.
    shown = _page_case(found, {rule.name for rule in pages}) if pages else None
    result = []
    for condition in ctx.slo.page_conditions:
        for state, words in _STATES:
            if state == "broken" and not ctx.inputs.breakable(condition.name):
                continue  # only its series' absence breaks it: the absent cases show that
            if shown is not None:
                result.append(_held_back(ctx, shown, condition, state, words, pages))
            if condition.kind == "assumes":
                result.append(_ticket(ctx, condition, state, words))
    return result


def _page_case(found: Sequence[Group], names: set[str]) -> Group | None:
    """The first case with SLI inputs in which one of ``names`` is expected to fire."""
    for group in found:
        if group.inputs is None:
            continue
        if any(check["alertname"] in names and check["exp_alerts"] for check in group.alerts):
            return group
    return None


def _held_back(
    ctx: SpecContext, shown: Group, condition: Condition, state: State, words: str, pages: Sequence[AlertRule]
) -> Group:
    """The page case ``shown`` again with ``condition`` broken or absent: no page fires or pends."""
    horizon = max(check["eval_time_m"] for check in [*shown.alerts, *shown.promql])
    group = Group(
        f"{condition.kind} {condition.name} {words}: the case '{shown.name}' again, and no page fires or pends "
        f"for {duration_text(horizon)}",
        shown.timelines,
        shown.inputs,
        extra_series=list(shown.extra_series),
        states={condition.name: state},
    )
    for rule in pages:
        nothing_until(group, horizon, {"alertname": rule.name, "slo": ctx.slo.name})
    return group


def _ticket(ctx: SpecContext, condition: Condition, state: State, words: str) -> Group:
    """A calm slice with the assumption broken or absent: its ticket fires after ``for``, no page, nothing else."""
    rule = next(r for r in ctx.rules if r.kind == "assumption" and r.spec.condition == condition)
    fires = ctx.first + minutes(rule.for_ms) + STEP_MIN
    calm = ctx.calm_value()
    group = Group(
        f"{rule.name} ({condition.name}): the assumption {words} in slice a, so its ticket fires by "
        f"{duration_text(fires)} and nothing else does",
        {"a": Timeline.constant(calm, fires)},
        ctx.inputs,
        states={condition.name: state},
    )
    firing_exactly(ctx, group, fires, [rule], None, ctx.slice_a)
    others = [r.name for r in ctx.rules if r.kind == "assumption"]
    # Before the SLI's first value (a rate needs two samples) its no-data alert is briefly pending, as in
    # Prometheus and as the calm baseline allows; alerts that may fire while the first windows fill
    # (``timing.warming``) are judged once they are whole. Firing is judged from minute 0.
    warming = {name: end for name, end in timing.warming(ctx.rules, ctx.inputs).items() if name not in others}
    since = max([ctx.first, *warming.values()])
    if since > 0:
        firing = {"slo": ctx.slo.name, "alertstate": "firing"}
        nothing_until(group, fires, firing, excluding=sorted({*others, *warming}))
    nothing_until(group, fires, {"slo": ctx.slo.name}, since=since, excluding=others)
    return group
