"""The owners registry and the project settings: who gets paged, how, and with what timing.

Parsed from schema-valid ``Owners`` and ``Project`` documents. Teams are registered even
from a document with problems elsewhere, so one typo does not also orphan every spec of
every other team.
"""

from __future__ import annotations

import os
from pathlib import PurePath
from typing import Any
from urllib.parse import urlsplit

from compiler import promql
from compiler.diagnostics import Diagnostics, Position
from compiler.model import (
    ALERTMANAGER_RETENTION_MS,
    DEFAULT_TIMING,
    OPSGENIE_API,
    Automation,
    Channel,
    ClusterProfile,
    ForeignAlerts,
    Heartbeat,
    Project,
    Receiver,
    RuleProfiles,
    Severity,
    Smtp,
    Team,
    Timing,
)
from compiler.model import heartbeat as hb
from compiler.model.links import CHANNELS as RECEIVER_CHANNELS
from compiler.model.links import automation_receiver, team_receiver
from compiler.source.conventions import read_project_conventions
from compiler.source.load import Document, PathKey
from compiler.source.scrape import read_scrape_profile

MINUTE = 60_000
DEFAULT_RUNBOOK_BASE = "https://runbooks.example.com/slo"
DEFAULT_GRAFANA_BASE = "https://grafana.example.com"
# Domains reserved for examples (RFC 2606): a link there reaches nobody's runbook or dashboard.
PLACEHOLDER_DOMAINS = ("example.com", "example.net", "example.org")
LINK_SETTINGS = (("runbook_base_url", DEFAULT_RUNBOOK_BASE), ("grafana_base_url", DEFAULT_GRAFANA_BASE))
CHANNELS: tuple[Channel, ...] = ("page", "ticket", "info", "shadow")
SEVERITIES: tuple[Severity, ...] = ("page", "ticket", "info")


def _timing(document: Document, key: PathKey, raw: Any, default: Timing, diagnostics: Diagnostics) -> Timing:
    if not isinstance(raw, dict):
        return default
    values = []
    for field, fallback in (
        ("group_wait", default.group_wait_ms),
        ("group_interval", default.group_interval_ms),
        ("repeat_interval", default.repeat_interval_ms),
    ):
        text = raw.get(field)
        parsed = promql.parse_duration(str(text)) if text is not None else fallback
        if parsed is None:
            diagnostics.error(document.position((*key, field)), f"{field} is not a duration: {text!r}")
            parsed = fallback
        values.append(parsed)
    timing = Timing(*values)
    if timing.group_interval_ms <= 0 or timing.repeat_interval_ms < timing.group_interval_ms:
        diagnostics.error(document.position(key), "repeat_interval must be at least group_interval, and both positive")
    if timing.repeat_interval_ms > ALERTMANAGER_RETENTION_MS:
        where = (*key, "repeat_interval") if "repeat_interval" in raw else key
        diagnostics.error(
            document.position(where),
            f"repeat_interval {raw.get('repeat_interval') or promql.format_duration(timing.repeat_interval_ms)} "
            "is longer than the "
            f"{ALERTMANAGER_RETENTION_MS // 3_600_000}h limit, the time Alertmanager keeps its notification log "
            "(--data.retention default): it would forget the notification first and repeat it sooner than "
            "asked, and warns at start-up; use at most 120h (e.g. 96h)",
        )
    return timing


def _receivers(raw: Any) -> tuple[tuple[Channel, tuple[Receiver, ...]], ...]:
    if not isinstance(raw, dict):
        return ()
    result = []
    for channel in CHANNELS:
        entries = raw.get(channel)
        if not isinstance(entries, list):
            continue
        receivers = []
        for entry in entries:
            if isinstance(entry, dict) and len(entry) == 1:
                kind, settings = next(iter(entry.items()))
                if isinstance(settings, dict):
                    pairs = tuple(sorted((str(k), v) for k, v in settings.items() if isinstance(v, str | int)))
                    receivers.append(Receiver(kind, pairs))
        result.append((channel, tuple(receivers)))
    return tuple(result)


