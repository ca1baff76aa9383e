"""Careless and hostile values that used to crash (exit 70) or slip through (issue 17).

Each case breaks the valid tree of conftest.py (see its line map) and runs the CLI in-process
(``compiler.cli.main``, cwd = tmp_path, so paths print relative): a spec problem is exit 1
with ``path:line:col: message`` at the value at fault, never an internal error. Cases that
must compile are checked with the real promtool and amtool.
"""

from __future__ import annotations

import json
import re
import subprocess
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from compiler import cli, targets
from compiler.plan import Plan
from tests.conftest import RATIO_SLI_AND_OBJECTIVE, VALID_SLO, make_spec_tree
from tests.promtool_runs import promtool_test

SLO = "specs/network/dns-errors.yaml"
OWNERS = "specs/owners.yaml"
PROJECT = "specs/project.yaml"
FILES = {SLO: Path("network/dns-errors.yaml"), OWNERS: Path("owners.yaml"), PROJECT: Path("project.yaml")}

PERIOD = "  period: 30d\n"
INTERVAL = "evaluation_interval: 1m\n"  # the last line of project.yaml: settings are appended after it
GAUGE = """\
sli:
  gauge:
    expr: 'sum by (cluster) (up)'
normal_range:
  max: 5
"""  # lines 10-14 of the SLO in place of the ratio SLI and objective (7 lines: positions below shift by 2)


@pytest.fixture
def tree(tmp_path: Path) -> Path:
    return make_spec_tree(tmp_path / "specs")


def edit(tree: Path, file: str, old: str, new: str) -> None:
    """Replace the one occurrence of ``old`` in ``file`` of the tree."""
    path = tree / FILES[file]
    text = path.read_text(encoding="utf-8")
    assert text.count(old) == 1, f"{old!r} must occur exactly once in {file}"
    path.write_text(text.replace(old, new), encoding="utf-8")


def burn_alert(tree: Path, fields: str) -> None:
    """Override the policy with one window pair (line 18 of the SLO; its flow mapping starts at column 7)."""
    edit(tree, SLO, PERIOD, PERIOD + f"  burn_alerts:\n    - {{{fields}}}\n")


def project(tree: Path, settings: str) -> None:
    """Append settings to project.yaml; they start at line 5."""
    edit(tree, PROJECT, INTERVAL, INTERVAL + settings)


def gauge(tree: Path, sli: str = GAUGE) -> None:
    edit(tree, SLO, RATIO_SLI_AND_OBJECTIVE, sli)


def problems(tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]) -> list[str]:
    """``validate`` must fail with exit 1 and positioned problems only; returns them."""
    monkeypatch.chdir(tmp_path)
    code = cli.main(["validate", "--specs", "specs"])
    err = capsys.readouterr().err
    assert code == cli.EXIT_PROBLEMS, err
    assert "internal error" not in err and "Traceback" not in err
    lines = err.splitlines()
    assert lines[-1].endswith("problem(s); nothing written"), err
    assert all(re.match(r"^specs/[^:]+:\d+:\d+: ", line) for line in lines[:-1]), err
    return lines[:-1]


def assert_problem(found: list[str], location: str, fragment: str) -> None:
    """Exactly one problem at ``location`` and it says ``fragment``."""
    at = [line for line in found if line.startswith(f"{location}: ")]
    assert len(at) == 1, f"expected one problem at {location}, got:\n" + "\n".join(found)
    assert fragment in at[0], at[0]


def generate(tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]) -> Path:
    monkeypatch.chdir(tmp_path)
    code = cli.main(["generate", "--specs", "specs", "--out", "out"])
    captured = capsys.readouterr()
    assert code == cli.EXIT_OK, captured.err
    return tmp_path / "out"


def assert_engines_accept(out: Path) -> None:
    """The rules lint clean, their generated tests pass and Alertmanager loads the config."""
    rules = sorted(str(path) for path in (out / "prometheus" / "rules").glob("*.yaml"))
    for args in (
        ["promtool", "check", "rules", "--lint=all", "--lint-fatal", *rules],
        ["amtool", "check-config", str(out / "alertmanager" / "alertmanager.yaml")],
    ):
        result = subprocess.run(args, cwd=out, capture_output=True, text=True, timeout=120, check=False)
        assert result.returncode == 0, f"{args[:3]}:\n{result.stdout}{result.stderr}"
    tests = sorted((out / "prometheus" / "tests").glob("*.yaml"))
    assert tests
    for test in tests:
        result = promtool_test(test, timeout=120)
        assert result.returncode == 0, f"promtool test rules {test.name}:\n{result.stdout}{result.stderr}"


