"""Issue 12 item 6, three timing cases, judged by promtool on the shipped rules (``generated/``).

- A slice that disappears alerts: a 300-node pool whose Node objects are deleted raises
  node-readiness's vanished-slice alert; a rename and a whole-fleet absence do not (the
  latter is the NoData alert's).
- A herd from a spec's documented normal level fires: apiserver-list-storm's cluster-scope
  pod LISTs at their normal 5/s, then x10 to exactly 50/s (the floor): relative bounds and
  floors are crossed at equality.
- A storm that outlasts the relative bound's offset stays alerted: a 3h herd stays firing
  for its whole length against the held pre-storm baseline and resolves within minutes of
  its end; slow organic growth never fires, and a level that stays becomes the new normal.

Plus the positioned errors of the new fields. Each promtool run is bounded (``timeout``).
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from pathlib import Path
from typing import Any

import pytest
import yaml

from tests.promtool_runs import promtool_test
from tests.unit.source.test_errors import SLO, edit, message_at, validate

RunCli = Callable[[Sequence[str | Path], Path], tuple[int, str, str]]

REPO = Path(__file__).resolve().parents[2]
RULES = REPO / "generated" / "prometheus" / "rules"
KSM = 'job="kube-state-metrics",cluster="c1"'
VANISHED = "NodeReadinessSliceVanished"
NO_DATA = "NodeReadinessNoData"
STORM = "APIServerListStormAboveNormalRange"
LIST = 'apiserver_request_total{verb="LIST",job="apiserver",cluster="c1",resource="pods",scope="%s"}'


def _promtool_test(tmp_path: Path, rules: str, series: list[dict[str, str]], checks: list[dict[str, Any]]) -> None:
    """Run one promtool test group of ``checks`` on the shipped ``rules`` file; fail with promtool's output."""
    suite = {
        "rule_files": [str(RULES / f"{rules}.rules.yaml")],
        "evaluation_interval": "1m",
        "tests": [{"interval": "1m", "input_series": series, "promql_expr_test": checks}],
    }
    path = tmp_path / "hand.test.yaml"
    path.write_text(yaml.safe_dump(suite, sort_keys=False), encoding="utf-8")
    result = promtool_test(path, timeout=300)
    assert result.returncode == 0, result.stdout + result.stderr


def _count_by(alert: str, label: str, state: str, at: str, values: Sequence[str]) -> dict[str, Any]:
    """At ``at``, the ``state`` alerts of ``alert`` are exactly one per ``values`` of ``label``."""
    samples = [{"labels": f'{{{label}="{value}"}}', "value": 1} for value in values]
    query = f'count by ({label}) (ALERTS{{alertname="{alert}",alertstate="{state}"}})'
    return {"expr": query, "eval_time": at, "exp_samples": samples}


def _none(alert: str, at: str, window: str) -> dict[str, Any]:
    """No ``alert`` at all (pending or firing) in the ``window`` up to ``at``."""
    return {"expr": f'max_over_time(ALERTS{{alertname="{alert}"}}[{window}])', "eval_time": at, "exp_samples": []}


# -- (a) a slice that disappears --------------------------------------------------------------

POOL_NODES = 300  # the pool of the issue: 300 nodes whose Node objects are deleted
CALM_NODES = 10
STOP_MIN = 130  # past two 1h windows of history: the pool is not new
END_MIN = 200


def _pool(pool: str, nodes: int, values: str) -> list[dict[str, str]]:
    """kube-state-metrics series of ``nodes`` Ready, schedulable nodes of one pool in zone-a."""
    found = []
    for index in range(nodes):
        node = f'node="{pool}-{index}"'
        found += [
            {"series": f'kube_node_status_condition{{{KSM},{node},condition="Ready",status="true"}}', "values": values},
            {"series": f"kube_node_spec_unschedulable{{{KSM},{node}}}", "values": values.replace("1x", "0x")},
            {"series": f"kube_node_created{{{KSM},{node}}}", "values": values.replace("1x", "-86400x")},
            {
                "series": f'kube_node_labels{{{KSM},{node},label_node_pool="{pool}",'
                'label_topology_kubernetes_io_zone="zone-a"}',
                "values": values,
            },
        ]
    return found


def _until(stop: int) -> str:
    return f"1x{stop - 1} _x{END_MIN - stop + 1}"


def test_a_pool_whose_nodes_are_deleted_raises_the_vanished_slice_alert(tmp_path: Path) -> None:
    """Before this alert nothing fired: the pool's series vanish and NoData sees the other pool's."""
    series = [*_pool("gpu-a", POOL_NODES, _until(STOP_MIN)), *_pool("gpu-b", CALM_NODES, f"1x{END_MIN}")]
    checks = [
        _none(VANISHED, f"{STOP_MIN}m", f"{STOP_MIN}m"),  # silent while the pool reports
        _count_by(VANISHED, "label_node_pool", "pending", f"{STOP_MIN + 6}m", ["gpu-a"]),
        _count_by(VANISHED, "label_node_pool", "firing", f"{STOP_MIN + 16}m", ["gpu-a"]),
        _count_by(VANISHED, "label_node_pool", "firing", f"{STOP_MIN + 50}m", ["gpu-a"]),
        _none(NO_DATA, f"{END_MIN}m", f"{END_MIN}m"),  # the other pool still reports
        _none(VANISHED, f"{STOP_MIN + 67}m", "1m"),  # resolved once the last sample (a few minutes on) is 1h old
    ]
    _promtool_test(tmp_path, "node-readiness", series, checks)


