"""What a reviewer needs to know about one spec and its alerts, as comparable text facts.

A spec change is reviewed by what it does, not by the 68-354 lines it moves in
``generated/``: each spec and each alert is reduced to a small ordered table of facts
(threshold, windows, ``for``, severity, receivers, inhibitions, links, series) read from
the model and the plan, so the diff of two revisions is the diff of these tables. The
facts are written once, in the words a runbook uses, and compared as strings.
"""

from __future__ import annotations

from dataclasses import dataclass

from compiler.model import SLO, Model, Range
from compiler.model import labels as lbl
from compiler.model.budget import estimate
from compiler.model.links import automation_receiver, runbook_url, team_receiver
from compiler.plan import AlertSpec, Plan, SpecPlan
from compiler.promql import format_duration
from compiler.text import human

Facts = tuple[tuple[str, str], ...]

# Labels every alert carries that are facts of the spec, not of the alert.
_SPEC_LABELS = {lbl.SEVERITY, lbl.TEAM, lbl.SLO, lbl.FAMILY, lbl.SLO_COMPILER, lbl.LONG_WINDOW, lbl.SHORT_WINDOW}


@dataclass(frozen=True)
class AlertFacts:
    """One alert rule, named so that the same rule in two revisions has the same key."""

    key: str  # alert name, plus the window pair for burn alerts
    kind: str
    facts: Facts


@dataclass(frozen=True)
class SpecFacts:
    name: str
    source: str
    facts: Facts
    alerts: tuple[AlertFacts, ...]
    series: int


def _ms(value: int) -> str:
    return human.duration(value)


def _window(value: int) -> str:
    return format_duration(value) if value else "0s"


def _ratio(value: float) -> str:
    """A derived error ratio as a percent to the digits that matter, with the exact number beside it when
    the percent rounds (so two revisions never compare equal by rounding)."""
    shown = human.share(value)
    exact = human.decimal(value)
    return shown if human.percent(value) == shown else f"{shown} ({exact})"


def _relative_threshold(band: Range, unit: str) -> str:
    assert band.relative is not None
    rel = band.relative
    parts = [f"offset {_ms(rel.offset_ms)}"]
    if rel.max_factor is not None:
        parts.append(f"above {human.factor(rel.max_factor)}")
    if rel.min_factor is not None:
        parts.append(f"below {human.factor(rel.min_factor)}")
    if rel.floor is not None:
        parts.append(f"floor {human.value(unit, rel.floor)}")
    return "relative: " + ", ".join(parts)


def _band_threshold(band: Range, side: str | None, unit: str) -> str:
    """The static bound of the alert's side, then the relative one: a band may have both."""

    def _number(value: float) -> str:
        return human.value(unit, value)

    parts = []
    if side == "Above" and band.maximum is not None:
        floor = "" if band.min_bad_events is None else f" and bad events in 5m >= {human.count(band.min_bad_events)}"
        parts.append(f"value > {_number(band.maximum)}{floor}")
    if side == "Below" and band.minimum is not None:
        parts.append(f"value < {_number(band.minimum)}")
    if band.relative is not None:
        parts.append(_relative_threshold(band, unit))
    return " or ".join(parts) or "outside the band"


def _receivers(slo: SLO, alert: AlertSpec) -> str:
    channel = "shadow" if slo.mode == "shadow" else alert.severity
    names = [team_receiver(slo.owner, channel)]
    automation = alert.label_map.get(lbl.AUTOMATION)
    if automation:
        names.append(automation_receiver(automation))
    return ", ".join(names)


# The facts that change what a rule does (not where it is routed or what it links to).
RULE_FACTS = frozenset({"windows", "burn factor", "threshold", "for", "keep_firing_for"})


def alert_key(alert: AlertSpec) -> str:
    """The alert's key in a review: its name, plus the window pair for a burn alert."""
    if alert.burn is None:
        return alert.name
    return f"{alert.name} {_window(alert.burn.long_ms)}/{_window(alert.burn.short_ms)}"


def _alert_facts(model: Model, spec: SpecPlan, alert: AlertSpec) -> AlertFacts:
    slo = spec.slo
    facts: list[tuple[str, str]] = [("severity", alert.severity_text)]
    key = alert.name
    if alert.burn is not None and slo.objective is not None:
        burn = alert.burn
        key = alert_key(alert)
        facts += [
            ("windows", f"{_ms(burn.long_ms)} / {_ms(burn.short_ms)}"),
            ("burn factor", human.factor(burn.factor)),
            ("threshold", f"error ratio > {_ratio(slo.objective.threshold(burn))}"),
        ]
    elif alert.band is not None:
        facts.append(("threshold", _band_threshold(alert.band, alert.side, slo.unit)))
    elif alert.kind == "no_data":
        facts.append(("threshold", "no recorded series"))
    facts += [("for", _ms(alert.for_ms)), ("keep_firing_for", _ms(alert.keep_firing_for_ms))]
    extra = ", ".join(f"{name}={value}" for name, value in alert.labels if name not in _SPEC_LABELS)
    facts += [
        ("labels", extra or "(none)"),
        ("receivers", _receivers(slo, alert)),
        ("runbook", runbook_url(model, slo, alert.name)),
    ]
    return AlertFacts(key=key, kind=alert.kind, facts=tuple(facts))


def _inhibitions(model: Model, slo: SLO) -> tuple[str, str]:
    """(what this spec's alerts hold back, what holds them back), one line each."""
    inhibits = [f"{e.slo} (equal {', '.join(e.equal) or 'nothing'}, while {e.severity})" for e in slo.explains]
    held_by = [
        f"{other.name} (while {e.severity})" for other in model.slos for e in other.explains if e.slo == slo.name
    ]
    return ", ".join(sorted(inhibits)) or "(none)", ", ".join(sorted(held_by)) or "(none)"


def _objective(slo: SLO) -> str:
    if slo.objective is None:
        return "(none)"
    return f"{human.percent(slo.objective.target)} over {human.duration(slo.objective.period_ms)}"


def _spec_facts(model: Model, spec: SpecPlan) -> SpecFacts:
    slo = spec.slo
    inhibits, held_by = _inhibitions(model, slo)
    series = estimate(slo, model.project.cluster_profile).series
    facts: Facts = (
        ("owner", slo.owner.name),
        ("family", slo.family),
        ("mode", slo.mode),
        ("sli", type(slo.sli).__name__.removesuffix("SLI").lower()),
        ("slice", ", ".join(slo.slice.by)),
        ("objective", _objective(slo)),
        ("mitigation", slo.mitigation.summary),
        ("automation", slo.mitigation.automation or "(none)"),
        ("inhibits", inhibits),
        ("inhibited by", held_by),
        ("estimated series", f"{series:,}"),
    )
    alerts = tuple(_alert_facts(model, spec, alert) for alert in spec.alerts)
    return SpecFacts(name=slo.name, source=slo.source, facts=facts, alerts=alerts, series=series)


def plan_facts(compiled: Plan) -> dict[str, SpecFacts]:
    """Every spec's facts, by spec name."""
    return {spec.slo.name: _spec_facts(compiled.model, spec) for spec in compiled}
