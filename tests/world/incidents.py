"""Incident data sets: the healthy world plus one fault, and who must hear about it, by when.

Each starts from two healthy clusters and breaks one thing at ``START`` (minute 60, after a
full hour of healthy history, so every 1h window is warm). Each asserts which alert fires
for which team (the ``team`` label) on which slice by which minute, and that nothing else
pages (severity page, not shadow) at any minute of the data set.

``missing`` names the feature an incident waits for when the library on main cannot pass it
yet; those tests are skipped with that reason until the feature is merged.
"""

from __future__ import annotations

from dataclasses import dataclass, replace

from tests.world import gpus
from tests.world.dataset import Expectations, Fires
from tests.world.topology import Fault, World, day_one

START = 60
# Each data set runs 30 minutes past its deadline (the page check covers every minute of it),
# so the incidents cost what their deadline needs, not the longest one's.
AFTER_DEADLINE = 30


@dataclass(frozen=True)
class Incident:
    """One fault and what it must raise; ``on`` replaces ``expect`` on a stack whose labels differ."""

    name: str
    description: str
    world: World
    expect: Expectations
    missing: str | None = None
    on: tuple[tuple[str, Expectations], ...] = ()

    def for_stack(self, stack: str) -> Expectations:
        """The expectations on ``stack``: its own where its labels differ, the common ones otherwise."""
        return dict(self.on).get(stack, self.expect)


def _base(deadline: int) -> World:
    """Day one's fleet, its rebooting node included: an incident is an ordinary day plus one fault, and
    every series the fault leaves alone is the same as on day one (tests/world/untouched.py)."""
    return replace(day_one(), minutes=deadline + AFTER_DEADLINE)


def _node(pool: str, zone: str, number: int) -> str:
    return f"prod-east-{pool}-{zone}-{number:02d}"


def _pages_only(*selectors: str) -> tuple[str, ...]:
    return selectors


HUNG_PLEG_NODE = _node("gpu-train", "a", 7)
# The timestamp freezes at START: its age passes 180 s after START+3m, the first evaluation
# above it is START+4m (pending), and `for: 2m` makes it fire at START+6m.
HUNG_PLEG = Incident(
    "hung-pleg",
    "The container runtime hangs on one GPU node: PLEG stops relisting, its timestamp freezes, the "
    "relist histogram gets no observations (a p99 over it is NaN) and the kubelet reports NotReady after 3m.",
    _base(START + 6).with_node_faults({HUNG_PLEG_NODE: (Fault("pleg-hung", START),)}),
    Expectations(
        quiet_from=0,
        fires=(
            Fires(
                "platform-nodes",
                START + 6,
                alertname="KubeletPlegStaleAboveNormalRange",
                matchers=(("cluster", "prod-east"), ("node", HUNG_PLEG_NODE)),
            ),
        ),
        pages_only=_pages_only(),
        premises=(
            (f'time() - max(kubelet_pleg_last_seen_seconds{{node="{HUNG_PLEG_NODE}"}})', START + 10, 600),
            (f'sum(rate(kubelet_pleg_relist_duration_seconds_count{{node="{HUNG_PLEG_NODE}"}}[5m]))', START + 10, 0),
            (
                f'max(kube_node_status_condition{{node="{HUNG_PLEG_NODE}",condition="Ready",status="false"}})',
                START + 4,
                1,
            ),
        ),
    ),
)

APISERVER_5XX = Incident(
    "apiserver-5xx-5pct",
    "Every apiserver of prod-east answers 5% of all requests (reads and writes) with 500 from START: "
    "a 5x burn of a 99% objective. The 500 series appear at the first failure, as the CounterVec creates them.",
    _base(START + 15).with_cluster_faults({"prod-east": (Fault("apiserver-5xx", START, ratio=0.05),)}),
    Expectations(
        quiet_from=0,
        fires=(
            Fires(
                "platform-apiserver",
                START + 15,
                alertname="APIServerErrorsAboveCriticalRange",
                severity="page",
                matchers=(("cluster", "prod-east"),),
            ),
        ),
        pages_only=_pages_only('ALERTS{team="platform-apiserver",cluster="prod-east"}'),
        premises=(
            (
                'round(sum(rate(apiserver_request_total{cluster="prod-east",code=~"5.."}[5m]))'
                ' / sum(rate(apiserver_request_total{cluster="prod-east"}[5m])), 0.0001)',
                START + 10,
                0.05,
            ),
        ),
    ),
)

