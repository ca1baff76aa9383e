"""Alertmanager 0.25 configuration: routes, receivers and inhibit rules from the owners registry.

A pure function of the model. Every route and inhibit matcher requires
``slo_compiler="true"``, the label our rules put on every alert, so merged into an existing
configuration our routes never capture a foreign alert that happens to carry ``team`` and
``severity``. The root's receiver is where alerts the compiler did not make end: the team
receiver the project's ``foreign_alerts`` names, or else ``unrouted``, which has no
integrations (and ``validate`` warns that it drops them). A spec alert never ends there. The
route tree, in order:

* with a ``heartbeat``, one route per evaluator, ``slo_compiler="heartbeat"`` and
  ``evaluator="<name>"`` -> ``heartbeat-<name>``, grouped by every label, sent at once and
  then every ``heartbeat.interval``; first, and without ``continue``, so the heartbeat
  reaches nothing else (no team route matches it either: they need ``slo_compiler="true"``);
* one route per project automation, ``automation="<name>"`` -> ``automation-<name>``,
  with ``continue: true`` so the alert also reaches its owner;
* one route per team, ``team="<team>"`` (receiver ``<team>-ticket``, so an unexpected
  severity still reaches the owner), grouped by alertname, slo and the team's slice
  labels, with children ``shadow="true"`` -> ``<team>-shadow`` and then the ``severity``
  values the project emits for page, ticket and info -> ``<team>-<severity>``, each with
  the team's timing.

Inhibit rules: a spec's page silences its own ticket for the same slice, and an
``explains`` entry silences the explained spec while the cause alerts. Secrets are only
ever ``*_file`` paths from the registry. ``routing-tests.yaml`` lists, for every alert of
every spec, the receivers it must reach, derived from the intent above rather than from
the tree, so ``amtool config routes test`` checks one against the other; then each
evaluator's heartbeat, and one foreign alert per team (``team`` and ``severity`` but not
``slo_compiler``), which must fall through to the root.

``fragment.yaml`` carries the heartbeat routes and receivers but never the root: merged into
an existing configuration, that configuration's own root decides where foreign alerts go.
"""

from __future__ import annotations

from collections.abc import Mapping
from importlib import resources
from typing import Any

from compiler.model import SLO, Channel, Heartbeat, Model, Receiver, Severity, Team, Timing
from compiler.model import heartbeat as hb
from compiler.model import labels as lbl
from compiler.model.links import CHANNELS, automation_receiver, team_receiver
from compiler.model.naming import spec_alert_names
from compiler.plan import Plan
from compiler.promql import format_duration
from compiler.text.yamlout import dump

ALERTMANAGER_DIR = "alertmanager"
CONFIG_PATH = f"{ALERTMANAGER_DIR}/alertmanager.yaml"
FRAGMENT_PATH = f"{ALERTMANAGER_DIR}/fragment.yaml"
ROUTING_TESTS_PATH = f"{ALERTMANAGER_DIR}/routing-tests.yaml"
TEMPLATE_FILE = "slo-compiler.tmpl"
TEMPLATE_PATH = f"{ALERTMANAGER_DIR}/templates/{TEMPLATE_FILE}"
TEMPLATES_GLOB = "templates/*.tmpl"  # relative to the config file, as Alertmanager resolves it

UNROUTED = "unrouted"
ROOT_GROUP_BY = (lbl.ALERTNAME, lbl.SLO)
SEVERITIES: tuple[Severity, ...] = ("page", "ticket", "info")
_SEVERITY_CHANNEL: dict[str, Channel] = {severity: severity for severity in SEVERITIES}
SLICE_PLACEHOLDER = "x"  # any non-empty slice label value, for routing test cases
FOREIGN_ALERT = "CoreDNSDown"  # a kube-prometheus alert of another rule set, for the fall-through cases
OURS = f'{lbl.SLO_COMPILER}="{lbl.SLO_COMPILER_VALUE}"'  # the first matcher of every route and inhibit rule
HEARTBEAT = f'{lbl.SLO_COMPILER}="{hb.LABEL_VALUE}"'  # the first matcher of every heartbeat route
GROUP_BY_ALL = "..."  # Alertmanager's "every label": each evaluator instance (its external labels) pings on its own

