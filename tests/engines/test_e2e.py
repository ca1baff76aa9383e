"""End to end on the real engines: generated rules in Prometheus, the generated routing in Alertmanager.

One spec per family is fed an incident on backfilled synthetic data (the same inputs the
promtool tests use, built by ``compiler.targets.prometheus.proof.inputs``); the alerts must reach the owner's
receivers with the generated labels and annotations, a page must inhibit the ticket of the
same slice, and a calm data set must page nobody. Every rule group must evaluate without
error; their evaluation times are reported at the end of the run.

The rules and routes are the generated ones with only the clocks shortened: groups are
evaluated every 2s, ``for`` is capped at 10s and notification timers at a few seconds,
and every receiver's integrations are replaced by a webhook to a local recorder named
after the receiver, so routing and inhibition are exactly what the platform deploys.
"""

from __future__ import annotations

import json
import re
import threading
import time
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest
import yaml

from compiler.model import SLO, Model
from compiler.pipeline import compile_specs
from compiler.targets.prometheus.proof.inputs import Inputs
from compiler.targets.prometheus.proof.timeline import Timeline
from tests import clockwork, servers

REPO_ROOT = Path(__file__).resolve().parents[2]
GENERATED = REPO_ROOT / "generated"
# One spec per family (and DNS, which the apiserver explains), the bad share or gauge value that
# makes each page, all in one cluster.
INCIDENTS = {
    "apiserver-write-latency": 0.2,  # scheduling and API latency: 20% slow or failed writes
    "apf-protected-level-rejections": 2.0,  # watch/list volume: 2 rejections/s on a protected level
    "conntrack-exhaustion": 0.95,  # node and network: one node's conntrack table at 95%: a ticket naming it
    "cluster-dns-servfail": 0.1,  # 10% SERVFAIL, explained (inhibited) by the apiserver page
}
CLUSTER = "west"
HISTORY_MINUTES = 90
FUTURE_MINUTES = 30
# Written by the end-to-end test and printed in pytest's summary (workers run in other processes).
EVALUATION_REPORT = REPO_ROOT / ".cache" / "e2e-rule-evaluation.txt"


_LIBRARY: list[Model] = []
_LIBRARY_LOCK = threading.Lock()


def library() -> Model:
    """The library's model, compiled once for the scenarios' threads and the tests (never with compile_tree,
    whose chdir would move a test running in another thread)."""
    with _LIBRARY_LOCK:
        if not _LIBRARY:
            model, diagnostics = compile_specs(REPO_ROOT / "slo_specs")
            assert model is not None and not diagnostics, diagnostics.render()
            _LIBRARY.append(model)
        return _LIBRARY[0]


@pytest.fixture(scope="module")
def model() -> Model:
    return library()


def slo(model: Model, name: str) -> SLO:
    return next(s for s in model.slos if s.name == name)


# Specs another spec explains: as in production (DNS waits 10m, the apiserver page 2m), their
# alerts must start after the cause's page, or they reach a receiver before the inhibition exists.
EXPLAINED_FOR = {"cluster-dns-servfail": "30s"}


def fast_rules(workdir: Path, names: list[str]) -> list[Path]:
    """The generated rule files with a 2s evaluation interval and `for` capped at 10s (explained specs: 30s)."""
    paths = []
    for name in names:
        document = yaml.safe_load((GENERATED / "prometheus" / "rules" / f"{name}.rules.yaml").read_text())
        for group in document["groups"]:
            group["interval"] = "2s"
            for rule in group["rules"]:
                if "for" in rule:
                    rule["for"] = EXPLAINED_FOR.get(name, "10s")
                rule.pop("keep_firing_for", None)
        path = workdir / f"{name}.rules.yaml"
        path.write_text(yaml.safe_dump(document, sort_keys=False), encoding="utf-8")
        paths.append(path)
    return paths


def routed_to_webhook(workdir: Path, hook_port: int) -> Path:
    """The generated Alertmanager config, every receiver replaced by a webhook named after it."""
    config = yaml.safe_load((GENERATED / "alertmanager" / "alertmanager.yaml").read_text())
    for receiver in config["receivers"]:
        name = receiver["name"]
        for key in [k for k in receiver if k.endswith("_configs")]:
            del receiver[key]
        receiver["webhook_configs"] = [{"url": f"http://127.0.0.1:{hook_port}/{name}", "send_resolved": False}]

    def speed_up(route: dict[str, Any]) -> None:
        for key, value in (("group_wait", "1s"), ("group_interval", "2s"), ("repeat_interval", "1h")):
            if key in route or route is config["route"]:
                route[key] = value
        for child in route.get("routes", []):
            speed_up(child)

    speed_up(config["route"])
    config.get("global", {}).pop("smtp_auth_password_file", None)
    (workdir / "templates").mkdir(exist_ok=True)
    for template in (GENERATED / "alertmanager" / "templates").glob("*.tmpl"):
        (workdir / "templates" / template.name).write_text(template.read_text())
    path = workdir / "alertmanager.yml"
    path.write_text(yaml.safe_dump(config, sort_keys=False), encoding="utf-8")
    return path


