"""The monitoring stack's own series: Prometheus, Alertmanager, and what Prometheus writes per target.

Each cluster runs the stack's Prometheus (one replica on kube-prometheus-stack, two on
kube-prometheus) and Alertmanager (one, three), each pod a ``web`` target and a
``reloader-web`` (config-reloader) target of the same job: the Service name, since neither
stack's ServiceMonitor sets a jobLabel (``compiler/model/stacks.py``). What the series are,
as Prometheus v2.42.0 and Alertmanager v0.27.0 create them:

- per target (every ``up`` of the world): ``scrape_samples_scraped``,
  ``scrape_samples_post_metric_relabeling`` and ``scrape_series_added``
  (``scrape/scrape.go``, ``report``); a failed scrape reports 0 for all three, a target gone
  has none. ``scrape_duration_seconds`` (``scrape/scrape.go``, scrapeDurationMetricName) only for
  kube-state-metrics, the one target a spec reads it of: 0.4 s plus 20 µs per sample scraped, 8 s on a
  cluster with the fault ``ksm-slow-scrape`` (its output outgrew one replica) from the fault's start;
- per Prometheus: ``prometheus_tsdb_head_series`` (``tsdb/head.go``), the plain counter
  ``prometheus_target_scrapes_exceeded_sample_limit_total`` (0: neither stack sets a sample
  limit by default), ``prometheus_notifications_sent_total`` and ``_errors_total`` per
  Alertmanager URL, created when the notifier syncs its Alertmanagers
  (``notifier/notifier.go``), and per rule group ``prometheus_rule_group_last_duration_seconds``,
  ``_interval_seconds``, ``_iterations_missed_total`` and ``prometheus_rule_evaluation_failures_total``,
  all created when the group loads (``rules/manager.go``; ``rule_group`` is "<file>;<group>");
- per Alertmanager: ``alertmanager_notifications_total{integration}`` for its 13 built-in
  integrations and ``alertmanager_notifications_failed_total{integration,reason}`` for each
  of the 5 reasons, created at start (``notify/notify.go``, ``InitializeFor``). Only the first
  peer of an HA cluster sends, so only replica 0 counts notifications;
- ``prometheus_config_last_reload_successful`` (``cmd/prometheus/main.go``) and
  ``alertmanager_config_last_reload_successful`` (``config/coordinator.go``), gauges without labels
  of their own: 1 on every replica, 0 on each Prometheus of a cluster with the fault
  ``prometheus-reload-failed`` (a rule file it refuses), from the fault's start.

The sample counts are magnitudes (a kubelet's cAdvisor endpoint exposes a few thousand
samples), not measurements; they wander by a percent in 10-minute steps as pods come and go.
"""

from __future__ import annotations

import zlib
from collections.abc import Sequence
from dataclasses import dataclass

from tests.world.stack import StackView
from tests.world.timeline import STEP_S, Series, const, counter, gauge, series
from tests.world.topology import Cluster, World, minute_of

NAMESPACE = "monitoring"
BLOCK = 20  # samples (10 minutes) a target's sample count holds before it moves


@dataclass(frozen=True)
class Deployment:
    """How one stack deploys its Prometheus and Alertmanager (pods, ports, rule files)."""

    prometheus_replicas: int
    alertmanager_replicas: int
    prometheus_pod: str  # the StatefulSet's pod name without the ordinal
    alertmanager_pod: str
    web_port: str  # the ServiceMonitor endpoint of the web port
    rule_dir: str  # where the operator mounts the PrometheusRules


