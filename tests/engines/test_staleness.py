"""sli.staleness: seconds since a timestamp gauge advanced, so a hung loop (the kubelet's PLEG) alerts.

A hung PLEG completes no relist: its duration histogram gets no observations and a p99 over it
is NaN, which never crosses a bound. Its last-seen timestamp keeps its old value, so
``time() - timestamp`` grows. These tests compile the shipped kubelet-pleg-staleness spec in a
temp tree, run promtool on what it generates, and feed the rules a timestamp that advances,
one that freezes and one that vanishes, with promtool as the judge.
"""

from __future__ import annotations

import shutil
import subprocess
from collections.abc import Callable, Sequence
from pathlib import Path

import pytest
import yaml

from tests.unit.source.test_errors import edit, message_at, validate

RunCli = Callable[[Sequence[str | Path], Path], tuple[int, str, str]]

REPO = Path(__file__).resolve().parents[2]
SHIPPED = REPO / "slo_specs" / "node-network-errors" / "kubelet-pleg-staleness.yaml"
SPEC = "specs/nodes/kubelet-pleg-staleness.yaml"
ALERT = "KubeletPlegStaleAboveNormalRange"
NO_DATA = "KubeletPlegStaleNoData"
EXPLAINS = "explains:\n  # A hung PLEG turns the node NotReady"
# The kubelet_node_name join maps instance to node; every input carries one.
NODE_NAME = 'kubelet_node_name{cluster="c1",instance="10.0.0.1:10250",job="kubelet",node="gpu-node-1"}'
TIMESTAMP = 'kubelet_pleg_last_seen_seconds{cluster="c1",instance="10.0.0.1:10250",job="kubelet"}'


def _without_explains(text: str) -> str:
    """The shipped spec alone: its explains names node-readiness-flapping, which this tree lacks."""
    head, found, _ = text.partition(EXPLAINS)
    assert found, "the shipped spec's explains block moved; update EXPLAINS"
    rest = text.split("see_also:", 1)[1]
    return f"{head}see_also:{rest}"


@pytest.fixture
def tree(tmp_path: Path) -> Path:
    """owners.yaml and project.yaml of the repo, and the shipped staleness spec, under tmp_path/specs."""
    specs = tmp_path / "specs"
    (specs / "nodes").mkdir(parents=True)
    for name in ("owners.yaml", "project.yaml"):
        shutil.copy(REPO / "slo_specs" / name, specs / name)
    (tmp_path / SPEC).write_text(_without_explains(SHIPPED.read_text(encoding="utf-8")), encoding="utf-8")
    return tmp_path


@pytest.fixture
def generated(tree: Path, run_cli: RunCli) -> Path:
    code, _, stderr = run_cli(["generate", "--specs", "specs", "--out", "out"], tree)
    assert code == 0, stderr
    return tree / "out" / "prometheus"


def _promtool(*args: str | Path, cwd: Path) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        ["promtool", *map(str, args)], cwd=cwd, capture_output=True, text=True, timeout=120, check=False
    )


def test_the_rule_reads_seconds_since_the_timestamp_advanced(generated: Path) -> None:
    rules = (generated / "rules" / "kubelet-pleg-staleness.rules.yaml").read_text(encoding="utf-8")
    assert 'time() - kubelet_pleg_last_seen_seconds{job="kubelet"}' in rules
    assert "max by (cluster, node)" in rules
    assert 'slo:sli_value:gauge{slo="kubelet-pleg-staleness"} > 180' in rules


def test_promtool_lints_the_rules_and_passes_the_generated_tests(generated: Path) -> None:
    lint = _promtool(
        "check", "rules", "--lint=all", "--lint-fatal", "rules/kubelet-pleg-staleness.rules.yaml", cwd=generated
    )
    assert lint.returncode == 0, lint.stdout + lint.stderr
    tests = _promtool("test", "rules", "tests/kubelet-pleg-staleness.test.yaml", cwd=generated)
    assert tests.returncode == 0, tests.stdout + tests.stderr


def test_the_generated_tests_drive_the_timestamp_with_the_clock(generated: Path) -> None:
    """The generated inputs are timestamps that advance 60 s a minute, not constants the rule cannot read."""
    suite = yaml.safe_load((generated / "tests" / "kubelet-pleg-staleness.test.yaml").read_text(encoding="utf-8"))
    values = [
        series["values"]
        for test in suite["tests"]
        for series in test["input_series"]
        if series["series"].startswith("kubelet_pleg_last_seen_seconds")
    ]
    assert values and all("+60x" in value for value in values), values
    # The hung loop: the timestamp advances to minute 5, then holds (its age grows a minute a minute).
    assert "0+60x5 300x5" in values, values
    frozen = next(test for test in suite["tests"] if "stops advancing" in test["name"])
    assert [check["eval_time"] for check in frozen["alert_rule_test"]] == ["11m"]
    asserted = {alert["alertname"] for test in suite["tests"] for alert in test.get("alert_rule_test", [])}
    assert {ALERT, NO_DATA} <= asserted


def _firing(name: str, at: str, present: bool) -> dict[str, object]:
    """A promtool check that the alert is (or is not) firing at ``at`` (for the node, unless NoData).

    The no-data alert is ``absent()`` of the whole recorded series, so it carries no slice label.
    """
    matchers = {"alertname": name, "alertstate": "firing", **({} if name == NO_DATA else {"node": "gpu-node-1"})}
    query = "ALERTS{" + ",".join(f'{key}="{value}"' for key, value in matchers.items()) + "}"
    if not present:
        # absent() of an equality selector carries the selector's labels.
        return {
            "expr": f"absent({query})",
            "eval_time": at,
            "exp_samples": [{"labels": query.replace("ALERTS", ""), "value": 1}],
        }
    return {"expr": f"count({query})", "eval_time": at, "exp_samples": [{"labels": "{}", "value": 1}]}


