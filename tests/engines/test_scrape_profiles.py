"""Scrape profiles (issue 12 item 1): project.yaml names the stack, specs name components.

The same spec must read the series its stack scrapes: kube-prometheus-stack labels CoreDNS
``job="coredns"``, kube-prometheus ``job="kube-dns"``, and both drop ``le`` edges of the
apiserver and etcd histograms, so a threshold on a dropped edge reads 100% slow (library
review X1). Each test runs the real CLI on a temp spec tree (conftest.py) and, where the
claim is about the generated tests, the real promtool.
"""

from __future__ import annotations

import re
import subprocess
from pathlib import Path

from compiler.model.stacks import BUILT_IN_STACKS
from compiler.promql import Matcher
from tests.conftest import PROJECT_YAML, RunCli
from tests.promtool_runs import promtool_test
from tests.unit.source.test_errors import edit, message_at, validate

SLO = "specs/network/dns-errors.yaml"
PROJECT = "specs/project.yaml"

KPS = "scrape_profile:\n  stack: kube-prometheus-stack\n"
KP = "scrape_profile:\n  stack: kube-prometheus\n"
CUSTOM = """\
scrape_profile:
  stack: custom
  components:
    coredns: '{job="dns", namespace="kube-system"}'
  dropped_buckets:
    etcd_request_duration_seconds: [0.1]
  relabeling: our ServiceMonitor, deploy/monitoring/apiserver.yaml:12
"""

ETCD_LATENCY = """\
sli:
  latency:
    histogram: etcd_request_duration_seconds
    threshold: {threshold}
objective:
  target: 99.9%
  period: 30d
"""

ETCD_QUANTILE = """\
sli:
  quantile:
    histogram: etcd_request_duration_seconds
    quantile: 0.99
unit: seconds
normal_range:
  max: 1
  for: 10m
  reason: A healthy etcd answers in single-digit ms.
"""

ORIGINAL_SLI = """\
sli:
  ratio:
    bad: 'coredns_dns_responses_total{rcode="SERVFAIL"}'
    total: coredns_dns_responses_total
objective:
  target: 99.9%
  period: 30d
"""


# The first line set_profile appends is this line of project.yaml (the shared project's length may change).
APPENDED = len(PROJECT_YAML.splitlines()) + 1


def set_profile(spec_tree: Path, profile: str) -> None:
    (spec_tree / "project.yaml").write_text(PROJECT_YAML + profile, encoding="utf-8")


def use_component(slo_file: Path, component: str = "coredns") -> None:
    edit(slo_file, """  selector: '{job="kube-dns"}'\n""", f"  component: {component}\n")


def generate(run_cli: RunCli, tmp_path: Path) -> Path:
    code, _, stderr = run_cli(["generate", "--specs", "specs", "--out", "out"], tmp_path)
    assert code == 0, stderr
    return tmp_path / "out"


def rules_text(out: Path) -> str:
    return (out / "prometheus" / "rules" / "dns-errors.rules.yaml").read_text(encoding="utf-8")


def run_promtool(out: Path) -> subprocess.CompletedProcess[str]:
    tests = out / "prometheus" / "tests"
    return promtool_test(tests / "dns-errors.test.yaml", timeout=120)


def test_built_in_profiles_give_the_documented_job_selectors() -> None:
    kps, kp = BUILT_IN_STACKS["kube-prometheus-stack"], BUILT_IN_STACKS["kube-prometheus"]
    assert kps.component("coredns") == (Matcher("job", "=", "coredns"),)
    assert kp.component("coredns") == (Matcher("job", "=", "kube-dns"),)
    for name in ("apiserver", "kubelet", "node-exporter", "kube-state-metrics", "kube-scheduler"):
        assert kps.component(name) == kp.component(name) == (Matcher("job", "=", name),)
    for stack in (kps, kp):
        assert {"etcd", "kube-controller-manager", "kube-proxy"} <= {name for name, _ in stack.components}
    # values.yaml:1742 drops 0.2 and keeps 30 (since 70.4.2); k8s-control-plane.libsonnet:327 drops 30.
    assert 0.2 in kps.dropped("etcd_request_duration_seconds")
    assert not {0.1, 1.0, 5.0, 30.0} & set(kps.dropped("apiserver_request_sli_duration_seconds"))
    assert 30.0 in kp.dropped("apiserver_request_sli_duration_seconds")
    assert kps.dropped("coredns_dns_request_duration_seconds") == ()


