"""The verdict on each mixin test case, and what the cases add to the mixins' inputs.

Kept apart from the test module so the docs check (tests/unit/test_docs_coverage.py) reads it
without starting promtool.
"""

from __future__ import annotations

from tests.conformance.mixins import Addition

_SCHEDULER_POD = Addition(
    'kube_pod_info{job="kube-state-metrics", namespace="kube-system", created_by_kind="Node", '
    'pod="kube-scheduler-cp1", node="cp1"}',
    "1+0x29",
    "kube-state-metrics lists the kube-scheduler's static pod: a cluster with a kube-scheduler target to lose is "
    "a self-managed control plane, which runs it as a static pod (the spec's self-managed-control-plane assumption)",
)
_CONTROLLER_MANAGER_POD = Addition(
    'kube_pod_info{job="kube-state-metrics", namespace="kube-system", created_by_kind="Node", '
    'pod="kube-controller-manager-cp1", node="cp1"}',
    "1+0x29",
    "kube-state-metrics lists the kube-controller-manager's static pod, as for the kube-scheduler",
)

# Per case id prefix ("<folder>/<file>#<group>"), the series added to the mixin's input_series. Besides these,
# every up gets the scrape_samples_scraped Prometheus writes with it (mixins.scrape_samples).
ADDITIONS: dict[str, tuple[Addition, ...]] = {
    "kubernetes-mixin/tests/absent_alert-test.yaml#8 ": (_SCHEDULER_POD,),
    "kubernetes-mixin/tests/absent_alert-test.yaml#9 ": (_CONTROLLER_MANAGER_POD,),
    "kubernetes-mixin/tests/tests.yaml#41 ": (
        Addition(
            'kubelet_node_name{job="kubelet", metrics_path="/metrics", cluster="kubernetes", namespace="monitoring", '
            'node="minikube"}',
            "1+0x1",
            "every kubelet exports kubelet_node_name (1, its node's name); the spec names the node from it",
        ),
    ),
    "etcd/test.yaml#1 ": (
        Addition(
            'apiserver_request_total{job="apiserver", verb="POST", resource="pods", code="500"}',
            "_x8 10+10x17",
            "an etcd without quorum fails every write, which the apiserver answers 5xx: its counter of 5xx writes "
            "appears at minute 8, when the second of three members goes down (the spec's apiserver-writes-failing)",
        ),
    ),
    "coredns/tests.yaml#2 ": (
        Addition(
            'coredns_dns_request_duration_seconds_bucket{instance="1.2.3.4:9153",job="coredns",'
            'kubernetes_name="coredns-kube-metrics",kubernetes_namespace="kube-system",'
            'pod="coredns-65b6759cb4-qgdxp",le="0.256",server="dns://:53",zone="."}',
            "0+4x12",
            "CoreDNS exports every edge of ExponentialBuckets(0.00025, 2, 16), 0.256 among them; the test leaves it "
            "out, so it holds what histogram_quantile reads into the test's bucket from 0.001 to 8.192 s (a linear "
            "spread): 1 + 99 x (0.256 - 0.001) / (8.192 - 0.001) = 4.08 of every 100 queries, 4 here",
        ),
        Addition(
            'coredns_dns_request_duration_seconds_count{instance="1.2.3.4:9153",job="coredns",'
            'kubernetes_name="coredns-kube-metrics",kubernetes_namespace="kube-system",'
            'pod="coredns-65b6759cb4-qgdxp",server="dns://:53",zone="."}',
            "0+100x12",
            "a histogram exports its _count with its buckets, equal to the +Inf bucket; the spec's total is the _count",
        ),
    ),
}

# Mixin alert -> (minutes, why): how much later than the mixin's eval_time ours may first fire and still agree.
LAG: dict[str, tuple[int, str]] = {
    "etcdInsufficientMembers": (
        1,
        "the page is confirmed by the apiserver's 5xx write rate, which needs two samples of the counter the "
        "first failed write creates: one evaluation after quorum is lost",
    ),
}

