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
from collections.abc import Sequence
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


# The traffic guard's default: a pair's long window must hold this share of the bad events its threshold
# would spend of the period's budget (1 = the pair's own budget share; 0 turns the guard off).
DEFAULT_TRAFFIC_GUARD = 1.0

# The SRE Workbook / kubernetes-mixin policy; the factor follows from the period:
# share x period / long window (14.4, 6, 3 and 1 for 30 days). Each `for` is about half the
# short window (kubernetes-mixin, Pyrra). For the tickets that is what keeps a blip from
# opening one on a young slice: until a slice has a long window of history, its long window
# holds only the hours it has, and a 2-minute 5% blip in a new cluster's first hour holds the
# 3d/6h pair above 1x for over an hour (the library's coredns-rolling-restart scenario
# tickets with a 15m `for`, not with 3h).
DEFAULT_POLICY: tuple[PolicyStep, ...] = (
    PolicyStep("page", HOUR, 5 * MINUTE, 0.02, 2 * MINUTE),
    PolicyStep("page", 6 * HOUR, 30 * MINUTE, 0.05, 15 * MINUTE),
    PolicyStep("ticket", DAY, 2 * HOUR, 0.10, HOUR),
    PolicyStep("ticket", 3 * DAY, 6 * HOUR, 0.10, 3 * HOUR),
)

# Sloth's built-in catalogue (google-30d/28d): the same pairs and budget shares, without `for`,
# each alert firing the evaluation both windows cross. Every window here is whole at every
# evaluation (a sum of recorded blocks), as Sloth's rate over the whole window is, so a spec
# migrated from Sloth pages and tickets within a minute of when Sloth did.
SLOTH_POLICY: tuple[PolicyStep, ...] = tuple(
    PolicyStep(step.severity, step.long_ms, step.short_ms, step.budget_share, 0) for step in DEFAULT_POLICY
)


@dataclass(frozen=True)
class BurnPolicy:
    """A named burn policy a spec selects with ``objective.burn_policy``."""

    steps: tuple[PolicyStep, ...]
    summary: str
    # The lowest factor a pair gets. The default policy's shares give 1x on the 3d pair only for
    # 30 days; on 28d it would be 0.933x (the budget gone in 30d, after the period: a ticket for
    # a burn that never breaches the SLO) and on 7d 0.7x and 0.23x. At 1x the budget is gone
    # exactly at the period's end. Sloth's pairs stay as Sloth derives them (a migrated spec
    # alerts when it did).
    min_factor: float = 0.0


BURN_POLICIES: dict[str, BurnPolicy] = {
    "default": BurnPolicy(DEFAULT_POLICY, "the SRE Workbook pairs with for 2m/15m/1h/3h", min_factor=1.0),
    "sloth": BurnPolicy(
        SLOTH_POLICY,
        "Sloth's pairs (5m/1h 14.4x, 30m/6h 6x, 2h/1d 3x, 6h/3d 1x for 30d), no for",
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


# The recorded rates windows are summed from: each is the mean rate over a block of that length
# ending at its sample, built from a few blocks of the tier below (30m from six 5m rates, 1h from
# two 30m, 6h from six 1h, 1d from four 6h), so no recording rule reads more than six series per side.
TIERS_MS: tuple[int, ...] = (RAW_RANGE_MS, 30 * MINUTE, HOUR, 6 * HOUR, DAY)


class WindowSource(enum.Enum):
    """Which recorded series a window of a given length reads (see ``compiler.model.series``).

    Every window is the ratio of the bad to the total events in it, summed from recorded
    rates whose blocks do not overlap: the 5m rate covers the 5 minutes before its sample,
    the 6h rate the 6 hours before its sample. A 2h window is two 1h rates an hour apart
    (``offset``), so it counts each event once, as the workbook's ``increase[2h]`` does, and
    is whole at every evaluation: no window lags a step by the 5m rate's ramp or by an
    hourly grid.
    """

    RECORDED = "one recorded rate"  # 5m, 30m, 1h, 6h, 1d: the tier's rate, read directly
    BLOCKS = "sum of blocks"  # any other window: its days, 6h, hours, 30m and 5m blocks, each read once

    @classmethod
    def of(cls, window_ms: int) -> WindowSource:
        return cls.RECORDED if window_ms in TIERS_MS else cls.BLOCKS


@dataclass(frozen=True)
class Block:
    """One recorded rate read for a window: its length (a tier) and how long ago it ends."""

    length_ms: int
    offset_ms: int


def blocks(window_ms: int) -> tuple[Block, ...]:
    """A window as the fewest non-overlapping recorded blocks, longest tier first.

    Each tier divides the next, so the blocks tile the window exactly (windows are
    multiples of 5m); the newest block ends now.
    """
    found: list[Block] = []
    covered = 0
    for length in reversed(TIERS_MS):
        while window_ms - covered >= length:
            found.append(Block(length, covered))
            covered += length
    return tuple(found)


def tier_blocks(tier_ms: int) -> tuple[Block, ...]:
    """The blocks of the tier below that one tier's recorded rate sums (1h: two 30m rates)."""
    below = TIERS_MS[TIERS_MS.index(tier_ms) - 1]
    return tuple(Block(below, k * below) for k in range(tier_ms // below))


def tiers_for(windows_ms: Sequence[int]) -> tuple[int, ...]:
    """The tiers above 5m to record for these windows: up to the longest one they read, and at least 1h."""
    longest = max([HOUR, *(block.length_ms for window in windows_ms for block in blocks(window))])
    return tuple(tier for tier in TIERS_MS[1:] if tier <= longest)


def first_point_minute(window_ms: int, first_minute: int) -> int:
    """The first minute a window's ratio exists when its input starts at ``first_minute``.

    Blocks before the input started count as no events, so every window has its first
    point with the 5m rate's, whatever its length.
    """
    del window_ms
    return first_minute


def first_hourly_point_minute(first_minute: int) -> int:
    """The first minute a subquery at 1h steps (``[w:1h]``) has a point: the first full hour of its input."""
    return math.ceil(first_minute / 60) * 60


def minutes(ms: int) -> int:
    """Whole minutes, rounded up: a ``for`` of 30s still needs the next one-minute evaluation."""
    return math.ceil(ms / MINUTE)


# Alert-quality figures (the SRE workbook's detection and reset times). A pair fires when both
# windows exceed the threshold; after a step from no errors to ``error_ratio`` a window of
# length w holds ``error_ratio x t / w`` at time t < w, so the long window, the slower one,
# crosses at ``long x threshold / error_ratio``. After a burn that lasted the long window
# stops, the short window's ratio falls as its failing minutes age out and drops to the
# threshold after ``short x (1 - threshold / error_ratio)``: the pair resolves then.


def burn_detection_ms(threshold: float, long_ms: int, error_ratio: float) -> int | None:
    """Time from a step to ``error_ratio`` until both windows exceed ``threshold`` (None: never)."""
    if error_ratio <= threshold or threshold <= 0:
        return None if error_ratio <= threshold else 0
    return math.ceil(long_ms * threshold / error_ratio - 1e-6)  # ms; the epsilon absorbs binary noise


def burn_reset_ms(threshold: float, short_ms: int, error_ratio: float) -> int:
    """Time from the end of a long burn at ``error_ratio`` until the short window is back at ``threshold``."""
    return math.ceil(short_ms * max(0.0, 1.0 - threshold / error_ratio) - 1e-6)