def _run_hand_test(generated: Path, timestamp_values: str | None, checks: list[dict[str, object]]) -> None:
    series = [{"series": NODE_NAME, "values": "1x40"}]
    if timestamp_values is not None:
        series.append({"series": TIMESTAMP, "values": timestamp_values})
    suite = {
        "rule_files": ["rules/kubelet-pleg-staleness.rules.yaml"],
        "evaluation_interval": "1m",
        "tests": [{"interval": "1m", "input_series": series, "promql_expr_test": checks}],
    }
    path = generated / "hand.test.yaml"
    path.write_text(yaml.safe_dump(suite, sort_keys=False), encoding="utf-8")
    result = _promtool("test", "rules", path.name, cwd=generated)
    assert result.returncode == 0, result.stdout + result.stderr


def test_an_advancing_timestamp_stays_silent(generated: Path) -> None:
    _run_hand_test(generated, "0+60x40", [_firing(ALERT, at, False) for at in ("5m", "20m", "40m")])


def test_a_frozen_timestamp_fires_after_the_bound_plus_for(generated: Path) -> None:
    """Frozen at minute 5: 180 s old at 8m (not above), 240 s at 9m (pending), firing 2m later."""
    checks = [_firing(ALERT, "10m", False), _firing(ALERT, "11m", True), _firing(ALERT, "30m", True)]
    _run_hand_test(generated, "0+60x5 300x34", checks)


def test_the_alert_resolves_once_the_timestamp_advances_again(generated: Path) -> None:
    checks = [_firing(ALERT, "12m", True), _firing(ALERT, "21m", False)]
    _run_hand_test(generated, "0+60x5 300x14 1200+60x20", checks)


def test_a_missing_timestamp_is_no_data_not_staleness(generated: Path) -> None:
    checks = [_firing(ALERT, "20m", False), _firing(NO_DATA, "14m", False), _firing(NO_DATA, "16m", True)]
    _run_hand_test(generated, None, checks)


# -- misuse, each reported at the value at fault ----------------------------------------


def _line_col(tree: Path, needle: str, column_of: str | None = None) -> str:
    """``path:line:col`` of the first line containing ``needle`` (at ``column_of`` in it)."""
    lines = (tree / SPEC).read_text(encoding="utf-8").splitlines()
    number, line = next((i, text) for i, text in enumerate(lines, 1) if needle in text)
    return f"{SPEC}:{number}:{line.index(column_of or needle) + 1}"


def test_a_min_only_bound_cannot_detect_staleness(tree: Path, run_cli: RunCli) -> None:
    edit(tree / SPEC, "  max: 180\n", "  min: 10\n")
    stderr = validate(run_cli, tree)
    assert "cannot detect staleness" in message_at(stderr, _line_col(tree, "  min: 10", "min"))
    assert "needs a max" in message_at(stderr, _line_col(tree, "normal_range:"))


def test_a_non_positive_max_is_refused(tree: Path, run_cli: RunCli) -> None:
    edit(tree / SPEC, "  max: 180\n", "  max: 0\n")
    stderr = validate(run_cli, tree, problems=1)
    message = message_at(stderr, _line_col(tree, "  max: 0", "0"))
    assert "would fire on every healthy gauge" in message


def test_a_relative_band_cannot_detect_staleness(tree: Path, run_cli: RunCli) -> None:
    edit(tree / SPEC, "  max: 180\n", "  max: 180\n  relative: {offset: 1d, max_factor: 2}\n")
    stderr = validate(run_cli, tree)
    assert "cannot detect staleness" in message_at(stderr, _line_col(tree, "  relative:", "relative"))


def test_a_unit_other_than_seconds_is_refused(tree: Path, run_cli: RunCli) -> None:
    edit(tree / SPEC, "unit: seconds\n", "unit: count\n")
    stderr = validate(run_cli, tree, problems=1)
    assert "unit must be 'seconds'" in message_at(stderr, _line_col(tree, "unit: count", "count"))


def test_a_timestamp_that_is_not_a_selector_is_refused(tree: Path, run_cli: RunCli) -> None:
    edit(
        tree / SPEC, "timestamp: kubelet_pleg_last_seen_seconds", "timestamp: 'time() - kubelet_pleg_last_seen_seconds'"
    )
    stderr = validate(run_cli, tree, problems=1)
    message = message_at(stderr, _line_col(tree, "timestamp: 'time()", "'time()"))
    assert "plain vector selector" in message


def test_a_free_form_time_gauge_points_to_staleness(tree: Path, run_cli: RunCli) -> None:
    """``time() - x`` as a gauge cannot be driven by the generated tests; the error names the kind that can."""
    edit(
        tree / SPEC,
        "  staleness:\n    timestamp: kubelet_pleg_last_seen_seconds\n",
        "  gauge:\n    expr: 'time() - kubelet_pleg_last_seen_seconds'\n",
    )
    stderr = validate(run_cli, tree, problems=1)
    message = message_at(stderr, _line_col(tree, "sli:", "sli"))
    assert "time() depends on the evaluation time" in message
    assert "sli: {staleness: {timestamp: 'x'}}" in message


def test_a_min_next_to_the_max_is_one_problem_at_the_min(tree: Path, run_cli: RunCli) -> None:
    """min: 0 is not also told to be 'above 0' (the gauge check's advice): a staleness takes no min."""
    edit(tree / SPEC, "  max: 180\n", "  max: 180\n  min: 0\n")
    stderr = validate(run_cli, tree, problems=1)
    assert "cannot detect staleness" in message_at(stderr, _line_col(tree, "  min: 0", "min"))
