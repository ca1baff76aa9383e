"""The generated tests have teeth: break one alert's rule and promtool fails, naming that alert.

Each mutation changes one alerting rule of a generated rules file (thresholds times ten,
comparisons flipped, ``for`` dropped), then runs the spec's generated tests against the
mutated file; only the test groups written for that alert are kept, which also shows that
each alert's own tests catch the mutation.
"""

from __future__ import annotations

import re
import shutil
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest
import yaml

from tests.promtool_runs import promtool_test

REPO_ROOT = Path(__file__).resolve().parents[2]
GOLDEN = REPO_ROOT / "tests" / "golden" / "prometheus"
GENERATED = REPO_ROOT / "generated" / "prometheus"
COMPARISON = re.compile(r"([<>]) (-?[0-9][0-9.e+-]*)")

# (rules directory, spec, alert name, the alert's label that tells rules of one name apart)
SUBJECTS = [
    (GOLDEN, "fixture-ratio-bad", "FixtureRatioBadErrorBudgetBurn", {"long_window": "1h"}),
    (GOLDEN, "fixture-ratio-bad", "FixtureRatioBadErrorBudgetBurn", {"long_window": "6h"}),
    (GOLDEN, "fixture-ratio-bad", "FixtureRatioBadAboveCriticalRange", {}),
    (GOLDEN, "fixture-ratio-bad", "FixtureRatioBadNoData", {}),
    (GOLDEN, "fixture-gauge", "FixtureGaugeAboveNormalRange", {}),
    (GOLDEN, "fixture-gauge", "FixtureGaugeBelowNormalRange", {}),
    (GOLDEN, "fixture-quantile", "FixtureQuantileAboveCriticalRange", {}),
    (GENERATED, "apiserver-list-storm", "APIServerListStormAboveNormalRange", {}),
    (GENERATED, "apf-protected-level-rejections", "APFRejectingProtectedLevelAboveNormalRange", {}),
]


def times_ten(rule: dict[str, Any]) -> bool:
    def scale(match: re.Match[str]) -> str:
        value = float(match.group(2))
        return f"{match.group(1)} {value * 10 if value else 1}"

    mutated = COMPARISON.sub(scale, rule["expr"])
    changed: bool = mutated != rule["expr"]
    rule["expr"] = mutated
    return changed


def flip(rule: dict[str, Any]) -> bool:
    mutated = COMPARISON.sub(lambda m: f"{'<' if m.group(1) == '>' else '>'} {m.group(2)}", rule["expr"])
    changed: bool = mutated != rule["expr"]
    rule["expr"] = mutated
    return changed


def drop_for(rule: dict[str, Any]) -> bool:
    return rule.pop("for", None) is not None


MUTATIONS: dict[str, Callable[[dict[str, Any]], bool]] = {
    "thresholds x10": times_ten,
    "comparison flipped": flip,
    "for dropped": drop_for,
}
CASES = [
    pytest.param(root, spec, alert, labels, mutation, id=f"{spec}:{alert}{''.join(labels.values())}:{mutation}")
    for root, spec, alert, labels in SUBJECTS
    for mutation in MUTATIONS
]


def _about(group: dict[str, Any], alert: str, labels: dict[str, str]) -> bool:
    """The groups written for this alert (for a burn pair, for this window pair)."""
    name: str = group["name"]
    return name.startswith(alert) and all(value in name for value in labels.values())


@pytest.mark.parametrize(("root", "spec", "alert", "labels", "mutation"), CASES)
def test_promtool_fails_for_the_mutated_alert(
    tmp_path: Path, root: Path, spec: str, alert: str, labels: dict[str, str], mutation: str
) -> None:
    rules_doc = yaml.safe_load((root / "rules" / f"{spec}.rules.yaml").read_text(encoding="utf-8"))
    targets = [
        rule
        for rule in rules_doc["groups"][0]["rules"]
        if rule.get("alert") == alert and all(rule["labels"].get(k) == v for k, v in labels.items())
    ]
    assert len(targets) == 1
    if not MUTATIONS[mutation](targets[0]):
        pytest.skip(f"{mutation} does not apply to {alert}")
    (tmp_path / "rules").mkdir()
    (tmp_path / "tests").mkdir()
    (tmp_path / "rules" / f"{spec}.rules.yaml").write_text(yaml.safe_dump(rules_doc, sort_keys=False), "utf-8")
    tests_doc = yaml.safe_load((root / "tests" / f"{spec}.test.yaml").read_text(encoding="utf-8"))
    tests_doc["tests"] = [group for group in tests_doc["tests"] if _about(group, alert, labels)]
    assert tests_doc["tests"]
    test_file = tmp_path / "tests" / f"{spec}.test.yaml"
    test_file.write_text(yaml.safe_dump(tests_doc, sort_keys=False), "utf-8")

    result = promtool_test(test_file)
    assert result.returncode == 1, f"promtool passed with {mutation} on {alert}"
    assert alert in result.stdout + result.stderr


def test_the_unmutated_rules_pass_the_same_reduced_tests(tmp_path: Path) -> None:
    """Control for the test above: copying the files without a mutation passes."""
    for sub in ("rules", "tests"):
        shutil.copytree(GOLDEN / sub, tmp_path / sub)
    # The same proof as test_generated_tests.py's golden/fixture-quantile: one promtool run between them.
    result = promtool_test(tmp_path / "tests" / "fixture-quantile.test.yaml")
    assert result.returncode == 0, result.stderr
