"""Who watches the watcher: the warnings about alerts nobody would see (``validate`` exits 0 with them).

Two silences look like health. Without ``heartbeat``, every monitoring-health spec runs on the
Prometheus it judges, so a Prometheus that OOM-loops, or an Alertmanager that is down, pages
nobody. Without ``foreign_alerts``, the generated root receiver has no
integrations, so an alert the compiler did not make (kube-prometheus's, an exporter's) that
reaches this configuration is dropped. Both are warnings, not errors: a project that merges
``fragment.yaml`` into its own configuration keeps its own root and may run its own watchdog.
"""

from __future__ import annotations

from dataclasses import dataclass

from compiler.diagnostics import Position
from compiler.model import Project


@dataclass(frozen=True, order=True)
class PlanWarning:
    """A warning at the Project document (None: there is none), printed as ``path:line:col: warning: ...``."""

    position: Position | None
    message: str

    def __str__(self) -> str:
        where = f"{self.position}: " if self.position is not None else "slo-compiler: "
        return f"{where}warning: {self.message}"


NO_HEARTBEAT = (
    "nothing watches the watcher: no heartbeat is configured, so when Prometheus stops evaluating "
    "(OOM-looping, down) or Alertmanager is down, nobody is paged and the silence looks like health; "
    'set heartbeat.receiver in project.yaml (README: "Watching the watcher")'
)
FOREIGN_DROPPED = (
    'the root receiver drops alerts the compiler did not make (without slo_compiler="true", e.g. '
    "kube-prometheus's): its receiver 'unrouted' has no integrations; set foreign_alerts "
    "in project.yaml to send them to a team, or merge fragment.yaml into your own configuration"
)


def watch_warnings(project: Project) -> tuple[PlanWarning, ...]:
    found = []
    if project.heartbeat is None:
        found.append(PlanWarning(project.position, NO_HEARTBEAT))
    if project.foreign_alerts is None:
        found.append(PlanWarning(project.position, FOREIGN_DROPPED))
    return tuple(found)
