"""Names of the series every SLO records, and the window queries built on them.

Shared by every target that reads recorded series (rules, dashboards, tests, runbooks), so
a rename happens in one place. Recorded series carry only ``slo`` and the slice labels:
team, family and spec version live on ``slo_info`` alone, so editing them never forks a
series' identity.

Windows are traffic-weighted: the error ratio over a window is the bad events in it over
all its events (sum of bad over sum of total), never a mean of per-5m ratios. Each window is
summed from recorded blocks that do not overlap (``compiler.model.windows.blocks``), so it
counts every event once, like the workbook's ``increase[w]``. A block from before the series
existed counts as no events. Zero traffic gives 0 bad and 0 total, which cannot poison a
window; only a window with no traffic at all divides 0 by 0, and NaN compares false, so it
never alerts.
"""

from __future__ import annotations

from compiler.model import ASSUMPTION_MEMORY_MS, SLO, BurnAlert, Condition, Range, StateSLI
from compiler.model import labels as lbl
from compiler.model.naming import Level
from compiler.model.windows import HOUR, RAW_RANGE_MS, SECOND, Block, blocks, tier_blocks, tiers_for
from compiler.promql import format_duration, quote
from compiler.text.numbers import clean_number, go_float

TOTAL_5M = "slo:sli_total:rate5m"
BAD_5M = "slo:sli_bad:rate5m"
TOTAL_1H = "slo:sli_total:rate1h"
BAD_1H = "slo:sli_bad:rate1h"
PERIOD_EVENTS = "slo:sli_total:period_events"
BUDGET_REMAINING = "slo:error_budget_remaining:ratio"
VALUE = "slo:sli_value:gauge"
# A ratio whose bad series are among its total's: the total's 5m rates by slice, the labels its bad
# selectors match on and the total selector they come from, so the 5m total and bad read them once.
PARTS_5M = "slo:sli_parts:rate5m"
INFO = "slo_info"
# A fleet's per-unit series (``SLO.fleet``): each unit's value, then per slice its units and those out of range.
UNIT_VALUE = "slo:unit_value:gauge"
FLEET_UNITS = "slo:fleet_units:count"
FLEET_UNITS_OUT = "slo:fleet_units_out:count"

# The conditions a spec's pages need (``SLO.assumes``, ``SLO.confirmed_by``): per slice and condition,
# how many series hold it now, and for an assumption whether it held within the last day.
CONDITION_HOLDS = "slo:condition:holds"
ASSUMPTION_HELD = "slo:assumption:held_1d"

# The baseline a relative bound compares with: the value ``offset`` ago, held while the bound is crossed.
BASELINE: dict[Level, str] = {"Normal": "slo:sli_baseline_normal:gauge", "Critical": "slo:sli_baseline_critical:gauge"}


def recorded(name: str, slo: SLO | str) -> str:
    """A selector of one SLO's recorded series."""
    slo_name = slo if isinstance(slo, str) else slo.name
    return f"{name}{{slo={quote(slo_name)}}}"


def rate_names(tier_ms: int) -> tuple[str, str]:
    """(bad, total) recorded rate names of a tier: ``slo:sli_bad:rate30m``, ``slo:sli_total:rate30m``."""
    if tier_ms == RAW_RANGE_MS:
        return BAD_5M, TOTAL_5M
    if tier_ms == HOUR:
        return BAD_1H, TOTAL_1H
    window = format_duration(tier_ms)
    return f"slo:sli_bad:rate{window}", f"slo:sli_total:rate{window}"


def _offset(offset_ms: int) -> str:
    return f" offset {format_duration(offset_ms)}" if offset_ms else ""