# A top-of-rack switch fails: 7 of the pool's 36 nodes (20%) become unreachable, five in zone a
# (5/24) and two in zone b (2/12). The critical range (over 5% for 5m) pages per pool and zone.
_RACK = [_node("gpu-train", "a", n) for n in range(10, 15)] + [_node("gpu-train", "b", n) for n in (3, 4)]
POOL_20PCT_NOTREADY = Incident(
    "pool-20pct-notready",
    "20% of prod-east's gpu-train pool (7 of 36 nodes) becomes unreachable: scrapes fail, Ready unknown.",
    _base(START + 6).with_node_faults({name: (Fault("down", START),) for name in _RACK}),
    Expectations(
        quiet_from=0,
        fires=tuple(
            Fires(
                "platform-nodes",
                START + 6,
                alertname="NodeReadinessAboveCriticalRange",
                matchers=(
                    ("cluster", "prod-east"),
                    ("label_node_pool", "gpu-train"),
                    ("label_topology_kubernetes_io_zone", zone),
                ),
            )
            for zone in ("us-east-1a",)  # 5 of 24 nodes; zone b's 2 of 12 are per-node tickets (a page needs 3)
        ),
        pages_only=_pages_only('ALERTS{slo="node-readiness",cluster="prod-east",label_node_pool="gpu-train"}'),
        premises=(
            (
                'count(kube_node_status_condition{cluster="prod-east",condition="Ready",status="unknown"} == 1)',
                START + 2,
                7,
            ),
            ('count(up{cluster="prod-east",job="kubelet",metrics_path="/metrics"} == 0)', START + 2, 7),
        ),
    ),
)

_INFRA = [_node("infra", "a", n) for n in range(10)]
DELETED_AT = 130
POOL_DELETED = Incident(
    "pool-deleted",
    "Every node of prod-east's 10-node infra pool is deleted (a scale-to-zero by mistake): the Node objects, "
    "their kube-state-metrics series and their kubelet and node-exporter targets are gone.",
    # A vanished slice is judged against the last hour once the spec has 2h of history (a new
    # Prometheus reports nothing before), so the pool is deleted at minute 130.
    _base(DELETED_AT + 20).with_node_faults({name: (Fault("deleted", DELETED_AT),) for name in _INFRA}),
    Expectations(
        quiet_from=0,
        # The alert is named: with any name, every file with a platform-nodes alert could raise the
        # expected one and was judged (40 files, 9,200 series); named, only the files that page or raise
        # it are (22, 3,500 series), and the files that can neither page nor raise it change no verdict.
        fires=(
            Fires(
                "platform-nodes",
                DELETED_AT + 20,
                alertname="NodeReadinessSliceVanished",
                matchers=(("cluster", "prod-east"), ("label_node_pool", "infra")),
            ),
        ),
        pages_only=_pages_only('ALERTS{team="platform-nodes",cluster="prod-east",label_node_pool="infra"}'),
        premises=(
            ('count(kube_node_labels{cluster="prod-east",label_node_pool="infra"})', DELETED_AT - 1, 10),
            ('count(kube_node_labels{label_node_pool="infra"}) or vector(0)', DELETED_AT + 10, 0),
            ('count(up{cluster="prod-east",job="kubelet",metrics_path="/metrics"})', DELETED_AT + 10, 36),
        ),
    ),
)

ONE_NOTREADY_NODE = _node("infra", "a", 4)
ONE_NOTREADY_IN_SMALL_POOL = Incident(
    "one-notready-in-10-node-pool",
    "One node of prod-east's 10-node infra pool reports NotReady and stays so: one node's problem, a ticket "
    "for its owner (per-node readiness), never a page for the pool.",
    _base(START + 20).with_node_faults({ONE_NOTREADY_NODE: (Fault("notready", START),)}),
    Expectations(
        quiet_from=0,
        fires=(
            Fires(
                "platform-nodes",
                START + 20,
                alertname="NodeReadinessFlappingAboveNormalRange",
                matchers=(("cluster", "prod-east"), ("node", ONE_NOTREADY_NODE)),
            ),
        ),
        pages_only=_pages_only(),
        premises=(
            ('sum(kube_node_status_condition{cluster="prod-east",condition="Ready",status="false"})', START + 1, 1),
        ),
    ),
)