def data_set(model: Model, values: dict[str, float], start: int) -> str:
    """OpenMetrics for the chosen specs: slice a at the given value, slice b calm, over past and future."""
    minutes = HISTORY_MINUTES + FUTURE_MINUTES
    texts = []
    for name, value in values.items():
        spec = slo(model, name)
        inputs = Inputs(spec, {"cluster": CLUSTER} if "cluster" in spec.slice.by else None)
        timelines = {"a": Timeline.constant(value, minutes)}
        if "b" in inputs.slices:
            timelines["b"] = Timeline.constant(0.0, minutes)
        texts.append(inputs.openmetrics(timelines, start).removesuffix("# EOF\n"))
    return "".join(texts) + "# EOF\n"


@dataclass
class Stack:
    prometheus: servers.Prometheus
    alertmanager: servers.Alertmanager
    webhook: servers.Webhook


@contextmanager
def running(clock: clockwork.Clock, values: dict[str, float]) -> Iterator[Stack]:
    workdir = clock.workdir
    start = int(time.time()) // 60 * 60 - HISTORY_MINUTES * 60
    data = data_set(library(), values, start)
    rules = fast_rules(workdir, list(INCIDENTS))
    with servers.webhook() as hook:
        config = routed_to_webhook(workdir, hook.port)
        clock.ready()
        blocks = servers.backfill(data, workdir)
        with (
            servers.alertmanager(workdir, config) as am,
            servers.prometheus(workdir, rules, am.port, blocks) as prom,
        ):
            yield Stack(prom, am, hook)


def _labels_of(alerts: list[dict[str, Any]], name: str) -> list[dict[str, str]]:
    return [a["labels"] for a in alerts if a["labels"]["alertname"] == name]


EXPECTED = {
    "platform-apiserver-page": {"ApiserverWriteLatencyErrorBudgetBurn", "APFRejectingProtectedLevelAboveCriticalRange"},
    "platform-network-ticket": {"ConntrackExhaustionUnitAboveCriticalRange"},
}
# A page inhibits the ticket of the same slo and slice, and the apiserver page inhibits the DNS alerts it explains.
INHIBITED = (
    "ApiserverWriteLatencyAboveNormalRange",
    "ClusterDnsServfailAboveCriticalRange",
    "ClusterDnsServfailErrorBudgetBurn",
)


@dataclass
class Incident:
    delivered: bool  # every expected alert reached its receiver
    received: dict[str, list[dict[str, Any]]]  # receiver: the alerts it got, when delivered
    inhibited: dict[str, bool]  # name: seen inhibited in Alertmanager
    firing: dict[str, list[dict[str, Any]]]  # name: its firing ALERTS in Prometheus, then
    received_at_end: dict[str, list[dict[str, Any]]]  # receiver: the alerts it got, at the end
    groups: list[dict[str, Any]]  # Prometheus's rule groups, at the end


def _received(hook: servers.Webhook) -> dict[str, list[dict[str, Any]]]:
    return {receiver: hook.alerts(receiver) for receiver in sorted(hook.receivers())}


@clockwork.scenario()
def incident_run(clock: clockwork.Clock) -> Incident:
    """Started when the session collects a test that needs it (tests/clockwork.py): the incident through the stack."""
    engines = clock.stack.enter_context(running(clock, INCIDENTS))

    def delivered() -> bool:
        return all(
            names <= {a["labels"]["alertname"] for a in engines.webhook.alerts(receiver)}
            for receiver, names in EXPECTED.items()
        )

    ok = servers.wait_until(delivered, 90)
    received = _received(engines.webhook)
    inhibited, firing = {}, {}
    for name in INHIBITED:
        inhibited[name] = servers.wait_until(
            lambda name=name: any(
                a["labels"]["alertname"] == name and a["status"]["inhibitedBy"]
                for a in engines.alertmanager.alerts(inhibited="true")
            ),
            30,
        )
        firing[name] = engines.prometheus.query(f'ALERTS{{alertname="{name}", alertstate="firing"}}')
    return Incident(ok, received, inhibited, firing, _received(engines.webhook), engines.prometheus.rule_groups())


