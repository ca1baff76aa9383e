"""Issue 25 item 2: more real faults in the lab, each raising its spec's alert at the webhook sink through the real
Alertmanager and resolving. One lab for the module, its own (node_exporter runs with --path.rootfs, as
kube-prometheus-stack deploys it, so a test can mount a filesystem at the node's /var/lib/kubelet); each fault
restores the cluster before the next.

The faults whose specs read a 5m window (leader changes, the peer round trip, gRPC failures, slow fsync and backend
commit, rule failures, notification failures) resolve only when the window forgets them, five minutes later: they run
first, and one test near the end waits once, with one deadline, for every alert they raised to be resolved at the
sink, overlapped with the short faults in between. Prometheus stopped and restarted is in test_lab.py, last on that
module's lab: its gap disturbs no fault, and this module, the lab's longest, is shorter by it (tests/suite.py runs the
two modules at once).

Each test prints the seconds from the fault to the firing notification and from the repair to the resolved one; the
resolution test prints every alert's firing and resolved notification on the module's clock."""

from __future__ import annotations

import base64
import datetime
import json
import os
import shutil
import signal
import subprocess
import time
import urllib.error
import urllib.request
from collections.abc import Iterator
from typing import Any

import pytest

from tests import servers
from tests.lab import lab

pytestmark = pytest.mark.skipif(not lab.etcd_available(), reason="etcd or node_exporter not installed (make tools)")

QUOTA = 16 * 1024 * 1024  # the small --quota-backend-bytes one member is restarted with
# node-clock-sync's tickets are true from the start (this machine's kernel clock is not disciplined: test_lab.py)
# and never resolve; every other alert a fault raises must.
STANDING = frozenset({"node-clock-sync"})
CLOCK: dict[str, float] = {}  # "start": time.monotonic() once the module's lab is warm


@pytest.fixture(scope="module")
def running(tmp_path_factory: pytest.TempPathFactory) -> Iterator[lab.Lab]:
    workdir = tmp_path_factory.mktemp("lab-faults")
    broken = frozenset({"platform-network-page"})  # the notification-failure fault's receiver
    with lab.running(workdir, node_rootfs=workdir / "host", broken=broken) as the_lab:
        # Warm-up: every SLI has data and no startup NoData is left.
        assert servers.wait_until(the_lab.no_data_gone, 40, 1), the_lab.lab_alerts()
        CLOCK["start"] = time.monotonic()
        yield the_lab


class Sink:
    """The notifications of one alert at one receiver that arrived after this point."""

    def __init__(self, the_lab: lab.Lab, receiver: str, alertname: str) -> None:
        self.lab, self.receiver, self.alertname = the_lab, receiver, alertname
        self.start = len(the_lab.sink.alerts(receiver))

    def delivered(self, status: str) -> list[dict[str, Any]]:
        return [
            a
            for a in self.lab.sink.alerts(self.receiver)[self.start :]
            if a["labels"]["alertname"] == self.alertname and a["status"] == status
        ]

    def wait(self, status: str, timeout: float = 30) -> dict[str, Any]:
        assert servers.wait_until(lambda: self.delivered(status), timeout, 0.5), (
            self.alertname,
            status,
            sorted((a["alertname"], a["alertstate"], a.get("severity", "")) for a in self.lab.lab_alerts()),
        )
        return self.delivered(status)[0]


def _quiet(the_lab: lab.Lab, alertname: str) -> None:
    """Before a fault: its alert is neither pending nor firing (an earlier fault's has resolved)."""
    assert servers.wait_until(lambda: not [a for a in the_lab.lab_alerts() if a["alertname"] == alertname], 40, 1), (
        the_lab.lab_alerts()
    )
    time.sleep(3)  # Alertmanager's group_interval: the resolved notification of an earlier fault goes out first


def _leader(the_lab: lab.Lab) -> lab.Member:
    found: list[lab.Member] = []

    def one() -> bool:
        found[:] = [m for m in the_lab.members if m.running() and m.is_leader()]
        return len(found) == 1

    assert servers.wait_until(one, 30), [m.log.read_text(errors="replace")[-1000:] for m in the_lab.members]
    return found[0]


def _restart(member: lab.Member) -> None:
    member.stop()
    member.start()
    assert servers.wait_until(member.healthy, 30), member.log.read_text(errors="replace")[-2000:]


def _etcdctl(member: lab.Member, *args: str) -> str:
    result = subprocess.run(
        ["etcdctl", f"--endpoints={member.client_url}", "--command-timeout=20s", *args],
        capture_output=True,
        text=True,
        timeout=30,
        env={**os.environ, "ETCDCTL_API": "3"},
    )
    assert result.returncode == 0, result.stderr
    return result.stdout


def _pages(the_lab: lab.Lab, slo: str) -> list[dict[str, str]]:
    return [a for a in the_lab.lab_alerts("page") if a["slo"] == slo]