BAD_NIC_NODE = _node("gpu-train", "a", 11)
_NIC_ADDRESS = "10.1.1.21:9100"  # node-exporter's instance on kube-prometheus-stack
_NIC_INSTANCES = f"{_NIC_ADDRESS}|{BAD_NIC_NODE}"  # node-exporter's instance on either stack


def _bad_nic(instance: str | None) -> Expectations:
    """The unit ticket names the node's eth0 by the ``instance`` the stack gives node-exporter.

    The alert is named: with any name, every file with a platform-network alert could raise the expected
    one and was judged (13 files, 2,764 series, 24-25 s of promtool CPU per stack); named, only
    nic-error-budget's is (1 file, 336 series, 4 s), and the others read only series the fault leaves as
    on day one, which day one judges. Its unit is (cluster, instance, device): no ``node`` label to accept.
    """
    instances = [instance] if instance is not None else [_NIC_ADDRESS, BAD_NIC_NODE]
    return Expectations(
        quiet_from=0,
        fires=(
            Fires(
                "platform-network",
                START + 75,
                alertname="NICErrorsUnitAboveCriticalRange",
                severity="ticket",
                matchers=(("cluster", "prod-east"), ("device", "eth0")),
                alternatives=tuple((("instance", value),) for value in instances),
            ),
        ),
        pages_only=_pages_only(),
        premises=(
            (
                f'round(sum(rate(node_network_receive_errs_total{{device="eth0",instance=~"{_NIC_INSTANCES}"}}[5m]))'
                f' / sum(rate(node_network_receive_packets_total{{device="eth0",instance=~"{_NIC_INSTANCES}"}}[5m])),'
                " 0.0001)",
                START + 10,
                0.01,
            ),
        ),
    )


BAD_NIC = Incident(
    "bad-nic",
    "One GPU node's eth0 optic fails: 1% of its received packets are errored (node-mixin's "
    "NodeNetworkReceiveErrs level), 6.7e-7 of the cluster's packets.",
    _base(START + 75).with_node_faults({BAD_NIC_NODE: (Fault("nic-errors", START, ratio=0.01),)}),
    _bad_nic(None),
    # kube-prometheus relabels node-exporter's instance to the node name; the chart keeps the address.
    on=(("kube-prometheus-stack", _bad_nic(_NIC_ADDRESS)), ("kube-prometheus", _bad_nic(BAD_NIC_NODE))),
)


def _node_ticket(
    team: str, by_minute: int, alertname: str, node: str, address: str, premises: tuple[tuple[str, int, float], ...]
) -> tuple[Expectations, tuple[tuple[str, Expectations], ...]]:
    """A per-node ticket naming node-exporter's ``instance`` (the address on the chart, the node name on
    kube-prometheus).

    Returns the common expectations and those per stack.
    """

    def expect(instance: str) -> Expectations:
        return Expectations(
            quiet_from=0,
            fires=(
                Fires(
                    team,
                    by_minute,
                    alertname=alertname,
                    severity="ticket",
                    matchers=(("cluster", "prod-east"), ("instance", instance)),
                ),
            ),
            pages_only=_pages_only(),
            premises=premises,
        )

    return expect(address), (("kube-prometheus-stack", expect(address)), ("kube-prometheus", expect(node)))


INODES_NODE, _INODES_ADDRESS = _node("gpu-train", "a", 16), "10.1.1.26:9100"
_INODES_EXPECT, _INODES_ON = _node_ticket(
    "platform-nodes",
    START + 32,
    "NodeFilesystemInodesUnitBelowCriticalRange",
    INODES_NODE,
    _INODES_ADDRESS,
    (
        (
            f'round(min(node_filesystem_files_free{{mountpoint="/var/lib/containerd",instance=~"{_INODES_ADDRESS}|{INODES_NODE}"}}'
            f" / node_filesystem_files), 0.001)",
            START + 10,
            0.04,
        ),
    ),
)
# Free inodes fall to 4% at START: the per-node ticket pends at once and fires after its 30m.
INODES_FULL = Incident(
    "inodes-full",
    "A data-loader unpacks tens of millions of small files onto one GPU node's containerd filesystem: 4% of its "
    "inodes stay free while df still shows most of the space free.",
    _base(START + 32).with_node_faults({INODES_NODE: (Fault("inodes-full", START, ratio=0.04),)}),
    _INODES_EXPECT,
    on=_INODES_ON,
)

