"""The compiler's intermediate representation: frozen, typed, free of YAML and of PromQL text layout.

Every target reads only this model. Durations are integer milliseconds so that
arithmetic on windows is exact; ratios are floats already converted from percent.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Literal, get_args

from compiler.diagnostics import Position
from compiler.model.stacks import ScrapeProfile
from compiler.promql import Matcher
from compiler.text.numbers import clean_number, complement, product

Severity = Literal["page", "ticket", "info"]
SEVERITIES: tuple[Severity, ...] = ("page", "ticket", "info")
# The alerts of one spec, by kind (and band side and level): the keys of a spec's alert_names.
AlertKey = Literal[
    "burn",
    "above_normal",
    "below_normal",
    "above_critical",
    "below_critical",
    "no_data",
    "unit_above_critical",  # a fleet's per-unit tickets: named by the compiler, not by alert_names
    "unit_below_critical",
    "vanished",
    "assumption",  # a broken assumption's ticket: named by the compiler, not by alert_names
]
ALERT_KEYS: tuple[AlertKey, ...] = get_args(AlertKey)
Labels = tuple[tuple[str, str], ...]
Unit = Literal["ratio", "seconds", "bytes", "bytes_per_second", "per_second", "count"]


@dataclass(frozen=True)
class Selector:
    """A metric selector whose matchers already include the slice selector."""

    metric: str | None
    matchers: tuple[Matcher, ...]


ReceiverKind = Literal["pagerduty", "slack", "email", "webhook", "opsgenie"]
Channel = Literal["page", "ticket", "info", "shadow"]


@dataclass(frozen=True)
class Receiver:
    """One notification integration; secrets are only ever file paths."""

    kind: ReceiverKind
    settings: tuple[tuple[str, str | int], ...]

    def get(self, key: str) -> str | int | None:
        return dict(self.settings).get(key)


@dataclass(frozen=True)
class Timing:
    group_wait_ms: int
    group_interval_ms: int
    repeat_interval_ms: int


@dataclass(frozen=True)
class Team:
    name: str
    contact: str
    escalation: tuple[str, ...]
    # page, ticket, info and shadow; info falls back to ticket, shadow to no integration at all
    receivers: tuple[tuple[Channel, tuple[Receiver, ...]], ...] = ()
    timing: tuple[tuple[Severity, Timing], ...] = ()

    def receivers_for(self, channel: Channel) -> tuple[Receiver, ...]:
        found = dict(self.receivers)
        if channel in found:
            return found[channel]
        if channel == "info":
            return found.get("ticket", ())
        return ()


@dataclass(frozen=True)
class Join:
    """Attach ``labels`` from ``info`` (matched ``on``) before aggregating by slice."""

    info: Selector
    on: tuple[str, ...]
    labels: tuple[str, ...]


@dataclass(frozen=True)
class Slice:
    by: tuple[str, ...]
    matchers: tuple[Matcher, ...]
    joins: tuple[Join, ...]  # applied in order; a later join may match on labels an earlier one attached
    cardinality: tuple[tuple[str, int], ...] = ()  # declared distinct values per label, for series budgets
    component: str | None = None  # the scrape-profile component the spec reads (slice.component)
    # where slice.component is written, for the plan's notes
    component_at: Position | None = field(default=None, compare=False)
    by_at: Position | None = field(default=None, compare=False)  # where slice.by is written, for the plan's warnings
    # slice labels a supported version leaves off (slice.optional_labels): preflight notes, not problems
    optional_labels: tuple[str, ...] = ()

    @property
    def joined_labels(self) -> tuple[str, ...]:
        """Labels the joins attach (absent from the raw series)."""
        return tuple(dict.fromkeys(label for join in self.joins for label in join.labels))

    @property
    def source_labels(self) -> tuple[str, ...]:
        """Labels the raw series must carry: slice labels not attached by a join, and what joins match on."""
        attached: set[str] = set()
        needed: list[str] = [label for label in self.by if label not in self.joined_labels]
        for join in self.joins:
            needed += [label for label in join.on if label not in attached]
            attached.update(join.labels)
        return tuple(dict.fromkeys(needed))


@dataclass(frozen=True)
class RatioSLI:
    """Bad (or good) events over total events, from counters."""

    bad: tuple[Selector, ...]
    good: tuple[Selector, ...]
    total: tuple[Selector, ...]


@dataclass(frozen=True)
class LatencyThreshold:
    le: float
    when: tuple[Matcher, ...]
    fallback: EdgeFallback | None = None  # set when ``le`` replaces a declared edge the stack drops


@dataclass(frozen=True)
class EdgeFallback:
    """A threshold whose declared edge the stack drops, read at the nearest kept edge above instead.

    Only when the spec says so (``on_dropped_edge: next_kept_above``); the plan turns it into a
    note and the runbook and ``explain`` say which edge is read and why.
    """

    declared: float
    stack: str
    relabeling: str  # where the stack drops the edge
    histogram: str
    position: Position = field(compare=False)  # the threshold's ``le`` in the spec


@dataclass(frozen=True)
class LatencySLI:
    """Good events are those in the bucket at the threshold; bad = total - good + errors."""

    histogram: str
    matchers: tuple[Matcher, ...]
    thresholds: tuple[LatencyThreshold, ...]
    buckets: tuple[float, ...]
    errors: tuple[Selector, ...]
    total: tuple[Selector, ...]


@dataclass(frozen=True)
class StateSLI:
    """A 0/1 state per unit (1 = good); availability is good unit-time over all unit-time."""

    expr: str


@dataclass(frozen=True)
class GaugeSLI:
    expr: str
    aggregate: str
    # PromQL with a series above 0 per slice while the component is up: the value is 0 there when
    # expr has no series (its counters are created on their first event), absent when it is gone.
    absent_as_zero_while: str | None = None


@dataclass(frozen=True)
class QuantileSLI:
    histogram: str
    matchers: tuple[Matcher, ...]
    quantile: float
    buckets: tuple[float, ...]


@dataclass(frozen=True)
class StalenessSLI(GaugeSLI):
    """Seconds since a timestamp gauge advanced: ``expr`` is ``time() - (timestamp)``.

    A gauge to every target (rules, runbooks, dashboards read ``expr``); only the generated
    tests need ``timestamp``, to feed a gauge whose value follows the evaluation clock, which
    the steady-state evaluator cannot derive from ``time()``.
    """

    timestamp: str = ""
    busy: str | None = None  # ``while``: the unit has work to do; otherwise it reads 0 (idle, not stuck)


SLI = RatioSLI | LatencySLI | StateSLI | GaugeSLI | QuantileSLI
EVENT_SLIS = (RatioSLI, LatencySLI, StateSLI)


@dataclass(frozen=True)
class BurnAlert:
    """One window pair of the multi-window, multi-burn-rate policy."""

    severity: Severity
    long_ms: int
    short_ms: int
    factor: float
    for_ms: int
    keep_firing_for_ms: int


@dataclass(frozen=True)
class Objective:
    target: float  # e.g. 0.995
    period_ms: int
    burn_alerts: tuple[BurnAlert, ...]
    traffic_guard: float = 1.0  # share of each pair's budget share its long window must spend; 0 is off

    @property
    def budget(self) -> float:
        """The error budget, 1 - target, computed in decimal (0.001% for 99.999%, without binary noise)."""
        return complement(self.target)

    def guard_share(self, burn: BurnAlert) -> float:
        """The share of the period's budget, in events, a pair's long window must hold before it alerts.

        The pair's own share (``factor x long / period``) times ``traffic_guard``: under
        steady traffic it is the ratio condition again; after traffic drops to a trickle
        the window's few bad events are a negligible share of the budget, and it holds back.
        """
        return self.traffic_guard * burn.factor * burn.long_ms / self.period_ms

    def threshold(self, burn: BurnAlert) -> float:
        """The error ratio a window pair alerts above: its factor times the budget, in decimal (exact, as a
        person multiplies the spec's numbers: 14.4 x 0.00001 is 0.000144)."""
        return product(burn.factor, self.budget)


@dataclass(frozen=True)
class Relative:
    """A bound against the value's own baseline: the value ``offset`` ago, held while the bound is crossed.

    Factors and the floor are crossed at equality (10x or more is a herd). ``hold_ms`` caps how
    long a crossing is judged against the pre-crossing baseline; ``normal`` is the documented
    normal level the generated tests drive a herd from.
    """

    offset_ms: int
    max_factor: float | None
    min_factor: float | None
    floor: float
    hold_ms: int = 0
    normal: float | None = None


@dataclass(frozen=True)
class Range:
    minimum: float | None
    maximum: float | None
    relative: Relative | None
    severity: Severity
    for_ms: int
    keep_firing_for_ms: int
    reason: str
    # Ratio and latency SLIs: the bad events the 5m window must hold too (a traffic floor), None for none.
    min_bad_events: float | None = None


@dataclass(frozen=True)
class Vanished:
    """A slice that had series within ``window_ms`` and has none now, while the spec still has others."""

    window_ms: int
    for_ms: int
    severity: Severity


@dataclass(frozen=True)
class NoData:
    enabled: bool
    for_ms: int
    severity: Severity
    vanished: Vanished | None = None  # None: no per-slice vanished alert


@dataclass(frozen=True)
class Mitigation:
    summary: str
    steps: tuple[str, ...]
    stop_conditions: tuple[str, ...]
    escalation: str
    automation: str | None = None  # a project automation webhook that runs it


@dataclass(frozen=True)
class Explains:
    """While this spec alerts (at ``severity``), the ``slo`` spec's alerts with equal labels are inhibited."""

    slo: str
    equal: tuple[str, ...]
    severity: Literal["page", "ticket", "any"]


@dataclass(frozen=True)
class ExplainsComponent:
    """While this spec alerts, every other spec reading its ``slice.component`` is inhibited (availability)."""

    equal: tuple[str, ...]
    severity: Literal["page", "ticket", "any"]


ASSUMPTION_MEMORY_MS = 24 * 60 * 60 * 1000
"""How long an assumption counts as holding after it was last seen to hold.

An assumption is a fact about the deployment (a bind address, a managed control plane), not
a signal: an outage that takes its series away with the rest (every target down) must not
also break the assumption and silence the page. A day of memory tells "never seen holding
here" (broken) from "stopped holding during this incident" (holds).
"""
DEFAULT_ASSUMPTION_FOR_MS = 60 * 60 * 1000  # a broken assumption's ticket waits this long unless ``for`` says


@dataclass(frozen=True)
class Condition:
    """A condition a spec's pages need, checked at run time (``assumes`` and ``confirmed_by``).

    ``expr`` returns a series per slice (with the slice labels) while the condition holds. An
    assumption (``kind`` "assumes") is a fact about the deployment, remembered for
    ``ASSUMPTION_MEMORY_MS``; while it is broken the spec's pages stay silent and its own ticket
    fires. A confirmation (``confirmed_by``) is a second signal read now: a page needs it, and
    its absence raises nothing.
    """

    kind: Literal["assumes", "confirmed_by"]
    name: str
    expr: str  # with the slice's matchers injected, as the rules read it
    why: str
    otherwise: str = ""  # assumptions: what to do where it does not hold
    for_ms: int = DEFAULT_ASSUMPTION_FOR_MS  # assumptions: how long broken before the ticket
    position: Position | None = field(default=None, compare=False)  # the entry in the spec


@dataclass(frozen=True)
class Fleet:
    """Per-unit judging of the critical range: a ticket per unit beyond it, a page per slice only for many.

    ``units`` tell the units of a slice apart (``instance``, ``device``, ``node``). The page
    fires when at least ``page_units`` units are beyond the critical range, or when at least
    ``page_share`` of them are in a slice of at least ``min_units`` units (with
    ``require_both``: only when both the count and the share hold); never for one unit.
    """

    units: tuple[str, ...]
    page_units: int | None
    page_share: float | None  # a fraction, 0 < share <= 1
    min_units: int | None  # set whenever page_share is and either condition pages
    require_both: bool = False
    unit_for_ms: int | None = None  # the per-unit tickets' ``for``; None: the critical range's

    def describe(self) -> str:
        """The page condition in words: ``at least 3 units and 5% of the slice``."""
        count = f"at least {self.page_units} units" if self.page_units is not None else ""
        share = ""
        if self.page_share is not None:
            share = f"{clean_number(self.page_share * 100):g}% of the slice"
            if self.min_units is not None:
                share += f" (of {self.min_units} or more units)"
        if count and share:
            return f"{count} {'and' if self.require_both else 'or'} {share}"
        return count or f"at least {share}"

    def pages(self, units: int, out: int) -> bool:
        """Whether a slice of ``units`` units with ``out`` of them out of range pages (as the rule decides)."""
        by_count = self.page_units is not None and out >= self.page_units
        by_share = self.page_share is not None and units > 0 and out / units >= self.page_share
        big_enough = self.min_units is None or units >= self.min_units
        if self.require_both:
            return by_count and by_share and big_enough
        return by_count or (by_share and big_enough)


@dataclass(frozen=True)
class Segment:
    """One stretch of a scenario's input: held constant, ramped, or missing."""

    minutes: int
    value: float | None  # gauge value, or error ratio for event SLIs; None for a gap
    rate: float | None  # ratio and latency SLIs: total events per second
    ramp: bool
    gap: bool


@dataclass(frozen=True)
class Expectation:
    """``firing``: alert fires at the time; ``silent``: it does not; ``nothing``: no alert fires up to it."""

    kind: Literal["firing", "silent", "nothing"]
    alert: str | None
    at_ms: int


@dataclass(frozen=True)
class Scenario:
    name: str
    description: str
    slice_values: tuple[tuple[str, str], ...]
    segments: tuple[Segment, ...]
    expectations: tuple[Expectation, ...]


@dataclass(frozen=True)
class SLO:
    name: str
    alert_name: str
    family: str
    owner: Team
    description: str
    k8s_versions: str
    unit: Unit
    slice: Slice
    sli: SLI
    objective: Objective | None
    normal_range: Range | None
    critical_range: Range | None
    no_data: NoData
    mitigation: Mitigation
    see_also: tuple[str, ...]
    scenarios: tuple[Scenario, ...]
    mode: Literal["live", "shadow"]
    explains: tuple[Explains, ...]
    series_budget: int | None
    source: str
    position: Position  # where the spec's SLI is written, for problems found by targets
    spec_hash: str
    labels: Labels = ()  # extra alert labels of this spec (the project's come first in the plan)
    annotations: Labels = ()  # extra alert annotations of this spec, literal text
    alert_names: tuple[tuple[AlertKey, str], ...] = ()  # full alert names that replace prefix + suffix
    explains_component: ExplainsComponent | None = None  # expanded into ``explains`` by the project checks
    fleet: Fleet | None = None  # the critical range judged per unit (see ``Fleet``)
    assumes: tuple[Condition, ...] = ()  # what the pages rely on about the deployment
    confirmed_by: tuple[Condition, ...] = ()  # second signals every page needs (any one of them)

    @property
    def page_conditions(self) -> tuple[Condition, ...]:
        """Every condition that gates this spec's pages: its assumptions, then its confirmations."""
        return (*self.assumes, *self.confirmed_by)

    @property
    def counts_events(self) -> bool:
        """Whether the SLI is a good/bad event ratio (so it can carry an error budget)."""
        return isinstance(self.sli, EVENT_SLIS)


@dataclass(frozen=True)
class Automation:
    name: str
    url: str
    credentials_file: str | None
    description: str


@dataclass(frozen=True)
class Smtp:
    smarthost: str
    sender: str
    auth_username: str | None
    auth_password_file: str | None
    require_tls: bool


HeartbeatKind = Literal["webhook", "opsgenie"]
OPSGENIE_API = "https://api.opsgenie.com"


@dataclass(frozen=True)
class Heartbeat:
    """The dead man's switch: where Alertmanager pings, per evaluator, every ``interval_ms``.

    ``webhook``: every evaluator pings ``url`` (the payload's labels name it), with
    ``credentials_file`` as a bearer token when given. ``opsgenie``: one heartbeat per
    evaluator, ``<name>-<evaluator>``, pinged with ``credentials_file`` as the GenieKey.
    """

    kind: HeartbeatKind
    interval_ms: int
    url: str = ""  # webhook: the ping URL; opsgenie: the API's base URL
    name: str = ""  # opsgenie: the heartbeats' name prefix
    credentials_file: str | None = None

    def ping_url(self, evaluator: str) -> str:
        if self.kind == "opsgenie":
            return f"{self.url}/v2/heartbeats/{self.name}-{evaluator}/ping"
        return self.url

    def service_name(self, evaluator: str) -> str:
        """What the heartbeat service calls this evaluator's heartbeat, for the runbook."""
        return f"Opsgenie heartbeat {self.name}-{evaluator}" if self.kind == "opsgenie" else "the webhook heartbeat"


@dataclass(frozen=True)
class ForeignAlerts:
    """Where alerts the compiler did not make go: a team's receiver for one channel."""

    team: str
    channel: Channel = "ticket"


DEFAULT_TIMING: dict[Severity, Timing] = {
    "page": Timing(30_000, 5 * 60_000, 4 * 3_600_000),
    "ticket": Timing(5 * 60_000, 30 * 60_000, 24 * 3_600_000),
    "info": Timing(10 * 60_000, 60 * 60_000, 4 * 24 * 3_600_000),
}
# Alertmanager keeps its notification log for --data.retention (120h by default, 0.25): a longer
# repeat_interval is forgotten first, so the notification repeats sooner than asked, and Alertmanager
# warns about every such route at start-up.
ALERTMANAGER_RETENTION_MS = 120 * 3_600_000


@dataclass(frozen=True)
class ClusterProfile:
    """The cluster the rules run on, for series estimates; defaults describe a 7,500-node cluster."""

    name: str = "7,500-node GPU cluster"
    clusters: int = 1
    nodes: int = 7500
    node_pools: int = 24
    zones: int = 3
    apiservers: int = 5
    watched_resources: int = 60
    label_cardinality: tuple[tuple[str, int], ...] = ()
    default_label_cardinality: int = 10
    default_series_budget: int = 2000


@dataclass(frozen=True)
class RuleProfiles:
    """Engine-specific rule outputs beyond plain Prometheus 2.42 rule files."""

    operator_namespace: str | None = None
    operator_labels: tuple[tuple[str, str], ...] = ()
    thanos_partial_response: str | None = None  # warn | abort; None: no Thanos output
    thanos: bool = False
    mimir_tenant: str | None = None
    vmalert: bool = False


@dataclass(frozen=True)
class Family:
    """A group of specs shown together in dashboards and runbook indexes."""

    name: str
    title: str


# The three families of the default library, in display order.
DEFAULT_FAMILIES: tuple[Family, ...] = (
    Family("scheduling-api-latency", "Scheduling and API latency"),
    Family("watch-list-volume", "Apiserver watch/list volume"),
    Family("node-network-errors", "Node and network error budgets"),
)


@dataclass(frozen=True)
class Project:
    runbook_base_url: str
    evaluation_interval_ms: int
    grafana_base_url: str = "https://grafana.example.com"
    timing: tuple[tuple[Severity, Timing], ...] = tuple(DEFAULT_TIMING.items())
    resolve_timeout_ms: int = 5 * 60_000
    smtp: Smtp | None = None
    automations: tuple[Automation, ...] = ()
    rule_profiles: RuleProfiles = RuleProfiles()
    cluster_profile: ClusterProfile = ClusterProfile()
    # The stack the rules run on (job matchers per component, dropped bucket edges); None: not named.
    scrape_profile: ScrapeProfile | None = None
    families: tuple[Family, ...] = DEFAULT_FAMILIES
    # The value of the ``severity`` label per severity (kube-prometheus: page -> critical).
    severity_labels: tuple[tuple[Severity, str], ...] = tuple((severity, severity) for severity in SEVERITIES)
    alert_labels: Labels = ()  # extra labels on every alert
    alert_annotations: Labels = ()  # extra annotations on every alert, literal text
    heartbeat: Heartbeat | None = None  # None: nothing watches the watcher (validate warns)
    foreign_alerts: ForeignAlerts | None = None  # None: the root receiver drops them (validate warns)
    # Where the Project document is (its kind), for the warnings about the two above; None: no project.yaml.
    position: Position | None = field(default=None, compare=False)
    # The link settings (runbook_base_url, grafana_base_url) left at a reserved example domain
    # (example.com, .net, .org), set or by default; validate and generate warn once.
    placeholder_links: tuple[str, ...] = ()
    # Where that warning points: the first placeholder value in project.yaml, else the Project
    # document; None without project.yaml (then ``specs_dir`` names where it is missing).
    placeholder_position: Position | None = field(default=None, compare=False)
    specs_dir: str = field(default="", compare=False)

    def severity_label(self, severity: Severity) -> str:
        """The ``severity`` label value alerts of this severity carry, and routes match."""
        return dict(self.severity_labels)[severity]

    def severity_text(self, severity: Severity) -> str:
        """A severity as runbooks and dashboards show it: the emitted value, and the channel when it differs."""
        value = self.severity_label(severity)
        return value if value == severity else f"{value} ({severity})"

    def family_title(self, name: str) -> str:
        """The display title of a family (its name when the project gives none)."""
        return next((family.title for family in self.families if family.name == name), name)

    def family_order(self, used: set[str]) -> list[str]:
        """Families in display order: declared ones first, then any other used ones by name."""
        declared = [family.name for family in self.families]
        return [name for name in declared if name in used] + sorted(used - set(declared))

    def timing_for(self, team: Team, severity: Severity) -> Timing:
        return dict(team.timing).get(severity) or dict(self.timing)[severity]


@dataclass(frozen=True)
class Model:
    project: Project
    teams: tuple[Team, ...]
    slos: tuple[SLO, ...]  # sorted by name