def _labels(alert: dict[str, Any], slo: str, severity: str, team: str) -> None:
    labels = alert["labels"]
    assert (labels["slo"], labels["severity"], labels["team"], labels["cluster"]) == (slo, severity, team, lab.CLUSTER)


def _metric(member: lab.Member, name: str) -> float:
    """One unlabelled sample of ``name`` on the member's /metrics, read directly (not through a scrape)."""
    with urllib.request.urlopen(f"http://127.0.0.1:{member.metrics_port}/metrics", timeout=5) as response:
        for line in response.read().decode().splitlines():
            if line.startswith(f"{name} "):
                return float(line.split()[1])
    raise AssertionError(f"{name} not exported by {member.name}")


def _member_id(member: lab.Member) -> str:
    """The member's ID as etcd writes it in the To label of the peer metrics (hex, types.ID.String())."""
    status = json.loads(_etcdctl(member, "endpoint", "status", "-w", "json"))
    return format(int(status[0]["Status"]["header"]["member_id"]), "x")


def test_leader_changes_from_stopping_the_leader_twice_ticket_the_apiserver_team(running: lab.Lab) -> None:
    """etcd-leader-changes reads max by cluster of rate(etcd_server_leader_changes_seen_total[5m]) > 0.004: one
    change in 5m is 0.0033, two are 0.0067, so the leader is stopped twice (each restarted once a new leader is up).
    It resolves once the 5m window no longer holds two changes: waited for with the other 5m faults (the later etcd
    faults change leaders and restart members too, each a change a member sees, so it resolves after the last)."""
    sink = Sink(running, "platform-apiserver-shadow", "EtcdLeaderChangesAboveNormalRange")  # the spec is shadow
    started = time.monotonic()
    for _ in range(2):
        leader = _leader(running)
        leader.stop()  # by its PID
        try:
            assert _leader(running) is not leader
        finally:
            leader.start()
        assert servers.wait_until(leader.healthy, 30), leader.log.read_text(errors="replace")[-2000:]
    alert = sink.wait("firing", 40)
    fired = time.monotonic() - started
    _labels(alert, "etcd-leader-changes", "ticket", "platform-apiserver")
    assert alert["labels"]["shadow"] == "true"
    assert not _pages(running, "etcd-leader-changes")
    print(f"\nlab: EtcdLeaderChangesAboveNormalRange reached the sink {fired:.1f}s after the first stop")


def test_db_quota_nospace_alarm_pages_the_apiserver_team_and_resolves_after_defrag_and_disarm(
    running: lab.Lab,
) -> None:
    """One follower restarted with a 16 MiB --quota-backend-bytes; 256 KiB values fill its backend past the quota:
    etcd raises the NOSPACE alarm and refuses writes, and etcd-db-quota's critical range (> 0.95) pages (its
    ticket, > 0.8, is inhibited by the page on the same instance). Delete, compact, defragment, disarm: resolved."""
    _quiet(running, "EtcdDBQuotaAboveCriticalRange")
    member = next(m for m in running.members if not m.is_leader())
    member.extra = [f"--quota-backend-bytes={QUOTA}"]
    _restart(member)
    sink = Sink(running, "platform-apiserver-page", "EtcdDBQuotaAboveCriticalRange")
    started = time.monotonic()
    # etcd refuses a write when the backend plus that write would pass the quota, so the size it stops at is
    # the quota less up to one value: with 1 MiB values that is 0.94 of it, under the page's 0.95, at times.
    # 256 KiB values stop it above 0.98.
    value = base64.b64encode(os.urandom(256 * 1024)).decode()
    refused = ""
    try:
        for i in range(160):
            key = base64.b64encode(f"lab/fill-{i}".encode()).decode()
            request = urllib.request.Request(
                f"{member.client_url}/v3/kv/put",
                data=json.dumps({"key": key, "value": value}).encode(),
                headers={"Content-Type": "application/json"},
            )
            try:
                with urllib.request.urlopen(request, timeout=20) as response:
                    answer = response.read().decode()
            except urllib.error.HTTPError as error:
                answer = error.read().decode()
            if "space exceeded" in answer:
                refused = answer
                break
        assert refused, "etcd never refused a write: the quota was not reached"
        assert "NOSPACE" in _etcdctl(member, "alarm", "list")
        ratio = f'etcd_mvcc_db_total_size_in_bytes / etcd_server_quota_backend_bytes{{instance="{member.instance}"}}'
        assert servers.wait_until(lambda: running.prometheus.query(f"{ratio} > 0.95"), 30, 0.5), (
            running.prometheus.query(ratio)
        )
        alert = sink.wait("firing")
        fired = time.monotonic() - started
        _labels(alert, "etcd-db-quota", "page", "platform-apiserver")
        assert alert["labels"]["instance"] == member.instance
        # The refused writes are gRPC ResourceExhausted: etcd-grpc-failures sees them too (printed, not asserted).
        grpc = [a["alertname"] for a in running.lab_alerts() if a["slo"] == "etcd-grpc-failures"]
    finally:
        repaired = time.monotonic()
        _etcdctl(member, "del", "--prefix", "lab/fill-")
        revision = json.loads(_etcdctl(member, "get", "lab/", "--prefix", "--limit=1", "-w", "json"))
        _etcdctl(member, "compact", str(revision["header"]["revision"]), "--physical")
        for each in running.members:
            if each.running():
                _etcdctl(each, "defrag")
        _etcdctl(member, "alarm", "disarm")
    assert "NOSPACE" not in _etcdctl(member, "alarm", "list")
    sink.wait("resolved")
    resolved = time.monotonic() - repaired
    member.extra = []
    _restart(member)
    print(
        f"\nlab: EtcdDBQuotaAboveCriticalRange (NOSPACE) reached the sink {fired:.1f}s after the fill began, "
        f"resolved {resolved:.1f}s after the delete, compaction, defrag and disarm; etcd-grpc-failures: {grpc}"
    )


