"""Component availability: a spec over ``up`` of one component pages, and silences its readers.

An availability spec (``slice.component`` plus ``explains_component``) explains every other
spec reading the same component. The claims are checked where they live: positioned errors
from ``validate``, the shipped availability specs' rules in the real promtool with one
series per scrape target (all up, most down, none at all), and the inhibit rules in the
real Alertmanager 0.25 (a dead component holds back its readers' pages and no-data tickets
in its cluster, not in another cluster).
"""

from __future__ import annotations

import time
from pathlib import Path
from typing import Any

import yaml

from compiler.model import Model, labels
from compiler.plan import plan_spec
from compiler.targets.prometheus import alert_rules
from compiler.targets.prometheus.proof.gotemplate import render as render_annotation
from tests import servers
from tests.conftest import PROJECT_YAML, VALID_SLO, RunCli
from tests.engines.test_hostile_routing import (
    FAST_TIMING,
    delivered_slices,
    position,
    post_alerts,
    problems,
    reported_at,
    spec_path,
    write_alertmanager,
    write_tree,
)
from tests.promtool_runs import promtool_test
from tests.support import LIBRARY_SPECS, REPO_ROOT, compile_tree

PROFILED_PROJECT = PROJECT_YAML + "scrape_profile:\n  stack: kube-prometheus-stack\n"
FAST_PROJECT = PROFILED_PROJECT + f"alertmanager:\n  timing:\n    page: {FAST_TIMING}\n    ticket: {FAST_TIMING}\n"

AVAILABILITY_SPEC = """\
apiVersion: slo-compiler/v1
kind: SLO
name: dns-availability
family: node-network-errors
owner: platform-network
description: Share of CoreDNS targets up.
slice:
  by: [cluster]
  component: coredns
sli:
  gauge:
    expr: 'avg by (cluster) (up)'
    aggregate: avg
unit: ratio
normal_range:
  min: 0.5
  severity: page
persistence:
  for: 5m
no_data: {for: 5m, severity: page}
explains_component:
  equal: [cluster]
mitigation:
  summary: Bring CoreDNS back.
  steps:
    - kubectl -n kube-system get pods -l k8s-app=kube-dns.
  stop_conditions:
    - nslookup answers.
  escalation: Page the network on-call.
"""


def reader(name: str, *, by: str = "[cluster]", explains: str = "") -> str:
    """The valid spec of conftest reading CoreDNS through the scrape profile."""
    text = VALID_SLO.replace("name: dns-errors", f"name: {name}").replace("by: [cluster]", f"by: {by}")
    text = text.replace("  selector: '{job=\"kube-dns\"}'\n", "  component: coredns\n")
    return text + (f"explains:\n{explains}" if explains else "")


# -- the model: every reader is explained --------------------------------------------------


def test_shipped_availability_specs_explain_every_reader_of_their_component() -> None:
    model = compile_tree(LIBRARY_SPECS)
    slos = {slo.name: slo for slo in model.slos}
    for name, component in (
        ("apiserver-availability", "apiserver"),
        ("kube-state-metrics-availability", "kube-state-metrics"),
        ("coredns-availability", "coredns"),
        ("kube-scheduler-availability", "kube-scheduler"),
    ):
        readers = {s.name for s in model.slos if s.slice.component == component and s.name != name}
        assert readers, component  # each component has specs that go blind without it
        explained = {e.slo for e in slos[name].explains}
        assert explained == readers, (name, readers ^ explained)
        assert all(e.equal == ("cluster",) and e.severity == "page" for e in slos[name].explains)
    assert {"node-readiness", "node-readiness-flapping"} <= {
        e.slo for e in slos["kube-state-metrics-availability"].explains
    }


# -- positioned errors ----------------------------------------------------------------------


def test_explains_component_without_slice_component_is_error(tmp_path: Path, run_cli: RunCli) -> None:
    spec = AVAILABILITY_SPEC.replace("  component: coredns\n", "  selector: '{job=\"coredns\"}'\n")
    write_tree(tmp_path, {"dns-availability": spec}, project=PROFILED_PROJECT)
    found = problems(run_cli, tmp_path)
    path = spec_path(tmp_path, "dns-availability")
    at = position(path, "equal: [cluster]", after="explains_component:")
    reported_at(found, tmp_path, path, at, "explains_component needs slice.component", "slice.component: apiserver")
    assert len(found) == 1, found


def test_explains_component_equal_empty_is_error(tmp_path: Path, run_cli: RunCli) -> None:
    spec = AVAILABILITY_SPEC.replace("  equal: [cluster]\n", "  equal: []\n")
    write_tree(tmp_path, {"dns-availability": spec, "dns-errors": reader("dns-errors")}, project=PROFILED_PROJECT)
    found = problems(run_cli, tmp_path)
    path = spec_path(tmp_path, "dns-availability")
    at = position(path, "[]", after="explains_component:")
    reported_at(found, tmp_path, path, at, "equal: []", "silence every coredns reader in every slice")
    assert len(found) == 1, found


