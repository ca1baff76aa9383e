"""Per-node series: the kubelet, node-exporter and kube-state-metrics' view of each Node.

A node that is ``down`` (rebooting, unreachable) fails its scrapes: ``up`` is 0 and every other
series of its targets is stale, and its counters start again from 0 when it returns; the node
controller marks it Ready unknown. A ``deleted`` node has no targets and no Node object: its
series simply end (a stale marker, then nothing), ``up`` included. A node that ``joins`` mid-day
(the cluster-autoscaler's scale-up) has no series before it joins; its Node object is created
then (``kube_node_created``) and reports Ready false for its first minute and a half.
"""

from __future__ import annotations

import zlib
from collections.abc import Callable

from tests.world import shapes
from tests.world.stack import StackView
from tests.world.timeline import STEP_S, Series, const, counter, gauge, series, steps
from tests.world.topology import JOIN_NOT_READY_MIN, Cluster, Node, World, minute_of

Condition = Callable[[int], bool]


def _flags(world: World, node: Node, kind: str) -> list[bool]:
    if not world.faults(node, kind):
        return [False] * world.samples
    return [world.node_fault(node, kind, minute_of(i)) is not None for i in range(world.samples)]


def _absent(world: World, node: Node) -> list[bool]:
    """Samples at which the node does not exist: deleted, or not joined yet."""
    deleted, joining = _flags(world, node, "deleted"), _flags(world, node, "joins")
    return [d or j for d, j in zip(deleted, joining, strict=True)]


def _gone(world: World, node: Node) -> Condition:
    return _absent(world, node).__getitem__


def _scraped(world: World, node: Node) -> Condition:
    gone, down = _absent(world, node), _flags(world, node, "down")
    return [not (g or d) for g, d in zip(gone, down, strict=True)].__getitem__


def _up(world: World, node: Node) -> list[float | None]:
    gone, down = _absent(world, node), _flags(world, node, "down")
    return [None if g else (0.0 if d else 1.0) for g, d in zip(gone, down, strict=True)]


def kubelet(world: World, node: Node, stack: StackView) -> list[Series]:
    job, count = stack.job("kubelet"), world.samples
    base = {"cluster": node.cluster, "job": job, "instance": f"{node.ip}:10250", "node": node.name}
    base.update(namespace="kube-system", service=stack.kubelet_service, endpoint="https-metrics")
    scraped = _scraped(world, node)
    out = [
        series("up", {**base, "metrics_path": path}, _up(world, node))
        for path in ("/metrics", "/metrics/cadvisor", "/metrics/probes")
    ]
    base["metrics_path"] = "/metrics"
    out.append(series("kubelet_node_name", base, gauge(lambda i: 1.0 if scraped(i) else None, count)))
    out += _pleg(world, node, base, scraped)
    starts = 1 / 120 if node.pool == "infra" else 1 / 600
    hung = _pleg_hung(world, node)
    out += shapes.histogram(
        "kubelet_pod_start_sli_duration_seconds",
        base,
        stack.edges("kubelet_pod_start_sli_duration_seconds"),
        lambda i: None if not scraped(i) else (0.0 if hung(i) else starts),
        shapes.POD_START,
        1.6,
        count,
    )
    if int(node.ip.rsplit(".", 1)[1]) % 5 == 0:
        # A few nodes fail the odd stop/remove of a container that is already gone; the
        # CounterVec child exists only on them, and counts in whole errors.
        labels = {**base, "operation_type": "stop_container"}
        out.append(series("kubelet_runtime_operations_errors_total", labels, steps(40, count, scraped, offset=7)))
    return out


def _pleg_hung(world: World, node: Node) -> Condition:
    return _flags(world, node, "pleg-hung").__getitem__