def test_a_member_stopped_with_sigstop_past_the_election_timeout_tickets_and_resolves_on_sigcont(
    running: lab.Lab,
) -> None:
    """SIGSTOP a follower for 10 s (election timeout 2.5 s): its scrapes time out, so etcd-member-availability
    (avg of up) tickets platform-apiserver; SIGCONT and it resolves. Nothing pages: 2 of 3 keep quorum, and the two
    fail no proposal (etcd-proposal-failures stays silent).

    The peer round trip: etcd observes etcd_network_peer_round_trip_time_seconds from its prober's smoothed round
    trip (SRTT = 7/8 SRTT + 1/8 RTT of each successful probe, one probe every 4 s) every 30 s (5 s while the prober is
    unhealthy): rafthttp/probing_status.go and xiang90/probing's status.go at etcd v3.5.15. A probe to a stopped peer
    blocks until the peer answers, so nothing new is observed during the stop; after SIGCONT the blocked probe's
    round trip (the seconds it waited) enters the SRTT, and the next observation of each member that probes the
    stopped one is over a second. etcd-peer-latency's p99 over 5m (per observing instance) crosses 0.15 s at those two
    instances, not at the stopped member's, and EtcdMemberCommunicationSlowAboveNormalRange tickets platform-apiserver
    for each of them (the lab's ``for`` is 4 s). With the real ``for: 10m`` one 10 s stop does not ticket (the spike
    leaves the 5m window before 10 minutes: the spec's brief-spike scenario); a member that keeps stalling does. The
    ticket resolves when the window forgets the spike, waited for by the resolution test."""
    _quiet(running, "EtcdMembersBelowNormalRange")
    follower = next(m for m in running.members if not m.is_leader())
    observers = [m for m in running.members if m is not follower]
    assert follower.proc is not None
    sink = Sink(running, "platform-apiserver-ticket", "EtcdMembersBelowNormalRange")
    rtt = Sink(running, "platform-apiserver-ticket", "EtcdMemberCommunicationSlowAboveNormalRange")
    failed = [_metric(m, "etcd_server_proposals_failed_total") for m in observers]
    started = time.monotonic()
    follower.proc.send_signal(signal.SIGSTOP)
    try:
        alert = sink.wait("firing")
        fired = time.monotonic() - started
        _labels(alert, "etcd-member-availability", "ticket", "platform-apiserver")
        assert not _pages(running, "etcd-member-availability")
        time.sleep(max(0.0, 10 - fired))  # well past the election timeout
    finally:
        follower.proc.send_signal(signal.SIGCONT)
    continued = time.monotonic()
    sink.wait("resolved")
    resolved = time.monotonic() - continued
    assert servers.wait_until(follower.healthy, 30)

    def slow() -> set[str]:
        return {a["labels"]["instance"] for a in rtt.delivered("firing")}

    # The observers' next RTT observation is at most 30 s after SIGCONT.
    assert servers.wait_until(lambda: slow() >= {m.instance for m in observers}, 90, 0.5), (
        slow(),
        running.prometheus.query('slo:sli_value:gauge{slo="etcd-peer-latency"}'),
    )
    rtt_fired = time.monotonic() - continued
    for each in rtt.delivered("firing"):
        _labels(each, "etcd-peer-latency", "ticket", "platform-apiserver")
    assert follower.instance not in slow()
    assert [_metric(m, "etcd_server_proposals_failed_total") for m in observers] == failed
    assert not [a for a in running.lab_alerts() if a["slo"] in ("etcd-proposal-failures", "etcd-leader")]
    print(
        f"\nlab: EtcdMembersBelowNormalRange (SIGSTOP) reached the sink {fired:.1f}s after the stop, "
        f"resolved {resolved:.1f}s after SIGCONT; EtcdMemberCommunicationSlowAboveNormalRange for the 2 observers "
        f"{rtt_fired:.1f}s after SIGCONT"
    )


