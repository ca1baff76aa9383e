"""The world a data set describes: clusters, node pools, zones, nodes, and injected faults.

Sizes are small because promtool's test engine refuses a query that loads more than 10,000
samples (``promql.NewLazyLoader``, MaxSamples): the per-node PLEG quantile reads 12 bucket
series per node over 5m of 30 s scrapes, so about 80 nodes is the ceiling. Pools are sized
like real ones at the small end (a 10-node infra pool, a 24-node zone of a GPU pool).
"""

from __future__ import annotations

from dataclasses import dataclass, field, replace

MINUTE = 60


@dataclass(frozen=True)
class Pool:
    name: str
    nodes_per_zone: tuple[tuple[str, int], ...]  # (zone, node count)


@dataclass(frozen=True)
class Cluster:
    name: str
    index: int  # picks the address range, 10.<index>.x.y
    pools: tuple[Pool, ...]
    apiservers: int = 3
    etcd_members: int = 3
    schedulers: int = 3
    coredns_replicas: int = 2


@dataclass(frozen=True)
class Node:
    name: str
    cluster: str
    pool: str
    zone: str
    ip: str


@dataclass(frozen=True)
class Fault:
    """Something that happens to a node or a cluster from ``start`` until ``end`` (minutes).

    Node kinds: ``down`` (rebooting or unreachable: scrapes fail, the node controller marks
    Ready unknown), ``notready`` (the kubelet runs and reports Ready false), ``pleg-hung`` (the
    relist loop stops; the kubelet reports NotReady 3 minutes later), ``nic-errors``
    (``ratio`` of received packets errored), ``deleted`` (the Node object and its targets are
    gone). Cluster kind: ``apiserver-5xx`` (``ratio`` of every request class answers 500).
    """

    kind: str
    start: int
    end: int | None = None
    ratio: float = 0.0

    def active(self, minute: float) -> bool:
        return self.start <= minute and (self.end is None or minute < self.end)


@dataclass(frozen=True)
class World:
    clusters: tuple[Cluster, ...]
    minutes: int
    node_faults: dict[str, tuple[Fault, ...]] = field(default_factory=dict)
    cluster_faults: dict[str, tuple[Fault, ...]] = field(default_factory=dict)
    # Per-sample fault lookups, computed once per (node or cluster, kind): the exporters ask for
    # every sample of every series. init=False, so dataclasses.replace starts a new cache.
    _active: dict[tuple[str, str], tuple[Fault | None, ...]] = field(
        default_factory=dict, init=False, compare=False, repr=False
    )

    @property
    def samples(self) -> int:
        return self.minutes * 2 + 1

    def nodes(self, cluster: Cluster) -> list[Node]:
        out = []
        for pool_index, pool in enumerate(cluster.pools):
            for zone, count in pool.nodes_per_zone:
                for number in range(count):
                    name = f"{cluster.name}-{pool.name}-{zone[-1]}-{number:02d}"
                    ip = f"10.{cluster.index}.{pool_index * 10 + ord(zone[-1]) - ord('a') + 1}.{number + 10}"
                    out.append(Node(name, cluster.name, pool.name, zone, ip))
        return out

    def all_nodes(self) -> list[Node]:
        return [node for cluster in self.clusters for node in self.nodes(cluster)]

    def faults(self, node: Node, kind: str) -> tuple[Fault, ...]:
        return tuple(fault for fault in self.node_faults.get(node.name, ()) if fault.kind == kind)

    def node_fault(self, node: Node, kind: str, minute: float) -> Fault | None:
        return self._timeline(node.name, kind, self.node_faults)[int(minute * 2)]

    def cluster_fault(self, cluster: str, kind: str, minute: float) -> Fault | None:
        return self._timeline(cluster, kind, self.cluster_faults)[int(minute * 2)]

    def _timeline(self, key: str, kind: str, faults: dict[str, tuple[Fault, ...]]) -> tuple[Fault | None, ...]:
        """The fault of ``kind`` active at each sample (30 s apart) for one node or cluster."""
        cached = self._active.get((key, kind))
        if cached is None:
            mine = [fault for fault in faults.get(key, ()) if fault.kind == kind]
            cached = tuple(
                next((fault for fault in mine if fault.active(sample / 2)), None) for sample in range(self.samples)
            )
            self._active[(key, kind)] = cached
        return cached

    def with_node_faults(self, faults: dict[str, tuple[Fault, ...]]) -> World:
        merged = dict(self.node_faults)
        for name, extra in faults.items():
            merged[name] = merged.get(name, ()) + extra
        return replace(self, node_faults=merged)

    def with_cluster_faults(self, faults: dict[str, tuple[Fault, ...]]) -> World:
        merged = dict(self.cluster_faults)
        for name, extra in faults.items():
            merged[name] = merged.get(name, ()) + extra
        return replace(self, cluster_faults=merged)


def minute_of(sample: int) -> float:
    return sample / 2


PROD_EAST = Cluster(
    "prod-east",
    1,
    (
        Pool("gpu-train", (("us-east-1a", 24), ("us-east-1b", 12))),
        Pool("infra", (("us-east-1a", 10),)),
    ),
)
PROD_WEST = Cluster("prod-west", 2, (Pool("gpu-train", (("us-west-2a", 8), ("us-west-2b", 8))),))

# The day-one trickle: one node of the largest slice reboots for a kernel update, NotReady
# (Ready unknown, scrapes failing) for 5 minutes, as nodes do every day somewhere in a fleet.
TRICKLE_NODE = "prod-east-gpu-train-a-03"
TRICKLE = Fault("down", start=100, end=105)

DAY_ONE_MINUTES = 240


def day_one() -> World:
    """Two healthy clusters for four hours, with the normal trickle of one node rebooting."""
    world = World(clusters=(PROD_EAST, PROD_WEST), minutes=DAY_ONE_MINUTES)
    return world.with_node_faults({TRICKLE_NODE: (TRICKLE,)})
