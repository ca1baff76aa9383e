"""Finite histogram bucket edges of well-known Kubernetes metrics (Kubernetes 1.28-1.31).

A latency threshold must be a bucket edge: ``le="5"`` on a histogram whose edges are
5.12 and 10.24 matches no series, and the SLI silently reads as 100% bad. A quantile
threshold at or above the top finite edge can never be exceeded. Specs may declare
``buckets`` for any histogram not listed here.
"""

from __future__ import annotations


def _exponential(start: float, factor: float, count: int) -> tuple[float, ...]:
    """Edges as Go's prometheus.ExponentialBuckets computes them (repeated multiplication)."""
    edges = []
    value = start
    for _ in range(count):
        edges.append(value)
        value *= factor
    return tuple(edges)


def _edges(text: str) -> tuple[float, ...]:
    return tuple(float(edge) for edge in text.split())


_DEF_BUCKETS = _edges("0.005 0.01 0.025 0.05 0.1 0.25 0.5 1 2.5 5 10")
_APISERVER_REQUEST = _edges("0.005 0.025 0.05 0.1 0.2 0.4 0.6 0.8 1 1.25 1.5 2 3 4 5 6 8 10 15 20 30 45 60")
_APISERVER_SLI = _edges("0.05 0.1 0.2 0.4 0.6 0.8 1 1.25 1.5 2 3 4 5 6 8 10 15 20 30 45 60")

KNOWN_BUCKETS: dict[str, tuple[float, ...]] = {
    "apiserver_request_sli_duration_seconds": _APISERVER_SLI,
    "apiserver_request_slo_duration_seconds": _APISERVER_SLI,
    "apiserver_request_duration_seconds": _APISERVER_REQUEST,
    "etcd_request_duration_seconds": _APISERVER_REQUEST,
    "scheduler_pod_scheduling_sli_duration_seconds": _exponential(0.01, 2, 20),
    "scheduler_pod_scheduling_duration_seconds": _exponential(0.01, 2, 20),
    "scheduler_scheduling_attempt_duration_seconds": _exponential(0.001, 2, 15),
    "scheduler_pod_scheduling_attempts": _edges("1 2 4 8 16"),
    "kubelet_pod_start_sli_duration_seconds": _edges(
        "0.5 1 2 3 4 5 6 8 10 20 30 45 60 120 180 240 300 360 480 600 900 1200 1800 2700 3600"
    ),
    "kubelet_pod_worker_duration_seconds": _DEF_BUCKETS,
    "kubelet_pleg_relist_duration_seconds": _DEF_BUCKETS,
    "kubelet_runtime_operations_duration_seconds": _exponential(0.005, 2.5, 14),
    "apiserver_watch_events_sizes": _exponential(1024, 2, 8),
    "apiserver_flowcontrol_request_wait_duration_seconds": _edges("0 0.005 0.02 0.05 0.1 0.2 0.5 1 2 5 10 15 30"),
    "coredns_dns_request_duration_seconds": _exponential(0.00025, 2, 16),
    # etcd server histograms (etcd v3.5: prometheus.ExponentialBuckets(0.001, 2, 14)).
    "etcd_disk_wal_fsync_duration_seconds": _exponential(0.001, 2, 14),
    "etcd_disk_backend_commit_duration_seconds": _exponential(0.001, 2, 14),
    # Admission webhooks (k8s.io/apiserver pkg/admission/metrics/metrics.go, STABLE, v0.28.0 and v0.31.0).
    "apiserver_admission_webhook_admission_duration_seconds": _edges("0.005 0.025 0.1 0.5 1 2.5 10 25"),
    # Controller work queues (k8s.io/component-base metrics/prometheus/workqueue, v0.28.0 and v0.31.0:
    # ExponentialBuckets(10e-9, 10, 10), 10 ns to 10 s).
    "workqueue_queue_duration_seconds": _exponential(10e-9, 10, 10),
    "workqueue_work_duration_seconds": _exponential(10e-9, 10, 10),
    # kube-proxy (kubernetes pkg/proxy/metrics/metrics.go): merge() starts from a 0 edge, then 0.25 and
    # 0.5, 1..59 s by 1, 60..115 s by 5, 120..300 s by 30.
    "kubeproxy_network_programming_duration_seconds": (
        0.0,
        0.25,
        0.5,
        *(float(edge) for edge in range(1, 60)),
        *(float(edge) for edge in range(60, 120, 5)),
        *(float(edge) for edge in range(120, 301, 30)),
    ),
    "kubeproxy_sync_proxy_rules_duration_seconds": _exponential(0.001, 2, 15),
    # etcd peer round trips (etcd v3.5 server/etcdserver/api/rafthttp/metrics.go: ExponentialBuckets(0.0001, 2, 16)).
    "etcd_network_peer_round_trip_time_seconds": _exponential(0.0001, 2, 16),
}