# -- class 1: crashes that are now positioned errors -----------------------------------------


def test_crash_burn_factor_nan_is_positioned_error(tmp_path: Path, tree: Path, monkeypatch: Any, capsys: Any) -> None:
    burn_alert(tree, "severity: page, long: 1h, short: 5m, factor: .nan")
    found = problems(tmp_path, monkeypatch, capsys)
    assert found == [f"{SLO}:18:53: objective.burn_alerts[0].factor: .nan is not a finite number; write a plain number"]


@pytest.mark.parametrize(
    ("field", "column", "fragment"),
    [
        ("factor", 53, "burn factor 1e-300 is below 0.01"),
        ("budget_share", 59, "burn factor 7.2e-300 (from this budget_share) is below 0.01"),
    ],
)
def test_crash_burn_factor_or_budget_share_1e_300_is_positioned_error(
    tmp_path: Path, tree: Path, monkeypatch: Any, capsys: Any, field: str, column: int, fragment: str
) -> None:
    burn_alert(tree, f"severity: page, long: 1h, short: 5m, {field}: 1e-300")
    found = problems(tmp_path, monkeypatch, capsys)
    assert len(found) == 1
    assert_problem(found, f"{SLO}:18:{column}", fragment)


def test_crash_period_0s_with_default_policy_is_positioned_error(
    tmp_path: Path, tree: Path, monkeypatch: Any, capsys: Any
) -> None:
    edit(tree, SLO, PERIOD, "  period: 0s\n")
    found = problems(tmp_path, monkeypatch, capsys)
    assert found == [
        f"{SLO}:16:11: objective.period 0s is empty: a budget needs a period of at least 1d (e.g. 28d, 30d)"
    ]


@pytest.mark.parametrize(("window", "column"), [("short", 41), ("long", 30)])
def test_crash_burn_window_0s_is_positioned_error(
    tmp_path: Path, tree: Path, monkeypatch: Any, capsys: Any, window: str, column: int
) -> None:
    windows = {"long": "1h", "short": "5m", window: "0s"}
    burn_alert(tree, f"severity: page, long: {windows['long']}, short: {windows['short']}, factor: 14.4")
    found = problems(tmp_path, monkeypatch, capsys)
    assert found == [f"{SLO}:18:{column}: the {window} window must be a positive multiple of 5m, not 0s"]


def test_crash_cluster_profile_nodes_lots_is_positioned_error(
    tmp_path: Path, tree: Path, monkeypatch: Any, capsys: Any
) -> None:
    project(tree, "cluster_profile:\n  nodes: lots\n")
    found = problems(tmp_path, monkeypatch, capsys)
    assert found == [f"{PROJECT}:6:10: cluster_profile.nodes: expected an integer, got a string"]


@pytest.mark.parametrize(("value", "kind"), [("many", "a string"), ("[cluster, node]", "a list")])
def test_crash_label_cardinality_string_or_list_is_positioned_error(
    tmp_path: Path, tree: Path, monkeypatch: Any, capsys: Any, value: str, kind: str
) -> None:
    project(tree, f"cluster_profile:\n  label_cardinality: {value}\n")
    found = problems(tmp_path, monkeypatch, capsys)
    assert found == [f"{PROJECT}:6:22: cluster_profile.label_cardinality: expected a mapping, got {kind}"]


def test_crash_automation_name_list_is_positioned_error(
    tmp_path: Path, tree: Path, monkeypatch: Any, capsys: Any
) -> None:
    project(tree, "automations:\n  - name: [restart, scale]\n    url: http://127.0.0.1:9/fix\n")
    found = problems(tmp_path, monkeypatch, capsys)
    assert found == [f"{PROJECT}:6:11: automations[0].name: expected a string, got a list"]


def test_crash_operator_labels_list_is_positioned_error(
    tmp_path: Path, tree: Path, monkeypatch: Any, capsys: Any
) -> None:
    project(tree, "rule_profiles:\n  prometheus_operator:\n    namespace: monitoring\n    labels: [release]\n")
    found = problems(tmp_path, monkeypatch, capsys)
    assert found == [f"{PROJECT}:8:13: rule_profiles.prometheus_operator.labels: expected a mapping, got a list"]