def _pleg(world: World, node: Node, base: dict[str, str], scraped: Condition) -> list[Series]:
    """The relist loop runs every second; hung, it observes nothing and its timestamp freezes."""
    hung, count = _pleg_hung(world, node), world.samples
    frozen = [fault.start * 60.0 for fault in world.faults(node, "pleg-hung")]

    def last_seen(i: int) -> float | None:
        if not scraped(i):
            return None
        return frozen[0] if hung(i) else float(i * STEP_S)

    out = shapes.histogram(
        "kubelet_pleg_relist_duration_seconds",
        base,
        (0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10),
        lambda i: None if not scraped(i) else (0.0 if hung(i) else 1.0),
        shapes.PLEG_RELIST,
        0.012,
        count,
    )
    out.append(series("kubelet_pleg_last_seen_seconds", base, gauge(last_seen, count)))
    return out


def node_exporter(world: World, node: Node, stack: StackView) -> list[Series]:
    job, count = stack.job("node-exporter"), world.samples
    instance = node.name if stack.node_exporter_instance_is_node else f"{node.ip}:9100"
    base = {"cluster": node.cluster, "job": job, "instance": instance, "namespace": "monitoring"}
    base.update(
        pod=f"node-exporter-{zlib.crc32(node.name.encode()) % 99999:05d}", service="node-exporter", endpoint="metrics"
    )
    scraped = _scraped(world, node)
    out = [series("up", base, _up(world, node))]
    devices = [("eth0", 180000.0), ("lo", 4000.0)]
    if stack.exports_veth:
        devices += [("veth3f2a9c1", 900.0), ("veth8b1d2e7", 600.0)]
    for device, packets in devices:
        out += _netdev(world, node, {**base, "device": device}, packets, scraped)
    entries = 18000.0 + (int(node.ip.rsplit(".", 1)[1]) * 137) % 9000
    out.append(series("node_nf_conntrack_entries", base, gauge(lambda i: entries if scraped(i) else None, count)))
    limit = gauge(lambda i: 262144.0 if scraped(i) else None, count)
    out.append(series("node_nf_conntrack_entries_limit", base, limit))
    arp = gauge(lambda i: 42.0 if scraped(i) else None, count)
    out.append(series("node_arp_entries", {**base, "device": "eth0"}, arp))
    return out


def _netdev(world: World, node: Node, labels: dict[str, str], packets: float, scraped: Condition) -> list[Series]:
    """Packets, drops and errors per direction; every counter exists from boot, errors at 0."""
    count, out = world.samples, []
    for direction, share in (("receive", 1.0), ("transmit", 0.8)):
        rate = packets * share

        def errors(i: int, direction: str = direction, rate: float = rate) -> float | None:
            if not scraped(i):
                return None
            fault = world.node_fault(node, "nic-errors", minute_of(i))
            broken = fault and direction == "receive" and labels["device"] == "eth0"
            return rate * fault.ratio if broken and fault else 0.0

        live: Callable[[float], Callable[[int], float | None]] = lambda r: lambda i: r if scraped(i) else None  # noqa: E731
        name = f"node_network_{direction}"
        out.append(series(f"{name}_packets_total", labels, counter(live(rate), count, start=rate * 3600)))
        out.append(series(f"{name}_drop_total", labels, counter(live(rate * 2e-6), count, start=rate * 0.007)))
        out.append(series(f"{name}_errs_total", labels, counter(errors, count)))
    return out


def kube_state_metrics(world: World, cluster: Cluster, stack: StackView) -> list[Series]:
    job, count = stack.job("kube-state-metrics"), world.samples
    base = {"cluster": cluster.name, "job": job, "instance": f"10.{cluster.index}.200.10:8080"}
    base.update(namespace="monitoring", pod="kube-state-metrics-7d9c6b8f5-q2xkz", endpoint="http")
    base.update(service="kube-state-metrics", container="kube-state-metrics")
    out = [series("up", base, gauge(lambda _i: 1.0, count))]
    for node in world.nodes(cluster):
        out += _node_object(world, node, {**base, "node": node.name})
    if stack.scrapes_ksm_telemetry:
        out += _ksm_telemetry(world, cluster, {**base, "instance": f"10.{cluster.index}.200.10:9443"})
    return out


KSM_RESOURCES = ("*v1.Node", "*v1.Pod", "*v1.DaemonSet", "*v1.Lease")


