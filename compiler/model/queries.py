"""The raw SLI expressions: the PromQL each SLO's first recorded series are computed from.

These are the only expressions that read raw series, and each reads them over 5m only
(``RAW_RANGE``). The rule target records them; the runbooks show them to the on-call
engineer; preflight and cost reports count what they read. Every later window reads the
recorded series instead (``compiler.model.series``).
"""

from __future__ import annotations

import dataclasses
from collections.abc import Callable, Sequence

from compiler.model import (
    SLI,
    SLO,
    Condition,
    GaugeSLI,
    LatencySLI,
    QuantileSLI,
    RatioSLI,
    Selector,
    Slice,
    StateSLI,
    series,
)
from compiler.model import labels as lbl
from compiler.promql import (
    Matcher,
    PromQLError,
    SumRead,
    analyse,
    format_duration,
    keep_in_aggregations,
    outer_aggregation,
    quote,
    regex_quote,
    render_selector,
    replace_sum_reads,
    sum_reads,
)
from compiler.text.numbers import go_float

RAW_RANGE = "5m"
TERM_LABEL = lbl.TERM  # keeps series of different metrics with equal labels apart inside one sum


def _by(labels: Sequence[str]) -> str:
    return f" by ({', '.join(labels)})" if labels else ""


def _on(labels: Sequence[str]) -> str:
    return f"on ({', '.join(labels)})"


def _selector(selector: Selector, extra: Sequence[Matcher] = ()) -> str:
    return render_selector(selector.metric, (*selector.matchers, *extra))


def _joined(vector: str, slice_: Slice) -> str:
    """Attach slice labels from the joins' info metrics (whose values must be 1), in order."""
    for join in slice_.joins:
        keys = [*join.on, *join.labels]
        info = render_selector(join.info.metric, join.info.matchers)
        vector = f"{vector} * {_on(join.on)} group_left ({', '.join(join.labels)}) max by ({', '.join(keys)}) ({info})"
    return vector


def _indent(text: str, spaces: int = 2) -> str:
    """Indent every line of a nested expression so the generated rules read as a tree."""
    pad = " " * spaces
    return "\n".join(pad + line if line else line for line in text.split("\n"))


def _sum_of(terms: Sequence[str], by: Sequence[str]) -> str:
    if len(terms) == 1:
        return f"sum{_by(by)} ({terms[0]})"
    return f"sum{_by(by)} (\n" + _indent("\nor\n".join(terms)) + "\n)"


def _rate_sum(selectors: Sequence[Selector], slice_: Slice) -> str:
    """sum by (slice) of the 5m rates of one or more selectors.

    Several selectors are combined with ``or`` before the sum; a helper label keeps series
    of different metrics with equal labels (rx and tx errors on one device) apart.
    """
    terms = []
    for index, selector in enumerate(selectors):
        term = _joined(f"rate({_selector(selector)}[{RAW_RANGE}])", slice_)
        if index:
            term = f'label_replace({term}, "{TERM_LABEL}", "{index}", "", "")'
        terms.append(term)
    return _sum_of(terms, slice_.by)


def _le_matcher(le: float) -> Matcher:
    """Prometheus 3 writes integral edges as 1.0, Prometheus 2 as 1: match both."""
    text = go_float(le)
    if le.is_integer() and "e" not in text:
        return Matcher(lbl.BUCKET_BOUND, "=~", f"{text}(\\.0)?")
    return Matcher(lbl.BUCKET_BOUND, "=", text)


def _zero_fallback(expr: str, slo: SLO) -> str:
    """Keep a slice with no bad events at 0 rather than absent, shaped like its total."""
    return f"(\n{_indent(expr)}\n)\nor {_on(slo.slice.by)}\n  0 * {series.recorded(series.TOTAL_5M, slo)}"


