"""node-exporter's clock, filesystem, file-table and OOM-kill series for each node.

Verified in prometheus/node_exporter (collector/timex.go and collector/filesystem_common.go at
v1.8.2-v1.12.1): ``node_timex_offset_seconds``, ``node_timex_sync_status`` and
``node_timex_maxerror_seconds`` carry no labels of their own; ``node_filesystem_*`` carry
``device``, ``mountpoint``, ``fstype`` and ``device_error`` (empty, so absent, while the
statfs call succeeds). Both stacks exclude ``/dev``, ``/proc``, ``/sys`` and the kubelet's
pod volumes and the ``overlay``/``squashfs`` types by flag, so a node reports its root
filesystem, the EFI partition, ``/run`` (tmpfs) and, on GPU nodes, the local NVMe RAID that
holds containerd's images. Every series is a gauge the exporter computes at each scrape: a
rebooting node has none (scrape failed), and they come back with the node.

Inodes (``node_filesystem_files`` and ``_files_free``, collector/filesystem_common.go:121 and :127
at v1.12.1): XFS sizes its inode space as a share of the filesystem (imaxpct: 25% under 1 TiB,
5% above) in 512-byte inodes, so a 200 GiB root has about 105 million and the NVMe RAID 375
million, nearly all free; vfat reports none (0 and 0). File table (``node_filefd_allocated`` and
``node_filefd_maximum``, collector/filefd_linux.go:86 and :88): tens of thousands of handles;
systemd raised fs.file-max to LONG_MAX on the GPU nodes, the infra pool's image sets it to
1,048,576. OOM kills (``node_vmstat_oom_kill``, collector/vmstat_linux.go:36 and :77): a counter
from boot, restarting at 0 after a reboot; one node in seven sees a container OOM-killed by its
own limit about once an hour. Faults: ``inodes-full`` (the containerd filesystem's free inode
share falls to ``ratio``), ``filefd-leak`` (allocated handles at ``ratio`` of fs.file-max),
``oom-kills`` (``ratio`` kills per second).

InfiniBand (collector/infiniband_linux.go at v1.12.1: labels ``device`` and ``port``, :134;
``node_infiniband_port_errors_received_total`` :211, ``_symbol_error_total`` :219,
``_link_downed_total`` :200): a GPU node has 8 single-port HCAs, mlx5_0 to mlx5_7, whose
counters start at the symbol errors the link counted while it trained at boot and stay there;
one port in 40 counts a symbol error every few hours. A node without an HCA exports none of
them, but every node reports ``node_scrape_collector_success{collector="infiniband"}``, 1 with
HCAs and 0 without (ErrNoData, collector/collector.go:164-176). Fault: ``ib-port-errors``
(``ratio`` symbol errors per second on mlx5_3 port 1: a degrading cable).
"""

from __future__ import annotations

import math
import zlib
from collections.abc import Callable

from tests.world.nodes import _scraped
from tests.world.stack import StackView
from tests.world.timeline import Series, counter, gauge, series
from tests.world.topology import Cluster, Node, World, minute_of

GIB = 1024.0**3


def _seed(node: Node) -> int:
    return zlib.crc32(node.name.encode())


def _base(node: Node, stack: StackView) -> dict[str, str]:
    """node-exporter's target labels, as ``nodes.node_exporter`` writes them."""
    instance = node.name if stack.node_exporter_instance_is_node else f"{node.ip}:9100"
    base = {"cluster": node.cluster, "job": stack.job("node-exporter"), "instance": instance}
    base.update(namespace="monitoring", pod=f"node-exporter-{_seed(node) % 99999:05d}")
    base.update(service="node-exporter", endpoint="metrics")
    return base


def series_for(world: World, cluster: Cluster, stack: StackView) -> list[Series]:
    """Clock, filesystem, file-table, OOM-kill and InfiniBand series of every node of the cluster."""
    out: list[Series] = []
    for node in world.nodes(cluster):
        base = _base(node, stack)
        out += _timex(world, node, base) + _filesystems(world, node, base)
        out += _filefd(world, node, base) + _oom_kills(world, node, base)
        out += _infiniband(world, node, base)
    return out


