"""A data set's rule files in a few fixed groups, each judged by promtool in a test file of its own.

promtool's verdicts are kept by the content of a test file and of the rule files it lists
(tests/promtool_runs.py). With every judged file in one test, editing one spec made day one and
every incident that judges it run promtool over all of them again: 174 s of CPU for day one on
the two stacks, 88 s for the incidents. In groups, an edit runs only its own group again.

A group's verdict is the whole file's verdict restricted to it, because nothing a group evaluates
depends on another group:

* A rule reads only the series its selectors match. A file that reads a series another file
  records is put in that file's group, and a file whose rules read ``ALERTS`` or a selector
  with no metric name (which could read any group's series) keeps every file in one group.
* The quiet and page checks read ``ALERTS``: each group's holds only its own alerts, and every
  group runs them, so together they cover every alert, as one test did.
* A check that an alert fires, pends or is raised runs in the group of the file that defines the
  alert (by name, or by ``slo`` for the raising check); one that names no alert keeps one group.
* The premises read only input series: they are a group of their own, with no rule files.

Which group a file is in depends only on its spec's name (``GROUPS`` buckets of a CRC-32), so
adding or editing a spec moves no other file.
"""

from __future__ import annotations

import zlib
from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from pathlib import Path

from compiler import promql
from tests.world import untouched

# Eight groups: an edit re-proves about an eighth of the library. Against four, the world tier's CPU
# after a spec's edit went from 126 s to 89 s (nothing else changed: 50 s), with no verdict kept 261 s
# against 257 s (docs/development.md); more groups load the series many files share (``up``, the node
# series) once a group each, for less and less gain.
GROUPS = 8


@dataclass(frozen=True)
class _File:
    path: Path
    alerts: frozenset[str]
    records: tuple[tuple[str, dict[str, str]], ...]  # (name, the labels the rule sets)
    reads: frozenset[untouched.Selector] | None  # None: ALERTS or a nameless selector


def _file(path: Path) -> _File:
    rules = [rule for group in untouched.rule_groups(path.read_text(encoding="utf-8")) for rule in group["rules"]]
    return _File(
        path,
        frozenset(str(rule["alert"]) for rule in rules if "alert" in rule),
        tuple((str(rule["record"]), dict(rule.get("labels") or {})) for rule in rules if "record" in rule),
        untouched.raw_selectors(path),
    )


def _may_match(matchers: Sequence[promql.Matcher], labels: dict[str, str]) -> bool:
    """Whether a selector can match a recorded series: of its labels only those the rule sets are known."""
    return all(untouched.matches(matcher, labels) for matcher in matchers if matcher.name in labels)


def partition(rule_files: Iterable[Path], groups: int = GROUPS) -> list[list[Path]]:
    """The files in groups that depend on nothing outside themselves, in a fixed order; empty groups left out."""
    files = [_file(path) for path in rule_files]
    if any(each.reads is None for each in files):
        return [[each.path for each in files]] if files else []
    owner = {each.path: zlib.crc32(each.path.name.encode()) % groups for each in files}
    writers: dict[str, list[tuple[Path, dict[str, str]]]] = {}
    for each in files:
        for name, labels in each.records:
            writers.setdefault(name, []).append((each.path, labels))
    for reader in files:
        assert reader.reads is not None
        for name, matchers in reader.reads:
            for writer, labels in writers.get(name, ()):
                if owner[writer] != owner[reader.path] and _may_match(matchers, labels):
                    low, high = sorted((owner[reader.path], owner[writer]))
                    owner = {path: low if group == high else group for path, group in owner.items()}
    return [[each.path for each in files if owner[each.path] == group] for group in sorted(set(owner.values()))]


def alerts(rule_files: Iterable[Path]) -> frozenset[str]:
    """The alert names the files define."""
    return frozenset().union(*(_file(path).alerts for path in rule_files))
