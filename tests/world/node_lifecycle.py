"""The node lifecycle controller's view of each zone, as kube-controller-manager exports it.

Verified in kubernetes/kubernetes pkg/controller/nodelifecycle (metrics.go and
node_lifecycle_controller.go): ``node_collector_zone_health``, ``node_collector_zone_size``
and ``node_collector_unhealthy_nodes_in_zone`` are gauges per ``zone`` set on every
monitorNodeHealth pass (``100 * (size - unhealthy) / size``, a node counting as unhealthy when
its Ready condition is not True); ``node_collector_evictions_total{zone}`` is initialised with
``Add(0)`` when the controller first sees a zone and counts the NoExecute taints it swaps in
(one per node that goes NotReady or unreachable, rate-limited at 0.1 nodes/s per zone). The
zone key is ``region + ":\\x00:" + zone`` (the Node's topology labels). Only the leader runs
the controller, so only it has these series; the three replicas' targets (``up``) are
written by ``controller_manager.py``.
"""

from __future__ import annotations

from tests.world.control_plane import _base
from tests.world.nodes import _gone, _ready_status
from tests.world.stack import StackView
from tests.world.timeline import Series, series
from tests.world.topology import Cluster, Node, World


def zone_key(zone: str) -> str:
    """The controller's zone key for an AWS-style zone name, written as a PromQL string escape."""
    return f"{zone[:-1]}:\\x00:{zone}"


def series_for(world: World, cluster: Cluster, stack: StackView) -> list[Series]:
    job = stack.job("kube-controller-manager")
    if cluster.control_plane == "managed" or cluster.localhost_binds:
        return []  # no controller-manager to scrape, or its scrape is refused
    # The leader (replica 0) exports the zone series; the targets' `up` is written once, by
    # tests/world/controller_manager.py, which owns the three controller-manager targets.
    base = _base(cluster, job, f"10.{cluster.index}.0.1:10257", namespace="kube-system")
    return _zones(world, cluster, base)


def _zones(world: World, cluster: Cluster, base: dict[str, str]) -> list[Series]:
    zones: dict[str, list[Node]] = {}
    for node in world.nodes(cluster):
        zones.setdefault(node.zone, []).append(node)
    out: list[Series] = []
    for zone, members in sorted(zones.items()):
        labels = {**base, "zone": zone_key(zone)}
        size, unhealthy, evictions = _zone_counts(world, members)
        health = [100 * (s - u) / s if s else 100.0 for s, u in zip(size, unhealthy, strict=True)]
        out.append(series("node_collector_zone_size", labels, size))
        out.append(series("node_collector_unhealthy_nodes_in_zone", labels, unhealthy))
        out.append(series("node_collector_zone_health", labels, health))
        out.append(series("node_collector_evictions_total", labels, evictions))
    return out


def _zone_counts(world: World, members: list[Node]) -> tuple[list[float], list[float], list[float]]:
    """Registered nodes, NotReady nodes and the taint counter of one zone, per sample."""
    size, unhealthy, evictions = [], [], []
    statuses = {node.name: [_ready_status(world, node, i) for i in range(world.samples)] for node in members}
    gone = {node.name: _gone(world, node) for node in members}
    tainted = 0.0
    for i in range(world.samples):
        present = [node for node in members if not gone[node.name](i)]
        bad = [node for node in present if statuses[node.name][i] != "true"]
        # A node turning NotReady gets its NoExecute taint on the controller's next pass.
        tainted += sum(1 for node in bad if i and statuses[node.name][i - 1] == "true")
        size.append(float(len(present)))
        unhealthy.append(float(len(bad)))
        evictions.append(tainted)
    return size, unhealthy, evictions