# Settings that Alertmanager 0.25 executes as Go templates for every notification (slack
# channel, email to and from: notify/slack, notify/email), or that become part of a Prometheus
# annotation template (the runbook URL). A template action in one of them passes
# `amtool check-config` and then fails every notification, or every annotation, at run time.
# Their values are names and addresses where braces are never legitimate, so a delimiter is
# rejected rather than escaped (free spec text, which may quote a template, is escaped instead).
# Not templated in 0.25, so not listed: webhook and automation URLs, smarthost, auth_username;
# pagerduty severity and opsgenie priority are enums in the schema.
_NOTIFICATION = "Alertmanager executes it as a template for every notification: it passes amtool check-config, "
TEMPLATED_RECEIVER_FIELDS: tuple[tuple[str, str, str], ...] = (
    ("slack", "channel", _NOTIFICATION + "then every notification to this receiver fails"),
    ("email", "to", _NOTIFICATION + "then every e-mail to this receiver fails"),
)
TEMPLATED_PROJECT_FIELDS: tuple[tuple[PathKey, str], ...] = (
    (("alertmanager", "smtp", "from"), _NOTIFICATION + "then every e-mail notification fails"),
)
# runbook_base_url and grafana_base_url are not listed: the project schema refuses braces in URLs.
TEMPLATE_DELIMITERS = ("{{", "}}")


def _reject_template_delimiters(
    document: Document, key: PathKey, value: Any, consequence: str, diagnostics: Diagnostics
) -> None:
    if isinstance(value, str) and any(delimiter in value for delimiter in TEMPLATE_DELIMITERS):
        field = ".".join(str(part) for part in key[-2:] if isinstance(part, str))
        diagnostics.error(
            document.position(key),
            f"{field} {value!r} contains a Go template delimiter ('{{{{' or '}}}}'); {consequence}. Remove the braces",
        )


def check_templated_fields(documents: list[Document], diagnostics: Diagnostics) -> None:
    """Reject template delimiters in every registry or project value that is executed as a template."""
    for document in documents:
        data = document.data
        if not isinstance(data, dict):
            continue
        if data.get("kind") == "Project":
            for key, consequence in TEMPLATED_PROJECT_FIELDS:
                _reject_template_delimiters(document, key, _lookup(data, key), consequence, diagnostics)
        if data.get("kind") == "Owners":
            for key, consequence in _receiver_fields(data):
                _reject_template_delimiters(document, key, _lookup(data, key), consequence, diagnostics)


def _receiver_fields(data: dict[str, Any]) -> list[tuple[PathKey, str]]:
    """The path of every templated receiver setting an Owners document could hold."""
    found: list[tuple[PathKey, str]] = []
    teams = data.get("teams")
    for index, team in enumerate(teams if isinstance(teams, list) else []):
        receivers = team.get("receivers") if isinstance(team, dict) else None
        for channel, entries in receivers.items() if isinstance(receivers, dict) else ():
            for position in range(len(entries) if isinstance(entries, list) else 0):
                for kind, field, consequence in TEMPLATED_RECEIVER_FIELDS:
                    found.append((("teams", index, "receivers", channel, position, kind, field), consequence))
    return found


def _lookup(data: Any, key: PathKey) -> Any:
    for part in key:
        if isinstance(data, dict) and isinstance(part, str):
            data = data.get(part)
        elif isinstance(data, list) and isinstance(part, int) and part < len(data):
            data = data[part]
        else:
            return None
    return data


def build_teams(documents: list[Document], project: Project, diagnostics: Diagnostics) -> dict[str, Team]:
    teams: dict[str, Team] = {}
    positions: dict[str, str] = {}
    for document in documents:
        if not (isinstance(document.data, dict) and document.data.get("kind") == "Owners"):
            continue
        raw_teams = document.data.get("teams")
        for index, raw in enumerate(raw_teams if isinstance(raw_teams, list) else []):
            name = raw.get("name") if isinstance(raw, dict) else None
            if not isinstance(name, str):
                continue
            where = document.position(("teams", index, "name"))
            if name in teams:
                diagnostics.error(where, f"duplicate team '{name}' (first defined at {positions[name]})")
                continue
            escalation = raw.get("escalation")
            timing_raw = raw.get("timing") if isinstance(raw.get("timing"), dict) else {}
            timing = tuple(
                (
                    severity,
                    _timing(
                        document,
                        ("teams", index, "timing", severity),
                        timing_raw[severity],
                        dict(project.timing)[severity],
                        diagnostics,
                    ),
                )
                for severity in SEVERITIES
                if severity in timing_raw
            )
            receivers = _receivers(raw.get("receivers"))
            if project.smtp is None:
                for channel, entries in receivers:
                    for position, receiver in enumerate(entries):
                        if receiver.kind == "email":
                            diagnostics.error(
                                document.position(("teams", index, "receivers", channel, position)),
                                "an email receiver needs the project's alertmanager.smtp settings",
                            )
            teams[name] = Team(
                name,
                str(raw.get("contact", "")),
                tuple(str(e) for e in escalation) if isinstance(escalation, list) else (),
                receivers,
                timing,
            )
            positions[name] = str(where)
    return teams


