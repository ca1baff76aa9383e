"""The PromQL a runbook hands the on-call engineer: paste-ready queries and the investigation steps.

Every query reads the spec's recorded series (``compiler.model.series``) or, to find new or
vanished raw series, the SLI's own selectors; none needs the rule target.
"""

from __future__ import annotations

from dataclasses import dataclass, field

from compiler.model import (
    SLO,
    GaugeSLI,
    LatencySLI,
    QuantileSLI,
    Range,
    RatioSLI,
    Selector,
    StateSLI,
    queries,
    series,
)
from compiler.model.naming import band_sides
from compiler.model.windows import DAY, HOUR
from compiler.promql import PromQLError, analyse, format_duration, render_selector
from compiler.text import human
from compiler.text.markdown import code
from compiler.text.numbers import clean_number, go_float

BEFORE_MS = HOUR  # default `offset` of the before/after comparisons; the reader adjusts it
RANGE_LOOKBACK_MS = DAY  # how far back the earliest-bad query looks for range signals
TOP = 5


# -- numbers and bounds -----------------------------------------------------------------


def format_value(slo: SLO, number: float) -> str:
    """A value in the spec's unit, as the alert annotations write it."""
    return human.value(slo.unit, number)


def bounds(slo: SLO, band: Range, direction: str) -> list[str]:
    """What leaving ``band`` in ``direction`` means, in words (as the alert description says)."""
    found = []
    static = band.maximum if direction == "Above" else band.minimum
    if static is not None:
        text = f"{'above max' if direction == 'Above' else 'below min'} {format_value(slo, static)}"
        if band.min_bad_events is not None:
            text += f", with at least {human.count(band.min_bad_events)} bad events in 5 minutes"
        found.append(text)
    rel = band.relative
    factor = None if rel is None else (rel.max_factor if direction == "Above" else rel.min_factor)
    if rel is not None and factor is not None:
        word = "at least" if direction == "Above" else "at most"
        text = (
            f"{word} {human.factor(factor)} its baseline (its value {human.duration(rel.offset_ms)} earlier, held for "
            f"up to {human.duration(rel.hold_ms)} while the alert fires)"
        )
        if rel.floor:
            floor = format_value(slo, rel.floor)
            text += f" once at {floor} or more" if direction == "Above" else f" when that was {floor} or more"
        found.append(text)
    return found


# -- PromQL -----------------------------------------------------------------------------


@dataclass(frozen=True)
class Query:
    title: str  # Markdown written by this module (never spec text)
    expr: str


def _on(slo: SLO) -> str:
    return f"on ({', '.join(('slo', *slo.slice.by))})"


def _band_condition(slo: SLO, band: Range, offset_ms: int = 0) -> str:
    """The series of the slices outside ``band``, as the range alerts test it."""
    now = series.value(slo, offset_ms)
    parts = []
    rel = band.relative
    for direction in band_sides(band):
        above = direction == "Above"
        op = ">" if above else "<"
        static = band.maximum if above else band.minimum
        if static is not None:
            parts.append(f"{now} {op} {go_float(static)}")
        factor = None if rel is None else (rel.max_factor if above else rel.min_factor)
        if rel is not None and factor is not None:  # relative bounds hold at equality, against the held baseline
            past = series.baseline(slo, series.band_level(slo, band), offset_ms)
            condition = f"{now} {op}= {go_float(factor)} * {past}"
            floor = f">= {go_float(rel.floor)}" if rel.floor else "> 0"
            parts.append(f"{condition} and {now if above else past} {floor}")
    return parts[0] if len(parts) == 1 else " or ".join(f"({part})" for part in parts)


@dataclass(frozen=True)
class BadCondition:
    words: str  # Markdown written by this module
    expr_at: dict[int, str]  # offset in ms -> expression
    lookback_ms: int


