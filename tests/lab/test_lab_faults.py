"""Issue 25 item 2: real faults of etcd's leader and quorum in the lab, each raising its spec's alert at the webhook
sink through the real Alertmanager and resolving. One lab for the module, its own (tests/lab/faults.warm_lab); each
fault restores the cluster before the next. The other faults (a follower stalled, a follower's slow disk, a failing
rule, a dead receiver, a full filesystem, a stopped exporter) are in test_lab_faults_followers_and_monitors.py, on a
lab of their own that tests/suite.py runs beside this one.

The faults whose specs read a 5m window (leader changes, the peer round trip, gRPC failures) resolve only when the
window forgets them, five minutes later: the last test waits once, with one deadline, for every alert the faults
raised to be resolved at the sink. Each fault here ends with an election or members rejoining, which the leader
changes and the peer round trip see, so those windows run from the last of them: the faults were split between
two labs so that this wait starts sooner (one module of ten faults took about eight and a half minutes).

Each test prints the seconds from the fault to the firing notification and from the repair to the resolved one; the
resolution test prints every alert's firing and resolved notification on the module's clock."""

from __future__ import annotations

import base64
import json
import os
import signal
import subprocess
import time
import urllib.error
import urllib.request
from collections.abc import Iterator

import pytest

from tests import servers
from tests.lab import faults, lab

pytestmark = pytest.mark.skipif(not lab.etcd_available(), reason="etcd or node_exporter not installed (make tools)")

QUOTA = 16 * 1024 * 1024  # the small --quota-backend-bytes one member is restarted with

CLOCK: dict[str, float] = {}  # "start": time.monotonic() once the module's lab is warm


@pytest.fixture(scope="module")
def running(tmp_path_factory: pytest.TempPathFactory) -> Iterator[lab.Lab]:
    with faults.warm_lab(tmp_path_factory.mktemp("lab-faults-etcd"), CLOCK) as the_lab:
        yield the_lab


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


def _member_id(member: lab.Member) -> str:
    """The member's ID as etcd writes it in the To label of the peer metrics (hex, types.ID.String())."""
    status = json.loads(_etcdctl(member, "endpoint", "status", "-w", "json"))
    return format(int(status[0]["Status"]["header"]["member_id"]), "x")


def test_leader_changes_from_stopping_the_leader_twice_ticket_the_apiserver_team(running: lab.Lab) -> None:
    """etcd-leader-changes reads max by cluster of rate(etcd_server_leader_changes_seen_total[5m]) > 0.004: one
    change in 5m is 0.0033, two are 0.0067, so the leader is stopped twice (each restarted once a new leader is up).
    It resolves once the 5m window no longer holds two changes: waited for with the other 5m faults (the later etcd
    faults change leaders and restart members too, each a change a member sees, so it resolves after the last)."""
    sink = faults.Sink(running, "platform-apiserver-shadow", "EtcdLeaderChangesAboveNormalRange")  # the spec is shadow
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
    faults.labels(alert, "etcd-leader-changes", "ticket", "platform-apiserver")
    assert alert["labels"]["shadow"] == "true"
    assert not faults.pages(running, "etcd-leader-changes")
    print(f"\nlab: EtcdLeaderChangesAboveNormalRange reached the sink {fired:.1f}s after the first stop")