def is_placeholder(url: str) -> bool:
    """Whether ``url``'s host is a reserved example domain or under one."""
    try:
        host = (urlsplit(url).hostname or "").rstrip(".").lower()
    except ValueError:  # a malformed authority, such as an unclosed IPv6 bracket
        return False
    return any(host == domain or host.endswith(f".{domain}") for domain in PLACEHOLDER_DOMAINS)


def _placeholder_links(document: Document) -> tuple[tuple[str, ...], Position]:
    """The link settings left at an example domain (none when ``example_links: true``), and where to warn."""
    data = document.data
    if data.get("example_links") is True:
        return (), document.position(("kind",))
    keys = tuple(key for key, default in LINK_SETTINGS if is_placeholder(str(data.get(key, default))))
    written = [document.position((key,)) for key in keys if key in data]
    return keys, min(written) if written else document.position(("kind",))


def _specs_dir(documents: list[Document]) -> str:
    """The folder the documents were read from (their common parent), for a warning about a missing file."""
    parents = [str(PurePath(d.path).parent) for d in documents]
    try:
        return os.path.commonpath(parents) if parents else ""
    except ValueError:  # absolute and relative paths mixed
        return parents[0]


def _timings(document: Document, am: dict[str, Any], diagnostics: Diagnostics) -> tuple[tuple[Severity, Timing], ...]:
    """alertmanager.timing per severity, each field defaulted."""
    timing_value = am.get("timing")
    timing_raw: dict[str, Any] = timing_value if isinstance(timing_value, dict) else {}
    return tuple(
        (
            severity,
            _timing(
                document,
                ("alertmanager", "timing", severity),
                timing_raw.get(severity),
                DEFAULT_TIMING[severity],
                diagnostics,
            ),
        )
        for severity in SEVERITIES
    )


def _no_project(documents: list[Document]) -> Project:
    """The defaults, without project.yaml: every link a placeholder (when there are specs to link)."""
    return Project(
        runbook_base_url=DEFAULT_RUNBOOK_BASE,
        evaluation_interval_ms=MINUTE,
        placeholder_links=tuple(key for key, _ in LINK_SETTINGS) if documents else (),
        specs_dir=_specs_dir(documents),
    )


def build_project(documents: list[Document], diagnostics: Diagnostics) -> Project:
    projects = [d for d in documents if isinstance(d.data, dict) and d.data.get("kind") == "Project"]
    for document in projects[1:]:
        diagnostics.error(document.position(("kind",)), "only one Project document is allowed")
    if not projects:
        return _no_project(documents)
    document = projects[0]
    data = document.data
    interval = promql.parse_duration(str(data.get("evaluation_interval", "1m")))
    if interval is None or interval <= 0 or interval > 5 * MINUTE:
        diagnostics.error(
            document.position(("evaluation_interval",)), "evaluation_interval must be a duration from 1s to 5m"
        )
        interval = MINUTE
    am = _mapping(data.get("alertmanager"))
    timing = _timings(document, am, diagnostics)
    smtp = None
    smtp_raw = am.get("smtp")
    if isinstance(smtp_raw, dict) and "smarthost" in smtp_raw and "from" in smtp_raw:
        smtp = Smtp(
            smarthost=str(smtp_raw["smarthost"]),
            sender=str(smtp_raw["from"]),
            auth_username=smtp_raw.get("auth_username"),
            auth_password_file=smtp_raw.get("auth_password_file"),
            require_tls=bool(smtp_raw.get("require_tls", True)),
        )
    conventions = read_project_conventions(document, diagnostics)
    placeholders, placeholder_at = _placeholder_links(document)
    return Project(
        runbook_base_url=data.get("runbook_base_url", DEFAULT_RUNBOOK_BASE),
        evaluation_interval_ms=interval,
        grafana_base_url=data.get("grafana_base_url", DEFAULT_GRAFANA_BASE),
        timing=timing,
        resolve_timeout_ms=_resolve_timeout(document, am, diagnostics),
        smtp=smtp,
        automations=_automations(document, diagnostics),
        rule_profiles=_rule_profiles(_mapping(data.get("rule_profiles"))),
        cluster_profile=_cluster_profile(_mapping(data.get("cluster_profile"))),
        scrape_profile=read_scrape_profile(document, diagnostics),
        families=conventions.families,
        severity_labels=conventions.severity_labels,
        alert_labels=conventions.alert_labels,
        alert_annotations=conventions.alert_annotations,
        heartbeat=_heartbeat(document, diagnostics),
        foreign_alerts=_foreign_alerts(_mapping(data.get("foreign_alerts"))),
        position=document.position(("kind",)),
        placeholder_links=placeholders,
        placeholder_position=placeholder_at,
    )


