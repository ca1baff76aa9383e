"""One view per alert heading of a runbook, and the rows of its thresholds table, from the plan."""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass

from compiler.model import (
    ASSUMPTION_MEMORY_MS,
    SLO,
    BurnAlert,
    Range,
    series,
    windows,
)
from compiler.plan import AlertSpec, SpecPlan
from compiler.promql import format_duration
from compiler.targets.runbooks.queries import bounds
from compiler.text import human

# -- alerts -----------------------------------------------------------------------------


@dataclass(frozen=True)
class Row:
    """One row of the thresholds table; every field is plain text for the ``cell`` filter."""

    alert: str
    severity: str
    kind: str
    long: str
    short: str
    factor: str
    ratio: str
    bound: str
    for_: str
    keep_firing_for: str
    why: str


@dataclass(frozen=True)
class Pair:
    burn: BurnAlert
    threshold: str  # error ratio, as a percentage
    exhaustion: str  # time to spend the whole budget at this rate


@dataclass(frozen=True)
class AlertView:
    """Everything one alert heading says; burn pairs that share a name share one view."""

    name: str
    kind: str
    rules: tuple[AlertSpec, ...]
    pairs: tuple[Pair, ...] = ()
    band: Range | None = None
    band_label: str = ""
    direction: str = ""
    fleet: str = ""  # "unit" or "page" for a fleet's alerts (``SLO.fleet``)
    fleet_units: str = ""  # the unit labels, e.g. "instance, device"
    fleet_page: str = ""  # when the slice pages, in words
    bounds: tuple[str, ...] = ()

    @property
    def severities(self) -> str:
        return ", ".join(dict.fromkeys(rule.severity_text for rule in self.rules))


def _pair(slo: SLO, burn: BurnAlert) -> Pair:
    assert slo.objective is not None
    exhaustion = windows.exhaustion_ms(slo.objective.period_ms, burn.factor)
    return Pair(burn, human.share(burn.factor * slo.objective.budget), human.duration(exhaustion))


def alert_views(spec: SpecPlan) -> list[AlertView]:
    slo = spec.slo
    grouped: dict[str, list[AlertSpec]] = {}
    for alert in spec.alerts:
        grouped.setdefault(alert.name, []).append(alert)
    views = []
    for name, rules in grouped.items():
        first = rules[0]
        if first.kind == "burn":
            pairs = tuple(_pair(slo, rule.burn) for rule in rules if rule.burn is not None)
            views.append(AlertView(name, "burn", tuple(rules), pairs=pairs))
        elif first.kind == "range" and first.band is not None and first.side is not None:
            found = tuple(bounds(slo, first.band, first.side))
            views.append(
                AlertView(
                    name,
                    "range",
                    tuple(rules),
                    band=first.band,
                    band_label=first.level or "",
                    direction=first.side,
                    bounds=found,
                    fleet=first.fleet or "",
                    fleet_units=", ".join(slo.fleet.units) if slo.fleet else "",
                    fleet_page=slo.fleet.describe() if slo.fleet else "",
                )
            )
        else:
            views.append(AlertView(name, first.kind, tuple(rules)))
    return views


def dash_duration(value: int) -> str:
    """A duration for a table cell; zero (not set) is an em dash."""
    return human.duration(value) if value else "—"


def _vanished_row(slo: SLO, common: dict[str, str]) -> Row:
    """The threshold table's row of the vanished-slice alert."""
    vanished = slo.no_data.vanished
    window = format_duration(vanished.window_ms) if vanished is not None else "—"
    return Row(
        **common,
        kind="slice vanished",
        long=window,
        short="—",
        factor="—",
        ratio="—",
        bound=f"a slice with {series.presence_series(slo)} in the last {window} and none now",
        why="a slice whose units are deleted is invisible to every other alert of this spec",
    )


def _assumption_row(rule: AlertSpec, common: dict[str, str]) -> Row:
    """The threshold table's row of one broken assumption's ticket."""
    assert rule.condition is not None
    memory = format_duration(ASSUMPTION_MEMORY_MS)
    return Row(
        **common,
        kind=f"assumption {rule.condition.name} broken",
        long="—",
        short="—",
        factor="—",
        ratio="—",
        bound=f"not held at any time in the last {memory}",
        why=rule.condition.why,
    )


def threshold_rows(slo: SLO, views: Iterable[AlertView]) -> list[Row]:
    rows = []
    for view in views:
        for rule in view.rules:
            common = {"alert": view.name, "severity": rule.severity_text, "for_": dash_duration(rule.for_ms)}
            common["keep_firing_for"] = dash_duration(rule.keep_firing_for_ms)
            if rule.kind == "burn" and rule.burn is not None and slo.objective is not None:
                pair = _pair(slo, rule.burn)
                rows.append(
                    Row(
                        **common,
                        kind="error budget burn",
                        long=human.duration(rule.burn.long_ms),
                        short=human.duration(rule.burn.short_ms),
                        factor=human.factor(rule.burn.factor),
                        ratio=pair.threshold,
                        bound="—",
                        why=f"the {human.duration(slo.objective.period_ms)} budget is gone in {pair.exhaustion}",
                    )
                )
            elif rule.kind == "range":
                rows.append(
                    Row(
                        **common,
                        kind=f"{(rule.level or '').lower()} range",
                        long="—",
                        short="—",
                        factor="—",
                        ratio="—",
                        bound="; ".join(view.bounds),
                        why=rule.band.reason if rule.band is not None and rule.band.reason else "—",
                    )
                )
            elif rule.kind == "vanished":
                rows.append(_vanished_row(slo, common))
            elif rule.kind == "assumption":
                rows.append(_assumption_row(rule, common))
            else:
                rows.append(
                    Row(
                        **common,
                        kind="no data",
                        long="—",
                        short="—",
                        factor="—",
                        ratio="—",
                        bound=f"no {series.presence_series(slo)} series for {dash_duration(rule.for_ms)}",
                        why="every other alert of this spec is blind",
                    )
                )
    return rows
