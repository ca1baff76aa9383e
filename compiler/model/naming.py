"""Alert names: how a spec's alert prefix and sections become the names of its alerts.

The plan (``compiler.plan``) names every alert with these functions, and the checker uses
the same ones to check scenario expectations and collisions, so a name is spelt once. A
spec's ``alert_names`` replace the prefix-plus-suffix name of a kind of alert with a full
name (a migrated alert keeps the name its silences and routes already use).
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Literal

from compiler.model import SLO, AlertKey, Range

Side = Literal["Above", "Below"]
Level = Literal["Normal", "Critical"]
SIDES: tuple[Side, ...] = ("Above", "Below")


def camel(name: str) -> str:
    """``apiserver-write-latency`` -> ``ApiserverWriteLatency``: the default alert prefix."""
    return "".join(part[:1].upper() + part[1:] for part in name.split("-") if part)


def band_sides(band: Range) -> tuple[Side, ...]:
    """The sides of a band that have a bound: Above for a max (static or relative), Below for a min."""
    sides: list[Side] = []
    if band.maximum is not None or (band.relative is not None and band.relative.max_factor is not None):
        sides.append("Above")
    if band.minimum is not None or (band.relative is not None and band.relative.min_factor is not None):
        sides.append("Below")
    return tuple(sides)


def burn_alert_name(prefix: str) -> str:
    return f"{prefix}ErrorBudgetBurn"


def range_alert_name(prefix: str, side: Side, level: Level) -> str:
    return f"{prefix}{side}{level}Range"


def no_data_alert_name(prefix: str) -> str:
    return f"{prefix}NoData"


def vanished_alert_name(prefix: str) -> str:
    return f"{prefix}SliceVanished"


def assumption_alert_name(prefix: str) -> str:
    """One ticket name for every broken assumption of a spec; its ``assumption`` label names which."""
    return f"{prefix}AssumptionBroken"


_RANGE_KEYS: dict[tuple[Side, Level], AlertKey] = {
    ("Above", "Normal"): "above_normal",
    ("Below", "Normal"): "below_normal",
    ("Above", "Critical"): "above_critical",
    ("Below", "Critical"): "below_critical",
}
_UNIT_KEYS: dict[Side, AlertKey] = {"Above": "unit_above_critical", "Below": "unit_below_critical"}


def unit_key(side: Side) -> AlertKey:
    """The key of a fleet's per-unit ticket on one side of the critical band."""
    return _UNIT_KEYS[side]


def unit_alert_name(prefix: str, side: Side) -> str:
    """A fleet's per-unit ticket: ``<prefix>UnitAboveCriticalRange``, next to the slice's page."""
    return f"{prefix}Unit{side}CriticalRange"


def range_key(side: Side, level: Level) -> AlertKey:
    """The ``alert_names`` key of one side of a band: ``above_normal``, ``below_critical``, ..."""
    return _RANGE_KEYS[(side, level)]


def default_alert_name(prefix: str, key: AlertKey) -> str:
    """The prefix-plus-suffix name of a kind of alert, used unless the spec's alert_names replace it."""
    if key == "burn":
        return burn_alert_name(prefix)
    if key == "no_data":
        return no_data_alert_name(prefix)
    unit_side = next((side for side, found in _UNIT_KEYS.items() if found == key), None)
    if unit_side is not None:
        return unit_alert_name(prefix, unit_side)
    if key == "vanished":
        return vanished_alert_name(prefix)
    if key == "assumption":
        return assumption_alert_name(prefix)
    side, level = next(pair for pair, found in _RANGE_KEYS.items() if found == key)
    return range_alert_name(prefix, side, level)


def alert_keys_for(
    has_objective: bool,
    normal: Range | None,
    critical: Range | None,
    no_data: bool,
    fleet: bool = False,
    vanished: bool = False,
    assumes: bool = False,
) -> list[AlertKey]:
    """The kinds of alert a spec produces, in rule order (a fleet's per-unit tickets after its page)."""
    keys: list[AlertKey] = ["burn"] if has_objective else []
    levels: tuple[tuple[Level, Range | None], ...] = (("Normal", normal), ("Critical", critical))
    for level, band in levels:
        if band is not None:
            keys.extend(range_key(side, level) for side in band_sides(band))
    if fleet and critical is not None:
        keys.extend(unit_key(side) for side in band_sides(critical))
    if no_data:
        keys.append("no_data")
    if vanished:
        keys.append("vanished")
    if assumes:
        keys.append("assumption")
    return keys


def alert_name_table(
    prefix: str,
    has_objective: bool,
    normal: Range | None,
    critical: Range | None,
    no_data: bool,
    overrides: Mapping[AlertKey, str] | None = None,
    fleet: bool = False,
    vanished: bool = False,
    assumes: bool = False,
) -> dict[AlertKey, str]:
    """Each kind of alert a spec produces and its name, in rule order: the override, or prefix plus suffix."""
    given = overrides or {}
    return {
        key: given.get(key) or default_alert_name(prefix, key)
        for key in alert_keys_for(has_objective, normal, critical, no_data, fleet, vanished, assumes)
    }


def alert_names_for(
    prefix: str,
    has_objective: bool,
    normal: Range | None,
    critical: Range | None,
    no_data: bool,
    overrides: Mapping[AlertKey, str] | None = None,
    fleet: bool = False,
    vanished: bool = False,
    assumes: bool = False,
) -> list[str]:
    """Every alert name a spec produces, in rule order (the plan emits exactly these)."""
    return list(
        alert_name_table(prefix, has_objective, normal, critical, no_data, overrides, fleet, vanished, assumes).values()
    )


def spec_alert_names(slo: SLO) -> dict[AlertKey, str]:
    """The name of each kind of alert of a built spec, as the plan names them."""
    return alert_name_table(
        slo.alert_name,
        slo.objective is not None,
        slo.normal_range,
        slo.critical_range,
        slo.no_data.enabled,
        dict(slo.alert_names),
        slo.fleet is not None,
        slo.no_data.vanished is not None,
        bool(slo.assumes),
    )