# A Project document is read even when it fails its schema (its automations and timing
# still matter to every spec), so each reader below takes only values of the right type;
# the schema check has already reported the others.


def _mapping(value: Any) -> dict[str, Any]:
    return value if isinstance(value, dict) else {}


def _count(raw: dict[str, Any], key: str, default: int) -> int:
    """A positive integer setting, or its default when it is missing or not an integer."""
    value = raw.get(key)
    if isinstance(value, float) and value.is_integer():  # JSON Schema counts 7500.0 as an integer
        value = int(value)
    return value if isinstance(value, int) and not isinstance(value, bool) and value >= 1 else default


def _resolve_timeout(document: Document, am: dict[str, Any], diagnostics: Diagnostics) -> int:
    """Alertmanager's resolve_timeout: a positive duration (0s would resolve alerts the moment they arrive)."""
    value = am.get("resolve_timeout", "5m")
    parsed = promql.parse_duration(value) if isinstance(value, str) else None
    if parsed is not None and parsed <= 0:
        diagnostics.error(
            document.position(("alertmanager", "resolve_timeout")),
            "alertmanager.resolve_timeout must be positive (Alertmanager's default is 5m)",
        )
    return parsed if parsed else 5 * MINUTE


def _heartbeat(document: Document, diagnostics: Diagnostics) -> Heartbeat | None:
    """The heartbeat receiver and its interval (from 5s to 1h); None when not configured or not readable."""
    raw = _mapping(document.data.get("heartbeat"))
    receiver = _mapping(raw.get("receiver"))
    text = raw.get("interval", "1m")
    interval = promql.parse_duration(text) if isinstance(text, str) else None
    if interval is not None and not hb.MIN_INTERVAL_MS <= interval <= hb.MAX_INTERVAL_MS:
        diagnostics.error(
            document.position(("heartbeat", "interval")),
            f"heartbeat.interval {text} is outside the allowed 5s to 1h: shorter floods the heartbeat service, "
            "longer leaves a dead Prometheus unnoticed for that long",
        )
        interval = None
    if interval is None or len(receiver) != 1:
        return None
    webhook, opsgenie = _mapping(receiver.get("webhook")), _mapping(receiver.get("opsgenie"))
    if isinstance(webhook.get("url"), str):
        credentials = webhook.get("credentials_file")
        return Heartbeat("webhook", interval, url=webhook["url"], credentials_file=_text(credentials))
    if isinstance(opsgenie.get("name"), str) and isinstance(opsgenie.get("api_key_file"), str):
        api = opsgenie.get("api_url")
        return Heartbeat(
            "opsgenie",
            interval,
            url=api if isinstance(api, str) else OPSGENIE_API,
            name=opsgenie["name"],
            credentials_file=opsgenie["api_key_file"],
        )
    return None


def _text(value: Any) -> str | None:
    return value if isinstance(value, str) else None


def _foreign_alerts(raw: dict[str, Any]) -> ForeignAlerts | None:
    team, channel = raw.get("team"), raw.get("channel", "ticket")
    if not isinstance(team, str) or channel not in SEVERITIES:
        return None
    return ForeignAlerts(team, channel)


def check_foreign_alerts(documents: list[Document], teams: dict[str, Team], diagnostics: Diagnostics) -> None:
    """``foreign_alerts.team`` must be a team of the owners registry."""
    projects = [d for d in documents if isinstance(d.data, dict) and d.data.get("kind") == "Project"]
    team = _lookup(projects[0].data, ("foreign_alerts", "team")) if projects else None
    if isinstance(team, str) and team not in teams:
        known = ", ".join(sorted(teams)) or "none"
        diagnostics.error(
            projects[0].position(("foreign_alerts", "team")),
            f"foreign_alerts.team '{team}' is not a team of the owners registry (teams: {known})",
        )


