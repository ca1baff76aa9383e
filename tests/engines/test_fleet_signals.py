"""Fleet signals: per-unit tickets, a page per slice only for many units, and what the page holds back.

Issue 12 items 5 and 6. The claims are checked where they live: positioned errors from
``validate`` for fleet settings that could page for one unit or count units the data does
not have; the shipped rules in the real promtool (the generated fleet cases, a 10-node pool
with one NotReady node, one bad NIC among healthy ones, and mutations that must fail); and
the inhibit rules in the real Alertmanager 0.25 (a fleet page holds back its own per-unit
tickets in its slice only, and a correlated failure holds back node-remediator).
"""

from __future__ import annotations

import dataclasses
import shutil
import subprocess
import time
from pathlib import Path
from typing import Any

import pytest
import yaml

from compiler.model import Model, Receiver, Team, labels
from compiler.model.budget import estimate
from compiler.plan import plan_spec
from compiler.targets.prometheus import alert_rules
from compiler.targets.prometheus.proof.gotemplate import render as render_annotation
from tests import servers
from tests.conftest import OWNERS_YAML, PROJECT_YAML, RunCli
from tests.engines.test_hostile_routing import (
    position,
    post_alerts,
    problems,
    reported_at,
    spec_path,
    write_alertmanager,
)
from tests.promtool_runs import promtool_test
from tests.support import LIBRARY_SPECS, REPO_ROOT, compile_tree

GENERATED = REPO_ROOT / "generated" / "prometheus"
FLEET_SPECS = (
    "conntrack-exhaustion",
    "arp-neighbor-table",
    "nic-error-budget",
    "node-readiness",
    # the per-node node basics (issue 13): a ticket per node, a page for 3 nodes that are 3% of the cluster
    "node-filesystem-space",
    "node-clock-sync",
    "node-clock-skew",
    "kubelet-certificate-expiry",
    "kube-proxy-rules-staleness",
    # issue 27 item 3: inodes, the file table and OOM kills per node (OOM kills: the count alert is a ticket)
    "node-filesystem-inodes",
    "node-file-descriptors",
    "node-oom-kills",
    # issue 27 item 3: InfiniBand ports (units instance, device, port; in shadow)
    "infiniband-port-errors",
    # issue 27 item 3: GPU memory row remapping (units Hostname, gpu, UUID; in shadow)
    "gpu-memory-row-remap",
)

FLEET_SPEC = """\
apiVersion: slo-compiler/v1
kind: SLO
name: {name}
family: node-network-errors
owner: platform-network
description: The fullest node's conntrack table.
slice:
  by: [cluster]
  selector: '{{job="node-exporter"}}'
sli:
  gauge:
    expr: 'max by (cluster) (node_nf_conntrack_entries / node_nf_conntrack_entries_limit)'
    aggregate: max
unit: ratio
normal_range:
  max: 0.75
critical_range:
  max: 0.9
fleet:
  units: [instance]
  page: {{units: 3}}
series_budget: 8000
persistence:
  for: 5m
mitigation:
  summary: Find the node.
  steps: [topk by instance.]
  stop_conditions: [Nothing is dropped yet.]
  escalation: Page the network on-call.
"""

# name -> (text replaced, replacement): each a spec of the tree that `validate` must refuse.
BAD_FLEETS: dict[str, tuple[str, str]] = {
    "k-one": ("page: {units: 3}", "page: {units: 1}"),
    "k-zero": ("page: {units: 3}", "page: {units: 0}"),
    "share-over": ("page: {units: 3}", "page: {share: 150%}"),
    "share-zero": ("page: {units: 3}", "page: {share: 0%}"),
    "min-units-small": ("page: {units: 3}", "page: {share: 10%, min_units: 5}"),
    "both-no-share": ("page: {units: 3}", "page: {units: 3, require: both}"),
    "empty-page": ("page: {units: 3}", "page: {}"),
    "node-on-node-exporter": ("units: [instance]", "units: [node]"),
    "unit-is-slice": ("units: [instance]", "units: [cluster]"),
    "instance-on-ksm": (
        "max by (cluster) (node_nf_conntrack_entries / node_nf_conntrack_entries_limit)",
        "max by (cluster) (kube_node_spec_unschedulable)",
    ),
    "unit-reserved": ("units: [instance]", "units: [severity]"),
    "no-critical": ("critical_range:\n  max: 0.9\n", ""),
    "ratio-good": (
        "sli:\n  gauge:\n    expr: 'max by (cluster) (node_nf_conntrack_entries / node_nf_conntrack_entries_limit)'\n"
        "    aggregate: max\nunit: ratio\nnormal_range:\n  max: 0.75\ncritical_range:\n  max: 0.9\n",
        "sli:\n  ratio:\n    good: 'node_network_receive_packets_total{device=\"eth0\"}'\n"
        "    total: node_network_receive_packets_total\nnormal_range:\n  max: 0.01\ncritical_range:\n  max: 0.05\n",
    ),
    "no-budget": ("series_budget: 8000\n", ""),
}

