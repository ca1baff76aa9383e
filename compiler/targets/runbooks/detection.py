"""The "How fast it fires" table of a runbook: the plan's alert-quality figures, one row per alert rule."""

from __future__ import annotations

from dataclasses import dataclass

from compiler.plan import SpecPlan
from compiler.plan.quality import quality
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


def _duration(value: int | None) -> str:
    """To the second, rounded up; None (the alert cannot fire on it) is "never"."""
    if value is None:
        return "never"
    seconds = -(-value // 1000)
    return format_duration(seconds * 1000) if seconds else "0s"


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
                full_outage=_duration(figures.full_outage_ms),
                twice=_duration(figures.twice_threshold_ms),
                budget_spent=spent,
                resolve=_duration(figures.resolve_ms),
            )
        )
    return rows
