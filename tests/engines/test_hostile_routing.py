"""Careless routing input: inhibition that silences the wrong thing, reserved labels, template injection.

Each case either fails `validate` with `path:line:col: message` at the value at fault (exit 1),
or compiles to output that the real Alertmanager 0.25 runs as intended: an accepted
``explains`` silences only its own slice, and hostile spec text reaches a Slack receiver
verbatim while a hostile Slack channel (which amtool accepts) is refused by the compiler,
because in a real Alertmanager it makes every notification fail.
"""

from __future__ import annotations

import json
import re
import subprocess
import time
import urllib.request
from pathlib import Path
from typing import Any

import pytest

from compiler.model import Model, labels
from compiler.plan import plan, plan_spec
from compiler.targets import alertmanager
from compiler.targets.prometheus import alert_rules, recording_rules
from compiler.targets.prometheus.proof.gotemplate import render as render_annotation
from tests import servers
from tests.conftest import OWNERS_YAML, PROJECT_YAML, RATIO_SLI_AND_OBJECTIVE, VALID_SLO, RunCli
from tests.support import FIXTURE_SPECS, LIBRARY_SPECS, REPO_ROOT, compile_tree

SPEC_DIR = Path("specs")
TEMPLATE_SOURCE = REPO_ROOT / "compiler" / "templates" / "slo-compiler.tmpl"
FAST_TIMING = "{group_wait: 1s, group_interval: 1s, repeat_interval: 1h}"
FAST_PROJECT = PROJECT_YAML + f"alertmanager:\n  timing:\n    page: {FAST_TIMING}\n    ticket: {FAST_TIMING}\n"


# -- spec trees -------------------------------------------------------------------------


def slo_spec(name: str, *, by: str = "[cluster]", explains: str = "", ticket_only: bool = False) -> str:
    """The valid spec of conftest renamed; ``explains`` is appended as YAML list items."""
    text = VALID_SLO.replace("name: dns-errors", f"name: {name}").replace("by: [cluster]", f"by: {by}")
    if ticket_only:  # a normal range (ticket) and no objective: the spec never pages
        text = text.replace(
            RATIO_SLI_AND_OBJECTIVE, RATIO_SLI_AND_OBJECTIVE.split("objective:")[0] + "normal_range:\n  max: 0.1\n"
        )
    return text + (f"explains:\n{explains}" if explains else "")


def write_tree(root: Path, specs: dict[str, str], owners: str = OWNERS_YAML, project: str = PROJECT_YAML) -> Path:
    """A spec tree under ``root/specs``: the registry, the project and one file per named spec."""
    spec_dir = root / SPEC_DIR
    (spec_dir / "network").mkdir(parents=True)
    (spec_dir / "owners.yaml").write_text(owners, encoding="utf-8")
    (spec_dir / "project.yaml").write_text(project, encoding="utf-8")
    for name, text in specs.items():
        (spec_dir / "network" / f"{name}.yaml").write_text(text, encoding="utf-8")
    return spec_dir


def position(path: Path, needle: str, after: str = "") -> tuple[int, int]:
    """1-based line and column of ``needle`` in ``path``, searching from the first ``after``."""
    text = path.read_text(encoding="utf-8")
    offset = text.index(needle, text.index(after) if after else 0)
    line = text.count("\n", 0, offset) + 1
    return line, offset - (text.rfind("\n", 0, offset) + 1) + 1


def problems(run_cli: RunCli, root: Path) -> list[str]:
    """The positioned problems `validate` reports; asserts the contract (exit 1, no traceback)."""
    code, _, stderr = run_cli(["validate", "--specs", SPEC_DIR], root)
    assert code == 1, stderr
    assert "Traceback" not in stderr and "internal error" not in stderr, stderr
    return [line for line in stderr.splitlines() if re.match(r"^specs/[^:]+:\d+:\d+: ", line)]