def _ksm_telemetry(world: World, cluster: Cluster, base: dict[str, str]) -> list[Series]:
    """kube-state-metrics' telemetry port (pkg/watch/watch.go, pkg/app/server.go @v2.13.0): build info, and per
    resource the successful lists (one at start) and watches (one every 7.5 minutes: client-go's 5-10 minute
    timeout). The error series exist only under the cluster fault ``ksm-rbac-lost`` (the ClusterRole lost the
    nodes resource): the node reflector's List fails every 30 seconds from the fault's start."""
    count = world.samples
    base = {**base, "endpoint": "https-self"}
    lost = [world.cluster_fault(cluster.name, "ksm-rbac-lost", minute_of(i)) is not None for i in range(count)]
    info = {**base, "version": "v2.13.0", "revision": "8b3ac9b2", "branch": "", "goversion": "go1.22.5"}
    out = [series("up", base, gauge(const(1.0), count)), series("kube_state_metrics_build_info", info, [1.0] * count)]
    for resource in KSM_RESOURCES:
        labels = {**base, "resource": resource}
        out.append(series("kube_state_metrics_list_total", {**labels, "result": "success"}, gauge(const(1.0), count)))
        out.append(
            series(
                "kube_state_metrics_watch_total", {**labels, "result": "success"}, counter(const(1 / 450), count, 200.0)
            )
        )
        if resource == "*v1.Node" and any(lost):
            first = lost.index(True)
            errors = [None if i < first else float(i - first + 1) for i in range(count)]
            out.append(series("kube_state_metrics_list_total", {**labels, "result": "error"}, errors))
    return out


NODE_CREATED_AT = -86_400.0  # every node of the fleet joined a day before the data set starts (time() is 0 there)


def _ready_status(world: World, node: Node, i: int) -> str:
    minute = minute_of(i)
    if world.node_fault(node, "down", minute):
        return "unknown"
    if world.node_fault(node, "notready", minute) or world.node_fault(node, "joins", minute):
        return "false"  # not joined yet: no series then; "false" so the join is no Ready-to-NotReady turn
    joined = world.joined_at(node)
    if joined is not None and minute < joined + JOIN_NOT_READY_MIN:
        return "false"
    hung = world.node_fault(node, "pleg-hung", minute)
    if hung and minute >= hung.start + 3:  # "PLEG is not healthy" after 3 minutes
        return "false"
    return "true"


def _unless_gone(world: World, node: Node, value: float) -> Callable[[int], float | None]:
    gone = _gone(world, node)
    return lambda i: None if gone(i) else value


def _ready(world: World, node: Node, status: str) -> Callable[[int], float | None]:
    """The Ready condition's series for one status: 1 while the node is in it, absent once deleted."""
    gone = _gone(world, node)
    statuses = [_ready_status(world, node, i) for i in range(world.samples)]
    return lambda i: None if gone(i) else float(statuses[i] == status)


def _node_object(world: World, node: Node, base: dict[str, str]) -> list[Series]:
    """kube_node_* for one Node: conditions, unschedulable, info and its allowlisted labels."""
    count, out = world.samples, []
    for status in ("true", "false", "unknown"):
        labels = {**base, "condition": "Ready", "status": status}
        out.append(series("kube_node_status_condition", labels, gauge(_ready(world, node, status), count)))
        for condition in ("MemoryPressure", "DiskPressure", "PIDPressure"):
            labels = {**base, "condition": condition, "status": status}
            healthy = gauge(_unless_gone(world, node, float(status == "false")), count)
            out.append(series("kube_node_status_condition", labels, healthy))
    present = gauge(_unless_gone(world, node, 1.0), count)
    out.append(series("kube_node_spec_unschedulable", base, gauge(_unless_gone(world, node, 0.0), count)))
    joined = world.joined_at(node)
    created = NODE_CREATED_AT if joined is None else joined * 60.0
    out.append(series("kube_node_created", base, gauge(_unless_gone(world, node, created), count)))
    out.append(series("kube_node_info", {**base, "internal_ip": node.ip, "kubelet_version": "v1.30.4"}, present))
    labels = {**base, "label_node_pool": node.pool, "label_topology_kubernetes_io_zone": node.zone}
    out.append(series("kube_node_labels", labels, present))
    return out