def _zero_while(expr: str, presence: str, slice_: Slice) -> str:
    """``expr``, or 0 in each slice where ``presence`` has a series above 0 and ``expr`` has none.

    For counters created on their first event: while their component's targets are up the value
    reads 0, and once the targets are gone (``up`` absent or 0) it is absent, so no-data fires.
    The fallback carries the slice labels the presence series have, and no others; this function
    takes the presence expression so a component's own ``up`` selector can be passed in later.
    """
    present = f"max{_by(slice_.by)} (\n{_indent(presence)}\n) > 0"
    return f"(\n{_indent(expr)}\n)\nor {_on(slice_.by)}\n  0 * (\n{_indent(present, 4)}\n  )"


def total_and_bad(slo: SLO, same_evaluation: bool = True) -> tuple[str, str]:
    """The 5m total and bad event rates of an event SLI, summed by slice.

    Each raw series is read once per evaluation of the group where PromQL allows it. The rule
    engine evaluates a group's rules in order and a later rule sees an earlier rule's result at
    the same timestamp (Prometheus and promtool; a Thanos or Mimir ruler when its queries see its
    own writes, which the good-events ratio always assumed), so the bad rate reads the
    recorded 5m total rather than the raw series again: the same value, a fraction of the
    samples (the raw total is read over 5m, the recorded one is one sample per slice).

    ``same_evaluation=False`` is for an engine where a recorded series comes back only through
    remote write, one delivery later (vmalert): there a bad rate computed from the recorded
    total would subtract this evaluation's good events from the previous evaluation's total
    (spurious bad events whenever traffic falls), so every value is read from raw series and
    the recorded total is used only for its shape (``0 * total``).
    """
    sli = slo.sli
    if isinstance(sli, RatioSLI):
        return _ratio_total_and_bad(slo, sli, same_evaluation)
    if isinstance(sli, LatencySLI):
        return _latency_total_and_bad(slo, sli, same_evaluation)
    if isinstance(sli, StateSLI):
        by = slo.slice.by
        if same_evaluation and derives_from_units(slo):
            units = series.recorded(series.UNIT_VALUE, slo)
            return f"count{_by(by)} (\n  {units}\n)", f"sum{_by(by)} (\n  {units}\n)"
        state = _joined(f"({sli.expr})", slo.slice)
        bad_state = f"({state})" if slo.slice.joins else state
        return f"count{_by(by)} (\n  {state}\n)", f"sum{_by(by)} (\n  1 - {bad_state}\n)"
    raise TypeError(f"{type(sli).__name__} has no events")  # pragma: no cover


@dataclasses.dataclass(frozen=True)
class Parts:
    """A ratio whose every bad selector picks series of one of its total selectors (``code=~"5.."`` of all codes).

    The total's 5m rates are recorded once by slice, ``labels`` (those the bad selectors' extra
    matchers name) and, with several total selectors, the selector (``PART``); the 5m total and
    bad rates sum that recorded series. ``picks`` are the bad selectors: (total index, extra matchers).
    """

    labels: tuple[str, ...]
    picks: tuple[tuple[int, tuple[Matcher, ...]], ...]
    # A latency SLI's errors outside its total (``latency_parts``): read on their own, disjoint from the parts.
    outside: Selector | None = None


def total_parts(slo: SLO) -> Parts | None:
    """The recorded parts of a ratio (``ratio_parts``) or of a latency SLI's total and errors (``latency_parts``)."""
    return ratio_parts(slo) or latency_parts(slo)


_NEGATED = {"=": "!=", "!=": "=", "=~": "!~", "!~": "=~"}


def latency_parts(slo: SLO) -> Parts | None:
    """A latency SLI whose one errors selector is its one total selector with other matchers, or None.

    The errors inside the total (``code=~"5.."`` of the total's requests) are picked from the
    recorded parts, as a ratio's bad series are; those the total leaves out by its one matcher
    that the errors lack (``subresource!~"proxy|log"``) are read on their own with that matcher
    negated (``outside``): the two partition the errors, and no series is read twice. None for
    the cases ``ratio_parts`` refuses (per-node or per-pod slices, reserved labels).
    """
    sli = slo.sli
    if not isinstance(sli, LatencySLI) or len(sli.total) != 1 or len(sli.errors) != 1:
        return None
    total, errors = sli.total[0], sli.errors[0]
    if total.metric is None or total.metric != errors.metric or set(slo.slice.by) & lbl.HIGH_CARDINALITY:
        return None
    extra = tuple(m for m in errors.matchers if m not in total.matchers)
    left_out = [m for m in total.matchers if m not in errors.matchers]
    if not extra or len(left_out) > 1:
        return None
    labels = tuple(dict.fromkeys(m.name for m in extra if m.name not in slo.slice.by))
    if lbl.PART in labels or lbl.METRIC_NAME in labels or lbl.PART in slo.slice.by:
        return None
    outside = None
    if left_out:
        negated = Matcher(left_out[0].name, _NEGATED[left_out[0].op], left_out[0].value)
        outside = Selector(errors.metric, (*errors.matchers, negated))
    return Parts(labels, ((0, extra),), outside)


