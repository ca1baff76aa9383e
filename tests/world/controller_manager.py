"""kube-controller-manager: three replicas, their targets, and the leader's work queues.

``workqueue_queue_duration_seconds{name}`` (k8s.io/component-base metrics/prometheus/workqueue/
metrics.go:57, ``ExponentialBuckets(10e-9, 10, 10)`` at :60) gets its child when a named queue
is created, so an idle queue has all-zero series (its quantile reads NaN, which never alerts).
Only the leader runs the controllers and creates their queues: the two standbys export none.
Queue names: ``endpoint_slice``, ``garbage_collector_graph_changes`` and
``node_lifecycle_controller`` read in kubernetes/kubernetes pkg/controller (endpointslice,
garbagecollector, nodelifecycle); the others are the long-standing controller queue names
(not re-read at a tag).
"""

from __future__ import annotations

from tests.world import shapes
from tests.world.control_plane import _base, _scale, refused
from tests.world.stack import StackView
from tests.world.timeline import Series, const, gauge, series
from tests.world.topology import Cluster, World

# (queue, items added per second in the larger cluster); 0: created, never used.
_QUEUES = (
    ("endpoint_slice", 2.0),
    ("endpoint", 2.0),
    ("garbage_collector_graph_changes", 20.0),
    ("garbage_collector_attempt_to_delete", 0.3),
    ("node_lifecycle_controller", 6.0),
    ("replicaset", 0.5),
    ("deployment", 0.2),
    ("daemonset", 1.0),
    ("statefulset", 0.05),
    ("job", 0.1),
    ("namespace", 0.0),
    ("serviceaccount", 0.01),
    ("resourcequota_primary", 0.0),
    ("disruption", 0.02),
    ("horizontalpodautoscaler", 0.0),
)
# Healthy queues hand an item to a worker within microseconds to milliseconds.
QUEUE_WAIT: shapes.Shape = ((1e-5, 0.3), (1e-4, 0.7), (1e-3, 0.9), (0.01, 0.97), (0.1, 0.995), (1, 0.9995), (10, 1.0))


def controller_manager(world: World, cluster: Cluster, stack: StackView) -> list[Series]:
    out: list[Series] = []
    job, count = stack.job("kube-controller-manager"), world.samples
    if cluster.control_plane == "managed":
        return []
    if cluster.localhost_binds:  # --bind-address=127.0.0.1
        return refused(world, cluster, job, 10257, cluster.schedulers)
    scale = _scale(cluster, world)
    for number in range(cluster.schedulers):  # one per control-plane node, as the schedulers
        base = _base(cluster, job, f"10.{cluster.index}.0.{number + 1}:10257", namespace="kube-system")
        out.append(series("up", base, gauge(const(1.0), count)))
        if number:
            continue
        edges = stack.edges("workqueue_queue_duration_seconds")
        for name, rate in _QUEUES:
            out += shapes.histogram(
                "workqueue_queue_duration_seconds",
                {**base, "name": name},
                edges,
                const(rate * scale),
                QUEUE_WAIT,
                0.002,
                count,
            )
    return out
