"""TypedDicts of the spec language, generated from ``compiler/schemas/*.json`` by ``typegen``.

Do not edit: change the schema and run ``python -m compiler.source.typegen``.
"""

from __future__ import annotations

from typing import Any, Literal, NotRequired, Required, TypedDict


class SLOSpecAlertNames(TypedDict, total=False):
    """Full alert names per alert kind, for a migrated alert whose name silences and routes already use; a
    kind not listed keeps alert_name plus its suffix (ErrorBudgetBurn, AboveNormalRange,
    BelowNormalRange, AboveCriticalRange, BelowCriticalRange, NoData, SliceVanished).
    """
    burn: NotRequired[str]
    above_normal: NotRequired[str]
    below_normal: NotRequired[str]
    above_critical: NotRequired[str]
    below_critical: NotRequired[str]
    no_data: NotRequired[str]
    vanished: NotRequired[str]


class SLOJoin(TypedDict, total=False):
    """Attach slice labels from an info metric (e.g. node pool from kube_node_labels) before aggregating."""
    metric: Required[str]
    on: Required[list[str]]
    labels: Required[list[str]]


class SLOSlice(TypedDict, total=False):
    """The label dimensions the signal is judged and alerted per, and which series count."""
    by: Required[list[str]]
    component: NotRequired[str]
    selector: NotRequired[str]
    join: NotRequired[SLOJoin | list[SLOJoin]]
    cardinality: NotRequired[dict[str, int]]
    optional_labels: NotRequired[list[str]]


class SLOSliRatio(TypedDict, total=False):
    """Events from counters: bad (or good) over total, per second over 5m."""
    bad: NotRequired[str | list[str]]
    good: NotRequired[str | list[str]]
    total: Required[str | list[str]]


class SLOThreshold(TypedDict, total=False):
    when: NotRequired[str]
    le: Required[int | float]


class SLOSliLatency(TypedDict, total=False):
    """Good = requests in the histogram bucket at the threshold; bad = the rest (plus optional error
    events).
    """
    histogram: Required[str]
    selector: NotRequired[str]
    threshold: Required[int | float | list[SLOThreshold]]
    buckets: NotRequired[list[int | float]]
    buckets_override: NotRequired[bool]
    on_dropped_edge: NotRequired[Literal['error', 'next_kept_above']]
    errors: NotRequired[str | list[str]]
    total: NotRequired[str | list[str]]


class SLOSliState(TypedDict, total=False):
    """A 0/1 state per unit (1 = good), counted as availability (unit-time in the good state)."""
    expr: Required[str]


class SLOSliGauge(TypedDict, total=False):
    """A value judged against the normal range."""
    expr: Required[str]
    aggregate: NotRequired[Literal['sum', 'max', 'min', 'avg']]
    absent_as_zero_while: NotRequired[str]


class SLOSliQuantile(TypedDict, total=False):
    """A histogram quantile over 5m, judged against the normal range (which must stay below the top finite
    bucket edge).
    """
    histogram: Required[str]
    selector: NotRequired[str]
    quantile: Required[int | float]
    buckets: NotRequired[list[int | float]]
    buckets_override: NotRequired[bool]


SLOSliStaleness = TypedDict(
    "SLOSliStaleness",
    {
        "timestamp": Required[str],
        "while": NotRequired[str],
        "aggregate": NotRequired[Literal['max', 'min', 'avg']],
    },
    total=False,
)


class SLOSli(TypedDict, total=False):
    ratio: NotRequired[SLOSliRatio]
    latency: NotRequired[SLOSliLatency]
    state: NotRequired[SLOSliState]
    gauge: NotRequired[SLOSliGauge]
    quantile: NotRequired[SLOSliQuantile]
    staleness: NotRequired[SLOSliStaleness]


SLOBurnAlert = TypedDict(
    "SLOBurnAlert",
    {
        "severity": Required[Literal['page', 'ticket', 'info']],
        "long": Required[str],
        "short": Required[str],
        "for": NotRequired[str],
        "keep_firing_for": NotRequired[str],
        "factor": NotRequired[int | float],
        "budget_share": NotRequired[str | int | float],
    },
    total=False,
)


