"""The library review's findings stay fixed in the shipped specs (issue 13, item 1).

Each test names the finding of `../shared/docs/library-review.md` it guards. Behaviour the
specs' own scenarios cannot show (the raw series of a Kubernetes version, which alerts
exist at which severity, what a selector leaves out) is checked here: on the committed
rules in `generated/` with the real promtool, or on the compiled model.
"""

from __future__ import annotations

import subprocess
from pathlib import Path
from typing import Any

import pytest
import yaml

from compiler.model import SLO, Model
from tests.support import LIBRARY_SPECS, REPO_ROOT, compile_tree

RULES = REPO_ROOT / "generated" / "prometheus" / "rules"

# The specs this fix covers: each must say which stack and Kubernetes versions it assumes.
FIXED_SPECS = (
    "watch-event-bytes",
    "pod-startup-latency",
    "pod-sandbox-latency",
    "cluster-dns-latency",
    "cluster-dns-servfail",
    "apiserver-read-latency",
    "etcd-request-latency",
    "scheduler-pod-scheduling-latency",
    "apiserver-concurrency-saturation",
    "apiserver-mutating-concurrency-saturation",
    "apf-workload-shedding",
    "scheduler-backlog",
    "scheduler-errors",
    "watch-cache-bypass",
    "watch-cache-health",
    "watch-fanout",
    "event-count-budget",
    "object-count-budget",
    "kubelet-runtime-errors",
    "kubelet-pleg-health",
    "etcd-db-quota",
)


@pytest.fixture(scope="module")
def library() -> Model:
    return compile_tree(LIBRARY_SPECS)


def spec(model: Model, name: str) -> SLO:
    return next(s for s in model.slos if s.name == name)


def alert_rules(name: str) -> list[dict[str, Any]]:
    document = yaml.safe_load((RULES / f"{name}.rules.yaml").read_text(encoding="utf-8"))
    return [rule for group in document["groups"] for rule in group["rules"] if "alert" in rule]


def burn_alerts(name: str) -> list[dict[str, Any]]:
    return [rule for rule in alert_rules(name) if rule["alert"].endswith("ErrorBudgetBurn")]


def promtool_test(tmp_path: Path, rule_file: str, tests: list[dict[str, Any]]) -> subprocess.CompletedProcess[str]:
    """promtool test rules on one committed rule file, with hand-written raw series."""
    document = {"rule_files": [str(RULES / rule_file)], "evaluation_interval": "1m", "tests": tests}
    path = tmp_path / "finding.test.yaml"
    path.write_text(yaml.safe_dump(document, sort_keys=False), encoding="utf-8")
    return subprocess.run(
        ["promtool", "test", "rules", str(path)], capture_output=True, text=True, timeout=120, check=False
    )


def firing(alertname: str, at: str, count: int, **labels: str) -> dict[str, Any]:
    """An assertion on how many series of the alert fire at `at` (0 or 1 here)."""
    matchers = ",".join([f'alertname="{alertname}"', 'alertstate="firing"', *(f'{k}="{v}"' for k, v in labels.items())])
    expr = f"count(ALERTS{{{matchers}}}) or vector(0)"
    return {"expr": expr, "eval_time": at, "exp_samples": [{"labels": "{}", "value": count}]}


# -- watch-event-bytes: blind to fan-out on 1.29+ (review: per-spec table, ❌) ---------------

# One 100 KB Endpoints object changing twice a second. From 1.29 its size is observed once per
# event in the cached encoder (2 observations/s, whatever the watcher count), while
# apiserver_watch_events_total still counts one event per watcher: 100 watchers, then 7,600
# once a DaemonSet watches it from 7,500 nodes at minute 20.
ENDPOINTS = 'cluster="c1",job="apiserver",instance="10.0.0.1:6443",group="",version="v1",kind="Endpoints"'
WATCH_SERIES_1_29 = [
    # 100 watchers x 2 events/s = 200/s = 12,000 per minute; then 7,600 x 2 = 15,200/s.
    {"series": f"apiserver_watch_events_total{{{ENDPOINTS}}}", "values": "0+12000x20 240000+912000x30"},
    # 2 observations/s of 100,000 bytes: 12,000,000 bytes and 120 observations per minute.
    {"series": f"apiserver_watch_events_sizes_sum{{{ENDPOINTS}}}", "values": "0+12000000x50"},
    {"series": f"apiserver_watch_events_sizes_count{{{ENDPOINTS}}}", "values": "0+120x50"},
]