def reported_at(found: list[str], root: Path, path: Path, at: tuple[int, int], *needles: str) -> str:
    """The one problem at ``path:line:col`` (relative to ``root``, as the CLI prints it) with every needle."""
    prefix = f"{path.relative_to(root)}:{at[0]}:{at[1]}: "
    matching = [line for line in found if line.startswith(prefix)]
    assert len(matching) == 1, (prefix, found)
    for needle in needles:
        assert needle in matching[0], matching[0]
    return matching[0]


def spec_path(root: Path, name: str) -> Path:
    return root / SPEC_DIR / "network" / f"{name}.yaml"


# -- 1. inhibition that silences the wrong thing -------------------------------------------


def test_inhibition_explains_cycle_is_error(tmp_path: Path, run_cli: RunCli) -> None:
    entry_a = "  - {slo: dns-latency, equal: [cluster]}\n"
    entry_b = "  - {slo: dns-errors, equal: [cluster]}\n"
    write_tree(
        tmp_path,
        {
            "dns-errors": slo_spec("dns-errors", explains=entry_a),
            "dns-latency": slo_spec("dns-latency", explains=entry_b),
        },
    )
    found = problems(run_cli, tmp_path)
    assert len(found) == 2, found
    for name, other in (("dns-errors", "dns-latency"), ("dns-latency", "dns-errors")):
        path = spec_path(tmp_path, name)
        at = position(path, other, after="explains:")
        reported_at(
            found, tmp_path, path, at, f"explains cycle {name} -> {other} -> {name}", "none of them reaches anyone"
        )


def test_inhibition_explains_cycle_of_three_is_error(tmp_path: Path, run_cli: RunCli) -> None:
    """A longer loop is found from each of its entries; an entry leading out of it is not blamed."""
    write_tree(
        tmp_path,
        {
            "spec-a": slo_spec("spec-a", explains="  - {slo: spec-b, equal: [cluster]}\n"),
            "spec-b": slo_spec(
                "spec-b", explains="  - {slo: spec-c, equal: [cluster]}\n  - {slo: spec-d, equal: [cluster]}\n"
            ),
            "spec-c": slo_spec("spec-c", explains="  - {slo: spec-a, equal: [cluster]}\n"),
            "spec-d": slo_spec("spec-d"),
        },
    )
    found = problems(run_cli, tmp_path)
    assert len(found) == 3, found
    for name, cycle in (
        ("spec-a", "spec-a -> spec-b -> spec-c -> spec-a"),
        ("spec-b", "spec-b -> spec-c -> spec-a -> spec-b"),
        ("spec-c", "spec-c -> spec-a -> spec-b -> spec-c"),
    ):
        path = spec_path(tmp_path, name)
        target = cycle.split(" -> ")[1]
        reported_at(found, tmp_path, path, position(path, target, after="explains:"), f"explains cycle {cycle}")
    assert not any("spec-d" in line.split(": ", 1)[1] for line in found), found


def test_inhibition_explains_equal_empty_is_error(tmp_path: Path, run_cli: RunCli) -> None:
    write_tree(
        tmp_path,
        {
            "dns-errors": slo_spec("dns-errors", by="[cluster, zone]", explains="  - {slo: dns-latency, equal: []}\n"),
            "dns-latency": slo_spec("dns-latency", by="[cluster, zone]"),
        },
    )
    found = problems(run_cli, tmp_path)
    path = spec_path(tmp_path, "dns-errors")
    reported_at(
        found,
        tmp_path,
        path,
        position(path, "[]", after="explains:"),
        "equal: []",
        "silence dns-latency in every slice",
        "list the slice labels both share (cluster, zone)",
    )
    assert len(found) == 1, found


