"""A team's conventions, end to end: severity mapping, extra labels and annotations, full alert
names, project families, and routes that take only our alerts.

One spec tree uses every convention (kube-prometheus severities, project and spec labels and
annotations, a full name for every kind of alert, a family of its own). It must compile; its rules
must carry exactly those names, labels and annotations and pass promtool's fatal lint and its own
generated tests; its Alertmanager config must pass amtool, route every alert where its routing
tests say, and let a foreign ``CoreDNSDown{severity="critical", team="platform-network"}`` fall
through, also once the fragment is merged into a kube-prometheus-stack configuration. Then each
way of breaking a convention is a positioned error.
"""

from __future__ import annotations

import re
import subprocess
from collections.abc import Iterator
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest
import yaml

from compiler.diagnostics import Diagnostics
from compiler.model import Model
from compiler.pipeline import compile_specs, render
from compiler.targets import alertmanager
from tests.conftest import RunCli
from tests.promtool_runs import promtool_test
from tests.support import compile_tree

OWNERS = """\
apiVersion: slo-compiler/v1
kind: Owners
teams:
  - name: platform-network
    contact: "#platform-network"
    receivers:
      page: [{pagerduty: {routing_key_file: /etc/am/pd-network}}]
      ticket: [{webhook: {url: "http://127.0.0.1:9/network"}}]
  - name: platform-web
    contact: "#platform-web"
    receivers:
      page: [{pagerduty: {routing_key_file: /etc/am/pd-web}}]
      ticket: [{webhook: {url: "http://127.0.0.1:9/web"}}]
      info: [{webhook: {url: "http://127.0.0.1:9/web-info"}}]
"""

PROJECT = """\
apiVersion: slo-compiler/v1
kind: Project
runbook_base_url: https://runbooks.example.com/slo
evaluation_interval: 1m
alerts:
  severity: {page: critical, ticket: warning, info: notice}
  labels: {source: slo, tier: "2"}
  annotations:
    dashboard: "https://grafana.example.com/d/web ({{ not a template }})"
families:
  - {name: service-slos, title: Service SLOs}
  - {name: node-network-errors, title: Node and network error budgets}
"""

ERRORS_SPEC = """\
apiVersion: slo-compiler/v1
kind: SLO
name: my-service-errors
alert_names:
  burn: MyServiceHighErrorRate
  above_normal: MyServiceErrorRateHigh
  above_critical: MyServiceErrorRateCritical
  no_data: MyServiceErrorsAbsent
family: service-slos
owner: platform-web
description: Requests to my-service answer without 5xx.
slice:
  by: [cluster]
  selector: '{job="my-service"}'
sli:
  ratio:
    bad: 'http_requests_total{code=~"5.."}'
    total: http_requests_total
objective:
  target: 99.9%
  period: 30d
normal_range:
  max: 0.01
critical_range:
  max: 0.05
persistence:
  for: 10m
no_data:
  severity: info
mitigation:
  summary: Roll back the last deploy.
  steps: [Roll back.]
  stop_conditions: [A dependency is down.]
  escalation: Page the web lead.
explains:
  - {slo: my-service-queue, equal: [cluster]}
labels: {tier: "1", component: web}
annotations: {playbook: "https://wiki.example.com/my-service"}
scenarios:
  - name: outage
    shape:
      - {for: 30m, error_ratio: 0}
      - {for: 30m, error_ratio: 0.5}
    expect:
      - {alert: MyServiceHighErrorRate, fires_by: 50m}   # the full name
      - {alert: AboveCriticalRange, fires_by: 50m}       # the kind's suffix still finds it
"""

QUEUE_SPEC = """\
apiVersion: slo-compiler/v1
kind: SLO
name: my-service-queue
alert_names:
  above_normal: MyServiceQueueBacklog
  below_normal: MyServiceQueueDrained
  above_critical: MyServiceQueueOverflow
  below_critical: MyServiceQueueStalled
  no_data: MyServiceQueueAbsent
family: service-slos
owner: platform-web
description: The work queue holds between 10 and 1000 items.
slice:
  by: [cluster]
  selector: '{job="my-service"}'
sli:
  gauge:
    expr: 'sum by (cluster) (queue_depth)'
    aggregate: sum
unit: count
normal_range:
  min: 10
  max: 1000
critical_range:
  min: 1
  max: 5000
persistence:
  for: 5m
mitigation:
  summary: Scale the workers.
  steps: [Scale.]
  stop_conditions: [Deploy in progress.]
  escalation: Page the web lead.
"""