def test_the_leader_stopped_with_sigstop_is_replaced_and_its_failed_proposals_stay_under_the_spec(
    running: lab.Lab,
) -> None:
    """SIGSTOP the leader for 10 s: the two others elect a new leader after the election timeout (2.5 s); the stopped
    leader's scrapes time out (etcd-member-availability tickets, and resolves on SIGCONT when it rejoins as a follower).

    Proposals fail, a handful: a follower's proposal while it has no leader is dropped, and the stopped leader's
    clients' requests, queued while it was stopped, fail when it resumes and steps down (server/etcdserver/
    v3_server.go, both paths proposalsFailed.Inc(), @v3.5.15). etcd-proposal-failures reads the most any member fails
    per second over 5m against the mixin's 5/s (etcdHighNumberOfFailedProposals): one election is its one-election
    scenario and nothing fires, which is what the real etcd shows here (a few failures, 0.01/s). The fault the spec
    is for, an election loop under an apiserver's write rate, is out of the lab's reach (its client writes 20 times a
    second). etcd_server_proposals_pending stays at 0 or 1 (writes commit in milliseconds); no spec reads it.
    The peer round trip toward the stopped leader crosses 0.15 s at both observers after SIGCONT, as for a follower.
    etcd-leader (avg has_leader < 1, for 1m) is not asserted silent: an election slower than the lab's 4 s ``for``
    would page there, which the real 1m holds back."""
    _quiet(running, "EtcdMembersBelowNormalRange")
    leader = _leader(running)
    observers = [m for m in running.members if m is not leader]
    assert leader.proc is not None
    leader_id = _member_id(leader)
    sink = Sink(running, "platform-apiserver-ticket", "EtcdMembersBelowNormalRange")
    failed = sum(_metric(m, "etcd_server_proposals_failed_total") for m in running.members)
    changes = [_metric(m, "etcd_server_leader_changes_seen_total") for m in observers]
    started = time.monotonic()
    leader.proc.send_signal(signal.SIGSTOP)
    try:
        assert servers.wait_until(lambda: any(m.is_leader() for m in observers), 30), "no new leader"
        elected = time.monotonic() - started
        alert = sink.wait("firing")
        fired = time.monotonic() - started
        _labels(alert, "etcd-member-availability", "ticket", "platform-apiserver")
        time.sleep(max(0.0, 10 - fired))
    finally:
        leader.proc.send_signal(signal.SIGCONT)
    continued = time.monotonic()
    sink.wait("resolved")
    resolved = time.monotonic() - continued
    assert servers.wait_until(lambda: leader.healthy() and not leader.is_leader(), 30)
    assert all(
        _metric(m, "etcd_server_leader_changes_seen_total") > seen for m, seen in zip(observers, changes, strict=True)
    )
    # The stopped leader's queued requests fail within etcd's request timeout (5 s + 2 election timeouts).
    assert servers.wait_until(
        lambda: sum(_metric(m, "etcd_server_proposals_failed_total") for m in running.members) > failed, 40
    ), "no proposal failed"
    lost = sum(_metric(m, "etcd_server_proposals_failed_total") for m in running.members) - failed
    pair = (
        "histogram_quantile(0.99, sum by (le, instance, To) "
        f'(rate(etcd_network_peer_round_trip_time_seconds_bucket{{To="{leader_id}"}}[5m])))'
    )
    observed = {m.instance for m in observers}
    assert servers.wait_until(
        lambda: {r["metric"]["instance"] for r in running.prometheus.query(f"{pair} > 0.15")} >= observed, 90, 1
    ), running.prometheus.query(pair)
    rtt = time.monotonic() - continued
    assert servers.wait_until(
        lambda: (
            {
                a["instance"]
                for a in running.lab_alerts("ticket")
                if a["alertname"] == "EtcdMemberCommunicationSlowAboveNormalRange" and a["alertstate"] == "firing"
            }
            >= observed
        ),
        30,
        1,
    ), running.lab_alerts()
    proposals = running.prometheus.query('slo:sli_value:gauge{slo="etcd-proposal-failures"}')
    assert proposals and float(proposals[0]["value"][1]) < 5, proposals
    assert not [a for a in running.lab_alerts() if a["slo"] == "etcd-proposal-failures"]
    pending = running.prometheus.query("max_over_time(etcd_server_proposals_pending[1m])")
    assert not _pages(running, "etcd-member-availability") and not _pages(running, "etcd-peer-latency")
    print(
        f"\nlab: leader SIGSTOPped: a new leader {elected:.1f}s after the stop, EtcdMembersBelowNormalRange "
        f"{fired:.1f}s, resolved {resolved:.1f}s after SIGCONT; {lost:.0f} proposals failed (SLI "
        f"{float(proposals[0]['value'][1]):.3f}/s, range 5/s: silent); pending max "
        f"{max(float(r['value'][1]) for r in pending):.0f}; peer RTT to it over 0.15 s at both observers {rtt:.1f}s "
        "after SIGCONT"
    )