def test_inhibition_explains_equal_label_not_on_both_specs_is_error(tmp_path: Path, run_cli: RunCli) -> None:
    """Alertmanager treats a label missing on both alerts as equal, so it must be a slice label of both."""
    write_tree(
        tmp_path,
        {
            "dns-errors": slo_spec(
                "dns-errors", by="[cluster, zone]", explains="  - {slo: dns-latency, equal: [zone]}\n"
            ),
            "dns-latency": slo_spec("dns-latency"),
        },
    )
    found = problems(run_cli, tmp_path)
    path = spec_path(tmp_path, "dns-errors")
    reported_at(
        found, tmp_path, path, position(path, "zone", after="equal:"), "'zone' is not a slice label of dns-latency"
    )
    assert len(found) == 1, found


def test_inhibition_explains_from_spec_without_page_alert_is_error(tmp_path: Path, run_cli: RunCli) -> None:
    write_tree(
        tmp_path,
        {
            "dns-ticket": slo_spec(
                "dns-ticket", ticket_only=True, explains="  - {slo: dns-latency, equal: [cluster]}\n"
            ),
            "dns-any": slo_spec(
                "dns-any", ticket_only=True, explains="  - {slo: dns-latency, equal: [cluster], severity: any}\n"
            ),
            "dns-latency": slo_spec("dns-latency"),
        },
    )
    found = problems(run_cli, tmp_path)
    path = spec_path(tmp_path, "dns-ticket")
    at = position(path, "{slo: dns-latency", after="explains:")  # no severity given: the entry itself
    reported_at(
        found, tmp_path, path, at, "explains dns-latency can never inhibit", "its alerts are ticket", "severity: any"
    )
    assert len(found) == 1, found  # severity: any on the same kind of spec is fine


def test_inhibition_accepted_explains_silences_only_its_own_slice_in_alertmanager(tmp_path: Path) -> None:
    """In the real Alertmanager, a cause paging in cluster c1 holds back c1's symptom and nothing else."""
    with servers.webhook() as hook:
        hook_url = f"http://127.0.0.1:{hook.port}"
        owners = OWNERS_YAML.replace(
            "{pagerduty: {routing_key_file: /etc/am/pd}}", f'{{webhook: {{url: "{hook_url}/page"}}}}'
        )
        spec_dir = write_tree(
            tmp_path,
            {
                "dns-errors": slo_spec("dns-errors", explains="  - {slo: dns-latency, equal: [cluster]}\n"),
                "dns-latency": slo_spec("dns-latency"),
            },
            owners=owners,
            project=FAST_PROJECT,
        )
        model = compile_tree(spec_dir, cwd=tmp_path)
        config = write_alertmanager(model, tmp_path / "out")
        cause = page_alert(model, "dns-errors", cluster="c1")
        symptoms = [page_alert(model, "dns-latency", cluster=cluster) for cluster in ("c1", "c2")]
        with servers.alertmanager(tmp_path, config) as am:
            post_alerts(am, [cause])
            assert servers.wait_until(lambda: len(am.alerts()) == 1, 10)
            post_alerts(am, symptoms)
            expected = {("dns-errors", "c1"), ("dns-latency", "c2")}
            assert servers.wait_until(lambda: delivered_slices(hook, "page") >= expected, 20), hook.received
            time.sleep(3)  # three group intervals: the held-back symptom would have gone out by now
            assert delivered_slices(hook, "page") == expected, hook.received
            states = {(a["labels"]["slo"], a["labels"]["cluster"]): a["status"] for a in am.alerts()}
            assert (
                states[("dns-latency", "c1")]["state"] == "suppressed" and states[("dns-latency", "c1")]["inhibitedBy"]
            )
            assert states[("dns-latency", "c2")]["state"] == "active"
            assert states[("dns-errors", "c1")]["state"] == "active"


# -- 2. reserved labels -----------------------------------------------------------------------

