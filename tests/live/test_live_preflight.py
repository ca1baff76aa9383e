"""``slo-compiler preflight`` against a real Prometheus 2.42 holding backfilled data shaped like the
real stacks: each finding the command exists for is tripped by one spec of the tree, and a
spec that sees its data passes (exit 0). Runs in about 3 s (one server, one backfill)."""

from __future__ import annotations

import contextlib
import io
import json
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from compiler.cli import main
from tests import live_data, servers


@pytest.fixture(scope="module")
def server(tmp_path_factory: pytest.TempPathFactory) -> Iterator[str]:
    workdir = tmp_path_factory.mktemp("preflight")
    now = int(time.time())
    blocks = servers.backfill(live_data.preflight_data(now - 40 * 60, now + 5 * 60), workdir)
    with servers.prometheus(workdir, [], None, blocks) as prom:
        yield prom.url


@pytest.fixture(scope="module")
def tree(tmp_path_factory: pytest.TempPathFactory) -> Path:
    return live_data.write_tree(tmp_path_factory.mktemp("specs"), live_data.PREFLIGHT_SPECS)


def run(capsys: pytest.CaptureFixture[str], *args: str) -> tuple[int, str, str]:
    code = main(list(args))
    out = capsys.readouterr()
    return code, out.out, out.err


@pytest.fixture(scope="module")
def report(server: str, tree: Path) -> dict[str, Any]:
    buffer = io.StringIO()
    with contextlib.redirect_stdout(buffer):
        code = main(["preflight", "--prometheus", server, "--specs", str(tree), "--format", "json"])
    assert code == 1, buffer.getvalue()
    return {spec["spec"]: spec for spec in json.loads(buffer.getvalue())["specs"]}


def findings(report: dict[str, Any], spec: str, check: str, status: str | None = None) -> list[dict[str, Any]]:
    return [f for f in report[spec]["findings"] if f["check"] == check and status in (None, f["status"])]


def test_a_wrong_job_names_the_matcher_and_the_values_that_exist(report: dict[str, Any]) -> None:
    (total,) = [f for f in findings(report, "dns-servfail", "selector") if f["message"].startswith("total")]
    assert total["status"] == "problem"
    assert total["subject"] == 'coredns_dns_responses_total{job="kube-dns"}'
    assert 'job="kube-dns" removes every one of them, job has coredns (12 series)' in total["message"]
    assert total["detail"] == {"matcher": 'job="kube-dns"', "values": {"coredns": 12}}


def test_a_dropped_bucket_edge_names_the_relabeling_and_the_edges_that_exist(report: dict[str, Any]) -> None:
    (edge,) = findings(report, "write-latency", "bucket")
    assert edge["status"] == "problem"
    assert 'no bucket le="0.2"' in edge["message"] and "100% bad" in edge["message"]
    assert "kube-prometheus-stack drops it in its apiserver ServiceMonitor metricRelabelings" in edge["message"]
    assert "edges present: 0.005 0.025 0.05 0.1 0.25 0.5 1 2.5 5 10 +Inf" in edge["message"]
    assert not findings(report, "write-latency", "selector", "problem")


def test_a_missing_slice_label_is_counted(report: dict[str, Any]) -> None:
    missing = findings(report, "scheduler-errors", "slice-label", "problem")
    assert {f["detail"]["label"] for f in missing} == {"profile"}
    assert any("2 of 4 of its series lack slice label profile" in f["message"] for f in missing)
    assert any(f["detail"].get("slices") == 1 for f in missing)  # the empty slice the rules would record


def test_a_duplicate_join_key_is_a_problem(report: dict[str, Any]) -> None:
    (join,) = findings(report, "runtime-errors-per-pool", "join")
    assert join["status"] == "problem"
    assert "(cluster=west, node=n2) has label_node_pool=a | label_node_pool=b" in join["message"]
    assert "many-to-many" in join["message"]