FILEFD_NODE, _FILEFD_ADDRESS = _node("infra", "a", 6), "10.1.11.16:9100"
_FILEFD_EXPECT, _FILEFD_ON = _node_ticket(
    "platform-nodes",
    START + 17,
    "NodeFileDescriptorsUnitAboveCriticalRange",
    FILEFD_NODE,
    _FILEFD_ADDRESS,
    (
        (
            f'round(max(node_filefd_allocated{{instance=~"{_FILEFD_ADDRESS}|{FILEFD_NODE}"}}'
            f" / node_filefd_maximum), 0.001)",
            START + 10,
            0.9,
        ),
    ),
)
# The infra image sets fs.file-max to 1,048,576; a leaking agent holds 90% of it from START: the ticket fires after 15m.
FILEFD_LEAK = Incident(
    "filefd-leak",
    "A log shipper on one infra node leaks a descriptor per rotated file until 90% of fs.file-max is allocated.",
    _base(START + 17).with_node_faults({FILEFD_NODE: (Fault("filefd-leak", START, ratio=0.9),)}),
    _FILEFD_EXPECT,
    on=_FILEFD_ON,
)

OOM_NODE, _OOM_ADDRESS = _node("gpu-train", "b", 5), "10.1.2.15:9100"
_OOM_EXPECT, _OOM_ON = _node_ticket(
    "platform-nodes",
    START + 20,
    "NodeOOMKillsUnitAboveCriticalRange",
    OOM_NODE,
    _OOM_ADDRESS,
    (
        (
            f'round(sum(rate(node_vmstat_oom_kill{{instance=~"{_OOM_ADDRESS}|{OOM_NODE}"}}[5m])), 0.001)',
            START + 10,
            0.05,
        ),
    ),
)
# A pod without a memory limit: the kernel kills every 20 s from START; the 5m rate passes 0.01/s within two
# minutes, and the shadow ticket fires 15 minutes later.
OOM_KILLS = Incident(
    "oom-kills",
    "A pod without a memory limit takes one GPU node out of memory: the kernel OOM-kills a process every 20 seconds.",
    _base(START + 20).with_node_faults({OOM_NODE: (Fault("oom-kills", START, ratio=0.05),)}),
    _OOM_EXPECT,
    on=_OOM_ON,
)


def _reload_failed(job: str) -> Expectations:
    return Expectations(
        quiet_from=0,
        fires=(
            Fires(
                "platform-observability",
                START + 12,
                alertname="MonitoringConfigReloadBelowNormalRange",
                severity="ticket",
                matchers=(("cluster", "prod-east"), ("job", job)),
            ),
        ),
        pages_only=_pages_only(),
        premises=((f'max(prometheus_config_last_reload_successful{{cluster="prod-east",job="{job}"}})', START + 2, 0),),
    )


# A PrometheusRule with a PromQL syntax error: every Prometheus replica of prod-east refuses the reload from START
# and keeps running on its old rules; the ticket fires after 10m. The job is the Prometheus Service's name.
PROMETHEUS_RELOAD_FAILED = Incident(
    "prometheus-reload-failed",
    "A rule file Prometheus refuses is applied in prod-east: every replica's last configuration reload fails.",
    _base(START + 12).with_cluster_faults({"prod-east": (Fault("prometheus-reload-failed", START),)}),
    _reload_failed("kube-prometheus-stack-prometheus"),
    on=(
        ("kube-prometheus-stack", _reload_failed("kube-prometheus-stack-prometheus")),
        ("kube-prometheus", _reload_failed("prometheus-k8s")),
    ),
)

IB_NODE, _IB_ADDRESS = _node("gpu-train", "a", 20), "10.1.1.30:9100"


def _ib_ticket(instance: str) -> Expectations:
    return Expectations(
        quiet_from=0,
        fires=(
            Fires(
                "platform-network",
                START + 20,
                alertname="InfiniBandPortErrorsUnitAboveCriticalRange",
                severity="ticket",
                matchers=(("cluster", "prod-east"), ("instance", instance), ("device", "mlx5_3"), ("port", "1")),
            ),
        ),
        pages_only=_pages_only(),
        premises=(
            (
                f'round(sum(rate(node_infiniband_symbol_error_total{{instance=~"{_IB_ADDRESS}|{IB_NODE}",device="mlx5_3"}}'
                f"[5m])), 0.001)",
                START + 10,
                0.05,
            ),
        ),
    )


