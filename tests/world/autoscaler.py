"""The cluster-autoscaler of the clusters that run one (``Cluster.cluster_autoscaler``), as scraped.

Verified in kubernetes/autoscaler at cluster-autoscaler-1.30.0, cluster-autoscaler/metrics/metrics.go:
``cluster_autoscaler_last_activity{activity}`` (:239), the Unix time a part of the loop last ran
(``UpdateLastTime``, :484): "main" at every loop's start (loop/run.go:33, every 10 s), "autoscaling" each
loop (core/static_autoscaler.go:474); ``cluster_autoscaler_cluster_safe_to_autoscale`` (:125), 1 on a
healthy cluster. One replica (the leader), in kube-system, scraped as the job the project names
(``scrape_profile.components``). The cluster fault ``autoscaler-scaled-to-zero`` (a runbook froze it
with kubectl scale --replicas=0 and nobody scaled it back) removes the target and its series from the
fault's start.
"""

from __future__ import annotations

from tests.world.stack import StackView
from tests.world.timeline import STEP_S, Series, series
from tests.world.topology import Cluster, World, minute_of

SCAN_INTERVAL_S = 10


def series_for(world: World, cluster: Cluster, stack: StackView) -> list[Series]:
    if not cluster.cluster_autoscaler:
        return []
    count = world.samples
    gone = [
        world.cluster_fault(cluster.name, "autoscaler-scaled-to-zero", minute_of(i)) is not None for i in range(count)
    ]
    base = {"cluster": cluster.name, "job": stack.job("cluster-autoscaler"), "namespace": "kube-system"}
    base.update(instance=f"10.{cluster.index}.220.10:8085", pod="cluster-autoscaler-6f9d8c7b5-x7k2p")
    base.update(service="cluster-autoscaler", endpoint="http")

    def present(value: float) -> list[float | None]:
        return [None if off else value for off in gone]

    # The last loop started up to one scan interval before the scrape: 5 s before it, on average.
    started = [None if off else float(i * STEP_S - SCAN_INTERVAL_S / 2) for i, off in enumerate(gone)]
    return [
        series("up", base, present(1.0)),
        series("cluster_autoscaler_last_activity", {**base, "activity": "main"}, started),
        series("cluster_autoscaler_last_activity", {**base, "activity": "autoscaling"}, started),
        series("cluster_autoscaler_cluster_safe_to_autoscale", base, present(1.0)),
    ]
