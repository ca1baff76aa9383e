"""Who watches the watcher: the warnings about alerts nobody would see (``validate`` exits 0 with them).

Two silences look like health. Without ``heartbeat``, every monitoring-health spec runs on the
Prometheus it judges, so a Prometheus that OOM-loops, or an Alertmanager that is down, pages
nobody. Without ``foreign_alerts``, the generated root receiver has no
integrations, so an alert the compiler did not make (kube-prometheus's, an exporter's) that
reaches this configuration is dropped. Both are warnings, not errors: a project that merges
``fragment.yaml`` into its own configuration keeps its own root and may run its own watchdog.

Links that lead nowhere are a warning as well: a ``runbook_base_url`` or ``grafana_base_url``
left at a reserved example domain (example.com, the default without project.yaml) puts a dead
link in every alert and runbook; one warning names the settings (``example_links: true`` says a
demo library's links are examples on purpose).

The opposite noise is a warning too: a spec sliced per unit (``instance``, ``node``, ``pod``,
``device``, unless ``slice.cardinality`` declares only a few) without ``fleet:`` pages once
per unit, so one switch fault under 300 nodes opens 300 incidents; ``fleet:`` makes one unit
a ticket and many units one page.
"""

from __future__ import annotations

from dataclasses import dataclass

from compiler.diagnostics import Position
from compiler.model import SLO, Project
from compiler.text.terminal import printable


@dataclass(frozen=True, order=True)
class PlanWarning:
    """A warning at the Project document (None: there is none), printed as ``path:line:col: warning: ...``;
    without a position, at ``where`` (a folder) when given, else as slo-compiler's own."""

    position: Position | None
    message: str
    where: str = ""

    def __str__(self) -> str:
        if self.position is not None:
            return f"{self.position}: warning: {self.message}"
        return f"{printable(self.where or 'slo-compiler')}: warning: {self.message}"


NO_HEARTBEAT = (
    "nothing watches the watcher: no heartbeat is configured, so when Prometheus stops evaluating "
    "(OOM-looping, down) or Alertmanager is down, nobody is paged and the silence looks like health; "
    'set heartbeat.receiver in project.yaml (docs/project.md: "Watching the watcher")'
)
FOREIGN_DROPPED = (
    'the root receiver drops alerts the compiler did not make (without slo_compiler="true", e.g. '
    "kube-prometheus's): its receiver 'unrouted' has no integrations; set foreign_alerts "
    "in project.yaml to send them to a team, or merge fragment.yaml into your own configuration"
)


# What each link setting fills in, for the placeholder warning.
LINKS_SET_BY = {
    "runbook_base_url": "the runbook link in every alert",
    "grafana_base_url": "the dashboard links in every runbook",
}


def placeholder_links_warning(project: Project) -> PlanWarning | None:
    """One warning naming the link settings left at an example domain, and the key that sets each."""
    if not project.placeholder_links:
        return None
    links = " and ".join(f"{key} ({LINKS_SET_BY[key]})" for key in project.placeholder_links)
    if project.position is None:
        return PlanWarning(
            None,
            f"no project.yaml here, so links are example.com placeholders that reach no runbook or dashboard: "
            f"set {links} in a project.yaml (kind: Project) in this folder",
            project.specs_dir,
        )
    return PlanWarning(
        project.placeholder_position,
        f"placeholder links: {links} point at an example domain, which reaches no runbook or dashboard; "
        "set them to where yours are published, or set example_links: true if they are examples on purpose",
    )


def watch_warnings(project: Project) -> tuple[PlanWarning, ...]:
    found = []
    if project.heartbeat is None:
        found.append(PlanWarning(project.position, NO_HEARTBEAT))
    if project.foreign_alerts is None:
        found.append(PlanWarning(project.position, FOREIGN_DROPPED))
    placeholders = placeholder_links_warning(project)
    if placeholders is not None:
        found.append(placeholders)
    return tuple(found)


# Slice labels that name one unit of a fleet: a page per value is a page per machine, pod or disk.
PER_UNIT_LABELS = {"instance": "instances", "node": "nodes", "pod": "pods", "device": "devices"}
FAULT_UNITS = 300  # the example fault's size in the warning: a switch or a bad rollout under a rack
# A unit label whose slice.cardinality declares at most this many values (five etcd members)
# pages at most that many times: a page per unit is then the intent, not a storm.
FEW_UNITS = 10


def per_unit_labels(slo: SLO) -> list[str]:
    """The slice labels that name one unit of a fleet (more than FEW_UNITS of them), in ``slice.by`` order."""
    declared = dict(slo.slice.cardinality)
    return [
        label for label in slo.slice.by if label in PER_UNIT_LABELS and declared.get(label, FAULT_UNITS) > FEW_UNITS
    ]


def per_unit_page_warning(slo: SLO, severities: tuple[str, ...]) -> PlanWarning | None:
    """A spec without ``fleet:`` sliced by a per-unit label pages once per unit: a warning at ``slice.by``."""
    declared = dict(slo.slice.cardinality)
    units = per_unit_labels(slo)
    if slo.fleet is not None or not units or "page" not in severities:
        return None
    count = min(declared.get(units[0], FAULT_UNITS), FAULT_UNITS)
    return PlanWarning(
        slo.slice.by_at or slo.position,
        f"slice.by has {', '.join(units)}, so {slo.name} pages once per {units[0]}: a fault on {count:,} "
        f"{PER_UNIT_LABELS[units[0]]} would page {count:,} times; judge the units as a fleet (`fleet:`) so one "
        'unit is a ticket and many are one page (docs/spec-reference.md: "Fleet signals")',
    )
