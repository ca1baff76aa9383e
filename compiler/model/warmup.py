"""How long a step in an SLI's input takes to show fully in its value (its warm-up).

A value computed from ``rate()`` over a range reads partial windows for that range after its
series first appear, so it starts low and climbs to its level. Two consumers need the
figure: the relative-bound checks (an ``offset`` shorter than ``for`` plus the warm-up can
never fire) and the relative rules (a baseline taken from a value still warming up is not a
baseline: compared with it, a new slice's steady value reads as a jump, and the held
baseline would keep that false crossing for hours).
"""

from __future__ import annotations

from compiler import promql
from compiler.model import SLI, GaugeSLI, StateSLI
from compiler.model.windows import RAW_RANGE_MS
from compiler.promql import PromQLError


def change_shows_ms(sli: SLI | None) -> int:
    """The 5m rate of event and quantile SLIs; an expression's ranges (its offsets delay without spreading)."""
    if isinstance(sli, GaugeSLI | StateSLI):
        try:
            return max(0, promql.lookback_ms(sli.expr) - promql.offsets_ms(sli.expr))
        except PromQLError:
            return 0
    return RAW_RANGE_MS if sli is not None else 0