def test_crash_slice_selector_quoted_label_name_is_positioned_error(
    tmp_path: Path, tree: Path, monkeypatch: Any, capsys: Any
) -> None:
    edit(tree, SLO, """selector: '{job="kube-dns"}'""", """selector: '{"job.name"="x"}'""")
    found = problems(tmp_path, monkeypatch, capsys)
    assert len(found) == 1
    assert_problem(found, f"{SLO}:9:13", "label name 'job.name' is not a Prometheus 2.x label name")


@pytest.mark.parametrize(
    "expr",
    [
        'sum by (cluster, "x.y") (up)',
        'sum by (cluster) (up{"x.y"="a"})',
        'sum by (cluster) (label_replace(up, "x.y", "$1", "job", "(.*)"))',
        'sum by (cluster) (up * on (cluster, "x.y") group_left () kube_node_info)',
    ],
    ids=["by", "matcher", "label_replace", "on"],
)
def test_crash_gauge_expression_quoted_label_name_is_positioned_error(
    tmp_path: Path, tree: Path, monkeypatch: Any, capsys: Any, expr: str
) -> None:
    gauge(tree, GAUGE.replace("'sum by (cluster) (up)'", f"'{expr}'"))
    found = problems(tmp_path, monkeypatch, capsys)
    assert len(found) == 1
    assert_problem(found, f"{SLO}:12:11", "label name 'x.y' is not a Prometheus 2.x label name")


@pytest.mark.parametrize(("key", "location"), [("runbook_base_url", "3:19"), ("grafana_base_url", "5:19")])
def test_crash_runbook_base_url_with_template_is_positioned_error(
    tmp_path: Path, tree: Path, monkeypatch: Any, capsys: Any, key: str, location: str
) -> None:
    """'{{.Nope}}' in the base URL became a Go template in every runbook_url annotation."""
    url = "https://runbooks.example.com/{{.Nope}}"
    if key == "runbook_base_url":
        edit(tree, PROJECT, "runbook_base_url: https://runbooks.example.com/slo\n", f"{key}: {url}\n")
    else:
        project(tree, f"{key}: {url}\n")
    found = problems(tmp_path, monkeypatch, capsys)
    assert len(found) == 1
    assert_problem(found, f"{PROJECT}:{location}", f"{key} must be an http(s) URL without a trailing slash, spaces or")


def test_crash_team_automation_next_to_automation_page_is_positioned_error(
    tmp_path: Path, tree: Path, monkeypatch: Any, capsys: Any
) -> None:
    team = (
        '  - name: automation\n    contact: "#automation"\n'
        '    receivers: {page: [{webhook: {url: "http://127.0.0.1:9/p"}}], '
        'ticket: [{webhook: {url: "http://127.0.0.1:9/t"}}]}\n'
    )
    edit(tree, OWNERS, "  - name: platform-nodes\n", team + "  - name: platform-nodes\n")
    project(tree, "automations:\n  - name: page\n    url: http://127.0.0.1:9/fix\n")
    found = problems(tmp_path, monkeypatch, capsys)
    assert found == [
        f"{PROJECT}:6:11: automation 'page' gets the Alertmanager receiver 'automation-page', which team "
        f"'automation' ({OWNERS}:7:11) also gets; rename the automation or the team"
    ]


@pytest.mark.parametrize("tenant", ["..", "."], ids=["dotdot", "dot"])
def test_crash_mimir_tenant_dot_or_dotdot_is_positioned_error(
    tmp_path: Path, tree: Path, monkeypatch: Any, capsys: Any, tenant: str
) -> None:
    """'..' passed validate and made generate refuse to write mimir/../<team>.yaml; '.' wrote into mimir/."""
    project(tree, f"rule_profiles:\n  mimir: {{tenant: '{tenant}'}}\n")
    found = problems(tmp_path, monkeypatch, capsys)
    assert len(found) == 1
    assert_problem(found, f"{PROJECT}:6:19", "must be a Mimir tenant ID (at most 150 letters")
    monkeypatch.chdir(tmp_path)
    assert cli.main(["generate", "--specs", "specs", "--out", "out"]) == cli.EXIT_PROBLEMS
    assert not (tmp_path / "out").exists()


# -- class 2: smaller acceptances ------------------------------------------------------------


RELATIVE = """\
sli:
  gauge:
    expr: 'sum by (cluster) (up)'
normal_range:
  relative: {offset: OFFSET, max_factor: 3}
"""