def test_two_members_stopped_lose_quorum_and_page_the_apiserver_team_once(running: lab.Lab) -> None:
    """Two of three members stopped by PID: the last one has no leader (etcd_server_has_leader 0 after the
    election timeout), so etcd-leader (avg of has_leader < 1) pages platform-apiserver. etcd-member-availability
    sees a third up (< 0.51, its quorum page) but that page needs apiserver writes failing to confirm it, and the
    lab runs no apiserver: it stays a ticket. The load's calls now fail Unavailable, so etcd-grpc-failures reaches
    its critical range too: etcd-leader explains it (found here first), so it is held back. One incident, one
    page. Restarting both resolves the page."""
    _quiet(running, "EtcdNoLeaderBelowNormalRange")
    survivor = _leader(running)
    stopped = [m for m in running.members if m is not survivor]
    page = Sink(running, "platform-apiserver-page", "EtcdNoLeaderBelowNormalRange")
    before = {r: len(running.sink.alerts(r)) for r in running.sink.receivers()}
    started = time.monotonic()
    for member in stopped:
        member.stop()  # by its PID
    try:
        alert = page.wait("firing", 60)
        fired = time.monotonic() - started
        _labels(alert, "etcd-leader", "page", "platform-apiserver")
        grpc = "EtcdGRPCFailuresAboveCriticalRange"
        assert servers.wait_until(
            lambda: [a for a in running.lab_alerts("page") if a["alertname"] == grpc and a["alertstate"] == "firing"],
            40,
            1,
        ), sorted((a["alertname"], a["alertstate"]) for a in running.lab_alerts())
        time.sleep(5)  # two more group intervals: had the gRPC page not been held back, it would have been sent
        firing_pages = {
            (receiver, a["labels"]["alertname"])
            for receiver in running.sink.receivers()
            if receiver.endswith("-page")
            for a in running.sink.alerts(receiver)[before.get(receiver, 0) :]
            if a["status"] == "firing"
        }
        assert firing_pages == {("platform-apiserver-page", "EtcdNoLeaderBelowNormalRange")}, firing_pages
    finally:
        for member in stopped:
            member.start()
    restarted = time.monotonic()
    for member in stopped:
        assert servers.wait_until(member.healthy, 30), member.log.read_text(errors="replace")[-2000:]
    page.wait("resolved", 60)
    resolved = time.monotonic() - restarted
    print(
        f"\nlab: quorum lost: EtcdNoLeaderBelowNormalRange reached the sink {fired:.1f}s after the stop, "
        f"resolved {resolved:.1f}s after the restart; pages sent: {sorted(firing_pages)}"
    )


def test_slow_fsync_on_a_follower_tickets_the_apiserver_team_for_that_member(running: lab.Lab) -> None:
    """strace delays every fdatasync of one follower by 0.7 s: its WAL's fsync and bbolt's commit both call
    fdatasync on Linux (etcd's fileutil.Fdatasync, bbolt's fdatasync), and a bbolt commit makes two (the pages, then
    the meta page). p99 of etcd_disk_wal_fsync_duration_seconds over 5m passes 0.5 s, so etcd-wal-fsync-latency's
    normal range (the mixin's etcdHighFsyncDurations warning) tickets platform-apiserver for that member's instance;
    under 1 s, its page stays silent. In the same fault p99 of etcd_disk_backend_commit_duration_seconds passes 1.4 s
    (two delayed fdatasyncs a commit), over etcd-backend-commit-latency's 0.25 s (the mixin's etcdHighCommitDurations
    warning): it tickets platform-apiserver for the same instance (the spec has no page). Both resolve once the 5m
    window forgets the slow syncs, waited for by the resolution test."""
    if shutil.which("strace") is None:
        pytest.skip("strace is not installed: the slow-disk fault injects fdatasync delays with it")
    _quiet(running, "EtcdWALFsyncAboveNormalRange")
    follower = next(m for m in running.members if not m.is_leader())
    assert follower.proc is not None
    sink = Sink(running, "platform-apiserver-ticket", "EtcdWALFsyncAboveNormalRange")
    commit = Sink(running, "platform-apiserver-ticket", "EtcdBackendCommitAboveNormalRange")
    started = time.monotonic()
    delay = subprocess.Popen(
        [
            "strace",
            "-f",
            "-qq",
            "-o",
            "/dev/null",
            "-p",
            str(follower.proc.pid),
            "-e",
            "trace=fdatasync",
            "-e",
            "inject=fdatasync:delay_enter=700000",
        ],
        stdout=subprocess.DEVNULL,
        stderr=subprocess.PIPE,
    )
    try:
        alert = sink.wait("firing", 60)
        fired = time.monotonic() - started
        _labels(alert, "etcd-wal-fsync-latency", "ticket", "platform-apiserver")
        assert alert["labels"]["instance"] == follower.instance
        assert not _pages(running, "etcd-wal-fsync-latency")
        slow_commit = commit.wait("firing", 60)
        committed = time.monotonic() - started
        _labels(slow_commit, "etcd-backend-commit-latency", "ticket", "platform-apiserver")
        assert slow_commit["labels"]["instance"] == follower.instance
    finally:
        delay.terminate()  # strace detaches: the member runs on at full speed
        try:
            delay.wait(timeout=10)
        except subprocess.TimeoutExpired:
            delay.kill()
            delay.wait(timeout=10)
    assert servers.wait_until(follower.healthy, 30)
    print(
        f"\nlab: EtcdWALFsyncAboveNormalRange reached the sink {fired:.1f}s and EtcdBackendCommitAboveNormalRange "
        f"{committed:.1f}s after fdatasync slowed to 0.7s"
    )


