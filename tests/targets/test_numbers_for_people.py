"""Numbers for people (issue 28, item 5): every observation of a new user's first hour, on the actual outputs.

* ``0.933333333333x burn`` and ``error ratio > 0.00466666666667`` (a factor derived from a budget share):
  now ``0.93x`` and ``0.47%`` in the catalog, the runbook, the rules' annotations, explain and diff.
* ``at least 1.2096e+06`` (seconds) and ``at most 2e+07`` with no unit: now ``at least 14d`` and
  ``at most 20,000,000``.
* ``2d2h`` style durations are written ``2d 2h``.
The threshold in PromQL stays exact: the decimal product of the spec's numbers, never rounded for people.
"""

from __future__ import annotations

import functools
import shutil
from decimal import Decimal
from pathlib import Path

import pytest
import yaml

from compiler.explain import explain
from compiler.model import Model
from compiler.plan import Plan, plan
from compiler.review.facts import plan_facts
from compiler.targets import render_plan
from compiler.text.numbers import go_float
from tests.support import FIXTURE_SPECS, compile_tree

DERIVED = "fixture-ratio-good"  # 99.5% over 28d, a 36h/3h pair spending 5% of the budget: 0.9333x
CERT = "fixture-cert-ttl"  # seconds, at least 14 days left
COUNT = "fixture-gauge"  # a count, at most 20 million

_CERT_SPEC = """apiVersion: slo-compiler/v1
kind: SLO
name: fixture-cert-ttl
family: watch-list-volume
owner: team-a
description: Seconds until the client certificate expires.
slice:
  by: [cluster]
  selector: '{job="kubelet"}'
sli:
  gauge:
    expr: 'min by (cluster) (kubelet_certificate_manager_client_ttl_seconds)'
    aggregate: min
unit: seconds
normal_range:
  min: 1209600
persistence:
  for: 15m
mitigation:
  summary: Rotate the certificate.
  steps: [Rotate it.]
  stop_conditions: [Nothing else is failing.]
  escalation: team-a secondary
"""


def _edit(path: Path, old: str, new: str) -> None:
    text = path.read_text(encoding="utf-8")
    assert old in text, old
    path.write_text(text.replace(old, new, 1), encoding="utf-8")


@functools.cache
def _compiled(root: str) -> tuple[Model, Plan, dict[str, bytes]]:
    specs = Path(root) / "specs"
    shutil.copytree(FIXTURE_SPECS, specs)
    _edit(
        specs / "ratio.yaml",
        "  target: 99.9%\n  period: 28d\n",
        "  target: 99.5%\n  period: 28d\n  burn_alerts:\n"
        "    - {severity: ticket, long: 36h, short: 3h, budget_share: 5%, for: 1h}\n",
    )
    _edit(specs / "gauge.yaml", "  max: 200000\n", "  max: 20000000\n")
    _edit(specs / "gauge.yaml", "  max: 400000\n", "  max: 40000000\n")
    (specs / "cert.yaml").write_text(_CERT_SPEC, encoding="utf-8")
    model = compile_tree(specs)
    alert_plan = plan(model)
    return model, alert_plan, render_plan(alert_plan)


@pytest.fixture(scope="module")
def compiled(tmp_path_factory: pytest.TempPathFactory) -> tuple[Model, Plan, dict[str, bytes]]:
    return _compiled(str(tmp_path_factory.mktemp("numbers")))


def _text(files: dict[str, bytes], path: str) -> str:
    return files[path].decode("utf-8")


def _derived_rule(files: dict[str, bytes]) -> dict[str, str]:
    rules = yaml.safe_load(files[f"prometheus/rules/{DERIVED}.rules.yaml"])
    found = [r for g in rules["groups"] for r in g["rules"] if r.get("labels", {}).get("long_window") == "1d12h"]
    assert len(found) == 1
    return dict(found[0]["annotations"], expr=found[0]["expr"])


def test_the_derived_factor_is_the_float_the_plan_uses(compiled: tuple[Model, Plan, dict[str, bytes]]) -> None:
    model, _, _ = compiled
    slo = next(slo for slo in model.slos if slo.name == DERIVED)
    assert slo.objective is not None
    burn = next(b for b in slo.objective.burn_alerts if b.long_ms == 36 * 3_600_000)
    assert round(burn.factor, 6) == 0.933333  # the case the issue saw: 0.933333333333x


