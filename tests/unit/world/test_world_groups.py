"""A data set's rule files split into groups whose verdicts add up to the whole one's (tests/world/groups.py).

Each group must evaluate from the same samples as the whole file did (a file that reads another's recorded series
goes with it), every group runs the quiet and page checks (they read its own ALERTS), and each check about a named
alert runs in the group that defines it.
"""

from __future__ import annotations

import dataclasses
import json
import zlib
from pathlib import Path

import yaml

from tests.world import groups, topology
from tests.world.dataset import Expectations, Expected, Fires, write_tests
from tests.world.stack import STACKS
from tests.world.timeline import series


def _rules(tmp_path: Path, name: str, reads: str, labels: dict[str, str] | None = None) -> Path:
    rules: list[dict[str, object]] = [{"record": f"{name}:value", "expr": reads, "labels": labels or {"slo": name}}]
    rules.append({"alert": f"{name.title()}High", "expr": f'{name}:value{{slo="{name}"}} > 1'})
    path = tmp_path / f"{name}.rules.yaml"
    path.write_text(yaml.safe_dump({"groups": [{"name": name, "rules": rules}]}), encoding="utf-8")
    return path


def _apart(count: int) -> list[str]:
    """``count`` spec names in different groups."""
    found: dict[int, str] = {}
    for number in range(100):
        found.setdefault(zlib.crc32(f"spec{number}.rules.yaml".encode()) % groups.GROUPS, f"spec{number}")
    assert len(found) >= count
    return [found[group] for group in sorted(found)][:count]


def test_files_are_grouped_by_their_name_alone(tmp_path: Path) -> None:
    first, second = _apart(2)
    a, b = _rules(tmp_path, first, "sum(up)"), _rules(tmp_path, second, "sum(up)")
    assert groups.partition([a, b]) == groups.partition([b, a])  # the order of the groups is theirs, not the input's
    assert sorted(map(len, groups.partition([a, b]))) == [1, 1]
    assert groups.partition([a]) == [[a]]
    assert groups.partition([]) == []


def test_a_file_reading_another_files_recorded_series_goes_with_it(tmp_path: Path) -> None:
    first, second = _apart(2)
    writer = _rules(tmp_path, first, "sum(up)")
    reader = _rules(tmp_path, second, f'{first}:value{{slo="{first}"}}')
    assert [sorted(group) for group in groups.partition([writer, reader])] == [sorted([writer, reader])]
    # the same name with a label the writer's rule does not set: it cannot read that series
    elsewhere = _rules(tmp_path, second, f'{first}:value{{slo="another"}}')
    assert sorted(map(len, groups.partition([writer, elsewhere]))) == [1, 1]


def test_a_file_reading_alerts_or_any_name_keeps_every_file_in_one_group(tmp_path: Path) -> None:
    first, second = _apart(2)
    plain = _rules(tmp_path, first, "sum(up)")
    for reads in ('count(ALERTS{severity="page"})', 'count({__name__=~"node_.+"})'):
        reader = _rules(tmp_path, second, reads)
        assert groups.partition([plain, reader]) == [[plain, reader]]


def _checks(path: Path) -> tuple[list[str], list[str]]:
    document = json.loads(path.read_text(encoding="utf-8"))
    return document["rule_files"], [check["expr"] for check in document["tests"][0]["promql_expr_test"]]


def test_each_check_runs_in_the_group_of_its_alert_and_the_premises_alone(tmp_path: Path) -> None:
    first, second = _apart(2)
    a, b = _rules(tmp_path, first, "sum(up)"), _rules(tmp_path, second, "sum(errors_total)")
    world = dataclasses.replace(topology.day_one(), minutes=60)
    data = [series("up", {"job": "a"}, [1.0] * 120), series("errors_total", {"job": "a"}, [0.0] * 120)]
    expect = Expectations(
        quiet_from=10,
        quiet_except=(first,),
        raising=(first,),
        fires=(Fires("team", 30, alertname=f"{second.title()}High"),),
        expected=(Expected(f"{first.title()}High", "why", ()),),
        premises=(("sum(up)", 5, 1.0),),
    )
    written = write_tests(tmp_path, [a, b], world, STACKS["kube-prometheus-stack"], expect, data)
    by_files = {tuple(_checks(test.path)[0]): _checks(test.path)[1] for test in written}
    assert set(by_files) == {(str(a),), (str(b),), ()}
    for rule_files, checks in by_files.items():
        quiet = [check for check in checks if "pending|firing" in check]
        assert bool(quiet) == bool(rule_files), rule_files  # every rule group runs the quiet check, premises do not
    assert [check for check in by_files[(str(b),)] if "clamp_max" in check] == [
        f'clamp_max(count(ALERTS{{alertstate="firing",team="team",alertname="{second.title()}High"}}), 1)'
    ]
    assert any(f'slo=~"{first}"' in check for check in by_files[(str(a),)])
    assert any(f'alertname="{first.title()}High",alertstate="firing"' in c for c in by_files[(str(a),)])
    assert by_files[()] == ["sum(up)"]
    # the premises read up alone; a group loads only what its rules and checks select
    assert {test.path.name: sorted(test.series) for test in written}["world-premises.test.json"] == ['up{job="a"}']


def test_an_alert_of_any_name_keeps_one_test(tmp_path: Path) -> None:
    first, second = _apart(2)
    a, b = _rules(tmp_path, first, "sum(up)"), _rules(tmp_path, second, "sum(up)")
    world = dataclasses.replace(topology.day_one(), minutes=60)
    expect = Expectations(quiet_from=10, fires=(Fires("team", 30),), premises=(("sum(up)", 5, 1.0),))
    data = [series("up", {"job": "a"}, [1.0] * 120)]
    written = write_tests(tmp_path, [a, b], world, STACKS["kube-prometheus-stack"], expect, data)
    assert [_checks(test.path)[0] for test in written] == [[str(a), str(b)]]
