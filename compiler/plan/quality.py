"""Alert-quality figures: how fast each alert detects, what it costs before it fires, how fast it resets.

The questions people ask about an alert ("how long after a full outage does this page?",
"how much budget is gone before it does?") follow from its windows, factor and ``for``
alone, so they are computed here once, from the window math in ``compiler.model.windows``,
for the runbooks' threshold tables and the catalog. The figures are the SRE workbook's
(windows filled evenly from a step); the rules fire within one evaluation interval of
them, which ``tests/engines/test_alert_quality.py`` checks against promtool on the generated
full-outage case.
"""

from __future__ import annotations

from dataclasses import dataclass

from compiler.model import SLO
from compiler.model.windows import burn_detection_ms, burn_reset_ms
from compiler.plan import AlertSpec
from compiler.text import human


@dataclass(frozen=True)
class Quality:
    """Detection and reset of one alert; durations in ms, None when it never fires."""

    full_outage_ms: int | None  # from a step to 100% errors (a range: from the value leaving the band) to firing
    twice_threshold_ms: int | None  # from a step to twice the alert's threshold to firing
    budget_spent_full: float | None  # share of the period's budget a full outage spends before it fires
    resolve_ms: int  # from the end of the burn (or the value's return) to resolved
    burn_rates: tuple[tuple[float, int], ...] = ()  # (burn rate, detection ms) from the threshold to a full outage


def _curve(threshold: float, budget: float, alert: AlertSpec, long_ms: int) -> tuple[tuple[float, int], ...]:
    """Detection time against burn rate, from just over the threshold to a full outage (for charts)."""
    top = 1.0 / budget
    low = threshold / budget
    points = []
    for step in range(13):
        rate = low * (top / low) ** (step / 12) if top > low else low
        detected = burn_detection_ms(threshold, long_ms, min(1.0, rate * budget * 1.000001))
        if detected is not None:
            points.append((rate, detected + alert.for_ms))
    return tuple(points)


def burn_quality(slo: SLO, alert: AlertSpec) -> Quality | None:
    """The figures of a burn alert (None for other kinds)."""
    if alert.burn is None or slo.objective is None:
        return None
    burn, budget = alert.burn, slo.objective.budget
    threshold = burn.factor * budget
    full = burn_detection_ms(threshold, burn.long_ms, 1.0)
    twice = burn_detection_ms(threshold, burn.long_ms, min(1.0, 2 * threshold))
    fired_full = None if full is None else full + burn.for_ms
    return Quality(
        full_outage_ms=fired_full,
        twice_threshold_ms=None if twice is None or 2 * threshold > 1 else twice + burn.for_ms,
        budget_spent_full=None if fired_full is None else fired_full / (budget * slo.objective.period_ms),
        resolve_ms=burn_reset_ms(threshold, burn.short_ms, 1.0) + burn.keep_firing_for_ms,
        burn_rates=_curve(threshold, budget, alert, burn.long_ms),
    )


def range_quality(alert: AlertSpec) -> Quality | None:
    """A band alert fires ``for`` after its value leaves the band and resolves ``keep_firing_for`` after it returns."""
    if alert.kind != "range":
        return None
    return Quality(alert.for_ms, alert.for_ms, None, alert.keep_firing_for_ms)


def quality(slo: SLO, alert: AlertSpec) -> Quality | None:
    """The figures of any alert that has them (burn pairs and bands; not no-data)."""
    return burn_quality(slo, alert) or range_quality(alert)


def figure_text(value: int | None) -> str:
    """A figure to the second, rounded up (10m38.4s is shown as 10m 39s); None (it never fires) is "never"."""
    if value is None:
        return "never"
    seconds = -(-value // 1000)
    return human.duration(seconds * 1000)
