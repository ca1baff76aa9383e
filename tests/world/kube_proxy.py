"""kube-proxy on every node: its target and the sync series the library reads.

Verified in kubernetes/kubernetes pkg/proxy/metrics/metrics.go: ``kubeproxy_sync_proxy_rules_last_timestamp_seconds``
(a gauge set after each successful sync), ``kubeproxy_sync_proxy_rules_{endpoint,service}_changes_pending``
(plain gauges of the changes not yet synced, reset by each sync) and ``kubeproxy_network_programming_duration_seconds``
(a plain histogram without labels, so all its 83 buckets exist from start-up at 0; the edges
are ``compiler.model.buckets``' catalogue, which both stacks keep: no relabeling touches
kube-proxy). ``kubeproxy_sync_proxy_rules_duration_seconds`` is exported too, but no spec
reads it (only a runbook step), so it is not written. Both stacks scrape it as
``job="kube-proxy"`` on ``<node IP>:10249`` (``compiler/model/stacks.py``; kube-prometheus
only with ``kubeProxy: true``), a pod target of the kube-proxy DaemonSet. A rebooting node's
kube-proxy is not scraped (``up`` 0 on the node's address); it comes back with a full sync,
so its timestamp is fresh and its histogram starts again from 0.

Two deployments differ (``Cluster``): with kubeadm's default ``metricsBindAddress``
(127.0.0.1:10249) every target is down and nothing else is scraped, although kube-proxy works;
on an idle cluster (no Service or endpoint changes) the proxier syncs only on its hourly resync
(``NewBoundedFrequencyRunner(..., minSyncPeriod, time.Hour, ...)``, kubernetes PR #129329), so the
timestamp advances once an hour, nothing is pending and nothing is programmed.
"""

from __future__ import annotations

import zlib
from collections.abc import Callable

from tests.world import shapes
from tests.world.nodes import _scraped, _up
from tests.world.stack import StackView
from tests.world.timeline import STEP_S, Series, gauge, series
from tests.world.topology import Cluster, Node, World

# Endpoint change to rules programmed: a sync or two (minSyncPeriod 1 s, syncPeriod 30 s).
PROGRAMMING: shapes.Shape = (
    (0.25, 0.25),
    (0.5, 0.5),
    (1, 0.75),
    (2, 0.93),
    (5, 0.985),
    (10, 0.996),
    (30, 0.9995),
    (60, 0.9999),
    (300, 1.0),
)


def _base(node: Node, stack: StackView) -> dict[str, str]:
    pod = f"kube-proxy-{zlib.crc32(node.name.encode()) % 99999:05x}"
    base = {"cluster": node.cluster, "job": stack.job("kube-proxy"), "instance": f"{node.ip}:10249"}
    base.update(namespace="kube-system", pod=pod, service="kube-proxy", endpoint="http-metrics")
    return base


def series_for(world: World, cluster: Cluster, stack: StackView) -> list[Series]:
    out: list[Series] = []
    for node in world.nodes(cluster):
        out += _kube_proxy(world, node, stack)
    return out


RESYNC_S = 3600  # the iptables proxier's resync when idle


def _kube_proxy(world: World, node: Node, stack: StackView) -> list[Series]:
    base, count = _base(node, stack), world.samples
    cluster = world.cluster(node.cluster)
    if cluster.localhost_binds:
        return [series("up", base, [None if up is None else 0.0 for up in _up(world, node)])]
    scraped = _scraped(world, node)
    jitter = zlib.crc32(node.name.encode()) % 29  # seconds between the last sync and a scrape
    phase = zlib.crc32(node.name.encode()) % RESYNC_S  # when this node's hourly resync falls

    def synced(i: int) -> float | None:
        if not scraped(i):
            return None
        if cluster.kube_proxy_idle:
            return float((i * STEP_S - phase) // RESYNC_S * RESYNC_S + phase)
        return float(max(i * STEP_S - (jitter + 7 * i) % 29, 0))

    rate = 0.0 if cluster.kube_proxy_idle else 0.4
    changes: Callable[[int], float | None] = lambda i: rate if scraped(i) else None  # noqa: E731
    pending: Callable[[int], float | None] = lambda i: 0.0 if scraped(i) else None  # noqa: E731
    out = [
        series("up", base, _up(world, node)),
        series("kubeproxy_sync_proxy_rules_last_timestamp_seconds", base, gauge(synced, count)),
        # Changes wait at most minSyncPeriod (1 s) on a working proxy: a scrape reads 0 pending.
        series("kubeproxy_sync_proxy_rules_endpoint_changes_pending", base, gauge(pending, count)),
        series("kubeproxy_sync_proxy_rules_service_changes_pending", base, gauge(pending, count)),
    ]
    out += shapes.histogram(
        "kubeproxy_network_programming_duration_seconds",
        base,
        stack.edges("kubeproxy_network_programming_duration_seconds"),
        changes,
        PROGRAMMING,
        1.1,
        count,
    )
    return out
