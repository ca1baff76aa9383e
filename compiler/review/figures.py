"""What a changed alert does, before and after, in the figures a reviewer can act on.

Only alerts whose rule changed (threshold, windows, burn factor, ``for``,
``keep_firing_for``) or that are new get a line; a change of receivers or links moves no
figure. A burn alert is shown by the alert-quality figures the runbooks and the catalog
print (``compiler.plan.quality``, the SRE workbook's model): how fast a full outage fires,
the share of the period's budget it spends first, and how fast twice the threshold fires.
A range alert is shown by its bound in the spec's unit and, measured with promtool on its
own generated case (the value stepped just past the band), how long after the value leaves
the band it first fires.
"""

from __future__ import annotations

from dataclasses import dataclass

from compiler.model import SLO, Range
from compiler.plan import AlertSpec, SpecPlan
from compiler.plan.quality import burn_quality, figure_text
from compiler.review.behaviour import BehaviourChange, Timings
from compiler.review.changes import AlertChange
from compiler.review.facts import RULE_FACTS, alert_key
from compiler.text import human

Figure = tuple[str, str, str]  # (template with one "{}", before, after)


@dataclass(frozen=True)
class AlertBehaviour:
    alert: str  # the alert's key (name, plus the window pair of a burn alert)
    figures: tuple[Figure, ...]
    added: bool = False  # a new alert: the figures have no before


@dataclass(frozen=True)
class Behaviour:
    """One spec's behaviour section: its changed alerts' figures and the scenarios the change breaks."""

    alerts: tuple[AlertBehaviour, ...] = ()
    scenarios: tuple[BehaviourChange, ...] = ()


def rule_changed(change: AlertChange) -> bool:
    """Whether the change moves what the rule does (a new or renamed alert counts if any rule fact changed)."""
    return change.status == "added" or any(name in RULE_FACTS for name, _, _ in change.facts)


def _percent(share: float | None) -> str:
    return "never" if share is None else human.share(share)


def _period(slo: SLO) -> str:
    return "" if slo.objective is None else human.duration(slo.objective.period_ms)


def _burn_figures(slo: SLO, alert: AlertSpec | None, period: str) -> tuple[str, str, str]:
    """(full outage fires in, budget it spends first, twice the threshold fires in) of a burn alert.

    The budget share is of ``period``'s budget; a revision with another period says its own.
    """
    figures = None if alert is None else burn_quality(slo, alert)
    if figures is None:
        return "—", "—", "—"
    own = _period(slo)
    return (
        figure_text(figures.full_outage_ms),
        _percent(figures.budget_spent_full) + ("" if own == period else f" of the {own} budget"),
        figure_text(figures.twice_threshold_ms),
    )


def _bound(slo: SLO, band: Range | None, side: str | None) -> str:
    """Where a range alert fires, in the spec's unit: ``above 400``, ``below 90%``, a relative move."""
    if band is None:
        return "—"
    above = side == "Above"
    parts = []
    static = band.maximum if above else band.minimum
    if static is not None:
        parts.append(f"{'above' if above else 'below'} {human.value(slo.unit, static)}")
    rel = band.relative
    factor = None if rel is None else (rel.max_factor if above else rel.min_factor)
    if rel is not None and factor is not None:
        word = "above" if above else "below"
        text = f"{word} {human.factor(factor)} its value {human.duration(rel.offset_ms)} ago"
        if rel.floor is not None:
            text += f" past a floor of {human.value(slo.unit, rel.floor)}"
        parts.append(text)
    return " or ".join(parts) or "—"


def range_case(alert: str, timings: Timings) -> str | None:
    """The alert's own generated case that takes the value past its band (static first, then relative)."""
    cases = [case for case in timings if case.startswith(f"{alert}: ") and not case.endswith("stays silent")]
    return next((case for case in cases if " is pending, " in case), cases[0] if cases else None)


def _after_crossing(alert: AlertSpec | None, timings: Timings) -> str:
    if alert is None:
        return "—"
    case = range_case(alert.name, timings)
    if case is None:
        return "not measured"
    timing = timings[case].get(alert.name)
    minutes = None if timing is None else timing.after_crossing
    return "never" if minutes is None else figure_text(minutes * 60_000)


def _figures(
    slo: tuple[SLO, SLO], alerts: tuple[AlertSpec | None, AlertSpec], timings: tuple[Timings, Timings]
) -> tuple[Figure, ...]:
    (old_slo, new_slo), (old, new) = slo, alerts
    if new.burn is not None:
        period = _period(new_slo)
        before, after = _burn_figures(old_slo, old, period), _burn_figures(new_slo, new, period)
        spends = f"spends {{}} of the {period} budget before it fires"
        templates = ("a full outage fires in {}", spends, "twice the threshold fires in {}")
        return tuple(zip(templates, before, after, strict=True))
    if new.kind == "range":
        return (
            (
                "fires {}",
                _bound(old_slo, old.band if old else None, old.side if old else None),
                _bound(new_slo, new.band, new.side),
            ),
            (
                "first fires {} after the value leaves the band",
                _after_crossing(old, timings[0]),
                _after_crossing(new, timings[1]),
            ),
        )
    return ()


def alert_behaviour(
    specs: tuple[SpecPlan | None, SpecPlan], changes: tuple[AlertChange, ...], timings: tuple[Timings, Timings]
) -> tuple[AlertBehaviour, ...]:
    """The figures of each alert whose rule changed, before -> after (after only for a new alert)."""
    base, head = specs
    old_alerts = {alert_key(alert): alert for alert in base.alerts} if base else {}
    new_alerts = {alert_key(alert): alert for alert in head.alerts}
    found = []
    for change in changes:
        new = new_alerts.get(change.key)
        if new is None or not rule_changed(change):
            continue
        old = None if change.status == "added" else old_alerts.get(change.old_key or change.key)
        figures = _figures((base.slo if base else head.slo, head.slo), (old, new), timings)
        if figures:
            found.append(AlertBehaviour(change.key, figures, added=old is None))
    return tuple(found)
