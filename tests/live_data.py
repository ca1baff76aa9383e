"""Spec trees and OpenMetrics data sets for the live tier (preflight and backtest).

The data is shaped like the stacks the library meets (library review): CoreDNS scraped as
``job="coredns"`` by kube-prometheus-stack while the project names kube-prometheus
(``job="kube-dns"``), apiserver buckets without the edges kube-prometheus-stack's relabeling
drops, a duplicate ``kube_node_labels`` row, a scheduler exporter that lacks a slice label on
some series, and eviction and preemption counters that do not exist until their first event.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable
from pathlib import Path

OWNERS = """\
apiVersion: slo-compiler/v1
kind: Owners
teams:
  - name: team-a
    contact: "#team-a"
    receivers:
      page: [{webhook: {url: "http://127.0.0.1:9/page"}}]
      ticket: [{webhook: {url: "http://127.0.0.1:9/ticket"}}]
"""

PROJECT = """\
apiVersion: slo-compiler/v1
kind: Project
runbook_base_url: https://runbooks.example.com/slo
evaluation_interval: 1m
scrape_profile:
  stack: kube-prometheus
"""

MITIGATION = """\
mitigation:
  summary: Look at it.
  steps: [Look.]
  stop_conditions: [Nothing.]
  escalation: team-a secondary
"""


def spec(name: str, body: str) -> str:
    head = f"apiVersion: slo-compiler/v1\nkind: SLO\nname: {name}\nfamily: node-network-errors\nowner: team-a\n"
    return head + f"description: {name}.\n" + body + MITIGATION


PREFLIGHT_SPECS = {
    "dns-servfail": """\
slice: {by: [cluster], component: coredns}
sli:
  ratio:
    bad: 'coredns_dns_responses_total{rcode="SERVFAIL"}'
    total: coredns_dns_responses_total
objective: {target: 99.9%, period: 30d}
""",
    "write-latency": """\
slice: {by: [cluster], component: apiserver}
sli:
  latency:
    histogram: apiserver_request_duration_seconds
    selector: '{verb="POST"}'
    threshold: 0.2
objective: {target: 99%, period: 30d}
""",
    "scheduler-errors": """\
slice: {by: [cluster, profile], component: kube-scheduler}
sli:
  ratio:
    bad: 'scheduler_schedule_attempts_total{result="error"}'
    total: scheduler_schedule_attempts_total
objective: {target: 99%, period: 30d}
""",
    "runtime-errors-per-pool": """\
slice:
  by: [cluster, label_node_pool]
  component: kubelet
  join:
    - metric: 'kube_node_labels{job="kube-state-metrics"}'
      on: [cluster, node]
      labels: [label_node_pool]
sli:
  ratio:
    bad: kubelet_runtime_operations_errors_total
    total: kubelet_runtime_operations_total
objective: {target: 99%, period: 30d}
""",
    "evictions": """\
slice: {by: [cluster], component: kubelet}
sli:
  gauge:
    expr: 'sum by (cluster) (rate(kubelet_evictions[5m]))'
    aggregate: sum
    absent_as_zero_while: 'up == 1'
unit: per_second
normal_range: {max: 0.01}
persistence: {for: 15m}
""",
    "preemptions": """\
slice: {by: [cluster], component: kubelet}
sli:
  gauge:
    expr: 'sum by (cluster) (rate(kubelet_preemptions[5m]))'
    aggregate: sum
unit: per_second
normal_range: {max: 0.01}
persistence: {for: 15m}
""",
    "kubelet-targets": """\
slice: {by: [cluster], component: kubelet}
sli:
  gauge:
    expr: 'avg by (cluster) (up)'
    aggregate: avg
unit: ratio
normal_range: {min: 0.5}
critical_range: {min: 0.01}
persistence: {for: 15m}
assumes:
  - name: metrics-reachable
    expr: 'max by (cluster) (scrape_samples_scraped) > 0'
    why: The chart may scrape an address the component does not serve metrics on.
    otherwise: Fix the bind address.
  - name: self-managed
    expr: 'count by (cluster) (kube_pod_info{namespace="kube-system", pod=~"coredns-.+"}) > 0'
    component: kube-state-metrics
    why: Only a self-managed cluster runs CoreDNS as its own pods.
    otherwise: Remove this spec on a managed cluster.
confirmed_by:
  - name: pods-unavailable
    expr: 'max by (cluster) (kube_deployment_status_replicas_unavailable{deployment="coredns"}) > 0'
    component: kube-state-metrics
    why: A scrape failure alone is not an outage.
  - name: lease-stale
    expr: 'max by (cluster) (kube_lease_owner{lease="coredns"}) > 0'
    component: kube-state-metrics
    why: Never exported here.
