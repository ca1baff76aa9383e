"""node-exporter's clock and filesystem series for each node.

Verified in prometheus/node_exporter (collector/timex.go and collector/filesystem_common.go at
v1.8.2-v1.12.1): ``node_timex_offset_seconds``, ``node_timex_sync_status`` and
``node_timex_maxerror_seconds`` carry no labels of their own; ``node_filesystem_*`` carry
``device``, ``mountpoint``, ``fstype`` and ``device_error`` (empty, so absent, while the
statfs call succeeds). Both stacks exclude ``/dev``, ``/proc``, ``/sys`` and the kubelet's
pod volumes and the ``overlay``/``squashfs`` types by flag, so a node reports its root
filesystem, the EFI partition, ``/run`` (tmpfs) and, on GPU nodes, the local NVMe RAID that
holds containerd's images. Every series is a gauge the exporter computes at each scrape: a
rebooting node has none (scrape failed), and they come back with the node.
"""

from __future__ import annotations

import math
import zlib
from collections.abc import Callable

from tests.world.nodes import _scraped
from tests.world.stack import StackView
from tests.world.timeline import Series, gauge, series
from tests.world.topology import Cluster, Node, World

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
    """Clock and filesystem series of every node of the cluster."""
    out: list[Series] = []
    for node in world.nodes(cluster):
        base = _base(node, stack)
        out += _timex(world, node, base) + _filesystems(world, node, base)
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
    return out
