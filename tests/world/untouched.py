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
any ALERTS sample or premise, so ``read_by`` keeps only the metric names something reads
(promtool's cost is mostly loading the input series, not evaluating the rules).
"""

from __future__ import annotations

from collections import defaultdict
from collections.abc import Iterable
from pathlib import Path

import yaml

from compiler import promql
from tests.world.timeline import Series

# A rule that reads these reads every alert of every file: never judged as untouched.
_ALERT_SERIES = frozenset({"ALERTS", "ALERTS_FOR_STATE"})


def raw_reads(rule_file: Path) -> frozenset[str] | None:
    """The raw metric names the file's rules select (its own recorded series left out); None: any."""
    document = yaml.safe_load(rule_file.read_text(encoding="utf-8"))
    rules = [rule for group in document["groups"] for rule in group["rules"]]
    recorded = {rule["record"] for rule in rules if "record" in rule}
    names: set[str] = set()
    for rule in rules:
        for name, _matchers, _range in promql.selector_reads(rule["expr"]):
            if name is None or name in _ALERT_SERIES:
                return None
            if name not in recorded:
                names.add(name)
    return frozenset(names)


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