def ratio_parts(slo: SLO) -> Parts | None:
    """The parts of a ratio SLI whose bad series are among its total's, or None (see ``Parts``).

    None too for a slice by a per-node or per-pod label: there the parts (every slice times the
    values of the labels the bad selectors pick on) would add thousands of series to save a read.
    """
    sli = slo.sli
    if not isinstance(sli, RatioSLI) or not sli.bad or set(slo.slice.by) & lbl.HIGH_CARDINALITY:
        return None
    picks: list[tuple[int, tuple[Matcher, ...]]] = []
    for bad in sli.bad:
        index = next(
            (
                i
                for i, total in enumerate(sli.total)
                if bad.metric is not None and total.metric == bad.metric and set(total.matchers) <= set(bad.matchers)
            ),
            None,
        )
        if index is None or index in (i for i, _ in picks):
            return None
        picks.append((index, tuple(m for m in bad.matchers if m not in sli.total[index].matchers)))
    labels = tuple(dict.fromkeys(m.name for _, extra in picks for m in extra if m.name not in slo.slice.by))
    if lbl.PART in labels or lbl.METRIC_NAME in labels or lbl.PART in slo.slice.by:
        return None
    return Parts(labels, tuple(picks))


def parts_rate(slo: SLO, parts: Parts) -> str:
    """The recorded parts: the total's 5m rates by slice, the bad selectors' labels and (several) the selector."""
    sli = slo.sli
    assert isinstance(sli, RatioSLI | LatencySLI)
    several = len(sli.total) > 1
    terms = []
    for index, selector in enumerate(sli.total):
        term = _joined(f"rate({_selector(selector)}[{RAW_RANGE}])", slo.slice)
        terms.append(f'label_replace({term}, "{lbl.PART}", "{index}", "", "")' if several else term)
    return _sum_of(terms, (*slo.slice.by, *parts.labels, *((lbl.PART,) if several else ())))


def _parts_total_and_bad(slo: SLO, parts: Parts) -> tuple[str, str]:
    """The 5m total and bad rates (a latency SLI: its errors) summed from the recorded parts: each series read once."""
    sli = slo.sli
    assert isinstance(sli, RatioSLI | LatencySLI)
    by = slo.slice.by
    several = len(sli.total) > 1
    picked = []
    for index, extra in parts.picks:
        matchers = (*(((Matcher(lbl.PART, "=", str(index))),) if several else ()), *extra)
        picked.append(render_selector(series.PARTS_5M, (Matcher(lbl.SLO, "=", slo.name), *matchers)))
    if parts.outside is not None:
        outside = _joined(f"rate({_selector(parts.outside)}[{RAW_RANGE}])", slo.slice)
        picked.append(f'label_replace({outside}, "{TERM_LABEL}", "outside", "", "")')
    total = f"sum{_by(by)} (\n  {series.recorded(series.PARTS_5M, slo)}\n)"
    return total, _zero_fallback(_sum_of(picked, by), slo)