def _bad_condition(slo: SLO) -> BadCondition | None:
    """What "bad" means for the investigation: burning budget, else leaving the normal range."""
    offsets = (0, BEFORE_MS)
    if slo.objective is not None:
        budget = go_float(clean_number(slo.objective.budget))
        lookback = max((burn.long_ms for burn in slo.objective.burn_alerts), default=DAY)
        return BadCondition(
            words=f"the 5m error ratio is above the budget rate {budget} (burn rate above 1)",
            expr_at={offset: f"{series.value(slo, offset)} > {budget}" for offset in offsets},
            lookback_ms=lookback,
        )
    for band, label in ((slo.normal_range, "normal"), (slo.critical_range, "critical")):
        if band is not None and band_sides(band):
            words = "; or ".join(bound for d in band_sides(band) for bound in bounds(slo, band, d))
            return BadCondition(
                words=f"the value is outside the {label} range ({words})",
                expr_at={offset: _band_condition(slo, band, offset) for offset in offsets},
                lookback_ms=RANGE_LOOKBACK_MS,
            )
    return None


def _raw_selector(slo: SLO) -> str | None:
    """One selector of the raw series behind the SLI, to diff exact identities over time."""
    sli = slo.sli
    selector: Selector | None = None
    if isinstance(sli, RatioSLI):
        selector = sli.total[0] if sli.total else None
    elif isinstance(sli, LatencySLI | QuantileSLI):
        selector = Selector(f"{sli.histogram}_count", sli.matchers)
    elif isinstance(sli, StateSLI | GaugeSLI):
        try:
            found = analyse(sli.expr).selectors
        except PromQLError:  # pragma: no cover - the builder already parsed it
            found = ()
        if found:
            selector = Selector(*found[0])
    if selector is None or (selector.metric is None and not selector.matchers):
        return None
    return render_selector(selector.metric, selector.matchers)


def _windows(slo: SLO) -> list[int]:
    assert slo.objective is not None
    return sorted({w for burn in slo.objective.burn_alerts for w in (burn.long_ms, burn.short_ms)})


def paste_queries(slo: SLO) -> dict[str, list[Query]]:
    """The "PromQL to paste" blocks, by sub-heading."""
    value = series.value(slo)
    sli: list[Query] = []
    if slo.counts_events:
        sli.append(Query("Error ratio over 5m, per slice (bad over total events):", value))
    else:
        sli.append(Query("Value per slice (recorded):", value))
    for record, expr in queries.raw_expressions(slo).items():
        reads_raw = any(not (name or "").startswith("slo:") for name, _ in analyse(expr).selectors)
        what = "Raw expression recorded as {}:" if reads_raw else "Recorded as {}, from the series recorded above it:"
        sli.append(Query(what.format(code(record)), expr))
    sections: dict[str, list[Query]] = {"SLI per slice": sli}
    if slo.objective is not None:
        budget = go_float(clean_number(slo.objective.budget))
        sections["Burn rate per window"] = [
            Query(
                f"Burn rate over {format_duration(window)} (error ratio over the {budget} budget; 1 spends it "
                f"exactly over {format_duration(slo.objective.period_ms)}):",
                f"(\n  {series.window_ratio(slo, window)}\n) / {budget}",
            )
            for window in _windows(slo)
        ]
        sections["Error budget remaining"] = [
            Query(
                "Share of the period's error budget left (1 = untouched, 0 = spent, negative = overspent):",
                series.recorded(series.BUDGET_REMAINING, slo),
            )
        ]
    top: list[Query] = []
    if slo.counts_events:
        top.append(Query(f"The {TOP} slices with the highest 5m error ratio:", f"topk({TOP}, {value})"))
        if slo.objective is not None:
            budget = go_float(clean_number(slo.objective.budget))
            top.append(
                Query(
                    f"The {TOP} slices burning budget fastest over 1h:",
                    f"topk({TOP}, (\n  {series.window_ratio(slo, HOUR)}\n) / {budget})",
                )
            )
    else:
        bands = [band for band in (slo.normal_range, slo.critical_range) if band is not None]
        directions = {d for band in bands for d in band_sides(band)}
        if "Above" in directions or not directions:
            top.append(Query(f"The {TOP} highest slices:", f"topk({TOP}, {value})"))
        if "Below" in directions:
            top.append(Query(f"The {TOP} lowest slices:", f"bottomk({TOP}, {value})"))
        offsets = sorted({band.relative.offset_ms for band in bands if band.relative is not None})
        for offset in offsets:
            ago = format_duration(offset)
            top.append(
                Query(
                    f"The {TOP} slices that grew most against {ago} ago:",
                    f"topk({TOP}, {value} / {series.value(slo, offset)})",
                )
            )
    sections["Top offending slices"] = top
    return sections