def test_explains_component_label_a_reader_lacks_is_error(tmp_path: Path, run_cli: RunCli) -> None:
    """Alertmanager treats a label missing on both alerts as equal, so every reader must slice by it."""
    specs = {
        "dns-availability": AVAILABILITY_SPEC.replace("by: [cluster]", "by: [cluster, zone]")
        .replace("avg by (cluster)", "avg by (cluster, zone)")
        .replace("equal: [cluster]", "equal: [cluster, zone]"),
        "dns-errors": reader("dns-errors"),
        "dns-zonal": reader("dns-zonal", by="[cluster, zone]"),
    }
    write_tree(tmp_path, specs, project=PROFILED_PROJECT)
    found = problems(run_cli, tmp_path)
    path = spec_path(tmp_path, "dns-availability")
    at = position(path, "zone]", after="explains_component:")
    reported_at(found, tmp_path, path, at, "'zone' is not a slice label of dns-errors,", "component coredns")
    assert len(found) == 1, found


def test_explains_component_from_spec_without_page_is_error(tmp_path: Path, run_cli: RunCli) -> None:
    spec = AVAILABILITY_SPEC.replace("  severity: page\npersistence", "persistence").replace(
        "no_data: {for: 5m, severity: page}", "no_data: {for: 5m, severity: ticket}"
    )
    write_tree(tmp_path, {"dns-availability": spec, "dns-errors": reader("dns-errors")}, project=PROFILED_PROJECT)
    found = problems(run_cli, tmp_path)
    path = spec_path(tmp_path, "dns-availability")
    at = position(path, "equal: [cluster]", after="explains_component:")
    reported_at(found, tmp_path, path, at, "explains_component can never inhibit", "its alerts are ticket")
    assert len(found) == 1, found


def test_reader_explaining_its_availability_spec_back_is_a_cycle(tmp_path: Path, run_cli: RunCli) -> None:
    back = "  - {slo: dns-availability, equal: [cluster]}\n"
    specs = {"dns-availability": AVAILABILITY_SPEC, "dns-errors": reader("dns-errors", explains=back)}
    write_tree(tmp_path, specs, project=PROFILED_PROJECT)
    found = problems(run_cli, tmp_path)
    path = spec_path(tmp_path, "dns-availability")
    at = position(path, "equal: [cluster]", after="explains_component:")
    reported_at(found, tmp_path, path, at, "explains cycle dns-availability -> dns-errors -> dns-availability")
    assert len(found) == 1, found


def test_two_availability_specs_of_one_component_do_not_explain_each_other(tmp_path: Path) -> None:
    second = AVAILABILITY_SPEC.replace("name: dns-availability", "name: dns-availability-strict").replace(
        "min: 0.5", "min: 0.9"
    )
    spec_dir = write_tree(
        tmp_path,
        {"dns-availability": AVAILABILITY_SPEC, "dns-availability-strict": second, "dns-errors": reader("dns-errors")},
        project=PROFILED_PROJECT,
    )
    model = compile_tree(spec_dir, cwd=tmp_path)
    for slo in model.slos:
        if slo.explains_component is not None:
            assert [e.slo for e in slo.explains] == ["dns-errors"], slo.name


# -- the shipped rules in promtool, one series per target ----------------------------------

APISERVER_RULES = REPO_ROOT / "generated" / "prometheus" / "rules" / "apiserver-availability.rules.yaml"
BELOW = "KubeAPIServerTargetsBelowNormalRange"
NO_DATA = "KubeAPIServerTargetsNoData"


def _targets(values: tuple[str, str, str]) -> list[dict[str, str]]:
    return [
        {"series": f'up{{job="apiserver",cluster="c1",instance="10.0.0.{i}:6443"}}', "values": value}
        for i, value in enumerate(values, start=1)
    ]


def _firing(alert: str, at: str, count: int | None) -> dict[str, Any]:
    expr = f'count(ALERTS{{alertname="{alert}",alertstate="firing"}})'
    return {"expr": expr, "eval_time": at, "exp_samples": [] if count is None else [{"labels": "{}", "value": count}]}


PROMTOOL_CASES: dict[str, dict[str, Any]] = {
    "all three apiservers up: silent for 40m": {
        "input_series": _targets(("1x40", "1x40", "1x40")),
        "promql_expr_test": [_firing(BELOW, t, None) for t in ("10m", "40m")] + [_firing(NO_DATA, "40m", None)],
    },
    "one of three down (share 0.67): silent": {
        "input_series": _targets(("1x40", "1x40", "1x9 0x31")),
        "promql_expr_test": [_firing(BELOW, "40m", None)],
    },
    "two of three down at 10m (share 0.33): pending at 14m, fires by 16m": {
        "input_series": _targets(("1x40", "1x9 0x31", "1x9 0x31")),
        "promql_expr_test": [_firing(BELOW, "14m", None), _firing(BELOW, "16m", 1), _firing(NO_DATA, "16m", None)],
    },
    "every target down (share 0): fires, the targets are still scraped so no NoData": {
        "input_series": _targets(("0x40", "0x40", "0x40")),
        "promql_expr_test": [_firing(BELOW, "7m", 1), _firing(NO_DATA, "20m", None)],
    },
    "no apiserver target at all (absent up): NoData pages after 5m": {
        "input_series": [{"series": 'up{job="kubelet",cluster="c1",instance="n1"}', "values": "1x40"}],
        "promql_expr_test": [_firing(NO_DATA, "4m", None), _firing(NO_DATA, "7m", 1), _firing(BELOW, "7m", None)],
    },
}