TREE = {
    "owners.yaml": OWNERS,
    "project.yaml": PROJECT,
    "web/errors.yaml": ERRORS_SPEC,
    "web/queue.yaml": QUEUE_SPEC,
}

SEVERITY = {"page": "critical", "ticket": "warning", "info": "notice"}
NAMES = {
    "my-service-errors": [
        "MyServiceHighErrorRate",
        "MyServiceErrorRateHigh",
        "MyServiceErrorRateCritical",
        "MyServiceErrorsAbsent",
    ],
    "my-service-queue": [
        "MyServiceQueueBacklog",
        "MyServiceQueueDrained",
        "MyServiceQueueOverflow",
        "MyServiceQueueStalled",
        "MyServiceQueueAbsent",
    ],
}
EXTRA_LABELS = {
    "my-service-errors": {"source": "slo", "tier": "1", "component": "web"},  # the spec's tier wins
    "my-service-queue": {"source": "slo", "tier": "2"},
}
DASHBOARD = "https://grafana.example.com/d/web ({{ not a template }})"


def write_tree(root: Path, files: dict[str, str]) -> Path:
    for name, text in files.items():
        (root / "specs" / name).parent.mkdir(parents=True, exist_ok=True)
        (root / "specs" / name).write_text(text, encoding="utf-8")
    return root / "specs"


def tool(*args: str | Path, cwd: Path | None = None) -> subprocess.CompletedProcess[str]:
    command = [str(arg) for arg in args]
    return subprocess.run(command, cwd=cwd, capture_output=True, text=True, timeout=120, check=False)


@dataclass(frozen=True)
class Built:
    model: Model
    out: Path

    def load(self, name: str) -> Any:
        return yaml.safe_load((self.out / name).read_text(encoding="utf-8"))

    def rules(self, spec: str) -> list[dict[str, Any]]:
        rules: list[dict[str, Any]] = self.load(f"prometheus/rules/{spec}.rules.yaml")["groups"][0]["rules"]
        return [rule for rule in rules if "alert" in rule]


@pytest.fixture(scope="module")
def built(tmp_path_factory: pytest.TempPathFactory) -> Built:
    root = tmp_path_factory.mktemp("conventions")
    model = compile_tree(write_tree(root, TREE), cwd=root)
    diagnostics = Diagnostics()
    files = render(model, diagnostics)
    assert files and not diagnostics, diagnostics.render()
    out = root / "generated"
    for name, content in files.items():
        (out / name).parent.mkdir(parents=True, exist_ok=True)
        (out / name).write_bytes(content)
    return Built(model, out)


# -- the rules ---------------------------------------------------------------------------------


def test_alerts_carry_the_full_names_in_rule_order(built: Built) -> None:
    for spec, names in NAMES.items():
        assert list(dict.fromkeys(rule["alert"] for rule in built.rules(spec))) == names


def test_alerts_carry_the_mapped_severity_and_the_extra_labels(built: Built) -> None:
    for slo in built.model.slos:
        rules = built.rules(slo.name)
        severities = [rule["labels"]["severity"] for rule in rules]
        assert set(severities) <= set(SEVERITY.values()) and "critical" in severities, severities
        for rule in rules:
            labels = rule["labels"]
            assert labels["slo_compiler"] == "true"
            assert {key: labels[key] for key in EXTRA_LABELS[slo.name]} == EXTRA_LABELS[slo.name]
    errors = {rule["alert"]: rule["labels"]["severity"] for rule in built.rules("my-service-errors")}
    assert errors["MyServiceErrorRateHigh"] == "warning"  # a normal range tickets
    assert errors["MyServiceErrorRateCritical"] == "critical"  # a critical range pages
    assert errors["MyServiceErrorsAbsent"] == "notice"  # no_data severity info


def test_alerts_carry_the_extra_annotations_as_literal_text(built: Built) -> None:
    for slo in built.model.slos:
        for rule in built.rules(slo.name):
            annotations = rule["annotations"]
            assert annotations["dashboard"] == DASHBOARD.replace("{{", '{{ "{{" }}')  # never executed
            assert ("playbook" in annotations) == (slo.name == "my-service-errors")
            assert {"summary", "description", "runbook_url", "mitigation"} <= set(annotations)
            assert annotations["runbook_url"].endswith(f"/{slo.name}.md#{rule['alert'].lower()}")


