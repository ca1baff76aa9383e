"""The ``fleet`` section: per-unit signals (nodes, NICs, members) judged per unit as well as per slice.

One unit out of the critical range is that unit's ticket; the slice pages only when many
units are out (``page.units``) or a share of a slice that is large enough (``page.share``
with ``page.min_units``). Every check here keeps "one unit never pages, one bad unit is
still seen" true by construction, and the unit labels real: a label the SLI's series do not
carry (``node`` on node-exporter series) would make every unit one unlabelled series.
"""

from __future__ import annotations

import math

from compiler import promql
from compiler.model import SLI, Fleet, GaugeSLI, LatencySLI, QuantileSLI, Range, RatioSLI, Slice
from compiler.model.labels import reserved_because
from compiler.model.queries import unit_value
from compiler.model.windows import DAY
from compiler.promql import PromQLError
from compiler.source.reader import SpecReader, parse_percent
from compiler.source.spec_types import SLOSpecFleetPage

# Labels that never tell an exporter's units apart, by metric-name prefix, and why (what does instead).
_NOT_CARRIED: tuple[tuple[str, frozenset[str], str], ...] = (
    (
        "node_",
        frozenset({"node", "pod", "namespace"}),
        "node-exporter series do not carry '{label}'; they carry `instance` (the scrape target, host:9100; "
        "kube-prometheus relabels it to the node name) and `device` for NICs",
    ),
    (
        "kube_",
        frozenset({"instance"}),
        "on kube-state-metrics series '{label}' is the kube-state-metrics pod that exports every object, the same "
        "for all of them; the object is in its own label (`node`, `pod`)",
    ),
)


def read_fleet(r: SpecReader, sli: SLI | None, slice_: Slice | None, critical: Range | None) -> Fleet | None:
    """The fleet settings, or None without a ``fleet`` section; every problem is reported at its value."""
    raw = r.data.get("fleet")
    if raw is None or not r.readable("fleet"):
        return None
    units = r.label_names(("fleet", "units"), raw["units"])
    _check_units(r, units, slice_)
    _check_band(r, critical)
    if sli is not None and slice_ is not None and _check_kind(r, sli):
        _check_units_reach(r, sli, slice_, units)
    page = raw["page"]
    page_units = page.get("units")
    if page_units is not None and page_units < 2:
        r.error(
            ("fleet", "page", "units"),
            f"fleet.page.units {page_units} would page for {'one unit' if page_units == 1 else 'no unit at all'}: "
            "a single unit beyond the critical range is its own ticket; give 2 or more units, or a share",
        )
    both = page.get("require") == "both"
    share, min_units = _read_share(r, page, both)
    if page_units is None and "share" not in page:
        r.error(("fleet", "page"), "fleet.page needs units (at least K units out), share (X% of the slice) or both")
    if both and (page_units is None or "share" not in page):
        r.error(
            ("fleet", "page", "require"),
            "fleet.page.require: both needs both units and share (a page only when at least K units are out "
            "and they are at least X% of the slice)",
        )
    unit_for = r.duration(("fleet", "for")) if "for" in raw else None
    if unit_for is not None and unit_for > DAY:
        r.error(("fleet", "for"), f"fleet.for {raw.get('for')} is over 1d, the limit of every `for`")
    return Fleet(units, page_units, share, min_units, both, unit_for)


def _check_units(r: SpecReader, units: tuple[str, ...], slice_: Slice | None) -> None:
    seen: set[str] = set()
    for index, label in enumerate(units):
        key = ("fleet", "units", index)
        why = reserved_because(label)
        if why is not None:
            r.error(
                key,
                f"fleet.units '{label}' is reserved ({why}): the per-unit tickets would carry it and it would be "
                "overwritten or misroute them; name the label that tells units apart in the data (instance, node)",
            )
        if label in seen:
            r.error(key, f"fleet.units names '{label}' twice")
        seen.add(label)
        if slice_ is not None and label in slice_.by:
            r.error(
                key,
                f"fleet.units '{label}' is already a slice label, so each slice would be one unit: name the "
                "labels that tell the units of a slice apart (instance, device, node), not slice.by",
            )


