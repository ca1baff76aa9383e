"""The ``slice`` section: labels every alert is judged per, the slice selector and the joins."""

from __future__ import annotations

from compiler import promql
from compiler.model import (
    Join,
    Selector,
    Slice,
)
from compiler.promql import Matcher, PromQLError
from compiler.source.load import PathKey
from compiler.source.reader import SpecReader, dotted
from compiler.source.schema import suggest


def read_slice(r: SpecReader) -> Slice:
    raw = r.data["slice"]
    by = r.label_names(("slice", "by"), raw["by"])
    for index, label in enumerate(by):
        r.check_not_reserved(("slice", "by", index), label)
    matchers = r.matchers(("slice", "selector"), raw.get("selector"))
    for matcher in matchers:
        if matcher.name == "__name__":
            r.error(("slice", "selector"), "slice.selector must not name a metric; give only label matchers")
    matchers = (*read_component(r, raw.get("component"), matchers), *matchers)
    raw_joins = raw.get("join", [])
    joins = []
    for index, join_raw in enumerate(raw_joins if isinstance(raw_joins, list) else [raw_joins]):
        key: PathKey = ("slice", "join", index) if isinstance(raw_joins, list) else ("slice", "join")
        try:
            promql.check_bounds(join_raw["metric"])
            info_name, info_matchers = promql.parse_selector(join_raw["metric"])
        except PromQLError as exc:
            r.error((*key, "metric"), f"invalid PromQL selector in slice.join metric: {exc}")
            info_name, info_matchers = None, ()
        on = r.label_names((*key, "on"), join_raw["on"])
        labels = r.label_names((*key, "labels"), join_raw["labels"])
        check_join_labels_not_matched_on(r, key, on, labels)
        joins.append(Join(Selector(info_name, info_matchers), on, labels))
    cardinality = raw.get("cardinality", {})
    for label in cardinality:
        if label not in by:
            r.error(("slice", "cardinality"), f"slice.cardinality names '{label}', which is not in slice.by")
    optional = r.label_names(("slice", "optional_labels"), raw.get("optional_labels", []))
    for index, label in enumerate(optional):
        if label not in by:
            r.error(
                ("slice", "optional_labels", index),
                f"slice.optional_labels names '{label}', which is not in slice.by",
            )
    return Slice(
        by=by,
        matchers=tuple(m for m in matchers if m.name != "__name__"),
        joins=tuple(joins),
        cardinality=tuple(sorted((str(k), int(v)) for k, v in cardinality.items())),
        component=raw.get("component"),
        component_at=r.doc.position(("slice", "component")) if raw.get("component") is not None else None,
        by_at=r.doc.key_position(("slice", "by")),
        optional_labels=optional,
    )


def check_join_labels_not_matched_on(r: SpecReader, key: PathKey, on: tuple[str, ...], labels: tuple[str, ...]) -> None:
    """A label the join matches on is already on both sides: PromQL refuses it in group_left as well."""
    for index, label in enumerate(labels):
        if label in on:
            r.error(
                (*key, "labels", index),
                f"{dotted((*key, 'labels', index))} '{label}' is also in on: the join matches on it, so it "
                "cannot also attach it (Prometheus rejects a label in both on(...) and group_left(...)); "
                "remove it from labels",
            )


def read_component(r: SpecReader, component: str | None, selector: tuple[Matcher, ...]) -> tuple[Matcher, ...]:
    """The job matchers of the component the spec names, from the project's scrape profile.

    They are added to every series the SLI reads, as the slice selector is, so switching
    the stack in project.yaml changes them without editing the spec. A spec that also
    matches on job would pin one stack's job value and contradict the profile.
    """
    if component is None:
        return ()
    key = ("slice", "component")
    profile = r.profile
    if profile is None:
        r.error(
            key,
            f"slice.component '{component}' needs the stack the rules run on: set scrape_profile in "
            "project.yaml (e.g. scrape_profile: {stack: kube-prometheus-stack}), or give the job in "
            "slice.selector instead",
        )
        return ()
    found = profile.component(component)
    if found is None:
        names = sorted(name for name, _ in profile.components)
        r.error(
            key,
            f"unknown component '{component}' in scrape profile {profile.stack} (components: "
            f"{', '.join(names) or 'none'}){suggest(component, names)}; or define it in project.yaml "
            "scrape_profile.components",
        )
        return ()
    shown = promql.render_selector(None, found)
    for matcher in selector:
        if matcher.name in {m.name for m in found}:
            r.error(
                ("slice", "selector"),
                f"slice.selector matches on {matcher.name} and slice.component "
                f"'{component}' gives it from the scrape profile ({profile.stack}: {shown}): drop the "
                f"{matcher.name} matcher, so switching the stack changes it",
            )
    return found


_SLI_SELECTOR_FIELDS = ("selector", "bad", "good", "total", "errors", "expr")


def check_sli_leaves_component_labels(r: SpecReader) -> None:
    """The SLI's own selectors must not match on the labels the component gives (job), like slice.selector.

    A job matcher there would pin one stack's job value next to the profile's, so the SLI
    would read nothing on the other stack.
    """
    component = r.get(("slice", "component"))
    found = r.profile.component(component) if r.profile is not None and isinstance(component, str) else None
    sli = r.get(("sli",))
    if not found or not isinstance(sli, dict) or len(sli) != 1:
        return
    labels = {matcher.name for matcher in found}
    kind, body = next(iter(sli.items()))
    for field in _SLI_SELECTOR_FIELDS:
        value = body.get(field) if isinstance(body, dict) else None
        texts: list[tuple[PathKey, str]] = [((field,), value)] if isinstance(value, str) else []
        if isinstance(value, list):
            texts = [((field, index), text) for index, text in enumerate(value) if isinstance(text, str)]
        for where, text in texts:
            named = _matched_labels(f"slo_placeholder{text.strip()}" if text.strip().startswith("{") else text)
            for label in sorted(named & labels):
                r.error(
                    ("sli", kind, *where),
                    f"sli.{kind}.{field} matches on {label} and slice.component '{component}' gives it from the "
                    f"scrape profile ({r.profile.stack if r.profile else ''}: {promql.render_selector(None, found)}):"
                    f" drop the {label} matcher, so switching the stack changes it",
                )


def _matched_labels(text: str) -> set[str]:
    """Label names any selector of ``text`` matches on; none when it does not parse (reported elsewhere)."""
    try:
        promql.check_bounds(text)
        return {matcher.name for _, matchers in promql.analyse(text).selectors for matcher in matchers}
    except PromQLError:
        return set()
