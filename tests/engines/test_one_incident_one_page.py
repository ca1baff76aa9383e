"""One incident, one page (issue 24): a zone partition and an etcd quorum loss in the real Alertmanager 0.25.

The shipped configuration (``generated/alertmanager/alertmanager.yaml``, its routes, grouping,
timing and inhibit rules untouched) runs with every receiver's integrations replaced by a
webhook to a local sink, the only change: the real receivers need PagerDuty keys and Slack
URLs. Each incident posts the alerts the generated rules raise for it, with the label sets
those rules give them (read from ``generated/prometheus/rules``: a rule's labels, its
alertname and the slice labels its summary names), cause first, as the cause fires first:

* zone partition in c1, zone us-east-1b of a 7,500-node fleet (3 zones, 24 pools: the 72
  pool-zone slices of node-readiness): the zone page and its ticket, and for each of the
  24 pools of the zone the node-readiness page, its normal-range and 1h/5m burn tickets, and
  the per-node tickets of its 104 nodes;
* etcd quorum loss in c2 (every member up, none with a leader): the etcd-leader page, then
  etcd's own gRPC failure pages (three methods), the apiserver-5xx page, the apiserver
  read-latency burn pages (both pairs, each scope), the write-latency burn pages, the
  scheduler-backlog page, and the node-readiness page of every pool-zone (node leases expire).

Pages are counted where they arrive, at the sink, once the longest page ``group_wait`` (30 s)
has passed: each POST is one notification. Tickets wait 5 minutes before their first
notification, so they are counted from ``/api/v2/alerts/groups``: a group with an alert that
is not suppressed will notify at its ``group_wait``, a group of held-back alerts never will.
"""

from __future__ import annotations

import functools
import re
import shutil
import time
from collections import Counter
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any

import yaml

from tests import servers
from tests.engines.test_hostile_routing import post_alerts
from tests.promtool_runs import promtool_test
from tests.support import REPO_ROOT

GENERATED = REPO_ROOT / "generated"
ZONE = "us-east-1b"
ZONE_KEY = f"us-east-1:\x00:{ZONE}"  # the node lifecycle controller's zone label (GetZoneKey)
ZONE_KEY_PROMQL = f"us-east-1:\\x00:{ZONE}"  # the same, as an escape in a PromQL string
POOLS = [f"pool-{index:02d}" for index in range(1, 25)]  # 24 pools x 3 zones = 72 slices
NODES_PER_POOL = 104  # 2,496 of the zone's 2,500 nodes
ZONES = ["us-east-1a", ZONE, "us-east-1c"]
SCOPES = ["resource", "namespace", "cluster"]
PAGE_WAIT_S = 30  # the longest page group_wait of the shipped config (platform-nodes, platform-scheduling)
_SLICE_IN_SUMMARY = re.compile(r"(\w+)=\{\{ \$labels\.(\w+) \}\}")


@functools.cache
def _alert_rules(path: Path) -> list[dict[str, Any]]:
    document = yaml.safe_load(path.read_text(encoding="utf-8"))
    return [item for group in document["groups"] for item in group["rules"] if "alert" in item]


def rule(rules: Path, spec: str, alertname: str, **labels: str) -> dict[str, Any]:
    """The one generated alerting rule of ``spec`` named ``alertname`` whose labels include ``labels``."""
    found = [
        item
        for item in _alert_rules(rules / f"{spec}.rules.yaml")
        if item["alert"] == alertname and labels.items() <= item["labels"].items()
    ]
    assert len(found) == 1, f"{spec}: {len(found)} rules {alertname} with {labels}"
    return dict(found[0])


def alert(rules: Path, spec: str, alertname: str, values: dict[str, str], **labels: str) -> dict[str, Any]:
    """A firing alert as Prometheus would send it: the rule's labels, and the slice labels its summary names.

    ``values`` gives a value for every slice label any spec of the incident may use; the rule
    takes those it carries. The annotations are the rule's literal text (templates unrendered),
    enough for ``holds_back``, which is literal.
    """
    found = rule(rules, spec, alertname, **labels)
    names = {name for name, _ in _SLICE_IN_SUMMARY.findall(found["annotations"]["summary"])}
    # Prometheus sends startsAt = the moment the alert fired, so for a new alert about now. An
    # older startsAt makes Alertmanager flush a new group at once instead of after group_wait,
    # racing the inhibitor, which learns of a cause posted in the same request concurrently.
    start = datetime.now(UTC)
    return {
        "labels": {"alertname": alertname, **found["labels"], **{name: values[name] for name in sorted(names)}},
        "annotations": found["annotations"],
        "startsAt": start.isoformat(),
        "endsAt": (start + timedelta(hours=2)).isoformat(),
    }


