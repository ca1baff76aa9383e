"""Issue 25 item 2: more real faults in the lab, each raising its spec's alert at the webhook sink through the real
Alertmanager and (where the rule's window allows it in a short run) resolving. One lab for the module, its own
(node_exporter runs with --path.rootfs, as kube-prometheus-stack deploys it, so a test can mount a filesystem at
the node's /var/lib/kubelet); each fault restores the cluster before the next.

Each test prints the seconds from the fault to the firing notification and from the repair to the resolved one."""

from __future__ import annotations

import base64
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


@pytest.fixture(scope="module")
def running(tmp_path_factory: pytest.TempPathFactory) -> Iterator[lab.Lab]:
    workdir = tmp_path_factory.mktemp("lab-faults")
    broken = frozenset({"platform-network-page"})  # the notification-failure fault's receiver
    with lab.running(workdir, node_rootfs=workdir / "host", broken=broken) as the_lab:
        # Warm-up: every SLI has data and no startup NoData is left.
        assert servers.wait_until(the_lab.no_data_gone, 40, 1), the_lab.lab_alerts()
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


def test_leader_changes_from_stopping_the_leader_twice_ticket_the_apiserver_team(running: lab.Lab) -> None:
    """etcd-leader-changes reads max by cluster of rate(etcd_server_leader_changes_seen_total[5m]) > 0.004: one
    change in 5m is 0.0033, two are 0.0067, so the leader is stopped twice (each restarted once a new leader is up)."""
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
    note = "resolves once the 5m window no longer holds the two changes"
    if os.environ.get("SLO_LAB_SLOW"):  # five minutes of wall time: only when asked
        repaired = time.monotonic()
        sink.wait("resolved", 330)
        note = f"resolved {time.monotonic() - repaired:.1f}s after the second restart"
    print(f"\nlab: EtcdLeaderChangesAboveNormalRange reached the sink {fired:.1f}s after the first stop; {note}")


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
    (avg of up) tickets platform-apiserver; SIGCONT and it resolves. Nothing pages: 2 of 3 keep quorum."""
    _quiet(running, "EtcdMembersBelowNormalRange")
    follower = next(m for m in running.members if not m.is_leader())
    assert follower.proc is not None
    sink = Sink(running, "platform-apiserver-ticket", "EtcdMembersBelowNormalRange")
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
    print(
        f"\nlab: EtcdMembersBelowNormalRange (SIGSTOP) reached the sink {fired:.1f}s after the stop, "
        f"resolved {resolved:.1f}s after SIGCONT"
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
    """strace delays every fdatasync of one follower by 0.7 s (its WAL's fsync; the kernel does the rest): p99 of
    etcd_disk_wal_fsync_duration_seconds over 5m passes 0.5 s, so etcd-wal-fsync-latency's normal range (the
    mixin's etcdHighFsyncDurations warning) tickets platform-apiserver for that member's instance; under 1 s and
    the election timeout, nothing pages. It resolves once the 5m window forgets the slow fsyncs (not waited)."""
    if shutil.which("strace") is None:
        pytest.skip("strace is not installed: the slow-disk fault injects fdatasync delays with it")
    _quiet(running, "EtcdWALFsyncAboveNormalRange")
    follower = next(m for m in running.members if not m.is_leader())
    assert follower.proc is not None
    sink = Sink(running, "platform-apiserver-ticket", "EtcdWALFsyncAboveNormalRange")
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
    finally:
        delay.terminate()  # strace detaches: the member runs on at full speed
        try:
            delay.wait(timeout=10)
        except subprocess.TimeoutExpired:
            delay.kill()
            delay.wait(timeout=10)
    assert servers.wait_until(follower.healthy, 30)
    print(f"\nlab: EtcdWALFsyncAboveNormalRange reached the sink {fired:.1f}s after fdatasync slowed to 0.7s")


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


def test_a_rule_that_fails_to_evaluate_pages_the_observability_team(running: lab.Lab) -> None:
    """A rule whose every evaluation fails (many-to-many matching: ``up * on (cluster) up``) is loaded by a real
    reload (POST /-/reload): prometheus_rule_evaluation_failures_total climbs and prometheus-rule-evaluation-failures
    (on the lab's own Prometheus metrics) pages platform-observability for that rule group. Removing the rule
    stops the failures; the page resolves when the 5m rate forgets them (not waited for)."""
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
        _reload(running)
        alert = sink.wait("firing", 60)
        fired = time.monotonic() - started
        _labels(alert, "prometheus-rule-evaluation-failures", "page", "platform-observability")
        assert alert["labels"]["rule_group"].endswith(";lab-broken"), alert["labels"]
    finally:
        running.extra_rules.write_text("groups: []\n", encoding="utf-8")
        _reload(running)
    print(
        f"\nlab: PrometheusRuleFailuresAboveNormalRange reached the sink {fired:.1f}s after the broken rule was loaded"
    )


def _reload(the_lab: lab.Lab) -> None:
    request = urllib.request.Request(f"{the_lab.prometheus.url}/-/reload", data=b"", method="POST")
    with urllib.request.urlopen(request, timeout=10) as response:
        assert response.status == 200


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


def test_a_team_page_receiver_on_a_closed_port_reaches_the_observability_team(running: lab.Lab) -> None:
    """platform-network's page receiver posts to a port nothing listens on (a rotated key, a dead endpoint): a
    page for that team fails at every retry, Alertmanager counts it in alertmanager_notifications_failed_total,
    and alertmanager-notification-failures (run on the lab's own Alertmanager metrics) reaches
    platform-observability, whose receivers work. The network team's page itself is lost: the point."""
    # The ticket (any failure for 10m) or, where the failures pass half the webhook integration's notifications,
    # the page: either reaches platform-observability; the page holds the ticket back.
    sinks = [
        Sink(running, "platform-observability-ticket", "AlertmanagerFailedToSendAlertsAboveNormalRange"),
        Sink(running, "platform-observability-page", "AlertmanagerFailedToSendAlertsAboveCriticalRange"),
    ]
    started = time.monotonic()
    probe = {
        "labels": {
            "alertname": "LabNetworkProbe",
            "slo_compiler": "true",
            "team": "platform-network",
            "severity": "page",
            "cluster": lab.CLUSTER,
        },
        "annotations": {"summary": "a page for a team whose receiver is broken"},
    }
    request = urllib.request.Request(
        f"{running.alertmanager.url}/api/v2/alerts",
        data=json.dumps([probe]).encode(),
        headers={"Content-Type": "application/json"},
    )
    with urllib.request.urlopen(request, timeout=5) as response:
        assert response.status == 200
    assert servers.wait_until(lambda: any(sink.delivered("firing") for sink in sinks), 60, 0.5), sorted(
        (a["alertname"], a["alertstate"], a.get("severity", "")) for a in running.lab_alerts()
    )
    fired = time.monotonic() - started
    (alert,) = [a for sink in sinks for a in sink.delivered("firing")][:1]
    assert alert["labels"]["slo"] == "alertmanager-notification-failures"
    assert alert["labels"]["team"] == "platform-observability" and alert["labels"]["integration"] == "webhook"
    assert "platform-network-page" not in running.sink.receivers()
    print(f"\nlab: {alert['labels']['alertname']} reached platform-observability {fired:.1f}s after the page failed")