def test_a_rule_that_fails_to_evaluate_pages_the_observability_team(running: lab.Lab) -> None:
    """A rule whose every evaluation fails (many-to-many matching: ``up * on (cluster) up``) is loaded by a real
    reload (POST /-/reload): prometheus_rule_evaluation_failures_total climbs and prometheus-rule-evaluation-failures
    (on the lab's own Prometheus metrics) pages platform-observability for that rule group. Removing the rule
    stops the failures; the page resolves when the 5m rate forgets them, waited for by the resolution test."""
    assert running.extra_rules is not None
    _quiet(running, "PrometheusRuleFailuresAboveNormalRange")
    sink = Sink(running, "platform-observability-page", "PrometheusRuleFailuresAboveNormalRange")
    broken = {
        "groups": [
            {
                "name": "lab-broken",
                "interval": "2s",
                "rules": [{"record": "lab:broken", "expr": "up * on (cluster) up"}],
            }
        ]
    }
    started = time.monotonic()
    try:
        running.extra_rules.write_text(json.dumps(broken), encoding="utf-8")
        _reload(running.prometheus.url)
        alert = sink.wait("firing", 60)
        fired = time.monotonic() - started
        _labels(alert, "prometheus-rule-evaluation-failures", "page", "platform-observability")
        assert alert["labels"]["rule_group"].endswith(";lab-broken"), alert["labels"]
    finally:
        running.extra_rules.write_text("groups: []\n", encoding="utf-8")
        _reload(running.prometheus.url)
    print(
        f"\nlab: PrometheusRuleFailuresAboveNormalRange reached the sink {fired:.1f}s after the broken rule was loaded"
    )


def _reload(url: str) -> None:
    """Prometheus or Alertmanager reloads its configuration files (POST /-/reload)."""
    request = urllib.request.Request(f"{url}/-/reload", data=b"", method="POST")
    with urllib.request.urlopen(request, timeout=10) as response:
        assert response.status == 200


def _post_alert(the_lab: lab.Lab, alert: dict[str, Any]) -> None:
    """Post one alert to the lab's Alertmanager, as a rule engine does."""
    request = urllib.request.Request(
        f"{the_lab.alertmanager.url}/api/v2/alerts",
        data=json.dumps([alert]).encode(),
        headers={"Content-Type": "application/json"},
    )
    with urllib.request.urlopen(request, timeout=5) as response:
        assert response.status == 200


def test_a_team_page_receiver_on_a_closed_port_reaches_the_observability_team(running: lab.Lab) -> None:
    """platform-network's page receiver posts to a port nothing listens on (a rotated key, a dead endpoint): a
    page for that team fails at every retry, Alertmanager counts it in alertmanager_notifications_failed_total,
    and alertmanager-notification-failures (run on the lab's own Alertmanager metrics) reaches
    platform-observability, whose receivers work. The network team's page is lost while the endpoint is dead: the
    point. The repair: the receiver's endpoint fixed and Alertmanager's configuration reloaded (POST /-/reload): the
    held page reaches platform-network, the probe is resolved, the failures stop, and the failure alert resolves when
    its 5m rate forgets them (waited for by the resolution test)."""
    # The ticket (any failure for 10m) or, where the failures pass half the webhook integration's notifications,
    # the page: either reaches platform-observability; the page holds the ticket back.
    sinks = [
        Sink(running, "platform-observability-ticket", "AlertmanagerFailedToSendAlertsAboveNormalRange"),
        Sink(running, "platform-observability-page", "AlertmanagerFailedToSendAlertsAboveCriticalRange"),
    ]
    started = time.monotonic()
    probe: dict[str, Any] = {
        "labels": {
            "alertname": "LabNetworkProbe",
            "slo_compiler": "true",
            "team": "platform-network",
            "severity": "page",
            "cluster": lab.CLUSTER,
        },
        "annotations": {"summary": "a page for a team whose receiver is broken"},
    }
    _post_alert(running, probe)
    assert servers.wait_until(lambda: any(sink.delivered("firing") for sink in sinks), 60, 0.5), sorted(
        (a["alertname"], a["alertstate"], a.get("severity", "")) for a in running.lab_alerts()
    )
    fired = time.monotonic() - started
    (alert,) = [a for sink in sinks for a in sink.delivered("firing")][:1]
    assert alert["labels"]["slo"] == "alertmanager-notification-failures"
    assert alert["labels"]["team"] == "platform-observability" and alert["labels"]["integration"] == "webhook"
    assert "platform-network-page" not in running.sink.receivers()
    lab.lab_alertmanager_config(running.workdir, running.sink.port)  # every receiver reaches the sink again
    _reload(running.alertmanager.url)
    repaired = time.monotonic()
    network = Sink(running, "platform-network-page", "LabNetworkProbe")
    network.start = 0  # the receiver had no notification before: every one it gets counts
    network.wait("firing")
    delivered = time.monotonic() - repaired
    probe["endsAt"] = datetime.datetime.now(datetime.UTC).isoformat()
    _post_alert(running, probe)
    network.wait("resolved")
    print(
        f"\nlab: {alert['labels']['alertname']} reached platform-observability {fired:.1f}s after the page failed; "
        f"after the receiver was fixed the held page reached platform-network {delivered:.1f}s after the reload"
    )