def _ratio_total_and_bad(slo: SLO, sli: RatioSLI, same_evaluation: bool) -> tuple[str, str]:
    """Bad events as given, or the total less the good events (the recorded total where it may be read)."""
    by = slo.slice.by
    parts = ratio_parts(slo) if same_evaluation else None
    if parts is not None:
        return _parts_total_and_bad(slo, parts)
    total = _rate_sum(sli.total, slo.slice)
    if sli.bad:
        return total, _zero_fallback(_rate_sum(sli.bad, slo.slice), slo)
    good = _rate_sum(sli.good, slo.slice)
    counted = series.recorded(series.TOTAL_5M, slo) if same_evaluation else _indent(total).strip()
    bad = f"clamp_min(\n  {counted}\n  - {_on(by)}\n{_indent(good)},\n  0\n)\nor {_on(by)}\n  {counted}"
    return total, bad


def _count_is_total(sli: LatencySLI, count: Selector) -> bool:
    """Whether the SLI's total is the histogram's own count, so the recorded total is that count."""
    return not sli.total or [_selector(selector) for selector in sli.total] == [_selector(count)]


def _latency_total_and_bad(slo: SLO, sli: LatencySLI, same_evaluation: bool) -> tuple[str, str]:
    """Slow events (the count less the requests under the thresholds), plus the errors if any.

    The count is read once: where it is the total, as the recorded total; otherwise raw, with
    the recorded total giving the shape of the "no request under any threshold" fallback (a
    slice with latency observations but no total events then has no bad rate, as it has no
    error ratio either way). On an engine without same-evaluation reads (vmalert) the raw form.
    """
    by = slo.slice.by
    count = Selector(f"{sli.histogram}_count", sli.matchers)
    total = _rate_sum(sli.total or (count,), slo.slice)
    parts = latency_parts(slo) if same_evaluation else None
    errors = _zero_fallback(_rate_sum(sli.errors, slo.slice), slo) if sli.errors else ""
    if parts is not None:
        total, errors = _parts_total_and_bad(slo, parts)
    good_terms = []
    for threshold in sli.thresholds:
        bucket = render_selector(f"{sli.histogram}_bucket", (*sli.matchers, *threshold.when, _le_matcher(threshold.le)))
        good_terms.append(_joined(f"rate({bucket}[{RAW_RANGE}])", slo.slice))
    if same_evaluation:
        recorded_total = series.recorded(series.TOTAL_5M, slo)
        counted = recorded_total if _count_is_total(sli, count) else _rate_sum((count,), slo.slice)
        good = f"(\n{_indent(_sum_of(good_terms, by))}\n  or {_on(by)}\n  0 * {recorded_total}\n)"
        slow = f"clamp_min(\n{_indent(counted)}\n  - {_on(by)}\n{_indent(good)},\n  0\n)"
    else:
        count_sum = _rate_sum((count,), slo.slice)
        # A slice with no request under any threshold has no bucket series to subtract: all of it is slow.
        good = f"(\n{_indent(_sum_of(good_terms, by))}\n  or {_on(by)}\n  0 * {count_sum}\n)"
        slow = f"clamp_min(\n{_indent(count_sum)}\n  -\n{_indent(good)},\n  0\n)"
    if not errors:
        return total, slow
    return total, f"{slow}\n+ {_on(by)}\n(\n{_indent(errors)}\n)"


def value(slo: SLO, same_evaluation: bool = True) -> str:
    """The value of a gauge or quantile SLI, aggregated by slice.

    A fleet's value whose units give it exactly (``derives_from_units``) aggregates the recorded
    per-unit value, which the group records first, rather than reading the raw series again.
    """
    sli = slo.sli
    by = _by(slo.slice.by)
    if isinstance(sli, GaugeSLI) and same_evaluation and derives_from_units(slo):
        return f"{sli.aggregate}{by} (\n  {series.recorded(series.UNIT_VALUE, slo)}\n)"
    if isinstance(sli, GaugeSLI):
        gauge = f"{sli.aggregate}{by} (\n  {_joined(f'({sli.expr})', slo.slice)}\n)"
        return _zero_while(gauge, sli.absent_as_zero_while, slo.slice) if sli.absent_as_zero_while else gauge
    if isinstance(sli, QuantileSLI):
        bucket = render_selector(f"{sli.histogram}_bucket", sli.matchers)
        keep = [lbl.BUCKET_BOUND, *slo.slice.by]
        rate = _joined(f"rate({bucket}[{RAW_RANGE}])", slo.slice)
        return f"histogram_quantile(\n  {go_float(sli.quantile)},\n  sum by ({', '.join(keep)}) (\n    {rate}\n  )\n)"
    raise TypeError(f"{type(sli).__name__} is not a gauge")  # pragma: no cover


