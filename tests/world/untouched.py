"""What a data set's verdict can depend on: the rule files a fault can change, and the series anything reads.

promtool evaluates a rule from the samples of the series it selects and nothing else. A rule
file whose every raw series is, sample for sample, the same in an incident's data as in the
day-one data (over the incident's minutes) therefore raises exactly what it raises on day one,
minute by minute; day one asserts that it raises nothing (no alert pending or firing from the
first rate window, no page from minute 0). Judging such a file again in the incident proves
nothing new and costs promtool the most: most incidents touch a few metric families, while
every file with a live page was judged (38 of 88). A file that reads a series the fault
changes, that raises an expected alert, that reads ALERTS, or whose selector names no metric
is always judged.

The same reasoning drops series: a series no judged rule and no premise selects cannot change
any ALERTS sample or premise, so ``selected_by`` keeps only the series some selector matches, on
its metric name and every label matcher (histogram buckets on an ``le`` no rule reads, ``up`` of
jobs no rule names). promtool's cost is mostly parsing and loading the input series, not
evaluating the rules: on day one this halves the series (29,775 to 13,794 on kube-prometheus).
A regular expression Python cannot compile counts as matching everything (RE2 and Python agree
on the constructs the library uses; a disagreement may only keep a series, never drop one that
a compilable pattern matches differently, see ``_full_match``).
"""

from __future__ import annotations

import functools
import re
from collections import defaultdict
from collections.abc import Iterable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import yaml

from compiler import promql
from tests.world.timeline import Series

_LOADER: type[yaml.SafeLoader] = getattr(yaml, "CSafeLoader", yaml.SafeLoader)

# A rule that reads these reads every alert of every file: never judged as untouched.
_ALERT_SERIES = frozenset({"ALERTS", "ALERTS_FOR_STATE"})


Selector = tuple[str, tuple[promql.Matcher, ...]]


def raw_selectors(rule_file: Path) -> frozenset[Selector] | None:
    """The raw selectors (metric name, matchers) the file's rules read, its own recorded series left out; None: any."""
    return _raw_selectors(rule_file.read_text(encoding="utf-8"))


@functools.cache
def rule_groups(text: str) -> tuple[dict[str, Any], ...]:
    """A rule file's groups, parsed once per text (shared: read only), with libyaml's safe loader when installed.

    The incidents ask for every file's alerts in each test: pure-Python parsing was 3 s of each.
    """
    document = yaml.load(text, Loader=_LOADER)
    return tuple(document["groups"])


@functools.cache
def _raw_selectors(text: str) -> frozenset[Selector] | None:
    rules: list[dict[str, str]] = [rule for group in rule_groups(text) for rule in group["rules"]]
    recorded = {rule["record"] for rule in rules if "record" in rule}
    found: set[Selector] = set()
    for rule in rules:
        for name, matchers, _range in promql.selector_reads(rule["expr"]):
            if name is None or name in _ALERT_SERIES:
                return None
            if name not in recorded:
                found.add((name, matchers))
    return frozenset(found)


def raw_reads(rule_file: Path) -> frozenset[str] | None:
    """The raw metric names the file's rules select (its own recorded series left out); None: any."""
    found = raw_selectors(rule_file)
    return None if found is None else frozenset(name for name, _matchers in found)


def changed_metrics(incident: Iterable[Series], day_one: Iterable[Series], samples: int) -> set[str]:
    """Metric names whose series differ between the two data sets in their first ``samples`` samples."""
    first: dict[str, dict[tuple[tuple[str, str], ...], tuple[float | None, ...]]] = defaultdict(dict)
    second: dict[str, dict[tuple[tuple[str, str], ...], tuple[float | None, ...]]] = defaultdict(dict)
    for found, data in ((first, incident), (second, day_one)):
        for item in data:
            found[item.name][item.labels] = item.samples[:samples]
    return {name for name in first.keys() | second.keys() if first.get(name) != second.get(name)}


def untouched(rule_files: Iterable[Path], changed: set[str]) -> list[Path]:
    """The files that read no changed metric (and no ALERTS, and no nameless selector)."""
    kept = []
    for path in rule_files:
        reads = raw_reads(path)
        if reads is not None and not reads & changed:
            kept.append(path)
    return kept


@functools.cache
def _pattern(value: str) -> re.Pattern[str] | None:
    try:
        return re.compile(value, re.DOTALL)
    except re.error:
        return None


def _full_match(value: str, text: str) -> bool:
    """Prometheus' anchored RE2 match; a pattern Python cannot compile matches everything (keeps the series)."""
    pattern = _pattern(value)
    return True if pattern is None else pattern.fullmatch(text) is not None


def matches(matcher: promql.Matcher, labels: dict[str, str]) -> bool:
    """Whether a series with these labels meets the matcher (a missing label reads as empty, as in Prometheus)."""
    value = labels.get(matcher.name, "")
    if matcher.op == "=":
        return value == matcher.value
    if matcher.op == "!=":
        return value != matcher.value
    # A pattern Python cannot compile keeps the series whichever way the matcher points.
    if _pattern(matcher.value) is None:
        return True
    return _full_match(matcher.value, value) == (matcher.op == "=~")


@dataclass(frozen=True)
class Selection:
    """The raw selectors something reads, by metric name: a series is kept when one of them matches it."""

    by_name: dict[str, tuple[tuple[promql.Matcher, ...], ...]]

    def keeps(self, item: Series) -> bool:
        alternatives = self.by_name.get(item.name)
        if not alternatives:
            return False
        labels = dict(item.labels)
        labels["__name__"] = item.name
        return any(all(matches(matcher, labels) for matcher in matchers) for matchers in alternatives)


def selected_by(rule_files: Iterable[Path], expressions: Iterable[str]) -> Selection | None:
    """Every raw selector the files' rules and the expressions read; None when one selects any name."""
    found: set[Selector] = set()
    for path in rule_files:
        reads = raw_selectors(path)
        if reads is None:
            return None
        found |= reads
    for expr in expressions:
        for name, matchers, _range in promql.selector_reads(expr):
            if name is None:
                return None
            if name not in _ALERT_SERIES:
                found.add((name, matchers))
    by_name: dict[str, list[tuple[promql.Matcher, ...]]] = defaultdict(list)
    for name, matchers in sorted(found, key=repr):
        by_name[name].append(matchers)
    return Selection({name: tuple(alternatives) for name, alternatives in by_name.items()})


def read_by(rule_files: Iterable[Path], expressions: Iterable[str]) -> frozenset[str] | None:
    """Every raw metric name the files' rules and the expressions select; None when one selects any name."""
    names: set[str] = set()
    for path in rule_files:
        reads = raw_reads(path)
        if reads is None:
            return None
        names |= reads
    for expr in expressions:
        for name, _matchers, _range in promql.selector_reads(expr):
            if name is None:
                return None
            names.add(name)
    return frozenset(names - _ALERT_SERIES)