class SLOObjective(TypedDict, total=False):
    target: Required[str | int | float]
    period: Required[str]
    burn_policy: NotRequired[Literal['default', 'sloth']]
    burn_alerts: NotRequired[list[SLOBurnAlert]]
    traffic_guard: NotRequired[bool | str | int | float]


class SLORangeRelative(TypedDict, total=False):
    offset: Required[str]
    max_factor: NotRequired[int | float]
    min_factor: NotRequired[int | float]
    floor: NotRequired[int | float]
    normal: NotRequired[int | float]
    hold: NotRequired[str]


SLORange = TypedDict(
    "SLORange",
    {
        "min": NotRequired[int | float],
        "max": NotRequired[int | float],
        "relative": NotRequired[SLORangeRelative],
        "severity": NotRequired[Literal['page', 'ticket', 'info']],
        "for": NotRequired[str],
        "keep_firing_for": NotRequired[str],
        "reason": NotRequired[str],
        "min_bad_events": NotRequired[int | float],
    },
    total=False,
)


SLOPersistence = TypedDict(
    "SLOPersistence",
    {
        "for": Required[str],
        "keep_firing_for": NotRequired[str],
    },
    total=False,
)


SLONoDataVanished = TypedDict(
    "SLONoDataVanished",
    {
        "enabled": NotRequired[bool],
        "window": NotRequired[str],
        "for": NotRequired[str],
        "severity": NotRequired[Literal['page', 'ticket', 'info']],
    },
    total=False,
)


SLONoData = TypedDict(
    "SLONoData",
    {
        "for": NotRequired[str],
        "severity": NotRequired[Literal['page', 'ticket', 'info']],
        "enabled": NotRequired[bool],
        "vanished": NotRequired[SLONoDataVanished],
    },
    total=False,
)


class SLOMitigation(TypedDict, total=False):
    summary: Required[str]
    steps: Required[list[str]]
    stop_conditions: Required[list[str]]
    escalation: Required[str]
    automation: NotRequired[str]


SLOSegment = TypedDict(
    "SLOSegment",
    {
        "for": Required[str],
        "value": NotRequired[int | float],
        "error_ratio": NotRequired[int | float],
        "ramp_to": NotRequired[int | float],
        "rate": NotRequired[int | float],
        "gap": NotRequired[Literal[True]],
    },
    total=False,
)


class SLOExpectation(TypedDict, total=False):
    alert: NotRequired[str]
    fires_by: NotRequired[str]
    silent_until: NotRequired[str]
    nothing_fires_until: NotRequired[str]


class SLOScenario(TypedDict, total=False):
    name: Required[str]
    description: NotRequired[str]
    slice: NotRequired[dict[str, str]]
    shape: Required[list[SLOSegment]]
    expect: Required[list[SLOExpectation]]


class SLOSpecExplainsComponent(TypedDict, total=False):
    """For a spec that watches its slice.component's targets (availability): while its alert fires, the
    alerts and no-data alerts of every other spec with the same slice.component are inhibited for the
    slices that share the `equal` labels.
    """
    equal: Required[list[str]]
    severity: NotRequired[Literal['page', 'ticket', 'any']]


class SLOSpecFleetPage(TypedDict, total=False):
    """When the slice's critical page fires, from the count of its units beyond the critical range: at
    least `units` of them, at least `share` of the slice's units (in a slice of at least `min_units`),
    or, with `require: both`, both.
    """
    units: NotRequired[int]
    share: NotRequired[str | int | float]
    min_units: NotRequired[int]
    require: NotRequired[Literal['either', 'both']]


SLOSpecFleet = TypedDict(
    "SLOSpecFleet",
    {
        "units": Required[list[str]],
        "page": Required[SLOSpecFleetPage],
        "for": NotRequired[str],
    },
    total=False,
)


class SLOSpecExplainsItem(TypedDict, total=False):
    slo: Required[str]
    equal: Required[list[str]]
    severity: NotRequired[Literal['page', 'ticket', 'any']]


