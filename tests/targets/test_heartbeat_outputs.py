"""Issue 27: the heartbeat and the root route in the rendered files (rules per evaluator, routes, receivers, runbook).

The engines check the same files for real in tests/engines/test_heartbeat.py; here, what each
file must say: one always-firing rule per evaluator the profiles target, a route per evaluator
first in the tree that reaches only the heartbeat service, never a resolved notification, the
root's receiver the project names, and a fragment that leaves the root to its user.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest
import yaml

from compiler.model import heartbeat as hb
from compiler.plan import plan
from compiler.plan.watch import FOREIGN_DROPPED
from compiler.targets import alertmanager, render_all, runbooks
from tests.conftest import VALID_SLO
from tests.support import compile_tree

OWNERS = """\
apiVersion: slo-compiler/v1
kind: Owners
teams:
  - name: platform-network
    contact: "#platform-network"
    receivers: {page: [{pagerduty: {routing_key_file: /etc/am/pd}}], ticket: [{webhook: {url: "http://127.0.0.1:9/t"}}]}
"""
PROFILES = """\
rule_profiles:
  prometheus_operator: {namespace: monitoring, labels: {release: kps}}
  thanos: {partial_response_strategy: warn}
  mimir: {tenant: platform}
  vmalert: {}
"""
OPSGENIE = "heartbeat:\n  receiver: {opsgenie: {name: watch, api_key_file: /etc/am/og, api_url: https://api.eu.opsgenie.com}}\n"
WEBHOOK = (
    'heartbeat:\n  receiver: {webhook: {url: "https://hc.example.com/ping/abc", credentials_file: /etc/am/hc}}\n'
    "  interval: 20s\n"
)
FOREIGN = "foreign_alerts: {team: platform-network, channel: page}\n"


def _files(tmp_path: Path, extra: str) -> dict[str, bytes]:
    specs = tmp_path / "specs"
    specs.mkdir(parents=True)
    (specs / "owners.yaml").write_text(OWNERS, encoding="utf-8")
    project = "apiVersion: slo-compiler/v1\nkind: Project\nrunbook_base_url: https://rb.example.com\n" + extra
    project += "example_links: true\n"  # the plan's other warnings are what these tests read
    (specs / "project.yaml").write_text(project, encoding="utf-8")
    (specs / "dns-errors.yaml").write_text(VALID_SLO, encoding="utf-8")
    return render_all(compile_tree(specs, cwd=tmp_path))


def _load(files: dict[str, bytes], path: str) -> Any:
    return yaml.safe_load(files[path])


EVALUATOR_FILES = {
    "prometheus": "prometheus/heartbeat/slo-compiler-heartbeat.rules.yaml",
    "prometheus-operator": "prometheus-operator/heartbeat/slo-compiler-heartbeat.yaml",
    "thanos-ruler": "thanos/heartbeat/slo-compiler-heartbeat.rules.yaml",
    "mimir-ruler": "mimir/platform/heartbeat/slo-compiler-heartbeat.yaml",
    "vmalert": "vmalert/heartbeat/slo-compiler-heartbeat.rules.yaml",
}


def _groups(document: Any) -> list[dict[str, Any]]:
    groups: list[dict[str, Any]] = document["spec"]["groups"] if "spec" in document else document["groups"]
    return groups


def test_one_always_firing_heartbeat_per_evaluator_the_profiles_target(tmp_path: Path) -> None:
    files = _files(tmp_path, OPSGENIE + PROFILES)
    for evaluator, path in EVALUATOR_FILES.items():
        (group,) = _groups(_load(files, path))
        assert group["name"] == "slo-compiler.heartbeat"
        (rule,) = group["rules"]
        assert (rule["alert"], rule["expr"]) == ("SloCompilerHeartbeat", "vector(1)")
        assert rule["labels"] == {"severity": "none", "slo_compiler": "heartbeat", "evaluator": evaluator}
        assert "for" not in rule and "keep_firing_for" not in rule
        assert rule["annotations"]["runbook_url"] == "https://rb.example.com/HEARTBEAT.md"
    assert _groups(_load(files, EVALUATOR_FILES["thanos-ruler"]))[0]["partial_response_strategy"] == "warn"
    operator = _load(files, EVALUATOR_FILES["prometheus-operator"])
    assert operator["kind"] == "PrometheusRule" and operator["metadata"]["labels"]["release"] == "kps"
    assert _load(files, EVALUATOR_FILES["mimir-ruler"])["namespace"] == "slo-compiler.heartbeat"
    assert [e.name for e in hb.evaluators(compile_tree(tmp_path / "specs", cwd=tmp_path).project)] == list(
        EVALUATOR_FILES
    )


def test_without_a_heartbeat_no_heartbeat_is_written(tmp_path: Path) -> None:
    files = _files(tmp_path, PROFILES)
    assert not [path for path in files if "heartbeat" in path.lower()]
    config = _load(files, alertmanager.CONFIG_PATH)
    assert not [r for r in config["route"]["routes"] if 'slo_compiler="heartbeat"' in r["matchers"]]
    assert config["route"]["receiver"] == "unrouted" and {"name": "unrouted"} in config["receivers"]


def test_heartbeat_routes_come_first_reach_only_the_heartbeat_and_repeat_every_interval(tmp_path: Path) -> None:
    files = _files(tmp_path, WEBHOOK + PROFILES)
    routes = _load(files, alertmanager.CONFIG_PATH)["route"]["routes"]
    heartbeats, rest = routes[:5], routes[5:]
    for route, evaluator in zip(heartbeats, EVALUATOR_FILES, strict=True):
        assert route == {
            "matchers": ['slo_compiler="heartbeat"', f'evaluator="{evaluator}"'],
            "receiver": f"heartbeat-{evaluator}",
            "group_by": ["..."],
            "group_wait": "0s",
            "group_interval": "20s",
            "repeat_interval": "10s",  # shorter than group_interval, so every flush sends (see model.heartbeat)
            "continue": False,
        }
    assert all(route["matchers"][0] == 'slo_compiler="true"' for route in rest)
    rules = _load(files, alertmanager.CONFIG_PATH)["inhibit_rules"]
    assert rules and all(r["source_matchers"][0] == r["target_matchers"][0] == 'slo_compiler="true"' for r in rules), (
        "an inhibit rule that could match the heartbeat"
    )


@pytest.mark.parametrize(
    ("extra", "config"),
    [
        (
            WEBHOOK,
            {
                "url": "https://hc.example.com/ping/abc",
                "http_config": {"authorization": {"credentials_file": "/etc/am/hc"}},
                "send_resolved": False,
            },
        ),
        (
            OPSGENIE,
            {
                "url": "https://api.eu.opsgenie.com/v2/heartbeats/watch-prometheus/ping",
                "http_config": {"authorization": {"type": "GenieKey", "credentials_file": "/etc/am/og"}},
                "send_resolved": False,
            },
        ),
    ],
    ids=["webhook", "opsgenie"],
)
def test_heartbeat_receiver_pings_the_service_and_never_sends_resolved(
    tmp_path: Path, extra: str, config: dict[str, Any]
) -> None:
    receivers = {r["name"]: r for r in _load(_files(tmp_path, extra), alertmanager.CONFIG_PATH)["receivers"]}
    assert receivers["heartbeat-prometheus"] == {"name": "heartbeat-prometheus", "webhook_configs": [config]}


def test_unrouted_foreign_alerts_go_to_the_receiver_the_project_names(tmp_path: Path) -> None:
    files = _files(tmp_path, FOREIGN)
    config = _load(files, alertmanager.CONFIG_PATH)
    assert config["route"]["receiver"] == "platform-network-page"
    assert "unrouted" not in {r["name"] for r in config["receivers"]}
    foreign = [c for c in _load(files, alertmanager.ROUTING_TESTS_PATH) if "slo_compiler" not in c["labels"]]
    assert foreign and all(c["receivers"] == ["platform-network-page"] for c in foreign)


def test_fragment_users_keep_their_own_root(tmp_path: Path) -> None:
    files = _files(tmp_path, FOREIGN + WEBHOOK)
    fragment = _load(files, alertmanager.FRAGMENT_PATH)
    config = _load(files, alertmanager.CONFIG_PATH)
    assert set(fragment) == {"routes", "receivers", "inhibit_rules"}  # no root route, no root receiver
    assert fragment["routes"] == config["route"]["routes"]  # the heartbeat routes travel with the fragment
    assert fragment["routes"][0]["receiver"] == "heartbeat-prometheus"
    assert (
        b"# result. Your root route keeps deciding where alerts the compiler did not make go.\n"
        in files[alertmanager.FRAGMENT_PATH]
    )


def test_heartbeat_routing_cases(tmp_path: Path) -> None:
    cases = _load(_files(tmp_path, WEBHOOK + FOREIGN), alertmanager.ROUTING_TESTS_PATH)
    heartbeat = [c for c in cases if c["labels"].get("slo_compiler") == "heartbeat"]
    assert heartbeat == [
        {
            "labels": {
                "alertname": "SloCompilerHeartbeat",
                "severity": "none",
                "slo_compiler": "heartbeat",
                "evaluator": "prometheus",
            },
            "receivers": ["heartbeat-prometheus"],
        }
    ]


def test_heartbeat_runbook_is_written_and_linked(tmp_path: Path) -> None:
    files = _files(tmp_path, OPSGENIE + PROFILES)
    page = files[hb.RUNBOOK_PATH].decode()
    assert page.startswith("# The heartbeat stopped\n")
    for needle in (
        "Opsgenie heartbeat watch-thanos-ruler",
        "kubectl -n monitoring logs <prometheus pod> -c prometheus --previous",
        "curl -s http://alertmanager-operated.monitoring.svc:9093/-/ready",
        "OOMKilled",
        "Do **not** ping the heartbeat by hand",
        "https://api.eu.opsgenie.com/v2/heartbeats/watch-prometheus",
    ):
        assert needle in page, needle
    assert "(HEARTBEAT.md)" in files[runbooks.INDEX_PATH].decode()
    assert b"HEARTBEAT" not in _files(tmp_path / "bare", "")[runbooks.INDEX_PATH]


def test_the_plan_warns_only_about_what_is_missing(tmp_path: Path) -> None:
    specs = tmp_path / "specs"
    _files(tmp_path, WEBHOOK)
    warnings = plan(compile_tree(specs, cwd=tmp_path)).warnings
    assert [w.message for w in warnings] == [FOREIGN_DROPPED]
