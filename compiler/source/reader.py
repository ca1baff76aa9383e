"""The spec reader: typed access to one schema-valid SLO document, with every problem positioned.

Each section module (``slice``, ``sli``, ``objective``, ``ranges``, ``scenarios``) reads its
part of the spec through a ``SpecReader``; the reader parses durations, matchers, selectors
and expressions, and reports problems at the value at fault.
"""

from __future__ import annotations

import re
from typing import Any

from compiler import promql
from compiler.diagnostics import Diagnostics
from compiler.model import (
    SLO,
    Selector,
    Team,
)
from compiler.model.labels import reserved_because
from compiler.model.stacks import ScrapeProfile
from compiler.model.windows import MINUTE
from compiler.promql import Matcher, PromQLError, bounds, synth
from compiler.source.load import Document, PathKey
from compiler.source.spec_types import SLOSpec

RAW_RANGE_LIMIT_MS = 5 * MINUTE
# What ``SpecReader.expression`` gives for an expression past the parse bounds, whose error is
# reported: checks that read the expression further see an empty vector, never the text itself.
TOO_LARGE = "vector(0)"


def parse_percent(value: Any) -> float | None:
    """'99.5%' or 99.5 -> 99.5 (percent); None when not a number."""
    if isinstance(value, bool):
        return None
    if isinstance(value, int | float):
        return float(value)
    if isinstance(value, str):
        match = re.fullmatch(r"\s*([0-9]+(?:\.[0-9]+)?)\s*%\s*", value)
        if match:
            return float(match.group(1))
    return None


def dotted(key: PathKey) -> str:
    out = ""
    for part in key:
        out += f"[{part}]" if isinstance(part, int) else (f".{part}" if out else str(part))
    return out