def test_switching_the_profile_changes_job_matchers_without_editing_the_spec(
    run_cli: RunCli, tmp_path: Path, spec_tree: Path, slo_file: Path
) -> None:
    use_component(slo_file)
    spec_bytes = slo_file.read_bytes()
    found = []
    for profile in (KPS, KP, CUSTOM):
        set_profile(spec_tree, profile)
        found.append(
            set(re.findall(r"coredns_dns_responses_total\{([^}]*)\}", rules_text(generate(run_cli, tmp_path))))
        )
        assert slo_file.read_bytes() == spec_bytes
    assert found[0] == {'job="coredns"', 'rcode="SERVFAIL",job="coredns"'}
    assert found[1] == {'job="kube-dns"', 'rcode="SERVFAIL",job="kube-dns"'}
    assert found[2] == {
        'job="dns",namespace="kube-system"',
        'rcode="SERVFAIL",job="dns",namespace="kube-system"',
    }


def test_threshold_on_a_dropped_edge_is_a_positioned_error_naming_the_relabeling(
    run_cli: RunCli, tmp_path: Path, spec_tree: Path, slo_file: Path
) -> None:
    set_profile(spec_tree, KPS)
    edit(slo_file, ORIGINAL_SLI, ETCD_LATENCY.format(threshold="0.2"))
    message = message_at(validate(run_cli, tmp_path, problems=1), f"{SLO}:13:16")
    assert message.startswith(
        "latency threshold 0.2 is an edge kube-prometheus-stack drops for etcd_request_duration_seconds_bucket "
        "(its apiserver ServiceMonitor metricRelabelings, charts/kube-prometheus-stack/values.yaml:1742)"
    ), message
    assert "pick a kept edge (nearest: 0.1 or 1)" in message
    assert "scrape_profile.dropped_buckets.etcd_request_duration_seconds" in message


def test_threshold_list_entry_on_a_dropped_edge_is_reported_at_its_le(
    run_cli: RunCli, tmp_path: Path, spec_tree: Path, slo_file: Path
) -> None:
    """kube-prometheus drops 30: the cluster-scope LIST threshold of apiserver-read-latency (review X1)."""
    set_profile(spec_tree, KP)
    sli = ETCD_LATENCY.replace("etcd_request_duration_seconds", "apiserver_request_sli_duration_seconds").replace(
        "    threshold: {threshold}\n",
        "    threshold:\n"
        "      - {le: 1, when: '{scope=\"resource\"}'}\n"
        "      - {le: 30, when: '{scope!=\"resource\"}'}\n",
    )
    edit(slo_file, ORIGINAL_SLI, sli)
    message = message_at(validate(run_cli, tmp_path, problems=1), f"{SLO}:15:14")
    assert "latency threshold 30 is an edge kube-prometheus drops" in message, message
    assert "k8s-control-plane.libsonnet:327" in message
    assert "pick a kept edge (nearest: 20 or 45)" in message


def test_custom_profile_drops_are_checked_and_quote_its_relabeling(
    run_cli: RunCli, tmp_path: Path, spec_tree: Path, slo_file: Path
) -> None:
    set_profile(spec_tree, CUSTOM)
    edit(slo_file, ORIGINAL_SLI, ETCD_LATENCY.format(threshold="0.1"))
    message = message_at(validate(run_cli, tmp_path, problems=1), f"{SLO}:13:16")
    assert "an edge custom drops for etcd_request_duration_seconds_bucket" in message
    assert "(our ServiceMonitor, deploy/monitoring/apiserver.yaml:12)" in message
    assert "nearest: 0.05 or 0.2" in message


