"""Each rule profile loads in its engine: promtool for Prometheus-format groups, vmalert -dryRun for vmalert."""

from __future__ import annotations

import re
import subprocess
from pathlib import Path
from typing import Any

import pytest
import yaml

REPO_ROOT = Path(__file__).resolve().parents[2]
GENERATED = REPO_ROOT / "generated"
VMALERT = REPO_ROOT / ".cache" / "victoria-metrics" / "usr" / "bin" / "vmalert"
PROM_242_GROUP_FIELDS = {"name", "interval", "limit", "rules"}


def _promtool_check(tmp_path: Path, groups: list[dict[str, Any]]) -> None:
    path = tmp_path / "rules.yaml"
    path.write_text(yaml.safe_dump({"groups": groups}, sort_keys=False), encoding="utf-8")
    result = subprocess.run(
        ["promtool", "check", "rules", "--lint=all", "--lint-fatal", str(path)], capture_output=True, text=True
    )
    assert result.returncode == 0, result.stdout + result.stderr


def _load(path: Path) -> Any:
    return yaml.safe_load(path.read_text(encoding="utf-8"))


def test_plain_prometheus_groups_use_only_fields_prometheus_2_42_accepts() -> None:
    for path in sorted((GENERATED / "prometheus" / "rules").glob("*.yaml")):
        for group in _load(path)["groups"]:
            assert set(group) <= PROM_242_GROUP_FIELDS, path.name


def test_prometheus_operator_objects_are_valid_and_selectable(tmp_path: Path) -> None:
    files = sorted((GENERATED / "prometheus-operator").glob("*.yaml"))
    assert files
    for path in files:
        document = _load(path)
        assert document["apiVersion"] == "monitoring.coreos.com/v1"
        assert document["kind"] == "PrometheusRule"
        assert document["metadata"]["namespace"] == "monitoring"
        assert document["metadata"]["labels"]["release"] == "kube-prometheus-stack"
        names = [group["name"] for group in document["spec"]["groups"]]
        assert len(names) == len(set(names)), "spec.groups is a map keyed by name"
        _promtool_check(tmp_path, document["spec"]["groups"])


def test_promtool_rejects_the_operator_wrapper_itself() -> None:
    """Why the check above extracts .spec: the CRD wrapper is not a rule file."""
    path = next((GENERATED / "prometheus-operator").glob("*.yaml"))
    result = subprocess.run(["promtool", "check", "rules", str(path)], capture_output=True, text=True)
    assert result.returncode == 1


def test_thanos_groups_carry_a_valid_partial_response_strategy(tmp_path: Path) -> None:
    files = sorted((GENERATED / "thanos").glob("*.yaml"))
    assert files
    for path in files:
        groups = _load(path)["groups"]
        for group in groups:
            assert re.fullmatch(r"(?i)(abort|warn)?", group["partial_response_strategy"])
            assert "labels" not in group and "query_offset" not in group
        _promtool_check(tmp_path, [{k: v for k, v in g.items() if k != "partial_response_strategy"} for g in groups])


def test_mimir_namespaces_are_one_per_team_under_the_tenant(tmp_path: Path) -> None:
    files = sorted((GENERATED / "mimir" / "platform").glob("*.yaml"))
    teams = {path.stem for path in files}
    owners = {team["name"] for team in _load(REPO_ROOT / "slo_specs" / "owners.yaml")["teams"]}
    assert teams and teams <= owners
    for path in files:
        document = _load(path)
        assert document["namespace"] == path.stem
        assert set(document) == {"namespace", "groups"}
        _promtool_check(tmp_path, document["groups"])


@pytest.mark.skipif(not VMALERT.exists(), reason="run `make test`: it unpacks vmalert from Debian's victoria-metrics")
def test_vmalert_dry_run_accepts_the_vmalert_profile() -> None:
    files = sorted((GENERATED / "vmalert").glob("*.yaml"))
    assert files
    for path in files:
        result = subprocess.run([str(VMALERT), "-dryRun", f"-rule={path}"], capture_output=True, text=True)
        assert result.returncode == 0, result.stderr[-2000:]
        assert "keep_firing_for" not in path.read_text(encoding="utf-8").split("groups:", 1)[1]


@pytest.mark.skipif(not VMALERT.exists(), reason="run `make test`: it unpacks vmalert from Debian's victoria-metrics")
def test_vmalert_dry_run_rejects_the_plain_files_that_use_keep_firing_for() -> None:
    """The check has teeth: vmalert 1.79 refuses keep_firing_for, which plain Prometheus files may use."""
    golden = REPO_ROOT / "tests" / "golden" / "prometheus" / "rules"
    plain = [p for p in sorted(golden.glob("*.yaml")) if "keep_firing_for" in p.read_text()]
    assert plain, "a fixture spec uses keep_firing_for"
    result = subprocess.run([str(VMALERT), "-dryRun", f"-rule={plain[0]}"], capture_output=True, text=True)
    assert result.returncode != 0
    assert "keep_firing_for" in result.stderr
