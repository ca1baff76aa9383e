"""Components a stack does not scrape by default (issue 13 item 4): their specs are left out, with a note.

kube-prometheus scrapes no etcd unless the static-etcd addon (or a ServiceMonitor of one's
own) is added, so a spec reading only etcd has no series there: its no-data alert would fire
on a healthy cluster from day one. The plan leaves it out on that profile, ``generate`` says so
on stderr as a note (exit 0), the runbook index, the catalog and ``explain`` list it, and a
project that names ``scrape_profile.components.etcd`` compiles it. Each test runs the real CLI
on a temp spec tree (conftest.py).
"""

from __future__ import annotations

import re
from pathlib import Path

import pytest

from compiler.model.stacks import BUILT_IN_STACKS
from tests.conftest import PROJECT_YAML, RunCli
from tests.unit.source.test_errors import edit

ETCD_SPEC = "specs/etcd/etcd-quota.yaml"
ETCD_SLO = """\
apiVersion: slo-compiler/v1
kind: SLO
name: etcd-quota
family: scheduling-api-latency
owner: platform-network
description: Each etcd member's database stays under its quota.
slice:
  by: [cluster, instance]
  component: etcd
  cardinality: {instance: 5}
sli:
  gauge:
    expr: 'max by (cluster, instance) (etcd_mvcc_db_total_size_in_bytes / etcd_server_quota_backend_bytes)'
    aggregate: max
unit: ratio
normal_range:
  max: 0.8
  for: 15m
  reason: A defragmented member stays under 60% of its quota.
mitigation:
  summary: Defragment the member.
  steps: ["Defragment one member at a time, followers first."]
  stop_conditions: ["A member replacement is in progress."]
  escalation: Page the etcd experts.
"""
# The note sits at slice.component (line 9, column 14) of the spec above.
NOTE_AT = f"{ETCD_SPEC}:9:14: note: "
NOTE = (
    "kube-prometheus scrapes no etcd by default: this spec is left out; add etcd scraping (the addon "
    "jsonnet/kube-prometheus/addons/static-etcd.libsonnet with values.etcd.ips and its client certificates, "
    'which scrapes job="etcd", or a ServiceMonitor of your own) and set scrape_profile.components.etcd in '
    "project.yaml to compile it"
)


def tree(spec_tree: Path, stack: str, components: str = "") -> None:
    """The conftest tree (one DNS spec) plus an etcd spec, on ``stack``."""
    (spec_tree / "project.yaml").write_text(
        PROJECT_YAML + f"scrape_profile:\n  stack: {stack}\n" + components, encoding="utf-8"
    )
    (spec_tree / "etcd").mkdir()
    (spec_tree / "etcd" / "etcd-quota.yaml").write_text(ETCD_SLO, encoding="utf-8")
    edit(spec_tree / "network" / "dns-errors.yaml", """  selector: '{job="kube-dns"}'\n""", "  component: coredns\n")


def generate(run_cli: RunCli, tmp_path: Path) -> tuple[Path, str]:
    code, stdout, stderr = run_cli(["generate", "--specs", "specs", "--out", "out"], tmp_path)
    assert code == 0, stderr
    assert "Traceback" not in stderr
    return tmp_path / "out", stdout + stderr


def notes(output: str) -> list[str]:
    return [line for line in output.splitlines() if ": note: " in line]


def test_the_profile_data_names_etcd_unscraped_on_kube_prometheus_only() -> None:
    assert BUILT_IN_STACKS["kube-prometheus"].how_to_scrape("etcd") is not None
    assert BUILT_IN_STACKS["kube-prometheus"].how_to_scrape("apiserver") is None
    assert all(BUILT_IN_STACKS["kube-prometheus-stack"].how_to_scrape(name) is None for name in ("etcd", "coredns"))


def test_an_etcd_spec_is_left_out_on_kube_prometheus_with_a_note(
    run_cli: RunCli, tmp_path: Path, spec_tree: Path
) -> None:
    tree(spec_tree, "kube-prometheus")
    out, output = generate(run_cli, tmp_path)
    assert notes(output) == [NOTE_AT + NOTE], output
    assert "for 1 spec(s)" in output, output
    rules = out / "prometheus" / "rules"
    assert sorted(path.name for path in rules.iterdir()) == ["dns-errors.rules.yaml"]
    assert not (out / "prometheus" / "tests" / "etcd-quota.test.yaml").exists()
    assert not (out / "runbooks" / "etcd-quota.md").exists()
    assert "etcd-quota" not in (out / "alertmanager" / "alertmanager.yaml").read_text(encoding="utf-8")
    everywhere = "".join(path.read_text(encoding="utf-8") for path in rules.iterdir())
    assert "etcd_mvcc_db_total_size_in_bytes" not in everywhere


def test_the_left_out_spec_is_listed_in_the_runbook_index_and_the_catalog(
    run_cli: RunCli, tmp_path: Path, spec_tree: Path
) -> None:
    tree(spec_tree, "kube-prometheus")
    out, _ = generate(run_cli, tmp_path)
    index = (out / "runbooks" / "README.md").read_text(encoding="utf-8")
    section = index[index.index("## Left out by the scrape profile") :]
    assert f"- etcd-quota (team platform-network, `{ETCD_SPEC}`): {NOTE}" in section.splitlines(), section
    catalog = (out / "catalog" / "index.html").read_text(encoding="utf-8")
    assert 'id="left-out"' in catalog
    assert re.search(r"<li>etcd-quota \(team platform-network\): kube-prometheus scrapes no etcd", catalog), catalog