@clockwork.needs(incident_run)
def test_an_incident_reaches_each_owner_and_pages_inhibit_tickets(model: Model) -> None:
    run = clockwork.result(incident_run)
    clockwork.close(incident_run)
    assert run.delivered, f"delivered so far: {run.received.keys()}"

    def alerts(receiver: str) -> list[dict[str, Any]]:
        return run.received.get(receiver, [])

    # The right labels and annotations, for the incident slice only.
    page = alerts("platform-apiserver-page")
    burn = next(a for a in page if a["labels"]["alertname"] == "ApiserverWriteLatencyErrorBudgetBurn")
    assert burn["labels"]["severity"] == "page"
    assert burn["labels"]["team"] == "platform-apiserver"
    assert burn["labels"]["family"] == "scheduling-api-latency"
    assert burn["labels"]["cluster"] == CLUSTER
    assert burn["labels"]["long_window"] in {"1h", "6h"}
    writes = slo(model, "apiserver-write-latency")
    assert burn["annotations"]["mitigation"] == writes.mitigation.summary
    assert burn["annotations"]["runbook_url"].endswith(
        "/apiserver-write-latency.md#apiserverwritelatencyerrorbudgetburn"
    )
    assert "20%" in burn["annotations"]["description"]
    # One node past the critical range is a ticket naming that node (a fleet), never a page.
    conntrack = next(
        a
        for a in alerts("platform-network-ticket")
        if a["labels"]["alertname"] == "ConntrackExhaustionUnitAboveCriticalRange"
    )
    assert conntrack["labels"]["severity"] == "ticket" and conntrack["labels"]["team"] == "platform-network"
    assert conntrack["labels"]["instance"] and "95%" in conntrack["annotations"]["description"]
    pages = {a["labels"]["alertname"] for a in alerts("platform-network-page")}
    assert "ConntrackExhaustionAboveCriticalRange" not in pages
    for receiver, got in run.received.items():
        for alert in got:
            assert alert["labels"].get("cluster", CLUSTER) == CLUSTER, "the calm slice alerted"
            assert not receiver.startswith("unrouted"), alert["labels"]

    # Inhibited alerts: firing in Prometheus, suppressed in Alertmanager, never delivered.
    for name in INHIBITED:
        assert run.inhibited[name], name
        assert run.firing[name], name
    delivered_names = {a["labels"]["alertname"] for got in run.received_at_end.values() for a in got}
    assert delivered_names.isdisjoint(INHIBITED)

    # Every rule group evaluates without error; report how long each takes.
    groups = run.groups
    assert {g["name"] for g in groups} == {f"slo-{name}" for name in INCIDENTS}
    report = []
    for group in groups:
        for rule in group["rules"]:
            assert rule["health"] == "ok", (group["name"], rule["name"], rule.get("lastError"))
        report.append(f"{group['name']}: {group['evaluationTime'] * 1000:.2f} ms for {len(group['rules'])} rules")
    EVALUATION_REPORT.parent.mkdir(exist_ok=True)
    EVALUATION_REPORT.write_text("\n".join(sorted(report)) + "\n", encoding="utf-8")


GRAFANA_VARIABLE = re.compile(r"\$\{(?P<braced>\w+)(?::\w+)?\}|\$(?P<plain>\w+)")
RECORDING_STAGES = (  # each rate tier is recorded from the one before it
    {"slo:sli_parts:rate5m", "slo:unit_value:gauge"},  # what the 5m total, bad and value may aggregate
    {"slo_info", "slo:sli_total:rate5m", "slo:sli_bad:rate5m", "slo:sli_value:gauge"},
    {"slo:sli_total:rate30m", "slo:sli_bad:rate30m"},
    {"slo:sli_total:rate1h", "slo:sli_bad:rate1h"},
    {"slo:sli_total:rate6h", "slo:sli_bad:rate6h"},
    {"slo:sli_total:rate1d", "slo:sli_bad:rate1d"},
    {"slo:error_budget_remaining:ratio", "slo:sli_total:period_events"},
)