def test_promtool_lints_the_rules_and_passes_their_generated_tests(built: Built) -> None:
    rules = sorted((built.out / "prometheus" / "rules").glob("*.rules.yaml"))
    result = tool("promtool", "check", "rules", "--lint=all", "--lint-fatal", *rules)
    assert result.returncode == 0, result.stdout + result.stderr
    tests = sorted((built.out / "prometheus" / "tests").glob("*.test.yaml"))
    assert len(tests) == 2
    for test in tests:
        result = promtool_test(test, timeout=120)
        assert result.returncode == 0, (result.stdout + result.stderr)[-4000:]


def test_generated_tests_expect_the_conventions(built: Built) -> None:
    """promtool passing means little unless the tests assert the mapped labels and extra annotations."""
    text = (built.out / "prometheus" / "tests" / "my-service-errors.test.yaml").read_text(encoding="utf-8")
    assert 'alertname="MyServiceHighErrorRate"' in text
    assert 'severity="critical"' in text and 'severity="page"' not in text
    assert 'component="web"' in text and 'tier="1"' in text
    assert "https://wiki.example.com/my-service" in text and DASHBOARD in text  # rendered as Prometheus would


def test_runbooks_head_each_full_name_and_show_the_emitted_severity(built: Built) -> None:
    runbook = (built.out / "runbooks" / "my-service-errors.md").read_text(encoding="utf-8")
    for name in NAMES["my-service-errors"]:
        assert f"\n### {name}\n" in runbook
    assert "critical (page)" in runbook and "warning (ticket)" in runbook
    index = (built.out / "runbooks" / "README.md").read_text(encoding="utf-8")
    assert "Service SLOs" in index  # the project's own family title


def test_dashboards_show_the_emitted_severity_and_the_family(built: Built) -> None:
    team = (built.out / "grafana" / "dashboards" / "platform-web.json").read_text(encoding="utf-8")
    assert "Burn rate 1h/5m (critical, 14.4x)" in team
    overview = (built.out / "grafana" / "dashboards" / "overview.json").read_text(encoding="utf-8")
    assert "Service SLOs" in overview


# -- routing -----------------------------------------------------------------------------------


def routes_to(config: Path, labels: dict[str, str], receivers: list[str]) -> bool:
    result = tool(
        "amtool",
        "config",
        "routes",
        "test",
        f"--config.file={config}",
        f"--verify.receivers={','.join(receivers)}",
        *(alertmanager.matcher(name, value) for name, value in labels.items()),
    )
    assert result.returncode in (0, 1), result.stdout + result.stderr
    return result.returncode == 0


def resolved(config: Path, labels: dict[str, str]) -> str:
    args = (alertmanager.matcher(name, value) for name, value in labels.items())
    result = tool("amtool", "config", "routes", "test", f"--config.file={config}", *args)
    assert result.returncode == 0, result.stdout + result.stderr
    return result.stdout.strip()


def failing(config: Path, cases: list[dict[str, Any]]) -> list[dict[str, Any]]:
    with ThreadPoolExecutor(max_workers=8) as pool:
        verdicts = list(pool.map(lambda case: routes_to(config, case["labels"], case["receivers"]), cases))
    return [case for case, ok in zip(cases, verdicts, strict=True) if not ok]


FOREIGN = {"alertname": "CoreDNSDown", "severity": "critical", "team": "platform-network"}


def test_amtool_accepts_the_config_and_every_routing_case_passes(built: Built) -> None:
    config = built.out / alertmanager.CONFIG_PATH
    result = tool("amtool", "check-config", config)
    assert result.returncode == 0, result.stdout + result.stderr
    cases = built.load(alertmanager.ROUTING_TESTS_PATH)
    assert failing(config, cases) == []
    ours = [case for case in cases if case["labels"].get("slo_compiler") == "true"]
    assert {case["labels"]["alertname"] for case in ours} == {name for names in NAMES.values() for name in names}
    by_severity = {case["labels"]["severity"]: case["receivers"][-1] for case in ours}
    assert by_severity == {
        "critical": "platform-web-page",
        "warning": "platform-web-ticket",
        "notice": "platform-web-info",
    }