RESERVED_CASES = {
    "burn_factor": "the compiler sets it on the alerts",  # duplicate series per window pair
    "alertstate": "Prometheus itself uses it",  # ALERTS{alertstate=...} collides
    "shadow": "Alertmanager routes and inhibits on it",  # scraped shadow="true" hides a live page
    "automation": "Alertmanager routes and inhibits on it",  # scraped value calls an automation
    "spec_hash": "the compiler sets it on slo_info",
    "le": "Prometheus itself uses it",
    "__slo_term": "Prometheus reserves names starting with '__'",
}


@pytest.mark.parametrize("label", sorted(RESERVED_CASES))
def test_reserved_slice_label_is_error(tmp_path: Path, run_cli: RunCli, label: str) -> None:
    write_tree(tmp_path, {"dns-errors": slo_spec("dns-errors", by=f"[cluster, {label}]")})
    found = problems(run_cli, tmp_path)
    path = spec_path(tmp_path, "dns-errors")
    reported_at(
        found,
        tmp_path,
        path,
        position(path, label, after="by:"),
        f"slice label '{label}' is reserved",
        RESERVED_CASES[label],
    )
    assert len(found) == 1, found


def _matcher_label(matcher: str) -> str:
    """The label name of an Alertmanager matcher such as ``slo="x"`` or ``shadow!="true"``."""
    return re.split(r"[=!~]", matcher, maxsplit=1)[0]


def _written_label_names(model: Model) -> set[str]:
    """Every label name the targets write on series and alerts or match on in Alertmanager."""
    found: set[str] = set()
    for slo in model.slos:
        for rule in recording_rules(slo):
            found.update(rule.get("labels", {}))
            found.update(re.findall(r'label_replace\(.*?\), "(\w+)",', rule["expr"]))
        for alert in alert_rules(model, plan_spec(slo)):
            found.update(alert.labels)
    config = alertmanager.config(model)
    routes = [config["route"]]
    while routes:
        route = routes.pop()
        found.update(label for label in route.get("group_by", []) if label != "...")  # "...": every label
        found.update(_matcher_label(matcher) for matcher in route.get("matchers", []))
        routes.extend(route.get("routes", []))
    for rule in config["inhibit_rules"]:
        for matcher in (*rule["source_matchers"], *rule["target_matchers"]):
            found.add(_matcher_label(matcher))
    return found - {label for slo in model.slos for label in slo.slice.by}


@pytest.mark.parametrize("spec_dir", [FIXTURE_SPECS, LIBRARY_SPECS], ids=["fixtures", "library"])
def test_reserved_labels_cover_every_label_the_targets_write(spec_dir: Path) -> None:
    """The reserved set cannot drift from the targets: whatever they write or route on is in it."""
    written = _written_label_names(compile_tree(spec_dir))
    assert {labels.SEVERITY, labels.TEAM, labels.SLO, labels.BURN_FACTOR, labels.ALERTNAME} <= written  # not vacuous
    if spec_dir == FIXTURE_SPECS:
        assert {labels.SHADOW, labels.AUTOMATION, labels.SPEC_HASH, labels.TERM} <= written
    unreserved = {name for name in written if labels.reserved_because(name) is None}
    assert not unreserved, f"written by the targets but accepted as slice labels: {sorted(unreserved)}"


def test_reserved_labels_match_the_notification_templates_slice_filter() -> None:
    """The templates print every label but the ones alerts always carry as the slice: same set."""
    filters = set(re.findall(r'match "\^\(([\w|]+)\)\$"', TEMPLATE_SOURCE.read_text(encoding="utf-8")))
    assert len(filters) == 1, filters
    assert set(filters.pop().split("|")) == labels.ALERT_LABELS | {labels.ALERTNAME}


# -- 3. template injection ---------------------------------------------------------------------

HOSTILE_CHANNEL = "#team-a{{.Nope}}"


