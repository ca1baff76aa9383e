"""The project's ``scrape_profile``: a built-in stack, with per-component and per-histogram overrides, or custom.

Read from the Project document even when it fails its schema elsewhere, so only values of the
right type are taken (the schema check reports the others). A component's matchers are
parsed here, at their position in project.yaml, so a bad selector is reported once, there.
"""

from __future__ import annotations

import re
from typing import Any

from compiler import promql
from compiler.diagnostics import Diagnostics
from compiler.model.stacks import BUILT_IN_STACKS, ScrapeProfile
from compiler.promql import Matcher, PromQLError
from compiler.source.load import Document

_COMPONENT_NAME = re.compile(r"[a-z0-9]([a-z0-9-]{0,61}[a-z0-9])?")


def read_scrape_profile(document: Document, diagnostics: Diagnostics) -> ScrapeProfile | None:
    """The profile project.yaml names; None when it names none (specs then cannot name components)."""
    raw = document.data.get("scrape_profile")
    if not isinstance(raw, dict) or raw.get("stack") not in (*BUILT_IN_STACKS, "custom"):
        return None
    stack = str(raw["stack"])
    base = BUILT_IN_STACKS.get(stack, ScrapeProfile(stack, (), (), ""))
    components = dict(base.components)
    named = _components(document, raw.get("components"), diagnostics)
    components.update(named)
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
        # A component the project names is one it scrapes: its specs compile again.
        unscraped=tuple(item for item in base.unscraped if item[0] not in named),
    )


def _components(document: Document, raw: Any, diagnostics: Diagnostics) -> dict[str, tuple[Matcher, ...]]:
    """Each component's matchers, a selector such as '{job="coredns"}' that names no metric."""
    result: dict[str, tuple[Matcher, ...]] = {}
    for name, text in (raw if isinstance(raw, dict) else {}).items():
        if not isinstance(text, str) or not _COMPONENT_NAME.fullmatch(str(name)):
            continue  # the schema check reports it
        where = document.position(("scrape_profile", "components", name))
        example = f"write e.g. '{{job=\"{name}\"}}'"
        if not text.strip().startswith("{") or "__name__" in text:
            diagnostics.error(where, f"component '{name}' must be label matchers in braces, not a metric; {example}")
            continue
        try:
            promql.check_bounds(text)
            _, matchers = promql.parse_selector(f"slo_placeholder{text.strip()}")
        except PromQLError as exc:
            shown = str(exc).replace("slo_placeholder", "")
            diagnostics.error(where, f"invalid selector for component '{name}': {shown}; {example}")
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