def raw_expressions(slo: SLO, same_evaluation: bool = True) -> dict[str, str]:
    """Each recorded series computed from raw series, with its expression, in rule order.

    A fleet's per-unit value comes first: the slice's series that derive from it
    (``derives_from_units``) read it in the same evaluation instead of the raw series.
    ``same_evaluation=False`` gives every series its raw form (see ``total_and_bad``).
    """
    found: dict[str, str] = {}
    shared = unit_parts(slo) if same_evaluation else None
    if shared is not None:
        return {**found, **_unit_parts_expressions(slo, shared)}
    if same_evaluation and ratio_unit_parts(slo):
        return _ratio_unit_parts_expressions(slo)
    if slo.fleet is not None:
        found[series.UNIT_VALUE] = unit_value(slo.sli, slo.slice, slo.fleet.units)
    if not slo.counts_events:
        return {**found, series.VALUE: value(slo, same_evaluation)}
    parts = total_parts(slo) if same_evaluation else None
    if parts is not None:
        found[series.PARTS_5M] = parts_rate(slo, parts)
    total, bad = total_and_bad(slo, same_evaluation)
    return {**found, series.TOTAL_5M: total, series.BAD_5M: bad}


# Aggregations of the units' values that give the slice's value exactly, whatever units there are.
_ASSOCIATIVE = frozenset({"max", "min", "sum"})


def derives_from_units(slo: SLO) -> bool:
    """Whether the slice's first series are exactly an aggregation of the recorded per-unit value.

    Then the group reads the raw series once, in the per-unit value, and the slice's series
    aggregate it (same evaluation). A state counts its units (one state series per unit, the
    fleet's judging unit); a gauge does when its aggregation is max, min or sum and the unit
    form only keeps the unit labels through the outer aggregation of the same kind, or an
    average whose expression already gives one series per unit (an aggregation by slice and
    unit labels). Otherwise (an average over units of different sizes, a ratio of sums, a
    ratio SLI, whose slice ratio is not a mean of its units') the raw series are read again.
    """
    fleet, sli = slo.fleet, slo.sli
    if fleet is None:
        return False
    if isinstance(sli, StateSLI):
        return True
    if not isinstance(sli, GaugeSLI) or sli.absent_as_zero_while:
        return False
    try:
        as_is, per_unit = keep_in_aggregations(sli.expr, ()), keep_in_aggregations(sli.expr, fleet.units)
        outer = outer_aggregation(sli.expr)
    except PromQLError:  # pragma: no cover - the reader already parsed it
        return False
    if sli.aggregate == "avg":
        one_per_unit = outer is not None and set(outer[1]) <= {*slo.slice.by, *fleet.units}
        return one_per_unit and as_is == per_unit
    if sli.aggregate not in _ASSOCIATIVE:
        return False
    if as_is == per_unit:
        return True
    return (
        outer is not None
        and outer[0] == sli.aggregate
        and keep_in_aggregations(outer[2], ()) == keep_in_aggregations(outer[2], fleet.units)
    )


@dataclasses.dataclass(frozen=True)
class UnitParts:
    """A fleet gauge that reads one counter only through sums of its rates by slice (``promql.SumRead``).

    Its unit and slice values are not aggregations of each other (a ratio of sums by slice with a
    traffic floor per unit), so each would read the counter again; instead the counter's rates
    are recorded once by slice and unit (``PARTS_5M``) and both values sum that series. ``read``
    is the counter's selector; ``pick`` the one matcher another selector of the expression adds
    to it (``code=~"5.."``), marked with ``slo_part="1"`` in the recorded series (a negative
    matcher marks the series it excludes), so the picked rates are a part of the same read.
    """

    read: SumRead
    pick: Matcher | None
    labels: tuple[str, ...]  # slice and unit labels: what the parts are recorded by