SLOSpecAssumesItem = TypedDict(
    "SLOSpecAssumesItem",
    {
        "name": Required[str],
        "expr": Required[str],
        "component": NotRequired[str],
        "why": Required[str],
        "otherwise": Required[str],
        "for": NotRequired[str],
    },
    total=False,
)


class SLOSpecConfirmedByItem(TypedDict, total=False):
    name: Required[str]
    expr: Required[str]
    component: NotRequired[str]
    why: Required[str]


class SLOSpec(TypedDict, total=False):
    """One signal: who owns it, how it is sliced, its normal range, how long it may be out of range, what
    to do when it is, what it measures and, where it has an error budget, its objective.
    """
    apiVersion: Required[Literal['slo-compiler/v1']]
    kind: Required[Literal['SLO']]
    name: Required[str]
    alert_name: NotRequired[str]
    alert_names: NotRequired[SLOSpecAlertNames]
    family: Required[str]
    owner: Required[str]
    description: Required[str]
    k8s_versions: NotRequired[str]
    unit: NotRequired[Literal['ratio', 'seconds', 'bytes', 'bytes_per_second', 'per_second', 'count']]
    slice: Required[SLOSlice]
    sli: Required[SLOSli]
    objective: NotRequired[SLOObjective]
    normal_range: NotRequired[SLORange]
    critical_range: NotRequired[SLORange]
    persistence: NotRequired[SLOPersistence]
    no_data: NotRequired[SLONoData]
    mitigation: Required[SLOMitigation]
    see_also: NotRequired[list[str]]
    scenarios: NotRequired[list[SLOScenario]]
    mode: NotRequired[Literal['live', 'shadow']]
    explains_component: NotRequired[SLOSpecExplainsComponent]
    fleet: NotRequired[SLOSpecFleet]
    explains: NotRequired[list[SLOSpecExplainsItem]]
    assumes: NotRequired[list[SLOSpecAssumesItem]]
    confirmed_by: NotRequired[list[SLOSpecConfirmedByItem]]
    series_budget: NotRequired[int]
    labels: NotRequired[dict[str, str]]
    annotations: NotRequired[dict[str, str]]


class ProjectTiming(TypedDict, total=False):
    group_wait: NotRequired[str]
    group_interval: NotRequired[str]
    repeat_interval: NotRequired[str]


class ProjectSpecAlertmanagerTiming(TypedDict, total=False):
    """Notification timing per severity (teams may override)."""
    page: NotRequired[ProjectTiming]
    ticket: NotRequired[ProjectTiming]
    info: NotRequired[ProjectTiming]


ProjectSpecAlertmanagerSmtp = TypedDict(
    "ProjectSpecAlertmanagerSmtp",
    {
        "smarthost": Required[str],
        "from": Required[str],
        "auth_username": NotRequired[str],
        "auth_password_file": NotRequired[str],
        "require_tls": NotRequired[bool],
        "auth_password": NotRequired[Any],
    },
    total=False,
)


class ProjectSpecAlertmanager(TypedDict, total=False):
    timing: NotRequired[ProjectSpecAlertmanagerTiming]
    resolve_timeout: NotRequired[str]
    smtp: NotRequired[ProjectSpecAlertmanagerSmtp]


class ProjectSpecHeartbeatReceiverWebhook(TypedDict, total=False):
    """A dead man's switch service pinged by an HTTP POST (healthchecks.io, Dead Man's Snitch, Cronitor,
    your own). Every evaluator pings the same URL; the payload's labels name the evaluator.
    """
    url: Required[str]
    credentials_file: NotRequired[str]
    url_file: NotRequired[Any]


class ProjectSpecHeartbeatReceiverOpsgenie(TypedDict, total=False):
    """Opsgenie heartbeats, one per evaluator, named <name>-<evaluator> (create them in Opsgenie), pinged
    at <api_url>/v2/heartbeats/<name>-<evaluator>/ping with the API key as 'Authorization: GenieKey'.
    """
    name: Required[str]
    api_key_file: Required[str]
    api_url: NotRequired[Literal['https://api.opsgenie.com', 'https://api.eu.opsgenie.com']]
    api_key: NotRequired[Any]


