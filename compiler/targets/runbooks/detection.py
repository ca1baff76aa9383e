"""The "How fast it fires" table of a runbook: the plan's alert-quality figures, one row per alert rule."""

from __future__ import annotations

from dataclasses import dataclass

from compiler.plan import SpecPlan
from compiler.plan.quality import figure_text, quality
from compiler.text import human


@dataclass(frozen=True)
class DetectionRow:
    alert: str
    severity: str
    windows: str
    full_outage: str
    twice: str
    budget_spent: str
    resolve: str


def detection_rows(spec: SpecPlan) -> list[DetectionRow]:
    rows = []
    for alert in spec.alerts:
        figures = quality(spec.slo, alert)
        if figures is None:
            continue
        windows = f"{human.duration(alert.burn.long_ms)} / {human.duration(alert.burn.short_ms)}" if alert.burn else "—"
        spent = "—" if figures.budget_spent_full is None else human.share(figures.budget_spent_full)
        rows.append(
            DetectionRow(
                alert=alert.name,
                severity=alert.severity_text,
                windows=windows,
                full_outage=figure_text(figures.full_outage_ms),
                twice=figure_text(figures.twice_threshold_ms),
                budget_spent=spent,
                resolve=figure_text(figures.resolve_ms),
            )
        )
    return rows