# kube-prometheus-stack 88.5.3 values.yaml: prometheusSpec.replicas 1, alertmanagerSpec.replicas 1, portName
# "http-web"; kube-prometheus: prometheus replicas 2, alertmanager replicas 3, port 'web'. The operator names
# the pods prometheus-<Prometheus>-N / alertmanager-<Alertmanager>-N and mounts the rules from the ConfigMap
# prometheus-<Prometheus>-rulefiles-0, one file <namespace>-<PrometheusRule>-<uid>.yaml per PrometheusRule.
DEPLOYMENTS = {
    "kube-prometheus-stack": Deployment(
        1,
        1,
        "prometheus-kube-prometheus-stack-prometheus",
        "alertmanager-kube-prometheus-stack-alertmanager",
        "http-web",
        "/etc/prometheus/rules/prometheus-kube-prometheus-stack-prometheus-rulefiles-0",
    ),
    "kube-prometheus": Deployment(
        2, 3, "prometheus-k8s", "alertmanager-main", "web", "/etc/prometheus/rules/prometheus-k8s-rulefiles-0"
    ),
}

# (PrometheusRule on kube-prometheus-stack, on kube-prometheus, group, interval s, healthy last duration s).
# The stacks' groups evaluate every 30 s (the operator's default evaluationInterval) except the apiserver
# availability group (3m in the kubernetes-mixin); the library's groups every minute, in milliseconds.
RULE_GROUPS = (
    ("kube-prometheus-stack-general.rules", "kube-prometheus-rules", "general.rules", 30, 0.0008),
    (
        "kube-prometheus-stack-kube-apiserver-burnrate.rules",
        "kubernetes-monitoring-rules",
        "kube-apiserver-burnrate.rules",
        30,
        0.32,
    ),
    (
        "kube-prometheus-stack-kube-apiserver-availability.rules",
        "kubernetes-monitoring-rules",
        "kube-apiserver-availability.rules",
        180,
        0.21,
    ),
    ("kube-prometheus-stack-kubernetes-apps", "kubernetes-monitoring-rules", "kubernetes-apps", 30, 0.045),
    ("kube-prometheus-stack-node-exporter", "node-exporter-rules", "node-exporter", 30, 0.018),
    ("kube-prometheus-stack-prometheus", "prometheus-k8s-prometheus-rules", "prometheus", 30, 0.011),
    ("kube-prometheus-stack-alertmanager.rules", "alertmanager-main-rules", "alertmanager.rules", 30, 0.0031),
    ("slo-node-readiness", "slo-node-readiness", "slo-node-readiness", 60, 0.0032),
    ("slo-apiserver-availability", "slo-apiserver-availability", "slo-apiserver-availability", 60, 0.0021),
    (
        "slo-pod-startup-latency-per-pool",
        "slo-pod-startup-latency-per-pool",
        "slo-pod-startup-latency-per-pool",
        60,
        0.0054,
    ),
    ("slo-prometheus-rule-group-lag", "slo-prometheus-rule-group-lag", "slo-prometheus-rule-group-lag", 60, 0.0015),
)

# Alertmanager v0.27.0 notify/notify.go (InitializeFor without receiver names) and notify/util.go.
INTEGRATIONS = (
    "email",
    "pagerduty",
    "wechat",
    "pushover",
    "slack",
    "opsgenie",
    "webhook",
    "victorops",
    "sns",
    "telegram",
    "discord",
    "webex",
    "msteams",
)
FAILURE_REASONS = ("other", "clientError", "serverError", "contextCanceled", "contextDeadlineExceeded")
# Notifications per second on a healthy day: the odd ticket to Slack, the node-remediator webhook now and then.
NOTIFYING = {"slack": 1 / 420, "webhook": 1 / 900}
ALERTS_RESENT = 2 / 60  # Watchdog and InfoInhibitor, resent to every Alertmanager each minute


def self_health(world: World, stack: StackView, scraped: Sequence[Series]) -> list[Series]:
    """The stack's own targets and series, and the scrape series of every target of the world."""
    deployment = DEPLOYMENTS[stack.name]
    out: list[Series] = []
    for cluster in world.clusters:
        out += _stack_targets(world, cluster, stack, deployment)
    targets = [item for item in (*scraped, *out) if item.name == "up"]
    out += [sample for target in targets for sample in _scrape_series(world, stack, target)]
    for cluster in world.clusters:
        head = _head_series(world, stack, [target for target in targets if _label(target, "cluster") == cluster.name])
        for replica in range(deployment.prometheus_replicas):
            out += _prometheus(world, cluster, stack, deployment, replica, head)
            out += _prometheus_pod(world, cluster, stack, deployment, replica)
        for replica in range(deployment.alertmanager_replicas):
            out += _alertmanager(world, cluster, stack, deployment, replica)
    return out