def test_a_foreign_alert_with_our_team_and_severity_falls_through(built: Built) -> None:
    config = built.out / alertmanager.CONFIG_PATH
    cases = built.load(alertmanager.ROUTING_TESTS_PATH)
    assert {"labels": FOREIGN, "receivers": ["unrouted"]} in cases  # the generated routing tests say so
    assert resolved(config, FOREIGN) == "unrouted"
    assert resolved(config, {**FOREIGN, "slo_compiler": "true"}) == "platform-network-page"  # not vacuous


def test_inhibit_rules_match_our_alerts_and_the_mapped_severities(built: Built) -> None:
    rules = built.load(alertmanager.CONFIG_PATH)["inhibit_rules"]
    assert {
        "source_matchers": ['slo_compiler="true"', 'slo="my-service-errors"', 'severity="critical"'],
        "target_matchers": ['slo_compiler="true"', 'slo="my-service-errors"', 'severity="warning"'],
        "equal": ["cluster"],
    } in rules
    for rule in rules:
        assert rule["source_matchers"][0] == rule["target_matchers"][0] == 'slo_compiler="true"'
        assert not any('"page"' in m or '"ticket"' in m for m in (*rule["source_matchers"], *rule["target_matchers"]))


def test_notifications_do_not_print_the_extra_labels_as_the_slice(built: Built) -> None:
    template = (built.out / alertmanager.TEMPLATE_PATH).read_text(encoding="utf-8")
    filters = set(re.findall(r'match "\^\(([\w|]+)\)\$"', template))
    assert len(filters) == 1, filters
    names = filters.pop().split("|")
    assert {"component", "source", "tier", "slo_compiler"} <= set(names)
    assert "cluster" not in names  # the slice label still shows


# A kube-prometheus-stack Alertmanager configuration, as its chart renders it, with a team route of
# its own: the configuration fragment.yaml is merged into.
KUBE_PROMETHEUS_STACK = {
    "global": {"resolve_timeout": "5m"},
    "route": {
        "group_by": ["namespace"],
        "group_wait": "30s",
        "group_interval": "5m",
        "repeat_interval": "12h",
        "receiver": "null",
        "routes": [
            {"receiver": "null", "matchers": ['alertname = "Watchdog"']},
            {"receiver": "null", "matchers": ['alertname = "InfoInhibitor"']},
            {"receiver": "network-oncall", "matchers": ['team = "platform-network"']},
            {"receiver": "default-critical", "matchers": ['severity = "critical"']},
        ],
    },
    "inhibit_rules": [
        {
            "source_matchers": ['severity = "critical"'],
            "target_matchers": ['severity =~ "warning|info"'],
            "equal": ["namespace", "alertname"],
        },
        {"source_matchers": ['severity = "warning"'], "target_matchers": ['severity = "info"'], "equal": ["namespace"]},
        {"source_matchers": ['alertname = "InfoInhibitor"'], "target_matchers": ['severity = "info"']},
    ],
    "receivers": [
        {"name": "null"},
        {"name": "network-oncall", "webhook_configs": [{"url": "http://127.0.0.1:9/network-oncall"}]},
        {"name": "default-critical", "webhook_configs": [{"url": "http://127.0.0.1:9/critical"}]},
    ],
}


def merge_fragment(base: dict[str, Any], fragment: dict[str, Any], template: Path, full: dict[str, Any]) -> Any:
    """The merge procedure of docs/project.md, step by step."""
    merged = yaml.safe_load(yaml.safe_dump(base))  # a deep copy
    merged["route"]["routes"] = [*fragment["routes"], *merged["route"].get("routes", [])]  # 1. ours first
    taken = {receiver["name"] for receiver in merged["receivers"]}
    assert not taken & {receiver["name"] for receiver in fragment["receivers"]}, "receiver names must not clash"
    merged["receivers"] += fragment["receivers"]  # 2.
    merged["inhibit_rules"] = [*merged.get("inhibit_rules", []), *fragment["inhibit_rules"]]  # 3.
    merged["templates"] = [*merged.get("templates", []), str(template)]  # 4.
    merged["global"].update({k: v for k, v in full["global"].items() if k.startswith("smtp_")})  # 5.
    return merged