def zone_partition(rules: Path, cluster: str) -> tuple[list[dict[str, Any]], list[dict[str, Any]]]:
    """(cause, symptoms): the zone page and ticket; each pool-zone's page, tickets and per-node tickets."""
    zone = {"cluster": cluster, "zone": ZONE_KEY, "label_topology_kubernetes_io_zone": ZONE}
    cause = [
        alert(rules, "node-lifecycle-zone-health", "NodeLifecycleZoneHealthBelowCriticalRange", zone),
        alert(rules, "node-lifecycle-zone-health", "NodeLifecycleZoneHealthBelowNormalRange", zone),
    ]
    symptoms = []
    for pool in POOLS:
        values = {**zone, "label_node_pool": pool}
        symptoms += [
            alert(rules, "node-readiness", "NodeReadinessAboveCriticalRange", values),
            alert(rules, "node-readiness", "NodeReadinessAboveNormalRange", values),
            alert(rules, "node-readiness", "NodeReadinessErrorBudgetBurn", values, long_window="1h"),
        ]
        for index in range(NODES_PER_POOL):
            node = {**values, "node": f"ip-10-1-{POOLS.index(pool)}-{index}.ec2.internal"}
            symptoms.append(alert(rules, "node-readiness", "NodeReadinessUnitAboveCriticalRange", node))
    return cause, symptoms


GRPC_METHODS = (("etcdserverpb.KV", "Txn"), ("etcdserverpb.KV", "Range"), ("etcdserverpb.Lease", "LeaseGrant"))


def quorum_loss(rules: Path, cluster: str) -> tuple[list[dict[str, Any]], list[dict[str, Any]]]:
    """(cause, symptoms): etcd without a leader on every member; the apiserver, scheduler and node pages."""
    members = [{"cluster": cluster, "instance": f"10.0.0.{index}:2379"} for index in range(1, 6)]
    # One alert per distinct label set: per member while etcd-leader was sliced by instance
    # (before issue 24), one per cluster since.
    cause: list[dict[str, Any]] = []
    for member in members:
        found = alert(rules, "etcd-leader", "EtcdNoLeaderBelowNormalRange", member)
        if all(found["labels"] != other["labels"] for other in cause):
            cause.append(found)
    values = {"cluster": cluster}
    symptoms = [alert(rules, "apiserver-5xx", "APIServerErrorsAboveCriticalRange", values)]
    for window in ("1h", "6h"):
        symptoms.append(
            alert(rules, "apiserver-write-latency", "ApiserverWriteLatencyErrorBudgetBurn", values, long_window=window)
        )
        for scope in SCOPES:
            symptoms.append(
                alert(
                    rules,
                    "apiserver-read-latency",
                    "ApiserverReadLatencyErrorBudgetBurn",
                    {**values, "scope": scope},
                    long_window=window,
                )
            )
    symptoms.append(alert(rules, "scheduler-backlog", "SchedulerBacklogAboveCriticalRange", values))
    # etcd's own gRPC calls fail Unavailable on every method without a leader (the lab's real etcd shows it)
    for service, method in GRPC_METHODS:
        grpc = {**values, "grpc_service": service, "grpc_method": method}
        symptoms.append(alert(rules, "etcd-grpc-failures", "EtcdGRPCFailuresAboveCriticalRange", grpc))
    for zone in ZONES:
        for pool in POOLS:
            slice_ = {**values, "label_node_pool": pool, "label_topology_kubernetes_io_zone": zone}
            symptoms.append(alert(rules, "node-readiness", "NodeReadinessAboveCriticalRange", slice_))
    return cause, symptoms


def sink_config(generated: Path, hook: servers.Webhook, out: Path) -> Path:
    """The shipped config with every receiver a webhook to the sink at /<receiver>; nothing else changed."""
    config = yaml.safe_load((generated / "alertmanager" / "alertmanager.yaml").read_text(encoding="utf-8"))
    config["global"] = {"resolve_timeout": config["global"]["resolve_timeout"]}  # no e-mail receiver is left
    config["receivers"] = [
        {
            "name": receiver["name"],
            "webhook_configs": [{"url": f"http://127.0.0.1:{hook.port}/{receiver['name']}", "send_resolved": False}],
        }
        for receiver in config["receivers"]
    ]
    out.mkdir(parents=True, exist_ok=True)
    shutil.copytree(generated / "alertmanager" / "templates", out / "templates", dirs_exist_ok=True)
    path = out / "alertmanager.yaml"
    path.write_text(yaml.safe_dump(config, sort_keys=False), encoding="utf-8")
    return path


