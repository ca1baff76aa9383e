"""The ``sli.staleness`` kind: seconds since a timestamp gauge advanced, and the bounds that can judge it.

A hung loop (the kubelet's PLEG, a controller's sync) stops producing observations, so a
quantile or rate over them goes NaN and never alerts. Its last-seen timestamp gauge keeps its
old value instead: ``time() - timestamp`` grows while it is stuck, so only an upper bound can
catch it. The query is written by the compiler (not free-form ``time() - x``) so the generated
tests know which series to feed with a clock.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any, cast

from compiler.model import SLI, Slice, StalenessSLI
from compiler.promql import render_selector
from compiler.source.load import PathKey
from compiler.source.reader import SpecReader
from compiler.text.numbers import go_float

BASE: PathKey = ("sli", "staleness")
RANGE_SECTIONS = ("normal_range", "critical_range")


def read_staleness(r: SpecReader, slice_: Slice, body: Mapping[str, Any]) -> StalenessSLI | None:
    """The staleness SLI over one timestamp gauge selector, the slice selector added.

    With ``while``, a unit is judged only while it has work to do: otherwise it reads 0 (idle,
    not stuck), matched on the slice labels and the fleet's units.
    """
    selectors = r.selectors((*BASE, "timestamp"), slice_.matchers)
    if not selectors:
        return None
    timestamp = render_selector(selectors[0].metric, selectors[0].matchers)
    if "while" not in body:
        return StalenessSLI(f"time() - {timestamp}", body.get("aggregate", "max"), None, timestamp)
    busy = r.expression((*BASE, "while"), slice_.matchers, slice_.source_labels)
    units = r.data.get("fleet", {}).get("units", []) if isinstance(r.data.get("fleet"), Mapping) else []
    on = ", ".join(dict.fromkeys([*slice_.by, *(str(unit) for unit in units)]))
    expr = f"(time() - {timestamp} and on ({on}) ({busy})) or on ({on}) 0 * {timestamp}"
    return StalenessSLI(expr, body.get("aggregate", "max"), None, timestamp, busy)


def check_staleness_bounds(r: SpecReader, sli: SLI | None) -> None:
    """A staleness grows while the gauge is stuck: only a positive max, in seconds, can catch that."""
    if not isinstance(sli, StalenessSLI):
        return
    unit = r.data.get("unit")
    if unit is not None and unit != "seconds" and r.readable("unit"):
        r.error(("unit",), "a staleness SLI is seconds since the timestamp gauge advanced: unit must be 'seconds'")
    data = cast(Mapping[str, Any], r.data)
    for section in RANGE_SECTIONS:
        if isinstance(data.get(section), Mapping) and r.readable(section):
            _check_section(r, section, data[section])


def _check_section(r: SpecReader, section: str, raw: Mapping[str, Any]) -> None:
    for key in ("min", "relative"):
        if key in raw:
            r.error(
                (section, key),
                f"{section}.{key} cannot detect staleness: a stuck timestamp gauge makes the value grow without "
                f"limit, and a healthy one keeps it near 0; drop {key} and bound how stale it may get with "
                f"{section}.max (e.g. 180 for 3 minutes)",
                at_key=True,
            )
    maximum = raw.get("max")
    if maximum is None:
        r.error(
            (section,),
            f"{section} of a staleness SLI needs a max: the seconds the timestamp gauge may go without "
            "advancing before it alerts (e.g. 180 for 3 minutes)",
            at_key=True,
        )
    elif isinstance(maximum, int | float) and not isinstance(maximum, bool) and maximum <= 0:
        r.error(
            (section, "max"),
            f"{section}.max {go_float(float(maximum))} would fire on every healthy gauge: even one that advances "
            "every scrape is seconds old when a rule reads it; give the seconds it may go without advancing, "
            "above its update interval (e.g. 180 for 3 minutes)",
        )
