"""The project's ``scrape_profile``: a built-in stack, with per-component and per-histogram overrides, or custom.

Read from the Project document even when it fails its schema elsewhere, so only values of the
right type are taken (the schema check reports the others). A component's matchers are
parsed here, at their position in project.yaml, so a bad selector is reported once, there.
"""

from __future__ import annotations

from typing import Any

from compiler import promql
from compiler.diagnostics import Diagnostics
from compiler.model.stacks import BUILT_IN_STACKS, ScrapeProfile
from compiler.promql import Matcher, PromQLError
from compiler.source.load import Document


def read_scrape_profile(document: Document, diagnostics: Diagnostics) -> ScrapeProfile | None:
    """The profile project.yaml names; None when it names none (specs then cannot name components)."""
    raw = document.data.get("scrape_profile")
    if not isinstance(raw, dict) or raw.get("stack") not in (*BUILT_IN_STACKS, "custom"):
        return None
    stack = str(raw["stack"])
    base = BUILT_IN_STACKS.get(stack, ScrapeProfile(stack, (), (), ""))
    components = dict(base.components)
    components.update(_components(document, raw.get("components"), diagnostics))
    dropped = dict(base.dropped_buckets)
    dropped.update(_dropped(raw.get("dropped_buckets")))
    relabeling = raw.get("relabeling")
    if not isinstance(relabeling, str):
        relabeling = base.relabeling or "scrape_profile.dropped_buckets in project.yaml"
    return ScrapeProfile(
        stack=stack,
        components=tuple(sorted(components.items())),
        dropped_buckets=tuple(sorted((name, edges) for name, edges in dropped.items() if edges)),
        relabeling=relabeling,
    )


def _components(document: Document, raw: Any, diagnostics: Diagnostics) -> dict[str, tuple[Matcher, ...]]:
    """Each component's matchers, a selector such as '{job="coredns"}' that names no metric."""
    result: dict[str, tuple[Matcher, ...]] = {}
    for name, text in (raw if isinstance(raw, dict) else {}).items():
        if not isinstance(text, str):
            continue
        where = document.position(("scrape_profile", "components", name))
        try:
            _, matchers = promql.parse_selector(f"slo_placeholder{text.strip()}")
        except PromQLError as exc:
            diagnostics.error(where, f"invalid selector for component '{name}': {exc}; write e.g. '{{job=\"{name}\"}}'")
            continue
        if not matchers:
            diagnostics.error(where, f"component '{name}' has no matchers: give its job, e.g. '{{job=\"{name}\"}}'")
            continue
        result[str(name)] = tuple(matchers)
    return result


def _dropped(raw: Any) -> dict[str, tuple[float, ...]]:
    result: dict[str, tuple[float, ...]] = {}
    for histogram, edges in (raw if isinstance(raw, dict) else {}).items():
        if isinstance(edges, list):
            numbers = [float(e) for e in edges if isinstance(e, int | float) and not isinstance(e, bool)]
            result[str(histogram).removesuffix("_bucket")] = tuple(sorted(set(numbers)))
    return result