def _check_band(r: SpecReader, critical: Range | None) -> None:
    """The critical range is what each unit is judged by: it must exist, be static and one-sided."""
    if critical is None:
        if "critical_range" not in r.data:
            r.error(
                ("fleet",),
                "fleet judges the critical range per unit, and this spec has none: add a critical_range "
                "(e.g. {max: 0.9}) whose breach by one unit is a ticket and by many a page",
            )
        return
    if critical.relative is not None:
        r.error(
            ("critical_range", "relative"),
            "a fleet's critical range is judged per unit against static bounds; a relative bound compares a "
            "unit with its own past and cannot be counted across units: give min or max instead",
        )
    if critical.min_bad_events is not None:
        r.error(
            ("critical_range", "min_bad_events"),
            "a fleet's critical range is judged per unit, and min_bad_events is a floor on the slice's bad "
            "events: drop it (each unit's own ratio is judged as it is)",
        )
    if critical.minimum is not None and critical.maximum is not None:
        r.error(
            ("critical_range",),
            "a fleet's critical range must have one bound (max or min), so every unit out of it is out on the "
            "same side and the page counts one kind of failure: keep one, or split the spec",
        )


def _check_kind(r: SpecReader, sli: SLI) -> bool:
    """Whether the SLI has a per-unit form: gauges (staleness included), states and ratios with ``bad``."""
    # A staleness SLI is a gauge (``time() - timestamp``) whose unit labels survive like any other's:
    # each unit's age is its own timestamp's, and the generated cases feed one timestamp per unit.
    kind = "latency" if isinstance(sli, LatencySLI) else "quantile" if isinstance(sli, QuantileSLI) else None
    if kind is not None:
        r.error(("fleet",), f"fleet has no per-unit form for a {kind} SLI: use a gauge, state or ratio SLI")
        return False
    if isinstance(sli, RatioSLI) and not sli.bad:
        r.error(("fleet",), "fleet on a ratio SLI needs `bad` (each unit's bad over its own total), not `good`")
        return False
    if isinstance(sli, GaugeSLI) and sli.absent_as_zero_while:
        r.error(
            ("fleet",),
            "fleet cannot judge units of a gauge with absent_as_zero_while: a unit whose counters do not exist "
            "yet has no series to count; drop one of the two",
        )
        return False
    return True


def _check_units_reach(r: SpecReader, sli: SLI, slice_: Slice, units: tuple[str, ...]) -> None:
    """Every unit label must be on the series the SLI reads, and survive to its per-unit value."""
    try:
        expr = unit_value(sli, slice_, units)
        lost = promql.labels_lost(expr, units)
        selectors = promql.analyse(expr).selectors
    except (PromQLError, TypeError):
        return  # the SLI's own problem, reported at the SLI
    joined = set(slice_.joined_labels)
    for index, label in enumerate(units):
        key = ("fleet", "units", index)
        if label in lost:
            r.error(
                key,
                f"fleet.units '{label}' does not reach the SLI's per-unit value (its expression drops it, e.g. "
                "in an aggregation without by or an on (...) match): this SLI has no per-unit label "
                f"'{label}'; keep it in the expression or name a label it keeps",
            )
            continue
        if label in joined:
            continue
        for name, _ in selectors:
            for prefix, absent, why in _NOT_CARRIED:
                if name and name.startswith(prefix) and label in absent:
                    r.error(
                        key,
                        f"fleet.units '{label}' does not tell the units of {name} apart: {why.format(label=label)}. "
                        f"Name that label, or attach '{label}' with a slice.join from an info metric that really "
                        "maps it",
                    )
                    return


def _read_share(r: SpecReader, page: SLOSpecFleetPage, both: bool) -> tuple[float | None, int | None]:
    """The page's share as a fraction, and the fewest units a slice needs before the share can page.

    With ``require: both`` the count already keeps one unit from paging, so ``min_units`` is
    only what the spec gives; alone, a share needs a slice in which one unit stays under it.
    """
    raw_share, min_units = page.get("share"), page.get("min_units")
    if raw_share is None:
        if min_units is not None:
            r.error(("fleet", "page", "min_units"), "fleet.page.min_units applies to a share: give share too")
        return None, None
    percent = parse_percent(raw_share)
    if percent is None or not 0 < percent <= 100 or math.isnan(percent):
        r.error(
            ("fleet", "page", "share"),
            f"fleet.page.share {raw_share!r} must be a percentage above 0% and at most 100% of the slice's "
            "units, e.g. '5%'",
        )
        return None, None
    share = percent / 100
    fewest = math.floor(1 / share) + 1  # the fewest units in which one unit is under the share
    if both:
        if min_units is not None and min_units < 1:
            r.error(("fleet", "page", "min_units"), f"fleet.page.min_units {min_units} must be at least 1")
        return share, min_units
    if min_units is None:
        return share, fewest
    if min_units < fewest:
        r.error(
            ("fleet", "page", "min_units"),
            f"fleet.page.min_units {min_units} lets one unit page: in a slice of {min_units} units one unit is "
            f"{100 / max(1, min_units):.3g}%, at least the share "
            f"{percent:g}%; give {fewest} or more",
        )
        return share, fewest
    return share, min_units
