"""Issue 25 item 2: more real faults in the lab, beside those of etcd's leader and quorum (test_lab_faults.py, on a
lab of its own that tests/suite.py runs at the same time): an etcd follower stalled (SIGSTOP) and a follower's slow
disk, a rule that fails to evaluate, a team's page receiver on a dead port, a full kubelet filesystem (node_exporter
runs with --path.rootfs, as kube-prometheus-stack deploys it, so a test can mount one at the node's
/var/lib/kubelet), a stopped node_exporter. Each raises its spec's alert at the webhook sink through the real
Alertmanager and resolves; each restores the cluster before the next.

The faults whose specs read a 5m window (the peer round trip after the stall, slow fsync and backend commit, rule
failures, notification failures) run first and resolve when the window forgets them; the short faults run while
those windows empty, and the last test waits once, with one deadline, for every alert the faults raised to be
resolved at the sink.

Each test prints the seconds from the fault to the firing notification and from the repair to the resolved one; the
resolution test prints every alert's firing and resolved notification on the module's clock."""

from __future__ import annotations

import datetime
import json
import os
import shutil
import signal
import subprocess
import time
from collections.abc import Iterator
from typing import Any

import pytest

from tests import servers
from tests.lab import faults, lab

pytestmark = pytest.mark.skipif(not lab.etcd_available(), reason="etcd or node_exporter not installed (make tools)")

CLOCK: dict[str, float] = {}  # "start": time.monotonic() once the module's lab is warm


@pytest.fixture(scope="module")
def running(tmp_path_factory: pytest.TempPathFactory) -> Iterator[lab.Lab]:
    with faults.warm_lab(tmp_path_factory.mktemp("lab-faults-followers"), CLOCK) as the_lab:
        yield the_lab


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
    faults.quiet(running, "EtcdMembersBelowNormalRange")
    follower = next(m for m in running.members if not m.is_leader())
    observers = [m for m in running.members if m is not follower]
    assert follower.proc is not None
    sink = faults.Sink(running, "platform-apiserver-ticket", "EtcdMembersBelowNormalRange")
    rtt = faults.Sink(running, "platform-apiserver-ticket", "EtcdMemberCommunicationSlowAboveNormalRange")
    failed = [faults.member_metric(m, "etcd_server_proposals_failed_total") for m in observers]
    started = time.monotonic()
    follower.proc.send_signal(signal.SIGSTOP)
    try:
        alert = sink.wait("firing")
        fired = time.monotonic() - started
        faults.labels(alert, "etcd-member-availability", "ticket", "platform-apiserver")
        assert not faults.pages(running, "etcd-member-availability")
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
        faults.labels(each, "etcd-peer-latency", "ticket", "platform-apiserver")
    assert follower.instance not in slow()
    assert [faults.member_metric(m, "etcd_server_proposals_failed_total") for m in observers] == failed
    assert not [a for a in running.lab_alerts() if a["slo"] in ("etcd-proposal-failures", "etcd-leader")]
    print(
        f"\nlab: EtcdMembersBelowNormalRange (SIGSTOP) reached the sink {fired:.1f}s after the stop, "
        f"resolved {resolved:.1f}s after SIGCONT; EtcdMemberCommunicationSlowAboveNormalRange for the 2 observers "
        f"{rtt_fired:.1f}s after SIGCONT"
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
    faults.quiet(running, "EtcdWALFsyncAboveNormalRange")
    follower = next(m for m in running.members if not m.is_leader())
    assert follower.proc is not None
    sink = faults.Sink(running, "platform-apiserver-ticket", "EtcdWALFsyncAboveNormalRange")
    commit = faults.Sink(running, "platform-apiserver-ticket", "EtcdBackendCommitAboveNormalRange")
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
        faults.labels(alert, "etcd-wal-fsync-latency", "ticket", "platform-apiserver")
        assert alert["labels"]["instance"] == follower.instance
        assert not faults.pages(running, "etcd-wal-fsync-latency")
        slow_commit = commit.wait("firing", 60)
        committed = time.monotonic() - started
        faults.labels(slow_commit, "etcd-backend-commit-latency", "ticket", "platform-apiserver")
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
    faults.quiet(running, "PrometheusRuleFailuresAboveNormalRange")
    sink = faults.Sink(running, "platform-observability-page", "PrometheusRuleFailuresAboveNormalRange")
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
        faults.reload(running.prometheus.url)
        alert = sink.wait("firing", 60)
        fired = time.monotonic() - started
        faults.labels(alert, "prometheus-rule-evaluation-failures", "page", "platform-observability")
        assert alert["labels"]["rule_group"].endswith(";lab-broken"), alert["labels"]
    finally:
        running.extra_rules.write_text("groups: []\n", encoding="utf-8")
        faults.reload(running.prometheus.url)
    print(
        f"\nlab: PrometheusRuleFailuresAboveNormalRange reached the sink {fired:.1f}s after the broken rule was loaded"
    )


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
        faults.Sink(running, "platform-observability-ticket", "AlertmanagerFailedToSendAlertsAboveNormalRange"),
        faults.Sink(running, "platform-observability-page", "AlertmanagerFailedToSendAlertsAboveCriticalRange"),
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
    faults.post_alert(running, probe)
    assert servers.wait_until(lambda: any(sink.delivered("firing") for sink in sinks), 60, 0.5), sorted(
        (a["alertname"], a["alertstate"], a.get("severity", "")) for a in running.lab_alerts()
    )
    fired = time.monotonic() - started
    (alert,) = [a for sink in sinks for a in sink.delivered("firing")][:1]
    assert alert["labels"]["slo"] == "alertmanager-notification-failures"
    assert alert["labels"]["team"] == "platform-observability" and alert["labels"]["integration"] == "webhook"
    assert "platform-network-page" not in running.sink.receivers()
    lab.lab_alertmanager_config(running.workdir, running.sink.port)  # every receiver reaches the sink again
    faults.reload(running.alertmanager.url)
    repaired = time.monotonic()
    network = faults.Sink(running, "platform-network-page", "LabNetworkProbe")
    network.start = 0  # the receiver had no notification before: every one it gets counts
    network.wait("firing")
    delivered = time.monotonic() - repaired
    probe["endsAt"] = datetime.datetime.now(datetime.UTC).isoformat()
    faults.post_alert(running, probe)
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
        unit = faults.Sink(running, "platform-nodes-ticket", "NodeFilesystemSpaceUnitBelowCriticalRange")
        fleet = faults.Sink(running, "platform-nodes-ticket", "NodeFilesystemSpaceBelowNormalRange")
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
            faults.labels(alert, "node-filesystem-space", slo_severity, "platform-nodes")
        fired = time.monotonic() - started
        assert not faults.pages(running, "node-filesystem-space")
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


def test_every_alert_the_faults_raised_resolves_at_the_sink(running: lab.Lab) -> None:
    """The faults above whose specs read a 5m window resolve only when the window forgets them: the peer round trip
    after the stall, slow fsync and backend commit, rule failures, notification failures. This waits for all of
    them at once, one deadline from here (tests/lab/faults.every_alert_resolves)."""
    faults.every_alert_resolves(running, CLOCK["start"])