@pytest.mark.parametrize(
    ("offset", "fragment"),
    [
        ("1ms", "relative.offset must be a whole, positive number of minutes (e.g. 1h), not 1ms"),
        ("90s", "relative.offset must be a whole, positive number of minutes (e.g. 1h), not 1m30s"),
        ("8d", "relative.offset 8d is longer than 7d"),
        ("10m", "relative.offset 10m must be longer than the normal_range's for (10m)"),
    ],
)
def test_relative_offset_1ms_is_positioned_error(
    tmp_path: Path, tree: Path, monkeypatch: Any, capsys: Any, offset: str, fragment: str
) -> None:
    """The rule compared with the value 1ms ago while its tests said '1m earlier'."""
    gauge(tree, RELATIVE.replace("OFFSET", offset))
    found = problems(tmp_path, monkeypatch, capsys)
    assert len(found) == 1
    assert_problem(found, f"{SLO}:14:22", fragment)


@pytest.mark.parametrize("expr", ["sum by (cluster) (up @ 1000)", "sum by (cluster) (rate(up[5m] @ 1000))"])
def test_gauge_at_modifier_is_positioned_error(
    tmp_path: Path, tree: Path, monkeypatch: Any, capsys: Any, expr: str
) -> None:
    gauge(tree, GAUGE.replace("'sum by (cluster) (up)'", f"'{expr}'"))
    found = problems(tmp_path, monkeypatch, capsys)
    assert len(found) == 1
    assert_problem(found, f"{SLO}:12:11", "sli.gauge.expr pins a selector to a fixed time (@ 1000)")


def test_resolve_timeout_0s_is_positioned_error(tmp_path: Path, tree: Path, monkeypatch: Any, capsys: Any) -> None:
    """It was silently written as 5m."""
    project(tree, "alertmanager:\n  resolve_timeout: 0s\n")
    found = problems(tmp_path, monkeypatch, capsys)
    assert found == [f"{PROJECT}:6:20: alertmanager.resolve_timeout must be positive (Alertmanager's default is 5m)"]


@pytest.mark.parametrize(
    ("labels", "location", "fragment"),
    [
        ("{release: 'not a label value!'}", "8:23", "labels.release is not a Kubernetes label value"),
        ("{release: " + "x" * 64 + "}", "8:23", "labels.release is not a Kubernetes label value"),
        ("{release: x, 'bad key!': y}", "8:26", "labels has a key that is not a Kubernetes label key"),
        ("{" + "k" * 64 + ": y}", "8:14", "labels has a key that is not a Kubernetes label key"),
    ],
    ids=["value-characters", "value-length", "key-characters", "key-length"],
)
def test_operator_label_value_not_a_kubernetes_label_value_is_positioned_error(
    tmp_path: Path, tree: Path, monkeypatch: Any, capsys: Any, labels: str, location: str, fragment: str
) -> None:
    project(tree, f"rule_profiles:\n  prometheus_operator:\n    namespace: monitoring\n    labels: {labels}\n")
    found = problems(tmp_path, monkeypatch, capsys)
    assert len(found) == 1
    assert_problem(found, f"{PROJECT}:{location}", fragment)


def test_slice_label_datasource_gets_its_own_dashboard_variable(
    tmp_path: Path, tree: Path, monkeypatch: Any, capsys: Any
) -> None:
    """Grafana's own metrics carry a `datasource` label; it must not clash with the data source picker."""
    edit(tree, SLO, "  by: [cluster]\n", "  by: [cluster, datasource]\n")
    out = generate(tmp_path, monkeypatch, capsys)
    for dashboard in sorted((out / "grafana" / "dashboards").glob("*.json")):
        data = json.loads(dashboard.read_text(encoding="utf-8"))
        names = [variable["name"] for variable in data["templating"]["list"]]
        assert names == ["datasource", "cluster", "datasource_"], dashboard.name
        exprs = [target["expr"] for panel in data["panels"] for target in panel.get("targets", [])]
        assert exprs and any('datasource=~"$datasource_"' in expr for expr in exprs), dashboard.name
        assert not any('datasource=~"$datasource"' in expr for expr in exprs), dashboard.name
    runbook = (out / "runbooks" / "dns-errors.md").read_text(encoding="utf-8")
    assert "var-cluster=<cluster>&var-datasource_=<datasource>" in runbook
    assert_engines_accept(out)


# -- the same classes nearby -------------------------------------------------------------------


