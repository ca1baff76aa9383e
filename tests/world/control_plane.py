"""Control-plane series: kube-apiserver (requests, etcd client, APF, storage, watches), etcd
members, kube-scheduler and CoreDNS, for one cluster.

Counters created on their first event (``CounterVec`` children) are written only where the
event happens: no ``apiserver_flowcontrol_rejected_requests_total``,
``apiserver_terminated_watchers_total`` or ``scheduler_schedule_attempts_total{result="error"}``
on a healthy cluster, and a response code has series only once it was answered.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass

from tests.world import shapes
from tests.world.stack import StackView
from tests.world.timeline import Series, const, counter, gauge, series
from tests.world.topology import Cluster, World, minute_of


@dataclass(frozen=True)
class RequestClass:
    """One kind of apiserver request, its rate per apiserver and its latency shape."""

    verb: str
    resource: str
    scope: str
    rate: float  # requests per second per apiserver, in the larger cluster
    shape: shapes.Shape
    group: str = ""
    version: str = "v1"
    subresource: str = ""
    codes: tuple[tuple[str, float], ...] = (("200", 1.0),)


_READ_CODES = (("200", 0.9995), ("404", 0.0005))
REQUEST_CLASSES = (
    RequestClass("GET", "pods", "resource", 40, shapes.FAST_REQUEST, codes=_READ_CODES),
    RequestClass("GET", "nodes", "resource", 15, shapes.FAST_REQUEST),
    RequestClass("GET", "configmaps", "resource", 20, shapes.FAST_REQUEST, codes=_READ_CODES),
    RequestClass("GET", "leases", "resource", 30, shapes.FAST_REQUEST, group="coordination.k8s.io"),
    RequestClass("LIST", "pods", "namespace", 6, shapes.NAMESPACE_LIST),
    RequestClass("LIST", "pods", "cluster", 1.5, shapes.CLUSTER_LIST, codes=(("200", 0.9995), ("429", 0.0005))),
    RequestClass("LIST", "nodes", "cluster", 1, shapes.CLUSTER_LIST),
    RequestClass("LIST", "configmaps", "namespace", 4, shapes.NAMESPACE_LIST),
    RequestClass("LIST", "secrets", "namespace", 2, shapes.NAMESPACE_LIST),
    RequestClass("LIST", "events", "namespace", 1, shapes.NAMESPACE_LIST),
    RequestClass("LIST", "endpointslices", "cluster", 0.5, shapes.CLUSTER_LIST, group="discovery.k8s.io"),
    RequestClass("PUT", "leases", "resource", 40, shapes.FAST_REQUEST, group="coordination.k8s.io"),
    RequestClass("PATCH", "nodes", "resource", 8, shapes.FAST_REQUEST, subresource="status"),
    RequestClass("PATCH", "pods", "resource", 10, shapes.FAST_REQUEST, subresource="status"),
    RequestClass("POST", "pods", "namespace", 3, shapes.FAST_REQUEST, codes=(("201", 1.0),)),
    RequestClass("POST", "events", "namespace", 12, shapes.FAST_REQUEST, codes=(("201", 1.0),)),
    RequestClass("POST", "pods", "resource", 3, shapes.FAST_REQUEST, subresource="binding", codes=(("201", 1.0),)),
    RequestClass("DELETE", "pods", "resource", 3, shapes.FAST_REQUEST),
    RequestClass("APPLY", "configmaps", "resource", 1, shapes.FAST_REQUEST),
)


def _base(cluster: Cluster, job: str, instance: str, **extra: str) -> dict[str, str]:
    return {"cluster": cluster.name, "job": job, "instance": instance, **extra}


def _scale(cluster: Cluster, world: World) -> float:
    """Request volume follows the node count."""
    largest = max(len(world.nodes(other)) for other in world.clusters)
    return len(world.nodes(cluster)) / largest


def apiserver(world: World, cluster: Cluster, stack: StackView) -> list[Series]:
    out: list[Series] = []
    job, count = stack.job("apiserver"), world.samples
    scale = _scale(cluster, world)
    for number in range(cluster.apiservers):
        base = _base(cluster, job, f"10.{cluster.index}.0.{number + 1}:6443", namespace="default", service="kubernetes")
        base["endpoint"] = "https"
        out.append(series("up", base, gauge(lambda _i: 1.0, count)))
        for request in REQUEST_CLASSES:
            out += _requests(world, cluster, stack, base, request, scale)
        out += _etcd_client(world, stack, base, scale)
        out += _flowcontrol(world, base, scale)
        out += _apiserver_gauges(world, cluster, base, scale)
    return out


def _request_labels(request: RequestClass) -> dict[str, str]:
    return {
        "verb": request.verb,
        "resource": request.resource,
        "scope": request.scope,
        "group": request.group,
        "version": request.version,
        "subresource": request.subresource,
        "component": "apiserver",
    }


def _requests(
    world: World, cluster: Cluster, stack: StackView, base: dict[str, str], request: RequestClass, scale: float
) -> list[Series]:
    labels = {**base, **_request_labels(request)}
    rate = request.rate * scale
    count = world.samples

    def failing(sample: int) -> float:
        fault = world.cluster_fault(cluster.name, "apiserver-5xx", minute_of(sample))
        return fault.ratio if fault else 0.0

    def answered(share: float) -> Callable[[int], float | None]:
        return lambda i: rate * share * (1 - failing(i))

    out = [
        series(
            "apiserver_request_total",
            {**labels, "code": code},
            counter(answered(share), count, start=rate * share * 86400),
        )
        for code, share in request.codes
    ]
    if any(fault.kind == "apiserver-5xx" for fault in world.cluster_faults.get(cluster.name, ())):
        # The 500 child appears at the first failed request, not before.
        first = next(i for i in range(count) if failing(i) > 0)
        out.append(
            series(
                "apiserver_request_total",
                {**labels, "code": "500"},
                counter(lambda i: rate * failing(i) if i >= first else None, count),
            )
        )
    if request.verb != "WATCH":
        edges = stack.edges("apiserver_request_sli_duration_seconds")
        out += shapes.histogram(
            "apiserver_request_sli_duration_seconds", labels, edges, lambda _i: rate, request.shape, 0.08, count
        )
    return out


_ETCD_OPERATIONS = (
    ("get", "pods", 30),
    ("get", "leases.coordination.k8s.io", 40),
    ("create", "pods", 3),
    ("create", "events", 12),
    ("update", "leases.coordination.k8s.io", 40),
    ("update", "pods", 12),
    ("delete", "pods", 3),
    ("list", "pods", 1),
    ("listWithCount", "/registry/pods/", 0.5),
)


def _etcd_client(world: World, stack: StackView, base: dict[str, str], scale: float) -> list[Series]:
    out: list[Series] = []
    edges = stack.edges("etcd_request_duration_seconds")
    for operation, kind, rate in _ETCD_OPERATIONS:
        labels = {**base, "operation": operation, "type": kind}
        out += shapes.histogram(
            "etcd_request_duration_seconds",
            labels,
            edges,
            const(rate * scale),
            shapes.ETCD_REQUEST,
            0.006,
            world.samples,
        )
    return out


_FLOWS = (
    ("system", "system-nodes", 30),
    ("node-high", "system-node-high", 40),
    ("leader-election", "system-leader-election", 5),
    ("workload-high", "kube-controller-manager", 20),
    ("workload-high", "kube-scheduler", 6),
    ("workload-high", "kube-system-service-accounts", 15),
    ("workload-low", "service-accounts", 25),
    ("global-default", "global-default", 4),
    ("exempt", "exempt", 10),
)


def _flowcontrol(world: World, base: dict[str, str], scale: float) -> list[Series]:
    # Dispatched only: no request was rejected, so no rejected_requests_total child exists.
    return [
        series(
            "apiserver_flowcontrol_dispatched_requests_total",
            {**base, "priority_level": level, "flow_schema": schema},
            counter(const(rate * scale), world.samples, start=rate * 86400),
        )
        for level, schema, rate in _FLOWS
    ]


_STORAGE_OBJECTS = (
    ("pods", 9000),
    ("nodes", 70),
    ("events", 60000),
    ("configmaps", 3000),
    ("secrets", 2500),
    ("leases.coordination.k8s.io", 200),
    ("endpointslices.discovery.k8s.io", 400),
    ("services", 300),
    ("jobs.batch", 500),
)
_ETCD_LISTED = (("pods", 40), ("nodes", 5), ("configmaps", 20), ("events", 10))
_WATCHERS = (("pods", 160), ("nodes", 90), ("services", 80), ("endpoints", 20), ("endpointslices", 80))
_WATCH_KINDS = (("", "Pod", 300), ("", "Node", 150), ("discovery.k8s.io", "EndpointSlice", 60), ("", "Event", 40))


def _apiserver_gauges(world: World, cluster: Cluster, base: dict[str, str], scale: float) -> list[Series]:
    count = world.samples
    constant: Callable[[float], list[float | None]] = lambda value: gauge(lambda _i: value, count)  # noqa: E731
    out = [
        series("apiserver_current_inflight_requests", {**base, "request_kind": "readOnly"}, constant(90 * scale)),
        series("apiserver_current_inflight_requests", {**base, "request_kind": "mutating"}, constant(35 * scale)),
    ]
    out += [
        series("apiserver_storage_objects", {**base, "resource": resource}, constant(round(objects * scale)))
        for resource, objects in _STORAGE_OBJECTS
    ]
    out += [
        series(
            "apiserver_storage_list_fetched_objects_total",
            {**base, "resource": resource},
            counter(const(rate * scale), count, start=rate * 3600),
        )
        for resource, rate in _ETCD_LISTED
    ]
    core = {"verb": "WATCH", "scope": "cluster", "version": "v1", "component": "apiserver"}
    for resource, watchers in (*_WATCHERS, ("configmaps", 400)):
        group = "discovery.k8s.io" if resource == "endpointslices" else ""
        labels = {**base, **core, "resource": resource, "group": group}
        out.append(series("apiserver_longrunning_requests", labels, constant(round(watchers * scale) + 1)))
    edges = (1024.0, 2048.0, 4096.0, 8192.0, 16384.0, 32768.0, 65536.0, 131072.0)
    for group, kind, rate in _WATCH_KINDS:
        labels = {**base, "group": group, "version": "v1", "kind": kind}
        out += shapes.histogram(
            "apiserver_watch_events_sizes",
            labels,
            edges,
            const(rate * scale),
            shapes.WATCH_EVENT_BYTES,
            6000,
            count,
        )
    return out


def refused(world: World, cluster: Cluster, job: str, port: int, replicas: int) -> list[Series]:
    """A component bound to 127.0.0.1 (kubeadm's defaults): its targets exist, every scrape is refused."""
    return [
        series(
            "up",
            _base(cluster, job, f"10.{cluster.index}.0.{number + 1}:{port}", namespace="kube-system"),
            gauge(const(0.0), world.samples),
        )
        for number in range(replicas)
    ]


def etcd(world: World, cluster: Cluster, stack: StackView) -> list[Series]:
    if not stack.scrapes_etcd or cluster.control_plane == "managed":
        return []
    if cluster.localhost_binds:  # --listen-metrics-urls=http://127.0.0.1:2381
        return refused(world, cluster, stack.job("etcd"), 2381, cluster.etcd_members)
    out = []
    for number in range(cluster.etcd_members):
        base = _base(cluster, stack.job("etcd"), f"10.{cluster.index}.0.{number + 1}:2381", namespace="kube-system")
        count = world.samples
        out.append(series("up", base, gauge(lambda _i: 1.0, count)))
        size = 2.1e9 + number * 4e7  # members differ a little between defragmentations
        out.append(series("etcd_mvcc_db_total_size_in_bytes", base, gauge(const(size), count)))
        out.append(series("etcd_mvcc_db_total_size_in_use_in_bytes", base, gauge(lambda _i: 1.4e9, count)))
        out.append(series("etcd_server_quota_backend_bytes", base, gauge(lambda _i: 8589934592.0, count)))
        out.append(series("etcd_server_has_leader", base, gauge(lambda _i: 1.0, count)))
    return out


def scheduler(world: World, cluster: Cluster, stack: StackView) -> list[Series]:
    """Three schedulers; only the leader schedules, so only it has queue and attempt series."""
    out: list[Series] = []
    job, count = stack.job("kube-scheduler"), world.samples
    if cluster.control_plane == "managed":
        return []
    if cluster.localhost_binds:  # --bind-address=127.0.0.1
        return refused(world, cluster, job, 10259, cluster.schedulers)
    scale = _scale(cluster, world)
    for number in range(cluster.schedulers):
        base = _base(cluster, job, f"10.{cluster.index}.0.{number + 1}:10259", namespace="kube-system")
        out.append(series("up", base, gauge(lambda _i: 1.0, count)))
        if number:
            continue
        for queue, pods in (("active", 3), ("backoff", 1), ("unschedulable", 40), ("gated", 0)):
            out.append(series("scheduler_pending_pods", {**base, "queue": queue}, gauge(const(pods), count)))
        profile = {"profile": "default-scheduler"}
        for result, rate in (("scheduled", 3.0), ("unschedulable", 0.4)):
            labels = {**base, **profile, "result": result}
            out.append(series("scheduler_schedule_attempts_total", labels, counter(const(rate * scale), count)))
        edges = stack.edges("scheduler_pod_scheduling_sli_duration_seconds")
        for attempts, rate in (("1", 2.8), ("2", 0.15), ("3", 0.05)):
            out += shapes.histogram(
                "scheduler_pod_scheduling_sli_duration_seconds",
                {**base, "attempts": attempts},
                edges,
                const(rate * scale),
                shapes.SCHEDULING,
                0.05,
                count,
            )
    return out


_DNS_RESPONSES = (
    ("cluster.local.", "NOERROR", "kubernetes", 0.45),
    ("cluster.local.", "NXDOMAIN", "kubernetes", 0.30),
    (".", "NOERROR", "cache", 0.18),
    (".", "NOERROR", "forward", 0.0698),
    (".", "SERVFAIL", "forward", 0.0002),
)


def coredns(world: World, cluster: Cluster, stack: StackView) -> list[Series]:
    """CoreDNS replicas answering the cluster's lookups; a trickle of upstream SERVFAIL is normal."""
    out: list[Series] = []
    job, count = stack.job("coredns"), world.samples
    rate = 400 * _scale(cluster, world)
    for number in range(cluster.coredns_replicas):
        pod = f"coredns-5d78c9869d-{'abcdefgh'[number]}x7kq"
        base = _base(cluster, job, f"10.{cluster.index}.200.{number + 1}:9153", namespace="kube-system", pod=pod)
        base.update(service="kube-dns" if job == "kube-dns" else "kube-prometheus-stack-coredns", endpoint="metrics")
        out.append(series("up", base, gauge(lambda _i: 1.0, count)))
        server = {"server": "dns://:53"}
        for zone, rcode, plugin, share in _DNS_RESPONSES:
            labels = {**base, **server, "zone": zone, "rcode": rcode, "plugin": plugin}
            out.append(series("coredns_dns_responses_total", labels, counter(const(rate * share), count)))
        edges = stack.edges("coredns_dns_request_duration_seconds")
        for zone, share in (("cluster.local.", 0.75), (".", 0.25)):
            out += shapes.histogram(
                "coredns_dns_request_duration_seconds",
                {**base, **server, "zone": zone},
                edges,
                const(rate * share),
                shapes.DNS_REQUEST,
                0.002,
                count,
            )
    return out
