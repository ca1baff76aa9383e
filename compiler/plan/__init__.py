"""Stage 4, the alert plan: every alert and recorded series of each spec, decided once.

Between the model and the targets. For each spec the plan lists its alerts (name, kind,
severity, ``for``, ``keep_firing_for``, routing labels, and the burn pair or the band side
and level it judges) and the series it records. Every target reads the plan rather than
another target, so the label contract between the rules and the Alertmanager routes lives
here alone, and a convention (a severity mapping, extra labels, alert-name overrides)
is one change in this module.
"""

from __future__ import annotations

import functools
from collections.abc import Iterator, Mapping
from dataclasses import dataclass
from types import MappingProxyType
from typing import Literal

from compiler.diagnostics import Diagnostic
from compiler.model import SEVERITIES, SLO, BurnAlert, Condition, Labels, Model, Project, Range, Severity, series
from compiler.model import labels as lbl
from compiler.model.naming import (
    Level,
    Side,
    band_sides,
    range_key,
    spec_alert_names,
    unit_key,
)
from compiler.plan.coverage import LeftOut, fallback_notes, unscraped, without
from compiler.plan.watch import PlanWarning, per_unit_page_warning, watch_warnings
from compiler.promql import format_duration
from compiler.text.numbers import go_float

AlertKind = Literal["burn", "range", "no_data", "vanished", "assumption"]


@functools.lru_cache(maxsize=65_536)
def _label_map(labels: tuple[tuple[str, str], ...]) -> Mapping[str, str]:
    return MappingProxyType(dict(labels))


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
    annotations: Labels = ()  # the team's extra annotations (project, then spec), literal text
    # A fleet's alerts (range kind, critical level): "page" per slice when many units are out,
    # "unit" the ticket of one unit out (its instances also carry the fleet's unit labels).
    fleet: Literal["page", "unit"] | None = None
    condition: Condition | None = None  # the assumption a broken-assumption ticket is about

    @property
    def gated(self) -> bool:
        """Whether the spec's conditions (``assumes``, ``confirmed_by``) gate this alert: its pages do."""
        return self.severity == "page" and self.kind != "assumption"

    @property
    def label_map(self) -> Mapping[str, str]:
        """The labels by name, read-only: the generated tests' assertions read them hundreds of thousands of
        times for a thousand specs, so each distinct set is built once (outside the alert, which pickles)."""
        return _label_map(self.labels)

    @property
    def severity_label(self) -> str:
        """The emitted ``severity`` value (``severity`` itself is the channel routes decide on)."""
        return self.label_map[lbl.SEVERITY]

    @property
    def severity_text(self) -> str:
        """The severity as runbooks show it: the emitted value, and the channel when it differs."""
        value = self.severity_label
        return value if value == self.severity else f"{value} ({self.severity})"


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
    """Every compiled spec's plan, in the model's spec order.

    ``model`` is what the targets compile: the specs the scrape profile cannot feed are not in
    it but in ``left_out`` (see ``plan.coverage``); ``notes`` are what the user should know
    about the compilation without it being an error; ``warnings`` are alerts nobody would see
    (no heartbeat, foreign alerts dropped at the root; see ``plan.watch``).
    """

    model: Model
    specs: tuple[SpecPlan, ...]
    left_out: tuple[LeftOut, ...] = ()
    notes: tuple[Diagnostic, ...] = ()
    warnings: tuple[PlanWarning, ...] = ()

    def __iter__(self) -> Iterator[SpecPlan]:
        return iter(self.specs)

    def of(self, slo: SLO | str) -> SpecPlan:
        name = slo if isinstance(slo, str) else slo.name
        for spec in self.specs:
            if spec.slo.name == name:
                return spec
        raise KeyError(name)


@dataclass(frozen=True)
class Conventions:
    """A team's conventions from ``project.yaml``: the emitted severity values, extra labels and annotations."""

    severity_labels: tuple[tuple[Severity, str], ...] = tuple((severity, severity) for severity in SEVERITIES)
    labels: Labels = ()
    annotations: Labels = ()

    @classmethod
    def of(cls, project: Project) -> Conventions:
        return cls(project.severity_labels, project.alert_labels, project.alert_annotations)

    def severity_label(self, severity: Severity) -> str:
        return dict(self.severity_labels)[severity]


def merged(first: Labels, second: Labels) -> Labels:
    """``first`` then ``second``, a key of ``second`` replacing the same key of ``first`` in place."""
    return tuple({**dict(first), **dict(second)}.items())


def routing_labels(
    slo: SLO, severity: Severity, extra: Labels = (), conventions: Conventions = Conventions()
) -> Labels:
    """The labels Alertmanager routes on, then the team's extra labels (the spec's win over the project's).

    Every alert is marked ``slo_compiler="true"`` so our routes take only our alerts. A shadow
    spec is marked so routes keep it off paging receivers; a live spec with an automated
    mitigation names its automation webhook.
    """
    labels: list[tuple[str, str]] = [
        (lbl.SEVERITY, conventions.severity_label(severity)),
        (lbl.TEAM, slo.owner.name),
        (lbl.SLO, slo.name),
        (lbl.FAMILY, slo.family),
        (lbl.SLO_COMPILER, lbl.SLO_COMPILER_VALUE),
        *extra,
    ]
    if slo.mode == "shadow":
        labels.append((lbl.SHADOW, "true"))
    elif slo.mitigation.automation:
        labels.append((lbl.AUTOMATION, slo.mitigation.automation))
    return (*labels, *merged(conventions.labels, slo.labels))