def _timex(world: World, node: Node, base: dict[str, str]) -> list[Series]:
    """chrony keeps the offset within a millisecond or two, wandering around zero.

    Without ``rtcsync`` in chrony.conf chrony leaves the kernel's STA_UNSYNC flag set (the flag
    drives the kernel's 11-minute RTC mode), so node-exporter reads sync status 0 on a healthy
    node, while the maximum error chrony hands the kernel stays at tens of milliseconds.
    """
    scraped, count, seed = _scraped(world, node), world.samples, _seed(node)
    amplitude = 0.0004 + (seed % 13) * 0.0001  # 0.4-1.6 ms
    rtcsync = world.cluster(node.cluster).chrony_rtcsync
    floor, swing, flag = (0.004, 0.002, 1.0) if rtcsync else (0.02, 0.03, 0.0)

    def offset(i: int) -> float | None:
        return amplitude * math.sin(i / 17 + seed % 7) if scraped(i) else None

    def maxerror(i: int) -> float | None:
        return floor + swing * abs(math.sin(i / 29 + seed % 5)) if scraped(i) else None

    return [
        series("node_timex_offset_seconds", base, gauge(offset, count)),
        series("node_timex_sync_status", base, gauge(lambda i: flag if scraped(i) else None, count)),
        series("node_timex_maxerror_seconds", base, gauge(maxerror, count)),
    ]


def _mounts(node: Node) -> list[tuple[str, str, str, float, float]]:
    """(mountpoint, device, fstype, size in GiB, free share) of one node's filesystems."""
    seed = _seed(node)
    root_free = 0.45 + (seed % 23) / 100  # 45-67% free: images live elsewhere on GPU nodes
    mounts = [
        ("/", "/dev/nvme0n1p1", "xfs", 100.0 if node.pool == "infra" else 200.0, root_free),
        ("/boot/efi", "/dev/nvme0n1p128", "vfat", 0.0098, 0.62),
        ("/run", "tmpfs", "tmpfs", 15.4 if node.pool == "infra" else 94.0, 0.99),
    ]
    if node.pool != "infra":
        # Image garbage collection keeps usage under 85% (imageGCHighThresholdPercent).
        mounts.append(("/var/lib/containerd", "/dev/md0", "xfs", 3576.0, 0.3 + (seed % 31) / 100))
    return mounts


def _filesystems(world: World, node: Node, base: dict[str, str]) -> list[Series]:
    """Size, free, available (free minus the 5% root reserve on ext4; xfs has none), read-only."""
    scraped, count, seed = _scraped(world, node), world.samples, _seed(node)
    out: list[Series] = []
    for mountpoint, device, fstype, size_gib, free_share in _mounts(node):
        labels = {**base, "device": device, "fstype": fstype, "mountpoint": mountpoint}
        size = round(size_gib * GIB / 4096) * 4096

        def free(i: int, share: float = free_share, size: float = size) -> float | None:
            # Pulls and garbage collection move free space by a few percent over hours.
            drift = 0.02 * math.sin(i / 90 + seed % 11)
            return round(size * (share + drift) / 4096) * 4096 if scraped(i) else None

        def present(value: float) -> Callable[[int], float | None]:
            return lambda i: value if scraped(i) else None

        out.append(series("node_filesystem_size_bytes", labels, gauge(present(float(size)), count)))
        out.append(series("node_filesystem_free_bytes", labels, gauge(free, count)))
        out.append(series("node_filesystem_avail_bytes", labels, gauge(free, count)))
        out.append(series("node_filesystem_readonly", labels, gauge(present(0.0), count)))
        out.append(series("node_filesystem_device_error", labels, gauge(present(0.0), count)))
        out += _inodes(world, node, labels, fstype, size_gib, mountpoint)
    return out