def test_a_counter_created_on_first_event_is_fine_only_when_the_spec_handles_it(report: dict[str, Any]) -> None:
    (handled,) = findings(report, "evictions", "first-event")
    assert handled["status"] == "note" and handled["detail"] == {"up": 2, "handled": True}
    (blind,) = findings(report, "preemptions", "first-event")
    assert blind["status"] == "problem" and "absent_as_zero_while" in blind["message"]
    assert report["evictions"]["problems"] == 0


def test_measured_slices_and_what_would_fire_now(report: dict[str, Any]) -> None:
    (size,) = findings(report, "apiserver-errors", "cardinality")
    assert size["status"] == "ok"
    # 13 per slice and slo_info, plus the parts: one per code seen (200, 500); estimated at 12 codes
    assert size["detail"] == {"slices": 1, "recorded": 15, "estimate": 25, "budget": 2000}
    now = {f["subject"]: f for f in findings(report, "apiserver-errors", "now")}
    fast = next(f for subject, f in now.items() if "1h/5m above 1.44% errors" in subject)
    assert fast["status"] == "ok" and "quiet now; highest value now 1%" in fast["message"]  # 10x, under 14.4x
    slow = next(f for subject, f in now.items() if "6h/30m above 0.6% errors" in subject)
    assert slow["status"] == "note" and slow["detail"]["firing"] == [{"cluster": "west"}]
    assert report["apiserver-errors"]["problems"] == 0


def test_each_assumption_holds_or_is_broken_and_each_confirmation_can_fire(report: dict[str, Any]) -> None:
    """Preflight tells an assumption that holds from one that is broken (with the series that decide it), and a
    confirmation whose series exist from one whose absence means its pages can never fire."""
    (reachable,) = findings(report, "kubelet-targets", "assumption", "ok")
    assert reachable["subject"] == "metrics-reachable"
    assert reachable["message"].startswith("holds for 1 slice(s) (cluster=west); decided by ")
    assert reachable["detail"]["series"] == {'scrape_samples_scraped{job="kubelet"}': 2}
    (managed,) = findings(report, "kubelet-targets", "assumption", "problem")
    assert managed["subject"] == "self-managed"
    assert managed["message"].startswith("broken: ")
    assert "this spec's pages stay silent here" in managed["message"] and "Remove this spec" in managed["message"]
    (unavailable,) = findings(report, "kubelet-targets", "confirmation", "ok")
    assert unavailable["subject"] == "pods-unavailable" and "confirms no page now" in unavailable["message"]
    (never,) = findings(report, "kubelet-targets", "confirmation", "problem")
    assert never["subject"] == "lease-stale" and "can never fire" in never["message"]