@pytest.fixture(scope="module")
def merged(built: Built, tmp_path_factory: pytest.TempPathFactory) -> Iterator[tuple[Path, Path]]:
    """The kube-prometheus-stack base alone, and with the fragment merged in."""
    root = tmp_path_factory.mktemp("merged")
    base = root / "base.yaml"
    base.write_text(yaml.safe_dump(KUBE_PROMETHEUS_STACK), encoding="utf-8")
    full, fragment = built.load(alertmanager.CONFIG_PATH), built.load(alertmanager.FRAGMENT_PATH)
    result = merge_fragment(KUBE_PROMETHEUS_STACK, fragment, built.out / alertmanager.TEMPLATE_PATH, full)
    path = root / "merged.yaml"
    path.write_text(yaml.safe_dump(result), encoding="utf-8")
    yield base, path


def test_the_fragment_merged_into_kube_prometheus_stack_passes_amtool(merged: tuple[Path, Path]) -> None:
    for config in merged:
        result = tool("amtool", "check-config", config)
        assert result.returncode == 0, result.stdout + result.stderr
    assert "- 1 templates" in tool("amtool", "check-config", merged[1]).stdout


def test_merged_our_alerts_reach_our_receivers(built: Built, merged: tuple[Path, Path]) -> None:
    cases = built.load(alertmanager.ROUTING_TESTS_PATH)
    ours = [case for case in cases if case["labels"].get("slo_compiler") == "true"]
    assert ours and failing(merged[1], ours) == []
    # Not vacuous: without the fragment the base sends our critical alerts to its own critical receiver.
    page = next(case for case in ours if case["labels"]["severity"] == "critical")
    assert resolved(merged[0], page["labels"]) == "default-critical"


def test_merged_foreign_alerts_fall_through_untouched(built: Built, merged: tuple[Path, Path]) -> None:
    base, config = merged
    for labels, original in (
        (FOREIGN, "network-oncall"),  # the base's own team route
        ({**FOREIGN, "team": "platform-web"}, "default-critical"),  # a team only we route: the base decides
        ({"alertname": "Watchdog", "severity": "none"}, "null"),
    ):
        assert resolved(base, labels) == original
        assert resolved(config, labels) == original, labels


# -- positioned errors -------------------------------------------------------------------------


Edit = tuple[str, str]


def problems(tmp_path: Path, replace: dict[str, Edit | list[Edit]], monkeypatch: pytest.MonkeyPatch) -> list[str]:
    """Every problem of the conventions tree edited (``{file: (old, new)}`` or a list of such edits)."""
    files = dict(TREE)
    for name, edits in replace.items():
        for old, new in edits if isinstance(edits, list) else [edits]:
            assert files[name].count(old) == 1, (name, old)
            files[name] = files[name].replace(old, new)
    write_tree(tmp_path, files)
    monkeypatch.chdir(tmp_path)
    model, diagnostics = compile_specs(Path("specs"))
    assert model is None and diagnostics, "the edit must be refused"
    return diagnostics.render().splitlines()


def at(name: str, text: str, needle: str, offset: int = 0) -> str:
    """``specs/<name>:line:col`` of ``needle`` (plus ``offset`` columns) in ``text``."""
    index = text.index(needle) + offset
    line = text.count("\n", 0, index) + 1
    column = index - (text.rfind("\n", 0, index) + 1) + 1
    return f"specs/{name}:{line}:{column}"


def only(found: list[str], name: str | None = None) -> str:
    """The one problem found (in file ``name``, when a spec with errors also leaves others' references dangling)."""
    shown = [line for line in found if name is None or line.startswith(f"specs/{name}:")]
    assert len(shown) == 1, "\n".join(found)
    return shown[0]


ERRORS = "web/errors.yaml"
QUEUE = "web/queue.yaml"