# name -> (text replaced, replacement): variants `validate` must accept. A staleness SLI is a gauge
# (time() - timestamp) with a per-unit form: each unit's age (kube-proxy-rules-staleness).
GOOD_FLEETS: dict[str, tuple[str, str]] = {
    "staleness": (
        "sli:\n  gauge:\n    expr: 'max by (cluster) (node_nf_conntrack_entries / node_nf_conntrack_entries_limit)'\n"
        "    aggregate: max\nunit: ratio\nnormal_range:\n  max: 0.75\ncritical_range:\n  max: 0.9\n",
        "sli:\n  staleness:\n    timestamp: node_boot_time_seconds\nunit: seconds\nnormal_range:\n  max: 180\n"
        "critical_range:\n  max: 600\n",
    ),
}


@pytest.fixture(scope="module")
def bad_tree(tmp_path_factory: pytest.TempPathFactory) -> Path:
    root = tmp_path_factory.mktemp("fleet")
    spec_dir = root / "specs"
    (spec_dir / "network").mkdir(parents=True)
    (spec_dir / "owners.yaml").write_text(OWNERS_YAML, encoding="utf-8")
    (spec_dir / "project.yaml").write_text(PROJECT_YAML, encoding="utf-8")
    for name, (old, new) in {**BAD_FLEETS, **GOOD_FLEETS}.items():
        text = FLEET_SPEC.format(name=name)
        assert old in text, name
        (spec_dir / "network" / f"{name}.yaml").write_text(text.replace(old, new), encoding="utf-8")
    (spec_dir / "network" / "good.yaml").write_text(FLEET_SPEC.format(name="good"), encoding="utf-8")
    return root


@pytest.fixture(scope="module")
def found(bad_tree: Path, run_cli: RunCli) -> list[str]:
    """Every problem of the tree, from one `validate` run (exit 1, no traceback)."""
    return problems(run_cli, bad_tree)


# name -> (needle the error is at, searched after, words the message must have)
ERRORS: dict[str, tuple[str, str, tuple[str, ...]]] = {
    "k-one": ("1}", "page:", ("fleet.page.units 1 would page for one unit", "2 or more")),
    "k-zero": ("0}", "page:", ("no unit at all",)),
    "share-over": ("150%", "page:", ("must be a percentage above 0% and at most 100%",)),
    "share-zero": ("0%", "page:", ("must be a percentage above 0% and at most 100%",)),
    "min-units-small": ("5}", "min_units", ("lets one unit page", "give 11 or more")),
    "both-no-share": ("both", "require", ("require: both needs both units and share",)),
    "empty-page": ("{}", "page:", ("fleet.page needs units",)),
    "node-on-node-exporter": (
        "node]",
        "units:",
        (
            "'node' does not tell the units of node_nf_conntrack_entries apart",
            "node-exporter series do not carry 'node'",
            "instance",
        ),
    ),
    "instance-on-ksm": (
        "instance]",
        "units:",
        ("on kube-state-metrics series 'instance' is the kube-state-metrics pod",),
    ),
    "unit-is-slice": ("cluster]", "units:", ("already a slice label",)),
    "unit-reserved": ("severity]", "units:", ("fleet.units 'severity' is reserved",)),
    "no-critical": ("units:", "fleet:", ("fleet judges the critical range per unit, and this spec has none",)),
    "ratio-good": ("units:", "fleet:", ("fleet on a ratio SLI needs `bad`",)),
    "no-budget": ("by:", "slice:", ("slicing by instance records about 7,504 series", "7,500 of them per fleet unit")),
}


@pytest.mark.parametrize("name", sorted(ERRORS))
def test_bad_fleet_settings_are_positioned_errors(bad_tree: Path, found: list[str], name: str) -> None:
    needle, after, words = ERRORS[name]
    path = spec_path(bad_tree, name)
    reported_at(found, bad_tree, path, position(path, needle, after), *words)


