"""NVIDIA dcgm-exporter on every GPU node, as the GPU operator's ServiceMonitor scrapes it.

Verified in NVIDIA/dcgm-exporter at 4.4.2-4.7.0 (the GPU operator v25.10.1's default) and 3.3.8-3.6.0
(v24.9.0's): ``DCGM_FI_DEV_UNCORRECTABLE_REMAPPED_ROWS`` (counter) and ``DCGM_FI_DEV_ROW_REMAP_FAILURE``
(gauge) are on by default (etc/default-counters.csv:72-74, etc/dcp-metrics-included.csv:65-67 at
4.4.2-4.7.0). Each GPU's series carry ``gpu``, ``UUID``, ``pci_bus_id``, ``device`` (nvidia<gpu>),
``modelName``, ``Hostname`` (NODE_NAME: the node) and the ``DCGM_FI_DRIVER_VERSION`` label field
(internal/pkg/rendermetrics/render_metrics.go:47); while a pod holds the GPU, its ``pod``, ``namespace``,
``container`` and ``pod_uid`` (internal/pkg/transformation/kubernetes.go:315-325), which the ServiceMonitor
(honorLabels false) turns into ``exported_pod``, ``exported_namespace`` and ``exported_container`` next to
the target's own ``pod``, ``namespace``, ``container``, ``service``, ``endpoint``, ``instance`` (the exporter
pod's address) and ``job="nvidia-dcgm-exporter"`` (assets/state-dcgm-exporter/0500_service_monitor.yaml in
NVIDIA/gpu-operator v25.10.1: jobLabel app).

A GPU node has 8 H100s. The row counter lives in the InfoROM: most GPUs show 0, one in 16 a row or two
remapped long ago, and it never moves on a healthy day; no GPU has a remapping failure. Each node's GPUs
are held by one training job's pods, which ends at a minute of its own and leaves the GPUs idle for two
minutes (no pod labels) before the next job's pods take them: every GPU's series change identity during
the day, as they do on a real fleet. Node faults: ``gpu-row-remap`` (GPU ``GPU_FAULT_INDEX`` of the node
remaps one row after an uncorrectable error at the fault's start, and the error kills the job on it: the
row is counted on the idle series that appears then, not on the job's series, which ends at the old count)
and ``gpu-remap-failure`` (that GPU's remapping failed: the flag is 1 from the fault's start).
"""

from __future__ import annotations

import zlib

from tests.world.nodes import _scraped, _up
from tests.world.stack import StackView
from tests.world.timeline import Series, series
from tests.world.topology import Cluster, Node, World, minute_of

GPUS_PER_NODE = 8
GPU_FAULT_INDEX = 5
IDLE_MIN = 2  # minutes between one job's pods leaving the GPUs and the next job's taking them
DRIVER = "550.90.07"
MODEL = "NVIDIA H100 80GB HBM3"


def has_gpus(node: Node) -> bool:
    return node.pool.startswith("gpu")


def gpu_uuid(node: Node, index: int) -> str:
    """A stable UUID per board, in nvidia-smi's form."""
    digest = f"{zlib.crc32(f'{node.name}/{index}'.encode()):08x}{zlib.crc32(f'{index}/{node.name}'.encode()):08x}"
    return f"GPU-{digest[:8]}-{digest[8:12]}-{digest[12:16]}-{digest[:4]}-{digest[4:16]}"


def exporter_address(node: Node) -> str:
    """The dcgm-exporter pod's address (not host network): the pod CIDR, one /24 per node."""
    _ten, cluster, subnet, host = node.ip.split(".")
    return f"10.{100 + int(cluster)}.{int(subnet) * 4 + int(host) // 64}.{int(host) % 64 + 2}:9400"


def series_for(world: World, cluster: Cluster, stack: StackView) -> list[Series]:
    """The exporter's target and two row-remapper series per GPU of every GPU node."""
    out: list[Series] = []
    for node in world.nodes(cluster):
        if has_gpus(node):
            out += _node(world, node, stack)
    return out


def _owners(world: World, node: Node, seed: int) -> list[str | None]:
    """Per sample, the pod holding the node's GPUs (None while idle): one job, then the next."""
    switch = 40 + seed % 150  # the first job ends somewhere in the day
    out: list[str | None] = []
    for i in range(world.samples):
        minute = minute_of(i)
        if minute < switch:
            out.append(f"train-{seed % 997:03d}-worker-{seed % 7}")
        elif minute < switch + IDLE_MIN:
            out.append(None)
        else:
            out.append(f"train-{(seed + 1) % 997:03d}-worker-{seed % 5}")
    return out


def _node(world: World, node: Node, stack: StackView) -> list[Series]:
    seed, count = zlib.crc32(node.name.encode()), world.samples
    scraped = _scraped(world, node)
    target = {"cluster": node.cluster, "job": stack.job("dcgm-exporter"), "instance": exporter_address(node)}
    target.update(namespace="gpu-operator", pod=f"nvidia-dcgm-exporter-{seed % 99999:05d}")
    target.update(service="nvidia-dcgm-exporter", endpoint="gpu-metrics", container="nvidia-dcgm-exporter")
    out = [series("up", target, _up(world, node))]
    owners = _owners(world, node, seed)
    for index in range(GPUS_PER_NODE):
        gpu = {**target, "gpu": str(index), "UUID": gpu_uuid(node, index), "device": f"nvidia{index}"}
        gpu.update(pci_bus_id=f"00000000:{0x18 + 0x10 * index:02X}:00.0", modelName=MODEL, Hostname=node.name)
        gpu["DCGM_FI_DRIVER_VERSION"] = DRIVER
        faulty = index == GPU_FAULT_INDEX
        remap = [world.node_fault(node, "gpu-row-remap", minute_of(i)) if faulty else None for i in range(count)]
        failed = [world.node_fault(node, "gpu-remap-failure", minute_of(i)) if faulty else None for i in range(count)]
        old_rows = float((seed >> index) % 3) if (seed + index) % 16 == 0 else 0.0
        # The job on the faulty GPU dies with the uncorrectable error: idle from the fault's start.
        holders = [None if remap[i] is not None else owners[i] for i in range(count)]
        rows = [old_rows + (1.0 if remap[i] is not None else 0.0) for i in range(count)]
        flags = [1.0 if failed[i] is not None else 0.0 for i in range(count)]
        for holder in dict.fromkeys(holders):
            labels = dict(gpu)
            if holder is not None:
                labels.update(exported_pod=holder, exported_namespace="training", exported_container="trainer")
                labels["pod_uid"] = f"{zlib.crc32(holder.encode()):08x}-0000-4000-8000-{seed:012x}"
            present = [scraped(i) and holders[i] == holder for i in range(count)]
            out.append(
                series(
                    "DCGM_FI_DEV_UNCORRECTABLE_REMAPPED_ROWS",
                    labels,
                    [r if p else None for r, p in zip(rows, present, strict=True)],
                )
            )
            out.append(
                series(
                    "DCGM_FI_DEV_ROW_REMAP_FAILURE",
                    labels,
                    [f if p else None for f, p in zip(flags, present, strict=True)],
                )
            )
    return out