# A degrading cable on one GPU node's mlx5_3: 0.05 symbol errors per second from START; the port's 5m rate
# passes 0.01/s within two minutes, and the (shadow) ticket naming node, device and port fires 15 minutes later.
IB_BAD_CABLE = Incident(
    "infiniband-bad-cable",
    "The cable of one GPU node's HCA mlx5_3 degrades: its port counts 3 symbol errors a minute; the other 287 "
    "ports of the pool stay clean.",
    _base(START + 20).with_node_faults({IB_NODE: (Fault("ib-port-errors", START, ratio=0.05),)}),
    _ib_ticket(_IB_ADDRESS),
    on=(("kube-prometheus-stack", _ib_ticket(_IB_ADDRESS)), ("kube-prometheus", _ib_ticket(IB_NODE))),
)


GPU_NODE = _node("gpu-train", "b", 7)
GPU_UUID = gpus.gpu_uuid(
    next(node for node in day_one().nodes(day_one().cluster("prod-east")) if node.name == GPU_NODE),
    gpus.GPU_FAULT_INDEX,
)
_GPU = f'Hostname="{GPU_NODE}",gpu="{gpus.GPU_FAULT_INDEX}"'
# An uncorrectable HBM error on GPU 5 of one GPU node at START: the GPU remaps the row and the job on it dies, so
# the row is counted on the idle series that appears then (the job's series ends at the old count). The unit's
# value is 1 from START; the (shadow) ticket naming the node, the GPU and its UUID fires after its 1m.
GPU_ROW_REMAP = Incident(
    "gpu-row-remap",
    "One H100 of a GPU node remaps a memory row after an uncorrectable error; the training job on it dies with it.",
    _base(START + 3).with_node_faults({GPU_NODE: (Fault("gpu-row-remap", START),)}),
    Expectations(
        quiet_from=0,
        fires=(
            Fires(
                "platform-nodes",
                START + 3,
                alertname="GPUMemoryRowRemapUnitAboveCriticalRange",
                severity="ticket",
                matchers=(
                    ("cluster", "prod-east"),
                    ("Hostname", GPU_NODE),
                    ("gpu", str(gpus.GPU_FAULT_INDEX)),
                    ("UUID", GPU_UUID),
                ),
            ),
        ),
        pages_only=_pages_only(),
        premises=(
            # One more row than before, read across the GPU's series; the job's series (with its pod) is gone.
            (
                f"max(DCGM_FI_DEV_UNCORRECTABLE_REMAPPED_ROWS{{{_GPU}}})"
                f" - max(DCGM_FI_DEV_UNCORRECTABLE_REMAPPED_ROWS{{{_GPU}}} offset 10m)",
                START + 5,
                1,
            ),
            (f'count(DCGM_FI_DEV_UNCORRECTABLE_REMAPPED_ROWS{{{_GPU},exported_pod!=""}})', START - 5, 1),
            (f'count(DCGM_FI_DEV_UNCORRECTABLE_REMAPPED_ROWS{{{_GPU},exported_pod!=""}}) or vector(0)', START + 10, 0),
        ),
    ),
)


def _registry_page() -> Expectations:
    waiting = 'kube_pod_container_status_waiting_reason{cluster="prod-east",reason=~"ErrImagePull|ImagePullBackOff"}'
    return Expectations(
        quiet_from=0,
        fires=(
            Fires(
                "platform-nodes",
                START + 11,
                alertname="ImagePullFailuresAboveCriticalRange",
                severity="page",
                matchers=(("cluster", "prod-east"), ("registry", "registry.example.com")),
            ),
        ),
        pages_only=_pages_only(),
        premises=(
            # 30 images of the registry, 2 replicas each, plus the bad tag's 3 replicas waiting since day one.
            (f"count({waiting})", START - 5, 3),
            (f"count({waiting})", START + 5, 63),
            ('count(kube_pod_container_status_waiting_reason{cluster="prod-west"}) or vector(0)', START + 5, 0),
        ),
    )