TITLE = '{{ template "slo.title" . }}'
TEXT = '{{ template "slo.text" . }}'
EMAIL_SUBJECT = '{{ template "slo.email.subject" . }}'
EMAIL_HTML = '{{ template "slo.email.html" . }}'
PAGERDUTY_DESCRIPTION = '{{ template "slo.pagerduty.description" . }}'
OPSGENIE_MESSAGE = '{{ template "slo.opsgenie.message" . }}'
OPSGENIE_DESCRIPTION = '{{ template "slo.opsgenie.description" . }}'


# -- naming -----------------------------------------------------------------------------


def quote(value: str) -> str:
    """A matcher value in double quotes, escaped as Alertmanager's matcher parser unescapes it."""
    escaped = value.replace("\\", "\\\\").replace('"', '\\"').replace("\n", "\\n")
    return f'"{escaped}"'


def matcher(name: str, value: str, op: str = "=") -> str:
    return f"{name}{op}{quote(value)}"


def template_source() -> bytes:
    """The notification templates shipped with the compiler."""
    return resources.files("compiler").joinpath("templates", TEMPLATE_FILE).read_bytes()


# The templates print every label an alert carries but these as its slice.
_NOT_SLICE = (
    "^(alertname|severity|team|slo|family|slo_compiler|shadow|automation"
    "|long_window|short_window|burn_factor|assumption)$"
)


def notification_templates(alert_plan: Plan) -> bytes:
    """The templates, with the team's extra label names kept out of the slice line too.

    Extra labels are the same on every alert of a spec (``tier="1"``); printed as the slice
    they would read as the part of the system at fault (a name that is also some spec's slice
    label stays, since there it is the slice). Label names are ``[a-zA-Z_][a-zA-Z0-9_]*``,
    so they go into the regular expression as they are.
    """
    source = template_source()
    written = {name for spec in alert_plan for alert in spec.alerts for name, _ in alert.labels}
    slices = {label for spec in alert_plan for label in spec.slo.slice.by}  # another spec's slice still shows
    extra = sorted(written - lbl.ALERT_LABELS - slices)
    if not extra:
        return source
    wider = _NOT_SLICE.replace(")$", "|" + "|".join(extra) + ")$")
    filter_ = f'match "{_NOT_SLICE}"'.encode()
    if filter_ not in source:
        raise ValueError(f"{TEMPLATE_FILE} no longer filters the slice with {_NOT_SLICE}")  # pragma: no cover
    return source.replace(filter_, f'match "{wider}"'.encode())


# -- receivers --------------------------------------------------------------------------


def _integration(receiver: Receiver, channel: Channel) -> tuple[str, dict[str, Any]]:
    """One integration of a receiver: its ``*_configs`` key and its settings."""
    page = channel == "page"
    get = receiver.get
    config: dict[str, Any]
    if receiver.kind == "pagerduty":
        config = {
            "routing_key_file": get("routing_key_file"),
            "severity": get("severity") or ("critical" if page else "warning"),
            "description": PAGERDUTY_DESCRIPTION,
            "send_resolved": True,
        }
        return "pagerduty_configs", config
    if receiver.kind == "slack":
        config = {
            "api_url_file": get("api_url_file"),
            "channel": get("channel"),
            "title": TITLE,
            "text": TEXT,
            "fallback": TITLE,  # the default fallback prints raw label values into mrkdwn
            "send_resolved": True,
        }
        return "slack_configs", config
    if receiver.kind == "email":
        config = {
            "to": get("to"),
            "headers": {"Subject": EMAIL_SUBJECT},
            "html": EMAIL_HTML,
            "send_resolved": True,
        }
        return "email_configs", config
    if receiver.kind == "webhook":
        return "webhook_configs", _webhook(get("url"), get("credentials_file"), get("max_alerts"))
    if receiver.kind == "opsgenie":
        config = {
            "api_key_file": get("api_key_file"),
            "priority": get("priority") or ("P1" if page else "P3"),
            "message": OPSGENIE_MESSAGE,
            "description": OPSGENIE_DESCRIPTION,
            "send_resolved": True,
        }
        return "opsgenie_configs", config
    raise ValueError(f"unknown receiver kind {receiver.kind!r}")  # pragma: no cover