_K = "kubernetes-mixin/tests/absent_alert-test.yaml"
_T = "kubernetes-mixin/tests/tests.yaml"
_LOOKBACK = (
    "the test was written for Prometheus 3: up's last sample is at minute 5, which Prometheus 2.42 still sees at "
    "minute 10 (its 5-minute lookback includes the start, Prometheus 3's does not), so the series is absent from "
    "minute 11 and the 15-minute for: ends at 26m; the mixin's own rule fires at 26m in promtool 2.42, as ours does"
)
_NO_NODES = (
    "no kube_node_info: a cluster without nodes, so no kubelet to scrape; the mixin's KubeletDown asks kube-state-"
    "metrics whether the cluster has nodes and stays silent, and so does kubelet-scrape-coverage since its "
    "cluster-has-nodes assumption gates KubeletTargetsNoData (it paged at 25m before)"
)

# Case id -> (verdict, reason): see the test module for what each verdict asserts.
VERDICTS: dict[str, tuple[str, str]] = {
    f"{_K}#1 KubeAPIDown @10m": (
        "earlier",
        "KubeAPIServerTargetsBelowNormalRange pages at 10m: the one apiserver's up is 0 at minute 5, under half up "
        "for 5 minutes (the manual: pages after 5 minutes, the mixin 15); the mixin's test expects it at 25m",
    ),
    f"{_K}#1 KubeAPIDown @25m": ("agree", ""),
    f"{_K}#2 KubeletDown @10m": ("agree", ""),
    f"{_K}#2 KubeletDown @25m": ("agree", ""),
    f"{_K}#3 KubeletDown @25m": ("agree", ""),
    f"{_K}#4 KubeletDown @25m": ("agree", _NO_NODES),
    f"{_K}#5 KubeletDown @10m": ("agree", ""),
    f"{_K}#5 KubeletDown @25m": ("agree", ""),
    f"{_K}#6 KubeletDown @25m": ("agree", ""),
    f"{_K}#7 KubeletDown @25m": ("agree", _NO_NODES + " (the same without a cluster label)"),
    f"{_K}#8 KubeSchedulerDown @10m": ("agree", ""),
    f"{_K}#8 KubeSchedulerDown @25m": ("agree", ""),
    f"{_K}#9 KubeControllerManagerDown @10m": ("agree", ""),
    f"{_K}#9 KubeControllerManagerDown @25m": ("prometheus-3", _LOOKBACK),
    f"{_K}#10 KubeProxyDown @10m": ("agree", ""),
    f"{_K}#10 KubeProxyDown @25m": ("prometheus-3", _LOOKBACK),
    f"{_K}#17 KubeControllerManagerInstanceUnreachable @10m": ("agree", ""),
    f"{_K}#17 KubeControllerManagerInstanceUnreachable @25m": ("agree", ""),
    f"{_K}#18 KubeControllerManagerInstanceUnreachable @25m": ("agree", ""),
    f"{_T}#41 KubeletClientCertificateExpiration @0m": ("agree", ""),
    f"{_T}#41 KubeletClientCertificateExpiration @1m": ("agree", ""),
    f"{_T}#48 KubeAPITerminatedRequests @5m": ("agree", ""),
    f"{_T}#48 KubeAPITerminatedRequests @10m": ("agree", ""),
    "etcd/test.yaml#1 etcdInsufficientMembers @3m": ("agree", ""),
    "etcd/test.yaml#1 etcdInsufficientMembers @5m": ("agree", ""),
    "etcd/test.yaml#1 etcdInsufficientMembers @7m": ("agree", ""),
    "etcd/test.yaml#1 etcdInsufficientMembers @11m": ("agree", "at 12m, within the lag LAG states"),
    "etcd/test.yaml#1 etcdInsufficientMembers @15m": ("agree", ""),
    "etcd/test.yaml#7 etcdDatabaseHighFragmentationRatio @11m": ("agree", ""),
    "coredns/tests.yaml#1 CoreDNSErrorsHigh @11m": ("agree", ""),
    "coredns/tests.yaml#2 CoreDNSLatencyHigh @11m": ("agree", ""),
    "coredns/tests.yaml#4 CoreDNSForwardHealthcheckBrokenCount @11m": ("agree", ""),
}