def _burn_alerts(slo: SLO, conventions: Conventions) -> list[AlertSpec]:
    if slo.objective is None:
        return []
    name = spec_alert_names(slo)["burn"]
    alerts = []
    for burn in slo.objective.burn_alerts:
        window_labels = (
            (lbl.LONG_WINDOW, format_duration(burn.long_ms)),
            (lbl.SHORT_WINDOW, format_duration(burn.short_ms)),
            (lbl.BURN_FACTOR, go_float(burn.factor)),
        )
        alerts.append(
            AlertSpec(
                name=name,
                kind="burn",
                severity=burn.severity,
                for_ms=burn.for_ms,
                keep_firing_for_ms=burn.keep_firing_for_ms,
                labels=routing_labels(slo, burn.severity, window_labels, conventions),
                burn=burn,
                annotations=merged(conventions.annotations, slo.annotations),
            )
        )
    return alerts


def _range_alerts(slo: SLO, band: Range | None, level: Level, conventions: Conventions) -> list[AlertSpec]:
    if band is None:
        return []
    names = spec_alert_names(slo)
    return [
        AlertSpec(
            name=names[range_key(side, level)],
            kind="range",
            severity=band.severity,
            for_ms=band.for_ms,
            keep_firing_for_ms=band.keep_firing_for_ms,
            labels=routing_labels(slo, band.severity, conventions=conventions),
            band=band,
            level=level,
            side=side,
            annotations=merged(conventions.annotations, slo.annotations),
            fleet="page" if slo.fleet is not None and level == "Critical" else None,
        )
        for side in band_sides(band)
    ]


def _unit_alerts(slo: SLO, conventions: Conventions) -> list[AlertSpec]:
    """A fleet's per-unit tickets: one unit beyond the critical range is seen, and never pages."""
    band = slo.critical_range
    if slo.fleet is None or band is None:
        return []
    names = spec_alert_names(slo)
    return [
        AlertSpec(
            name=names[unit_key(side)],
            kind="range",
            severity="ticket",
            for_ms=band.for_ms if slo.fleet.unit_for_ms is None else slo.fleet.unit_for_ms,
            keep_firing_for_ms=band.keep_firing_for_ms,
            labels=routing_labels(slo, "ticket", conventions=conventions),
            band=band,
            level="Critical",
            side=side,
            annotations=merged(conventions.annotations, slo.annotations),
            fleet="unit",
        )
        for side in band_sides(band)
    ]


def _no_data_alerts(slo: SLO, conventions: Conventions) -> list[AlertSpec]:
    if not slo.no_data.enabled:
        return []
    return [
        AlertSpec(
            name=spec_alert_names(slo)["no_data"],
            kind="no_data",
            severity=slo.no_data.severity,
            for_ms=slo.no_data.for_ms,
            keep_firing_for_ms=0,
            labels=routing_labels(slo, slo.no_data.severity, conventions=conventions),
            annotations=merged(conventions.annotations, slo.annotations),
        )
    ]


def _vanished_alerts(slo: SLO, conventions: Conventions) -> list[AlertSpec]:
    """A per-slice alert for a slice whose series are gone while others still report (opt-in)."""
    vanished = slo.no_data.vanished
    if vanished is None:
        return []
    return [
        AlertSpec(
            name=spec_alert_names(slo)["vanished"],
            kind="vanished",
            severity=vanished.severity,
            for_ms=vanished.for_ms,
            keep_firing_for_ms=0,
            labels=routing_labels(slo, vanished.severity, conventions=conventions),
            annotations=merged(conventions.annotations, slo.annotations),
        )
    ]


def _assumption_alerts(slo: SLO, conventions: Conventions) -> list[AlertSpec]:
    """One ticket per assumption, for while it is broken: the spec's pages are silent then, this says why."""
    if not slo.assumes:
        return []
    name = spec_alert_names(slo)["assumption"]
    return [
        AlertSpec(
            name=name,
            kind="assumption",
            severity="ticket",
            for_ms=condition.for_ms,
            keep_firing_for_ms=0,
            labels=routing_labels(slo, "ticket", ((lbl.ASSUMPTION, condition.name),), conventions),
            annotations=merged(conventions.annotations, slo.annotations),
            condition=condition,
        )
        for condition in slo.assumes
    ]


def plan_spec(slo: SLO, conventions: Conventions = Conventions()) -> SpecPlan:
    """One spec's alerts in rule order: burns, normal, critical, per-unit tickets, no data, vanished slices,
    broken assumptions."""
    alerts = [
        *_burn_alerts(slo, conventions),
        *_range_alerts(slo, slo.normal_range, "Normal", conventions),
        *_range_alerts(slo, slo.critical_range, "Critical", conventions),
        *_unit_alerts(slo, conventions),
        *_no_data_alerts(slo, conventions),
        *_vanished_alerts(slo, conventions),
        *_assumption_alerts(slo, conventions),
    ]
    return SpecPlan(slo=slo, alerts=tuple(alerts), recorded=tuple(series.recorded_names(slo)))


def plan(model: Model) -> Plan:
    """The plan of every spec of the model the profile can feed, under the project's conventions."""
    conventions = Conventions.of(model.project)
    left_out = unscraped(model)
    compiled = without(model, left_out)
    notes = sorted({*(item.note for item in left_out), *fallback_notes(compiled)})
    specs = tuple(plan_spec(slo, conventions) for slo in compiled.slos)
    fanout = (per_unit_page_warning(spec.slo, tuple(alert.severity for alert in spec.alerts)) for spec in specs)
    return Plan(
        model=compiled,
        specs=specs,
        left_out=left_out,
        notes=tuple(notes),
        warnings=(*watch_warnings(model.project), *sorted(warning for warning in fanout if warning is not None)),
    )
