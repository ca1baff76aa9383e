"""The ``sli`` section: ratio, latency, state, gauge and quantile SLIs, their buckets and thresholds,
and the checks that keep them right by construction (coverage of ``when`` thresholds, bad
events a subset of total, no matchers on ``le``).
"""

from __future__ import annotations

import functools
import math
from collections.abc import Mapping, Sequence
from typing import Any, cast

from compiler import promql
from compiler.model import (
    SLI,
    EdgeFallback,
    GaugeSLI,
    LatencySLI,
    LatencyThreshold,
    QuantileSLI,
    RatioSLI,
    Selector,
    Slice,
    StalenessSLI,
    StateSLI,
    Unit,
)
from compiler.model.buckets import KNOWN_BUCKETS
from compiler.promql import Matcher, matchsets
from compiler.source.load import PathKey
from compiler.source.reader import SpecReader
from compiler.source.staleness import read_staleness
from compiler.text.numbers import go_float

_LE_PROBLEM = (
    "must not match on 'le': the compiler selects the buckets itself, so a matcher on le leaves the SLI reading "
    "the wrong buckets or none at all (_count and plain counters have no le label); drop it"
)


def read_sli(r: SpecReader, slice_: Slice) -> SLI | None:
    # Exactly one kind is present (the schema says so); its body is read field by field below.
    raw: Mapping[str, Any] = cast(Mapping[str, Any], r.data["sli"])
    kind = next(iter(raw))
    body: dict[str, Any] = raw[kind]
    base: PathKey = ("sli", kind)
    # An expression must keep the slice labels it provides itself, and the labels the joins match on.
    selectors_keep = slice_.source_labels
    if kind == "ratio":
        if ("bad" in body) == ("good" in body):
            r.error(base, "sli.ratio needs exactly one of 'bad' or 'good' (and 'total')", at_key=True)
        return RatioSLI(
            bad=r.selectors((*base, "bad"), slice_.matchers),
            good=r.selectors((*base, "good"), slice_.matchers),
            total=r.selectors((*base, "total"), slice_.matchers),
        )
    if kind == "latency":
        buckets = read_buckets(r, base, body)
        thresholds = read_thresholds(r, base, body, buckets)
        thresholds = fall_back_from_dropped(r, base, body, thresholds, buckets)
        check_dropped_thresholds(r, base, body["histogram"], thresholds, buckets)
        matchers = r.matchers((*base, "selector"), body.get("selector"))
        return LatencySLI(
            histogram=body["histogram"],
            matchers=(*matchers, *slice_.matchers),
            thresholds=thresholds,
            buckets=scraped_edges(r, body["histogram"], buckets),
            errors=r.selectors((*base, "errors"), slice_.matchers),
            total=r.selectors((*base, "total"), slice_.matchers),
        )
    if kind == "quantile":
        buckets = read_buckets(r, base, body)
        matchers = r.matchers((*base, "selector"), body.get("selector"))
        # The quantile is computed over the edges the stack keeps: coarser, but not wrong.
        kept = scraped_edges(r, body["histogram"], buckets)
        return QuantileSLI(body["histogram"], (*matchers, *slice_.matchers), float(body["quantile"]), kept)
    if kind == "staleness":
        return read_staleness(r, slice_, body)
    expr = r.expression((*base, "expr"), slice_.matchers, selectors_keep)
    if kind == "state":
        return StateSLI(expr)
    return GaugeSLI(expr, body.get("aggregate", "sum"), read_absent_as_zero_while(r, slice_, body, expr))