def _block(slo: SLO, bad: bool, block: Block, offset_ms: int = 0) -> str:
    """One block's mean rate, ``offset_ms`` further back; an older block with no sample counts as 0.

    A state SLI records a unit count per evaluation, so its 5m block is the mean of the
    samples in those 5 minutes (``[4m59s]`` holds exactly five at 1m, on Prometheus 2 and 3).
    """
    name = rate_names(block.length_ms)[0 if bad else 1]
    offset = _offset(block.offset_ms + offset_ms)
    if block.length_ms == RAW_RANGE_MS and isinstance(slo.sli, StateSLI):
        term = f"avg_over_time({recorded(name, slo)}[{format_duration(RAW_RANGE_MS - SECOND)}]{offset})"
    else:
        term = f"{recorded(name, slo)}{offset}"
    if not block.offset_ms:
        return term
    return f"({term} or 0 * {recorded(rate_names(RAW_RANGE_MS)[0 if bad else 1], slo)})"


def _block_sum(slo: SLO, bad: bool, parts: tuple[Block, ...], offset_ms: int = 0) -> str:
    """Blocks summed, each weighted by its length in the shortest one's."""
    unit = min(block.length_ms for block in parts)
    terms = []
    for block in parts:
        weight = block.length_ms // unit
        term = _block(slo, bad, block, offset_ms)
        terms.append(f"{weight} * {term}" if weight > 1 else term)
    return "\n+ ".join(terms)


def window_events(slo: SLO, window_ms: int, bad: bool = True) -> str:
    """The bad (or all) events in the window: its blocks' rates times their length in seconds."""
    parts = blocks(window_ms)
    unit = min(block.length_ms for block in parts)
    summed = _block_sum(slo, bad, parts)
    if "\n" not in summed:
        return f"{unit // SECOND} * {summed}"
    return f"{unit // SECOND} * (\n{_indent(summed)}\n)"


def window_ratio(slo: SLO, window_ms: int, offset_ms: int = 0) -> str:
    """The error ratio over ``window_ms``, read only from the SLO's recorded series.

    A window of a tier's length (5m, 30m, 1h, 6h, 1d) reads that tier's recorded rate;
    any other sums its non-overlapping blocks (``compiler.model.windows.blocks``): 2h is
    two 1h rates an hour apart, 3d three 1d rates. Each event counts once, and the window
    is whole at every evaluation.
    """
    parts = blocks(window_ms)
    bad, total = _block_sum(slo, True, parts, offset_ms), _block_sum(slo, False, parts, offset_ms)
    if "\n" not in bad:
        return f"{bad} / {total}"
    return f"(\n{_indent(bad)}\n)\n/\n(\n{_indent(total)}\n)"


def _indent(text: str) -> str:
    return "\n".join(f"  {line}" for line in text.splitlines())


def tier_rate(slo: SLO, tier_ms: int, bad: bool) -> str:
    """A tier's recorded rate: the mean of the tier below's blocks that tile it (1h: two 30m rates)."""
    parts = tier_blocks(tier_ms)
    return f"(\n{_indent(_block_sum(slo, bad, parts))}\n) / {len(parts)}"


def recorded_tiers(slo: SLO) -> tuple[int, ...]:
    """The tiers above 5m an SLO records: up to the longest its burn windows read, and at least 1h."""
    if slo.objective is None:
        return ()
    return tiers_for([w for alert in slo.objective.burn_alerts for w in (alert.long_ms, alert.short_ms)])


def period_events(slo: SLO, period_ms: int) -> str:
    """All events of the period so far: the 1h rates at each full hour, times an hour.

    Before the first full hour, the last hour's events (all there are).
    """
    hourly = recorded(TOTAL_1H, slo)
    return f"3600 * sum_over_time({hourly}[{format_duration(period_ms)}:1h])\nor\n3600 * {hourly}"


def traffic_guard(slo: SLO, burn: BurnAlert) -> str | None:
    """The condition that the long window's bad events are a share of the period's budget, in events.

    ``guard_share x (1 - target) x events over the period``: with traffic as steady as
    over the period it is the ratio condition again; after a drop to a trickle it holds
    the pair back, because its bad events are a negligible share of the budget. None when
    the spec turns the guard off.
    """
    objective = slo.objective
    assert objective is not None
    if not objective.traffic_guard:
        return None
    share = clean_number(objective.guard_share(burn) * objective.budget)
    return f"{window_events(slo, burn.long_ms)}\n> {go_float(share)} * {recorded(PERIOD_EVENTS, slo)}"