def test_override_keeps_an_edge_a_built_in_stack_drops(
    run_cli: RunCli, tmp_path: Path, spec_tree: Path, slo_file: Path
) -> None:
    """A stack whose relabeling was changed says so per histogram; the spec stays as it is."""
    set_profile(spec_tree, KPS + "  dropped_buckets:\n    etcd_request_duration_seconds: []\n")
    edit(slo_file, ORIGINAL_SLI, ETCD_LATENCY.format(threshold="0.2"))
    generate(run_cli, tmp_path)


def test_component_and_job_matcher_together_is_an_error(
    run_cli: RunCli, tmp_path: Path, spec_tree: Path, slo_file: Path
) -> None:
    set_profile(spec_tree, KPS)
    edit(slo_file, """  selector: '{job="kube-dns"}'\n""", """  component: coredns\n  selector: '{job="kube-dns"}'\n""")
    message = message_at(validate(run_cli, tmp_path, problems=1), f"{SLO}:10:13")
    assert message == (
        "slice.selector matches on job and slice.component 'coredns' gives it from the scrape profile "
        '(kube-prometheus-stack: {job="coredns"}): drop the job matcher, so switching the stack changes it'
    )


def test_unknown_component_is_an_error_with_did_you_mean(
    run_cli: RunCli, tmp_path: Path, spec_tree: Path, slo_file: Path
) -> None:
    set_profile(spec_tree, KPS)
    use_component(slo_file, "cordns")
    message = message_at(validate(run_cli, tmp_path, problems=1), f"{SLO}:9:14")
    assert message.startswith("unknown component 'cordns' in scrape profile kube-prometheus-stack (components: ")
    assert "did you mean 'coredns'?" in message


def test_component_without_a_scrape_profile_is_an_error(run_cli: RunCli, tmp_path: Path, slo_file: Path) -> None:
    use_component(slo_file)
    message = message_at(validate(run_cli, tmp_path, problems=1), f"{SLO}:9:14")
    assert "needs the stack the rules run on: set scrape_profile in project.yaml" in message


def test_bad_component_selector_in_the_project_is_positioned(run_cli: RunCli, tmp_path: Path, spec_tree: Path) -> None:
    set_profile(spec_tree, "scrape_profile:\n  stack: custom\n  components:\n    coredns: '{job=dns}'\n")
    message = message_at(validate(run_cli, tmp_path, problems=1), f"{PROJECT}:{APPENDED + 3}:14")
    assert message.startswith("invalid selector for component 'coredns'")


def test_component_naming_a_metric_in_the_project_is_positioned(
    run_cli: RunCli, tmp_path: Path, spec_tree: Path
) -> None:
    """'up{job="dns"}' would parse as a selector of the metric up; a component gives label matchers only."""
    set_profile(spec_tree, "scrape_profile:\n  stack: custom\n  components:\n    coredns: 'up{job=\"dns\"}'\n")
    message = message_at(validate(run_cli, tmp_path, problems=1), f"{PROJECT}:{APPENDED + 3}:14")
    assert (
        message == "component 'coredns' must be label matchers in braces, not a metric; write e.g. '{job=\"coredns\"}'"
    )


def test_unknown_stack_is_a_schema_error(run_cli: RunCli, tmp_path: Path, spec_tree: Path) -> None:
    set_profile(spec_tree, "scrape_profile:\n  stack: kube-prom\n")
    message = message_at(validate(run_cli, tmp_path, problems=1), f"{PROJECT}:{APPENDED + 1}:10")
    assert "must be kube-prometheus-stack, kube-prometheus or custom" in message