def unit_parts(slo: SLO) -> UnitParts | None:
    """The recorded parts of a fleet gauge whose value does not derive from its units, or None (see ``UnitParts``)."""
    sli, fleet = slo.sli, slo.fleet
    if fleet is None or not isinstance(sli, GaugeSLI) or sli.absent_as_zero_while or derives_from_units(slo):
        return None
    try:
        reads = sum_reads(sli.expr)
    except PromQLError:  # pragma: no cover - the reader already parsed it
        return None
    labels = (*slo.slice.by, *(label for label in fleet.units if label not in slo.slice.by))
    if not reads or any(not set(read.labels) <= set(labels) for read in reads):
        return None
    shapes = {(read.function, read.range_ms, read.metric) for read in reads}
    selectors = sorted({read.matchers for read in reads}, key=len)
    if len(shapes) != 1 or len(selectors) > 2:
        return None
    base = next(read for read in reads if read.matchers == selectors[0])
    if len(selectors) == 1:
        return UnitParts(base, None, labels)
    extra = [m for m in selectors[1] if m not in selectors[0]]
    if len(extra) != 1 or not set(selectors[0]) <= set(selectors[1]):
        return None
    name = extra[0].name
    if name in labels or name in (lbl.PART, lbl.METRIC_NAME) or lbl.PART in labels:
        return None
    return UnitParts(base, extra[0], labels)


def unit_parts_rate(parts: UnitParts) -> str:
    """The recorded parts: the counter's rates by slice and unit, the picked ones marked."""
    read = parts.read
    rate = f"{read.function}({render_selector(read.metric, read.matchers)}[{format_duration(read.range_ms)}])"
    if parts.pick is None:
        return f"sum{_by(parts.labels)} (\n  {rate}\n)"
    pick = parts.pick
    regex = pick.value if pick.op in ("=~", "!~") else regex_quote(pick.value)
    marked = f'label_replace({rate}, "{lbl.PART}", "1", "{pick.name}", {quote(regex)})'
    return f"sum{_by((*parts.labels, lbl.PART))} (\n  {marked}\n)"


def _from_parts(expr: str, slo: SLO, parts: UnitParts) -> str:
    """``expr`` with each sum of the counter's rates read from the recorded parts."""
    own = Matcher(lbl.SLO, "=", slo.name)

    def replace(read: SumRead) -> str:
        matchers: tuple[Matcher, ...] = (own,)
        if read.matchers != parts.read.matchers and parts.pick is not None:
            marked = parts.pick.op in ("=", "=~")  # a negative matcher picks the series left unmarked
            matchers += (Matcher(lbl.PART, "=", "1" if marked else ""),)
        return f"sum{_by(read.labels)} ({render_selector(series.PARTS_5M, matchers)})"

    return replace_sum_reads(expr, replace)


def _unit_parts_expressions(slo: SLO, parts: UnitParts) -> dict[str, str]:
    """The parts, then the unit and slice values summing them (same evaluation)."""
    sli, fleet = slo.sli, slo.fleet
    assert isinstance(sli, GaugeSLI) and fleet is not None
    per_unit = _from_parts(keep_in_aggregations(sli.expr, fleet.units), slo, parts)
    return {
        series.PARTS_5M: unit_parts_rate(parts),
        series.UNIT_VALUE: f"{sli.aggregate}{_by(parts.labels)} (\n  {per_unit}\n)",
        series.VALUE: f"{sli.aggregate}{_by(slo.slice.by)} (\n  {_from_parts(sli.expr, slo, parts)}\n)",
    }


def ratio_unit_parts(slo: SLO) -> bool:
    """Whether a fleet's ratio records its total and bad rates per unit (``PARTS_5M``) and sums them.

    A ratio's slice is not a mean of its units' ratios, so its unit value, total and bad would
    each read the raw series; recorded once per unit (the bad rates marked ``slo_part="1"``),
    the three sum them in the same evaluation. Two series per unit: the price of one read.
    """
    sli = slo.sli
    if slo.fleet is None or not isinstance(sli, RatioSLI) or not sli.bad or sli.good or ratio_parts(slo):
        return False
    return lbl.PART not in slo.slice.by and lbl.PART not in slo.fleet.units


