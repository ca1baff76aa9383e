"""More kube-apiserver series: admission webhooks, APF waits and seats, memory, client
certificates, aggregated APIServices and watch events sent, for one cluster.

Read in k8s.io/apiserver and k8s.io/kube-aggregator at v0.31.0 (the fleet runs 1.30; the
names and labels are the same from 0.28):

- ``apiserver_admission_webhook_admission_duration_seconds{name, type, operation, rejected}``
  (pkg/admission/metrics/metrics.go:184, edges 0.005 ... 25 at :186; ``type`` is ``admit`` or
  ``validating``, mutating/dispatcher.go:190, validating/dispatcher.go:195). Its
  ``webhook_rejection_count{name, type, operation, error_type, rejection_code}`` (:199) and
  ``webhook_fail_open_count{name, type}`` (:209) are CounterVecs: a child exists only once a
  webhook denied (``error_type="no_error"``, validating/dispatcher.go:187) or failed. Here one
  policy webhook denies a trickle of creations with 403 and nothing fails or fails open.
- ``apiserver_flowcontrol_request_wait_duration_seconds{priority_level, flow_schema, execute}``
  (pkg/util/flowcontrol/metrics/metrics.go:282, edges :50): every non-exempt request is
  "queued" (apf_controller.go:1072) and its wait observed with ``execute="true"`` when it runs
  (apf_filter.go:181); exempt requests observe nothing. ``current_executing_seats{priority_level,
  flow_schema}`` (:260) has a child per flow that has run a request (queueset.go:679);
  ``current_limit_seats{priority_level}`` (:452) is set for every level, exempt included, at
  each concurrency adjustment (apf_controller.go:481).
- ``process_resident_memory_bytes``: the Go process collector.
- ``apiserver_client_certificate_expiration_seconds`` (pkg/authentication/request/x509/x509.go:44,
  edges 0 ... 1 year at :50): a plain Histogram, observed per request authenticated by a client
  certificate (:179). Kubelets rotate at 70-90% of a one-year certificate, so nothing is under
  a month.
- ``aggregator_unavailable_apiservice{name}`` (kube-aggregator pkg/controllers/status/metrics/
  metrics.go:37): a collector emitting every APIService the availability controllers saw, local
  ones included (local_available_controller.go:120), 0 while available.
- ``apiserver_watch_events_total{group, version, kind}`` (pkg/endpoints/metrics/metrics.go:175):
  once per event per watcher; the sizes histogram (control_plane) counts each event once (1.29+).
"""

from __future__ import annotations

import math

from tests.world import shapes
from tests.world.control_plane import _FLOWS, _WATCH_KINDS, _base, _scale
from tests.world.stack import StackView
from tests.world.timeline import Series, const, counter, gauge, series
from tests.world.topology import Cluster, World

# (webhook, type, operation, rejected, calls per second per apiserver in the larger cluster)
_WEBHOOK_CALLS = (
    ("validate.kyverno.svc-fail", "validating", "CREATE", "false", 4.0),
    ("validate.kyverno.svc-fail", "validating", "CREATE", "true", 0.01),
    ("validate.kyverno.svc-fail", "validating", "UPDATE", "false", 6.0),
    ("namespace.sidecar-injector.istio.io", "admit", "CREATE", "false", 3.0),
)
WEBHOOK_CALL: shapes.Shape = ((0.005, 0.2), (0.025, 0.85), (0.1, 0.993), (0.5, 0.9995), (2.5, 0.99998), (10, 1.0))
# A level with free seats dispatches at once: microseconds in the queue, le="0" empty.
APF_WAIT: shapes.Shape = ((0.005, 0.998), (0.02, 0.9995), (0.05, 0.9999), (0.2, 1.0))
# Remaining lifetime (seconds): nothing under a month, most between 3 months and a year.
CLIENT_CERT: shapes.Shape = ((2592000, 0.0), (7776000, 0.2), (15552000, 0.6), (31104000, 1.0))

# Current seat limits at 600 seats (400 + 200) split by the 1.31 bootstrap nominal shares
# (system 30, node-high 40, leader-election 10, workload-high 40, workload-low 100,
# global-default 20, catch-all 5; exempt 0), demand being low everywhere.
_LIMIT_SEATS = (
    ("exempt", 0),
    ("system", 74),
    ("node-high", 98),
    ("leader-election", 25),
    ("workload-high", 98),
    ("workload-low", 245),
    ("global-default", 49),
    ("catch-all", 13),
)
# Seats a flow holds at a scrape, on average per apiserver: a small share of its level.
_EXECUTING_SEATS = {
    "system-nodes": 6,
    "system-node-high": 9,
    "system-leader-election": 1,
    "kube-controller-manager": 5,
    "kube-scheduler": 2,
    "kube-system-service-accounts": 4,
    "service-accounts": 12,
    "global-default": 1,
    "exempt": 3,
}

