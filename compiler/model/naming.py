"""Alert names: how a spec's alert prefix and sections become the names of its alerts.

The plan (``compiler.plan``) names every alert with these functions, and the checker uses
the same ones to check scenario expectations and collisions, so a name is spelt once.
"""

from __future__ import annotations

from typing import Literal

from compiler.model import Range

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


def alert_names_for(
    prefix: str, has_objective: bool, normal: Range | None, critical: Range | None, no_data: bool
) -> list[str]:
    """Every alert name a spec produces, in rule order (the plan emits exactly these)."""
    names: list[str] = []
    if has_objective:
        names.append(burn_alert_name(prefix))
    levels: tuple[tuple[Level, Range | None], ...] = (("Normal", normal), ("Critical", critical))
    for level, band in levels:
        if band is not None:
            names.extend(range_alert_name(prefix, side, level) for side in band_sides(band))
    if no_data:
        names.append(no_data_alert_name(prefix))
    return names