def _ratio_unit_parts_expressions(slo: SLO) -> dict[str, str]:
    """The per-unit total and bad rates, then the unit value, total and bad summing them."""
    sli, fleet = slo.sli, slo.fleet
    assert isinstance(sli, RatioSLI) and fleet is not None
    units = (*slo.slice.by, *(label for label in fleet.units if label not in slo.slice.by))
    per_unit = dataclasses.replace(slo.slice, by=units)
    terms = []
    for index, selector in enumerate((*sli.total, *sli.bad)):
        term = _joined(f"rate({_selector(selector)}[{RAW_RANGE}])", per_unit)
        if index >= len(sli.total):
            term = f'label_replace({term}, "{lbl.PART}", "1", "", "")'
        if index:
            term = f'label_replace({term}, "{TERM_LABEL}", "{index}", "", "")'
        terms.append(term)
    own = Matcher(lbl.SLO, "=", slo.name)
    total_parts = render_selector(series.PARTS_5M, (own, Matcher(lbl.PART, "=", "")))
    bad_parts = render_selector(series.PARTS_5M, (own, Matcher(lbl.PART, "=", "1")))
    unit_total = f"sum{_by(units)} ({total_parts})"
    return {
        series.PARTS_5M: _sum_of(terms, (*units, lbl.PART)),
        series.UNIT_VALUE: f"(\n  sum{_by(units)} ({bad_parts})\n  or {_on(units)}\n  0 * {unit_total}\n)\n"
        f"/\n{unit_total}",
        series.TOTAL_5M: f"sum{_by(slo.slice.by)} (\n  {total_parts}\n)",
        series.BAD_5M: _zero_fallback(f"sum{_by(slo.slice.by)} (\n  {bad_parts}\n)", slo),
    }


def unit_value(sli: SLI, slice_: Slice, units: Sequence[str]) -> str:
    """The SLI per unit (slice labels plus ``units``), for a fleet: each unit judged on its own.

    A gauge keeps the unit labels through every aggregation of its expression; a state is the
    unit's bad state (1 - state); a ratio is the unit's own bad over its own total. Raises
    TypeError for a kind that has no per-unit form (the reader reports it first).
    """
    per_unit = dataclasses.replace(slice_, by=(*slice_.by, *(label for label in units if label not in slice_.by)))
    by = _by(per_unit.by)
    if isinstance(sli, GaugeSLI) and not sli.absent_as_zero_while:
        expr = keep_in_aggregations(sli.expr, units)
        return f"{sli.aggregate}{by} (\n  {_joined(f'({expr})', per_unit)}\n)"
    if isinstance(sli, StateSLI):
        state = _joined(f"({sli.expr})", per_unit)
        return f"max{by} (\n  1 - ({state})\n)"
    if isinstance(sli, RatioSLI) and sli.bad:
        total = _rate_sum(sli.total, per_unit)
        bad = _rate_sum(sli.bad, per_unit)
        return f"(\n{_indent(bad)}\n  or {_on(per_unit.by)}\n  0 * {total.strip()}\n)\n/\n{total}"
    raise TypeError(f"{type(sli).__name__} has no per-unit form")


def condition_holds(slo: SLO, condition: Condition) -> str:
    """Per slice, how many series of a condition's expression hold now (absent where none does)."""
    return f"count{_by(slo.slice.by)} (\n  {_joined(f'({condition.expr})', slo.slice)}\n)"


def fleet_counts(slo: SLO) -> tuple[str, str]:
    """Per slice: how many units report, and how many are beyond the critical range (0, not absent)."""
    band, by = slo.critical_range, slo.slice.by
    assert band is not None
    unit = series.recorded(series.UNIT_VALUE, slo)
    units = f"count{_by(by)} (\n  {unit}\n)"
    bounds = [f"{unit} > {go_float(band.maximum)}"] if band.maximum is not None else []
    bounds += [f"{unit} < {go_float(band.minimum)}"] if band.minimum is not None else []
    out = f"count{_by(by)} (\n  {' or '.join(bounds)}\n)"
    return units, f"{out}\nor {_on(by)}\n  0 * {series.recorded(series.FLEET_UNITS, slo)}"


