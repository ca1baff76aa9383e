"""The dead man's switch: the heartbeat alert every evaluator fires, and where it goes.

Every monitoring-health spec runs on the Prometheus it judges, so when that Prometheus
OOM-loops, or Alertmanager is down, nothing pages and the silence looks like health. Each
rule engine the rule profiles target (plain Prometheus always, then the operator's
Prometheus, Thanos Ruler, Mimir's ruler, vmalert) evaluates an always-firing alert labelled
``slo_compiler="heartbeat"`` and ``evaluator="<its name>"``; Alertmanager sends it, and only
it, to the project's heartbeat service every ``heartbeat.interval``, and that service
alerts when the pings stop. The rules, the routes, the routing tests and the runbook all
take their names from here.
"""

from __future__ import annotations

from dataclasses import dataclass

from compiler.model import Project
from compiler.model import labels as lbl

ALERT_NAME = "SloCompilerHeartbeat"
LABEL_VALUE = "heartbeat"  # slo_compiler="heartbeat": not "true", so no team route or inhibit rule ever matches it
EVALUATOR = lbl.EVALUATOR
SEVERITY = "none"  # as kube-prometheus's Watchdog: a value no severity route of a merged config expects
GROUP_NAME = "slo-compiler.heartbeat"  # a dot: no spec's group (slo-<spec name, a DNS label>) can be named so
RUNBOOK_PATH = "runbooks/HEARTBEAT.md"  # upper case: no spec's runbook (<spec name>.md) can be named so
DEFAULT_INTERVAL_MS = 60_000
MIN_INTERVAL_MS = 5_000
MAX_INTERVAL_MS = 3_600_000
STEM = "slo-compiler-heartbeat"


@dataclass(frozen=True)
class Evaluator:
    """One rule engine the heartbeat runs on: its ``evaluator`` label value and its rule file."""

    name: str
    rule_file: str  # inside generated/, in a heartbeat/ folder next to that engine's spec files


def evaluators(project: Project) -> tuple[Evaluator, ...]:
    """Every engine the project writes rules for, plain Prometheus first."""
    profiles = project.rule_profiles
    found = [Evaluator("prometheus", f"prometheus/heartbeat/{STEM}.rules.yaml")]
    if profiles.operator_namespace:
        found.append(Evaluator("prometheus-operator", f"prometheus-operator/heartbeat/{STEM}.yaml"))
    if profiles.thanos:
        found.append(Evaluator("thanos-ruler", f"thanos/heartbeat/{STEM}.rules.yaml"))
    if profiles.mimir_tenant:
        found.append(Evaluator("mimir-ruler", f"mimir/{profiles.mimir_tenant}/heartbeat/{STEM}.yaml"))
    if profiles.vmalert:
        found.append(Evaluator("vmalert", f"vmalert/heartbeat/{STEM}.rules.yaml"))
    return tuple(found)


def receiver(evaluator: str) -> str:
    """The Alertmanager receiver of one evaluator's heartbeat (team receivers end in a channel, so never this)."""
    return f"heartbeat-{evaluator}"


def runbook_url(project: Project) -> str:
    return f"{project.runbook_base_url}/{RUNBOOK_PATH.removeprefix('runbooks/')}"


def repeat_interval_ms(interval_ms: int) -> int:
    """Half the interval, in whole seconds: shorter than ``group_interval`` so every flush sends.

    Alertmanager re-sends a group only when it flushes (every ``group_interval``) and only if
    ``repeat_interval`` has passed since the last notification was logged, which is after the
    send: with both equal the check misses by the send's latency and every other flush is
    skipped (measured on 0.25: gaps of 10s for a 5s interval). Shorter, every flush sends.
    """
    return max(1_000, interval_ms // 2 // 1_000 * 1_000)


def labels(evaluator: str) -> dict[str, str]:
    """One evaluator's heartbeat labels, alert name included: the rules write them, the routes match them."""
    return {
        lbl.ALERTNAME: ALERT_NAME,
        lbl.SEVERITY: SEVERITY,
        lbl.SLO_COMPILER: LABEL_VALUE,
        EVALUATOR: evaluator,
    }