def _inodes(
    world: World, node: Node, labels: dict[str, str], fstype: str, size_gib: float, mountpoint: str
) -> list[Series]:
    """Inodes of one filesystem: XFS's inode space is imaxpct of its size in 512-byte inodes."""
    scraped, count, seed = _scraped(world, node), world.samples, _seed(node)
    if fstype == "vfat":
        files, used = 0.0, 0.0
    elif fstype == "tmpfs":
        files, used = float(round(size_gib * GIB / 4096 / 2)), 1200.0
    else:
        files = float(round(size_gib * GIB * (0.25 if size_gib < 1024 else 0.05) / 512))
        used = (2.5e6 if mountpoint == "/var/lib/containerd" else 3.1e5) * (1 + (seed % 17) / 10)

    def free(i: int) -> float | None:
        if not scraped(i):
            return None
        fault = world.node_fault(node, "inodes-full", minute_of(i)) if mountpoint == "/var/lib/containerd" else None
        if fault is not None:
            return float(round(files * fault.ratio))
        return files - round(used * (1 + 0.01 * math.sin(i / 60 + seed % 5)))

    total = gauge(lambda i: files if scraped(i) else None, count)
    return [
        series("node_filesystem_files", labels, total),
        series("node_filesystem_files_free", labels, gauge(free, count)),
    ]


LONG_MAX = float(2**63 - 1)


def _filefd(world: World, node: Node, base: dict[str, str]) -> list[Series]:
    """/proc/sys/fs/file-nr: handles in use wander with the pods; fs.file-max as the node image sets it."""
    scraped, count, seed = _scraped(world, node), world.samples, _seed(node)
    maximum = 1048576.0 if node.pool == "infra" else LONG_MAX
    usual = 9000.0 + (seed % 29) * 1000

    def allocated(i: int) -> float | None:
        if not scraped(i):
            return None
        fault = world.node_fault(node, "filefd-leak", minute_of(i))
        if fault is not None:
            return float(round(maximum * fault.ratio))
        return float(round(usual * (1 + 0.05 * math.sin(i / 23 + seed % 3))))

    return [
        series("node_filefd_allocated", base, gauge(allocated, count)),
        series("node_filefd_maximum", base, gauge(lambda i: maximum if scraped(i) else None, count)),
    ]


def _oom_kills(world: World, node: Node, base: dict[str, str]) -> list[Series]:
    """Kills since boot: about one an hour on one node in seven (a container at its limit), more in a fault."""
    scraped, count, seed = _scraped(world, node), world.samples, _seed(node)
    usual = 1 / 3600 if seed % 7 == 0 else 0.0

    def rate(i: int) -> float | None:
        if not scraped(i):
            return None
        fault = world.node_fault(node, "oom-kills", minute_of(i))
        return fault.ratio if fault is not None else usual

    kills = counter(rate, count, start=float(seed % 4))
    return [series("node_vmstat_oom_kill", base, [None if v is None else float(int(v)) for v in kills])]


IB_FAULT_DEVICE = "mlx5_3"


def _infiniband(world: World, node: Node, base: dict[str, str]) -> list[Series]:
    """Eight single-port HCAs on a GPU node, none elsewhere; the collector's success on every node."""
    scraped, count, seed = _scraped(world, node), world.samples, _seed(node)
    has_hca = node.pool.startswith("gpu")
    success = gauge(lambda i: (1.0 if has_hca else 0.0) if scraped(i) else None, count)
    out = [series("node_scrape_collector_success", {**base, "collector": "infiniband"}, success)]
    if not has_hca:
        return out
    for index in range(8):
        device = f"mlx5_{index}"
        labels = {**base, "device": device, "port": "1"}
        usual = 1 / 10800 if (seed + index) % 40 == 0 else 0.0

        def symbols(i: int, device: str = device, usual: float = usual) -> float | None:
            if not scraped(i):
                return None
            fault = world.node_fault(node, "ib-port-errors", minute_of(i)) if device == IB_FAULT_DEVICE else None
            return fault.ratio if fault is not None else usual

        trained = float((seed >> index) % 3)
        symbol = [None if v is None else float(int(v)) for v in counter(symbols, count, start=trained)]
        zero = gauge(lambda i: 0.0 if scraped(i) else None, count)
        out += [
            series("node_infiniband_symbol_error_total", labels, symbol),
            series("node_infiniband_port_errors_received_total", labels, zero),
            series("node_infiniband_link_downed_total", labels, zero),
        ]
    return out