class ProjectSpecHeartbeatReceiver(TypedDict, total=False):
    webhook: NotRequired[ProjectSpecHeartbeatReceiverWebhook]
    opsgenie: NotRequired[ProjectSpecHeartbeatReceiverOpsgenie]
    pagerduty: NotRequired[Any]


class ProjectSpecHeartbeat(TypedDict, total=False):
    """A dead man's switch: every rule engine the rule profiles target evaluates an always-firing heartbeat
    alert, which Alertmanager sends only to this receiver every interval; the heartbeat service alerts
    when the pings stop (the evaluator or Alertmanager is down). Without it, validate warns that nothing
    watches the watcher.
    """
    receiver: Required[ProjectSpecHeartbeatReceiver]
    interval: NotRequired[str]


class ProjectSpecForeignAlerts(TypedDict, total=False):
    """Where alerts the compiler did not make (no slo_compiler label) go: a team's receiver for a channel
    (default ticket). Without it the generated root receiver has no integrations and drops them, and
    validate warns. fragment.yaml never carries this: there your own root decides.
    """
    team: Required[str]
    channel: NotRequired[Literal['page', 'ticket', 'info']]


class ProjectSpecAlertsSeverity(TypedDict, total=False):
    """The value of the severity label for each severity of the spec language (default: the same word),
    e.g. page: critical, ticket: warning for kube-prometheus conventions. Routes and inhibitions match
    these values; each must be distinct.
    """
    page: NotRequired[str]
    ticket: NotRequired[str]
    info: NotRequired[str]


class ProjectSpecAlerts(TypedDict, total=False):
    """Conventions every alert follows, so the output fits the team's existing Alertmanager, silences and
    dashboards.
    """
    severity: NotRequired[ProjectSpecAlertsSeverity]
    labels: NotRequired[dict[str, str]]
    annotations: NotRequired[dict[str, str]]


class ProjectSpecFamiliesItem(TypedDict, total=False):
    name: Required[str]
    title: Required[str]


class ProjectSpecAutomationsItem(TypedDict, total=False):
    name: Required[str]
    url: Required[str]
    credentials_file: NotRequired[str]
    description: NotRequired[str]


class ProjectSpecRuleProfilesPrometheusOperator(TypedDict, total=False):
    """PrometheusRule objects, one per spec."""
    namespace: Required[str]
    labels: NotRequired[dict[str, str]]


class ProjectSpecRuleProfilesThanos(TypedDict, total=False):
    """Thanos Ruler rule files."""
    partial_response_strategy: NotRequired[Literal['warn', 'abort']]


class ProjectSpecRuleProfilesMimir(TypedDict, total=False):
    """Mimir/Cortex ruler namespaces (mimirtool format), one namespace per team."""
    tenant: Required[str]


class ProjectSpecRuleProfilesVmalert(TypedDict, total=False):
    """VictoriaMetrics vmalert 1.79 rule files (no keep_firing_for: vmalert 1.79 rejects it)."""


class ProjectSpecRuleProfiles(TypedDict, total=False):
    """Rule formats for the engines the platform runs, written next to the plain Prometheus 2.42 rule files
    (which are always written: the promtool tests use them).
    """
    prometheus_operator: NotRequired[ProjectSpecRuleProfilesPrometheusOperator]
    thanos: NotRequired[ProjectSpecRuleProfilesThanos]
    mimir: NotRequired[ProjectSpecRuleProfilesMimir]
    vmalert: NotRequired[ProjectSpecRuleProfilesVmalert]


class ProjectSpecClusterProfile(TypedDict, total=False):
    """The cluster the rules run against, for estimating how many series each spec's recording rules
    produce.
    """
    name: NotRequired[str]
    clusters: NotRequired[int]
    nodes: NotRequired[int]
    node_pools: NotRequired[int]
    zones: NotRequired[int]
    apiservers: NotRequired[int]
    watched_resources: NotRequired[int]
    label_cardinality: NotRequired[dict[str, int]]
    default_label_cardinality: NotRequired[int]
    default_series_budget: NotRequired[int]


