"""The reasoning that lets an incident leave rule files and series out is exact, not hopeful.

``tests/world/untouched.py`` keeps every rule file that reads a series the fault changed, reads
ALERTS, or selects no metric by name, and every series some rule or check selects.
"""

from __future__ import annotations

from pathlib import Path

import yaml

from tests.world import untouched
from tests.world.timeline import series


def _rules(tmp_path: Path, name: str, *exprs: str) -> Path:
    rules = [{"record": f"{name}:recorded", "expr": exprs[0]}]
    rules += [{"alert": f"Alert{index}", "expr": expr} for index, expr in enumerate(exprs[1:])]
    path = tmp_path / f"{name}.rules.yaml"
    path.write_text(yaml.safe_dump({"groups": [{"name": name, "rules": rules}]}), encoding="utf-8")
    return path


def test_a_file_reading_a_changed_series_is_judged_and_one_reading_none_is_left_to_day_one(tmp_path: Path) -> None:
    day_one = [series("up", {"job": "a"}, [1, 1, 1, 1]), series("errors_total", {"job": "a"}, [0, 1, 2, 3])]
    incident = [series("up", {"job": "a"}, [1, 1, 1, 1]), series("errors_total", {"job": "a"}, [0, 1, 2, 9])]
    assert untouched.changed_metrics(incident, day_one, samples=4) == {"errors_total"}
    assert untouched.changed_metrics(incident, day_one, samples=3) == set()  # differs only after the data ends
    reads_errors = _rules(tmp_path, "errors", "rate(errors_total[5m])", "errors:recorded > 0")
    reads_up = _rules(tmp_path, "up", "sum(up)", "up:recorded < 1")
    assert untouched.untouched([reads_errors, reads_up], {"errors_total"}) == [reads_up]


def test_a_series_that_appears_or_vanishes_is_a_change() -> None:
    day_one = [series("up", {"job": "a"}, [1, 1])]
    incident = [series("up", {"job": "a"}, [1, 1]), series("up", {"job": "b"}, [1, 1])]
    assert untouched.changed_metrics(incident, day_one, samples=2) == {"up"}
    assert untouched.changed_metrics([], day_one, samples=2) == {"up"}


def test_alerts_and_nameless_selectors_read_everything(tmp_path: Path) -> None:
    reads_alerts = _rules(tmp_path, "alerts", 'count(ALERTS{severity="page"})', "alerts:recorded > 0")
    nameless = _rules(tmp_path, "nameless", 'count({__name__=~"node_.+"})', "nameless:recorded > 0")
    assert untouched.raw_reads(reads_alerts) is None
    assert untouched.raw_reads(nameless) is None
    assert untouched.untouched([reads_alerts, nameless], set()) == []
    assert untouched.read_by([nameless], []) is None


def test_the_series_kept_are_those_a_rule_or_a_check_reads(tmp_path: Path) -> None:
    rules = _rules(tmp_path, "errors", "rate(errors_total[5m]) / rate(requests_total[5m])", "errors:recorded > 0")
    # its own recorded series left out
    assert untouched.raw_reads(rules) == frozenset({"errors_total", "requests_total"})
    checks = ['max_over_time(ALERTS{severity="page"}[30m])', "count(up == 0)"]
    assert untouched.read_by([rules], checks) == frozenset({"errors_total", "requests_total", "up"})


def test_the_series_kept_are_those_a_selector_matches_on_name_and_labels(tmp_path: Path) -> None:
    rules = _rules(
        tmp_path,
        "latency",
        'sum(rate(latency_bucket{le=~"0.5|\\\\+Inf",verb!="WATCH"}[5m]))',
        'latency:recorded > 0 and on() count(up{job="api"} == 0) > 0',
    )
    selection = untouched.selected_by([rules], ['count(errors_total{code=~"5.."})'])
    assert selection is not None

    def kept(name: str, **labels: str) -> bool:
        return selection.keeps(series(name, labels, [1.0]))

    assert kept("latency_bucket", le="0.5", verb="GET") and kept("latency_bucket", le="+Inf")
    assert not kept("latency_bucket", le="0.25", verb="GET")  # an edge no rule reads
    assert not kept("latency_bucket", le="0.5", verb="WATCH")  # a negative matcher
    assert kept("up", job="api") and not kept("up", job="node")
    assert kept("errors_total", code="503") and not kept("errors_total", code="200")  # a check's selector
    assert not kept("unread_total", job="api")
    # Day one's assertions on ALERTS and a nameless selector read everything: nothing can be dropped.
    assert untouched.selected_by([rules], ['count({__name__=~"late.*"})']) is None


def test_a_pattern_python_cannot_read_keeps_every_series(tmp_path: Path) -> None:
    # RE2's Unicode class \\pL: Python's re refuses it, so the matcher cannot drop anything.
    rules = _rules(tmp_path, "odd", 'sum(up{job=~"\\\\pL+"})', "odd:recorded > 0")
    selection = untouched.selected_by([rules], [])
    assert selection is not None and selection.keeps(series("up", {"job": "1"}, [1.0]))