def read_absent_as_zero_while(r: SpecReader, slice_: Slice, body: Mapping[str, Any], expr: str) -> str | None:
    """The presence expression under which a gauge over first-event counters reads absent as 0.

    It is read like ``expr`` (slice selector added, slice labels kept) so its series fall in the
    same slices. Without a counter in ``expr`` an absent value is a real gap, not a counter that has
    not been created yet, and reading it as 0 would hide it: that is refused.
    """
    key: PathKey = ("sli", "gauge", "absent_as_zero_while")
    if "absent_as_zero_while" not in body:
        return None
    presence = r.expression(key, slice_.matchers, slice_.source_labels)
    if not promql.counter_selectors(expr):
        r.error(
            key,
            "absent_as_zero_while reads a missing value as 0 only for counters created on their first event, "
            "but sli.gauge.expr reads no counter (no rate() or increase() of a counter): a gauge with no series "
            "is really missing, and the no-data alert must say so; drop absent_as_zero_while",
            at_key=True,
        )
    return presence


def read_buckets(r: SpecReader, base: PathKey, body: dict[str, Any]) -> tuple[float, ...]:
    if "buckets" in body:
        edges = tuple(float(edge) for edge in body["buckets"])
        check_finite_buckets(r, (*base, "buckets"), edges)
        if list(edges) != sorted(set(edges)):
            r.error((*base, "buckets"), "buckets must be strictly increasing")
        elif not body.get("buckets_override", False):
            check_catalogue_buckets(r, base, body["histogram"], edges)
        return edges
    if "buckets_override" in body:
        r.error(
            (*base, "buckets_override"),
            "buckets_override has no effect without buckets: declare the edges it overrides, or drop it",
            at_key=True,
        )
    known = KNOWN_BUCKETS.get(body["histogram"])
    if known is None:
        r.error(
            (*base, "histogram"),
            f"unknown histogram '{body['histogram']}': declare its finite bucket edges in 'buckets' "
            "so thresholds can be checked",
        )
        return ()
    return known


def check_catalogue_buckets(r: SpecReader, base: PathKey, histogram: str, edges: tuple[float, ...]) -> None:
    """Declared edges of a catalogued histogram must be its edges, unless the spec says they differ on purpose.

    Replacing the catalogue silently lets a threshold pass the bucket-edge check on edges the
    cluster does not have: ``le="0.3"`` then matches no series and the SLI reads 100% bad.
    """
    known = KNOWN_BUCKETS.get(histogram)
    if known is None or edges == known:
        return
    missing = [go_float(edge) for edge in known if edge not in edges]
    extra = [go_float(edge) for edge in edges if edge not in known]
    differences = "; ".join(
        part
        for part in (
            f"not declared: {', '.join(missing)}" if missing else "",
            f"not in the catalogue: {', '.join(extra)}" if extra else "",
        )
        if part
    )
    r.error(
        (*base, "buckets"),
        f"buckets differ from the built-in catalogue's edges of {histogram} ({differences}). Drop buckets to use "
        "the catalogue, or if your cluster's histogram really has these edges (custom instrumentation, another "
        "version), set buckets_override: true next to them",
    )


def read_thresholds(
    r: SpecReader, base: PathKey, body: dict[str, Any], buckets: tuple[float, ...]
) -> tuple[LatencyThreshold, ...]:
    raw = body["threshold"]
    entries = (
        [((*base, "threshold"), raw, None)]
        if not isinstance(raw, list)
        else [((*base, "threshold", i, "le"), item["le"], item.get("when")) for i, item in enumerate(raw)]
    )
    result = []
    for key, le, when in entries:
        le = float(le)
        if not math.isfinite(le):
            r.error(
                key,
                f"latency threshold {go_float(le)} is not a finite bucket edge: no bucket is written "
                f'le="{go_float(le)}", so every request would read as slow; give a finite edge',
            )
        elif buckets and le not in buckets:
            lower = max((edge for edge in buckets if edge < le), default=None)
            upper = min((edge for edge in buckets if edge > le), default=None)
            near = " or ".join(go_float(edge) for edge in (lower, upper) if edge is not None)
            r.error(
                key,
                f"latency threshold {go_float(le)} is not a bucket edge of {body['histogram']}"
                + (f"; nearest edges: {near}" if near else ""),
            )
        when_matchers = r.matchers((*key[:-1], "when"), when) if when is not None else ()
        result.append(LatencyThreshold(le, when_matchers))
    return tuple(result)