def notifications(
    generated: Path, workdir: Path, incidents: dict[str, tuple[list[dict[str, Any]], list[dict[str, Any]]]]
) -> dict[str, dict[str, Counter[str]]]:
    """Per incident (its cluster) and receiver: pages delivered, ticket notifications due, groups held back.

    A held-back group is one whose every alert is suppressed (inhibited): it never notifies.
    """
    with servers.webhook() as hook:
        config = sink_config(generated, hook, workdir / "config")
        with servers.alertmanager(workdir, config) as am:
            causes = [item for cause, _ in incidents.values() for item in cause]
            post_alerts(am, causes)
            assert servers.wait_until(lambda: len(am.alerts()) == len(causes), 10)
            symptoms = [item for _, symptom in incidents.values() for item in symptom]
            for start in range(0, len(symptoms), 500):
                post_alerts(am, symptoms[start : start + 500])
            posted = len(causes) + len(symptoms)
            assert servers.wait_until(lambda: len(am.alerts()) == posted, 30), len(am.alerts())
            # Every group was created within a few seconds; the page groups flush after their
            # group_wait, held-back ones with nothing to send.
            time.sleep(PAGE_WAIT_S + 5)
            groups = servers.http_json(f"{am.url}/api/v2/alerts/groups")
            delivered = {receiver: list(hook.received[receiver]) for receiver in hook.receivers()}
    counts: dict[str, dict[str, Counter[str]]] = {
        cluster: {"pages": Counter(), "tickets": Counter(), "held": Counter()} for cluster in incidents
    }
    for receiver, payloads in delivered.items():
        for payload in payloads:
            clusters = {item["labels"].get("cluster") for item in payload["alerts"]}
            assert len(clusters) == 1, payload["groupLabels"]
            counts[clusters.pop()]["pages"][receiver] += 1
    for group in groups:
        receiver, cluster = group["receiver"]["name"], group["alerts"][0]["labels"]["cluster"]
        if all(item["status"]["state"] == "suppressed" for item in group["alerts"]):
            counts[cluster]["held"][receiver] += 1
        elif receiver.endswith("-ticket"):
            counts[cluster]["tickets"][receiver] += 1
    return counts


def test_a_zone_partition_and_a_quorum_loss_each_page_their_owner_once(tmp_path: Path) -> None:
    rules = GENERATED / "prometheus" / "rules"
    incidents = {"c1": zone_partition(rules, "c1"), "c2": quorum_loss(rules, "c2")}
    counts = notifications(GENERATED, tmp_path, incidents)
    print({cluster: {kind: dict(found) for kind, found in kinds.items()} for cluster, kinds in counts.items()})
    zone, quorum = counts["c1"], counts["c2"]
    assert zone["pages"] == {"platform-nodes-page": 1} and not zone["tickets"], zone
    # Held back: each pool-zone's page; its normal-range and burn tickets, each node's ticket, the zone's ticket.
    pools = len(POOLS)
    assert zone["held"] == {
        "platform-nodes-page": pools,
        "platform-nodes-ticket": 2 * pools + pools * NODES_PER_POOL + 1,
    }
    assert quorum["pages"] == {"platform-apiserver-page": 1} and not quorum["tickets"], quorum
    # Held back: 5xx, write latency (one group, both pairs), read latency (a group per scope), etcd's
    # gRPC failures (a group per method); the scheduler backlog; every pool-zone's node-readiness page.
    assert quorum["held"] == {
        "platform-apiserver-page": 2 + len(SCOPES) + len(GRPC_METHODS),
        "platform-scheduling-page": 1,
        "platform-nodes-page": pools * len(ZONES),
    }, quorum


def test_the_page_that_holds_back_names_what_it_holds_back() -> None:
    """The one page of each incident links the runbook of every spec it holds back (``holds_back``)."""
    rules = GENERATED / "prometheus" / "rules"
    zone = rule(rules, "node-lifecycle-zone-health", "NodeLifecycleZoneHealthBelowCriticalRange")
    etcd = rule(rules, "etcd-leader", "EtcdNoLeaderBelowNormalRange")
    for page, held in (
        (zone, ["node-readiness"]),
        (etcd, ["apiserver-5xx", "apiserver-read-latency", "scheduler-backlog", "etcd-grpc-failures"]),
    ):
        text = page["annotations"]["holds_back"]
        for spec in held:
            assert f"{spec} (same cluster" in text and f"/runbooks/{spec}.md" in text, (spec, text)
    assert "node-readiness (same cluster, label_topology_kubernetes_io_zone)" in zone["annotations"]["holds_back"]


def test_the_zone_page_carries_the_zone_label_node_readiness_slices_by(tmp_path: Path) -> None:
    """node_collector_zone_health's zone is "region:\\x00:zone"; the SLI carries the zone as node-readiness does."""
    case = {
        "rule_files": [str(GENERATED / "prometheus" / "rules" / "node-lifecycle-zone-health.rules.yaml")],
        "evaluation_interval": "1m",
        "tests": [
            {
                "interval": "1m",
                "input_series": [
                    {
                        "series": f'node_collector_zone_health{{cluster="c1",job="kube-controller-manager",'
                        f'zone="{ZONE_KEY_PROMQL}"}}',
                        "values": "20x10",
                    }
                ],
                "promql_expr_test": [
                    {
                        "expr": 'slo:sli_value:gauge{slo="node-lifecycle-zone-health"}',
                        "eval_time": "4m",
                        "exp_samples": [
                            {
                                "labels": 'slo:sli_value:gauge{cluster="c1",label_topology_kubernetes_io_zone='
                                f'"{ZONE}",slo="node-lifecycle-zone-health"}}',
                                "value": 20,
                            }
                        ],
                    }
                ],
            }
        ],
    }
    path = tmp_path / "zone-key.test.yaml"
    path.write_text(yaml.safe_dump(case), encoding="utf-8")
    result = promtool_test(path, timeout=60)
    assert result.returncode == 0, result.stdout + result.stderr
