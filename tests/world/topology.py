"""The world a data set describes: clusters, node pools, zones, nodes, and injected faults.

Sizes are small because promtool's test engine refuses a query that loads more than 10,000
samples (``promql.NewLazyLoader``, MaxSamples): the per-node PLEG quantile reads 12 bucket
series per node over 5m of 30 s scrapes, so about 80 nodes is the ceiling. Pools are sized
like real ones at the small end (a 10-node infra pool, a 24-node zone of a GPU pool).
"""

from __future__ import annotations

from dataclasses import dataclass, field, replace

MINUTE = 60
JOIN_NOT_READY_MIN = 1.5  # a new node reports NotReady until its CNI and kubelet are up


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
    # How the cluster is deployed (issue 24: the deployments the specs' assumptions cover).
    # "self-managed": kube-scheduler, kube-controller-manager and etcd run as static pods of three
    # control-plane nodes (10.<index>.0.1-3) and Prometheus scrapes them; "managed" (EKS, GKE, AKS):
    # the provider runs them, so there are no such targets and no such pods, only the apiservers.
    control_plane: str = "self-managed"
    # kubeadm's defaults: kube-proxy's metrics on 127.0.0.1:10249, the scheduler's and the
    # controller-manager's secure ports and etcd's metrics (127.0.0.1:2381) on loopback. The targets
    # exist (the chart's Services find the pods) and every scrape is refused: `up` 0, no series.
    localhost_binds: bool = False
    # chrony without `rtcsync` leaves the kernel's STA_UNSYNC flag set: node_timex_sync_status 0 on
    # every healthy node, while chrony keeps maxerror at tens of milliseconds.
    chrony_rtcsync: bool = True
    # Nothing changes Services or endpoints: the iptables proxier syncs only on its hourly resync,
    # so the last-sync timestamp advances once an hour and no change is ever pending.
    kube_proxy_idle: bool = False
    # A cluster-autoscaler runs (tests/world/autoscaler.py): the clusters whose pools it scales.
    cluster_autoscaler: bool = False


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
    gone), ``joins`` (the node does not exist until ``end``: the cluster-autoscaler adds it then;
    it reports Ready false for its first ``JOIN_NOT_READY_MIN`` minutes), ``inodes-full`` (the
    containerd filesystem's free inode share falls to ``ratio``), ``filefd-leak`` (allocated file
    handles at ``ratio`` of fs.file-max), ``oom-kills`` (``ratio`` kernel OOM kills per second),
    ``ib-port-errors`` (``ratio`` symbol errors per second on the node's HCA mlx5_3, port 1),
    ``gpu-row-remap`` (GPU 5 remaps a row after an uncorrectable error; the job on it dies),
    ``gpu-remap-failure`` (GPU 5's row remapping failed), see ``tests/world/gpus.py``.
    Cluster kinds: ``apiserver-5xx`` (``ratio`` of every request class answers 500),
    ``prometheus-reload-failed`` (every Prometheus replica's last configuration reload failed),
    ``registry-down`` (the platform's image registry stops answering: every pod pulling from it waits),
    ``apiserver-oom-loop`` (the first control-plane node's kube-apiserver is OOM-killed 2 minutes after each start),
    ``ksm-slow-scrape`` (kube-state-metrics' scrape takes 8 s of the 10 s timeout), ``ksm-rbac-lost``
    (kube-state-metrics may no longer list nodes: its node reflector fails every 30 s), ``prometheus-oom-loop``
    (the second Prometheus replica is OOM-killed every 10 minutes), ``autoscaler-scaled-to-zero`` (the
    cluster-autoscaler's Deployment left at 0 replicas).
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

    def cluster(self, name: str) -> Cluster:
        return next(cluster for cluster in self.clusters if cluster.name == name)

    def joined_at(self, node: Node) -> float | None:
        """The minute a node added during the data set joined (its ``joins`` fault ends), or None."""
        return next((fault.end for fault in self.faults(node, "joins")), None)

    def faults(self, node: Node, kind: str) -> tuple[Fault, ...]:
        return tuple(fault for fault in self.node_faults.get(node.name, ()) if fault.kind == kind)

    def node_fault(self, node: Node, kind: str, minute: float) -> Fault | None:
        if node.name not in self.node_faults:  # most nodes: no timeline to look up
            return None
        return self._timeline(node.name, kind, self.node_faults)[int(minute * 2)]

    def cluster_fault(self, cluster: str, kind: str, minute: float) -> Fault | None:
        if cluster not in self.cluster_faults:
            return None
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
    cluster_autoscaler=True,
)
# A quiet training cluster: chrony runs without rtcsync and nothing changes its Services all day.
PROD_WEST = Cluster(
    "prod-west",
    2,
    (Pool("gpu-train", (("us-west-2a", 8), ("us-west-2b", 8))),),
    chrony_rtcsync=False,
    kube_proxy_idle=True,
)
# A kubeadm cluster with kubeadm's default binds: kube-proxy, kube-scheduler, kube-controller-manager
# and etcd serve their metrics on 127.0.0.1 only, so each of their targets is down, all day. One
# control-plane node, as small kubeadm clusters run.
EDGE_KUBEADM = Cluster(
    "edge-kubeadm",
    3,
    (Pool("general", (("eu-central-1a", 4),)),),
    apiservers=1,
    etcd_members=1,
    schedulers=1,
    localhost_binds=True,
)
# A batch cluster the cluster-autoscaler scales: 3 nodes join the 12-node cpu pool at minute 90
# (3 of 15, over 5% of the slice) and the 3-node spot pool is scaled to zero at minute 130.
BATCH = Cluster(
    "batch-central",
    4,
    (Pool("cpu", (("us-east-2a", 15),)), Pool("spot", (("us-east-2a", 3),))),
    cluster_autoscaler=True,
)
SCALE_UP_NODES = tuple(f"batch-central-cpu-a-{number:02d}" for number in range(12, 15))
SCALE_UP_AT = 90
SCALED_TO_ZERO_NODES = tuple(f"batch-central-spot-a-{number:02d}" for number in range(3))
# After 2 hours of history (a vanished slice is judged once the spec has 2h, see node-readiness);
# the autoscaler removes empty nodes one after another.
SCALE_TO_ZERO_AT = 130
# A managed control plane (EKS): two apiservers behind the endpoint, no scheduler, controller-manager
# or etcd to scrape. Its own Prometheus judges it (absent() is per Prometheus): day_one_managed().
EKS_APPS = Cluster(
    "eks-apps",
    5,
    (Pool("apps", (("us-east-1a", 3), ("us-east-1b", 3))),),
    apiservers=2,
    etcd_members=0,
    schedulers=0,
    control_plane="managed",
    cluster_autoscaler=True,
)

# The day-one trickle: one node of the largest slice reboots for a kernel update, NotReady
# (Ready unknown, scrapes failing) for 5 minutes, as nodes do every day somewhere in a fleet.
TRICKLE_NODE = "prod-east-gpu-train-a-03"
TRICKLE = Fault("down", start=100, end=105)

DAY_ONE_MINUTES = 240


def _autoscaler() -> dict[str, tuple[Fault, ...]]:
    joins = {name: (Fault("joins", 0, SCALE_UP_AT),) for name in SCALE_UP_NODES}
    scaled = {name: (Fault("deleted", SCALE_TO_ZERO_AT + n),) for n, name in enumerate(SCALED_TO_ZERO_NODES)}
    return {**joins, **scaled}


def day_one() -> World:
    """The healthy fleet for four hours: the normal trickle of one node rebooting, a scale-up and a scale-to-zero."""
    world = World(clusters=(PROD_EAST, PROD_WEST, EDGE_KUBEADM, BATCH), minutes=DAY_ONE_MINUTES)
    return world.with_node_faults({TRICKLE_NODE: (TRICKLE,), **_autoscaler()})


def day_one_managed() -> World:
    """A managed control plane's healthy day, as its own Prometheus sees it."""
    return World(clusters=(EKS_APPS,), minutes=DAY_ONE_MINUTES)