@pytest.mark.parametrize(
    ("old", "new", "location", "shown"),
    [
        ("  max: 5\n", "  max: .inf\n", "14:8", "normal_range.max: .inf"),
        ("  max: 5\n", "  max: 5\n  min: -.inf\n", "15:8", "normal_range.min: -.inf"),
        ("  max: 5\n", "  relative: {offset: 1h, max_factor: .nan}\n", "14:38", "relative.max_factor: .nan"),
    ],
)
def test_nan_and_inf_in_any_number_are_positioned_errors(
    tmp_path: Path, tree: Path, monkeypatch: Any, capsys: Any, old: str, new: str, location: str, shown: str
) -> None:
    """JSON Schema bounds cannot exclude NaN (it compares false with everything)."""
    gauge(tree, GAUGE.replace(old, new))
    found = problems(tmp_path, monkeypatch, capsys)
    assert_problem(found, f"{SLO}:{location}", f"{shown} is not a finite number")


@pytest.mark.parametrize(
    ("old", "new", "location", "field"),
    [
        ("  for: 10m\n", "  for: 100y\n", "18:8", "persistence.for is 36500d"),
        ("  for: 10m\n", "  for: 10m\n  keep_firing_for: 25h\n", "19:20", "persistence.keep_firing_for is 1d1h"),
        ("persistence:\n", "no_data: {for: 2d}\npersistence:\n", "17:16", "no_data.for is 2d"),
        (
            PERIOD,
            PERIOD + "  burn_alerts:\n    - {severity: page, long: 1h, short: 5m, factor: 14.4, for: 290y}\n",
            "18:64",
            "objective.burn_alerts[0].for is 105850d",
        ),
    ],
    ids=["persistence-for", "keep-firing-for", "no-data-for", "burn-for"],
)
def test_waits_over_a_day_are_positioned_errors(
    tmp_path: Path, tree: Path, monkeypatch: Any, capsys: Any, old: str, new: str, location: str, field: str
) -> None:
    """A 100y `for` exhausted memory in the test generator, which simulates every minute of the wait."""
    edit(tree, SLO, old, new)
    found = problems(tmp_path, monkeypatch, capsys)
    assert len(found) == 1
    assert_problem(found, f"{SLO}:{location}", f"{field}, longer than 1d")


def test_no_data_for_0s_is_positioned_error(tmp_path: Path, tree: Path, monkeypatch: Any, capsys: Any) -> None:
    """With 0s every generated test failed: the no-data alert fired before the first rate."""
    edit(tree, SLO, "persistence:\n", "no_data: {for: 0s}\npersistence:\n")
    found = problems(tmp_path, monkeypatch, capsys)
    assert len(found) == 1
    assert_problem(found, f"{SLO}:17:16", "no_data.for must be positive (default 15m)")


def test_limits_themselves_compile_and_pass_the_engines(
    tmp_path: Path, tree: Path, monkeypatch: Any, capsys: Any
) -> None:
    """The boundaries are accepted and proven: the smallest factor, an offset 1m longer than the band's
    for, a 1d keep_firing_for."""
    burn_alert(tree, "severity: ticket, long: 1h, short: 5m, factor: 0.01")
    slo = tree / FILES[SLO]
    watchers = (
        RELATIVE.replace("OFFSET", "11m")
        .replace("'sum by (cluster) (up)'", "'sum by (cluster) (apiserver_longrunning_requests)'")
        .replace("max_factor: 3}", "max_factor: 3, floor: 10}")
    )
    second = VALID_SLO.replace("name: dns-errors", "name: watchers").replace(RATIO_SLI_AND_OBJECTIVE, watchers)
    second = second.replace("  for: 10m\n", "  for: 10m\n  keep_firing_for: 1d\n")
    slo.write_text(slo.read_text(encoding="utf-8") + "---\n" + second, encoding="utf-8")
    out = generate(tmp_path, monkeypatch, capsys)
    tests = (out / "prometheus" / "tests" / "watchers.test.yaml").read_text(encoding="utf-8")
    assert "WatchersAboveNormalRange: the value rises" in tests and "past 3x its value 11m earlier" in tests
    assert "1e-05" in (out / "prometheus" / "rules" / "dns-errors.rules.yaml").read_text(encoding="utf-8")
    assert_engines_accept(out)