""",
    "apiserver-errors": """\
slice: {by: [cluster], component: apiserver}
sli:
  ratio:
    bad: 'apiserver_request_total{code=~"5.."}'
    total: apiserver_request_total
objective: {target: 99.9%, period: 30d}
""",
}


def write_tree(root: Path, specs: dict[str, str], project: str = PROJECT) -> Path:
    root.mkdir(parents=True, exist_ok=True)
    (root / "owners.yaml").write_text(OWNERS, encoding="utf-8")
    (root / "project.yaml").write_text(project, encoding="utf-8")
    for name, body in specs.items():
        (root / f"{name}.yaml").write_text(spec(name, body), encoding="utf-8")
    return root


Rate = Callable[[int], float]  # per-second increase at a second since the start


class OpenMetrics:
    """Counters and gauges sampled every ``step`` seconds from ``start`` to ``end`` (unix seconds)."""

    def __init__(self, start: int, end: int, step: int = 30) -> None:
        self.start, self.end, self.step = start, end, step
        self.families: dict[str, list[str]] = {}

    def _times(self) -> Iterable[int]:
        return range(self.start, self.end + 1, self.step)

    def counter(self, name: str, labels: dict[str, str], rate: Rate | float) -> None:
        slope: Rate = rate if callable(rate) else _constant(float(rate))
        total, lines, previous = 0.0, self.families.setdefault(name, []), self.start
        for t in self._times():
            total += slope(t - self.start) * (t - previous)
            previous = t
            lines.append(f"{name}{_labels(labels)} {total:.6f} {t}")

    def gauge(self, name: str, labels: dict[str, str], value: float) -> None:
        lines = self.families.setdefault(name, [])
        lines += [f"{name}{_labels(labels)} {value} {t}" for t in self._times()]

    def text(self) -> str:
        out = []
        for name, lines in self.families.items():
            out.append(f"# TYPE {name} unknown")
            out += lines
        return "\n".join(out) + "\n# EOF\n"


def _constant(value: float) -> Rate:
    return lambda _seconds: value


def _labels(labels: dict[str, str]) -> str:
    return "{" + ",".join(f'{k}="{v}"' for k, v in labels.items()) + "}"


KPS_APISERVER_EDGES = ("0.005", "0.025", "0.05", "0.1", "0.25", "0.5", "1", "2.5", "5", "10", "+Inf")


def preflight_data(start: int, end: int) -> str:
    om = OpenMetrics(start, end)
    for instance in range(6):  # CoreDNS as kube-prometheus-stack labels it
        for rcode, rate in (("NOERROR", 100.0), ("SERVFAIL", 0.01)):
            labels = {"job": "coredns", "cluster": "west", "instance": f"10.0.0.{instance}:9153", "rcode": rcode}
            om.counter("coredns_dns_responses_total", labels, rate)
        om.gauge("up", {"job": "coredns", "cluster": "west", "instance": f"10.0.0.{instance}:9153"}, 1)
        om.gauge(
            "scrape_samples_scraped", {"job": "coredns", "cluster": "west", "instance": f"10.0.0.{instance}:9153"}, 800
        )
    ksm = {"job": "kube-state-metrics", "cluster": "west", "namespace": "kube-system"}
    om.gauge("kube_deployment_status_replicas_unavailable", {**ksm, "deployment": "coredns"}, 0)
    om.gauge("up", {"job": "apiserver", "cluster": "west", "instance": "10.0.1.1:6443"}, 1)
    for edge in KPS_APISERVER_EDGES:  # 0.2 dropped by the chart's metricRelabelings
        labels = {"job": "apiserver", "cluster": "west", "verb": "POST", "le": edge}
        om.counter(
            "apiserver_request_duration_seconds_bucket",
            labels,
            50.0 * min(1.0, 0.5 + KPS_APISERVER_EDGES.index(edge) / 10),
        )
    om.counter(
        "apiserver_request_duration_seconds_count", {"job": "apiserver", "cluster": "west", "verb": "POST"}, 50.0
    )
    for code, rate in (("200", 99.0), ("500", 1.0)):  # 1% errors: ten times the budget
        om.counter("apiserver_request_total", {"job": "apiserver", "cluster": "west", "code": code}, rate)
    for profile in ("default-scheduler", None):  # an exporter version without the profile label
        labels = {"job": "kube-scheduler", "cluster": "west", **({"profile": profile} if profile else {})}
        om.counter("scheduler_schedule_attempts_total", {**labels, "result": "scheduled"}, 10.0)
        om.counter("scheduler_schedule_attempts_total", {**labels, "result": "error"}, 0.01)
    for node, pools in (("n1", ("a",)), ("n2", ("a", "b"))):  # n2 relabelled mid-scrape: two pools
        kubelet = {"job": "kubelet", "cluster": "west", "node": node, "instance": f"{node}:10250"}
        om.gauge("up", kubelet, 1)
        om.gauge("scrape_samples_scraped", kubelet, 2400)
        om.counter("kubelet_runtime_operations_total", kubelet, 5.0)
        om.counter("kubelet_runtime_operations_errors_total", kubelet, 0.001)
        for pool in pools:
            om.gauge(
                "kube_node_labels",
                {"job": "kube-state-metrics", "cluster": "west", "node": node, "label_node_pool": pool},
                1,
            )
    return om.text()


# -- backtest ------------------------------------------------------------------------------------

BACKTEST_PROJECT = """\
apiVersion: slo-compiler/v1
kind: Project
runbook_base_url: https://runbooks.example.com/slo
evaluation_interval: 2s
"""

BACKTEST_VMALERT_PROJECT = BACKTEST_PROJECT + "rule_profiles:\n  vmalert: {}\n"

BACKTEST_SPECS = {
    # A gauge that steps up and back down: fires after for, resolves after keep_firing_for.
    "queue-depth": """\