def test_a_renamed_pool_stays_quiet(tmp_path: Path) -> None:
    """The nodes come back as pool gpu-a-v2 over 10 minutes of overlap: nothing vanished."""
    new_from = STOP_MIN - 10
    renamed = f"_x{new_from - 1} 1x{END_MIN - new_from + 1}"
    series = [*_pool("gpu-a", POOL_NODES, _until(STOP_MIN)), *_pool("gpu-a-v2", POOL_NODES, renamed)]
    series += _pool("gpu-b", CALM_NODES, f"1x{END_MIN}")
    _promtool_test(tmp_path, "node-readiness", series, [_none(VANISHED, f"{END_MIN}m", f"{END_MIN}m")])


def test_a_whole_spec_absence_is_the_no_data_alerts_job(tmp_path: Path) -> None:
    series = [*_pool("gpu-a", 20, _until(STOP_MIN)), *_pool("gpu-b", CALM_NODES, _until(STOP_MIN))]
    checks = [
        _none(VANISHED, f"{END_MIN}m", f"{END_MIN}m"),
        {
            "expr": f'count(ALERTS{{alertname="{NO_DATA}",alertstate="firing"}})',
            "eval_time": f"{STOP_MIN + 21}m",
            "exp_samples": [{"labels": "{}", "value": 1}],
        },
    ]
    _promtool_test(tmp_path, "node-readiness", series, checks)


# -- (b) the herd from the documented normal level ----------------------------------------------

HERD_FROM_MIN = 70  # an hour and more of the normal level first, so the 1h offset reads it


def _rate(per_second: Sequence[tuple[int, float]]) -> str:
    """Counter samples at 1m for (minutes, LIST/s) stretches, literal so every increment is exact."""
    values, total = ["0"], 0.0
    for count, rate in per_second:
        for _ in range(count):
            total += rate * 60
            values.append(repr(total))
    return " ".join(values)


def test_the_shipped_rule_crosses_the_relative_bound_and_floor_at_equality() -> None:
    rules = (RULES / "apiserver-list-storm.rules.yaml").read_text(encoding="utf-8")
    assert '>= 3 * slo:sli_baseline_normal:gauge{slo="apiserver-list-storm"}' in rules
    assert '\n        and slo:sli_value:gauge{slo="apiserver-list-storm"} >= 50\n' in rules


def test_a_tenfold_herd_from_the_documented_normal_level_fires(tmp_path: Path) -> None:
    """5/s (the spec's relative.normal) x10 is exactly 50/s, the floor: it fires; 49.5/s does not."""
    series = [
        {"series": LIST % "cluster", "values": _rate([(HERD_FROM_MIN, 5), (20, 50)])},
        {"series": LIST % "namespace", "values": _rate([(HERD_FROM_MIN, 5), (20, 49.5)])},
    ]
    at = f"{HERD_FROM_MIN + 2 + 3 + 1}m"  # the 2m rate shows the herd fully, then `for: 3m`
    _promtool_test(tmp_path, "apiserver-list-storm", series, [_count_by(STORM, "scope", "firing", at, ["cluster"])])


def test_the_generated_tests_drive_the_herd_from_the_normal_level() -> None:
    suite = yaml.safe_load(
        (REPO / "generated" / "prometheus" / "tests" / "apiserver-list-storm.test.yaml").read_text(encoding="utf-8")
    )
    names = [test["name"] for test in suite["tests"]]
    assert any("from its documented normal level 5 the value rises to exactly 50" in name for name in names), names


# -- (c) a storm that outlasts the offset -------------------------------------------------------


def test_a_three_hour_storm_stays_firing_for_its_whole_length_and_resolves_after(tmp_path: Path) -> None:
    """Against the value 1h ago it would resolve at about 2h10m, still in the storm; the held baseline keeps it."""
    start, length = 65, 180
    series = [{"series": LIST % "cluster", "values": _rate([(start, 5), (length, 50), (30, 5)])}]
    firing = [_count_by(STORM, "scope", "firing", f"{minute}m", ["cluster"]) for minute in range(75, 245, 10)]
    checks = [*firing, _count_by(STORM, "scope", "firing", f"{start + length}m", ["cluster"])]
    checks.append(_none(STORM, f"{start + length + 4}m", "1m"))  # the 2m rate falls back: resolved within 4m
    _promtool_test(tmp_path, "apiserver-list-storm", series, checks)


