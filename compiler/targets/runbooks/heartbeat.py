"""``runbooks/HEARTBEAT.md``: the runbook of the heartbeat alert, for the person told that it stopped."""

from __future__ import annotations

import shlex

import jinja2

from compiler.model import Heartbeat, Model, links
from compiler.model import heartbeat as hb
from compiler.promql import format_duration
from compiler.text.markdown import code

# Prometheus sends a firing alert valid for 4 x max(evaluation interval, --rules.alert.resend-delay),
# and the resend delay defaults to 1m: Alertmanager holds a dead engine's heartbeat that long.
ALERT_VALIDITY_FACTOR = 4
DEFAULT_RESEND_DELAY_MS = 60_000


def _service(heartbeat: Heartbeat) -> str:
    if heartbeat.kind == "opsgenie":
        return "Opsgenie, one heartbeat per engine (create them there with the names below)"
    return (
        "the heartbeat service's webhook (`heartbeat.receiver.webhook.url` in project.yaml), "
        "the same URL for every engine"
    )


def _service_check(heartbeat: Heartbeat, evaluator: str) -> str:
    if heartbeat.kind != "opsgenie":
        return (
            "The service's own page shows when it last heard each engine: the payload's `evaluator` label "
            "names it (and the engine's external labels, such as the cluster, come with it)."
        )
    key = shlex.quote(heartbeat.credentials_file or "")
    url = shlex.quote(f"{heartbeat.url}/v2/heartbeats/{heartbeat.name}-{evaluator}")
    command = f'curl -s -H "Authorization: GenieKey $(cat {key})" {url}'
    return f"Ask Opsgenie for a heartbeat's state without pinging it (from the Alertmanager host): {code(command)}."


def _ruler_checks(model: Model) -> list[tuple[str, str]]:
    group = hb.GROUP_NAME
    select = f"jq '.data.groups[] | select(.name == \"{group}\")'"
    tenant = model.project.rule_profiles.mimir_tenant or ""
    checks = {
        "thanos-ruler": f"curl -s http://thanos-ruler.monitoring.svc:10902/api/v1/rules | {select}",
        "mimir-ruler": f"mimirtool rules get --address=<mimir URL> --id={shlex.quote(tenant)} {group} {group}",
        "vmalert": f"curl -s http://vmalert.monitoring.svc:8880/api/v1/rules | {select}",
    }
    return [
        (evaluator.name, checks[evaluator.name])
        for evaluator in hb.evaluators(model.project)
        if evaluator.name in checks
    ]


def runbook(model: Model, environment: jinja2.Environment) -> str:
    heartbeat = model.project.heartbeat
    assert heartbeat is not None
    evaluation = model.project.evaluation_interval_ms
    rulers = _ruler_checks(model)
    context = {
        "alert_name": hb.ALERT_NAME,
        "group_name": hb.GROUP_NAME,
        "service": _service(heartbeat),
        "evaluators": [
            (evaluator.name, evaluator.rule_file, heartbeat.service_name(evaluator.name))
            for evaluator in hb.evaluators(model.project)
        ],
        "interval": format_duration(heartbeat.interval_ms),
        "evaluation_interval": format_duration(evaluation),
        "stop_within": format_duration(ALERT_VALIDITY_FACTOR * max(evaluation, DEFAULT_RESEND_DELAY_MS)),
        "dashboard": links.dashboard_url(model, links.OVERVIEW_DASHBOARD_UID),
        "rulers": [name for name, _ in rulers],
        "rulers_checks": rulers,
        "credentials": code(heartbeat.credentials_file) if heartbeat.credentials_file else "none are sent",
        "service_check": _service_check(heartbeat, hb.evaluators(model.project)[0].name),
    }
    return environment.get_template("heartbeat.md.j2").render(context)
