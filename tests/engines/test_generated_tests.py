"""The generated promtool tests pass, and together they prove every alert firing and silent."""

from __future__ import annotations

import re
import subprocess
from collections import defaultdict
from pathlib import Path
from typing import Any

import pytest
import yaml

from tests import derived_proofs
from tests.promtool_runs import promtool_test

REPO_ROOT = Path(__file__).resolve().parents[2]
TEST_DIRS = [REPO_ROOT / "generated" / "prometheus" / "tests", REPO_ROOT / "tests" / "golden" / "prometheus" / "tests"]
TEST_FILES = sorted(path for directory in TEST_DIRS for path in directory.glob("*.test.yaml"))
IDS = [f"{p.parent.parent.parent.name}/{p.name}" for p in TEST_FILES]
ALERT_NAME = re.compile(r'alertname="([^"]+)"')
SLO_NAME = re.compile(r'slo="([^"]+)"')


def test_every_rule_file_has_its_generated_tests() -> None:
    for directory in TEST_DIRS:
        rules = {p.name.removesuffix(".rules.yaml") for p in (directory.parent / "rules").glob("*.rules.yaml")}
        tests = {p.name.removesuffix(".test.yaml") for p in directory.glob("*.test.yaml")}
        assert rules == tests
        assert rules


RULE_FILES = sorted(path for directory in TEST_DIRS for path in (directory.parent / "rules").glob("*.yaml"))
RULE_IDS = [f"{p.parent.parent.parent.name}/{p.name}" for p in RULE_FILES]


@pytest.mark.parametrize("path", RULE_FILES, ids=RULE_IDS)
def test_promtool_accepts_the_rules_with_fatal_lint(path: Path) -> None:
    result = subprocess.run(
        ["promtool", "check", "rules", "--lint=all", "--lint-fatal", str(path)],
        capture_output=True,
        text=True,
        check=False,
    )
    assert result.returncode == 0, result.stdout + result.stderr
    assert "SUCCESS" in result.stdout


@pytest.mark.parametrize("path", TEST_FILES, ids=IDS)
def test_promtool_passes_the_generated_tests(path: Path) -> None:
    spec = path.name.removesuffix(".test.yaml")
    if path.parent == derived_proofs.GENERATED / "tests" and spec in derived_proofs.COMPARED:
        # With test_rule_cost's comparison of the derived series in the same run: the inputs load once.
        found = derived_proofs.verdict(spec)
        assert found.generated_tests_pass, found.unexplained[-4000:] or found.output[-4000:]
        return
    result = promtool_test(path)  # one run per proof: other tests that prove the same file reuse it
    assert result.returncode == 0, (result.stdout + result.stderr)[-4000:]
    assert "SUCCESS" in result.stdout


def _alert_names(rules_file: Path) -> dict[str, str]:
    """alert name -> spec name, for every alerting rule in a rules file."""
    data = yaml.safe_load(rules_file.read_text(encoding="utf-8"))
    return {
        rule["alert"]: rule["labels"]["slo"] for group in data["groups"] for rule in group["rules"] if "alert" in rule
    }


def _assertions(test_file: Path) -> tuple[set[str], set[str], set[str]]:
    """(alerts asserted firing, alerts asserted silent, specs asserted entirely silent) in one test file."""
    firing: set[str] = set()
    silent: set[str] = set()
    silent_specs: set[str] = set()
    data: dict[str, Any] = yaml.safe_load(test_file.read_text(encoding="utf-8"))
    for group in data["tests"]:
        for check in group.get("alert_rule_test", []):
            (firing if check["exp_alerts"] else silent).add(check["alertname"])
        for check in group.get("promql_expr_test", []):
            expr = check["expr"]
            if "ALERTS" not in expr:
                continue
            samples = check["exp_samples"]
            named = ALERT_NAME.findall(expr)
            for sample in samples:
                if 'alertstate="firing"' in sample["labels"] or 'alertstate="firing"' in expr:
                    firing.update(ALERT_NAME.findall(sample["labels"]) or named)
            if not samples:
                if named:
                    silent.update(named)
                else:
                    silent_specs.update(SLO_NAME.findall(expr))
    return firing, silent, silent_specs


@pytest.mark.parametrize("directory", TEST_DIRS, ids=["generated", "golden"])
def test_every_alert_is_asserted_firing_and_asserted_silent(directory: Path) -> None:
    alerts: dict[str, str] = {}
    for rules_file in sorted((directory.parent / "rules").glob("*.rules.yaml")):
        alerts.update(_alert_names(rules_file))
    firing: set[str] = set()
    silent: set[str] = set()
    silent_specs: set[str] = set()
    for test_file in sorted(directory.glob("*.test.yaml")):
        f, s, whole = _assertions(test_file)
        firing |= f
        silent |= s
        silent_specs |= whole
    by_spec: dict[str, list[str]] = defaultdict(list)
    for alert, spec in alerts.items():
        by_spec[spec].append(alert)
    never_firing = sorted(set(alerts) - firing)
    never_silent = sorted(a for a in alerts if a not in silent and alerts[a] not in silent_specs)
    assert never_firing == [], f"alerts never asserted firing: {never_firing}"
    assert never_silent == [], f"alerts never asserted silent: {never_silent}"
    assert len(alerts) >= 10