def test_slow_organic_growth_never_fires_and_never_latches(tmp_path: Path) -> None:
    """From 20/s to 80/s over four hours: never 3x the hour before, so nothing fires or holds."""
    ramp = [(1, 20 + 60 * minute / 240) for minute in range(1, 241)]
    series = [{"series": LIST % "cluster", "values": _rate([(65, 20), *ramp, (60, 80)])}]
    _promtool_test(tmp_path, "apiserver-list-storm", series, [_none(STORM, "365m", "365m")])


def test_a_level_that_stays_becomes_the_new_normal_after_the_hold(tmp_path: Path) -> None:
    """16/s to 60/s for good: firing through the 3h hold (relative.hold default, 3x the offset), then resolved."""
    series = [{"series": LIST % "cluster", "values": _rate([(65, 16), (250, 60)])}]
    checks = [
        _count_by(STORM, "scope", "firing", "3h", ["cluster"]),
        _count_by(STORM, "scope", "firing", f"{65 + 175}m", ["cluster"]),
        _none(STORM, f"{65 + 185}m", "1m"),
    ]
    _promtool_test(tmp_path, "apiserver-list-storm", series, checks)


# -- positioned errors -------------------------------------------------------------------------


def test_a_vanished_alert_on_per_node_slices_is_refused(run_cli: RunCli, tmp_path: Path, slo_file: Path) -> None:
    edit(slo_file, "  by: [cluster]\n", "  by: [cluster, node]\n")
    edit(slo_file, "persistence:\n", "series_budget: 40000\nno_data:\n  vanished: {enabled: true}\npersistence:\n")
    stderr = validate(run_cli, tmp_path)
    line = slo_file.read_text(encoding="utf-8").splitlines().index("  vanished: {enabled: true}") + 1
    message = message_at(stderr, f"{SLO}:{line}:3")
    assert "no_data.vanished on about 7,500 slices reads 450,000 samples per evaluation" in message
    assert "node churn from autoscaling" in message


def test_a_vanished_window_shorter_than_its_wait_is_refused(run_cli: RunCli, tmp_path: Path, slo_file: Path) -> None:
    edit(slo_file, "persistence:\n", "no_data:\n  vanished: {enabled: true, window: 20m, for: 10m}\npersistence:\n")
    stderr = validate(run_cli, tmp_path, problems=1)
    line = slo_file.read_text(encoding="utf-8").splitlines().index("  vanished: {enabled: true, window: 20m, for: 10m}")
    message = message_at(stderr, f"{SLO}:{line + 1}:37")
    assert message.startswith("no_data.vanished.window 20m must be at least 15m longer than its for (10m)")


def test_alert_names_vanished_needs_the_alert(run_cli: RunCli, tmp_path: Path, slo_file: Path) -> None:
    edit(slo_file, "persistence:\n", "alert_names: {vanished: DNSGone}\npersistence:\n")
    stderr = validate(run_cli, tmp_path, problems=1)
    line = slo_file.read_text(encoding="utf-8").splitlines().index("alert_names: {vanished: DNSGone}") + 1
    assert "this spec has no vanished alert (no_data.vanished is not enabled)" in message_at(stderr, f"{SLO}:{line}:15")


@pytest.mark.parametrize(("hold", "shown"), [("90m", "1h30m"), ("1h30s", "1h30s"), ("2h30s", "2h30s")])
def test_a_hold_shorter_than_twice_the_offset_is_refused(
    run_cli: RunCli, tmp_path: Path, slo_file: Path, hold: str, shown: str
) -> None:
    band = f"normal_range:\n  relative: {{offset: 1h, max_factor: 3, floor: 0.01, hold: {hold}}}\n"
    edit(slo_file, "persistence:\n", band + "persistence:\n")
    stderr = validate(run_cli, tmp_path, problems=1)
    line = slo_file.read_text(encoding="utf-8").splitlines().index(band.splitlines()[1]) + 1
    message = message_at(stderr, f"{SLO}:{line}:60")
    assert message.startswith(f"relative.hold {shown} must be whole minutes and at least twice the offset (2h)")


def test_a_relative_bound_without_a_floor_ignores_a_flat_zero(run_cli: RunCli, tmp_path: Path, slo_file: Path) -> None:
    """Crossed at equality, 0 >= 3 x 0 would hold: the generated calm case (error ratio 0) proves it does not fire."""
    band = "normal_range:\n  relative: {offset: 1h, max_factor: 3, min_factor: 0.5}\n"
    edit(slo_file, "persistence:\n", band + "persistence:\n")
    code, _, stderr = run_cli(["generate", "--specs", "specs", "--out", "out"], tmp_path)
    assert code == 0, stderr
    rules = (tmp_path / "out/prometheus/rules/dns-errors.rules.yaml").read_text(encoding="utf-8")
    assert 'and (slo:sli_bad:rate5m{slo="dns-errors"} / slo:sli_total:rate5m{slo="dns-errors"}) > 0\n' in rules
    suite = tmp_path / "out/prometheus/tests/dns-errors.test.yaml"
    assert "calm baseline: every slice at 0," in suite.read_text(encoding="utf-8")
    result = promtool_test(suite, timeout=300)
    assert result.returncode == 0, result.stdout + result.stderr
