"""The ``slice`` section: labels every alert is judged per, the slice selector and the joins."""

from __future__ import annotations

from compiler import promql
from compiler.model import (
    Join,
    Selector,
    Slice,
)
from compiler.promql import PromQLError
from compiler.source.load import PathKey
from compiler.source.reader import SpecReader


def read_slice(r: SpecReader) -> Slice:
    raw = r.data["slice"]
    by = r.label_names(("slice", "by"), raw["by"])
    for index, label in enumerate(by):
        r.check_not_reserved(("slice", "by", index), label)
    matchers = r.matchers(("slice", "selector"), raw.get("selector"))
    for matcher in matchers:
        if matcher.name == "__name__":
            r.error(("slice", "selector"), "slice.selector must not name a metric; give only label matchers")
    raw_joins = raw.get("join", [])
    joins = []
    for index, join_raw in enumerate(raw_joins if isinstance(raw_joins, list) else [raw_joins]):
        key: PathKey = ("slice", "join", index) if isinstance(raw_joins, list) else ("slice", "join")
        try:
            info_name, info_matchers = promql.parse_selector(join_raw["metric"])
        except PromQLError as exc:
            r.error((*key, "metric"), f"invalid PromQL selector in slice.join metric: {exc}")
            info_name, info_matchers = None, ()
        on = r.label_names((*key, "on"), join_raw["on"])
        labels = r.label_names((*key, "labels"), join_raw["labels"])
        joins.append(Join(Selector(info_name, info_matchers), on, labels))
    cardinality = raw.get("cardinality", {})
    for label in cardinality:
        if label not in by:
            r.error(("slice", "cardinality"), f"slice.cardinality names '{label}', which is not in slice.by")
    return Slice(
        by=by,
        matchers=tuple(m for m in matchers if m.name != "__name__"),
        joins=tuple(joins),
        cardinality=tuple(sorted((str(k), int(v)) for k, v in cardinality.items())),
    )