def test_a_valid_fleet_has_no_problem(bad_tree: Path, found: list[str]) -> None:
    assert not [line for line in found if "/good.yaml:" in line]
    for name in GOOD_FLEETS:
        assert not [line for line in found if f"/{name}.yaml:" in line], name
        assert (bad_tree / "specs" / "network" / f"{name}.yaml").is_file()


# -- budgets -------------------------------------------------------------------------------


def test_budgets_count_one_series_per_unit() -> None:
    """Per-node units of a pool-zone slice are the cluster's nodes once; NICs are nodes x devices."""
    model = compile_tree(LIBRARY_SPECS)
    profile = model.project.cluster_profile
    by_name = {slo.name: estimate(slo, profile) for slo in model.slos}
    assert (by_name["node-readiness"].unit_series, by_name["node-readiness"].series) == (7500, 72 * 14 + 7500 + 1)
    assert by_name["nic-error-budget"].unit_series == 7500 * 4
    assert by_name["conntrack-exhaustion"].series == 3 + 7500 + 1
    assert by_name["node-readiness-flapping"].unit_series == 0


# -- promtool ------------------------------------------------------------------------------


def _promtool(test_file: Path) -> subprocess.CompletedProcess[str]:
    return promtool_test(test_file, timeout=300)


@pytest.mark.parametrize("name", FLEET_SPECS)
def test_generated_fleet_cases_are_written(name: str) -> None:
    """Each converted spec's generated tests hold a one-unit case, a K-unit case and one short of K.

    That they pass is test_generated_tests.py::test_promtool_passes_the_generated_tests, which runs
    every generated file once (running them here too cost 91 s of promtool).
    """
    test_file = GENERATED / "tests" / f"{name}.test.yaml"
    titles = [test["name"] for test in yaml.safe_load(test_file.read_text(encoding="utf-8"))["tests"]]
    fleet = [title for title in titles if "(fleet)" in title]
    assert any(": one unit out" in title and "no page" in title for title in fleet), fleet
    assert any("pages at" in title for title in fleet), fleet
    assert any("no page" in title and "one short of" in title for title in fleet), fleet


RATE_FLEET = (
    "sli:\n  gauge:\n    expr: 'max by (cluster) (node_nf_conntrack_entries / node_nf_conntrack_entries_limit)'\n"
    "    aggregate: max\nunit: ratio\nnormal_range:\n  max: 0.75\ncritical_range:\n  max: 0.9\n",
    "sli:\n  gauge:\n    expr: 'sum by (cluster) (rate(node_vmstat_oom_kill[5m]))'\n"
    "    aggregate: avg\nunit: per_second\nnormal_range:\n  max: 0.002\ncritical_range:\n  max: 0.01\n  for: 15m\n",
)


def test_fleet_cases_of_a_rate_gauge_wait_for_the_whole_rate_window(tmp_path: Path, run_cli: RunCli) -> None:
    """A rate() fed from minute 0 reads a fifth of its input at minute 1 (rate divides by the whole 5m):
    a unit 1.5x over the bound crosses it at minute 4, not 1. The generated fleet cases of such a spec
    (node-oom-kills) asserted its ticket firing at 1m + for; they must pass promtool as generated."""
    spec_dir = tmp_path / "specs"
    (spec_dir / "nodes").mkdir(parents=True)
    (spec_dir / "owners.yaml").write_text(OWNERS_YAML, encoding="utf-8")
    (spec_dir / "project.yaml").write_text(PROJECT_YAML, encoding="utf-8")
    old, new = RATE_FLEET
    text = FLEET_SPEC.format(name="oom-kills")
    assert old in text
    # Its units' rates are recorded once as parts (issue 29: read at the floor): 7,500 more series.
    text = text.replace(old, new).replace("series_budget: 8000\n", "series_budget: 16000\n")
    (spec_dir / "nodes" / "oom-kills.yaml").write_text(text, encoding="utf-8")
    code, _, stderr = run_cli(["generate", "--specs", "specs", "--out", "out"], tmp_path)
    assert code == 0, stderr
    test_file = tmp_path / "out" / "prometheus" / "tests" / "oom-kills.test.yaml"
    titles = [test["name"] for test in yaml.safe_load(test_file.read_text(encoding="utf-8"))["tests"]]
    assert any("(fleet): one unit out" in title for title in titles), titles
    result = _promtool(test_file)
    assert result.returncode == 0, result.stdout + result.stderr


