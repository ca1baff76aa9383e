"""etcd members' own health: disk latencies, peer round trips, leader changes, proposals, gRPC.

Written only where the stack scrapes etcd (kube-prometheus-stack, ``job="kube-etcd"``), with
the member labels of ``control_plane.etcd``. Read in etcd-io/etcd at v3.5.15:

- ``etcd_disk_wal_fsync_duration_seconds`` (server/wal/metrics.go:20) and
  ``etcd_disk_backend_commit_duration_seconds`` (server/mvcc/backend/metrics.go:20): plain
  Histograms, ``ExponentialBuckets(0.001, 2, 14)``;
- ``etcd_network_peer_round_trip_time_seconds{To}`` (server/etcdserver/api/rafthttp/metrics.go:154,
  ``ExponentialBuckets(0.0001, 2, 16)``), ``To`` the peer's member ID in hex, observed by the
  prober about every 30 s per peer;
- ``etcd_server_leader_changes_seen_total`` (server/etcdserver/metrics.go:41) and
  ``etcd_server_proposals_failed_total`` (:103): plain Counters, present from start;
- ``grpc_server_handled_total{grpc_type, grpc_service, grpc_method, grpc_code}``: go-grpc-prometheus
  ``Register`` (server/etcdserver/api/v3rpc/grpc.go:86) creates a child for every method and
  every one of the 17 codes at 0 (go-grpc-prometheus server_metrics.go:183). Written here: the
  methods the apiservers call, with ``OK``, ``Canceled`` and the seven codes the etcd mixin counts
  as failures (all 0); the other eight codes are zero series no rule reads apart (a sum adds 0).
"""

from __future__ import annotations

import math
import zlib

from tests.world import shapes, timeline
from tests.world.control_plane import _base, _scale
from tests.world.stack import StackView
from tests.world.timeline import Series, const, counter, gauge, series
from tests.world.topology import Cluster, World

WAL_FSYNC: shapes.Shape = ((0.001, 0.3), (0.002, 0.75), (0.004, 0.95), (0.008, 0.99), (0.016, 0.998), (1.024, 1.0))
BACKEND_COMMIT: shapes.Shape = ((0.001, 0.05), (0.004, 0.5), (0.008, 0.85), (0.016, 0.97), (0.032, 0.995), (1.024, 1.0))
# The apiservers compact etcd every 5 minutes (--etcd-compaction-interval): commits are slower
# for the 30 s that follow, then calm again.
COMPACTING_COMMIT: shapes.Shape = ((0.004, 0.3), (0.016, 0.8), (0.064, 0.97), (0.256, 0.995), (1.024, 1.0))
COMPACTION_EVERY = 10  # samples: 5 minutes of 30 s scrapes
PEER_RTT: shapes.Shape = ((0.0004, 0.1), (0.0008, 0.5), (0.0016, 0.9), (0.0032, 0.98), (0.0064, 0.995), (0.2, 1.0))

# (grpc_type, grpc_service, grpc_method, OK per second per member in the larger cluster): the
# apiservers' gets and lists are Ranges, their creates, updates and deletes Txns (control_plane's
# etcd client operations); watch and keep-alive streams end only when the client cancels them.
_METHODS = (
    ("unary", "etcdserverpb.KV", "Range", 71.5),
    ("unary", "etcdserverpb.KV", "Txn", 70.0),
    ("unary", "etcdserverpb.KV", "Compact", 1 / 300),
    ("unary", "etcdserverpb.Lease", "LeaseGrant", 1.0),
    ("bidi_stream", "etcdserverpb.Lease", "LeaseKeepAlive", 0.0),
    ("bidi_stream", "etcdserverpb.Watch", "Watch", 0.0),
    ("unary", "etcdserverpb.Maintenance", "Status", 0.1),
)
_CANCELED = {"Watch": 0.02, "LeaseKeepAlive": 0.001}
_FAILURE_CODES = (
    *("Unknown", "FailedPrecondition", "ResourceExhausted", "Internal"),
    *("Unavailable", "DataLoss", "DeadlineExceeded"),
)


def member_id(cluster: Cluster, number: int) -> str:
    """A member's ID as etcd prints it (16 hex digits), stable per cluster and member."""
    return format(zlib.crc32(f"{cluster.name}/{number}".encode()) * 0x9E3779B1 % 2**64, "016x")


def etcd_health(world: World, cluster: Cluster, stack: StackView) -> list[Series]:
    if not stack.scrapes_etcd or cluster.control_plane == "managed" or cluster.localhost_binds:
        return []
    out: list[Series] = []
    count, scale = world.samples, _scale(cluster, world)
    for number in range(cluster.etcd_members):
        base = _base(cluster, stack.job("etcd"), f"10.{cluster.index}.0.{number + 1}:2381", namespace="kube-system")
        fsync = "etcd_disk_wal_fsync_duration_seconds"
        out += shapes.histogram(fsync, base, stack.edges(fsync), const(40 * scale), WAL_FSYNC, 0.0025, count)
        out += _commits(base, stack.edges("etcd_disk_backend_commit_duration_seconds"), count, phase=number * 3)
        rtt = "etcd_network_peer_round_trip_time_seconds"
        for peer in range(cluster.etcd_members):
            if peer != number:
                labels = {**base, "To": member_id(cluster, peer)}
                out += shapes.histogram(rtt, labels, stack.edges(rtt), const(1 / 30), PEER_RTT, 0.001, count)
        out.append(series("etcd_server_leader_changes_seen_total", base, gauge(const(2.0), count)))
        out.append(series("etcd_server_proposals_failed_total", base, gauge(const(float(number)), count)))
        out += _grpc(world, base, scale)
    return out


def _commits(base: dict[str, str], edges: tuple[float, ...], count: int, phase: int) -> list[Series]:
    """Backend commits, 10 a second, slower in the scrape interval after each compaction."""
    name, rate = "etcd_disk_backend_commit_duration_seconds", 10.0

    def shape(i: int) -> shapes.Shape:
        return COMPACTING_COMMIT if (i + phase) % COMPACTION_EVERY == 0 else BACKEND_COMMIT

    out = []
    for edge in (*edges, math.inf):
        rates = [rate * shapes.share_at_or_below(shape(i), edge) for i in range(count)]
        le = "+Inf" if edge == math.inf else timeline.number(edge)
        out.append(series(f"{name}_bucket", {**base, "le": le}, counter(rates, count)))
    out.append(series(f"{name}_count", base, counter(const(rate), count)))
    out.append(series(f"{name}_sum", base, counter(const(rate), count, factor=0.007)))
    return out


def _grpc(world: World, base: dict[str, str], scale: float) -> list[Series]:
    out = []
    for kind, service, method, rate in _METHODS:
        labels = {**base, "grpc_type": kind, "grpc_service": service, "grpc_method": method}
        handled = (("OK", rate * scale), ("Canceled", _CANCELED.get(method, 0.0)))
        for code, per_second in (*handled, *((code, 0.0) for code in _FAILURE_CODES)):
            values = counter(const(per_second), world.samples, start=per_second * 86400)
            out.append(series("grpc_server_handled_total", {**labels, "grpc_code": code}, values))
    return out