def test_explain_says_the_spec_is_not_compiled_and_why(run_cli: RunCli, tmp_path: Path, spec_tree: Path) -> None:
    tree(spec_tree, "kube-prometheus")
    code, stdout, stderr = run_cli(["explain", "etcd-quota", "--specs", "specs"], tmp_path)
    assert code == 0, stderr
    assert stdout.splitlines()[1] == f"  not compiled: {NOTE}", stdout
    assert NOTE_AT + NOTE in stderr


def test_validate_counts_the_left_out_spec_and_prints_the_note(
    run_cli: RunCli, tmp_path: Path, spec_tree: Path
) -> None:
    tree(spec_tree, "kube-prometheus")
    code, stdout, stderr = run_cli(["validate", "--specs", "specs"], tmp_path)
    assert code == 0, stderr
    assert "2 spec(s) valid (1 left out by the scrape profile, see the notes)" in stdout, stdout
    assert notes(stderr) == [NOTE_AT + NOTE], stderr
    assert "etcd-quota" not in stdout.split("total:")[0], "a left-out spec records no series"


def test_naming_etcd_in_the_profile_compiles_the_spec(run_cli: RunCli, tmp_path: Path, spec_tree: Path) -> None:
    tree(spec_tree, "kube-prometheus", "  components:\n    etcd: '{job=\"etcd\"}'\n")
    out, output = generate(run_cli, tmp_path)
    assert notes(output) == [], output
    rules = (out / "prometheus" / "rules" / "etcd-quota.rules.yaml").read_text(encoding="utf-8")
    assert 'job="etcd"' in rules
    assert "Left out" not in (out / "runbooks" / "README.md").read_text(encoding="utf-8")


def test_kube_prometheus_stack_compiles_the_etcd_spec_without_a_note(
    run_cli: RunCli, tmp_path: Path, spec_tree: Path
) -> None:
    tree(spec_tree, "kube-prometheus-stack")
    out, output = generate(run_cli, tmp_path)
    assert notes(output) == [], output
    rules = (out / "prometheus" / "rules" / "etcd-quota.rules.yaml").read_text(encoding="utf-8")
    assert 'job="kube-etcd"' in rules
    assert 'id="left-out"' not in (out / "catalog" / "index.html").read_text(encoding="utf-8")


def test_an_inhibition_towards_a_left_out_spec_is_dropped(run_cli: RunCli, tmp_path: Path, spec_tree: Path) -> None:
    """The DNS spec explains the etcd spec; with etcd left out, no inhibit rule may target it."""
    tree(spec_tree, "kube-prometheus")
    with (spec_tree / "network" / "dns-errors.yaml").open("a", encoding="utf-8") as spec:
        spec.write("explains:\n  - {slo: etcd-quota, equal: [cluster]}\n")
    out, output = generate(run_cli, tmp_path)
    assert notes(output) == [NOTE_AT + NOTE], output
    assert "etcd-quota" not in (out / "alertmanager" / "alertmanager.yaml").read_text(encoding="utf-8")


@pytest.mark.parametrize(
    ("component", "job"),
    [("cluster-autoscaler", "cluster-autoscaler"), ("dcgm-exporter", "nvidia-dcgm-exporter")],
)
def test_no_stack_scrapes_these_components_by_default(
    run_cli: RunCli, tmp_path: Path, spec_tree: Path, component: str, job: str
) -> None:
    """Neither chart nor jsonnet scrapes them (the autoscaler's chart and the GPU operator create their
    ServiceMonitors only on request): their specs are left out on both, until the project names them."""
    autoscaler = ETCD_SLO.replace("name: etcd-quota", "name: autoscaler-loop").replace(
        "component: etcd", f"component: {component}"
    )
    for stack in ("kube-prometheus-stack", "kube-prometheus"):
        assert BUILT_IN_STACKS[stack].how_to_scrape(component) is not None, stack
        run = tmp_path / stack
        specs = run / "specs"
        specs.mkdir(parents=True)
        for item in spec_tree.iterdir():
            target = specs / item.name
            if item.is_dir():
                target.mkdir()
                for child in item.iterdir():
                    target.joinpath(child.name).write_bytes(child.read_bytes())
            else:
                target.write_bytes(item.read_bytes())
        tree(specs, stack)
        (specs / "etcd" / "etcd-quota.yaml").write_text(autoscaler, encoding="utf-8")
        out, output = generate(run_cli, run)
        assert [line for line in notes(output) if component in line], output
        assert not (out / "prometheus" / "rules" / "autoscaler-loop.rules.yaml").exists()
        (specs / "project.yaml").write_text(
            PROJECT_YAML + f"scrape_profile:\n  stack: {stack}\n  components:\n    {component}: '{{job=\"{job}\"}}'\n",
            encoding="utf-8",
        )
        out, output = generate(run_cli, run)
        assert not [line for line in notes(output) if component in line], output
        assert f'job="{job}"' in (out / "prometheus" / "rules" / "autoscaler-loop.rules.yaml").read_text(
            encoding="utf-8"
        )