def test_generated_tests_pass_on_a_kept_edge_and_read_the_profiles_job(
    run_cli: RunCli, tmp_path: Path, spec_tree: Path, slo_file: Path
) -> None:
    set_profile(spec_tree, KPS)
    edit(slo_file, """  selector: '{job="kube-dns"}'\n""", "  component: apiserver\n")
    edit(slo_file, ORIGINAL_SLI, ETCD_LATENCY.format(threshold="0.1"))
    out = generate(run_cli, tmp_path)
    result = run_promtool(out)
    assert result.returncode == 0, result.stdout + result.stderr
    tests = (out / "prometheus" / "tests" / "dns-errors.test.yaml").read_text(encoding="utf-8")
    edges = set(re.findall(r'etcd_request_duration_seconds_bucket\{[^}]*le="([^"]+)"', tests))
    assert edges == {"0.1", "+Inf"}
    assert set(re.findall(r'job="([^"]+)"', tests)) == {"apiserver"}


def test_quantile_inputs_have_no_series_for_dropped_edges_and_pass(
    run_cli: RunCli, tmp_path: Path, spec_tree: Path, slo_file: Path
) -> None:
    set_profile(spec_tree, KPS)
    edit(slo_file, """  selector: '{job="kube-dns"}'\n""", "  component: apiserver\n")
    edit(slo_file, ORIGINAL_SLI, ETCD_QUANTILE)
    out = generate(run_cli, tmp_path)
    result = run_promtool(out)
    assert result.returncode == 0, result.stdout + result.stderr
    tests = (out / "prometheus" / "tests" / "dns-errors.test.yaml").read_text(encoding="utf-8")
    edges = {float(e) for e in re.findall(r'etcd_request_duration_seconds_bucket\{[^}]*le="([^"+]+)"', tests)}
    dropped = set(BUILT_IN_STACKS["kube-prometheus-stack"].dropped("etcd_request_duration_seconds"))
    assert edges, tests
    assert not edges & dropped
    assert {0.1, 1.0, 5.0} <= edges


def test_job_matcher_in_the_sli_next_to_a_component_is_an_error_at_that_selector(
    run_cli: RunCli, tmp_path: Path, spec_tree: Path, slo_file: Path
) -> None:
    set_profile(spec_tree, KPS)
    use_component(slo_file)
    edit(
        slo_file,
        "    total: coredns_dns_responses_total\n",
        "    total: 'coredns_dns_responses_total{job=\"coredns\"}'\n",
    )
    message = message_at(validate(run_cli, tmp_path, problems=1), f"{SLO}:13:12")
    assert message.startswith("sli.ratio.total matches on job and slice.component 'coredns' gives it"), message


def test_job_matcher_in_a_latency_selector_next_to_a_component_is_an_error(
    run_cli: RunCli, tmp_path: Path, spec_tree: Path, slo_file: Path
) -> None:
    set_profile(spec_tree, KPS)
    edit(slo_file, """  selector: '{job="kube-dns"}'\n""", "  component: apiserver\n")
    sli = ETCD_LATENCY.format(threshold="0.1").replace(
        "    threshold:", '    selector: \'{operation!~"list.*",job="apiserver"}\'\n    threshold:'
    )
    edit(slo_file, ORIGINAL_SLI, sli)
    message = message_at(validate(run_cli, tmp_path, problems=1), f"{SLO}:13:15")
    assert message.startswith("sli.latency.selector matches on job and slice.component 'apiserver'"), message


def test_the_library_reads_coredns_by_the_job_kube_prometheus_stack_gives_it(repo_root: Path) -> None:
    """The DNS specs were blind on the target stack (job="kube-dns"); the generated rules now say coredns."""
    for spec in ("cluster-dns-latency", "cluster-dns-servfail"):
        rules = (repo_root / "generated" / "prometheus" / "rules" / f"{spec}.rules.yaml").read_text(encoding="utf-8")
        assert 'job="coredns"' in rules
        assert "kube-dns" not in rules