def test_template_injection_slack_channel_is_error(tmp_path: Path, run_cli: RunCli) -> None:
    owners = OWNERS_YAML.replace(
        '{webhook: {url: "http://127.0.0.1:9/t"}}',
        f'{{slack: {{api_url_file: /etc/am/slack, channel: "{HOSTILE_CHANNEL}"}}}}',
        1,
    )
    spec_dir = write_tree(tmp_path, {"dns-errors": slo_spec("dns-errors")}, owners=owners)
    found = problems(run_cli, tmp_path)
    path = spec_dir / "owners.yaml"
    reported_at(
        found,
        tmp_path,
        path,
        position(path, f'"{HOSTILE_CHANNEL}"'),
        "slack.channel",
        "Go template delimiter",
        "every notification",
    )
    assert len(found) == 1, found


def test_template_injection_email_to_is_error(tmp_path: Path, run_cli: RunCli) -> None:
    owners = OWNERS_YAML.replace(
        '{webhook: {url: "http://127.0.0.1:9/t"}}', '{email: {to: "net{{.Receiver}}@example.com"}}', 1
    )
    project = PROJECT_YAML + 'alertmanager:\n  smtp: {smarthost: "smtp.example.com:587", from: am@example.com}\n'
    spec_dir = write_tree(tmp_path, {"dns-errors": slo_spec("dns-errors")}, owners=owners, project=project)
    found = problems(run_cli, tmp_path)
    path = spec_dir / "owners.yaml"
    reported_at(found, tmp_path, path, position(path, '"net{{'), "email.to", "every e-mail to this receiver fails")
    assert len(found) == 1, found


def test_template_injection_smtp_from_is_error(tmp_path: Path, run_cli: RunCli) -> None:
    project = PROJECT_YAML + 'alertmanager:\n  smtp: {smarthost: "smtp.example.com:587", from: "am}}@example.com"}\n'
    spec_dir = write_tree(tmp_path, {"dns-errors": slo_spec("dns-errors")}, project=project)
    found = problems(run_cli, tmp_path)
    path = spec_dir / "project.yaml"
    reported_at(found, tmp_path, path, position(path, '"am}}'), "smtp.from", "every e-mail notification fails")
    assert len(found) == 1, found


def test_template_injection_runbook_base_url_is_error_not_a_crash(tmp_path: Path, run_cli: RunCli) -> None:
    """It used to end in `internal error` (exit 70): the generated tests could not render the annotation."""
    project = PROJECT_YAML.replace("https://runbooks.example.com/slo", "https://runbooks.example.com/{{.Nope}}")
    spec_dir = write_tree(tmp_path, {"dns-errors": slo_spec("dns-errors")}, project=project)
    found = problems(run_cli, tmp_path)
    path = spec_dir / "project.yaml"
    where = position(path, "https://runbooks")
    reported_at(found, tmp_path, path, where, "runbook_base_url", "characters URLs must percent-encode")
    assert len(found) == 1, found


