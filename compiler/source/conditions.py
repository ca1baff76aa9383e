"""``assumes`` and ``confirmed_by``: the conditions a spec's pages need, read with positions.

Both are PromQL that returns a series per slice while the condition holds, read like the
SLI's own expressions (the slice's matchers added, the slice labels kept, raw ranges of at
most 5m). Names are unique across both lists: each becomes the ``condition`` label of the
series that records it, and an assumption's name is the ``assumption`` label of its ticket.
"""

from __future__ import annotations

from compiler.model import (
    DEFAULT_ASSUMPTION_FOR_MS,
    SLI,
    Condition,
    GaugeSLI,
    LatencySLI,
    QuantileSLI,
    RatioSLI,
    Slice,
    StalenessSLI,
)
from compiler.promql import Matcher, analyse
from compiler.source.load import PathKey
from compiler.source.reader import SpecReader
from compiler.source.schema import suggest

_SECTIONS = ("assumes", "confirmed_by")


def read_conditions(
    r: SpecReader, slice_: Slice, sli: SLI | None
) -> tuple[tuple[Condition, ...], tuple[Condition, ...]]:
    """The spec's assumptions and confirmations, each checked; a bad entry is reported and left out."""
    seen: dict[str, str] = {}
    found: dict[str, list[Condition]] = {section: [] for section in _SECTIONS}
    for section in _SECTIONS:
        if not r.readable(section):
            continue
        items: list[dict[str, str]] = list(r.data.get(section, []))  # type: ignore[call-overload]
        for index, item in enumerate(items):
            key: PathKey = (section, index)
            name = str(item["name"])
            if name in seen:
                r.error((*key, "name"), f"condition name '{name}' is already used in {seen[name]}: each needs its own")
                continue
            seen[name] = f"{section}[{index}]"
            condition = _condition(r, slice_, section, key, item)
            if condition is not None and sli is not None:
                _check_independent(r, key, condition, sli)
            if condition is not None:
                found[section].append(condition)
    return tuple(found["assumes"]), tuple(found["confirmed_by"])


def sli_metrics(sli: SLI) -> set[str]:
    """The metric names the SLI reads (the histogram's series by their suffixed names)."""
    if isinstance(sli, RatioSLI):
        return {s.metric for s in (*sli.bad, *sli.good, *sli.total) if s.metric}
    if isinstance(sli, LatencySLI):
        own = {f"{sli.histogram}_bucket", f"{sli.histogram}_count"}
        return own | {s.metric for s in (*sli.errors, *sli.total) if s.metric}
    if isinstance(sli, QuantileSLI):
        return {f"{sli.histogram}_bucket"}
    exprs = [sli.expr]
    if isinstance(sli, GaugeSLI) and sli.absent_as_zero_while:
        exprs.append(sli.absent_as_zero_while)
    if isinstance(sli, StalenessSLI) and sli.timestamp:
        exprs.append(sli.timestamp)
    return {name for expr in exprs for name, _ in analyse(expr).selectors if name}


def _check_independent(r: SpecReader, key: PathKey, condition: Condition, sli: SLI) -> None:
    """A condition must not read the SLI's series: the outage that moves the SLI would break it too,
    and the page would wait for a condition its own incident took away."""
    shared = sorted({name for name, _ in analyse(condition.expr).selectors if name} & sli_metrics(sli))
    if shared:
        r.error(
            (*key, "expr"),
            f"{key[0]}[{key[1]}].expr reads {', '.join(shared)}, which the SLI reads too: the outage that moves "
            "the SLI would also change the condition and hold back the page it should let through; read "
            "other evidence (e.g. scrape_samples_scraped for a target's reachability, kube-state-metrics "
            "for pods)",
        )


def _matchers(r: SpecReader, slice_: Slice, key: PathKey, component: str | None) -> tuple[Matcher, ...]:
    """The slice's matchers, with another component's job matchers in place of the slice's own."""
    if component is None or r.profile is None:
        return slice_.matchers
    found = r.profile.component(component)
    if found is None:
        names = sorted(name for name, _ in r.profile.components)
        r.error(
            (*key, "component"),
            f"unknown component '{component}' in scrape profile {r.profile.stack} (components: "
            f"{', '.join(names) or 'none'}){suggest(component, names)}",
        )
        return slice_.matchers
    own = r.profile.component(slice_.component) if slice_.component is not None else None
    replaced = {matcher.name for matcher in own or ()}
    return (*found, *(m for m in slice_.matchers if m.name not in replaced))


def _condition(r: SpecReader, slice_: Slice, section: str, key: PathKey, item: dict[str, str]) -> Condition | None:
    failed = r.failed
    matchers = _matchers(r, slice_, key, item.get("component"))
    expr = r.expression((*key, "expr"), matchers, slice_.source_labels)
    if "time()" in expr.replace(" ", ""):
        r.error(
            (*key, "expr"), f"{section}[{key[1]}].expr reads time(): a condition is a fact seen in series, not a clock"
        )
    if r.failed and not failed:
        return None
    if not analyse(expr).selectors:
        r.error(
            (*key, "expr"), f"{section}[{key[1]}].expr reads no series: a constant cannot tell one cluster from another"
        )
        return None
    if section == "assumes":
        return Condition(
            kind="assumes",
            name=item["name"],
            expr=expr,
            why=item["why"].strip(),
            otherwise=item["otherwise"].strip(),
            for_ms=r.duration((*key, "for"), DEFAULT_ASSUMPTION_FOR_MS),
            position=r.doc.key_position(key),
        )
    return Condition(
        kind="confirmed_by", name=item["name"], expr=expr, why=item["why"].strip(), position=r.doc.key_position(key)
    )