def test_db_quota_nospace_alarm_pages_the_apiserver_team_and_resolves_after_defrag_and_disarm(
    running: lab.Lab,
) -> None:
    """One follower restarted with a 16 MiB --quota-backend-bytes; 256 KiB values fill its backend past the quota:
    etcd raises the NOSPACE alarm and refuses writes, and etcd-db-quota's critical range (> 0.95) pages (its
    ticket, > 0.8, is inhibited by the page on the same instance). Delete, compact, defragment, disarm: resolved."""
    faults.quiet(running, "EtcdDBQuotaAboveCriticalRange")
    member = next(m for m in running.members if not m.is_leader())
    member.extra = [f"--quota-backend-bytes={QUOTA}"]
    _restart(member)
    sink = faults.Sink(running, "platform-apiserver-page", "EtcdDBQuotaAboveCriticalRange")
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
        faults.labels(alert, "etcd-db-quota", "page", "platform-apiserver")
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
    Its ticket is the follower test's proof, not this one's: in CI the pair was over 0.15 s at both observers and
    the ticket not firing at both 30 s later. The spec's p99 pools every peer an instance probes, so a short stall
    (its one slow observation in the 0.1-0.2 s bucket among about 40 over 5m) can leave it under 0.15 s at one
    observer while the leader's own series is over; on a quiet machine both read 0.80 s and both ticket in 20 s.
    etcd-leader (avg has_leader < 1, for 1m) is not asserted silent: an election slower than the lab's 4 s ``for``
    would page there, which the real 1m holds back."""
    faults.quiet(running, "EtcdMembersBelowNormalRange")
    leader = _leader(running)
    observers = [m for m in running.members if m is not leader]
    assert leader.proc is not None
    leader_id = _member_id(leader)
    sink = faults.Sink(running, "platform-apiserver-ticket", "EtcdMembersBelowNormalRange")
    failed = sum(faults.member_metric(m, "etcd_server_proposals_failed_total") for m in running.members)
    changes = [faults.member_metric(m, "etcd_server_leader_changes_seen_total") for m in observers]
    started = time.monotonic()
    leader.proc.send_signal(signal.SIGSTOP)
    try:
        assert servers.wait_until(lambda: any(m.is_leader() for m in observers), 30), "no new leader"
        elected = time.monotonic() - started
        alert = sink.wait("firing")
        fired = time.monotonic() - started
        faults.labels(alert, "etcd-member-availability", "ticket", "platform-apiserver")
        time.sleep(max(0.0, 10 - fired))
    finally:
        leader.proc.send_signal(signal.SIGCONT)
    continued = time.monotonic()
    sink.wait("resolved")
    resolved = time.monotonic() - continued
    assert servers.wait_until(lambda: leader.healthy() and not leader.is_leader(), 30)
    assert all(
        faults.member_metric(m, "etcd_server_leader_changes_seen_total") > seen
        for m, seen in zip(observers, changes, strict=True)
    )
    # The stopped leader's queued requests fail within etcd's request timeout (5 s + 2 election timeouts).
    assert servers.wait_until(
        lambda: sum(faults.member_metric(m, "etcd_server_proposals_failed_total") for m in running.members) > failed, 40
    ), "no proposal failed"
    lost = sum(faults.member_metric(m, "etcd_server_proposals_failed_total") for m in running.members) - failed
    pair = (
        "histogram_quantile(0.99, sum by (le, instance, To) "
        f'(rate(etcd_network_peer_round_trip_time_seconds_bucket{{To="{leader_id}"}}[5m])))'
    )
    observed = {m.instance for m in observers}
    assert servers.wait_until(
        lambda: {r["metric"]["instance"] for r in running.prometheus.query(f"{pair} > 0.15")} >= observed, 90, 1
    ), running.prometheus.query(pair)
    rtt = time.monotonic() - continued
    proposals = running.prometheus.query('slo:sli_value:gauge{slo="etcd-proposal-failures"}')
    assert proposals and float(proposals[0]["value"][1]) < 5, proposals
    assert not [a for a in running.lab_alerts() if a["slo"] == "etcd-proposal-failures"]
    pending = running.prometheus.query("max_over_time(etcd_server_proposals_pending[1m])")
    assert not faults.pages(running, "etcd-member-availability") and not faults.pages(running, "etcd-peer-latency")
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
    faults.quiet(running, "EtcdNoLeaderBelowNormalRange")
    survivor = _leader(running)
    stopped = [m for m in running.members if m is not survivor]
    page = faults.Sink(running, "platform-apiserver-page", "EtcdNoLeaderBelowNormalRange")
    before = {r: len(running.sink.alerts(r)) for r in running.sink.receivers()}
    started = time.monotonic()
    for member in stopped:
        member.stop()  # by its PID
    try:
        alert = page.wait("firing", 60)
        fired = time.monotonic() - started
        faults.labels(alert, "etcd-leader", "page", "platform-apiserver")
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


def test_every_alert_the_faults_raised_resolves_at_the_sink(running: lab.Lab) -> None:
    """The faults above whose specs read a 5m window resolve only when the window forgets them: leader changes (each
    election and member restart, which a member sees as a change), the peer round trip after the leader's SIGSTOP and
    the quorum loss, gRPC failures (NOSPACE, quorum loss). This waits for all of them at once, one deadline from here
    (tests/lab/faults.every_alert_resolves)."""
    faults.every_alert_resolves(running, CLOCK["start"])
