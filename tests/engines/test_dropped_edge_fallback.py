"""A latency threshold on an edge the stack drops may read the nearest kept edge above (issue 13 item 4).

kube-prometheus drops ``le="30"`` of the apiserver SLI histogram, the official 30 s threshold
of namespace- and cluster-scope LISTs, so the library's apiserver-read-latency was refused there
and the library did not compile on that stack. A spec may now state ``on_dropped_edge:
next_kept_above``: the threshold reads the nearest kept edge above (45 s there), a note on
``generate`` says so at the threshold, and the runbook and ``explain`` give the reason. The
default stays an error, at the threshold. Each test runs the real CLI on a temp spec tree
(conftest.py); the generated proof of a fallback spec is run with the real promtool.
"""

from __future__ import annotations

import shutil
from pathlib import Path

from tests.conftest import PROJECT_YAML, RunCli
from tests.promtool_runs import promtool_test
from tests.unit.source.test_errors import edit, message_at, validate

SLO = "specs/network/dns-errors.yaml"
ORIGINAL_SLI = """\
sli:
  ratio:
    bad: 'coredns_dns_responses_total{rcode="SERVFAIL"}'
    total: coredns_dns_responses_total
objective:
  target: 99.9%
  period: 30d
"""
# Lines 10-16: the threshold's value is at 13:16.
LIST_LATENCY = """\
sli:
  latency:
    histogram: apiserver_request_sli_duration_seconds
    threshold: {threshold}
{option}objective:
  target: 99%
  period: 30d
"""
OPTION = "    on_dropped_edge: next_kept_above\n"
REFUSED = (
    "latency threshold 30 is an edge kube-prometheus drops for apiserver_request_sli_duration_seconds_bucket (its "
    "apiserver ServiceMonitor metricRelabelings, jsonnet/kube-prometheus/components/k8s-control-plane.libsonnet:327), "
    'so no series has le="30" and every request would read as slow: pick a kept edge (nearest: 20 or 45), or if your '
    "stack keeps it, set scrape_profile.dropped_buckets.apiserver_request_sli_duration_seconds in project.yaml"
)
NOTE = (
    'on kube-prometheus this threshold reads le="45" because the stack drops le="30" of '
    "apiserver_request_sli_duration_seconds_bucket (its apiserver ServiceMonitor metricRelabelings, "
    "jsonnet/kube-prometheus/components/k8s-control-plane.libsonnet:327); on_dropped_edge: next_kept_above chose "
    "the nearest kept edge above, so requests up to that edge count as fast"
)


def spec(spec_tree: Path, stack: str, threshold: str = "30", option: str = OPTION, extra: str = "") -> None:
    (spec_tree / "project.yaml").write_text(
        PROJECT_YAML + f"scrape_profile:\n  stack: {stack}\n{extra}", encoding="utf-8"
    )
    slo_file = spec_tree / "network" / "dns-errors.yaml"
    edit(slo_file, """  selector: '{job="kube-dns"}'\n""", "  component: apiserver\n")
    edit(slo_file, ORIGINAL_SLI, LIST_LATENCY.format(threshold=threshold, option=option))


def generate(run_cli: RunCli, tmp_path: Path) -> tuple[Path, str]:
    code, _, stderr = run_cli(["generate", "--specs", "specs", "--out", "out"], tmp_path)
    assert code == 0, stderr
    return tmp_path / "out", stderr


def test_without_the_option_a_dropped_edge_is_still_refused_at_the_threshold(
    run_cli: RunCli, tmp_path: Path, spec_tree: Path
) -> None:
    spec(spec_tree, "kube-prometheus", option="")
    stderr = validate(run_cli, tmp_path, problems=1)
    assert message_at(stderr, f"{SLO}:13:16") == REFUSED
    assert ": note: " not in stderr