# Every APIService of a 1.30 cluster with metrics-server and the prometheus-operator CRDs.
_APISERVICES = (
    "v1.",
    "v1.admissionregistration.k8s.io",
    "v1.apiextensions.k8s.io",
    "v1.apps",
    "v1.authentication.k8s.io",
    "v1.authorization.k8s.io",
    "v1.autoscaling",
    "v2.autoscaling",
    "v1.batch",
    "v1.certificates.k8s.io",
    "v1.coordination.k8s.io",
    "v1.discovery.k8s.io",
    "v1.events.k8s.io",
    "v1.flowcontrol.apiserver.k8s.io",
    "v1beta3.flowcontrol.apiserver.k8s.io",
    "v1.networking.k8s.io",
    "v1.node.k8s.io",
    "v1.policy",
    "v1.rbac.authorization.k8s.io",
    "v1.scheduling.k8s.io",
    "v1.storage.k8s.io",
    "v1.monitoring.coreos.com",
    "v1alpha1.monitoring.coreos.com",
    "v1beta1.metrics.k8s.io",
)
# Watchers each event of a kind reaches on one apiserver (kube-proxy and CNI agents watch
# EndpointSlices and Nodes from every node; a third of them on each apiserver).
_WATCH_FANOUT = {"Pod": 2, "Node": 3, "EndpointSlice": 20, "Event": 1}


def wobble(sample: int, period: int, phase: float) -> float:
    """A deterministic ripple in [-1, 1]: gauges that are not flat, as scraped ones are not."""
    return math.sin(2 * math.pi * (sample / period + phase))


def apiserver_extra(world: World, cluster: Cluster, stack: StackView) -> list[Series]:
    out: list[Series] = []
    scale = _scale(cluster, world)
    for number in range(cluster.apiservers):
        base = _base(cluster, stack.job("apiserver"), f"10.{cluster.index}.0.{number + 1}:6443")
        base.update(namespace="default", service="kubernetes", endpoint="https")
        out += _webhooks(world, stack, base, scale)
        out += _apf(world, stack, base, scale, number)
        out += _process_and_certificates(world, base, scale, number)
        out += _aggregator_and_watches(world, base, scale)
    return out


def _webhooks(world: World, stack: StackView, base: dict[str, str], scale: float) -> list[Series]:
    histogram = "apiserver_admission_webhook_admission_duration_seconds"
    out: list[Series] = []
    for name, kind, operation, rejected, rate in _WEBHOOK_CALLS:
        labels = {**base, "name": name, "type": kind, "operation": operation, "rejected": rejected}
        edges = stack.edges(histogram)
        out += shapes.histogram(histogram, labels, edges, const(rate * scale), WEBHOOK_CALL, 0.02, world.samples)
        if rejected == "true":
            # A deliberate denial: the only rejection child of a healthy cluster.
            denied = {**base, "name": name, "type": kind, "operation": operation}
            denied.update(error_type="no_error", rejection_code="403")
            out.append(
                series(
                    "apiserver_admission_webhook_rejection_count",
                    denied,
                    counter(const(rate * scale), world.samples, start=rate * 86400),
                )
            )
    return out


def _apf(world: World, stack: StackView, base: dict[str, str], scale: float, number: int) -> list[Series]:
    count = world.samples
    histogram = "apiserver_flowcontrol_request_wait_duration_seconds"
    limit = "apiserver_flowcontrol_current_limit_seats"
    out = [series(limit, {**base, "priority_level": pl}, gauge(const(seats), count)) for pl, seats in _LIMIT_SEATS]
    for offset, (level, schema, rate) in enumerate(_FLOWS):
        flow = {**base, "priority_level": level, "flow_schema": schema}
        held = _EXECUTING_SEATS[schema] * scale

        def seats(i: int, held: float = held, phase: float = offset / 9 + number / 3) -> float:
            return float(max(0, round(held * (1 + 0.4 * wobble(i, 47, phase)))))

        out.append(series("apiserver_flowcontrol_current_executing_seats", flow, gauge(seats, count)))
        if level != "exempt":
            waited = {**flow, "execute": "true"}
            edges = stack.edges(histogram)
            out += shapes.histogram(histogram, waited, edges, const(rate * scale), APF_WAIT, 0.0004, count)
    return out


def _process_and_certificates(world: World, base: dict[str, str], scale: float, number: int) -> list[Series]:
    count = world.samples
    resident = (2.4e9 + 1.2e9 * scale) * (1 + 0.05 * number)

    def memory(i: int) -> float:
        return round(resident * (1 + 0.02 * wobble(i, 73, number / 3)))

    out = [series("process_resident_memory_bytes", base, gauge(memory, count))]
    histogram = "apiserver_client_certificate_expiration_seconds"
    # x509.go:50-65; not in compiler/model/buckets.py (the spec lists them) and no stack drops them.
    out += shapes.histogram(histogram, base, _CLIENT_CERT_EDGES, const(7 * scale), CLIENT_CERT, 1.6e7, count)
    return out


_CLIENT_CERT_EDGES = (
    *(0.0, 1800, 3600, 7200, 21600, 43200, 86400, 172800, 345600, 604800),
    *(2592000, 7776000, 15552000, 31104000),
)


def _aggregator_and_watches(world: World, base: dict[str, str], scale: float) -> list[Series]:
    count = world.samples
    out = [
        series("aggregator_unavailable_apiservice", {**base, "name": name}, gauge(const(0.0), count))
        for name in _APISERVICES
    ]
    for group, kind, rate in _WATCH_KINDS:
        labels = {**base, "group": group, "version": "v1", "kind": kind}
        sent = rate * scale * _WATCH_FANOUT[kind]
        out.append(series("apiserver_watch_events_total", labels, counter(const(sent), count, start=sent * 86400)))
    return out
