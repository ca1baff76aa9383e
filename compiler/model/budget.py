"""Series budgets: how many series each spec's recording rules produce on the target cluster.

Unbounded cardinality is the tempting shortcut that breaks monitoring at 7,500 nodes. The
estimate multiplies the distinct values of each slice label (from the project's cluster
profile) by the series the spec records per slice. Slicing by a per-node or per-pod label
multiplies by thousands, so it needs an explicit budget in the spec.
"""

from __future__ import annotations

import math
from dataclasses import dataclass

from compiler.model import SLO, ClusterProfile
from compiler.model import labels as lbl
from compiler.model.queries import ratio_unit_parts, total_parts, unit_parts
from compiler.model.series import recorded_names, unit_names

HIGH_CARDINALITY = lbl.HIGH_CARDINALITY
# Slice labels that partition the nodes: a node is in one pool and one zone, so per-node units
# of a pool-by-zone slice are the cluster's nodes once, not once per pool and zone.
NODE_PARTITIONS = frozenset(
    {"node_pool", "label_node_pool", "zone", "label_topology_kubernetes_io_zone", "topology_kubernetes_io_zone"}
)


def label_cardinality(profile: ClusterProfile, label: str) -> int:
    """Distinct values of ``label`` on the profiled cluster (explicit settings win over the guesses)."""
    explicit = dict(profile.label_cardinality)
    if label in explicit:
        return explicit[label]
    guesses = {
        "cluster": profile.clusters,
        "node": profile.nodes,
        "instance": profile.nodes,
        "pod": profile.nodes * 30,
        "container": profile.nodes * 60,
        "node_pool": profile.node_pools,
        "label_node_pool": profile.node_pools,
        "zone": profile.zones,
        "label_topology_kubernetes_io_zone": profile.zones,
        "topology_kubernetes_io_zone": profile.zones,
        "resource": profile.watched_resources,
        "kind": profile.watched_resources,
        "type": profile.watched_resources,
        "apiserver": profile.apiservers,
        "scope": 3,
        "verb": 14,
        "code": 12,
        "priority_level": 8,
        "flow_schema": 12,
        "reason": 4,
        "device": 4,
        "port": 2,  # an HCA's ports (node_infiniband_*): 1 or 2
        "Hostname": profile.nodes,  # dcgm-exporter's node name (NODE_NAME)
        "gpu": 8,  # a GPU node's GPUs (dcgm-exporter's index)
        "UUID": 1,  # one board per (Hostname, gpu): the only spec reading it units by all three
        "profile": 2,
        "queue": 4,
        "operation": 6,
        "server": 2,
        "rcode": 6,
        "operation_type": 20,
    }
    return guesses.get(label, profile.default_label_cardinality)


@dataclass(frozen=True)
class Estimate:
    slo: str
    family: str
    slices: int
    series_per_slice: int
    series: int
    budget: int
    high_cardinality: tuple[str, ...]
    unit_series: int = 0  # a fleet's per-unit series, counted in ``series``
    parts_series: int = 0  # recorded parts (``queries.ratio_parts``, ``queries.unit_parts``), counted in ``series``

    @property
    def over(self) -> bool:
        return self.series > self.budget


def estimate(slo: SLO, profile: ClusterProfile) -> Estimate:
    declared = dict(slo.slice.cardinality)
    slices = math.prod(declared.get(label) or label_cardinality(profile, label) for label in slo.slice.by)
    per_slice = len(recorded_names(slo))
    units = unit_series(slo, profile)
    parts = slices * parts_per_slice(slo, profile) + unit_parts_series(slo, units)
    unit_labels = slo.fleet.units if slo.fleet is not None else ()
    return Estimate(
        slo=slo.name,
        family=slo.family,
        slices=slices,
        series_per_slice=per_slice,
        series=slices * per_slice + units + parts + 1,  # + slo_info
        budget=slo.series_budget or profile.default_series_budget,
        high_cardinality=tuple(
            label for label in (*slo.slice.by, *unit_labels) if label in HIGH_CARDINALITY and label not in declared
        ),
        unit_series=units,
        parts_series=parts,
    )


def parts_per_slice(slo: SLO, profile: ClusterProfile) -> int:
    """Recorded parts per slice (a ratio's, a latency SLI's): each value of the labels the bad selectors pick on.

    Per total selector.
    """
    parts = total_parts(slo)
    if parts is None:
        return 0
    declared = dict(slo.slice.cardinality)
    values = math.prod(declared.get(label) or label_cardinality(profile, label) for label in parts.labels)
    total = getattr(slo.sli, "total", ())
    return values * max(len(total), 1)


def unit_parts_series(slo: SLO, units: int) -> int:
    """A fleet's recorded parts per unit (``queries.unit_parts``, ``ratio_unit_parts``).

    Its rates, and the picked or bad ones apart: two series per unit (one when nothing is picked).
    """
    parts = unit_parts(slo)
    per_unit = units // max(len(unit_names(slo)), 1)
    if parts is None:
        return 2 * per_unit if ratio_unit_parts(slo) else 0
    return per_unit * (1 if parts.pick is None else 2)


def unit_series(slo: SLO, profile: ClusterProfile) -> int:
    """The per-unit series a fleet records: every unit once, times the slice labels that do not partition them.

    Per-node units (``node``, ``instance``) sliced by pool and zone are the cluster's nodes once;
    a slice label that does not partition the nodes multiplies them.
    """
    if slo.fleet is None:
        return 0
    declared = dict(slo.slice.cardinality)
    per_node = any(label in ("node", "instance") for label in slo.fleet.units)
    slice_factor = math.prod(
        declared.get(label) or label_cardinality(profile, label)
        for label in slo.slice.by
        if not (per_node and label in NODE_PARTITIONS)
    )
    units = math.prod(label_cardinality(profile, label) for label in slo.fleet.units)
    return slice_factor * units * len(unit_names(slo))