def _webhook(url: Any, credentials_file: Any, max_alerts: Any = None) -> dict[str, Any]:
    config: dict[str, Any] = {"url": url}
    if credentials_file:
        config["http_config"] = {"authorization": {"credentials_file": credentials_file}}
    if max_alerts is not None:
        config["max_alerts"] = max_alerts
    config["send_resolved"] = True
    return config


def _receiver(name: str, integrations: tuple[Receiver, ...], channel: Channel) -> dict[str, Any]:
    """A named receiver; with no integrations it notifies nobody."""
    result: dict[str, Any] = {"name": name}
    for receiver in integrations:
        key, config = _integration(receiver, channel)
        result.setdefault(key, []).append(config)
    return result


def _heartbeat_receiver(heartbeat: Heartbeat, evaluator: str) -> dict[str, Any]:
    """A webhook to the heartbeat service; never a resolved notification (a resolved heartbeat is a dead one)."""
    config: dict[str, Any] = {"url": heartbeat.ping_url(evaluator)}
    if heartbeat.credentials_file:
        authorization = {"credentials_file": heartbeat.credentials_file}
        if heartbeat.kind == "opsgenie":
            authorization = {"type": "GenieKey", **authorization}
        config["http_config"] = {"authorization": authorization}
    config["send_resolved"] = False
    return {"name": hb.receiver(evaluator), "webhook_configs": [config]}


def heartbeat_receivers(model: Model) -> list[dict[str, Any]]:
    heartbeat = model.project.heartbeat
    if heartbeat is None:
        return []
    return [_heartbeat_receiver(heartbeat, evaluator.name) for evaluator in hb.evaluators(model.project)]


def root_receiver(model: Model) -> str:
    """Where alerts the compiler did not make go: the team receiver the project names, or ``unrouted``."""
    foreign = model.project.foreign_alerts
    return UNROUTED if foreign is None else team_receiver(foreign.team, foreign.channel)


def receivers(model: Model) -> list[dict[str, Any]]:
    """Every receiver (``unrouted`` when it is the root), sorted by name; names are unique."""
    found = [_receiver(UNROUTED, (), "ticket")] if root_receiver(model) == UNROUTED else []
    found.extend(heartbeat_receivers(model))
    for automation in model.project.automations:
        found.append(
            {
                "name": automation_receiver(automation.name),
                "webhook_configs": [_webhook(automation.url, automation.credentials_file)],
            }
        )
    for team in model.teams:
        for channel in CHANNELS:
            found.append(_receiver(team_receiver(team, channel), team.receivers_for(channel), channel))
    names = [receiver["name"] for receiver in found]
    duplicates = sorted({name for name in names if names.count(name) > 1})
    if duplicates:
        raise ValueError(f"Alertmanager receiver names collide: {', '.join(duplicates)} (rename a team or automation)")
    return sorted(found, key=lambda receiver: str(receiver["name"]))


# -- routes -----------------------------------------------------------------------------


def _timing(timing: Timing) -> dict[str, str]:
    return {
        "group_wait": format_duration(timing.group_wait_ms),
        "group_interval": format_duration(timing.group_interval_ms),
        "repeat_interval": format_duration(timing.repeat_interval_ms),
    }


def _group_by(slos: list[SLO]) -> list[str]:
    slice_labels = sorted({label for slo in slos for label in slo.slice.by} - set(ROOT_GROUP_BY))
    return [*ROOT_GROUP_BY, *slice_labels]


