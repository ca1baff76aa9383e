"""The label names the compiler writes or routes on, defined once.

The Prometheus target puts these on recorded series and alerts, the Alertmanager target
matches on them, and the spec check refuses them as slice labels: a slice label of the
same name would be overwritten by the rule (its slices collapse into duplicate series,
which Prometheus rejects) or would steer routing from scraped data (a series labelled
``shadow="true"`` would hide a live page in the shadow channel). Deriving the reserved set
from the same constants the targets use means a new label cannot be added to one and
forgotten in the other.
"""

from __future__ import annotations

# On every recorded series and every alert.
SLO = "slo"
# On every alert and on slo_info.
TEAM = "team"
FAMILY = "family"
# On every alert: the routing key per severity.
SEVERITY = "severity"
# On every alert: marks it as ours, so our routes and inhibit rules match only our alerts
# even when merged into a config whose own alerts also carry team and severity (a
# kube-prometheus CoreDNSDown{team="platform-network", severity="critical"} must not reach
# our receivers). A label of its own, not ``slo``: other generators (Pyrra) write ``slo`` too.
SLO_COMPILER = "slo_compiler"
SLO_COMPILER_VALUE = "true"
# On alerts of a shadow spec ("true"), and of a live spec with an automated mitigation.
SHADOW = "shadow"
AUTOMATION = "automation"
# On burn-rate alerts: which window pair fired.
LONG_WINDOW = "long_window"
SHORT_WINDOW = "short_window"
BURN_FACTOR = "burn_factor"
# On the conditions' recorded series (which condition) and on a broken assumption's ticket (which assumption).
CONDITION = "condition"
ASSUMPTION = "assumption"
# On the heartbeat alert: which evaluator (engine) it comes from; its routes match on it.
EVALUATOR = "evaluator"
# On slo_info only: which spec version and objective produced the rules.
SPEC_HASH = "spec_hash"
OBJECTIVE = "objective"
PERIOD = "period"
# A helper label that keeps the terms of a summed ``or`` apart (dropped by the sum).
TERM = "__slo_term"
# Labels with a value per node, pod or container: slicing by one multiplies the series by thousands.
HIGH_CARDINALITY = frozenset({"node", "pod", "instance", "container", "pod_ip", "uid"})
# Which total selector a series of a ratio's recorded parts (``slo:sli_parts:rate5m``) comes from.
PART = "slo_part"

# Prometheus's own: the metric name, the alert name and state on ALERTS, histogram buckets.
METRIC_NAME = "__name__"
ALERTNAME = "alertname"
ALERTSTATE = "alertstate"
BUCKET_BOUND = "le"
INTERNAL_PREFIX = "__"  # Prometheus reserves every label name starting with two underscores

RECORDED_LABELS = frozenset({SLO, CONDITION})
INFO_LABELS = frozenset({SLO, TEAM, FAMILY, SPEC_HASH, OBJECTIVE, PERIOD})
ALERT_LABELS = frozenset(
    {SEVERITY, TEAM, SLO, FAMILY, SLO_COMPILER, SHADOW, AUTOMATION, LONG_WINDOW, SHORT_WINDOW, BURN_FACTOR, ASSUMPTION}
)
ROUTING_LABELS = frozenset({ALERTNAME, SLO, SEVERITY, TEAM, SLO_COMPILER, SHADOW, AUTOMATION, EVALUATOR})
PROMETHEUS_LABELS = frozenset({METRIC_NAME, ALERTNAME, ALERTSTATE, BUCKET_BOUND})

_WHY: tuple[tuple[frozenset[str], str], ...] = (
    (ALERT_LABELS, "the compiler sets it on the alerts"),
    (INFO_LABELS, "the compiler sets it on slo_info"),
    (ROUTING_LABELS, "Alertmanager routes and inhibits on it"),
    (PROMETHEUS_LABELS, "Prometheus itself uses it"),
    (frozenset({PART}), "the compiler sets it on a ratio's recorded parts"),
)

RESERVED_LABELS: frozenset[str] = RECORDED_LABELS.union(*(names for names, _ in _WHY))


def reserved_because(name: str) -> str | None:
    """Why ``name`` cannot be a slice label, or None when it can."""
    reasons = [why for names, why in _WHY if name in names]
    if name.startswith(INTERNAL_PREFIX):
        reasons.append("Prometheus reserves names starting with '__' for internal use")
    return "; ".join(reasons) or None


# The annotations the compiler writes on every alert (``mitigation_steps`` on automated ones):
# a team's extra annotations may add others but never replace these, which the notification
# templates, the runbook links and the automation webhooks read.
SUMMARY = "summary"
DESCRIPTION = "description"
RUNBOOK_URL = "runbook_url"
MITIGATION = "mitigation"
MITIGATION_STEPS = "mitigation_steps"
HOLDS_BACK = "holds_back"  # on an alert whose spec explains others: what Alertmanager holds back while it fires
COMPILER_ANNOTATIONS = frozenset({SUMMARY, DESCRIPTION, RUNBOOK_URL, MITIGATION, MITIGATION_STEPS, HOLDS_BACK})