def test_a_full_kubelet_filesystem_tickets_the_nodes_team_and_resolves_when_freed(running: lab.Lab) -> None:
    """A 16 MiB ext4 image mounted (loop) at the node's /var/lib/kubelet (<rootfs>/var/lib/kubelet), filled to
    about 97%: node-filesystem-space's unit ticket (< 0.1) and the cluster's (one node: avg < 0.2) reach
    platform-nodes; one node never pages (the page needs 3 nodes and 3% of the fleet). Deleting the file resolves."""
    host = running.workdir / "host"
    image, mountpoint = running.workdir / "kubelet.img", host / "var" / "lib" / "kubelet"
    mountpoint.mkdir(parents=True, exist_ok=True)
    subprocess.run(["truncate", "-s", "16M", str(image)], check=True)
    made = subprocess.run(["mkfs.ext4", "-q", "-F", "-m", "0", str(image)], capture_output=True, text=True)
    if made.returncode != 0:
        pytest.skip(f"mkfs.ext4 refused on this machine: {made.stderr.strip()}")
    mounted = subprocess.run(["mount", "-o", "loop", str(image), str(mountpoint)], capture_output=True, text=True)
    if mounted.returncode != 0:
        pytest.skip(f"this machine refuses a loop mount (the filesystem fault needs one): {mounted.stderr.strip()}")
    try:
        seen = 'node_filesystem_avail_bytes{mountpoint="/var/lib/kubelet", fstype="ext4"}'
        assert servers.wait_until(lambda: running.prometheus.query(seen), 20), "node_exporter does not see the mount"
        unit = Sink(running, "platform-nodes-ticket", "NodeFilesystemSpaceUnitBelowCriticalRange")
        fleet = Sink(running, "platform-nodes-ticket", "NodeFilesystemSpaceBelowNormalRange")
        started = time.monotonic()
        filler = mountpoint / "filler"
        with filler.open("wb") as out:
            chunk = b"\0" * (1024 * 1024)
            try:
                for _ in range(32):
                    out.write(chunk)
                    out.flush()
            except OSError:
                pass  # ENOSPC: the filesystem is full
        os.sync()
        for sink, slo_severity in ((unit, "ticket"), (fleet, "ticket")):
            alert = sink.wait("firing")
            _labels(alert, "node-filesystem-space", slo_severity, "platform-nodes")
        fired = time.monotonic() - started
        assert not _pages(running, "node-filesystem-space")
        filler.unlink()
        freed = time.monotonic()
        unit.wait("resolved")
        fleet.wait("resolved")
        resolved = time.monotonic() - freed
    finally:
        subprocess.run(["umount", str(mountpoint)], check=False)
    print(
        f"\nlab: NodeFilesystemSpace tickets reached the sink {fired:.1f}s after the fill, "
        f"resolved {resolved:.1f}s after the file was deleted"
    )