def test_a_spec_that_sees_its_data_exits_0_with_a_table(
    server: str, tree: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    code, out, _ = run(capsys, "preflight", "--prometheus", server, "--specs", str(tree), "apiserver-errors")
    assert code == 0, out
    assert "apiserver-errors (team-a" in out and "sees its data" in out
    assert "would fire now (after its for) for 1 slice(s): cluster=west at 1%" in out


def test_usage_and_connection_errors_are_one_line_and_exit_2(
    server: str, tree: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    code, _, err = run(capsys, "preflight", "--prometheus", server, "--specs", str(tree), "no-such-spec")
    assert code == 2 and "no spec named 'no-such-spec'" in err
    dead = f"http://127.0.0.1:{servers.free_port()}"
    code, out, err = run(capsys, "preflight", "--prometheus", dead, "--specs", str(tree))
    assert code == 2 and out == ""
    assert err.startswith(f"slo-compiler: cannot reach Prometheus at {dead}: ") and err.count("\n") == 1
    code, _, err = run(capsys, "preflight", "--prometheus", f"{server}/nothing", "--specs", str(tree))
    assert code == 2 and "answered 404" in err and "Traceback" not in err


BACKTEST_PROBLEMS = {
    "runtime-errors-per-pool": live_data.PREFLIGHT_SPECS["runtime-errors-per-pool"],
    "dns-per-instance": """\
slice:
  by: [cluster, instance]
  selector: '{job="coredns"}'
  cardinality: {instance: 1}
series_budget: 4
sli:
  ratio:
    bad: 'coredns_dns_responses_total{rcode="SERVFAIL"}'
    total: coredns_dns_responses_total
normal_range: {max: 0.01}
persistence: {for: 10m}
""",
}


def test_backtest_stops_a_spec_whose_rule_fails_or_reads_over_its_budget(
    server: str, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """On this server's data: the duplicate kube_node_labels row fails the join (many-to-many) and six
    CoreDNS instances are more slices than a budget of 4; neither spec is replayed past that rule, so
    no alert of theirs (a no-data alert on the hole) is reported as history."""
    tree = live_data.write_tree(tmp_path / "specs", BACKTEST_PROBLEMS)
    code, out, _ = run(
        capsys, "backtest", "--prometheus", server, "--specs", str(tree), "--last", "30m", "--format", "json"
    )
    report = json.loads(out)
    assert code == 1
    problems = "\n".join(report["problems"])
    assert "runtime-errors-per-pool: rule slo:sli_total:rate5m:" in problems and "many-to-many" in problems
    assert (
        "dns-per-instance: rule slo:sli_total:rate5m: returned 6 series, more than the spec's series_budget of 4"
        in problems
    )
    assert "runtime-errors-per-pool: not replayed past slo:sli_total:rate5m" in problems
    assert report["intervals"] == []


def test_no_single_matcher_lists_the_jobs_of_the_metric(
    server: str, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """Two matchers each remove every series (the component's job and a wrong rcode): the finding lists
    the jobs that do have the metric (one more query, at most 10 jobs)."""
    body = """\
slice: {by: [cluster], component: coredns}
sli:
  ratio:
    bad: 'coredns_dns_responses_total{rcode="NOPE", server="x"}'
    total: 'coredns_dns_responses_total{rcode="NOPE"}'
objective: {target: 99.9%, period: 30d}
"""
    tree = live_data.write_tree(tmp_path / "specs", {"dns-two-wrong": body})
    code, out, _ = run(capsys, "preflight", "--prometheus", server, "--specs", str(tree), "--format", "json")
    assert code == 1
    (spec,) = json.loads(out)["specs"]
    (total,) = [f for f in spec["findings"] if f["check"] == "selector" and f["message"].startswith("total")]
    assert total["message"] == (
        "total: matches 0 series, and no single matcher explains it; "
        "coredns_dns_responses_total is there with job coredns (12 series)"
    )
    assert total["detail"] == {"jobs": {"coredns": 12}}


def test_a_fleet_unit_ticket_would_fire_only_where_its_slice_does_not_page(
    tmp_path_factory: pytest.TempPathFactory,
) -> None:
    """West has 3 of 4 hosts hot (the page, which holds their tickets back), east 1 of 4 (its ticket)."""
    workdir = tmp_path_factory.mktemp("preflight-fleet")
    now = int(time.time())
    om = live_data.OpenMetrics(now - 40 * 60, now + 5 * 60)
    for cluster, hot in (("west", 3), ("east", 1)):
        for host in range(4):
            om.gauge("host_temp", {"cluster": cluster, "instance": f"h{host}"}, 0.99 if host < hot else 0.5)
    blocks = servers.backfill(om.text(), workdir)
    tree = live_data.write_tree(tmp_path_factory.mktemp("specs"), live_data.FLEET_SPECS)
    with servers.prometheus(workdir, [], None, blocks) as prom:
        buffer = io.StringIO()
        with contextlib.redirect_stdout(buffer):
            main(["preflight", "--prometheus", prom.url, "--specs", str(tree), "--format", "json"])
    (spec,) = json.loads(buffer.getvalue())["specs"]
    now_findings = {f["subject"].split(" ")[0]: f for f in spec["findings"] if f["check"] == "now"}
    assert now_findings["HostTempUnitAboveCriticalRange"]["detail"]["firing"] == [{"cluster": "east"}]
    assert now_findings["HostTempAboveCriticalRange"]["detail"]["firing"] == [{"cluster": "west"}]