class ProjectSpecScrapeProfile(TypedDict, total=False):
    """The monitoring stack the rules run on: each component's job matchers and the histogram bucket edges
    the stack's relabelings drop. Specs name a component (slice.component) instead of a job value, and a
    latency threshold on a dropped edge is refused.
    """
    stack: Required[Literal['kube-prometheus-stack', 'kube-prometheus', 'custom']]
    components: NotRequired[dict[str, str]]
    dropped_buckets: NotRequired[dict[str, list[int | float]]]
    relabeling: NotRequired[str]


class ProjectSpec(TypedDict, total=False):
    apiVersion: Required[Literal['slo-compiler/v1']]
    kind: Required[Literal['Project']]
    runbook_base_url: NotRequired[str]
    example_links: NotRequired[bool]
    evaluation_interval: NotRequired[str]
    grafana_base_url: NotRequired[str]
    alertmanager: NotRequired[ProjectSpecAlertmanager]
    heartbeat: NotRequired[ProjectSpecHeartbeat]
    foreign_alerts: NotRequired[ProjectSpecForeignAlerts]
    alerts: NotRequired[ProjectSpecAlerts]
    families: NotRequired[list[ProjectSpecFamiliesItem]]
    automations: NotRequired[list[ProjectSpecAutomationsItem]]
    rule_profiles: NotRequired[ProjectSpecRuleProfiles]
    cluster_profile: NotRequired[ProjectSpecClusterProfile]
    scrape_profile: NotRequired[ProjectSpecScrapeProfile]


class OwnersReceiverPagerduty(TypedDict, total=False):
    routing_key_file: Required[str]
    severity: NotRequired[Literal['critical', 'error', 'warning', 'info']]
    routing_key: NotRequired[Any]
    service_key: NotRequired[Any]


class OwnersReceiverSlack(TypedDict, total=False):
    api_url_file: Required[str]
    channel: Required[str]
    api_url: NotRequired[Any]


class OwnersReceiverEmail(TypedDict, total=False):
    to: Required[str]
    auth_password: NotRequired[Any]


class OwnersReceiverWebhook(TypedDict, total=False):
    url: Required[str]
    credentials_file: NotRequired[str]
    max_alerts: NotRequired[int]


class OwnersReceiverOpsgenie(TypedDict, total=False):
    api_key_file: Required[str]
    priority: NotRequired[Literal['P1', 'P2', 'P3', 'P4', 'P5']]
    api_key: NotRequired[Any]


class OwnersReceiver(TypedDict, total=False):
    pagerduty: NotRequired[OwnersReceiverPagerduty]
    slack: NotRequired[OwnersReceiverSlack]
    email: NotRequired[OwnersReceiverEmail]
    webhook: NotRequired[OwnersReceiverWebhook]
    opsgenie: NotRequired[OwnersReceiverOpsgenie]


class OwnersSpecTeamsItemReceivers(TypedDict, total=False):
    """Where this team's alerts go, per severity. Secrets only by reference (*_file paths); `info` defaults
    to `ticket`, `shadow` (specs in shadow mode) defaults to recording only.
    """
    page: Required[list[OwnersReceiver]]
    ticket: Required[list[OwnersReceiver]]
    info: NotRequired[list[OwnersReceiver]]
    shadow: NotRequired[list[OwnersReceiver]]


class OwnersTiming(TypedDict, total=False):
    group_wait: NotRequired[str]
    group_interval: NotRequired[str]
    repeat_interval: NotRequired[str]


class OwnersSpecTeamsItemTiming(TypedDict, total=False):
    """Per-severity overrides of the project's notification timing."""
    page: NotRequired[OwnersTiming]
    ticket: NotRequired[OwnersTiming]
    info: NotRequired[OwnersTiming]


class OwnersSpecTeamsItem(TypedDict, total=False):
    name: Required[str]
    contact: Required[str]
    escalation: NotRequired[list[str]]
    receivers: Required[OwnersSpecTeamsItemReceivers]
    timing: NotRequired[OwnersSpecTeamsItemTiming]


class OwnersSpec(TypedDict, total=False):
    apiVersion: Required[Literal['slo-compiler/v1']]
    kind: Required[Literal['Owners']]
    teams: Required[list[OwnersSpecTeamsItem]]