@pytest.mark.parametrize("label", ["severity", "team", "slo", "family", "slo_compiler", "alertname", "__meta"])
def test_a_spec_cannot_override_the_compilers_labels(
    label: str, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    edited = f"labels: {{{label}: x, component: web}}"
    found = only(problems(tmp_path, {ERRORS: ('labels: {tier: "1", component: web}', edited)}, monkeypatch))
    text = ERRORS_SPEC.replace('labels: {tier: "1", component: web}', edited)
    where = at(ERRORS, text, edited, len("labels: {"))
    assert found.startswith(f"{where}: cannot override the compiler's label '{label}'")
    if label == "severity":
        assert "alerts.severity in project.yaml" in found


def test_the_project_cannot_override_the_compilers_labels(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    edited = "labels: {source: slo, team: platform}"
    found = only(problems(tmp_path, {"project.yaml": ('labels: {source: slo, tier: "2"}', edited)}, monkeypatch))
    text = PROJECT.replace('labels: {source: slo, tier: "2"}', edited)
    where = at("project.yaml", text, "team: platform")
    assert found.startswith(f"{where}: cannot override the compiler's label 'team'")


@pytest.mark.parametrize(
    "annotation", ["summary", "description", "runbook_url", "mitigation", "mitigation_steps", "holds_back"]
)
def test_the_compilers_annotations_cannot_be_overridden(
    annotation: str, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    old = 'annotations: {playbook: "https://wiki.example.com/my-service"}'
    edited = f"annotations: {{{annotation}: mine}}"
    found = only(problems(tmp_path, {ERRORS: (old, edited)}, monkeypatch))
    expected = f"{at(ERRORS, ERRORS_SPEC.replace(old, edited), annotation + ': mine')}: "
    assert found.startswith(expected + f"cannot override the compiler's annotation '{annotation}'")
    project_edit = ("dashboard:", f"{annotation}:")
    found = only(problems(tmp_path, {"project.yaml": project_edit}, monkeypatch))
    assert found.startswith(f"{at('project.yaml', PROJECT, 'dashboard:')}: cannot override the compiler's annotation")


def test_a_label_value_cannot_be_a_template(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    edited = 'labels: {tier: "{{ $labels.cluster }}", component: web}'
    found = only(problems(tmp_path, {ERRORS: ('labels: {tier: "1", component: web}', edited)}, monkeypatch))
    text = ERRORS_SPEC.replace('labels: {tier: "1", component: web}', edited)
    value = '"{{'
    assert found.startswith(f"{at(ERRORS, text, value)}: label tier")
    assert "Prometheus expands alert label values as templates" in found


def test_an_extra_label_cannot_be_a_slice_label(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    edited = "labels: {cluster: prod, component: web}"
    found = only(problems(tmp_path, {ERRORS: ('labels: {tier: "1", component: web}', edited)}, monkeypatch))
    text = ERRORS_SPEC.replace('labels: {tier: "1", component: web}', edited)
    assert found.startswith(f"{at(ERRORS, text, 'cluster: prod')}: 'cluster' is a slice label of this spec")
    project = problems(tmp_path, {"project.yaml": ("source: slo,", "cluster: prod,")}, monkeypatch)
    assert len(project) == 2  # one per spec sliced by cluster, at its slice label
    for line, (name, text) in zip(project, ((ERRORS, ERRORS_SPEC), (QUEUE, QUEUE_SPEC)), strict=True):
        assert line.startswith(f"{at(name, text, 'by: [cluster]', len('by: ['))}: slice label 'cluster' is also")


def test_two_severities_cannot_share_a_value(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    old = "severity: {page: critical, ticket: warning, info: notice}"
    edited = "severity: {page: critical, ticket: critical, info: notice}"
    found = only(problems(tmp_path, {"project.yaml": (old, edited)}, monkeypatch))
    text = PROJECT.replace(old, edited)
    where = at("project.yaml", text, "critical, info")
    assert found.startswith(f"{where}: ticket alerts would carry severity='critical'")
    # An unset severity keeps its own name, which may clash too.
    edited = "severity: {page: ticket}"
    found = only(problems(tmp_path, {"project.yaml": (old, edited)}, monkeypatch))
    assert "ticket alerts would carry severity='ticket' like page alerts" in found


def test_a_severity_value_must_be_a_label_value(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    edited = 'severity: {page: "P1 page", ticket: warning, info: notice}'
    old = "severity: {page: critical, ticket: warning, info: notice}"
    found = only(problems(tmp_path, {"project.yaml": (old, edited)}, monkeypatch))
    assert "alerts.severity.page must be a severity label value" in found


def test_an_unknown_family_has_a_did_you_mean(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    found = only(problems(tmp_path, {QUEUE: ("family: service-slos", "family: service-slo")}, monkeypatch))
    assert found == (
        f"{at(QUEUE, QUEUE_SPEC, 'service-slos')}: unknown family 'service-slo' (families: service-slos, "
        "node-network-errors); did you mean 'service-slos'?; declare it under families in project.yaml"
    )
    # The default library's families are the default only while the project declares none.
    found = only(problems(tmp_path, {QUEUE: ("family: service-slos", "family: watch-list-volume")}, monkeypatch))
    assert "unknown family 'watch-list-volume'" in found


def test_alert_names_collide_across_specs(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    edit = ("below_normal: MyServiceQueueDrained", "below_normal: MyServiceErrorRateHigh")
    found = only(problems(tmp_path, {QUEUE: edit}, monkeypatch))
    text = QUEUE_SPEC.replace(*edit)
    assert found == (
        f"{at(QUEUE, text, 'MyServiceErrorRateHigh')}: alert name 'MyServiceErrorRateHigh' is also an alert of "
        "spec 'my-service-errors': Alertmanager would group both specs' alerts together and one silence would "
        "hit both; give this alert another name"
    )
    # Against another spec's default name, the error is at the full name that caused it.
    edit = ("no_data: MyServiceQueueAbsent", "no_data: MyServiceErrorsErrorBudgetBurn")
    default_burn = [
        ("  burn: MyServiceHighErrorRate\n", ""),
        ("{alert: MyServiceHighErrorRate, fires_by: 50m}", "{alert: ErrorBudgetBurn, fires_by: 50m}"),
    ]
    found = only(problems(tmp_path, {QUEUE: edit, ERRORS: default_burn}, monkeypatch))
    assert found.startswith(f"{at(QUEUE, QUEUE_SPEC.replace(*edit), 'MyServiceErrorsErrorBudgetBurn')}: alert name")


def test_alert_names_collide_within_a_spec(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    edit = ("below_critical: MyServiceQueueStalled", "below_critical: MyServiceQueueDrained")
    found = only(problems(tmp_path, {QUEUE: edit}, monkeypatch), QUEUE)
    assert found == (
        f"{at(QUEUE, QUEUE_SPEC.replace(*edit), 'below_critical: ', len('below_critical: '))}: alert name "
        "'MyServiceQueueDrained' is already the name of this spec's below_normal alert; two kinds of alert with "
        "one name would be grouped and silenced together; give each its own"
    )


def test_alert_names_only_for_alerts_the_spec_has(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    edit = ("  no_data: MyServiceQueueAbsent\n", "  no_data: MyServiceQueueAbsent\n  burn: MyServiceQueueBurn\n")
    found = only(problems(tmp_path, {QUEUE: edit}, monkeypatch), QUEUE)
    assert found == (
        f"{at(QUEUE, QUEUE_SPEC.replace(*edit), 'burn:')}: alert_names.burn: this spec has no burn alert (it has "
        "no objective); its alerts are above_normal, below_normal, above_critical, below_critical, no_data"
    )
    edit = ("  above_normal: MyServiceErrorRateHigh\n", "  below_normal: MyServiceErrorRateLow\n")
    found = only(problems(tmp_path, {ERRORS: edit}, monkeypatch))
    assert "alert_names.below_normal: this spec has no below_normal alert (its normal_range has no min" in found


def test_an_alert_name_must_be_camel_case(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    edit = ("burn: MyServiceHighErrorRate", "burn: my-service-burn")
    found = only(problems(tmp_path, {ERRORS: edit}, monkeypatch))
    assert found.startswith(f"{at(ERRORS, ERRORS_SPEC.replace(*edit), 'my-service-burn')}: alert_names.burn must be")


def test_a_scenario_names_an_overridden_alert_by_name_or_suffix_only(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    edit = ("{alert: MyServiceHighErrorRate, fires_by: 50m}", "{alert: MyServiceHighErrorRat, fires_by: 50m}")
    found = only(problems(tmp_path, {ERRORS: edit}, monkeypatch))
    assert found.startswith(f"{at(ERRORS, ERRORS_SPEC.replace(*edit), 'MyServiceHighErrorRat,')}: ")
    assert found.endswith("did you mean 'MyServiceHighErrorRate'?")
    names = "MyServiceErrorRateCritical, MyServiceErrorRateHigh, MyServiceErrorsAbsent, MyServiceHighErrorRate"
    assert f"is not an alert of this spec ({names})" in found


def test_the_cli_reports_conventions_errors_with_exit_1(tmp_path: Path, run_cli: RunCli) -> None:
    files = {**TREE, ERRORS: ERRORS_SPEC.replace('labels: {tier: "1"', 'labels: {severity: "1"')}
    write_tree(tmp_path, files)
    code, stdout, stderr = run_cli(["validate", "--specs", "specs"], tmp_path)
    assert (code, stdout) == (1, ""), stderr
    assert "Traceback" not in stderr
    assert "cannot override the compiler's label 'severity'" in stderr
