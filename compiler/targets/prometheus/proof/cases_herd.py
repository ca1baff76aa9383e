"""A relative bound crossed at exactly its edge, from the spec's documented normal level.

``relative.normal`` states where the value sits on a normal day. The herd the bound must
catch is the smallest one that crosses it from there: ``max_factor`` x normal, and at least
the floor (a herd of 10x from 5/s under a floor of 50 is exactly 50/s). Relative bounds
are crossed at equality, so that herd fires; slice b makes a move just under it and stays
quiet. A drop to ``min_factor`` x normal is proven the same way when normal is at or above
the floor.
"""

from __future__ import annotations

from compiler.model.windows import minutes
from compiler.targets.prometheus import AlertRule
from compiler.targets.prometheus.proof.asserts import firing_exactly, nothing_until, states_at
from compiler.targets.prometheus.proof.cases_range import BASELINE_MIN
from compiler.targets.prometheus.proof.context import SpecContext, readable
from compiler.targets.prometheus.proof.group import Group
from compiler.targets.prometheus.proof.inputs import InputError
from compiler.targets.prometheus.proof.timeline import Timeline
from compiler.targets.prometheus.proof.timing import STEP_MIN
from compiler.text.numbers import clean_number, go_float

JUST_SHORT = 0.99  # slice b's move ends 1% short of the edge: on the quiet side of it


def _factor(rule: AlertRule) -> float | None:
    band = rule.band
    if band is None or band.relative is None:
        return None
    return band.relative.max_factor if rule.spec.side == "Above" else band.relative.min_factor


def applies(rule: AlertRule) -> bool:
    """A side of a relative bound whose band documents its normal level (a drop: one at or above the floor)."""
    band = rule.band
    if rule.kind != "range" or band is None or band.relative is None or band.relative.normal is None:
        return False
    if _factor(rule) is None:
        return False
    return rule.spec.side == "Above" or band.relative.normal >= band.relative.floor


def edge(rule: AlertRule) -> tuple[float, float]:
    """(the documented normal level, the value exactly at the edge of the relative bound from it)."""
    band, factor = rule.band, _factor(rule)
    assert band is not None and band.relative is not None and band.relative.normal is not None and factor
    normal = band.relative.normal
    if rule.spec.side == "Above":
        return normal, clean_number(max(factor * normal, band.relative.floor))
    return normal, clean_number(factor * normal)


def herd(ctx: SpecContext, rule: AlertRule) -> Group:
    """From the normal level, exactly to the edge (fires) and 1% short of it on slice b (quiet)."""
    band = rule.band
    assert band is not None and band.relative is not None
    normal, at_edge = edge(rule)
    above = rule.spec.side == "Above"
    if ctx.inputs.achievable(normal) != normal or ctx.inputs.achievable(at_edge) != at_edge:
        raise InputError(
            f"relative.normal {go_float(normal)}: the inputs cannot drive {rule.name}'s SLI to exactly "
            f"{go_float(normal)} and {go_float(at_edge)}, so the herd from the normal level cannot be shown to fire"
        )
    short = readable(normal + (at_edge - normal) * JUST_SHORT, 6)
    offset = minutes(band.relative.offset_ms)
    jump = offset + ctx.steady + BASELINE_MIN
    before = jump - STEP_MIN
    wait = minutes(rule.for_ms)
    fires = jump + ctx.inputs.settle + wait
    end = fires + STEP_MIN
    timelines = ctx.timelines(Timeline.constant(normal, before).then(at_edge, end - before), normal)
    quiet = ""
    if "b" in timelines and ctx.inputs.achievable(short) == short:
        timelines["b"] = Timeline.constant(normal, before).then(short, end - before)
        quiet = f"; slice b {'rises' if above else 'falls'} to {go_float(short)}, just short of it, and stays quiet"
    group = Group(
        f"{rule.name}: from its documented normal level {go_float(normal)} the value "
        f"{'rises' if above else 'falls'} to exactly {go_float(at_edge)}, the edge of its relative bound, "
        f"and fires (the bound holds at equality){quiet}",
        timelines,
        ctx.inputs,
    )
    nothing_until(group, before, {"alertname": rule.name})
    if wait and ctx.inputs.settle < STEP_MIN + wait:
        states_at(ctx, group, jump + ctx.inputs.settle, [rule], ["pending"])
    firing_exactly(ctx, group, fires, [rule], at_edge, ctx.slice_a)
    return group