def test_the_rule_threshold_is_the_exact_decimal_product(compiled: tuple[Model, Plan, dict[str, bytes]]) -> None:
    """The PromQL threshold is factor x budget in decimal (not rounded to 12 digits as before: 0.00466666666667)."""
    model, _, files = compiled
    slo = next(slo for slo in model.slos if slo.name == DERIVED)
    assert slo.objective is not None
    burn = next(b for b in slo.objective.burn_alerts if b.long_ms == 36 * 3_600_000)
    exact = Decimal(repr(burn.factor)) * Decimal(repr(slo.objective.budget))
    threshold = go_float(slo.objective.threshold(burn))
    assert Decimal(threshold) == exact
    assert f") > {threshold}\n" in _derived_rule(files)["expr"]
    assert "0.00466666666667" not in _derived_rule(files)["expr"]


def test_rule_annotations_write_the_factor_and_ratio_for_people(
    compiled: tuple[Model, Plan, dict[str, bytes]],
) -> None:
    annotations = _derived_rule(files=compiled[2])
    assert "error budget burning 0.93x too fast over 1d 12h and 3h" in annotations["summary"]
    assert "above 0.93x the budget of the 99.5% objective over 28d (threshold 0.47%)" in annotations["description"]
    assert "0.933333" not in annotations["description"] and "0.00466" not in annotations["description"]


def test_catalog_page_writes_factor_ratio_and_ranges_with_units(
    compiled: tuple[Model, Plan, dict[str, bytes]],
) -> None:
    files = compiled[2]
    derived = _text(files, f"catalog/specs/{DERIVED}.html")
    assert "error ratio over 0.47% (0.93x burn)" in derived
    assert "0.933333" not in derived and "0.00466" not in derived
    assert "<td>at least 14d</td>" in _text(files, f"catalog/specs/{CERT}.html")
    assert "1.2096e+06" not in _text(files, f"catalog/specs/{CERT}.html")
    count = _text(files, f"catalog/specs/{COUNT}.html")
    assert "at most 20,000,000" in count and "2e+07" not in count


def test_runbook_writes_factor_ratio_durations_and_ranges_for_people(
    compiled: tuple[Model, Plan, dict[str, bytes]],
) -> None:
    files = compiled[2]
    derived = _text(files, f"runbooks/{DERIVED}.md")
    assert "above 0.47% (0.93x) for 1h" in derived
    assert "0.933333" not in derived and "0.00466" not in derived
    assert "gone in 30d" in derived  # 28d / 0.9333: 30 days exactly
    cert = _text(files, f"runbooks/{CERT}.md")
    assert "- **Static bounds:** min 14d, max none" in cert and "below min 14d for at least 15m" in cert
    count = _text(files, f"runbooks/{COUNT}.md")
    assert "above max 20,000,000" in count
    for page in (derived, cert, count):  # exponents only in PromQL (queries name a series), never in prose
        assert not [line for line in page.splitlines() if "e+0" in line and "{" not in line]


def test_explain_writes_factor_and_ratio_for_people(compiled: tuple[Model, Plan, dict[str, bytes]]) -> None:
    model, alert_plan, files = compiled
    spec = next(spec for spec in alert_plan.specs if spec.slo.name == DERIVED)
    text = explain(model, spec, files)
    assert "objective: 99.5% over 28d (budget 0.5%)" in text
    assert "1d 12h/3h windows over 0.93x (error ratio over 0.47%), for 1h" in text
    assert "0.933333333333x" not in text and "error ratio > 0.00466666666667" not in text


def test_diff_facts_write_factor_and_ratio_with_the_exact_number(
    compiled: tuple[Model, Plan, dict[str, bytes]],
) -> None:
    """A reviewer reads 0.47%; the exact ratio stays beside it, so two revisions never compare equal by rounding."""
    facts = plan_facts(compiled[1])[DERIVED]
    alert = next(a for a in facts.alerts if a.key.endswith(" 1d12h/3h"))
    found = dict(alert.facts)
    assert found["burn factor"] == "0.93x"
    assert found["threshold"].startswith("error ratio > 0.47% (0.00466666666666")
    assert found["for"] == "1h"
    gauge = dict(next(a for a in plan_facts(compiled[1])[COUNT].alerts if a.kind == "range").facts)
    assert "2e+07" not in gauge["threshold"] and "e+" not in gauge["threshold"]
