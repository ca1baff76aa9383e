"""CoreDNS's forward plugin (CoreDNS 1.11, as Kubernetes 1.29-1.31 ship it) on each replica.

Verified in coredns/coredns at v1.11.1: ``coredns_forward_healthcheck_broken_total`` and
``coredns_forward_max_concurrent_rejects_total`` are plain counters (plugin/forward/metrics.go,
promauto), exported at 0 from start-up; ``coredns_proxy_request_duration_seconds{proxy_name,
to, rcode}`` (plugin/pkg/proxy/metrics.go, ``plugin.TimeBuckets``: 0.25 ms doubling to 8 s)
gets a child per upstream and rcode at the first such answer, and
``coredns_proxy_healthcheck_failures_total`` is a CounterVec created at the first failed
health check: absent while the upstream answers. The 1.10 names
(``coredns_forward_requests_total``, ``coredns_forward_responses_total``) no longer exist.
The forwarded answers are the ``plugin="forward"`` responses of ``control_plane.coredns``
(the same rates per rcode), sent to the VPC resolver.
"""

from __future__ import annotations

from tests.world import control_plane, shapes
from tests.world.stack import StackView
from tests.world.timeline import Series, const, counter, series
from tests.world.topology import Cluster, World

TIME_BUCKETS = tuple(0.00025 * 2**power for power in range(16))
# The VPC resolver answers from its cache in a millisecond, recursion takes tens.
UPSTREAM: shapes.Shape = ((0.0005, 0.2), (0.001, 0.6), (0.004, 0.85), (0.032, 0.97), (0.256, 0.998), (8.192, 1.0))


def _targets(world: World, cluster: Cluster, stack: StackView) -> list[dict[str, str]]:
    """The CoreDNS targets exactly as the control-plane data labels them (from its ``up``)."""
    return [dict(item.labels) for item in control_plane.coredns(world, cluster, stack) if item.name == "up"]


def series_for(world: World, cluster: Cluster, stack: StackView) -> list[Series]:
    count = world.samples
    forwarded = {rcode: share for _zone, rcode, plugin, share in control_plane._DNS_RESPONSES if plugin == "forward"}
    rate = 400 * control_plane._scale(cluster, world)
    out: list[Series] = []
    for base in _targets(world, cluster, stack):
        for name in ("coredns_forward_healthcheck_broken_total", "coredns_forward_max_concurrent_rejects_total"):
            out.append(series(name, base, counter(const(0.0), count)))
        for rcode, share in sorted(forwarded.items()):
            labels = {**base, "proxy_name": "forward", "to": f"10.{cluster.index}.0.2:53", "rcode": rcode}
            out += shapes.histogram(
                "coredns_proxy_request_duration_seconds",
                labels,
                TIME_BUCKETS,
                const(rate * share),
                UPSTREAM,
                0.006,
                count,
            )
    return out