def scraped_edges(r: SpecReader, histogram: str, buckets: tuple[float, ...]) -> tuple[float, ...]:
    """The edges Prometheus holds: the histogram's, less those the scrape profile's relabelings drop.

    The generated tests synthesise bucket series from these, so their inputs look like
    what the stack scrapes.
    """
    dropped = r.profile.dropped(histogram) if r.profile is not None else ()
    return tuple(edge for edge in buckets if edge not in dropped)


def check_dropped_thresholds(
    r: SpecReader,
    base: PathKey,
    histogram: str,
    thresholds: tuple[LatencyThreshold, ...],
    buckets: tuple[float, ...],
) -> None:
    """A threshold on an edge the stack drops matches no series: the SLI reads 100% slow (review X1)."""
    profile = r.profile
    if profile is None or not profile.dropped(histogram):
        return
    kept = scraped_edges(r, histogram, buckets)
    fell = r.get((*base, "on_dropped_edge")) == "next_kept_above"
    for index, threshold in enumerate(thresholds):
        if threshold.le not in profile.dropped(histogram):
            continue
        key: PathKey = (*base, "threshold", index, "le") if _listed(r, base) else (*base, "threshold")
        lower = max((edge for edge in kept if edge < threshold.le), default=None)
        upper = min((edge for edge in kept if edge > threshold.le), default=None)
        near = " or ".join(go_float(edge) for edge in (lower, upper) if edge is not None)
        le = go_float(threshold.le)
        r.error(
            key,
            f"latency threshold {le} is an edge {profile.stack} drops for {histogram}_bucket ({profile.relabeling}), "
            f'so no series has le="{le}" and every request would read as slow: pick a kept edge'
            + (f" (nearest: {near})" if near else "")
            + f", or if your stack keeps it, set scrape_profile.dropped_buckets.{histogram} in project.yaml"
            + ("; on_dropped_edge: next_kept_above finds no kept edge above it" if upper is None and fell else ""),
        )


def fall_back_from_dropped(
    r: SpecReader,
    base: PathKey,
    body: dict[str, Any],
    thresholds: tuple[LatencyThreshold, ...],
    buckets: tuple[float, ...],
) -> tuple[LatencyThreshold, ...]:
    """With ``on_dropped_edge: next_kept_above``, a threshold on a dropped edge reads the nearest kept edge above.

    The spec states it (the default stays an error), so a library can compile on a stack that
    drops one of its edges without the SLI reading 100% slow; the threshold becomes more
    lenient, which the note, the runbook and ``explain`` say. With no kept edge above, the
    threshold is left as it is and ``check_dropped_thresholds`` refuses it.
    """
    profile = r.profile
    histogram = str(body["histogram"])
    if body.get("on_dropped_edge") != "next_kept_above" or profile is None or not profile.dropped(histogram):
        return thresholds
    kept = scraped_edges(r, histogram, buckets)
    result = []
    for index, threshold in enumerate(thresholds):
        upper = min((edge for edge in kept if edge > threshold.le), default=None)
        if threshold.le not in profile.dropped(histogram) or upper is None:
            result.append(threshold)
            continue
        key: PathKey = (*base, "threshold", index, "le") if _listed(r, base) else (*base, "threshold")
        fallback = EdgeFallback(threshold.le, profile.stack, profile.relabeling, histogram, r.doc.position(key))
        result.append(LatencyThreshold(upper, threshold.when, fallback))
    return tuple(result)


def _listed(r: SpecReader, base: PathKey) -> bool:
    return isinstance(r.get((*base, "threshold")), list)