# The platform's registry stops answering in prod-east at START: the 30 images pulled from it wait (60 pods),
# beside the one bad tag that waits all day. The (shadow) page for the registry fires after its 10m.
REGISTRY_DOWN = Incident(
    "registry-down",
    "The platform's image registry stops answering in prod-east: every pod of the 30 workloads that pull from it "
    "waits in ErrImagePull and ImagePullBackOff.",
    _base(START + 11).with_cluster_faults({"prod-east": (Fault("registry-down", START),)}),
    _registry_page(),
)


# The first control-plane node's kube-apiserver is OOM-killed two minutes after each start from START; it backs
# off (CrashLoopBackOff) between starts, so every 5-minute window has a back-off: the page fires 15 minutes later.
APISERVER_OOM_LOOP = Incident(
    "apiserver-oom-loop",
    "One kube-apiserver of prod-east is OOM-killed two minutes after each start (a LIST storm against its watch "
    "cache); the kubelet restarts it with a growing back-off.",
    _base(START + 16).with_cluster_faults({"prod-east": (Fault("apiserver-oom-loop", START),)}),
    Expectations(
        quiet_from=0,
        fires=(
            Fires(
                "platform-apiserver",
                START + 16,
                alertname="ControlPlaneRestartsAboveNormalRange",
                severity="page",
                matchers=(("cluster", "prod-east"), ("container", "kube-apiserver")),
            ),
        ),
        pages_only=_pages_only('ALERTS{alertname="ControlPlaneRestartsAboveNormalRange",cluster="prod-east"}'),
        premises=(
            (
                'max(kube_pod_container_status_restarts_total{cluster="prod-east",pod="kube-apiserver-prod-east-cp-1"})',
                START + 15,
                5,
            ),
            (
                'max(kube_pod_container_status_last_terminated_reason{pod="kube-apiserver-prod-east-cp-1",'
                'reason="OOMKilled"})',
                START + 15,
                1,
            ),
        ),
    ),
)

# prod-east's kube-state-metrics outgrew one replica: its scrape takes 8 s of the 10 s timeout from START; the
# ticket fires after its 30m.
KSM_SLOW_SCRAPE = Incident(
    "ksm-slow-scrape",
    "kube-state-metrics of prod-east takes 8 seconds per scrape (its output outgrew one replica); the scrapes "
    "still succeed.",
    _base(START + 31).with_cluster_faults({"prod-east": (Fault("ksm-slow-scrape", START),)}),
    Expectations(
        quiet_from=0,
        fires=(
            Fires(
                "platform-nodes",
                START + 31,
                alertname="KubeStateMetricsScrapeDurationAboveNormalRange",
                severity="ticket",
                matchers=(("cluster", "prod-east"),),
            ),
        ),
        pages_only=_pages_only(),
        premises=(
            ('max(scrape_duration_seconds{cluster="prod-east",job="kube-state-metrics"})', START + 5, 8),
            ('max(up{cluster="prod-east",job="kube-state-metrics"})', START + 5, 1),
        ),
    ),
)


def _ksm_rbac(telemetry: bool) -> Expectations:
    errors = 'sum(rate(kube_state_metrics_list_total{cluster="prod-east",result="error"}[5m])) or vector(0)'
    if not telemetry:  # kube-prometheus-stack does not scrape the telemetry port: nothing to see, nothing fires
        return Expectations(quiet_from=0, pages_only=_pages_only(), premises=((errors, START + 10, 0),))
    return Expectations(
        quiet_from=0,
        fires=(
            Fires(
                "platform-nodes",
                START + 20,
                alertname="KubeStateMetricsListWatchErrorsAboveNormalRange",
                severity="ticket",
                matchers=(("cluster", "prod-east"),),
            ),
        ),
        pages_only=_pages_only(),
        premises=((f"round({errors}, 0.001)", START + 10, 0.033),),
    )


# A ClusterRole change drops the nodes resource from kube-state-metrics' RBAC in prod-east at START: its node
# reflector's List fails every 30 seconds; the (shadow) ticket fires 15 minutes after the rate passes 0.01/s.
KSM_RBAC_LOST = Incident(
    "ksm-rbac-lost",
    "kube-state-metrics of prod-east loses the right to list nodes: its node reflector fails every 30 seconds and "
    "the node series freeze while it stays up.",
    _base(START + 20).with_cluster_faults({"prod-east": (Fault("ksm-rbac-lost", START),)}),
    _ksm_rbac(True),
    on=(("kube-prometheus-stack", _ksm_rbac(False)), ("kube-prometheus", _ksm_rbac(True))),
)


