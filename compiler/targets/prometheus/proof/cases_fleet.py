"""Cases for a fleet (``SLO.fleet``): one unit out is its ticket, the slice pages only when enough are.

Each case builds one slice of N units, of which some are pushed past the critical range and
the rest held calm, and states what promtool must see: the per-unit ticket pending and then
firing for exactly the units that are out, the slice's page firing or staying silent as the
fleet's settings decide (``Fleet.pages``, the same rule the alert encodes), and both resolved
once the units return. The cases are: one unit; K - 1 units; K units; a share of a slice at
the minimum size; the same share of a slice one unit under it; and with ``require: both``, K
units that are too small a share. A unit's raw series come from a twin of the spec sliced by
the slice and unit labels, so every selector, join and expression of the spec is fed as it
is in production.
"""

from __future__ import annotations

import dataclasses
import math
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from typing import Any

from compiler.model import SLO, Fleet, Range, StateSLI
from compiler.model.windows import minutes
from compiler.targets.prometheus import AlertRule
from compiler.targets.prometheus.proof import gotemplate
from compiler.targets.prometheus.proof.asserts import alerts_sample, expect, nothing_until
from compiler.targets.prometheus.proof.context import ALL_BAD, NONE_BAD, SpecContext, readable
from compiler.targets.prometheus.proof.group import Group, duration_text, selector
from compiler.targets.prometheus.proof.inputs import SLICE_NAMES, InputError, Inputs
from compiler.targets.prometheus.proof.timeline import Timeline
from compiler.targets.prometheus.proof.timing import steady_minute

MAX_UNITS = 120  # a case needing a bigger slice (a tiny share) is left out: its input would dwarf the file
HELD_PAST_FIRING_MIN = 2  # the out units stay out this long after the alerts fire
CLEARED_MARGIN_MIN = 1  # one evaluation past the minute the value is back and keep_firing_for is over
QUIET_TAIL_MIN = 3  # minutes after clearing in which no alert of the case may be pending or firing
PAST_BOUND = 1.5  # a positive maximum is crossed by half again (capped inside 0..1 for shares)
UNDER_BOUND = 0.5  # a positive minimum is undercut by half


@dataclass(frozen=True)
class _Case:
    title: str
    units: int
    out: int


class _UnitInputs(Inputs):
    """The raw series of one unit: a twin spec sliced by the slice and unit labels, one unit per slice.
    A case writes only slice ``a`` of each unit, so no calm slice ``b`` is built."""

    def __init__(self, slo: SLO, scenario_slice: Mapping[str, str], index: int) -> None:
        self.index = index  # set first: the base class synthesises labels while it builds
        super().__init__(slo, scenario_slice, SLICE_NAMES[:1])

    def _unit_value(self, label: str, slice_name: str, unit: int) -> str:
        """A label a join matches on differs between units as well: when the unit label comes from the
        join (a kubelet target's ``instance`` mapped to its ``node``), one key for every unit would give
        two units the same raw series and the join duplicate matches."""
        base = super()._unit_value(label, slice_name, unit)
        keys = {key for join in self.slo.slice.joins for key in join.on}
        return f"{base}-unit-{self.index}" if label in keys and self.index else base

    def _spec_unit_labels(self) -> list[str]:
        return [label for label in super()._spec_unit_labels() if label not in self.slo.slice.by]

    def _synthetic_unit_label(self) -> str | None:
        return None


def _twin(slo: SLO, fleet: Fleet) -> SLO:
    by = (*slo.slice.by, *(label for label in fleet.units if label not in slo.slice.by))
    return dataclasses.replace(slo, slice=dataclasses.replace(slo.slice, by=by), fleet=None, scenarios=())


def cases(fleet: Fleet) -> list[_Case]:
    """The slices worth proving for these settings, each within ``MAX_UNITS`` units."""
    k, share, fewest = fleet.page_units, fleet.page_share, fleet.min_units
    found = []
    roomy = max(k or 2, math.ceil((k or 1) / share) + 1 if share else 0, fewest or 0)
    found.append(_Case("one unit", roomy, 1))
    if k is not None:
        small = k if fleet.require_both else roomy
        if k > 2:
            found.append(_Case(f"{k - 1} units (one short of {k})", small - (1 if fleet.require_both else 0), k - 1))
        found.append(_Case(f"{k} units", small, k))
        if fleet.require_both and share is not None:
            found.append(_Case(f"{k} units (under the share)", math.ceil(k / share) + 1, k))
    if share is not None and fewest is not None:
        found.append(_Case("the share, at the minimum slice size", fewest, math.ceil(share * fewest)))
        under = fewest - 1
        found.append(_Case("the share, one unit under the minimum slice size", under, math.ceil(share * under)))
    return [case for case in found if 0 < case.out <= case.units <= MAX_UNITS]


def fleet_groups(ctx: SpecContext) -> list[Group]:
    """Every fleet case of the spec (none without a fleet)."""
    fleet = ctx.slo.fleet
    if fleet is None:
        return []
    pages = [rule for rule in ctx.rules if rule.spec.fleet == "page"]
    units = [rule for rule in ctx.rules if rule.spec.fleet == "unit"]
    twin = _twin(ctx.slo, fleet)
    built: dict[int, Inputs] = {}  # one unit's inputs are the same in every case: solved once

    def unit_inputs(index: int) -> Inputs:
        if index not in built:
            built[index] = _UnitInputs(twin, {**ctx.slice_a, **_unit_labels(fleet, index)}, index)
        return built[index]

    return [
        _group(ctx, unit_inputs, fleet, page, unit, case)
        for page, unit in zip(pages, units, strict=True)
        for case in cases(fleet)
    ]


def _unit_labels(fleet: Fleet, index: int) -> dict[str, str]:
    return {label: f"{label.replace('_', '-')}-fleet-{index}" for label in fleet.units}