def test_template_injection_slack_channel_fails_every_notification_in_alertmanager(tmp_path: Path) -> None:
    """Why the channel is refused: amtool accepts it, and the real Alertmanager then sends nothing.

    The same spec tree with a clean channel delivers to a local Slack endpoint, spec text with
    template actions included, verbatim.
    """
    with servers.webhook() as hook:
        url_file = tmp_path / "slack-url"
        url_file.write_text(f"http://127.0.0.1:{hook.port}/slack\n", encoding="utf-8")
        owners = OWNERS_YAML.replace(
            '{webhook: {url: "http://127.0.0.1:9/t"}}',
            f'{{slack: {{api_url_file: "{url_file}", channel: "#team-a"}}}}',
            1,
        )
        hostile_text = "Scale CoreDNS {{ .Nope }} now."
        spec = slo_spec("dns-errors").replace("summary: Scale CoreDNS.", f'summary: "{hostile_text}"')
        spec_dir = write_tree(tmp_path, {"dns-errors": spec}, owners=owners, project=FAST_PROJECT)
        model = compile_tree(spec_dir, cwd=tmp_path)
        config = write_alertmanager(model, tmp_path / "out")
        clean = config.read_text(encoding="utf-8")
        assert clean.count("channel: '#team-a'") == 2  # the ticket and (defaulted) info receivers
        hostile = config.with_name("hostile.yaml")
        hostile.write_text(clean.replace("channel: '#team-a'", f"channel: '{HOSTILE_CHANNEL}'"), encoding="utf-8")
        check = subprocess.run(["amtool", "check-config", str(hostile)], capture_output=True, text=True, timeout=60)
        assert check.returncode == 0, check.stdout + check.stderr  # amtool cannot see it

        ticket = ticket_alert(model, "dns-errors", cluster="c1")
        with servers.alertmanager(_mkdir(tmp_path / "hostile"), hostile) as am:
            post_alerts(am, [ticket])
            assert servers.wait_until(lambda: failed_notifications(am, "slack") >= 1, 20)
            assert "slack" not in hook.receivers(), hook.received
        assert "can't evaluate field Nope" in (tmp_path / "hostile" / "alertmanager.log").read_text(errors="replace")
        with servers.alertmanager(_mkdir(tmp_path / "clean"), config) as am:
            post_alerts(am, [ticket])
            assert servers.wait_until(lambda: "slack" in hook.receivers(), 20)
        message = hook.received["slack"][0]
        assert message["channel"] == "#team-a"
        assert hostile_text in message["attachments"][0]["text"], message


# -- helpers for the real Alertmanager --------------------------------------------------


def _mkdir(path: Path) -> Path:
    path.mkdir()
    return path


def write_alertmanager(model: Model, out: Path) -> Path:
    """Write the generated alertmanager/ files and return the config path."""
    for name, content in alertmanager.render(plan(model)).items():
        (out / name).parent.mkdir(parents=True, exist_ok=True)
        (out / name).write_bytes(content)
    return out / alertmanager.CONFIG_PATH


def _alert(model: Model, name: str, severity: str, cluster: str) -> dict[str, Any]:
    """A firing alert of spec ``name`` with the labels and annotations Prometheus would send."""
    slo = next(slo for slo in model.slos if slo.name == name)
    rule = next(rule for rule in alert_rules(model, plan_spec(slo)) if rule.labels[labels.SEVERITY] == severity)
    alert_labels = {labels.ALERTNAME: rule.name, **rule.labels, "cluster": cluster}
    annotations = {key: render_annotation(value, alert_labels, 0.5) for key, value in rule.annotations.items()}
    return {"labels": alert_labels, "annotations": annotations}


def page_alert(model: Model, name: str, cluster: str) -> dict[str, Any]:
    return _alert(model, name, "page", cluster)


def ticket_alert(model: Model, name: str, cluster: str) -> dict[str, Any]:
    return _alert(model, name, "ticket", cluster)


def delivered_slices(hook: servers.Webhook, receiver: str) -> set[tuple[str, str]]:
    """(slo, cluster) of every alert the receiver was notified of."""
    return {(alert["labels"]["slo"], alert["labels"]["cluster"]) for alert in hook.alerts(receiver)}


def post_alerts(am: servers.Alertmanager, alerts: list[dict[str, Any]]) -> None:
    body = json.dumps(alerts).encode("utf-8")
    request = urllib.request.Request(f"{am.url}/api/v2/alerts", data=body, headers={"Content-Type": "application/json"})
    with urllib.request.urlopen(request, timeout=5) as response:
        assert response.status == 200


def failed_notifications(am: servers.Alertmanager, integration: str) -> float:
    with urllib.request.urlopen(f"{am.url}/metrics", timeout=5) as response:
        text = response.read().decode("utf-8")
    pattern = rf'^alertmanager_notifications_failed_total\{{integration="{integration}"\}} (\S+)$'
    return sum(float(value) for value in re.findall(pattern, text, re.MULTILINE))
