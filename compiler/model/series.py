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

from compiler.model import SLO, Range
from compiler.model.naming import Level
from compiler.model.windows import RAW_RANGE_MS, WindowSource
from compiler.promql import format_duration, quote

TOTAL_5M = "slo:sli_total:rate5m"
BAD_5M = "slo:sli_bad:rate5m"
TOTAL_1H = "slo:sli_total:rate1h"
BAD_1H = "slo:sli_bad:rate1h"
BUDGET_REMAINING = "slo:error_budget_remaining:ratio"
VALUE = "slo:sli_value:gauge"
INFO = "slo_info"
# A fleet's per-unit series (``SLO.fleet``): each unit's value, then per slice its units and those out of range.
UNIT_VALUE = "slo:unit_value:gauge"
FLEET_UNITS = "slo:fleet_units:count"
FLEET_UNITS_OUT = "slo:fleet_units_out:count"

# The baseline a relative bound compares with: the value ``offset`` ago, held while the bound is crossed.
BASELINE: dict[Level, str] = {"Normal": "slo:sli_baseline_normal:gauge", "Critical": "slo:sli_baseline_critical:gauge"}

def recorded(name: str, slo: SLO | str) -> str:
    """A selector of one SLO's recorded series."""
    slo_name = slo if isinstance(slo, str) else slo.name
    return f"{name}{{slo={quote(slo_name)}}}"


def window_ratio(slo: SLO, window_ms: int, offset_ms: int = 0) -> str:
    """The error ratio over ``window_ms``, read only from the SLO's recorded series.

    5m and 1h read a recorded series directly; windows under a day average the 5m series
    (at most 288 samples per slice); windows of a day or more average the hourly series at
    1h steps (720 points for 30 days), so they lag by up to an hour.
    """
    offset = f" offset {format_duration(offset_ms)}" if offset_ms else ""
    source = WindowSource.of(window_ms)
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


def baseline(slo: SLO, level: Level, offset_ms: int = 0) -> str:
    """A band's recorded baseline (what its relative bound compares with), ``offset_ms`` ago."""
    offset = f" offset {format_duration(offset_ms)}" if offset_ms else ""
    return f"{recorded(BASELINE[level], slo)}{offset}"


def band_level(slo: SLO, band: Range) -> Level:
    """Which of the spec's bands ``band`` is."""
    return "Critical" if band is slo.critical_range else "Normal"


def baseline_levels(slo: SLO) -> list[Level]:
    """The bands (Normal, Critical) with a relative bound, each recording its own baseline."""
    bands: tuple[tuple[Level, Range | None], ...] = (("Normal", slo.normal_range), ("Critical", slo.critical_range))
    return [level for level, band in bands if band is not None and band.relative is not None]


def recorded_names(slo: SLO) -> list[str]:
    """The series an SLO records per slice (``slo_info`` and per-unit series aside), in rule order."""
    baselines = [BASELINE[level] for level in baseline_levels(slo)]
    if not slo.counts_events:
        return [VALUE, *baselines, *fleet_slice_names(slo)]
    names = [TOTAL_5M, BAD_5M]
    if slo.objective is not None:
        names += [TOTAL_1H, BAD_1H, BUDGET_REMAINING]
    return [*names, *baselines, *fleet_slice_names(slo)]


def fleet_slice_names(slo: SLO) -> list[str]:
    """The per-slice counts a fleet records: its units, and those beyond the critical range."""
    return [FLEET_UNITS, FLEET_UNITS_OUT] if slo.fleet is not None else []


def unit_names(slo: SLO) -> list[str]:
    """The series a fleet records per unit (one per unit of every slice)."""
    return [UNIT_VALUE] if slo.fleet is not None else []
