"""The "How fast it fires" table of a runbook: the plan's alert-quality figures, one row per alert rule."""

from __future__ import annotations

from dataclasses import dataclass

from compiler.plan import SpecPlan
from compiler.plan.quality import figure_text, quality
from compiler.promql import format_duration


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
        windows = (
            f"{format_duration(alert.burn.long_ms)} / {format_duration(alert.burn.short_ms)}" if alert.burn else "—"
        )
        spent = "—" if figures.budget_spent_full is None else f"{figures.budget_spent_full * 100:.3g}%"
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