class SpecReader:
    """Reads one SLO document for the section readers, reporting every semantic problem.

    Readers run only on sections that passed the schema (``readable``).
    """

    def __init__(
        self,
        document: Document,
        teams: dict[str, Team],
        diagnostics: Diagnostics,
        broken: frozenset[str] = frozenset(),
        profile: ScrapeProfile | None = None,
    ) -> None:
        self.doc = document
        self.data: SLOSpec = document.data
        self.teams = teams
        self.diagnostics = diagnostics
        self.broken = broken
        self.profile = profile  # the project's scrape profile: component job matchers, dropped edges
        self.failed = bool(broken)  # a spec with a schema error is checked, never built
        self.draft: SLO | None = None  # a spec that did not build, for the checks that need only part of it

    def readable(self, *sections: str) -> bool:
        """Whether these top-level sections passed their schema, so their readers may run.

        Sections that failed it were reported by the schema check; the rest of the spec is
        still checked, so one run shows every problem.
        """
        return "" not in self.broken and not self.broken.intersection(sections)

    def error(self, key: PathKey, message: str, *, at_key: bool = False) -> None:
        position = self.doc.key_position(key) if at_key else self.doc.position(key)
        self.diagnostics.error(position, message)
        self.failed = True

    def duration(self, key: PathKey, default: int | None = None) -> int:
        value = self.get(key)
        if value is None:
            return default if default is not None else 0
        parsed = promql.parse_duration(str(value))
        if parsed is None:
            self.error(key, f"{dotted(key)} is not a Prometheus duration: {value!r} (write e.g. 5m, 1h, 30d)")
            return default or 0
        return parsed

    def get(self, key: PathKey) -> Any:
        node: Any = self.data
        for part in key:
            if isinstance(node, dict) and isinstance(part, str):
                node = node.get(part)
            elif isinstance(node, list) and isinstance(part, int) and part < len(node):
                node = node[part]
            else:
                return None
        return node

    def label_names(self, key: PathKey, names: list[str]) -> tuple[str, ...]:
        for index, name in enumerate(names):
            if not promql.is_valid_label_name(name):
                self.error((*key, index), f"invalid Prometheus label name '{name}'")
        return tuple(names)

    def within_bounds(self, key: PathKey, text: str, what: str = "PromQL") -> bool:
        """Whether ``text`` is within the length, nesting and term bounds, measured before it is parsed
        (``promql.bounds``: past them the parser's memory and the compiler's tree walks grow without bound)."""
        try:
            promql.check_bounds(text)
        except PromQLError as exc:
            self.error(key, f"{what} in {dotted(key)} is too large to parse: {exc}")
            return False
        return True

    def matchers(self, key: PathKey, text: str | None) -> tuple[Matcher, ...]:
        """Parse a bare matcher set such as '{job="apiserver"}'."""
        if text is None or not text.strip() or not self.within_bounds(key, text, "the selector"):
            return ()
        bare = text.strip().startswith("{")
        try:
            # A bare matcher set may match the empty string ({scope=~"resource|"}), which PromQL
            # only allows next to a metric name, so parse it with a placeholder name.
            name, matchers = promql.parse_selector(f"slo_placeholder{text.strip()}" if bare else text)
        except PromQLError as exc:
            self.error(key, f"invalid PromQL selector in {dotted(key)}: {exc}")
            return ()
        if bare:
            name = None
        if name is not None:
            matchers = (Matcher("__name__", "=", name), *matchers)
        return self.checked_matchers(key, matchers)

    def checked_matchers(self, key: PathKey, matchers: tuple[Matcher, ...]) -> tuple[Matcher, ...]:
        for matcher in matchers:
            if matcher.name != "__name__" and not promql.is_valid_label_name(matcher.name):
                self.error(key, f"invalid Prometheus label name '{matcher.name}' in {dotted(key)}")
            self.check_regex_has_values(key, matcher)
        return matchers

    def check_regex_has_values(self, key: PathKey, matcher: Matcher) -> None:
        """A regex matcher no label value passes selects nothing, and the tests need a series it selects."""
        why = synth.unsatisfiable(matcher)
        if why is not None:
            self.error(key, f"{dotted(key)}: {why}")

    def selectors(self, key: PathKey, slice_matchers: tuple[Matcher, ...]) -> tuple[Selector, ...]:
        value = self.get(key)
        if value is None:
            return ()
        texts = [value] if isinstance(value, str) else list(value)
        if len(texts) > bounds.MAX_SELECTORS:
            self.error(
                key,
                f"{dotted(key)} lists {len(texts):,} selectors, more than the limit of {bounds.MAX_SELECTORS}: "
                "they are summed in one expression; select the series with a regex matcher instead",
            )
            return ()
        result = []
        for index, text in enumerate(texts):
            where = key if isinstance(value, str) else (*key, index)
            if not self.within_bounds(where, text, "the selector"):
                continue
            try:
                name, matchers = promql.parse_selector(text)
            except PromQLError as exc:
                self.error(where, f"invalid PromQL selector in {dotted(key)}: {exc}")
                continue
            if name is None:
                self.error(where, f"{dotted(key)}: the selector must name a metric: {text!r}")
                continue
            if not promql.is_valid_metric_name(name):
                self.error(where, f"invalid metric name '{name}' in {dotted(key)}")
            result.append(Selector(name, (*self.checked_matchers(where, matchers), *slice_matchers)))
        size = sum(len(promql.render_selector(s.metric, s.matchers)) for s in result)
        if size > bounds.SPEC.chars:
            self.error(
                key,
                f"{dotted(key)} comes to {size:,} characters with the slice's matchers added to each selector, "
                f"longer than the {bounds.SPEC.chars:,}-character limit of one expression",
            )
            return ()
        return tuple(result)

    def expression(self, key: PathKey, slice_matchers: tuple[Matcher, ...], keep: tuple[str, ...]) -> str:
        """A user-written PromQL expression: parse it, bound its raw ranges, keep the slice labels."""
        text = str(self.get(key))
        if not self.within_bounds(key, text):
            return TOO_LARGE
        try:
            analysis = promql.analyse(text)
        except PromQLError as exc:
            self.error(key, f"invalid PromQL in {dotted(key)}: {exc}")
            return text
        for selector_name, matchers in analysis.selectors:
            for matcher in matchers:
                if not promql.is_valid_label_name(matcher.name):
                    self.error(key, f"invalid Prometheus label name '{matcher.name}' in {dotted(key)}")
                self.check_regex_has_values(key, matcher)
            if selector_name is not None and not promql.is_valid_metric_name(selector_name):
                self.error(key, f"invalid metric name '{selector_name}' in {dotted(key)}")
        for range_ms in analysis.ranges_ms:
            if range_ms > RAW_RANGE_LIMIT_MS:
                self.error(
                    key,
                    f"{dotted(key)} reads raw series over {promql.format_duration(range_ms)}; rules that read "
                    "raw series may use at most 5m (longer windows are built from the SLO's recorded series)",
                )
        if analysis.pinned_ms:
            self.error(
                key,
                f"{dotted(key)} pins a selector to a fixed time (@ {analysis.pinned_ms[0] / 1000:g}): its value "
                "would never change, so its alerts could never follow the signal; drop the @ modifier",
            )
        lost = promql.labels_lost(text, keep)
        if lost:
            self.error(
                key,
                f"{dotted(key)} drops slice label(s) {', '.join(lost)} in an aggregation; "
                "keep them in every 'by (...)' so each alert fires per slice",
            )
        if not slice_matchers:
            return text
        injected = promql.inject_matchers(text, slice_matchers)
        if len(injected) > bounds.BACKSTOP.chars:
            self.error(
                key,
                f"{dotted(key)} comes to {len(injected):,} characters with the slice's matchers added to each "
                f"selector, longer than the {bounds.BACKSTOP.chars:,}-character limit of what the compiler builds",
            )
            return TOO_LARGE
        return injected

    def check_not_reserved(self, key: PathKey, label: str) -> None:
        """A slice label the rules or routes also set would be overwritten, forking or hijacking alerts."""
        why = reserved_because(label)
        if why is not None:
            self.error(
                key,
                f"slice label '{label}' is reserved ({why}): as a slice label it would be overwritten, "
                "collapsing slices into duplicate series, or would misroute alerts; slice by another label, "
                "or rename it at the source (metric_relabel_configs, or label_replace in the expression)",
            )
