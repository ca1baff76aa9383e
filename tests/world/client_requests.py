"""client-go's view of the apiservers from the kubelets, schedulers and controller-managers.

``rest_client_requests_total{code, method, host}`` (k8s.io/component-base
metrics/prometheus/restclient/metrics.go:88, a CounterVec): a child per code, method and host
once a request of that kind completed; a request with no response counts as ``code="<error>"``
(client-go rest/request.go:958). The kubelet exports it on ``/metrics`` only. Healthy: almost all
2xx, a few 404s, and on a few nodes a handful of ``<error>`` from apiserver restarts long ago.
kube-proxy's client series belong to its exporter (not written here).
"""

from __future__ import annotations

from tests.world.control_plane import _base
from tests.world.nodes import _scraped
from tests.world.stack import StackView
from tests.world.timeline import Series, const, counter, series, steps
from tests.world.topology import Cluster, Node, World

# (code, method, requests per second): leases every 10 s, node status, pod status, events.
_KUBELET = (("200", "GET", 0.15), ("200", "PUT", 0.1), ("200", "PATCH", 0.02), ("201", "POST", 0.01))
_KUBELET_RARE = (("404", "GET", 0.002),)
_LEADER = {
    "kube-scheduler": (("200", "GET", 2.0), ("200", "PUT", 0.5), ("201", "POST", 3.0), ("200", "PATCH", 0.2)),
    "kube-controller-manager": (
        ("200", "GET", 10.0),
        ("200", "PUT", 5.0),
        ("200", "PATCH", 2.0),
        ("201", "POST", 2.0),
        ("200", "DELETE", 0.5),
        ("404", "GET", 0.05),
    ),
}
_STANDBY = (("200", "GET", 0.5),)  # polling the leader-election lease every 2 s
_PORTS = {"kube-scheduler": 10259, "kube-controller-manager": 10257}


def _host(cluster: Cluster) -> str:
    return f"api.{cluster.name}.internal:6443"


def clients(world: World, cluster: Cluster, stack: StackView) -> list[Series]:
    """Every client of this module in one cluster."""
    return control_plane_clients(world, cluster, stack) + kubelet_clients(world, cluster, stack)


def control_plane_clients(world: World, cluster: Cluster, stack: StackView) -> list[Series]:
    """Schedulers and controller-managers: the leader (replica 0) works, the standbys poll."""
    out: list[Series] = []
    if cluster.control_plane == "managed" or cluster.localhost_binds:
        return out  # no such targets, or every scrape refused
    for component, port in _PORTS.items():
        for number in range(cluster.schedulers):
            base = _base(cluster, stack.job(component), f"10.{cluster.index}.0.{number + 1}:{port}")
            base.update(namespace="kube-system", host=_host(cluster))
            for code, method, rate in _STANDBY if number else _LEADER[component]:
                labels = {**base, "code": code, "method": method}
                values = counter(const(rate), world.samples, start=rate * 86400)
                out.append(series("rest_client_requests_total", labels, values))
    return out


def kubelet_clients(world: World, cluster: Cluster, stack: StackView) -> list[Series]:
    """Every kubelet's requests; a node that is down is not scraped and restarts from 0."""
    out: list[Series] = []
    for node in world.nodes(cluster):
        out += _kubelet(world, cluster, node, stack)
    return out


def _kubelet(world: World, cluster: Cluster, node: Node, stack: StackView) -> list[Series]:
    base = {"cluster": node.cluster, "job": stack.job("kubelet"), "instance": f"{node.ip}:10250", "node": node.name}
    base.update(namespace="kube-system", service=stack.kubelet_service, endpoint="https-metrics")
    base.update(metrics_path="/metrics", host=_host(cluster))
    scraped, count = _scraped(world, node), world.samples
    out = []
    for code, method, rate in _KUBELET + _KUBELET_RARE:
        values = counter([rate if scraped(i) else None for i in range(count)], count, start=rate * 86400)
        out.append(series("rest_client_requests_total", {**base, "code": code, "method": method}, values))
    octet = int(node.ip.rsplit(".", 1)[1])
    if octet % 7 == 0:
        # A few requests that got no answer while an apiserver restarted, days ago; one more every 2 hours.
        labels = {**base, "code": "<error>", "method": "GET"}
        errors = steps(240, count, scraped, offset=720 + octet * 37 % 240)
        out.append(series("rest_client_requests_total", labels, errors))
    return out