def _out_value(inputs: Inputs, band: Range, above: bool, bounded: bool) -> float:
    """A value clearly past the bound that real series can have."""
    bound = band.maximum if above else band.minimum
    assert bound is not None
    if above:
        wanted = bound * PAST_BOUND if bound > 0 else bound + 1
        if bounded:
            wanted = min(wanted, (bound + ALL_BAD) / 2)
        found = inputs.achievable(readable(wanted), above=bound)
    else:
        wanted = bound * UNDER_BOUND if bound > 0 else bound - 1
        found = inputs.achievable(readable(wanted), below=math.nextafter(bound, -math.inf))
    if found is None:
        raise InputError(f"no reachable value of one unit lies past the critical bound {bound}")
    return found


def _group(
    ctx: SpecContext, unit_inputs: Callable[[int], Inputs], fleet: Fleet, page: AlertRule, unit: AlertRule, case: _Case
) -> Group:
    band = page.band
    assert band is not None
    above = page.spec.side == "Above"
    units = [unit_inputs(index) for index in range(case.units)]
    first = units[0]
    bounded = ctx.events or ctx.slo.unit == "ratio"
    out_value = ALL_BAD if isinstance(ctx.slo.sli, StateSLI) else _out_value(first, band, above, bounded)
    calm = NONE_BAD if isinstance(ctx.slo.sli, StateSLI) else ctx.calm_value()
    # A rate() gauge fed from minute 0 reads part of its window until the window is whole (steady): the
    # out value may cross the bound only then, so the alerts fire ``for`` after it, and pend from there.
    crossed = steady_minute(first) if first.ramps else first.onset
    fires = crossed + minutes(band.for_ms)
    unit_fires = crossed + minutes(unit.for_ms)
    back = max(fires, unit_fires) + HELD_PAST_FIRING_MIN
    cleared = back + first.settle + minutes(band.keep_firing_for_ms) + CLEARED_MARGIN_MIN
    end = cleared + QUIET_TAIL_MIN
    out = Timeline.constant(out_value, back).then(calm, end - back)
    quiet = Timeline.constant(calm, end)
    pages = fleet.pages(case.units, case.out)
    # Once the page fires the unit tickets are held back; a unit fires first only if its ``for`` ends before
    # the page's could (the earliest crossing is the onset: a ramping rate may cross before ``crossed``).
    held_from = first.onset + minutes(band.for_ms)  # the earliest minute the page can fire
    units_fire = not pages or unit_fires < held_from
    group = Group(
        f"{page.name} (fleet): {case.title} out in a slice of {case.units} from 0m: "
        f"{'pages at ' + duration_text(fires) if pages else 'no page'}; {_tickets(pages, units_fire)}; resolved by "
        f"{duration_text(cleared)}",
        {},
        None,
    )
    for index, inputs in enumerate(units):
        group.extra_series.extend(inputs.input_series({"a": out if index < case.out else quiet}))
    out_labels = [units[index].alert_labels("a") for index in range(case.out)]
    pending = _pending_minute(first, crossed, unit_fires)
    if unit_fires > crossed and (not pages or pending < held_from):
        _states(group, unit, pending, "pending", out_labels)
    if units_fire:
        _states(group, unit, unit_fires, "firing", out_labels)
        _exactly(ctx, group, unit, unit_fires, out_value, out_labels)
    else:
        nothing_until(group, back, {"alertname": unit.name, "alertstate": "firing"})
    if pages:
        nothing_until(group, back, {"alertname": unit.name}, since=fires)
        if fires > crossed:
            _states(group, page, _pending_minute(first, crossed, fires), "pending", [ctx.slice_a])
        _states(group, page, fires, "firing", [ctx.slice_a])
        _exactly(ctx, group, page, fires, float(case.out), [ctx.slice_a])
    else:
        nothing_until(group, back, {"alertname": page.name})
    nothing_until(group, end, {"alertname": unit.name}, since=cleared)
    nothing_until(group, end, {"alertname": page.name}, since=cleared)
    return group


def _tickets(pages: bool, units_fire: bool) -> str:
    if not pages:
        return "each unit out has its ticket"
    if units_fire:
        return "each unit out has its ticket until the page fires"
    return "the unit tickets pend and are held back by the page"


def _pending_minute(inputs: Inputs, crossed: int, fires: int) -> int:
    """A minute the alert is surely pending: the one before it fires, or, while a rate window fills (the
    crossing may come before the window is whole, so the alert may fire before ``fires``), ``crossed``."""
    return crossed if inputs.ramps else fires - 1


def _exactly(
    ctx: SpecContext, group: Group, rule: AlertRule, minute: int, value: float, slices: list[dict[str, str]]
) -> None:
    """alert_rule_test: exactly these alerts of ``rule`` fire, with their labels and annotations."""
    expected = []
    for labels in slices:
        rendered = {
            key: gotemplate.render(text, {"slo": ctx.slo.name, **labels}, value)
            for key, text in rule.annotations.items()
        }
        expected.append({"exp_labels": {**rule.labels, **labels}, "exp_annotations": rendered})
    group.alerts.append({"eval_time_m": minute, "alertname": rule.name, "exp_alerts": sorted(expected, key=str)})


def _states(group: Group, rule: AlertRule, minute: int, state: str, slices: list[dict[str, str]]) -> None:
    """Exactly these ALERTS samples of ``rule`` at ``minute``: one per slice (or unit) given."""
    samples: list[dict[str, Any]] = [alerts_sample(rule, state, labels) for labels in slices]
    matchers: Mapping[str, str] = {"alertname": rule.name, "alertstate": state}
    expect(group, selector("ALERTS", matchers), minute, sorted(samples, key=str))