# -- missing data -----------------------------------------------------------------------


@dataclasses.dataclass(frozen=True)
class NoDataChecks:
    """What to query when a spec's SLI has no series: which source is gone, and whether it is scraped."""

    absent: tuple[str, ...]  # one ``absent(<raw selector>)`` per raw series the SLI reads (joins' info included)
    up: str | None  # ``up{job...}`` of the SLI's scrape jobs; None when no selector names a job


def _expr_selectors(expr: str) -> list[Selector]:
    try:
        return [Selector(metric, matchers) for metric, matchers in analyse(expr).selectors]
    except PromQLError:  # pragma: no cover - the reader already parsed it
        return []


def source_selectors(slo: SLO) -> list[Selector]:
    """The raw selectors the SLI reads, then the joins' info metrics, without duplicates, in order."""
    sli = slo.sli
    found: list[Selector] = []
    if isinstance(sli, RatioSLI):
        found += [*sli.total, *sli.bad, *sli.good]
    elif isinstance(sli, LatencySLI):
        found += [Selector(f"{sli.histogram}_bucket", sli.matchers), *sli.total, *sli.errors]
    elif isinstance(sli, QuantileSLI):
        found.append(Selector(f"{sli.histogram}_bucket", sli.matchers))
    elif isinstance(sli, GaugeSLI):
        found += _expr_selectors(sli.expr)
        if sli.absent_as_zero_while:
            found += _expr_selectors(sli.absent_as_zero_while)
    elif isinstance(sli, StateSLI):
        found += _expr_selectors(sli.expr)
    found += [join.info for join in slo.slice.joins]
    return list(dict.fromkeys(s for s in found if s.metric or s.matchers))


def no_data_checks(slo: SLO) -> NoDataChecks:
    selectors = source_selectors(slo)
    absent = tuple(f"absent({render_selector(s.metric, s.matchers)})" for s in selectors)
    jobs = list(dict.fromkeys(m for s in selectors for m in s.matchers if m.name == "job"))
    if not jobs:
        return NoDataChecks(absent, None)
    if len(jobs) == 1:
        return NoDataChecks(absent, render_selector("up", jobs))
    return NoDataChecks(absent, " or ".join(render_selector("up", (job,)) for job in jobs))


def no_data_steps(
    slo: SLO, query: Callable[[str], str] = str, text: Callable[[str], str] = str
) -> tuple[str, tuple[str, ...]]:
    """What to do when the SLI has no series: a summary and the steps, in order.

    The missing data, not the signal: the spec's own mitigation is for when the data is back.
    ``query`` formats PromQL and ``text`` the spec's words (Markdown filters in a runbook;
    plain text in an annotation).
    """
    checks = no_data_checks(slo)
    summary = (
        f"The {text(slo.name)} SLI has no data: fix the collection, not the signal. Do not act on "
        "the spec's own mitigation until its data is back."
    )
    absent = " and ".join(query(expr) for expr in checks.absent)
    up = (
        f"{query(checks.up)} (0: discovered but the scrape fails; no series: the target is not discovered), "
        "and the job's targets on the Prometheus /targets page (the last error of each)."
        if checks.up
        else "the Prometheus /targets page: find the job that exports it (the SLI's selectors name none)."
    )
    versions = f" (the spec was checked against Kubernetes {text(slo.k8s_versions)})" if slo.k8s_versions else ""
    steps = (
        f"Which source is gone: {absent} (each returns 1 while its series are missing).",
        f"Is the target scraped: {up}",
        "Target not discovered: check the ServiceMonitor or PodMonitor (or the scrape config) and its relabelling: "
        "a namespace, label or port selector that no longer matches after a chart or Service change, or a "
        "keep/drop rule.",
        f"Target scraped but the series gone: an upgrade renamed or dropped the metric{versions}, or a "
        "metric_relabel_configs drop rule matches it; look for the new name in the target's /metrics, then fix "
        "the spec.",
    )
    return summary, steps
