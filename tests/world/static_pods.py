"""kube-state-metrics' view of the control plane's static pods on a self-managed cluster.

kubeadm runs kube-apiserver, kube-scheduler, kube-controller-manager and etcd as static pods of
each control-plane node (manifests in /etc/kubernetes/manifests): the kubelet creates a mirror
pod ``<component>-<node name>`` in kube-system owned by the Node, so kube-state-metrics reports
``kube_pod_info{created_by_kind="Node", created_by_name=<node>}`` (internal/store/pod.go) and
``kube_pod_status_ready{condition}`` (one series per condition, 1 on the pod's). The kubelet
probes them on the node itself (127.0.0.1), so they are Ready whether or not Prometheus can
scrape their metrics (kubeadm's localhost binds). A managed control plane (EKS, GKE, AKS) has
no such pods: the provider runs the components outside the cluster.

Each static pod's one container (named as the component) has ``kube_pod_container_info`` (:139 @v2.13.0,
``image_spec`` the manifest's image) and ``kube_pod_container_status_restarts_total`` (:431): the second
control-plane node's etcd restarted once days ago (``kube_pod_container_status_last_terminated_reason``
"Error", :329), the rest never. The cluster fault ``apiserver-oom-loop`` makes the first control-plane
node's kube-apiserver OOM-killed two minutes after each start from its beginning: the kubelet backs off
10 s, doubling to 5 minutes (``kube_pod_container_status_waiting_reason{reason="CrashLoopBackOff"}``,
:556, while it waits), restarts it, and the count and the last termination (OOMKilled) follow.
"""

from __future__ import annotations

import zlib

from tests.world.stack import StackView
from tests.world.timeline import Series, const, gauge, series
from tests.world.topology import Cluster, World, minute_of

COMPONENTS = ("kube-apiserver", "kube-scheduler", "kube-controller-manager", "etcd")
VERSION = "v1.30.4"
RUN_BEFORE_OOM_MIN = 2.0  # the looping apiserver loads its caches and takes load for 2 minutes, then is killed


def control_plane_nodes(cluster: Cluster) -> list[tuple[str, str]]:
    """(node name, address) of the control-plane nodes: one per apiserver, at 10.<index>.0.N."""
    return [
        (f"{cluster.name}-cp-{number + 1}", f"10.{cluster.index}.0.{number + 1}")
        for number in range(cluster.apiservers)
    ]


def series_for(world: World, cluster: Cluster, stack: StackView) -> list[Series]:
    if cluster.control_plane == "managed":
        return []
    base = {"cluster": cluster.name, "job": stack.job("kube-state-metrics")}
    base["instance"] = f"10.{cluster.index}.200.10:8080"
    base.update(pod="kube-state-metrics-7d9c6b8f5-q2xkz", endpoint="http")
    base.update(service="kube-state-metrics", container="kube-state-metrics")
    out: list[Series] = []
    for node, address in control_plane_nodes(cluster):
        for component in COMPONENTS:
            # The exporter's own pod label is replaced by the object's: honorLabels on the chart's ServiceMonitor.
            pod = {**base, "namespace": "kube-system", "pod": f"{component}-{node}"}
            pod["uid"] = f"{zlib.crc32(pod['pod'].encode()):08x}-7e1f-4c2a-9d3b-{zlib.crc32(node.encode()):012x}"
            info = {**pod, "node": node, "host_ip": address, "pod_ip": address, "host_network": "true"}
            info.update(created_by_kind="Node", created_by_name=node, priority_class="system-node-critical")
            out.append(series("kube_pod_info", info, gauge(const(1.0), world.samples)))
            for condition in ("true", "false", "unknown"):
                ready = gauge(const(float(condition == "true")), world.samples)
                out.append(series("kube_pod_status_ready", {**pod, "condition": condition}, ready))
            looping = component == "kube-apiserver" and node == control_plane_nodes(cluster)[0][0]
            out += _container(world, cluster, {**pod, "container": component}, looping, node.endswith("-cp-2"))
    return out


def _container(world: World, cluster: Cluster, labels: dict[str, str], looping: bool, crashed: bool) -> list[Series]:
    """The static pod's container: its image, restarts, last termination and, while it loops, its back-off."""
    component = labels["container"]
    image = f"registry.k8s.io/{component}:{VERSION}" if component != "etcd" else "registry.k8s.io/etcd:3.5.15-0"
    info = {**labels, "image_spec": image, "image": image, "image_id": "", "container_id": ""}
    count = world.samples
    states = _loop(world, cluster) if looping else [(None, 0)] * count
    base = 1.0 if crashed and component == "etcd" else 0.0
    out = [
        series("kube_pod_container_info", info, gauge(const(1.0), count)),
        series("kube_pod_container_status_restarts_total", labels, [base + restarts for _, restarts in states]),
        series(
            "kube_pod_container_status_waiting_reason",
            {**labels, "reason": "CrashLoopBackOff"},
            [1.0 if waiting == "CrashLoopBackOff" else None for waiting, _ in states],
        ),
    ]
    for reason in ("Error", "OOMKilled"):
        last = [
            1.0 if (restarts and reason == "OOMKilled") or (not restarts and base and reason == "Error") else None
            for _, restarts in states
        ]
        out.append(series("kube_pod_container_status_last_terminated_reason", {**labels, "reason": reason}, last))
    return out


def _loop(world: World, cluster: Cluster) -> list[tuple[str | None, int]]:
    """(waiting reason or None while running, restarts so far) per sample under ``apiserver-oom-loop``."""
    states: list[tuple[str | None, int]] = []
    restarts, next_exit, restart_at, backoff = 0, None, None, 10 / 60
    for i in range(world.samples):
        minute = minute_of(i)
        fault = world.cluster_fault(cluster.name, "apiserver-oom-loop", minute)
        if fault is not None and next_exit is None:
            next_exit = float(fault.start)
        if next_exit is not None and restart_at is None and minute >= next_exit:
            restart_at = next_exit + backoff  # killed: the kubelet waits out the back-off
        if restart_at is not None and minute >= restart_at:
            restarts += 1
            next_exit, restart_at, backoff = restart_at + RUN_BEFORE_OOM_MIN, None, min(backoff * 2, 5.0)
        states.append(("CrashLoopBackOff" if restart_at is not None else None, restarts))
    return states