def _wrongly_typed_project() -> Iterator[tuple[str, str]]:
    """(case, Project document) with each setting in turn replaced by each kind of wrong value."""
    settings: dict[str, Any] = {
        "apiVersion": "slo-compiler/v1",
        "kind": "Project",
        "evaluation_interval": "1m",
        "alertmanager": {"timing": {"page": {"group_wait": "10s"}}, "resolve_timeout": "5m"},
        "automations": [{"name": "fix", "url": "http://127.0.0.1:9/fix", "credentials_file": "/c"}],
        "rule_profiles": {
            "prometheus_operator": {"namespace": "monitoring", "labels": {"release": "x"}},
            "thanos": {"partial_response_strategy": "warn"},
            "mimir": {"tenant": "platform"},
        },
        "cluster_profile": {"nodes": 10, "label_cardinality": {"cluster": 2}, "default_series_budget": 100},
    }

    def paths(node: Any, path: tuple[str | int, ...]) -> Iterator[tuple[str | int, ...]]:
        yield path
        children = node.items() if isinstance(node, dict) else enumerate(node) if isinstance(node, list) else []
        for key, child in children:
            yield from paths(child, (*path, key))

    # Each wrong value with the type it has; numbers get -1 and NaN, which no count allows.
    wrongs = {'"x"': str, "[1]": list, "{a: 1}": dict, "-1": None, ".nan": None}
    for path in list(paths(settings, ()))[3:]:  # not the document, apiVersion or kind
        doc = json.loads(json.dumps(settings))
        node = doc
        for key in path[:-1]:
            node = node[key]
        original = node[path[-1]]
        for wrong, kind in wrongs.items():
            if kind is not None and isinstance(original, kind):
                continue  # the right type: not a wrong value
            node[path[-1]] = "WRONG"
            # JSON is a YAML flow mapping, and .nan is a YAML float inside one.
            yield ".".join(map(str, path)) + "=" + wrong, json.dumps(doc).replace('"WRONG"', wrong) + "\n"


def test_project_settings_of_every_wrong_type_are_positioned_errors(
    tmp_path: Path, tree: Path, monkeypatch: Any, capsys: Any
) -> None:
    """build_project reads a Project that failed its schema; no wrongly typed setting may crash it or be dropped."""
    monkeypatch.chdir(tmp_path)
    accepted = []
    for case, document in _wrongly_typed_project():
        (tree / FILES[PROJECT]).write_text(document, encoding="utf-8")
        code = cli.main(["validate", "--specs", "specs"])
        err = capsys.readouterr().err
        assert "internal error" not in err, f"{case}: {err}"
        assert all(re.match(r"^specs/project\.yaml:1:\d+: ", line) for line in err.splitlines()[:-1]), f"{case}: {err}"
        if code == cli.EXIT_OK:
            accepted.append(case)
    assert accepted == [], accepted


def _second_spec(tree: Path) -> None:
    slo = tree / FILES[SLO]
    slo.with_name("dns-latency.yaml").write_text(
        slo.read_text(encoding="utf-8").replace("name: dns-errors", "name: dns-latency"), encoding="utf-8"
    )


def test_target_failure_on_one_spec_is_reported_at_that_spec(
    tmp_path: Path, tree: Path, monkeypatch: Any, capsys: Any
) -> None:
    """A spec that passes every check but breaks a target names the spec (exit 1), not 'internal error'."""
    _second_spec(tree)

    def broken(alert_plan: Plan) -> dict[str, bytes]:
        if any(spec.slo.name == "dns-errors" for spec in alert_plan):
            raise ValueError("cannot render dns-errors")
        return {}

    monkeypatch.setattr(targets, "TARGETS", (*targets.TARGETS, ("broken", broken)))
    found = problems(tmp_path, monkeypatch, capsys)
    assert found == [
        f"{SLO}:10:1: cannot compile this spec (ValueError: cannot render dns-errors); no check caught the problem, "
        "so please also report it as a compiler bug"
    ]


@pytest.mark.parametrize("fails_when", ["together", "always"])
def test_target_failure_of_no_single_spec_stays_an_internal_error(
    tmp_path: Path, tree: Path, monkeypatch: Any, capsys: Any, fails_when: str
) -> None:
    """A failure that no one spec causes (only together, or every spec alike) is a compiler bug, not a spec problem."""
    _second_spec(tree)

    def broken(alert_plan: Plan) -> dict[str, bytes]:
        if fails_when == "always" or len(alert_plan.specs) > 1:
            raise ValueError("bug")
        return {}

    monkeypatch.setattr(targets, "TARGETS", (*targets.TARGETS, ("broken", broken)))
    monkeypatch.chdir(tmp_path)
    assert cli.main(["validate", "--specs", "specs"]) == cli.EXIT_INTERNAL
    assert "slo-compiler: internal error: ValueError: bug" in capsys.readouterr().err
