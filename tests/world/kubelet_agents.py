"""More kubelet series per node: client-certificate TTL, pod sandbox creation, and cAdvisor's
CFS counters for the platform's agents.

Verified in source:

- ``kubelet_certificate_manager_client_ttl_seconds`` (cmd/kubelet/app/server.go, a GaugeFunc
  registered when client rotation is on): ``NotAfter`` minus now, truncated to seconds, no
  labels. A kubeadm client certificate lives a year and is renewed at 70-90% of its life, so
  a healthy node's TTL is between about 37 and 365 days and falls one second a second; the
  certificate is on disk, so a reboot changes nothing but the scrape gap.
- ``kubelet_run_podsandbox_duration_seconds{runtime_handler}`` (pkg/kubelet/metrics/metrics.go,
  a HistogramVec with DefBuckets; the child appears at the node's first sandbox, which every
  node had long before the data starts: its DaemonSet pods). ``kubelet_run_podsandbox_errors_total``
  is a CounterVec created at the first failure: absent on a healthy fleet.
- ``container_cpu_cfs_periods_total`` / ``container_cpu_cfs_throttled_periods_total`` (cAdvisor,
  /metrics/cadvisor): only for containers with a CPU limit (a CFS quota); both stacks' kubelet
  ServiceMonitors keep them (kube-prometheus-stack's cAdvisorMetricRelabelings drop
  ``cfs_throttled_seconds_total`` and cgroups without a pod, not these). The labels are the
  container's (``namespace``, ``pod``, ``container``, ``image``, ``id``, ``name``): a reboot
  restarts every container, so the series after it are new ones (a new container id) that
  start from 0, and the old ones end.
"""

from __future__ import annotations

import math
import zlib
from collections.abc import Callable

from tests.world import shapes
from tests.world.nodes import _flags, _scraped
from tests.world.stack import StackView
from tests.world.timeline import Series, counter, gauge, series
from tests.world.topology import Cluster, Node, World

DEF_BUCKETS = (0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1.0, 2.5, 5.0, 10.0)
# containerd with a working CNI: most sandboxes within half a second, the CNI ADD the tail.
SANDBOX: shapes.Shape = ((0.1, 0.15), (0.25, 0.55), (0.5, 0.85), (1, 0.96), (2.5, 0.994), (5, 0.9995), (10, 0.9999))
YEAR_S = 365 * 86400

# kube-system agents with a CPU limit (pool they run on, periods a second, usual throttled share).
AGENTS = (
    ("fluent-bit", "fluent-bit", "", 6.0, 0.03),
    ("node-local-dns", "node-cache", "", 4.0, 0.01),
    ("nvidia-device-plugin-daemonset", "nvidia-device-plugin-ctr", "gpu-train", 1.5, 0.0),
)


def _seed(node: Node) -> int:
    return zlib.crc32(node.name.encode())


def _base(node: Node, stack: StackView, path: str) -> dict[str, str]:
    """The kubelet's target labels, as ``nodes.kubelet`` writes them."""
    base = {"cluster": node.cluster, "job": stack.job("kubelet"), "instance": f"{node.ip}:10250", "node": node.name}
    base.update(namespace="kube-system", service=stack.kubelet_service, endpoint="https-metrics")
    base["metrics_path"] = path
    return base


def series_for(world: World, cluster: Cluster, stack: StackView) -> list[Series]:
    out: list[Series] = []
    for node in world.nodes(cluster):
        out += _certificate(world, node, stack) + _sandboxes(world, node, stack) + _cfs(world, node, stack)
    return out


def _certificate(world: World, node: Node, stack: StackView) -> list[Series]:
    scraped = _scraped(world, node)
    # Renewed at some point of the last 10 months: 60 to 330 days left.
    left = float((60 + _seed(node) % 270) * 86400)
    ttl = gauge(lambda i: left - i * 30 if scraped(i) else None, world.samples)
    return [series("kubelet_certificate_manager_client_ttl_seconds", _base(node, stack, "/metrics"), ttl)]


def _sandboxes(world: World, node: Node, stack: StackView) -> list[Series]:
    """One sandbox per pod start: as often as the pod-start histogram of ``nodes.kubelet``."""
    scraped = _scraped(world, node)
    starts = 1 / 120 if node.pool == "infra" else 1 / 600
    labels = {**_base(node, stack, "/metrics"), "runtime_handler": ""}
    rate: Callable[[int], float | None] = lambda i: starts if scraped(i) else None  # noqa: E731
    return shapes.histogram(
        "kubelet_run_podsandbox_duration_seconds", labels, DEF_BUCKETS, rate, SANDBOX, 0.35, world.samples
    )


def _epochs(world: World, node: Node) -> list[int | None]:
    """Which boot each sample belongs to (None while the node is down or gone)."""
    scraped, down = _scraped(world, node), _flags(world, node, "down")
    out: list[int | None] = []
    boot = 0
    for i in range(world.samples):
        if i and down[i - 1] and not down[i]:
            boot += 1
        out.append(boot if scraped(i) else None)
    return out


def _cfs(world: World, node: Node, stack: StackView) -> list[Series]:
    base = _base(node, stack, "/metrics/cadvisor")
    epochs, seed, out = _epochs(world, node), _seed(node), []
    for daemonset, container, pool, periods, throttled in AGENTS:
        if pool and node.pool != pool:
            continue
        pod = f"{daemonset}-{(seed + len(container)) % 99999:05x}"
        for boot in sorted({epoch for epoch in epochs if epoch is not None}):
            cid = f"{zlib.crc32(f'{node.name}{container}{boot}'.encode()):08x}" * 8
            labels = {**base, "namespace": "kube-system", "pod": pod, "container": container, "name": cid}
            labels.update(image=f"registry.example/{container}:v1", id=f"/kubepods/burstable/pod-{pod}/{cid}")
            live = [epoch == boot for epoch in epochs]

            def share(i: int, usual: float = throttled) -> float:
                return usual * (1 + 0.5 * math.sin(i / 23 + seed % 9))

            rate = [periods if on else None for on in live]
            hit = [periods * share(i) if on else None for i, on in enumerate(live)]
            out.append(series("container_cpu_cfs_periods_total", labels, counter(rate, world.samples)))
            out.append(series("container_cpu_cfs_throttled_periods_total", labels, counter(hit, world.samples)))
    return out