def value(slo: SLO, offset_ms: int = 0) -> str:
    """The signal's current value: the 5m error ratio for event SLIs, else the recorded gauge."""
    offset = _offset(offset_ms)
    if slo.counts_events:  # a state SLI's value is its share now, not its 5m block's mean
        return f"({recorded(BAD_5M, slo)}{offset} / {recorded(TOTAL_5M, slo)}{offset})"
    return f"{recorded(VALUE, slo)}{offset}"


def bad_events_5m(slo: SLO) -> str:
    """The bad events of the last 5 minutes, from the recorded 5m bad rate (a range's traffic floor)."""
    return f"{recorded(BAD_5M, slo)} * {go_float(RAW_RANGE_MS / SECOND)}"


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
        return [VALUE, *baselines, *fleet_slice_names(slo), *condition_names(slo)]
    names = [TOTAL_5M, BAD_5M]
    if slo.objective is not None:
        for tier in recorded_tiers(slo):
            bad, total = rate_names(tier)
            names += [total, bad]
        if slo.objective.traffic_guard:
            names.append(PERIOD_EVENTS)
        names.append(BUDGET_REMAINING)
    return [*names, *baselines, *fleet_slice_names(slo), *condition_names(slo)]


def condition_selector(name: str, slo: SLO, condition: Condition) -> str:
    """One condition's recorded series (``CONDITION_HOLDS`` or ``ASSUMPTION_HELD``) of one spec."""
    return f"{name}{{slo={quote(slo.name)}, {lbl.CONDITION}={quote(condition.name)}}}"


def assumption_held(slo: SLO, condition: Condition) -> str:
    """Whether an assumption held within ``ASSUMPTION_MEMORY_MS``: its recorded count, remembered."""
    memory = format_duration(ASSUMPTION_MEMORY_MS)
    return f"max_over_time({condition_selector(CONDITION_HOLDS, slo, condition)}[{memory}])"


def gate_terms(slo: SLO) -> list[str]:
    """What a page of this spec needs besides its own condition: every assumption held, and a confirmation.

    Each term is a selector (or a union of them) keyed by the slice labels, so a page is
    gated per slice; an empty list is no gate.
    """
    terms = [condition_selector(ASSUMPTION_HELD, slo, condition) for condition in slo.assumes]
    confirmations = [condition_selector(CONDITION_HOLDS, slo, condition) for condition in slo.confirmed_by]
    if confirmations:
        terms.append(confirmations[0] if len(confirmations) == 1 else "(" + " or ".join(confirmations) + ")")
    return terms


def gated(slo: SLO, expr: str, per_slice: bool = True) -> str:
    """A page's expression with the spec's gate: per slice (``on`` the slice labels), or for an
    alert with no slice labels (``absent(...)``) wherever the assumptions held. A confirmation
    does not gate that one: with no series at all there is nothing for a second signal to confirm."""
    terms = gate_terms(slo)
    if not terms:
        return expr
    if per_slice:
        on = f"on ({', '.join(slo.slice.by)})"
        return f"(\n{_indent(expr)}\n)" + "".join(f"\nand {on} {term}" for term in terms)
    held = [condition_selector(ASSUMPTION_HELD, slo, condition) for condition in slo.assumes]
    if not held:
        return expr
    return f"(\n{_indent(expr)}\n)" + "".join(f"\nand on () count({term}) > 0" for term in held)


def condition_names(slo: SLO) -> list[str]:
    """The series the conditions record per slice: one count per condition, one memory per assumption."""
    return [CONDITION_HOLDS] * len(slo.page_conditions) + [ASSUMPTION_HELD] * len(slo.assumes)


def fleet_slice_names(slo: SLO) -> list[str]:
    """The per-slice counts a fleet records: its units, and those beyond the critical range."""
    return [FLEET_UNITS, FLEET_UNITS_OUT] if slo.fleet is not None else []


def unit_names(slo: SLO) -> list[str]:
    """The series a fleet records per unit (one per unit of every slice)."""
    return [UNIT_VALUE] if slo.fleet is not None else []