def check_sli_selects(r: SpecReader, sli: SLI | None, slice_: Slice) -> None:
    """Selectors that cannot mean what they say: a matcher on le, uncovered thresholds, bad beyond total."""
    if any(matcher.name == "le" for matcher in slice_.matchers):
        r.error(("slice", "selector"), f"slice.selector {_LE_PROBLEM}")
    if isinstance(sli, LatencySLI | QuantileSLI):
        kind = "latency" if isinstance(sli, LatencySLI) else "quantile"
        if any(matcher.name == "le" for matcher in sli.matchers if matcher not in slice_.matchers):
            r.error(("sli", kind, "selector"), f"sli.{kind}.selector {_LE_PROBLEM}")
    if isinstance(sli, LatencySLI):
        for index, threshold in enumerate(sli.thresholds):
            if any(matcher.name == "le" for matcher in threshold.when):
                r.error(("sli", "latency", "threshold", index, "when"), f"a threshold's 'when' {_LE_PROBLEM}")
        check_threshold_coverage(r, sli)
    if isinstance(sli, RatioSLI):
        check_subset_of_total(r, "bad", sli.bad, sli.total)
        check_subset_of_total(r, "good", sli.good, sli.total)
    check_slice_labels_not_pinned(r, sli, slice_)


def _pinning_places(r: SpecReader, sli: SLI | None, slice_: Slice) -> list[tuple[str, tuple[Matcher, ...]]]:
    """Where the spec's selectors are written, with their matchers: slice.selector, the component's
    job matchers, and the SLI's own selectors (without the slice matchers added to them)."""
    component = r.profile.component(slice_.component) if r.profile is not None and slice_.component else None
    places: list[tuple[str, tuple[Matcher, ...]]] = [
        (f"slice.component '{slice_.component}' (scrape profile)", tuple(component or ())),
        ("slice.selector", tuple(m for m in slice_.matchers if m not in (component or ()))),
    ]
    if isinstance(sli, RatioSLI):
        for field, written in (("bad", sli.bad), ("good", sli.good), ("total", sli.total)):
            places.extend((f"sli.ratio.{field}", selector.matchers) for selector in written)
    elif isinstance(sli, LatencySLI | QuantileSLI):
        places.append((f"sli.{'latency' if isinstance(sli, LatencySLI) else 'quantile'}.selector", sli.matchers))
    elif sli is not None:
        try:
            selectors = promql.analyse(sli.expr).selectors
        except promql.PromQLError:
            selectors = ()  # reported where the expression is read
        places.extend(("the SLI's expression", matchers) for _, matchers in selectors)
    return places


def check_slice_labels_not_pinned(r: SpecReader, sli: SLI | None, slice_: Slice) -> None:
    """Slice labels the selectors all pin to one value each (by: [job] with job="kube-dns") give one slice:
    every slice of the generated tests would be the same series, and in production nothing is split.

    One pinned label among free ones is kept: it carries a constant into every alert (namespace:
    kube-system beside container), and the free labels still tell the slices apart.
    """
    places = _pinning_places(r, sli, slice_)
    pins = []
    for label in slice_.by:
        found = next(
            (
                (m, where)
                for where, matchers in places
                for m in matchers
                if m.name == label and m.op == "=" and m.value != ""
            ),
            None,
        )
        if found is None:
            return
        pins.append(found)
    if pins:
        shown = ", ".join(f"{m.render()} in {where}" for m, where in pins)
        r.error(
            ("slice", "by"),
            f"every slice label is pinned to one value ({shown}): slicing by labels the selectors pin gives "
            "one slice; slice by a label whose values tell the slices apart, or widen the matcher (=~) if the "
            "slices are its values",
        )