def _mutated(tmp_path: Path, name: str, old: str, new: str) -> Path:
    """A copy of a spec's generated rules and tests with one rule text changed; returns the test file."""
    (tmp_path / "rules").mkdir()
    (tmp_path / "tests").mkdir()
    rules = (GENERATED / "rules" / f"{name}.rules.yaml").read_text(encoding="utf-8")
    assert old in rules
    (tmp_path / "rules" / f"{name}.rules.yaml").write_text(rules.replace(old, new), encoding="utf-8")
    shutil.copy(GENERATED / "tests" / f"{name}.test.yaml", tmp_path / "tests")
    return tmp_path / "tests" / f"{name}.test.yaml"


PAGE_NAME = 'alertname=\\"ConntrackExhaustionAboveCriticalRange\\"'
TICKET_NAME = 'alertname=\\"ConntrackExhaustionUnitAboveCriticalRange\\"'


@pytest.mark.parametrize(
    ("old", "new", "failing"),
    [
        ('out:count{slo="conntrack-exhaustion"} >= 3', 'out:count{slo="conntrack-exhaustion"} >= 1', PAGE_NAME),
        ('out:count{slo="conntrack-exhaustion"} >= 3', 'out:count{slo="conntrack-exhaustion"} >= 4', PAGE_NAME),
        ('gauge{slo="conntrack-exhaustion"} > 0.9', 'gauge{slo="conntrack-exhaustion"} > 0.99', TICKET_NAME),
    ],
)
def test_generated_fleet_cases_have_teeth(tmp_path: Path, old: str, new: str, failing: str) -> None:
    """A page for one unit, a page that needs K + 1, or a blunted per-unit ticket fail the generated tests,
    at a check of that alert."""
    result = _promtool(_mutated(tmp_path, "conntrack-exhaustion", old, new))
    assert result.returncode == 1, result.stdout
    assert failing in result.stdout + result.stderr, result.stdout + result.stderr


def _series(name: str, values: str, **label_values: str) -> dict[str, str]:
    text = ",".join(f'{key}="{value}"' for key, value in label_values.items())
    return {"series": f"{name}{{{text}}}", "values": values}


# The NotReady nodes of these cases turn NotReady at minute 10, after being Ready: a node counts
# as out once it has been NotReady for 5 minutes (node-readiness's max_over_time), so a node
# failing at 10 is out from minute 15 (a node NotReady from its first sample is out at once).
FAILS_AT = 10


def _nodes(ready: list[bool], pool: str) -> list[dict[str, str]]:
    """kube-state-metrics series of a pool's nodes: Ready for 40 minutes, or NotReady from FAILS_AT."""
    found = []
    for index, is_ready in enumerate(ready):
        node = {"cluster": "c1", "node": f"{pool}-{index}", "job": "kube-state-metrics"}
        values = "1x40" if is_ready else f"1x{FAILS_AT - 1} 0x{40 - FAILS_AT}"
        found.append(_series("kube_node_status_condition", values, condition="Ready", status="true", **node))
        found.append(_series("kube_node_spec_unschedulable", "0x40", **node))
        found.append(_series("kube_node_created", "-86400x40", **node))  # a day old: judged from the start
        found.append(
            _series("kube_node_labels", "1x40", label_node_pool=pool, label_topology_kubernetes_io_zone="z1", **node)
        )
    return found


def _count(alert: str, at: str, count: int | None, **matchers: str) -> dict[str, Any]:
    extra = "".join(f',{key}="{value}"' for key, value in matchers.items())
    expr = f'count(ALERTS{{alertname="{alert}",alertstate="firing"{extra}}})'
    return {"expr": expr, "eval_time": at, "exp_samples": [] if count is None else [{"labels": "{}", "value": count}]}


def _run_cases(tmp_path: Path, spec: str, cases: dict[str, dict[str, Any]]) -> subprocess.CompletedProcess[str]:
    tests = [{"name": name, "interval": "1m", **case} for name, case in cases.items()]
    test_file = tmp_path / f"{spec}.test.yaml"
    rule_file = GENERATED / "rules" / f"{spec}.rules.yaml"
    document = {"rule_files": [str(rule_file)], "evaluation_interval": "1m", "tests": tests}
    test_file.write_text(yaml.safe_dump(document), encoding="utf-8")
    return _promtool(test_file)