# The cluster fault prometheus-oom-loop: the second replica (none on kube-prometheus-stack, which runs one) is
# OOM-killed in a 10-minute cycle from the fault's start: 5 minutes of back-off, 3 of WAL replay (running, not
# ready), 2 ready, then the next kill.
LOOP_CYCLE_MIN, LOOP_NOT_READY_MIN, LOOPING_REPLICA = 10, 8, 1


def _prometheus_pod(
    world: World, cluster: Cluster, stack: StackView, deployment: Deployment, replica: int
) -> list[Series]:
    """kube-state-metrics' series of one Prometheus pod's container (internal/store/pod.go @v2.13.0): readiness
    (:407), restarts (:431) and, once it has exited, the last termination's reason (:329). Only the
    kube-state-metrics series change under the loop: the replica's own targets are left as they are."""
    ksm = {
        "cluster": cluster.name,
        "job": stack.job("kube-state-metrics"),
        "instance": f"10.{cluster.index}.200.10:8080",
    }
    pod = f"{deployment.prometheus_pod}-{replica}"
    labels = {**ksm, "namespace": NAMESPACE, "pod": pod, "container": "prometheus"}
    labels["uid"] = f"{zlib.crc32(f'{cluster.name}/{pod}'.encode()):08x}-5b2e-4f7a-9c1d-{replica:012x}"
    count = world.samples
    ready: list[float | None] = []
    restarts: list[float | None] = []
    for i in range(count):
        fault = world.cluster_fault(cluster.name, "prometheus-oom-loop", minute_of(i))
        if fault is None or replica != LOOPING_REPLICA:
            ready.append(1.0)
            restarts.append(0.0)
            continue
        since = minute_of(i) - fault.start
        ready.append(0.0 if since % LOOP_CYCLE_MIN < LOOP_NOT_READY_MIN else 1.0)
        restarts.append(float(int(since // LOOP_CYCLE_MIN) + (since % LOOP_CYCLE_MIN >= 5)))
    out = [
        series("kube_pod_container_status_ready", labels, ready),
        series("kube_pod_container_status_restarts_total", labels, restarts),
    ]
    if any(value for value in restarts):
        killed = [1.0 if value else None for value in restarts]
        out.append(
            series("kube_pod_container_status_last_terminated_reason", {**labels, "reason": "OOMKilled"}, killed)
        )
    return out


def _label(item: Series, name: str) -> str:
    return dict(item.labels).get(name, "")


def _pod_labels(cluster: Cluster, job: str, pod: str, address: str, **extra: str) -> dict[str, str]:
    return {
        "cluster": cluster.name,
        "job": job,
        "namespace": NAMESPACE,
        "service": job,
        "pod": pod,
        "instance": address,
        **extra,
    }


def _web(cluster: Cluster, stack: StackView, deployment: Deployment, component: str, replica: int) -> dict[str, str]:
    """The labels of a Prometheus or Alertmanager pod's web target, which its own series carry."""
    pod = deployment.prometheus_pod if component == "prometheus" else deployment.alertmanager_pod
    subnet, port = (250, 9090) if component == "prometheus" else (251, 9093)
    address = f"10.{cluster.index}.{subnet}.{replica + 1}:{port}"
    return _pod_labels(
        cluster, stack.job(component), f"{pod}-{replica}", address, endpoint=deployment.web_port, container=component
    )


def _stack_targets(world: World, cluster: Cluster, stack: StackView, deployment: Deployment) -> list[Series]:
    out = []
    for component, replicas in (
        ("prometheus", deployment.prometheus_replicas),
        ("alertmanager", deployment.alertmanager_replicas),
    ):
        for replica in range(replicas):
            web = _web(cluster, stack, deployment, component, replica)
            reloader = {
                **web,
                "instance": web["instance"].rsplit(":", 1)[0] + ":8080",
                "endpoint": "reloader-web",
                "container": "config-reloader",
            }
            out += [series("up", labels, gauge(const(1.0), world.samples)) for labels in (web, reloader)]
    return out


def _samples(stack: StackView, target: Series, scale: float) -> tuple[int, int]:
    """(scraped, kept after metric relabeling) of one healthy scrape of ``target``: magnitudes per job."""
    job, path, endpoint = _label(target, "job"), _label(target, "metrics_path"), _label(target, "endpoint")
    known = {
        name: stack.job(name)
        for name in (
            "apiserver",
            "kubelet",
            "node-exporter",
            "kube-state-metrics",
            "kube-scheduler",
            "coredns",
            "etcd",
            "prometheus",
            "alertmanager",
        )
    }
    if endpoint == "reloader-web":
        return 60, 60
    table = {
        known["apiserver"]: (round(62000 * scale), round(39000 * scale)),  # the dropped le edges
        known["kube-state-metrics"]: (round(21000 * scale), round(21000 * scale)),
        known["node-exporter"]: (2000, 2000) if stack.exports_veth else (1150, 1150),
        known["kube-scheduler"]: (1700, 1700),
        known["coredns"]: (480, 480),
        known["etcd"]: (2300, 2300),
        known["prometheus"]: (1900, 1900),
        known["alertmanager"]: (430, 430),
    }
    if job == known["kubelet"]:
        return {"/metrics/cadvisor": (6100, 4900), "/metrics/probes": (120, 120)}.get(path, (2600, 2400))
    return table.get(job, (1000, 1000))


def _scale(world: World, cluster_name: str) -> float:
    sizes = {cluster.name: len(world.nodes(cluster)) for cluster in world.clusters}
    return sizes.get(cluster_name, max(sizes.values())) / max(sizes.values())


def _wander(target: Series, sample: int) -> float:
    """A factor within +-1% that moves every BLOCK samples and differs between targets."""
    seed = zlib.crc32(repr(target.labels).encode()) + sample // BLOCK * 7919
    return 1 + (seed % 21 - 10) / 1000


def _scrape_series(world: World, stack: StackView, target: Series) -> list[Series]:
    scraped, kept = _samples(stack, target, _scale(world, _label(target, "cluster")))
    labels = dict(target.labels)
    values = [round(kept * _wander(target, i)) for i in range(len(target.samples))]
    added = [0.0] + [max(0.0, values[i] - values[i - 1]) for i in range(1, len(values))]

    def follow(healthy: Sequence[float]) -> list[float | None]:
        return [
            None if up is None else (float(value) if up == 1 else 0.0)
            for up, value in zip(target.samples, healthy, strict=True)
        ]

    out = [
        series("scrape_samples_scraped", labels, follow([value + scraped - kept for value in values])),
        series("scrape_samples_post_metric_relabeling", labels, follow(values)),
        series("scrape_series_added", labels, follow(added)),
    ]
    if labels.get("job") == stack.job("kube-state-metrics"):
        cluster = labels.get("cluster", "")
        slow = [
            world.cluster_fault(cluster, "ksm-slow-scrape", i * STEP_S / 60) is not None for i in range(len(values))
        ]
        took = [
            8.0 if late else round(0.4 + (value + scraped - kept) * 2e-5, 3)
            for value, late in zip(values, slow, strict=True)
        ]
        out.append(series("scrape_duration_seconds", labels, follow(took)))
    return out


def _head_series(world: World, stack: StackView, targets: Sequence[Series]) -> list[float | None]:
    """The head holds every kept series, plus churn (pods come and go) that head GC trims every 2 hours."""
    kept = sum(_samples(stack, target, _scale(world, _label(target, "cluster")))[1] for target in targets)
    recorded = 4000  # the recording rules' own series
    minute = [sample * STEP_S / 60 for sample in range(world.samples)]
    return [round((kept + recorded) * (1.10 + 0.04 * (m % 120) / 120)) for m in minute]


def _prometheus(
    world: World, cluster: Cluster, stack: StackView, deployment: Deployment, replica: int, head: list[float | None]
) -> list[Series]:
    base, count = _web(cluster, stack, deployment, "prometheus", replica), world.samples
    uptime = 86400.0 * 9  # the replica started nine days ago

    def reloaded(i: int) -> float:
        return 0.0 if world.cluster_fault(cluster.name, "prometheus-reload-failed", minute_of(i)) else 1.0

    out = [
        series("prometheus_tsdb_head_series", base, head),
        series("prometheus_target_scrapes_exceeded_sample_limit_total", base, gauge(const(0.0), count)),
        series("prometheus_config_last_reload_successful", base, gauge(reloaded, count)),
    ]
    for peer in range(deployment.alertmanager_replicas):
        address = _web(cluster, stack, deployment, "alertmanager", peer)["instance"]
        labels = {**base, "alertmanager": f"http://{address}/api/v2/alerts"}
        sent = counter(const(ALERTS_RESENT), count, start=round(ALERTS_RESENT * uptime))
        out.append(
            series("prometheus_notifications_sent_total", labels, [None if v is None else round(v) for v in sent])
        )
        out.append(series("prometheus_notifications_errors_total", labels, gauge(const(0.0), count)))
    out += _rule_groups(world, stack, deployment, base, replica)
    return out


def _rule_groups(
    world: World, stack: StackView, deployment: Deployment, base: dict[str, str], replica: int
) -> list[Series]:
    out, count = [], world.samples
    for kps_rule, kp_rule, group, interval, duration in RULE_GROUPS:
        rule = kps_rule if stack.name == "kube-prometheus-stack" else kp_rule
        uid = f"{zlib.crc32(rule.encode()):08x}-1c2d-4e5f-8a9b-{zlib.crc32(group.encode()):012x}"
        labels = {**base, "rule_group": f"{deployment.rule_dir}/{NAMESPACE}-{rule}-{uid}.yaml;{group}"}

        def last(i: int, duration: float = duration, seed: int = zlib.crc32(group.encode()) + replica) -> float:
            # Each evaluation differs: +-30% around the group's usual time, changing with every evaluation.
            return round(duration * (0.7 + ((seed + i * 2654435761) % 61) / 100), 6)

        out += [
            series("prometheus_rule_group_last_duration_seconds", labels, gauge(last, count)),
            series("prometheus_rule_group_interval_seconds", labels, gauge(const(float(interval)), count)),
            series("prometheus_rule_group_iterations_missed_total", labels, gauge(const(0.0), count)),
            series("prometheus_rule_evaluation_failures_total", labels, gauge(const(0.0), count)),
        ]
    return out


def _alertmanager(
    world: World, cluster: Cluster, stack: StackView, deployment: Deployment, replica: int
) -> list[Series]:
    base, count = _web(cluster, stack, deployment, "alertmanager", replica), world.samples
    out = [series("alertmanager_config_last_reload_successful", base, gauge(const(1.0), count))]
    for integration in INTEGRATIONS:
        labels = {**base, "integration": integration}
        rate = NOTIFYING.get(integration, 0.0) if replica == 0 else 0.0
        sent = counter(const(rate), count, start=rate * 86400 * 9)
        out.append(
            series("alertmanager_notifications_total", labels, [None if v is None else float(int(v)) for v in sent])
        )
        out += [
            series("alertmanager_notifications_failed_total", {**labels, "reason": reason}, gauge(const(0.0), count))
            for reason in FAILURE_REASONS
        ]
    return out