def _team_route(model: Model, team: Team) -> dict[str, Any]:
    ticket = model.project.timing_for(team, "ticket")
    children: list[dict[str, Any]] = [
        {"matchers": [matcher(lbl.SHADOW, "true")], "receiver": team_receiver(team, "shadow"), **_timing(ticket)}
    ]
    for severity in SEVERITIES:
        children.append(
            {
                "matchers": [matcher(lbl.SEVERITY, model.project.severity_label(severity))],
                "receiver": team_receiver(team, severity),
                **_timing(model.project.timing_for(team, severity)),
            }
        )
    return {
        "matchers": [OURS, matcher(lbl.TEAM, team.name)],
        "receiver": team_receiver(team, "ticket"),
        "group_by": _group_by([slo for slo in model.slos if slo.owner.name == team.name]),
        **_timing(ticket),
        "routes": children,
    }


def heartbeat_routes(model: Model) -> list[dict[str, Any]]:
    """One route per evaluator's heartbeat: sent at once, then every interval, and nowhere else."""
    heartbeat = model.project.heartbeat
    if heartbeat is None:
        return []
    return [
        {
            "matchers": [HEARTBEAT, matcher(hb.EVALUATOR, evaluator.name)],
            "receiver": hb.receiver(evaluator.name),
            "group_by": [GROUP_BY_ALL],
            "group_wait": "0s",
            "group_interval": format_duration(heartbeat.interval_ms),
            "repeat_interval": format_duration(hb.repeat_interval_ms(heartbeat.interval_ms)),
            "continue": False,
        }
        for evaluator in hb.evaluators(model.project)
    ]


def routes(model: Model) -> list[dict[str, Any]]:
    """The children of the root route: heartbeats, automations (``continue: true``), then teams."""
    page = dict(model.project.timing)["page"]
    found: list[dict[str, Any]] = heartbeat_routes(model)
    for automation in model.project.automations:
        found.append(
            {
                "matchers": [OURS, matcher(lbl.AUTOMATION, automation.name)],
                "receiver": automation_receiver(automation.name),
                "group_by": _group_by([slo for slo in model.slos if slo.mitigation.automation == automation.name]),
                **_timing(page),
                "continue": True,
            }
        )
    found.extend(_team_route(model, team) for team in model.teams)
    return found


def root_route(model: Model) -> dict[str, Any]:
    return {
        "receiver": root_receiver(model),
        "group_by": list(ROOT_GROUP_BY),
        **_timing(dict(model.project.timing)["ticket"]),
        "routes": routes(model),
    }


# -- inhibition -------------------------------------------------------------------------


def inhibit_rules(model: Model) -> list[dict[str, Any]]:
    """A page silences the ticket of the same spec and slice; a cause silences what it explains.

    A shadow spec is not trusted to page, so it does not silence anything it explains either.
    Both sides match only our alerts, so a foreign alert with the same ``slo`` label neither
    silences nor is silenced.
    """
    page, ticket = model.project.severity_label("page"), model.project.severity_label("ticket")
    rules: list[dict[str, Any]] = []
    for slo in model.slos:
        if slo.objective is not None or slo.normal_range is not None or slo.critical_range is not None:
            rules.append(
                {
                    "source_matchers": [OURS, matcher(lbl.SLO, slo.name), matcher(lbl.SEVERITY, page)],
                    "target_matchers": [OURS, matcher(lbl.SLO, slo.name), matcher(lbl.SEVERITY, ticket)],
                    "equal": list(slo.slice.by) or [lbl.SLO],
                }
            )
        for explains in slo.explains:
            source = [OURS, matcher(lbl.SLO, slo.name)]
            if explains.severity != "any":
                source.append(matcher(lbl.SEVERITY, model.project.severity_label(explains.severity)))
            source.append(matcher(lbl.SHADOW, "true", "!="))
            rules.append(
                {
                    "source_matchers": source,
                    "target_matchers": [OURS, matcher(lbl.SLO, explains.slo)],
                    "equal": list(explains.equal),
                }
            )
        rules.extend(_component_no_data_rules(model, slo))
    return rules