READINESS_PAGE, READINESS_TICKET = "NodeReadinessAboveCriticalRange", "NodeReadinessUnitAboveCriticalRange"


def test_one_notready_node_in_a_ten_node_pool_is_a_ticket_not_a_page(tmp_path: Path) -> None:
    """The measured false page (1 of 10 = 10% > 5%) is gone; 3 of 10 still pages; a big pool needs 5%.

    Nodes fail at FAILS_AT (10m): out 5 minutes later, the ticket after fleet.for (10m) more, the
    page after its for (1m): 15 and 6 minutes after the failure, as the spec's comments say.
    """
    cases = {
        "1 of 10 NotReady: its ticket 15m after it fails, never a page": {
            "input_series": _nodes([False] + [True] * 9, "small"),
            "promql_expr_test": [
                _count(READINESS_TICKET, "24m", None),
                _count(READINESS_TICKET, "25m", 1, node="small-0"),
                _count(READINESS_PAGE, "40m", None),
            ],
        },
        "3 of 10 NotReady: a correlated failure pages 6m after it starts": {
            "input_series": _nodes([False] * 3 + [True] * 7, "small"),
            "promql_expr_test": [_count(READINESS_PAGE, "15m", None), _count(READINESS_PAGE, "16m", 1)],
        },
        "3 of 100 NotReady (3% < 5%): three tickets, no page": {
            "input_series": _nodes([False] * 3 + [True] * 97, "big"),
            "promql_expr_test": [_count(READINESS_TICKET, "25m", 3), _count(READINESS_PAGE, "40m", None)],
        },
    }
    result = _run_cases(tmp_path, "node-readiness", cases)
    assert result.returncode == 0, result.stdout + result.stderr
    wrong = {"wrong: 1 of 10 pages": {**cases["1 of 10 NotReady: its ticket 15m after it fails, never a page"]}}
    wrong["wrong: 1 of 10 pages"]["promql_expr_test"] = [_count(READINESS_PAGE, "20m", 1)]
    assert _run_cases(tmp_path, "node-readiness", wrong).returncode == 1


def _nics(bad: tuple[str, str], counter: str = "errs", share: float = 0.01, minutes: int = 40) -> list[dict[str, str]]:
    """Five nodes with two NICs each at 100k packets/s; ``bad`` counts ``share`` of its packets in
    ``node_network_receive_<counter>_total`` (errs or drop), the rest 1e-7."""
    found = []
    for node in range(5):
        for device in ("eth0", "eth1"):
            unit = (f"10.0.0.{node}:9100", device)
            per_minute = 6_000_000 * share if unit == bad else 0.6  # share or 1e-7 of 6,000,000 packets
            base = {"cluster": "c1", "instance": unit[0], "device": device, "job": "node-exporter"}
            found.append(_series("node_network_receive_packets_total", f"0+6000000x{minutes}", **base))
            found.append(_series("node_network_transmit_packets_total", f"0+0x{minutes}", **base))
            found.append(_series(f"node_network_receive_{counter}_total", f"0+{per_minute:g}x{minutes}", **base))
            found.append(_series(f"node_network_transmit_{counter}_total", f"0+0x{minutes}", **base))
    return found


def test_one_bad_nic_among_healthy_ones_is_a_ticket_naming_it(tmp_path: Path) -> None:
    """1% errors on one NIC of ten: the per-NIC ticket names instance and device; nothing pages for it."""
    ticket = "NICErrorsUnitAboveCriticalRange"
    cases = {
        "10.0.0.3 eth1 at 1% errors": {
            "input_series": _nics(("10.0.0.3:9100", "eth1")),
            "promql_expr_test": [
                _count(ticket, "15m", None),
                _count(ticket, "16m", 1, instance="10.0.0.3:9100", device="eth1"),
                _count(ticket, "16m", 1),
                _count("NICErrorsAboveCriticalRange", "40m", None),
                {
                    "expr": 'slo:fleet_units:count{slo="nic-error-budget"}',
                    "eval_time": "16m",
                    "exp_samples": [
                        {"labels": 'slo:fleet_units:count{cluster="c1",slo="nic-error-budget"}', "value": 10}
                    ],
                },
            ],
        }
    }
    result = _run_cases(tmp_path, "nic-error-budget", cases)
    assert result.returncode == 0, result.stdout + result.stderr