def test_shipped_apiserver_availability_rules_judge_targets_in_promtool(tmp_path: Path) -> None:
    """The generated rules, fed one ``up`` series per target: the claims of the table in docs/spec-reference.md.

    Each case is its own promtool test group; a broken case fails with promtool's own message.
    """
    tests = [{"name": name, "interval": "1m", **case} for name, case in PROMTOOL_CASES.items()]
    test_file = tmp_path / "availability.test.yaml"
    test_file.write_text(
        yaml.safe_dump({"rule_files": [str(APISERVER_RULES)], "evaluation_interval": "1m", "tests": tests}),
        encoding="utf-8",
    )
    result = promtool_test(test_file, timeout=120)
    assert result.returncode == 0, result.stdout + result.stderr
    assert result.stdout.count("SUCCESS") >= 1, result.stdout


def test_promtool_cases_can_fail(tmp_path: Path) -> None:
    """The harness is not vacuous: claiming the two-down case stays silent at 16m fails in promtool."""
    case = PROMTOOL_CASES["two of three down at 10m (share 0.33): pending at 14m, fires by 16m"]
    wrong = {"name": "wrong", "interval": "1m", "input_series": case["input_series"]}
    wrong["promql_expr_test"] = [_firing(BELOW, "16m", None)]
    test_file = tmp_path / "wrong.test.yaml"
    test_file.write_text(
        yaml.safe_dump({"rule_files": [str(APISERVER_RULES)], "evaluation_interval": "1m", "tests": [wrong]}),
        encoding="utf-8",
    )
    result = promtool_test(test_file, timeout=120)
    assert result.returncode == 1, result.stdout + result.stderr


# -- the inhibit rules in the real Alertmanager ---------------------------------------------


def _alert(model: Model, name: str, kind_suffix: str, cluster: str | None) -> dict[str, Any]:
    """A firing alert of spec ``name`` whose alert name ends with ``kind_suffix``, as Prometheus sends it."""
    slo = next(slo for slo in model.slos if slo.name == name)
    rule = next(rule for rule in alert_rules(model, plan_spec(slo)) if rule.name.endswith(kind_suffix))
    alert_labels = {labels.ALERTNAME: rule.name, **rule.labels}
    if cluster is not None:
        alert_labels["cluster"] = cluster
    annotations = {key: render_annotation(value, alert_labels, 0.5) for key, value in rule.annotations.items()}
    return {"labels": alert_labels, "annotations": annotations}


def test_component_down_page_holds_back_its_readers_in_alertmanager(tmp_path: Path) -> None:
    """CoreDNS down in c1: the reader's c1 page and its no-data ticket are suppressed, c2's page is not."""
    with servers.webhook() as hook:
        url = f"http://127.0.0.1:{hook.port}"
        owners = (
            "apiVersion: slo-compiler/v1\nkind: Owners\nteams:\n  - name: platform-network\n"
            f'    contact: "#net"\n    receivers: {{page: [{{webhook: {{url: "{url}/page"}}}}], '
            f'ticket: [{{webhook: {{url: "{url}/ticket"}}}}]}}\n'
        )
        spec_dir = write_tree(
            tmp_path,
            {"dns-availability": AVAILABILITY_SPEC, "dns-errors": reader("dns-errors")},
            owners=owners,
            project=FAST_PROJECT,
        )
        model = compile_tree(spec_dir, cwd=tmp_path)
        config = write_alertmanager(model, tmp_path / "out")
        cause = _alert(model, "dns-availability", "BelowNormalRange", "c1")
        symptoms = [_alert(model, "dns-errors", "ErrorBudgetBurn", c) for c in ("c1", "c2")]
        no_data = _alert(model, "dns-errors", "NoData", None)
        with servers.alertmanager(tmp_path, config) as am:
            post_alerts(am, [cause])
            assert servers.wait_until(lambda: len(am.alerts()) == 1, 10)
            post_alerts(am, [*symptoms, no_data])
            expected = {("dns-availability", "c1"), ("dns-errors", "c2")}
            assert servers.wait_until(lambda: delivered_slices(hook, "page") >= expected, 20), hook.received
            time.sleep(3)  # three group intervals: a held-back alert would have gone out by now
            assert delivered_slices(hook, "page") == expected, hook.received
            assert hook.alerts("ticket") == [], hook.received
            states = {(a["labels"]["alertname"], a["labels"].get("cluster")): a["status"] for a in am.alerts()}
            suppressed = {key for key, status in states.items() if status["state"] == "suppressed"}
            assert suppressed == {
                (symptoms[0]["labels"]["alertname"], "c1"),
                (no_data["labels"]["alertname"], None),
            }, states