def _component_no_data_rules(model: Model, slo: SLO) -> list[dict[str, Any]]:
    """An availability page also holds back the no-data alerts of the specs reading its component.

    A no-data alert is ``absent()`` over every slice, so it carries no slice label and the
    per-slice rule of ``explains_component`` (equal: [cluster]) can never match it: on a
    one-cluster platform a dead component would still open each reader's no-data ticket.
    These rules match the reader's no-data alert by name with no equal labels.
    """
    entry = slo.explains_component
    if entry is None:
        return []
    explained = {explains.slo for explains in slo.explains}
    source = [OURS, matcher(lbl.SLO, slo.name)]
    if entry.severity != "any":
        source.append(matcher(lbl.SEVERITY, model.project.severity_label(entry.severity)))
    source.append(matcher(lbl.SHADOW, "true", "!="))
    return [
        {
            "source_matchers": source,
            "target_matchers": [
                OURS,
                matcher(lbl.SLO, reader.name),
                matcher(lbl.ALERTNAME, spec_alert_names(reader)["no_data"]),
            ],
            "equal": [],
        }
        for reader in model.slos
        if reader.name in explained and reader.no_data.enabled and reader.slice.component == slo.slice.component
    ]


# -- routing test cases -----------------------------------------------------------------


def expected_receivers(
    labels: Mapping[str, str], channels: Mapping[str, Channel] = _SEVERITY_CHANNEL, root: str = UNROUTED
) -> list[str]:
    """Where an alert must go, from the routing intent (not by walking the tree), in amtool's order.

    ``channels`` maps each emitted ``severity`` value to its channel. A heartbeat goes to its
    evaluator's heartbeat receiver alone. An alert without our ``slo_compiler`` label is not
    ours: it falls through to the root's receiver, ``root``.
    """
    if labels.get(lbl.SLO_COMPILER) == hb.LABEL_VALUE and hb.EVALUATOR in labels:
        return [hb.receiver(labels[hb.EVALUATOR])]
    if labels.get(lbl.SLO_COMPILER) != lbl.SLO_COMPILER_VALUE:
        return [root]
    found = []
    if lbl.AUTOMATION in labels:
        found.append(automation_receiver(labels[lbl.AUTOMATION]))
    if labels.get(lbl.SHADOW) == "true":
        found.append(team_receiver(labels[lbl.TEAM], "shadow"))
    else:
        found.append(team_receiver(labels[lbl.TEAM], channels.get(labels.get(lbl.SEVERITY, ""), "ticket")))
    return found


def severity_channels(model: Model) -> dict[str, Channel]:
    """Each emitted ``severity`` value and the channel it routes to (the project's mapping reversed)."""
    return {model.project.severity_label(severity): _SEVERITY_CHANNEL[severity] for severity in SEVERITIES}


def foreign_cases(model: Model) -> list[dict[str, Any]]:
    """One alert per team that is not ours but carries the team and the page severity value.

    Merged into kube-prometheus-stack, ``CoreDNSDown{team="platform-network", severity="critical"}``
    must reach whatever that config routes it to, never our ticket or page receiver.
    """
    channels = severity_channels(model)
    cases = []
    for team in model.teams:
        labels = {lbl.ALERTNAME: FOREIGN_ALERT, lbl.SEVERITY: model.project.severity_label("page"), lbl.TEAM: team.name}
        cases.append({"labels": labels, "receivers": expected_receivers(labels, channels, root_receiver(model))})
    return cases