def _prometheus_loop(replicas: int) -> Expectations:
    pods = 'count(kube_pod_container_status_ready{cluster="prod-east",container="prometheus"})'
    if replicas < 2:  # one replica (the chart's default): the loop stops the only evaluator, the heartbeat's page
        return Expectations(quiet_from=0, pages_only=_pages_only(), premises=((pods, START + 5, 1),))
    pod = "prometheus-k8s-1"
    return Expectations(
        quiet_from=0,
        fires=(
            Fires(
                "platform-observability",
                START + 31,
                alertname="PrometheusRestartsBelowNormalRange",
                severity="page",
                matchers=(("cluster", "prod-east"), ("pod", pod)),
            ),
        ),
        pages_only=_pages_only(f'ALERTS{{alertname="PrometheusRestartsBelowNormalRange",pod="{pod}"}}'),
        premises=(
            (pods, START + 5, 2),
            (f'max(kube_pod_container_status_restarts_total{{cluster="prod-east",pod="{pod}"}})', START + 30, 3),
            (
                f'max(kube_pod_container_status_last_terminated_reason{{pod="{pod}",reason="OOMKilled"}})',
                START + 30,
                1,
            ),
        ),
    )


# The second Prometheus replica of prod-east is OOM-killed every 10 minutes from START (5 minutes of back-off,
# 3 of WAL replay, 2 ready): never ready for a whole 5-minute window, so the other replica's page fires 30
# minutes later. kube-prometheus-stack runs one replica: there is no second one to loop or to judge it.
PROMETHEUS_OOM_LOOP = Incident(
    "prometheus-oom-loop",
    "One Prometheus replica of prod-east is OOM-killed every 10 minutes: back-off, WAL replay, two minutes ready.",
    _base(START + 31).with_cluster_faults({"prod-east": (Fault("prometheus-oom-loop", START),)}),
    _prometheus_loop(2),
    on=(("kube-prometheus-stack", _prometheus_loop(1)), ("kube-prometheus", _prometheus_loop(2))),
)

# A runbook froze batch-central's cluster-autoscaler at minute 113 (kubectl scale --replicas=0) and nobody scaled it
# back: its slice vanishes while prod-east's autoscaler still reports (its last samples stay visible for the 5m
# lookback) and the vanished alert pends from minute 120, once the spec has twice its 1h window of history; the
# ticket fires 30 minutes later, at minute 150 (day one's 180 minutes bound the data set's end, deadline + 30).
AUTOSCALER_FROZEN_AT = START + 53
AUTOSCALER_LEFT_AT_ZERO = Incident(
    "autoscaler-left-at-zero",
    "batch-central's cluster-autoscaler is scaled to zero during an incident and left there.",
    _base(AUTOSCALER_FROZEN_AT + 37).with_cluster_faults(
        {"batch-central": (Fault("autoscaler-scaled-to-zero", AUTOSCALER_FROZEN_AT),)}
    ),
    Expectations(
        quiet_from=0,
        fires=(
            Fires(
                "platform-scheduling",
                AUTOSCALER_FROZEN_AT + 37,
                alertname="ClusterAutoscalerProgressSliceVanished",
                severity="ticket",
                matchers=(("cluster", "batch-central"),),
            ),
        ),
        pages_only=_pages_only(),
        premises=(
            ('count(up{job="cluster-autoscaler",cluster="batch-central"}) or vector(0)', AUTOSCALER_FROZEN_AT + 5, 0),
            ('count(up{job="cluster-autoscaler"})', AUTOSCALER_FROZEN_AT + 5, 1),
        ),
    ),
)

INCIDENTS = (
    HUNG_PLEG,
    APISERVER_5XX,
    POOL_20PCT_NOTREADY,
    POOL_DELETED,
    ONE_NOTREADY_IN_SMALL_POOL,
    BAD_NIC,
    INODES_FULL,
    FILEFD_LEAK,
    OOM_KILLS,
    PROMETHEUS_RELOAD_FAILED,
    IB_BAD_CABLE,
    GPU_ROW_REMAP,
    REGISTRY_DOWN,
    APISERVER_OOM_LOOP,
    KSM_SLOW_SCRAPE,
    KSM_RBAC_LOST,
    PROMETHEUS_OOM_LOOP,
    AUTOSCALER_LEFT_AT_ZERO,
)