def test_watch_event_bytes_fires_when_a_daemonset_adds_7500_watchers_on_1_29(tmp_path: Path) -> None:
    """Fan-out bytes = events sent x mean size: 20 MB/s, then 1.52 GB/s, over 100 MB/s for 10m."""
    old_expression = "sum by (cluster, kind) (rate(apiserver_watch_events_sizes_sum[5m]))"
    result = promtool_test(
        tmp_path,
        "watch-event-bytes.rules.yaml",
        [
            {
                "interval": "1m",
                "input_series": WATCH_SERIES_1_29,
                "promql_expr_test": [
                    firing("WatchEventBytesAboveNormalRange", "19m", 0),
                    firing("WatchEventBytesAboveNormalRange", "40m", 1, kind="Endpoints"),
                    # The recorded value is the estimate: 15,200 events/s x 100,000 bytes = 1,520 MB/s.
                    {
                        "expr": 'round(slo:sli_value:gauge{slo="watch-event-bytes",kind="Endpoints"} / 1e6)',
                        "eval_time": "40m",
                        "exp_samples": [
                            {"labels": '{cluster="c1",kind="Endpoints",slo="watch-event-bytes"}', "value": 1520}
                        ],
                    },
                    # The SLI before the fix read only the size sum: 200 KB/s, far under 100 MB/s.
                    {
                        "expr": f"{old_expression} < 100e6",
                        "eval_time": "40m",
                        "exp_samples": [{"labels": '{cluster="c1",kind="Endpoints"}', "value": 200000}],
                    },
                ],
            }
        ],
    )
    assert result.returncode == 0, result.stdout + result.stderr


def test_watch_event_bytes_reads_events_sent_and_mean_size(library: Model) -> None:
    expr = spec(library, "watch-event-bytes").sli.expr  # type: ignore[union-attr]
    for metric in (
        "apiserver_watch_events_total",
        "apiserver_watch_events_sizes_sum",
        "apiserver_watch_events_sizes_count",
    ):
        assert metric in expr


# -- pod-startup-latency: measured from creation, paged the wrong team (review ❌) -----------


def test_creation_based_pod_startup_is_a_scheduling_ticket_never_a_page(library: Model) -> None:
    startup = spec(library, "pod-startup-latency")
    assert startup.owner.name == "platform-scheduling"
    severities = {rule["labels"]["severity"] for rule in alert_rules("pod-startup-latency")}
    assert severities == {"ticket"}
    assert all(rule["labels"]["team"] == "platform-scheduling" for rule in alert_rules("pod-startup-latency"))


def test_nodes_are_paged_on_sandbox_creation_the_part_the_kubelet_owns(library: Model) -> None:
    sandbox = spec(library, "pod-sandbox-latency")
    assert sandbox.owner.name == "platform-nodes"
    assert sandbox.sli.histogram == "kubelet_run_podsandbox_duration_seconds"  # type: ignore[union-attr]
    pages = [rule for rule in burn_alerts("pod-sandbox-latency") if rule["labels"]["severity"] == "page"]
    assert [rule["labels"]["long_window"] for rule in pages] == ["1h"]
    # Nothing in the creation-based runbook tells anyone to cordon or drain.
    steps = " ".join(spec(library, "pod-startup-latency").mitigation.steps)
    assert "kubectl cordon" not in steps and "kubectl drain" not in steps


# -- X7: 7-day SLOs ticket below 1x -----------------------------------------------------------


@pytest.mark.parametrize(
    "name", ["etcd-request-latency", "scheduler-pod-scheduling-latency", "pod-startup-latency", "pod-sandbox-latency"]
)
def test_seven_day_slos_ticket_only_at_or_above_the_budget_rate(library: Model, name: str) -> None:
    assert spec(library, name).objective.period_ms == 7 * 24 * 3600 * 1000  # type: ignore[union-attr]
    factors = [float(rule["labels"]["burn_factor"]) for rule in burn_alerts(name)]
    assert factors and min(factors) >= 1, factors


def test_scheduler_latency_says_its_metric_starts_at_1_29(library: Model) -> None:
    scheduler = spec(library, "scheduler-pod-scheduling-latency")
    assert scheduler.k8s_versions == "1.29-1.31"
    assert any("1.28" in condition for condition in scheduler.mitigation.stop_conditions)


# -- DNS: external zones, forward names per CoreDNS version, NodeLocal DNSCache -------------


def test_dns_specs_are_sliced_by_coredns_zone(library: Model) -> None:
    for name in ("cluster-dns-latency", "cluster-dns-servfail"):
        assert spec(library, name).slice.by == ("cluster", "zone")


