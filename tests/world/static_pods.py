"""kube-state-metrics' view of the control plane's static pods on a self-managed cluster.

kubeadm runs kube-apiserver, kube-scheduler, kube-controller-manager and etcd as static pods of
each control-plane node (manifests in /etc/kubernetes/manifests): the kubelet creates a mirror
pod ``<component>-<node name>`` in kube-system owned by the Node, so kube-state-metrics reports
``kube_pod_info{created_by_kind="Node", created_by_name=<node>}`` (internal/store/pod.go) and
``kube_pod_status_ready{condition}`` (one series per condition, 1 on the pod's). The kubelet
probes them on the node itself (127.0.0.1), so they are Ready whether or not Prometheus can
scrape their metrics (kubeadm's localhost binds). A managed control plane (EKS, GKE, AKS) has
no such pods: the provider runs the components outside the cluster.
"""

from __future__ import annotations

import zlib

from tests.world.stack import StackView
from tests.world.timeline import Series, const, gauge, series
from tests.world.topology import Cluster, World

COMPONENTS = ("kube-apiserver", "kube-scheduler", "kube-controller-manager", "etcd")


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
    return out
