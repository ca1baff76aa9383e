"""What the compiler writes and says about valid but unusual specs (issue 26, third sweep): Prometheus
2.42's own function names, numbers written as the shortest decimal, an Alertmanager config without
start-up warnings. Checked with the real promtool where it is involved."""

from __future__ import annotations

import subprocess
from pathlib import Path

import pytest

from tests import servers
from tests.conftest import PROJECT_YAML, RATIO_SLI_AND_OBJECTIVE, SLO_RELATIVE, RunCli, make_spec_tree
from tests.promtool_runs import promtool_test

SPEC = f"specs/{SLO_RELATIVE.as_posix()}"


def gauge_spec(tmp_path: Path, expr: str) -> Path:
    """The valid spec tree with a gauge SLI of ``expr`` (on line 12) and a normal range."""
    spec = make_spec_tree(tmp_path / "specs") / SLO_RELATIVE
    gauge = f"sli:\n  gauge:\n    expr: '{expr}'\n    aggregate: max\nunit: count\nnormal_range:\n  max: 100\n"
    spec.write_text(spec.read_text(encoding="utf-8").replace(RATIO_SLI_AND_OBJECTIVE, gauge), encoding="utf-8")
    return spec


def test_prometheus_2_function_names(run_cli: RunCli, tmp_path: Path) -> None:
    """holt_winters (Prometheus 2.42; the parser knows it only by its 3.x name) is accepted, written as
    holt_winters, and its generated tests pass in promtool 2.42 (was: refused as an unknown function)."""
    gauge_spec(tmp_path, "max by (cluster) (holt_winters(coredns_forward_sessions[5m], 0.5, 0.5))")
    code, _, err = run_cli(["generate", "--specs", "specs", "--out", "out"], tmp_path)
    assert code == 0, err
    rules = (tmp_path / "out" / "prometheus" / "rules" / "dns-errors.rules.yaml").read_text(encoding="utf-8")
    assert 'holt_winters(coredns_forward_sessions{job="kube-dns"}[5m], 0.5, 0.5)' in rules
    assert "double_exponential_smoothing" not in rules
    checked = subprocess.run(
        ["promtool", "check", "rules", "dns-errors.rules.yaml"],
        cwd=tmp_path / "out" / "prometheus" / "rules",
        capture_output=True,
        text=True,
        check=False,
    )
    assert checked.returncode == 0, checked.stdout + checked.stderr
    tested = promtool_test(tmp_path / "out" / "prometheus" / "tests" / "dns-errors.test.yaml")
    assert tested.returncode == 0, tested.stdout + tested.stderr


@pytest.mark.parametrize(
    ("expr", "message"),
    [
        (
            "max by (cluster) (double_exponential_smoothing(coredns_forward_sessions[5m], 0.5, 0.5))",
            "invalid PromQL in sli.gauge.expr: invalid PromQL: double_exponential_smoothing() is Prometheus 3's "
            "name; Prometheus 2.42, which runs these rules, calls it holt_winters()",
        ),
        (
            "max by (cluster) (holt_winters(coredns_forward_sessions[5m], 1.5, 0.5))",
            "cannot generate the promtool tests that prove its alerts: cannot derive test inputs: holt_winters() "
            "needs a smoothing factor strictly between 0 and 1; Prometheus fails the rule with 1.5",
        ),
    ],
    ids=["3.x-name", "bad-factor"],
)
def test_prometheus_2_function_names_refused_at_the_expression(
    run_cli: RunCli, tmp_path: Path, expr: str, message: str
) -> None:
    gauge_spec(tmp_path, expr)
    code, out, err = run_cli(["validate", "--specs", "specs"], tmp_path)
    assert (code, out) == (1, ""), err
    problems = [line for line in err.splitlines() if line.startswith(SPEC)]
    assert len(problems) == 1, err
    assert problems[0].split(": ", 1)[1].startswith(message), err


def test_thresholds_are_the_shortest_decimal(run_cli: RunCli, tmp_path: Path) -> None:
    """A 99.999% objective: the budget is 1e-05 and the thresholds 14.4x, 6x, 3x, 1x of it, written as
    0.000144, 6e-05, 3e-05, 1e-05 and the budget as 0.001% (was: > 0.000143999999999 and a budget of
    0.000999999999995%, from 1 - 0.99999 in binary floating point); promtool still passes its tests."""
    spec = make_spec_tree(tmp_path / "specs") / SLO_RELATIVE
    spec.write_text(spec.read_text(encoding="utf-8").replace("target: 99.9%", "target: 99.999%"), encoding="utf-8")
    code, _, err = run_cli(["generate", "--specs", "specs", "--out", "out"], tmp_path)
    assert code == 0, err
    rules = (tmp_path / "out" / "prometheus" / "rules" / "dns-errors.rules.yaml").read_text(encoding="utf-8")
    for threshold in ("0.000144", "6e-05", "3e-05", "1e-05"):
        assert f") > {threshold}\n" in rules, threshold
    assert ") / 1e-05\n" in rules
    assert "(threshold 0.001%)" in rules
    for path in (tmp_path / "out").rglob("*"):
        if path.is_file() and path.suffix in (".yaml", ".md", ".html", ".json"):
            text = path.read_text(encoding="utf-8")
            assert "99999999" not in text and "0.000143999" not in text, path
    tested = promtool_test(tmp_path / "out" / "prometheus" / "tests" / "dns-errors.test.yaml")
    assert tested.returncode == 0, tested.stdout + tested.stderr


def test_alertmanager_repeat_interval_within_retention(tmp_path: Path, repo_root: Path) -> None:
    """The real Alertmanager 0.25 starts on the generated config without a warning (was: "repeat_interval
    is greater than the data retention period" for every info route, 168h over its 120h retention)."""
    config = tmp_path / "alertmanager"
    for source in (repo_root / "generated" / "alertmanager").rglob("*"):
        if source.is_file():
            target = config / source.relative_to(repo_root / "generated" / "alertmanager")
            target.parent.mkdir(parents=True, exist_ok=True)
            target.write_bytes(source.read_bytes())
    with servers.alertmanager(tmp_path, config / "alertmanager.yaml"):
        log = (tmp_path / "alertmanager.log").read_text(encoding="utf-8")
    assert "msg=" in log, log  # the log is Alertmanager's
    assert "level=warn" not in log, log


def test_alertmanager_repeat_interval_over_retention_is_refused(run_cli: RunCli, tmp_path: Path) -> None:
    specs = make_spec_tree(tmp_path / "specs")
    project = specs / "project.yaml"
    project.write_text(
        project.read_text(encoding="utf-8")
        + "alertmanager:\n  timing:\n    info: {group_wait: 10m, group_interval: 1h, repeat_interval: 168h}\n",
        encoding="utf-8",
    )
    code, out, err = run_cli(["validate", "--specs", "specs"], tmp_path)
    assert (code, out) == (1, ""), err
    assert err.startswith(
        f"specs/project.yaml:{len(PROJECT_YAML.splitlines()) + 3}:66: repeat_interval 168h is longer than the 120h "
        "limit, the time Alertmanager keeps "
        "its notification log (--data.retention default)"
    ), err