def heartbeat_cases(model: Model) -> list[dict[str, Any]]:
    """Each evaluator's heartbeat, which must reach its heartbeat receiver and nothing else."""
    if model.project.heartbeat is None:
        return []
    cases = []
    for evaluator in hb.evaluators(model.project):
        labels = hb.labels(evaluator.name)
        cases.append({"labels": labels, "receivers": expected_receivers(labels)})
    return cases


def routing_cases(alert_plan: Plan) -> list[dict[str, Any]]:
    """Every alert of every spec (its static labels, one value per slice label, and its receivers),
    then the heartbeats, then the foreign alerts that must fall through."""
    channels = severity_channels(alert_plan.model)
    cases = []
    for spec in alert_plan:
        for alert in spec.alerts:
            labels = {lbl.ALERTNAME: alert.name, **alert.label_map}
            for label in spec.slo.slice.by:
                labels.setdefault(label, SLICE_PLACEHOLDER)
            cases.append({"labels": labels, "receivers": expected_receivers(labels, channels)})
    return [*cases, *heartbeat_cases(alert_plan.model), *foreign_cases(alert_plan.model)]


# -- files ------------------------------------------------------------------------------


def config(model: Model) -> dict[str, Any]:
    """The complete Alertmanager configuration."""
    global_: dict[str, Any] = {"resolve_timeout": format_duration(model.project.resolve_timeout_ms)}
    smtp = model.project.smtp
    if smtp is not None:
        global_["smtp_smarthost"] = smtp.smarthost
        global_["smtp_from"] = smtp.sender
        if smtp.auth_username is not None:
            global_["smtp_auth_username"] = smtp.auth_username
        if smtp.auth_password_file is not None:
            global_["smtp_auth_password_file"] = smtp.auth_password_file
        global_["smtp_require_tls"] = smtp.require_tls
    return {
        "global": global_,
        "templates": [TEMPLATES_GLOB],
        "route": root_route(model),
        "receivers": receivers(model),
        "inhibit_rules": inhibit_rules(model),
    }


def fragment(model: Model) -> dict[str, Any]:
    """Routes, receivers and inhibit rules to merge into an existing configuration: never the root's decision."""
    return {
        "routes": routes(model),
        "receivers": [receiver for receiver in receivers(model) if receiver["name"] != UNROUTED],
        "inhibit_rules": inhibit_rules(model),
    }


_GENERATED = (
    "# Generated by slo-compiler from the owners registry, the project settings and {count} spec(s).\n"
    "# Do not edit: change the specs and run `slo-compiler generate`.\n"
)


def render(alert_plan: Plan) -> dict[str, bytes]:
    model = alert_plan.model
    header = _GENERATED.format(count=len(model.slos))
    fragment_header = (
        header + "# A fragment, not a configuration. To merge it into an existing one\n"
        '# (docs/project.md: "Merging fragment.yaml"): put `routes` first in your root route\'s `routes`\n'
        '# (they match only alerts labelled slo_compiler="true", or "heartbeat", so they take none of yours),\n'
        "# append `receivers` and `inhibit_rules`, list templates/slo-compiler.tmpl under `templates`, set\n"
        "# the global smtp_* settings if a receiver sends e-mail, then run `amtool check-config` on the\n"
        "# result. Your root route keeps deciding where alerts the compiler did not make go.\n"
    )
    tests_header = (
        header + "# Every alert of every spec and the receivers it must reach, in order, then each evaluator's\n"
        "# heartbeat, then one foreign alert per team (its team and severity, without slo_compiler) that\n"
        "# must fall through to the root's receiver.\n"
        "# Check one with\n"
        "#   amtool config routes test --config.file=alertmanager.yaml --verify.receivers=<a,b> <label=value>...\n"
    )
    return {
        CONFIG_PATH: (header + dump(config(model))).encode("utf-8"),
        FRAGMENT_PATH: (fragment_header + dump(fragment(model))).encode("utf-8"),
        TEMPLATE_PATH: notification_templates(alert_plan),
        ROUTING_TESTS_PATH: (tests_header + dump(routing_cases(alert_plan))).encode("utf-8"),
    }