def _automations(document: Document, diagnostics: Diagnostics) -> tuple[Automation, ...]:
    raw_list = document.data.get("automations")
    automations = []
    seen: set[str] = set()
    for index, raw in enumerate(raw_list if isinstance(raw_list, list) else []):
        if not isinstance(raw, dict) or not isinstance(raw.get("name"), str) or not isinstance(raw.get("url"), str):
            continue
        if raw["name"] in seen:
            diagnostics.error(
                document.position(("automations", index, "name")), f"duplicate automation '{raw['name']}'"
            )
        seen.add(raw["name"])
        credentials = raw.get("credentials_file")
        automations.append(
            Automation(
                raw["name"],
                raw["url"],
                credentials if isinstance(credentials, str) else None,
                str(raw.get("description", "")),
            )
        )
    return tuple(automations)


def _rule_profiles(raw: dict[str, Any]) -> RuleProfiles:
    operator, thanos, mimir = (raw.get(key) for key in ("prometheus_operator", "thanos", "mimir"))
    operator_labels = _mapping(operator.get("labels")) if isinstance(operator, dict) else {}
    return RuleProfiles(
        operator_namespace=operator.get("namespace") if isinstance(operator, dict) else None,
        operator_labels=tuple(sorted((k, v) for k, v in operator_labels.items() if isinstance(v, str))),
        thanos=isinstance(thanos, dict),
        thanos_partial_response=thanos.get("partial_response_strategy") if isinstance(thanos, dict) else None,
        mimir_tenant=mimir.get("tenant") if isinstance(mimir, dict) else None,
        vmalert=isinstance(raw.get("vmalert"), dict),
    )


def _cluster_profile(raw: dict[str, Any]) -> ClusterProfile:
    defaults = ClusterProfile()
    cardinality = _mapping(raw.get("label_cardinality"))
    return ClusterProfile(
        name=str(raw.get("name", defaults.name)),
        clusters=_count(raw, "clusters", defaults.clusters),
        nodes=_count(raw, "nodes", defaults.nodes),
        node_pools=_count(raw, "node_pools", defaults.node_pools),
        zones=_count(raw, "zones", defaults.zones),
        apiservers=_count(raw, "apiservers", defaults.apiservers),
        watched_resources=_count(raw, "watched_resources", defaults.watched_resources),
        label_cardinality=tuple(sorted((label, _count(cardinality, label, 1)) for label in cardinality)),
        default_label_cardinality=_count(raw, "default_label_cardinality", defaults.default_label_cardinality),
        default_series_budget=_count(raw, "default_series_budget", defaults.default_series_budget),
    )


def check_receiver_names(documents: list[Document], teams: dict[str, Team], diagnostics: Diagnostics) -> None:
    """Team and automation receivers share one namespace: team 'automation' has 'automation-page',
    and so does automation 'page'. Alertmanager refuses a config with duplicate receiver names."""
    team_positions: dict[str, str] = {}
    for document in documents:
        if isinstance(document.data, dict) and document.data.get("kind") == "Owners":
            raw_teams = document.data.get("teams")
            for index, raw in enumerate(raw_teams if isinstance(raw_teams, list) else []):
                name = raw.get("name") if isinstance(raw, dict) else None
                if isinstance(name, str) and name in teams:
                    team_positions.setdefault(name, str(document.position(("teams", index, "name"))))
    owners = {team_receiver(team, channel): team for team in teams for channel in RECEIVER_CHANNELS}
    projects = [d for d in documents if isinstance(d.data, dict) and d.data.get("kind") == "Project"]
    raw_list = projects[0].data.get("automations") if projects else None
    for index, raw in enumerate(raw_list if isinstance(raw_list, list) else []):
        name = raw.get("name") if isinstance(raw, dict) else None
        if not isinstance(name, str):
            continue
        receiver = automation_receiver(name)
        team = owners.get(receiver)
        if team is not None:
            diagnostics.error(
                projects[0].position(("automations", index, "name")),
                f"automation '{name}' gets the Alertmanager receiver '{receiver}', which team '{team}' "
                f"({team_positions.get(team, 'owners')}) also gets; rename the automation or the team",
            )
