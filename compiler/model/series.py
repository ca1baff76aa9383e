"""Names of the series every SLO records, and the window queries built on them.

Shared by every target that reads recorded series (rules, dashboards, tests, runbooks), so
a rename happens in one place. Recorded series carry only ``slo`` and the slice labels:
team, family and spec version live on ``slo_info`` alone, so editing them never forks a
series' identity.

Windows are traffic-weighted: the error ratio over a window is the mean bad rate over the
mean total rate (sum of bad over sum of total), never a mean of per-5m ratios. Zero traffic
gives 0 bad and 0 total, which cannot poison a window; only a window with no traffic at all
divides 0 by 0, and NaN compares false, so it never alerts.
"""

from __future__ import annotations

from compiler.model import SLO
from compiler.model.windows import RAW_RANGE_MS, WindowSource
from compiler.promql import format_duration, quote

TOTAL_5M = "slo:sli_total:rate5m"
BAD_5M = "slo:sli_bad:rate5m"
TOTAL_1H = "slo:sli_total:rate1h"
BAD_1H = "slo:sli_bad:rate1h"
BUDGET_REMAINING = "slo:error_budget_remaining:ratio"
VALUE = "slo:sli_value:gauge"
INFO = "slo_info"

def recorded(name: str, slo: SLO | str) -> str:
    """A selector of one SLO's recorded series."""
    slo_name = slo if isinstance(slo, str) else slo.name
    return f"{name}{{slo={quote(slo_name)}}}"


def window_ratio(slo: SLO, window_ms: int, offset_ms: int = 0, hourly_days: bool = True) -> str:
    """The error ratio over ``window_ms``, read only from the SLO's recorded series.

    5m and 1h read a recorded series directly; windows under a day average the 5m series
    (at most 288 samples per slice); windows of a day or more average the hourly series at
    1h steps (720 points for 30 days), so they lag by up to an hour, unless ``hourly_days``
    is False (the Sloth policy), when they average the 5m series like shorter windows.
    """
    offset = f" offset {format_duration(offset_ms)}" if offset_ms else ""
    source = WindowSource.of(window_ms, hourly_days)
    if source is WindowSource.RATE_5M:
        return f"{recorded(BAD_5M, slo)}{offset} / {recorded(TOTAL_5M, slo)}{offset}"
    if source is WindowSource.RATE_1H:
        return f"{recorded(BAD_1H, slo)}{offset} / {recorded(TOTAL_1H, slo)}{offset}"
    window = format_duration(window_ms)
    if source is WindowSource.AVG_5M:
        return (
            f"avg_over_time({recorded(BAD_5M, slo)}[{window}]{offset})"
            f" / avg_over_time({recorded(TOTAL_5M, slo)}[{window}]{offset})"
        )
    return (
        f"avg_over_time({recorded(BAD_1H, slo)}[{window}:1h]{offset})"
        f" / avg_over_time({recorded(TOTAL_1H, slo)}[{window}:1h]{offset})"
    )


def value(slo: SLO, offset_ms: int = 0) -> str:
    """The signal's current value: the 5m error ratio for event SLIs, else the recorded gauge."""
    if slo.counts_events:
        return f"({window_ratio(slo, RAW_RANGE_MS, offset_ms)})"
    offset = f" offset {format_duration(offset_ms)}" if offset_ms else ""
    return f"{recorded(VALUE, slo)}{offset}"


def presence_series(slo: SLO) -> str:
    """The recorded series whose absence means the SLI's source data is gone."""
    return TOTAL_5M if slo.counts_events else VALUE


def recorded_names(slo: SLO) -> list[str]:
    """The series an SLO records per slice (``slo_info`` aside), in rule order."""
    if not slo.counts_events:
        return [VALUE]
    names = [TOTAL_5M, BAD_5M]
    if slo.objective is not None:
        names += [TOTAL_1H, BAD_1H, BUDGET_REMAINING]
    return names