slice: {by: [cluster]}
sli:
  gauge:
    expr: 'max by (cluster) (work_queue_depth > 0)'
    aggregate: max
unit: count
normal_range: {max: 100, for: 6s, keep_firing_for: 6s}
critical_range: {max: 300, for: 0s, severity: page}
persistence: {for: 6s}
no_data: {for: 4s}
""",
    # Errors from a moment on: the fast burn pair fires (it stays firing: the 5m window still holds them).
    "request-errors": """\
slice: {by: [cluster]}
sli:
  ratio:
    bad: 'app_requests_total{code="500"}'
    total: app_requests_total
objective:
  target: 99%
  period: 7d
  burn_alerts:
    - {severity: page, long: 1h, short: 5m, factor: 10, for: 8s}
    - {severity: ticket, long: 6h, short: 30m, factor: 40, for: 4s}
persistence: {for: 6s}
no_data: {for: 10m}
""",
}


# A fleet of hosts (test_live_backtest): west h1 and h2 run hot from the incident, h2 until the calm. Each unit
# ticket fires before the page (its for is shorter), both are held back while the page fires, and h1's fires
# again once the page's condition breaks (one unit out) and its own for has passed.
FLEET_SPECS = {
    "host-temp": """\
slice: {by: [cluster]}
sli:
  gauge:
    expr: 'max by (cluster) (host_temp)'
    aggregate: max
unit: ratio
normal_range: {max: 0.8, for: 20s}
critical_range: {max: 0.95, for: 8s}
fleet:
  units: [instance]
  page: {units: 2}
  for: 4s
series_budget: 7504
persistence: {for: 4s}
no_data: {for: 10m}
""",
}


def _errors_from(start: int, incident: int, hot: bool) -> Rate:
    return lambda seconds: 100.0 if hot and start + seconds > incident else 0.0


def backtest_data(
    start: int, end: int, incident: int, calm_again: int, drained: int | None = None, hosts: bool = False
) -> str:
    """West: queue depth 500 and 91% errors from ``incident``, depth back to 10 at ``calm_again``; east stays calm.

    From ``drained`` every queue is empty: the gauge SLI (``depth > 0``) has no series, so its recorded
    series goes stale at once and the no-data alert fires (the raw series are still there: only the
    rule's own staleness makes it disappear within the 5m lookback). With ``hosts``, the host
    temperatures of ``FLEET_SPECS``.
    """
    om = OpenMetrics(start, end, step=5)
    for cluster in ("west", "east"):
        hot = cluster == "west"
        om.counter("app_requests_total", {"cluster": cluster, "code": "200"}, 10.0)
        om.counter("app_requests_total", {"cluster": cluster, "code": "500"}, _errors_from(start, incident, hot))
        lines = om.families.setdefault("work_queue_depth", [])
        for t in range(start, end + 1, 5):
            depth = 500 if hot and incident <= t < calm_again else 10
            depth = 0 if drained is not None and t >= drained else depth
            lines.append(f'work_queue_depth{{cluster="{cluster}"}} {depth} {t}')
        for host in range(1, 5) if hosts else ():
            temps = om.families.setdefault("host_temp", [])
            until = end + 1 if host == 1 else calm_again if host == 2 else incident
            for t in range(start, end + 1, 5):
                temp = 0.99 if hot and incident <= t < until else 0.5
                temps.append(f'host_temp{{cluster="{cluster}",instance="h{host}"}} {temp} {t}')
    return om.text()