def test_servfail_pages_only_at_the_mixin_critical_level() -> None:
    """The default 1h/5m page at 1.44% is gone: one hammered external zone reaches only tickets."""
    pages = [rule for rule in alert_rules("cluster-dns-servfail") if rule["labels"]["severity"] == "page"]
    burn_pages = [rule for rule in pages if rule["alert"].endswith("ErrorBudgetBurn")]
    assert [float(rule["labels"]["burn_factor"]) for rule in burn_pages] == [30.0]  # 30 x 0.1% = 3%


def test_dns_steps_name_the_forward_metrics_of_both_coredns_versions(library: Model) -> None:
    for name in ("cluster-dns-latency", "cluster-dns-servfail"):
        steps = " ".join(spec(library, name).mitigation.steps)
        assert "coredns_proxy_request_duration_seconds" in steps, name  # CoreDNS 1.11
        assert "coredns_forward_" in steps, name  # CoreDNS 1.10.1
    latency_steps = " ".join(spec(library, "cluster-dns-latency").mitigation.steps)
    assert "not a step now" in latency_steps  # NodeLocal DNSCache named as a project


# -- apiserver: dilution, seats ---------------------------------------------------------------


def test_read_latency_is_judged_per_scope(library: Model) -> None:
    assert spec(library, "apiserver-read-latency").slice.by == ("cluster", "scope")


def test_read_concurrency_is_judged_in_apf_seats_per_priority_level(library: Model) -> None:
    saturation = spec(library, "apiserver-concurrency-saturation")
    assert saturation.slice.by == ("cluster", "priority_level")
    expr = saturation.sli.expr  # type: ignore[union-attr]
    assert "apiserver_flowcontrol_current_executing_seats" in expr
    assert "apiserver_flowcontrol_current_limit_seats" in expr
    assert "apiserver_current_inflight_requests" not in expr


# -- kubelet-runtime-errors: image pulls are the workload owner's ------------------------------

KUBELET = 'cluster="c1",job="kubelet",instance="10.1.0.7:10250"'


@pytest.mark.parametrize(("operation", "fires"), [("pull_image", 0), ("run_podsandbox", 1)])
def test_runtime_errors_leave_image_pull_failures_out(tmp_path: Path, operation: str, fires: int) -> None:
    """1 failed operation/s on one node for 30 minutes: a node fault fires, a bad image does not."""
    series = [
        {"series": f'kubelet_node_name{{{KUBELET},node="gpu-node-7"}}', "values": "1x40"},
        {
            "series": f'kubelet_runtime_operations_errors_total{{{KUBELET},operation_type="{operation}"}}',
            "values": "0+60x40",
        },
    ]
    result = promtool_test(
        tmp_path,
        "kubelet-runtime-errors.rules.yaml",
        [
            {
                "interval": "1m",
                "input_series": series,
                "promql_expr_test": [firing("KubeletRuntimeErrorsAboveNormalRange", "30m", fires)],
            }
        ],
    )
    assert result.returncode == 0, result.stdout + result.stderr


# -- every fixed spec states its stack and versions ---------------------------------------------


# Specs another helper of issue 13 is changing: their stack statement comes with that change.
STACK_PENDING = frozenset(
    {
        "node-readiness",
        "node-readiness-flapping",
        "nic-error-budget",
        "nic-drop-budget",
        "conntrack-exhaustion",
        "arp-neighbor-table",
        "apiserver-list-storm",
    }
)


def yaml_specs(model: Model) -> list[SLO]:
    return [s for s in model.slos if s.source.endswith(".yaml") and s.name not in STACK_PENDING]


def test_every_fixed_spec_is_in_the_library(library: Model) -> None:
    assert set(FIXED_SPECS) <= {s.name for s in library.slos}


def _states_stack(text: str) -> bool:
    """A ``# Stack:`` comment, or an ``# Assumes:`` comment naming the exporter versions and component."""
    return "# Stack:" in text or "# Assumes:" in text


def test_every_spec_states_the_stack_and_versions_it_assumes(library: Model) -> None:
    missing = [
        s.name
        for s in yaml_specs(library)
        if not s.k8s_versions or not _states_stack((REPO_ROOT / s.source).read_text(encoding="utf-8"))
    ]
    assert not missing, f"say which monitoring stack and Kubernetes versions these assume: {missing}"


def test_list_volume_specs_state_their_stack_and_are_in_shadow(library: Model) -> None:
    library_text = (LIBRARY_SPECS / "watch-list-volume" / "lib" / "list-volume.libsonnet").read_text(encoding="utf-8")
    assert "// Stack:" in library_text
    stamped = [s for s in library.slos if s.name.startswith("list-volume-")]
    assert len(stamped) == 6
    assert all(s.k8s_versions == "1.28-1.31" and s.mode == "shadow" for s in stamped)
