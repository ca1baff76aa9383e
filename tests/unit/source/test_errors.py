"""Every class of spec mistake is reported as ``path:line:col: message`` at the mistake, with exit 1.

Each test breaks one line of the valid tree from conftest.py (see its line map) and runs
``python -m compiler validate --specs specs`` with cwd = tmp_path, so paths print relative.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from pathlib import Path

import pytest

from tests.conftest import RATIO_SLI_AND_OBJECTIVE

RunCli = Callable[[Sequence[str | Path], Path], tuple[int, str, str]]

SLO = "specs/network/dns-errors.yaml"
OWNERS = "specs/owners.yaml"
PROJECT = "specs/project.yaml"


def edit(path: Path, old: str, new: str) -> None:
    """Replace the one occurrence of ``old`` in ``path``."""
    text = path.read_text(encoding="utf-8")
    assert text.count(old) == 1, f"{old!r} must occur exactly once in {path}"
    path.write_text(text.replace(old, new), encoding="utf-8")


def validate(run_cli: RunCli, tmp_path: Path, problems: int | None = None) -> str:
    """Run validate, check the failure contract, and return stderr."""
    code, stdout, stderr = run_cli(["validate", "--specs", "specs"], tmp_path)
    assert code == 1, stderr
    assert stdout == ""
    assert "Traceback" not in stderr
    assert "internal error" not in stderr
    assert stderr.endswith("problem(s); nothing written\n")
    if problems is not None:
        assert f"slo-compiler: {problems} problem(s); nothing written" in stderr, stderr
    return stderr


def message_at(stderr: str, location: str) -> str:
    """The one diagnostic message reported at ``location`` (``path:line:col``)."""
    messages = [line.removeprefix(f"{location}: ") for line in stderr.splitlines() if line.startswith(f"{location}: ")]
    assert len(messages) == 1, f"expected one diagnostic at {location}, got:\n{stderr}"
    return messages[0]


def diagnostics(stderr: str) -> list[str]:
    return [line for line in stderr.splitlines() if not line.startswith("slo-compiler: ")]


# -- YAML ---------------------------------------------------------------------------------


def test_yaml_syntax_error(run_cli: RunCli, tmp_path: Path, slo_file: Path) -> None:
    edit(slo_file, """  selector: '{job="kube-dns"}'\n""", """  selector: '{job="kube-dns"}' x: y\n""")
    stderr = validate(run_cli, tmp_path, problems=1)
    message = message_at(stderr, f"{SLO}:9:32")
    assert message.startswith("YAML syntax error: ")
    assert "expected key" in message


def test_duplicate_yaml_key(run_cli: RunCli, tmp_path: Path, slo_file: Path) -> None:
    edit(slo_file, "  for: 10m\n", "  for: 10m\n  for: 5m\n")
    stderr = validate(run_cli, tmp_path, problems=1)
    assert message_at(stderr, f"{SLO}:19:3") == "duplicate key 'for' (first defined at line 18)"


@pytest.mark.parametrize("word", ["no", "yes", "on", "off", "n"])
def test_yaml_1_1_boolean_words_stay_strings(run_cli: RunCli, tmp_path: Path, slo_file: Path, word: str) -> None:
    """YAML 1.2 core schema: `owner: no` is the string 'no' (an unknown owner), not false (a type error)."""
    edit(slo_file, "owner: platform-network\n", f"owner: {word}\n")
    stderr = validate(run_cli, tmp_path, problems=1)
    message = message_at(stderr, f"{SLO}:5:8")
    assert message.startswith(f"unknown owner '{word}' (teams: platform-network, platform-nodes)")
    assert "boolean" not in stderr
    assert "expected a string" not in stderr


# -- schema -------------------------------------------------------------------------------


def test_unknown_key_suggests_the_right_one(run_cli: RunCli, tmp_path: Path, slo_file: Path) -> None:
    edit(slo_file, "owner: platform-network\n", "ownr: platform-network\n")
    stderr = validate(run_cli, tmp_path)
    assert message_at(stderr, f"{SLO}:5:1") == "unknown key 'ownr' at the top level; did you mean 'owner'?"
    # The key it replaced is now missing; that is reported too, at the document.
    assert "missing required field 'owner'" in message_at(stderr, f"{SLO}:1:1")


def test_missing_required_field(run_cli: RunCli, tmp_path: Path, slo_file: Path) -> None:
    edit(slo_file, "  target: 99.9%\n", "")
    stderr = validate(run_cli, tmp_path, problems=1)
    # Reported at the objective mapping (its first key, `period`, now on line 15).
    assert message_at(stderr, f"{SLO}:15:3") == "missing required field 'target' in objective"


def test_wrong_type(run_cli: RunCli, tmp_path: Path, slo_file: Path) -> None:
    edit(slo_file, "  by: [cluster]\n", "  by: cluster\n")
    stderr = validate(run_cli, tmp_path, problems=1)
    assert message_at(stderr, f"{SLO}:8:7") == "slice.by: expected a list, got a string"


def test_bad_duration(run_cli: RunCli, tmp_path: Path, slo_file: Path) -> None:
    edit(slo_file, "  for: 10m\n", "  for: 5 minutes\n")
    stderr = validate(run_cli, tmp_path, problems=1)
    message = message_at(stderr, f"{SLO}:18:8")
    assert message.startswith("persistence.for is not a Prometheus duration")
    assert '"5 minutes"' in message


def test_invalid_label_name_in_slice_by(run_cli: RunCli, tmp_path: Path, slo_file: Path) -> None:
    edit(slo_file, "  by: [cluster]\n", "  by: [cluster, node-pool]\n")
    stderr = validate(run_cli, tmp_path, problems=1)
    message = message_at(stderr, f"{SLO}:8:17")
    assert message.startswith("slice.by[1] is not a valid Prometheus label name")
    assert '"node-pool"' in message


# -- semantic checks ----------------------------------------------------------------------


@pytest.mark.parametrize("target", ["100%", "0%", "150%"])
def test_objective_out_of_range(run_cli: RunCli, tmp_path: Path, slo_file: Path, target: str) -> None:
    edit(slo_file, "  target: 99.9%\n", f"  target: {target}\n")
    stderr = validate(run_cli, tmp_path, problems=1)
    assert message_at(stderr, f"{SLO}:15:11") == (
        f"objective {target} is out of range: it must be above 0% and below 100%"
    )


def test_duplicate_spec_name_across_files(run_cli: RunCli, tmp_path: Path, spec_tree: Path, valid_slo: str) -> None:
    # Two comment lines push `name:` of the copy down to line 5.
    (spec_tree / "zz-copy.yaml").write_text("# a copy\n# of dns-errors\n" + valid_slo, encoding="utf-8")
    stderr = validate(run_cli, tmp_path, problems=1)
    assert message_at(stderr, "specs/zz-copy.yaml:5:7") == (
        f"duplicate spec name 'dns-errors' (first defined at {SLO}:3:7)"
    )


def test_unknown_owner_suggests_a_team(run_cli: RunCli, tmp_path: Path, slo_file: Path) -> None:
    edit(slo_file, "owner: platform-network\n", "owner: platform-netwrk\n")
    stderr = validate(run_cli, tmp_path, problems=1)
    assert message_at(stderr, f"{SLO}:5:8") == (
        "unknown owner 'platform-netwrk' (teams: platform-network, platform-nodes); did you mean 'platform-network'?"
    )


def test_invalid_promql_selector(run_cli: RunCli, tmp_path: Path, slo_file: Path) -> None:
    edit(slo_file, "    total: coredns_dns_responses_total\n", """    total: 'foo{job="a"'\n""")
    stderr = validate(run_cli, tmp_path, problems=1)
    message = message_at(stderr, f"{SLO}:13:12")
    assert message.startswith("invalid PromQL selector in sli.ratio.total: ")
    assert "brace" in message


@pytest.mark.parametrize(
    ("kind", "extra", "expr", "detail"),
    [
        ("gauge", "normal_range:\n  max: 5\n", "sum by (cluster) (rate(foo_total[5m])", "parenthesis"),
        ("state", "objective:\n  target: 99.9%\n  period: 30d\n", 'up{job="x"} ==', "invalid"),
    ],
)
def test_invalid_promql_expr(
    run_cli: RunCli, tmp_path: Path, slo_file: Path, kind: str, extra: str, expr: str, detail: str
) -> None:
    edit(slo_file, RATIO_SLI_AND_OBJECTIVE, f"sli:\n  {kind}:\n    expr: '{expr}'\n{extra}")
    stderr = validate(run_cli, tmp_path, problems=1)
    message = message_at(stderr, f"{SLO}:12:11")
    assert message.startswith(f"invalid PromQL in sli.{kind}.expr: ")
    assert detail in message


def test_invalid_latency_when_matcher(run_cli: RunCli, tmp_path: Path, slo_file: Path) -> None:
    edit(
        slo_file,
        RATIO_SLI_AND_OBJECTIVE,
        "sli:\n"
        "  latency:\n"
        "    histogram: apiserver_request_sli_duration_seconds\n"
        "    threshold:\n"
        "      - when: '{scope=\"resource\"}'\n"
        "        le: 1\n"
        "      - when: '{scope=~\"cluster\"'\n"  # line 16: unclosed brace
        "        le: 30\n"
        "objective:\n  target: 99%\n  period: 30d\n",
    )
    stderr = validate(run_cli, tmp_path, problems=1)
    message = message_at(stderr, f"{SLO}:16:15")
    assert message.startswith("invalid PromQL selector in sli.latency.threshold[1].when: ")


def test_latency_threshold_not_a_bucket_edge(run_cli: RunCli, tmp_path: Path, slo_file: Path) -> None:
    edit(
        slo_file,
        RATIO_SLI_AND_OBJECTIVE,
        "sli:\n"
        "  latency:\n"
        "    histogram: scheduler_pod_scheduling_sli_duration_seconds\n"
        "    threshold: 5\n"  # line 13; edges are 0.01 x 2^n: ..., 2.56, 5.12, ...
        "objective:\n  target: 99%\n  period: 7d\n",
    )
    stderr = validate(run_cli, tmp_path, problems=1)
    assert message_at(stderr, f"{SLO}:13:16") == (
        "latency threshold 5 is not a bucket edge of scheduler_pod_scheduling_sli_duration_seconds; "
        "nearest edges: 2.56 or 5.12"
    )


def test_raw_range_longer_than_5m(run_cli: RunCli, tmp_path: Path, slo_file: Path) -> None:
    gauge = "sli:\n  gauge:\n    expr: 'sum by (cluster) (rate(foo_total[10m]))'\nnormal_range:\n  max: 5\n"
    edit(slo_file, RATIO_SLI_AND_OBJECTIVE, gauge)
    stderr = validate(run_cli, tmp_path, problems=1)
    message = message_at(stderr, f"{SLO}:12:11")
    assert message.startswith("sli.gauge.expr reads raw series over 10m;")
    assert "at most 5m" in message


def test_raw_range_of_5m_is_allowed(run_cli: RunCli, tmp_path: Path, slo_file: Path) -> None:
    gauge = "sli:\n  gauge:\n    expr: 'sum by (cluster) (rate(foo_total[5m]))'\nnormal_range:\n  max: 5\n"
    edit(slo_file, RATIO_SLI_AND_OBJECTIVE, gauge)
    code, stdout, stderr = run_cli(["validate", "--specs", "specs"], tmp_path)
    assert (code, stderr) == (0, "")
    assert stdout.endswith("slo-compiler: 1 spec(s) valid\n")


def test_slicing_by_node_needs_an_explicit_budget(run_cli: RunCli, tmp_path: Path, slo_file: Path) -> None:
    edit(slo_file, "  by: [cluster]\n", "  by: [cluster, node]\n")
    stderr = validate(run_cli, tmp_path, problems=1)
    message = message_at(stderr, f"{SLO}:8:3")
    assert message.startswith("slicing by node records about 90,001 series on the 7,500-node GPU cluster")
    assert "explicit series_budget" in message


def test_a_spec_over_its_series_budget_is_refused(run_cli: RunCli, tmp_path: Path, slo_file: Path) -> None:
    edit(slo_file, "  by: [cluster]\n", "  by: [cluster, node]\n  cardinality: {node: 500}\n")
    with slo_file.open("a", encoding="utf-8") as handle:
        handle.write("series_budget: 1000\n")
    stderr = validate(run_cli, tmp_path, problems=1)
    assert "over its budget of 1,000" in stderr
    assert "records about 6,001 series (500 slices x 12 recorded series)" in stderr


def test_aggregation_drops_slice_label(run_cli: RunCli, tmp_path: Path, slo_file: Path) -> None:
    gauge = "sli:\n  gauge:\n    expr: 'sum by (job) (rate(foo_total[5m]))'\nnormal_range:\n  max: 5\n"
    edit(slo_file, RATIO_SLI_AND_OBJECTIVE, gauge)
    stderr = validate(run_cli, tmp_path, problems=1)
    message = message_at(stderr, f"{SLO}:12:11")
    assert message.startswith("sli.gauge.expr drops slice label(s) cluster in an aggregation")


def test_quantile_max_at_top_bucket_edge_can_never_be_exceeded(run_cli: RunCli, tmp_path: Path, slo_file: Path) -> None:
    quantile = (
        "sli:\n"
        "  quantile:\n"
        "    histogram: scheduler_pod_scheduling_sli_duration_seconds\n"
        "    quantile: 0.99\n"
        "normal_range:\n"
        "  max: 5242.88\n"  # line 15: the top finite edge, 0.01 x 2^19
    )
    edit(slo_file, RATIO_SLI_AND_OBJECTIVE, quantile)
    stderr = validate(run_cli, tmp_path, problems=1)
    message = message_at(stderr, f"{SLO}:15:8")
    assert message.startswith("normal_range.max 5242.88 can never be exceeded")
    assert "top finite bucket edge 5242.88" in message


def test_burn_factor_of_100_percent_errors(run_cli: RunCli, tmp_path: Path, slo_file: Path) -> None:
    burn_alerts = (
        "  period: 30d\n"
        "  burn_alerts:\n"
        "    - severity: page\n"
        "      long: 1h\n"
        "      short: 5m\n"
        "      factor: 14.4\n"
        "    - severity: page\n"  # line 22: 1000 x the 0.1% budget = 100% errors
        "      long: 6h\n"
        "      short: 30m\n"
        "      factor: 1000\n"
    )
    edit(slo_file, "  period: 30d\n", burn_alerts)
    stderr = validate(run_cli, tmp_path, problems=1)
    message = message_at(stderr, f"{SLO}:22:7")
    assert message.startswith("burn threshold 1000")
    assert "0.1% budget is 100% errors, which can never be exceeded" in message


# -- several files at once ----------------------------------------------------------------


def test_three_mistakes_in_three_files_reported_together_and_sorted(
    run_cli: RunCli, tmp_path: Path, spec_tree: Path, slo_file: Path
) -> None:
    # Found in three different stages (owners, project, SLO), i.e. not in path order.
    with (spec_tree / "owners.yaml").open("a", encoding="utf-8") as owners:
        owners.write(
            '  - name: platform-network\n    contact: "#again"\n'
            "    receivers: {page: [{email: {to: a@b.c}}], ticket: [{email: {to: a@b.c}}]}\n"
        )
    edit(spec_tree / "project.yaml", "evaluation_interval: 1m\n", "evaluation_interval: 10m\n")
    edit(slo_file, "    total: coredns_dns_responses_total\n", """    total: 'foo{job="a"'\n""")
    stderr = validate(run_cli, tmp_path, problems=3)
    found = diagnostics(stderr)
    assert [line.split(": ", 1)[0] for line in found] == [f"{SLO}:13:12", f"{OWNERS}:10:11", f"{PROJECT}:4:22"]
    assert found[0].startswith(f"{SLO}:13:12: invalid PromQL selector in sli.ratio.total")
    assert found[1] == f"{OWNERS}:10:11: duplicate team 'platform-network' (first defined at {OWNERS}:4:11)"
    assert found[2] == f"{PROJECT}:4:22: evaluation_interval must be a duration from 1s to 5m"


def test_a_typo_in_one_team_does_not_orphan_the_specs_of_the_others(
    run_cli: RunCli, tmp_path: Path, spec_tree: Path
) -> None:
    edit(spec_tree / "owners.yaml", '    contact: "#platform-nodes"\n', '    contcat: "#platform-nodes"\n')
    stderr = validate(run_cli, tmp_path)
    assert "unknown owner" not in stderr
    assert message_at(stderr, f"{OWNERS}:8:5") == "unknown key 'contcat' in teams[1]; did you mean 'contact'?"


def test_an_expression_no_synthetic_input_can_drive_is_reported_at_the_sli(
    run_cli: RunCli, tmp_path: Path, slo_file: Path
) -> None:
    # Every alert needs a generated promtool test; time() cannot be driven by input series.
    edit(
        slo_file,
        RATIO_SLI_AND_OBJECTIVE,
        "sli:\n  gauge:\n    expr: 'sum by (cluster) (time() - node_boot_time_seconds)'\nnormal_range:\n  max: 86400\n",
    )
    stderr = validate(run_cli, tmp_path, problems=1)
    message = message_at(stderr, f"{SLO}:10:1")
    assert message.startswith("cannot generate the promtool tests that prove its alerts: ")
    assert "time" in message


def test_jsonnet_errors_are_positioned_and_imports_stay_inside_the_spec_dir(
    run_cli: RunCli, tmp_path: Path, spec_tree: Path
) -> None:
    (spec_tree / "syntax.jsonnet").write_text("{\n  a: 1,\n  b: ;\n}\n", encoding="utf-8")
    (spec_tree / "escape.jsonnet").write_text("import '../../outside.libsonnet'\n", encoding="utf-8")
    (tmp_path / "outside.libsonnet").write_text("{}", encoding="utf-8")
    stderr = validate(run_cli, tmp_path, problems=2)
    assert message_at(stderr, "specs/syntax.jsonnet:3:6").startswith("jsonnet error: unexpected")
    assert "leaves the spec directory" in message_at(stderr, "specs/escape.jsonnet:1:1")


def test_control_characters_in_diagnostics_are_escaped(
    run_cli: RunCli, tmp_path: Path, spec_tree: Path, slo_file: Path
) -> None:
    """A newline in a file name or in a quoted value cannot split a diagnostic or forge one of its own:
    every problem is one line, the control characters written as escapes."""
    (spec_tree / "bad\nname.yaml").write_text("a: [\n", encoding="utf-8")
    edit(slo_file, "owner: platform-network", 'owner: "platform-network\\nspecs/fake.yaml:1:1: forged\\x1b[2J"')
    stderr = validate(run_cli, tmp_path, problems=2)
    lines = stderr.splitlines()
    assert len(lines) == 3, stderr
    assert message_at(stderr, "specs/bad\\x0aname.yaml:2:1").startswith("YAML syntax error")
    owner = message_at(stderr, f"{SLO}:5:8")
    assert owner.startswith("unknown owner 'platform-network\\x0aspecs/fake.yaml:1:1: forged\\x1b[2J'"), owner
    assert not any(line.startswith("specs/fake.yaml") for line in lines)
    assert "\x1b" not in stderr


def test_jsonnet_library_error_is_reported_at_the_library(run_cli: RunCli, tmp_path: Path, spec_tree: Path) -> None:
    """An error raised in lib.libsonnet:4 is at the library's own path:line:col, naming the spec file it
    evaluated (was: at line 4 of the importing file, a comment); one inside jsonnet's std is at the spec
    line that called it (was: the line number in std.jsonnet)."""
    (spec_tree / "lib").mkdir()
    (spec_tree / "lib" / "lib.libsonnet").write_text(
        "// helpers\n{\n  broken(x)::\n    error 'library failure ' + x,\n}\n", encoding="utf-8"
    )
    (spec_tree / "lib" / "syntax.libsonnet").write_text("{\n  a: 1,\n  b: ;\n}\n", encoding="utf-8")
    (spec_tree / "uses.jsonnet").write_text(
        "// 1\n// 2\n// 3\n// 4: a comment\nlocal lib = import 'lib/lib.libsonnet';\nlib.broken('boom')\n",
        encoding="utf-8",
    )
    (spec_tree / "static.jsonnet").write_text("import 'lib/syntax.libsonnet'\n", encoding="utf-8")
    (spec_tree / "std.jsonnet").write_text("local f(x) = std.parseInt(x);\n{a: f('q')}\n", encoding="utf-8")
    stderr = validate(run_cli, tmp_path, problems=3)
    assert message_at(stderr, "specs/lib/lib.libsonnet:4:5") == (
        "jsonnet error: library failure boom (evaluating specs/uses.jsonnet)"
    )
    assert message_at(stderr, "specs/lib/syntax.libsonnet:3:6").startswith("jsonnet error: unexpected")
    assert message_at(stderr, "specs/std.jsonnet:1:14") == "jsonnet error: q is not a base 10 integer"
    assert "specs/uses.jsonnet:" not in stderr


def test_jsonnet_specs_compile_like_yaml_ones(run_cli: RunCli, tmp_path: Path, spec_tree: Path, valid_slo: str) -> None:
    import json

    import yaml

    spec = yaml.safe_load(valid_slo)
    lib = "{ stamp(base, names):: [base + {name: n} for n in names] }\n"
    (spec_tree / "lib.libsonnet").write_text(lib, encoding="utf-8")
    base = json.dumps({k: v for k, v in spec.items() if k != "name"})
    (spec_tree / "stamped.jsonnet").write_text(
        f"local lib = import 'lib.libsonnet';\nlib.stamp({base}, ['dns-a', 'dns-b'])\n", encoding="utf-8"
    )
    code, stdout, stderr = run_cli(["validate", "--specs", "specs"], tmp_path)
    assert (code, stderr) == (0, "")
    assert "3 spec(s) valid" in stdout


def test_optional_slice_label_not_in_slice_by(run_cli: RunCli, tmp_path: Path, slo_file: Path) -> None:
    edit(slo_file, "  by: [cluster]\n", "  by: [cluster]\n  optional_labels: [cluster, zone]\n")
    stderr = validate(run_cli, tmp_path, problems=1)
    message = message_at(stderr, f"{SLO}:9:30")
    assert "slice.optional_labels names 'zone', which is not in slice.by" in message