def test_with_the_option_the_threshold_reads_the_next_kept_edge_with_a_note(
    run_cli: RunCli, tmp_path: Path, spec_tree: Path
) -> None:
    spec(spec_tree, "kube-prometheus")
    out, stderr = generate(run_cli, tmp_path)
    assert [line for line in stderr.splitlines() if ": note: " in line] == [f"{SLO}:13:16: note: {NOTE}"], stderr
    rules = (out / "prometheus" / "rules" / "dns-errors.rules.yaml").read_text(encoding="utf-8")
    assert 'le=~"45(\\\\.0)?"' in rules and 'le=~"30' not in rules
    runbook = (out / "runbooks" / "dns-errors.md").read_text(encoding="utf-8")
    assert f"- **Dropped edge:** {NOTE}" in runbook.splitlines()
    proof = promtool_test(out / "prometheus" / "tests" / "dns-errors.test.yaml", timeout=120)
    assert proof.returncode == 0, proof.stdout + proof.stderr


def test_explain_gives_the_reason_per_threshold(run_cli: RunCli, tmp_path: Path, spec_tree: Path) -> None:
    spec(spec_tree, "kube-prometheus")
    code, stdout, stderr = run_cli(["explain", "dns-errors", "--specs", "specs"], tmp_path)
    assert code == 0, stderr
    assert f"  note: {NOTE}" in stdout.splitlines(), stdout


def test_a_kept_edge_is_read_as_declared_and_says_nothing(run_cli: RunCli, tmp_path: Path, spec_tree: Path) -> None:
    spec(spec_tree, "kube-prometheus-stack")
    out, stderr = generate(run_cli, tmp_path)
    assert ": note: " not in stderr
    rules = (out / "prometheus" / "rules" / "dns-errors.rules.yaml").read_text(encoding="utf-8")
    assert 'le=~"30(\\\\.0)?"' in rules
    assert "Dropped edge" not in (out / "runbooks" / "dns-errors.md").read_text(encoding="utf-8")


def test_with_no_kept_edge_above_the_threshold_is_refused_and_says_why(
    run_cli: RunCli, tmp_path: Path, spec_tree: Path
) -> None:
    dropped = "  dropped_buckets: {apiserver_request_sli_duration_seconds: [60]}\n"
    spec(spec_tree, "custom", threshold="60", extra="  components: {apiserver: '{job=\"apiserver\"}'}\n" + dropped)
    message = message_at(validate(run_cli, tmp_path, problems=1), f"{SLO}:13:16")
    assert message.startswith("latency threshold 60 is an edge custom drops"), message
    assert message.endswith("; on_dropped_edge: next_kept_above finds no kept edge above it"), message


def test_an_unknown_choice_is_a_schema_error_at_the_value(run_cli: RunCli, tmp_path: Path, spec_tree: Path) -> None:
    spec(spec_tree, "kube-prometheus", option="    on_dropped_edge: nearest\n")
    message = message_at(validate(run_cli, tmp_path), f"{SLO}:14:22")
    assert "nearest" in message and "next_kept_above" in message, message


def test_the_library_compiles_on_kube_prometheus_reading_45_s_for_the_dropped_30_s(
    run_cli: RunCli, tmp_path: Path, repo_root: Path
) -> None:
    """Review X1 on the shipped specs: the three 30 s thresholds of apiserver-read-latency read 45 s there."""
    specs = tmp_path / "specs"
    shutil.copytree(repo_root / "slo_specs", specs)
    edit(specs / "project.yaml", "  stack: kube-prometheus-stack\n", "  stack: kube-prometheus\n")
    code, _, stderr = run_cli(["validate", "--specs", "specs"], tmp_path)
    assert code == 0, stderr
    fallbacks = [line for line in stderr.splitlines() if "on_dropped_edge: next_kept_above chose" in line]
    assert len(fallbacks) == 3, stderr
    assert all(line.startswith("specs/scheduling-api-latency/apiserver-read-latency.yaml:") for line in fallbacks)
    assert all('reads le="45" because the stack drops le="30"' in line for line in fallbacks), stderr
