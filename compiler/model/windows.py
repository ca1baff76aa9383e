"""Time and window math: the one home for durations, burn factors and which series a window reads.

Every duration in the model is integer milliseconds. The facts here are shared by the
checker (which factors and windows are legal), the rule target (which recorded series a
window reads), the runbooks and dashboards (how fast a burn exhausts the budget) and the
generated tests (when a window's first point exists). Keeping them in one module means
the tests' timing cannot drift from the rules' shape.
"""

from __future__ import annotations

import enum
import math
from dataclasses import dataclass
from typing import Literal

SECOND = 1_000
MINUTE = 60 * SECOND
HOUR = 60 * MINUTE
DAY = 24 * HOUR

RAW_RANGE_MS = 5 * MINUTE  # the only range raw series are read over (cost: one pass per evaluation)
BURN_WINDOW_STEP_MS = 5 * MINUTE  # burn windows are multiples of the 5m recorded rate
# The longest for / keep_firing_for: the generated tests simulate every minute of a wait, and an
# alert that waits a day is a report, not an alert.
MAX_WAIT_MS = DAY


@dataclass(frozen=True)
class PolicyStep:
    """A default burn-rate window pair, as a share of the period's budget."""

    severity: Literal["page", "ticket", "info"]
    long_ms: int
    short_ms: int
    budget_share: float
    for_ms: int


# The SRE Workbook / kubernetes-mixin policy; the factor follows from the period:
# share x period / long window (14.4, 6, 3 and 1 for 30 days).
DEFAULT_POLICY: tuple[PolicyStep, ...] = (
    PolicyStep("page", HOUR, 5 * MINUTE, 0.02, 2 * MINUTE),
    PolicyStep("page", 6 * HOUR, 30 * MINUTE, 0.05, 15 * MINUTE),
    PolicyStep("ticket", DAY, 2 * HOUR, 0.10, HOUR),
    PolicyStep("ticket", 3 * DAY, 6 * HOUR, 0.10, 3 * HOUR),
)

# Sloth's built-in catalogue (google-30d/28d): the same pairs and budget shares, without `for`,
# each alert firing the evaluation both windows cross. Sloth reads every window as a rate over
# the whole window, so this policy reads its day windows from the 5m series too (no hourly lag):
# a spec migrated from Sloth pages and tickets within a minute of when Sloth did.
SLOTH_POLICY: tuple[PolicyStep, ...] = tuple(
    PolicyStep(step.severity, step.long_ms, step.short_ms, step.budget_share, 0) for step in DEFAULT_POLICY
)


@dataclass(frozen=True)
class BurnPolicy:
    """A named burn policy a spec selects with ``objective.burn_policy``."""

    steps: tuple[PolicyStep, ...]
    hourly_days: bool  # windows of a day or more read hourly points (cheap; up to an hour late)
    summary: str


BURN_POLICIES: dict[str, BurnPolicy] = {
    "default": BurnPolicy(DEFAULT_POLICY, True, "the SRE Workbook pairs with for 2m/15m/1h/3h"),
    "sloth": BurnPolicy(
        SLOTH_POLICY,
        False,
        "Sloth's pairs (5m/1h 14.4x, 30m/6h 6x, 2h/1d 3x, 6h/3d 1x for 30d), no for, day windows from the 5m series",
    ),
}


def burn_factor(budget_share: float, period_ms: int, long_ms: int) -> float:
    """How many times faster than even the budget burns when ``budget_share`` goes in ``long_ms``."""
    return budget_share * period_ms / long_ms


def exhaustion_ms(period_ms: int, factor: float) -> int:
    """How long the whole period's budget lasts at ``factor``, floored to the minute (for display)."""
    return int(period_ms / factor) // MINUTE * MINUTE


def budget_duration_ms(budget: float, period_ms: int) -> int:
    """The period's error budget as time fully down, rounded to the second."""
    return round(budget * period_ms / SECOND) * SECOND


class WindowSource(enum.Enum):
    """Which recorded series a window of a given length reads (see ``compiler.model.series``)."""

    RATE_5M = "5m rate"  # the 5m recorded rate, read directly
    RATE_1H = "1h average"  # the 1h recorded average, read directly
    AVG_5M = "average of 5m rates"  # windows under a day (or not whole hours) average the 5m series
    HOURLY = "hourly points"  # windows of a day or more average the 1h series at 1h steps

    @classmethod
    def of(cls, window_ms: int, hourly_days: bool = True) -> WindowSource:
        """``hourly_days`` False (the Sloth policy): every longer window averages the 5m series."""
        if window_ms == RAW_RANGE_MS:
            return cls.RATE_5M
        if window_ms == HOUR:
            return cls.RATE_1H
        if window_ms < DAY or window_ms % HOUR or not hourly_days:
            return cls.AVG_5M
        return cls.HOURLY


def first_point_minute(window_ms: int, first_minute: int, hourly_days: bool = True) -> int:
    """The first minute a window's ratio exists when its input starts at ``first_minute``.

    Hourly subqueries align their points to the full hour, so a window read at 1h steps
    has its first point at the first full hour after the input starts.
    """
    if WindowSource.of(window_ms, hourly_days) is WindowSource.HOURLY:
        return first_hourly_point_minute(first_minute)
    return first_minute


def first_hourly_point_minute(first_minute: int) -> int:
    """The first minute a subquery at 1h steps (``[w:1h]``) has a point: the first full hour of its input."""
    return math.ceil(first_minute / 60) * 60


def minutes(ms: int) -> int:
    """Whole minutes, rounded up: a ``for`` of 30s still needs the next one-minute evaluation."""
    return math.ceil(ms / MINUTE)