def check_threshold_coverage(r: SpecReader, sli: LatencySLI) -> None:
    """Every histogram series under exactly one ``when``: uncovered ones read 100% slow, shared ones count twice."""
    thresholds = sli.thresholds
    if len(thresholds) < 2 and not (thresholds and thresholds[0].when):
        return
    base: PathKey = ("sli", "latency", "threshold")
    raw = r.get(base)
    written = [str(item.get("when") or "").strip() for item in raw] if isinstance(raw, list) else []
    if any(text not in ("", "{}") and not t.when for text, t in zip(written, thresholds, strict=False)):
        return  # a 'when' that did not parse is reported already
    scope = sli.matchers
    whens = [threshold.when for threshold in thresholds]
    when_labels = {matcher.name for when in whens for matcher in when}

    def shown(labels: dict[str, str]) -> str:
        return matchsets.describe({k: v for k, v in labels.items() if k in when_labels}, whens)

    gap = matchsets.find([scope, *whens], functools.partial(_only_in_first, scope, whens))
    if gap is not None:
        r.error(
            base,
            f"the latency thresholds leave series with {shown(gap)} uncovered: no 'when' matches them, so "
            "every request among them would count as slow (100% bad); add a threshold for them, make the "
            "last 'when' a catch-all with != or !~, or exclude them in sli.latency.selector",
        )
    for later in range(1, len(whens)):
        for earlier in range(later):
            pair = (scope, whens[earlier], whens[later])
            both = matchsets.find(pair, functools.partial(_selected_by_all, pair))
            if both is not None:
                r.error(
                    (*base, later, "when") if whens[later] else (*base, later),
                    f"threshold[{later}].when overlaps threshold[{earlier}].when on series with {shown(both)}: "
                    "their fast requests would be counted by both thresholds (good events twice); make the "
                    "'when' matchers exclusive",
                )
                break


def check_subset_of_total(
    r: SpecReader, side: str, selectors: tuple[Selector, ...], total: tuple[Selector, ...]
) -> None:
    """Bad (or good) events of a metric the total also reads must be among the total's series."""
    raw = r.get(("sli", "ratio", side))
    listed = isinstance(raw, list) and len(raw) == len(selectors)
    for index, events in enumerate(selectors):
        same = [selector.matchers for selector in total if selector.metric == events.metric]
        if events.metric is None or not same:
            continue  # another metric (errors_total over requests_total): nothing to compare
        outside = matchsets.find([events.matchers, *same], functools.partial(_only_in_first, events.matchers, same))
        if outside is not None:
            r.error(
                ("sli", "ratio", side, index) if listed else ("sli", "ratio", side),
                f"sli.ratio.{side} selects {events.metric} series ({matchsets.describe(outside)}) that "
                f"sli.ratio.total does not count: {side} events must be a subset of the total (its matchers "
                "implied by the total's), or the error ratio means nothing (it can pass 100%)",
            )


def check_finite_buckets(r: SpecReader, key: PathKey, edges: tuple[float, ...]) -> None:
    if any(not math.isfinite(edge) for edge in edges):
        r.error(key, "buckets lists the finite bucket edges only: the +Inf bucket is always there")


def read_unit(r: SpecReader, sli: SLI | None) -> Unit:
    explicit = r.data.get("unit")
    if explicit is not None:
        if isinstance(sli, RatioSLI | LatencySLI | StateSLI) and explicit != "ratio":
            r.error(
                ("unit",),
                "the value of a ratio, latency or state SLI is an error ratio: unit must be 'ratio'",
            )
        unit: Unit = explicit
        return unit
    if isinstance(sli, StalenessSLI):
        return "seconds"
    if isinstance(sli, GaugeSLI):
        return "count"
    if isinstance(sli, QuantileSLI):
        return "seconds"
    return "ratio"


def _selected_by_all(selectors: Sequence[Sequence[Matcher]], labels: Mapping[str, str]) -> bool:
    return all(matchsets.selects(labels, selector) for selector in selectors)


def _only_in_first(first: Sequence[Matcher], others: Sequence[Sequence[Matcher]], labels: Mapping[str, str]) -> bool:
    return matchsets.selects(labels, first) and not any(matchsets.selects(labels, other) for other in others)
