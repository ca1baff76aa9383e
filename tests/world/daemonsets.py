"""kube-state-metrics' DaemonSet status series for the platform's node agents.

Verified in kubernetes/kube-state-metrics internal/store/daemonset.go: ``kube_daemonset_status_*``
gauges with ``namespace`` and ``daemonset`` (the object's namespace: the ServiceMonitor honours
the exporter's labels), values straight from the DaemonSet status. A DaemonSet desires a pod
on every node its selector matches (a deleted node leaves the count); a pod is unavailable
while its node is not Ready (the node lifecycle controller marks the node's pods NotReady) and
for the minute after it is back (containers restart and pass their readiness probes).
"""

from __future__ import annotations

from tests.world.nodes import _gone, _ready_status
from tests.world.stack import StackView
from tests.world.timeline import Series, series
from tests.world.topology import Cluster, Node, World

# (namespace, DaemonSet, the pool it runs on, or "" for every node)
DAEMONSETS = (
    ("kube-system", "kube-proxy", ""),
    ("kube-system", "cilium", ""),
    ("kube-system", "ebs-csi-node", ""),
    ("kube-system", "fluent-bit", ""),
    ("kube-system", "node-local-dns", ""),
    ("kube-system", "nvidia-device-plugin-daemonset", "gpu-train"),
    ("monitoring", "node-exporter", ""),
)
RESTART_SAMPLES = 2  # a minute from Ready to the pod's readiness probe passing


def series_for(world: World, cluster: Cluster, stack: StackView) -> list[Series]:
    base = {"cluster": cluster.name, "job": stack.job("kube-state-metrics")}
    base["instance"] = f"10.{cluster.index}.200.10:8080"
    base.update(pod="kube-state-metrics-7d9c6b8f5-q2xkz", endpoint="http")
    base.update(service="kube-state-metrics", container="kube-state-metrics")
    nodes = world.nodes(cluster)
    unavailable = {node.name: _unavailable(world, node) for node in nodes}
    gone = {node.name: _gone(world, node) for node in nodes}
    out: list[Series] = []
    for namespace, daemonset, pool in DAEMONSETS:
        labels = {**base, "namespace": namespace, "daemonset": daemonset}
        members = [node for node in nodes if not pool or node.pool == pool]
        desired = [float(sum(not gone[n.name](i) for n in members)) for i in range(world.samples)]
        down = [float(sum(unavailable[n.name][i] for n in members)) for i in range(world.samples)]
        available = [d - u for d, u in zip(desired, down, strict=True)]
        for name, values in (
            ("desired_number_scheduled", desired),
            ("current_number_scheduled", desired),
            ("updated_number_scheduled", desired),
            ("number_ready", available),
            ("number_available", available),
            ("number_unavailable", down),
            ("number_misscheduled", [0.0] * world.samples),
        ):
            out.append(series(f"kube_daemonset_status_{name}", labels, values))
    return out


def _unavailable(world: World, node: Node) -> list[bool]:
    gone = _gone(world, node)
    ready = [_ready_status(world, node, i) == "true" for i in range(world.samples)]
    return [not gone(i) and not all(ready[max(0, i - RESTART_SAMPLES) : i + 1]) for i in range(world.samples)]