def dashboard_queries(specs: set[str]) -> list[tuple[str, str]]:
    """(where, PromQL with Grafana variables set to match everything) of the panels about ``specs``."""
    found = []
    for path in sorted((GENERATED / "grafana" / "dashboards").glob("*.json")):
        data = json.loads(path.read_text(encoding="utf-8"))
        for panel in [p for top in data["panels"] for p in (top, *top.get("panels", []))]:
            for target in panel.get("targets", []):
                expr = target["expr"]
                if not any(f'"{spec}"' in expr or f'~"{spec}' in expr for spec in specs):
                    continue
                expr = expr.replace("$__rate_interval", "5m").replace("$__interval", "1m")
                expr = GRAFANA_VARIABLE.sub(lambda m: "" if (m["braced"] or m["plain"]) == "datasource" else ".*", expr)
                found.append((f"{path.name}: {panel['title']} {target['refId']}", expr))
    return found


@dataclass
class Panels:
    firing: bool  # an alert fired in the final server
    queries: list[tuple[str, str]]  # (where, PromQL) of the panels about the incident specs
    empty: list[str]  # where the query returned no data


@clockwork.scenario()
def panels_run(clock: clockwork.Clock) -> Panels:
    """Started when the session collects a test that needs it (tests/clockwork.py): recorded history backfilled in
    stages, then every panel query of the incident specs asked of the final server."""
    workdir = clock.workdir
    now = int(time.time()) // 60 * 60
    start = now - HISTORY_MINUTES * 60
    data = data_set(library(), INCIDENTS, start)
    rules = fast_rules(workdir, list(INCIDENTS))
    stage_files = []
    for stage, records in enumerate(RECORDING_STAGES):
        stage_file = workdir / f"stage-{stage}.rules.yaml"
        groups = []
        for name in INCIDENTS:
            document = yaml.safe_load((GENERATED / "prometheus" / "rules" / f"{name}.rules.yaml").read_text())
            for group in document["groups"]:
                kept = [r for r in group["rules"] if r.get("record") in records]
                if kept:
                    groups.append({"name": group["name"], "interval": "1m", "rules": kept})
        stage_file.write_text(yaml.safe_dump({"groups": groups}, sort_keys=False), encoding="utf-8")
        stage_files.append(stage_file)
    queries = dashboard_queries(set(INCIDENTS))
    clock.ready()
    blocks = servers.backfill(data, workdir)
    for stage, stage_file in enumerate(stage_files):
        with servers.prometheus(_mkdir(workdir / f"stage-{stage}"), [], None, blocks) as prom:
            servers.backfill_rules(prom, stage_file, start, now, blocks, workdir)
    with servers.prometheus(_mkdir(workdir / "final"), rules, None, blocks) as prom:
        firing = servers.wait_until(lambda: bool(prom.query('ALERTS{alertstate="firing"}')), 60)
        empty = [where for where, expr in queries if not prom.query(expr)]
    return Panels(firing, queries, empty)


@clockwork.needs(panels_run)
def test_every_dashboard_panel_about_the_incident_returns_data() -> None:
    """With recorded history backfilled in stages, every panel query of the incident specs returns data."""
    run = clockwork.result(panels_run)
    clockwork.close(panels_run)
    assert run.firing
    assert len(run.queries) > 20
    assert run.empty == [], f"panels with no data: {run.empty}"


def _mkdir(path: Path) -> Path:
    path.mkdir(exist_ok=True)
    return path


@dataclass
class Calm:
    recorded: bool  # the recorded series existed
    firing: list[dict[str, Any]]  # ALERTS firing, 20 s after
    pending: list[dict[str, Any]]  # ALERTS but the no-data ones, firing or pending, then
    receivers: set[str]  # every receiver the webhook heard from
    alertmanager: list[dict[str, Any]]  # every alert Alertmanager held


@clockwork.scenario()
def calm_run(clock: clockwork.Clock) -> Calm:
    """Started when the session collects a test that needs it (tests/clockwork.py): the calm data set through the stack
    for long enough that the recorded series exist, every `for` passes and a notification could go out."""
    run = clock.stack.enter_context(running(clock, dict.fromkeys(INCIDENTS, 0.0)))
    recorded = servers.wait_until(lambda: bool(run.prometheus.query("slo:sli_total:rate5m")), 30)
    clock.wait(20)
    return Calm(
        recorded,
        run.prometheus.query('ALERTS{alertstate="firing"}'),
        run.prometheus.query('ALERTS{alertname!~".*NoData"}'),
        run.webhook.receivers(),
        run.alertmanager.alerts(),
    )


@clockwork.needs(calm_run)
def test_a_calm_data_set_pages_nobody() -> None:
    run = clockwork.result(calm_run)
    clockwork.close(calm_run)
    assert run.recorded
    assert run.firing == []
    # Not even pending: no threshold is crossed, including those whose `for` is longer than the wait.
    assert run.pending == []
    assert run.receivers == set()
    assert run.alertmanager == []