@dataclass
class Investigation:
    condition: BadCondition | None
    before: str  # the default offset of before/after comparisons
    earliest: list[Query] = field(default_factory=list)
    identities: list[Query] = field(default_factory=list)
    smallest: list[Query] = field(default_factory=list)
    counterexample: list[Query] = field(default_factory=list)


def investigation(slo: SLO) -> Investigation:
    """The four investigation steps: when it started, what changed, the smallest case, a counterexample."""
    condition = _bad_condition(slo)
    result = Investigation(condition=condition, before=format_duration(BEFORE_MS))
    result.earliest.extend(_earliest_queries(slo, condition))
    result.identities.extend(_identity_queries(slo, condition))
    if condition is not None:
        result.smallest.extend(_smallest_queries(slo, condition.expr_at[0]))
        result.counterexample.extend(_counterexample_queries(slo, condition.expr_at[0]))
    return result


def _earliest_queries(slo: SLO, condition: BadCondition | None) -> list[Query]:
    found = []
    if condition is not None:
        lookback = format_duration(condition.lookback_ms)
        found.append(
            Query(
                f"First time each slice was bad in the last {lookback} (Unix seconds, earliest first):",
                f"sort(\n  min_over_time(\n    timestamp(\n      {condition.expr_at[0]}\n    )[{lookback}:1m]\n  )\n)",
            )
        )
    if slo.no_data.enabled:
        presence = series.recorded(series.presence_series(slo), slo)
        found.append(
            Query(
                f"Last time the SLI had data, if the no-data alert fired (look-back {format_duration(DAY)}):",
                f"max_over_time(timestamp({presence})[{format_duration(DAY)}:1m])",
            )
        )
    return found


def _identity_queries(slo: SLO, condition: BadCondition | None) -> list[Query]:
    before = format_duration(BEFORE_MS)
    presence = series.recorded(series.presence_series(slo), slo)
    found = []
    if condition is not None:
        found.append(
            Query(
                f"Slices bad now that were not bad {before} earlier:",
                f"({condition.expr_at[0]})\nunless {_on(slo)}\n({condition.expr_at[BEFORE_MS]})",
            )
        )
    found.append(
        Query(f"Slices that exist now but not {before} earlier:", f"{presence}\nunless\n{presence} offset {before}")
    )
    found.append(
        Query(
            f"Slices that existed {before} earlier but are gone now:", f"{presence} offset {before}\nunless\n{presence}"
        )
    )
    raw = _raw_selector(slo)
    if raw is not None:
        found.append(
            Query(
                f"Raw series whose exact label set is new since {before} earlier (new pods, instances, versions):",
                f"{raw}\nunless\n{raw} offset {before}",
            )
        )
        vanished = f"{raw} offset {before}\nunless\n{raw}"
        found.append(Query(f"Raw series that vanished since {before} earlier:", vanished))
    return found


def _smallest_queries(slo: SLO, bad: str) -> list[Query]:
    found = [Query(f"Bad slices per {code(label)}:", f"count by ({label}) (\n  {bad}\n)") for label in slo.slice.by]
    if slo.counts_events and slo.slice.by:
        found.append(
            Query(
                "The bad slice with the least traffic (the smallest reproduction):",
                f"bottomk(1, {series.recorded(series.TOTAL_5M, slo)} and {_on(slo)} ({bad}))",
            )
        )
    return found


def _counterexample_queries(slo: SLO, bad: str) -> list[Query]:
    value, by, on = series.value(slo), slo.slice.by, _on(slo)
    if len(by) >= 2:
        return [
            Query(
                f"Healthy slices that share {code(by[0])} with a bad one:",
                f"({value} unless {on} ({bad}))\nand on (slo, {by[0]})\n({bad})",
            )
        ]
    if by:
        return [Query("Healthy slices right now:", f"{value}\nunless {on}\n({bad})")]
    return [
        Query(
            f"The same signal {format_duration(BEFORE_MS)} earlier (set the offset to before the bad time):",
            series.value(slo, BEFORE_MS),
        )
    ]