def test_node_exporter_stopped_raises_the_node_specs_no_data_tickets_and_no_page(running: lab.Lab) -> None:
    """node_exporter SIGSTOPped: its scrapes time out, its series go stale, and each node spec that reads them
    at an instant raises its NoData ticket at its owner (platform-nodes, platform-network); nothing pages. SIGCONT
    and they resolve. The NIC budgets read rate(...[5m]), which keeps answering from the window's older samples
    for five minutes after the last scrape (rate ignores staleness markers): their NoData comes that much later,
    as on a real cluster, and is not waited for."""
    assert running.exporter is not None
    node_specs = set(lab.NODE_SPECS) - {"nic-drop-budget", "nic-error-budget"}
    started = time.monotonic()
    receivers = ("platform-nodes-ticket", "platform-network-ticket")  # the node specs' owners
    before = {r: len(running.sink.alerts(r)) for r in receivers}

    def tickets(status: str) -> set[str]:
        return {
            a["labels"]["slo"]
            for r in receivers
            for a in running.sink.alerts(r)[before[r] :]
            if a["labels"]["alertname"].endswith("NoData") and a["status"] == status
        }

    running.exporter.send_signal(signal.SIGSTOP)
    try:
        assert servers.wait_until(lambda: tickets("firing") >= node_specs, 90, 1), (
            node_specs - tickets("firing"),
            sorted((a["alertname"], a["alertstate"]) for a in running.lab_alerts()),
        )
        fired = time.monotonic() - started
        pages = [a for a in running.lab_alerts("page") if a["slo"] in node_specs]
        assert not pages, pages
    finally:
        running.exporter.send_signal(signal.SIGCONT)
    continued = time.monotonic()
    assert servers.wait_until(lambda: tickets("resolved") >= node_specs, 90, 1), node_specs - tickets("resolved")
    resolved = time.monotonic() - continued
    print(
        f"\nlab: node_exporter stopped: {len(node_specs)} NoData tickets reached their owners {fired:.1f}s after the "
        f"stop, resolved {resolved:.1f}s after SIGCONT"
    )


def _notifications(the_lab: lab.Lab) -> list[tuple[float, str, dict[str, Any]]]:
    """Every alert of a lab-fed spec the sink received, with its arrival (monotonic) and receiver, in order."""
    with the_lab.sink.lock:
        received = [
            (when, receiver, alert)
            for receiver, payloads in the_lab.sink.received.items()
            for payload, when in zip(payloads, the_lab.sink.arrived[receiver], strict=True)
            for alert in payload["alerts"]
        ]
    return sorted(
        (n for n in received if n[2]["labels"].get("slo") in the_lab.specs and n[2]["labels"]["slo"] not in STANDING),
        key=lambda n: n[0],
    )


COMMON = frozenset({"alertname", "severity", "team", "slo", "family", "slo_compiler", "cluster", "shadow"})


def _key(receiver: str, alert: dict[str, Any]) -> str:
    """One alert at one receiver: its name and the labels that tell it from its siblings (instance, group, code)."""
    labels = alert["labels"]
    rest = ",".join(f"{k}={v}" for k, v in sorted(labels.items()) if k not in COMMON)
    return f"{receiver} {labels['alertname']} {rest}".strip()


def _open(the_lab: lab.Lab) -> list[str]:
    """The alerts whose last notification at their receiver is a firing one."""
    last = {_key(receiver, alert): alert["status"] for _, receiver, alert in _notifications(the_lab)}
    return sorted(key for key, status in last.items() if status == "firing")


def test_every_alert_the_faults_raised_resolves_at_the_sink(running: lab.Lab) -> None:
    """The faults above whose specs read a 5m window resolve only when the window forgets them: leader changes (and
    each later member restart or election, which a member sees as a change), the peer round trip after a SIGSTOP,
    gRPC failures (NOSPACE, quorum loss, slow fsync), slow fsync and backend commit, rule failures, notification
    failures. This waits for all of them at once, one deadline from here, and asserts that every alert of a lab-fed
    spec that fired at the sink has a resolved notification after its last firing one, from the real Alertmanager.
    Standing: node-clock-sync's true tickets (this machine's clock)."""
    started = time.monotonic()
    fired = {_key(r, a) for _, r, a in _notifications(running) if a["status"] == "firing"}
    # The faults ran on this module's lab only when its tests run in one process, in file order (tests/suite.py
    # runs the lab tier so); a worker that took this test alone would pass it on a fresh lab, proving nothing.
    assert fired, "no fault test raised an alert on this lab: run tests/lab/ in one process, in file order"
    # The last 5m fault ran a few minutes ago at most: its window, a peer round trip's 30 s observation and the
    # Alertmanager group interval stay well inside 10 minutes on a loaded machine.
    assert servers.wait_until(lambda: not _open(running), 600, 2), (
        _open(running),
        sorted((a["alertname"], a["alertstate"], a.get("instance", "")) for a in running.lab_alerts()),
    )
    waited = time.monotonic() - started
    resolved = {_key(r, a) for _, r, a in _notifications(running) if a["status"] == "resolved"}
    assert fired <= resolved, fired - resolved
    zero = CLOCK.get("start", started)
    times: dict[str, dict[str, float]] = {}
    for when, receiver, alert in _notifications(running):
        times.setdefault(_key(receiver, alert), {}).setdefault(alert["status"], when - zero)
        if alert["status"] == "resolved":
            times[_key(receiver, alert)]["resolved"] = when - zero  # the last resolution
    print(f"\nlab: every fault's alert resolved; this test waited {waited:.1f}s (module clock, from the warm lab):")
    for key, seen in sorted(times.items(), key=lambda item: item[1].get("firing", 0)):
        print(f"lab:   {key}: firing at {seen.get('firing', -1):.0f}s, resolved at {seen.get('resolved', -1):.0f}s")