# -- the inhibit rules in the real Alertmanager ---------------------------------------------


def _webhook_model(url: str) -> Model:
    """The library, with every team's receivers and the automation webhook pointing at ``url``, fast timing."""
    model = compile_tree(LIBRARY_SPECS)
    hook = Receiver("webhook", (("url", f"{url}/page"),))
    ticket = Receiver("webhook", (("url", f"{url}/ticket"),))
    teams: dict[str, Team] = {
        team.name: dataclasses.replace(team, receivers=(("page", (hook,)), ("ticket", (ticket,))), timing=())
        for team in model.teams
    }
    fast = engines_timing()
    automations = tuple(
        dataclasses.replace(automation, url=f"{url}/automation", credentials_file=None)
        for automation in model.project.automations
    )
    project = dataclasses.replace(model.project, timing=fast, automations=automations, smtp=None)
    slos = tuple(dataclasses.replace(slo, owner=teams[slo.owner.name]) for slo in model.slos)
    return dataclasses.replace(model, project=project, teams=tuple(teams.values()), slos=slos)


def engines_timing() -> tuple[Any, ...]:
    from compiler.model import Timing

    quick = Timing(1_000, 1_000, 3_600_000)
    return (("page", quick), ("ticket", quick), ("info", quick))


def _alert(model: Model, name: str, alert_name: str, **slice_values: str) -> dict[str, Any]:
    slo = next(slo for slo in model.slos if slo.name == name)
    rule = next(rule for rule in alert_rules(model, plan_spec(slo)) if rule.name == alert_name)
    alert_labels = {labels.ALERTNAME: rule.name, **rule.labels, **slice_values}
    annotations = {key: render_annotation(value, alert_labels, 1.0) for key, value in rule.annotations.items()}
    return {"labels": alert_labels, "annotations": annotations}


def _pool(cluster: str, pool: str) -> dict[str, str]:
    return {"cluster": cluster, "label_node_pool": pool, "label_topology_kubernetes_io_zone": "z1"}


def test_fleet_page_holds_back_its_unit_tickets_and_node_remediator_in_alertmanager(tmp_path: Path) -> None:
    """A node-readiness page in c1 pool p1: that pool's per-node tickets and c1's flapping automation wait;
    p2's ticket and c2's flapping alert still go out; an etcd-db-quota page in c3 holds back c3's flapping."""
    with servers.webhook() as hook:
        model = _webhook_model(f"http://127.0.0.1:{hook.port}")
        config = write_alertmanager(model, tmp_path / "out")
        causes = [
            _alert(model, "node-readiness", READINESS_PAGE, **_pool("c1", "p1")),
            _alert(model, "etcd-db-quota", "EtcdDBQuotaAboveCriticalRange", cluster="c3", instance="etcd-1"),
        ]
        flapping = "NodeReadinessFlappingAboveNormalRange"
        symptoms = [
            _alert(model, "node-readiness", READINESS_TICKET, node="n1", **_pool("c1", "p1")),
            _alert(model, "node-readiness", READINESS_TICKET, node="n9", **_pool("c1", "p2")),
            *(_alert(model, "node-readiness-flapping", flapping, cluster=c, node="n1") for c in ("c1", "c2", "c3")),
        ]
        with servers.alertmanager(tmp_path, config) as am:
            post_alerts(am, causes)
            assert servers.wait_until(lambda: len(am.alerts()) == 2, 10)
            post_alerts(am, symptoms)
            assert servers.wait_until(lambda: len(hook.alerts("automation")) >= 1, 20), hook.received
            time.sleep(3)  # three group intervals: a held-back alert would have gone out by now
            automated = {(a["labels"]["alertname"], a["labels"]["cluster"]) for a in hook.alerts("automation")}
            assert automated == {(flapping, "c2")}, hook.received
            tickets = {(a["labels"]["alertname"], a["labels"].get("node")) for a in hook.alerts("ticket")}
            assert (READINESS_TICKET, "n9") in tickets and (READINESS_TICKET, "n1") not in tickets, tickets
            states = {
                (a["labels"]["alertname"], a["labels"]["cluster"], a["labels"].get("node")): a["status"]["state"]
                for a in am.alerts()
            }
            suppressed = {key for key, state in states.items() if state == "suppressed"}
            assert suppressed == {
                (READINESS_TICKET, "c1", "n1"),
                (flapping, "c1", "n1"),
                (flapping, "c3", "n1"),
            }, states
