"""Stage 4, the alert plan: every alert and recorded series of each spec, decided once.

Between the model and the targets. For each spec the plan lists its alerts (name, kind,
severity, ``for``, ``keep_firing_for``, routing labels, and the burn pair or the band side
and level it judges) and the series it records. Every target reads the plan rather than
another target, so the label contract between the rules and the Alertmanager routes lives
here alone, and a convention (a severity mapping, extra labels, alert-name overrides)
is one change in this module.
"""

from __future__ import annotations

from collections.abc import Iterator
from dataclasses import dataclass
from typing import Literal

from compiler.model import SLO, BurnAlert, Model, Range, Severity, series
from compiler.model import labels as lbl
from compiler.model.naming import (
    Level,
    Side,
    band_sides,
    burn_alert_name,
    no_data_alert_name,
    range_alert_name,
)
from compiler.promql import format_duration
from compiler.text.numbers import go_float

AlertKind = Literal["burn", "range", "no_data"]



@dataclass(frozen=True)
class AlertSpec:
    """One alert of one spec, before any engine syntax: what it judges and how it is routed."""

    name: str
    kind: AlertKind
    severity: Severity
    for_ms: int
    keep_firing_for_ms: int
    labels: tuple[tuple[str, str], ...]  # in rule order; every alert instance also carries the slice labels
    burn: BurnAlert | None = None
    band: Range | None = None
    level: Level | None = None  # Normal | Critical, for range alerts
    side: Side | None = None  # Above | Below, for range alerts

    @property
    def label_map(self) -> dict[str, str]:
        return dict(self.labels)


@dataclass(frozen=True)
class SpecPlan:
    """The alerts and recorded series of one spec, in rule order."""

    slo: SLO
    alerts: tuple[AlertSpec, ...]
    recorded: tuple[str, ...]  # recorded series per slice (``slo_info`` aside), see compiler.model.series

    @property
    def alert_names(self) -> tuple[str, ...]:
        """Distinct alert names, in rule order (burn pairs share one name)."""
        return tuple(dict.fromkeys(alert.name for alert in self.alerts))

    def of_kind(self, kind: AlertKind) -> tuple[AlertSpec, ...]:
        return tuple(alert for alert in self.alerts if alert.kind == kind)


@dataclass(frozen=True)
class Plan:
    """Every spec's plan, in the model's spec order."""

    model: Model
    specs: tuple[SpecPlan, ...]

    def __iter__(self) -> Iterator[SpecPlan]:
        return iter(self.specs)

    def of(self, slo: SLO | str) -> SpecPlan:
        name = slo if isinstance(slo, str) else slo.name
        for spec in self.specs:
            if spec.slo.name == name:
                return spec
        raise KeyError(name)


Labels = tuple[tuple[str, str], ...]


def routing_labels(slo: SLO, severity: Severity, extra: Labels = ()) -> Labels:
    """The labels Alertmanager routes on. A shadow spec is marked so routes keep it off paging
    receivers; a live spec with an automated mitigation names its automation webhook."""
    labels: list[tuple[str, str]] = [
        (lbl.SEVERITY, severity),
        (lbl.TEAM, slo.owner.name),
        (lbl.SLO, slo.name),
        (lbl.FAMILY, slo.family),
        *extra,
    ]
    if slo.mode == "shadow":
        labels.append((lbl.SHADOW, "true"))
    elif slo.mitigation.automation:
        labels.append((lbl.AUTOMATION, slo.mitigation.automation))
    return tuple(labels)


def _burn_alerts(slo: SLO) -> list[AlertSpec]:
    if slo.objective is None:
        return []
    alerts = []
    for burn in slo.objective.burn_alerts:
        window_labels = (
            (lbl.LONG_WINDOW, format_duration(burn.long_ms)),
            (lbl.SHORT_WINDOW, format_duration(burn.short_ms)),
            (lbl.BURN_FACTOR, go_float(burn.factor)),
        )
        alerts.append(
            AlertSpec(
                name=burn_alert_name(slo.alert_name),
                kind="burn",
                severity=burn.severity,
                for_ms=burn.for_ms,
                keep_firing_for_ms=burn.keep_firing_for_ms,
                labels=routing_labels(slo, burn.severity, window_labels),
                burn=burn,
            )
        )
    return alerts


def _range_alerts(slo: SLO, band: Range | None, level: Level) -> list[AlertSpec]:
    if band is None:
        return []
    return [
        AlertSpec(
            name=range_alert_name(slo.alert_name, side, level),
            kind="range",
            severity=band.severity,
            for_ms=band.for_ms,
            keep_firing_for_ms=band.keep_firing_for_ms,
            labels=routing_labels(slo, band.severity),
            band=band,
            level=level,
            side=side,
        )
        for side in band_sides(band)
    ]


def _no_data_alerts(slo: SLO) -> list[AlertSpec]:
    if not slo.no_data.enabled:
        return []
    return [
        AlertSpec(
            name=no_data_alert_name(slo.alert_name),
            kind="no_data",
            severity=slo.no_data.severity,
            for_ms=slo.no_data.for_ms,
            keep_firing_for_ms=0,
            labels=routing_labels(slo, slo.no_data.severity),
        )
    ]


def plan_spec(slo: SLO) -> SpecPlan:
    """One spec's alerts in rule order: burn pairs, normal range, critical range, no data."""
    alerts = [
        *_burn_alerts(slo),
        *_range_alerts(slo, slo.normal_range, "Normal"),
        *_range_alerts(slo, slo.critical_range, "Critical"),
        *_no_data_alerts(slo),
    ]
    return SpecPlan(slo=slo, alerts=tuple(alerts), recorded=tuple(series.recorded_names(slo)))


def plan(model: Model) -> Plan:
    """The plan of every spec of the model."""
    return Plan(model=model, specs=tuple(plan_spec(slo) for slo in model.slos))
