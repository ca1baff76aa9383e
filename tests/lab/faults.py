"""What the lab's two fault modules share. test_lab_faults.py holds the faults of etcd's leader and quorum, and
test_lab_faults_followers_and_monitors.py a stalled follower, a slow disk, a failing rule, a dead receiver, a full
filesystem and a stopped exporter; each module starts its own lab (``warm_lab``), and tests/suite.py runs the two at
once.

Each fault module raises its faults' alerts at the webhook sink through the real Alertmanager and, in its last test,
waits once, with one deadline, for every alert they raised to be resolved (``every_alert_resolves``): the faults
whose specs read a 5m window resolve only when the window forgets them, five minutes later. Two modules, two labs:
each waits for its own faults, and the waits overlap (one module took about eight and a half minutes, the wait
starting after the last of ten faults)."""

from __future__ import annotations

import json
import time
import urllib.request
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

from tests import servers
from tests.lab import lab

# node-clock-sync's tickets are true from the start (this machine's kernel clock is not disciplined: test_lab.py)
# and never resolve; every other alert a fault raises must.
STANDING = frozenset({"node-clock-sync"})


@contextmanager
def warm_lab(workdir: Path, clock: dict[str, float]) -> Iterator[lab.Lab]:
    """A fault module's lab (node_exporter with --path.rootfs, as kube-prometheus-stack deploys it, so a test can
    mount a filesystem at the node's /var/lib/kubelet; platform-network's page receiver on a closed port), warm:
    every SLI has data and no startup NoData is left. ``clock["start"]`` is when it was warm."""
    broken = frozenset({"platform-network-page"})  # the notification-failure fault's receiver
    with lab.running(workdir, node_rootfs=workdir / "host", broken=broken) as the_lab:
        assert servers.wait_until(the_lab.no_data_gone, 40, 1), the_lab.lab_alerts()
        clock["start"] = time.monotonic()
        yield the_lab


def member_metric(member: lab.Member, name: str) -> float:
    """One unlabelled sample of ``name`` on the member's /metrics, read directly (not through a scrape)."""
    with urllib.request.urlopen(f"http://127.0.0.1:{member.metrics_port}/metrics", timeout=5) as response:
        for line in response.read().decode().splitlines():
            if line.startswith(f"{name} "):
                return float(line.split()[1])
    raise AssertionError(f"{name} not exported by {member.name}")


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


def quiet(the_lab: lab.Lab, alertname: str) -> None:
    """Before a fault: its alert is neither pending nor firing (an earlier fault's has resolved)."""
    assert servers.wait_until(lambda: not [a for a in the_lab.lab_alerts() if a["alertname"] == alertname], 40, 1), (
        the_lab.lab_alerts()
    )
    time.sleep(3)  # Alertmanager's group_interval: the resolved notification of an earlier fault goes out first


def pages(the_lab: lab.Lab, slo: str) -> list[dict[str, str]]:
    return [a for a in the_lab.lab_alerts("page") if a["slo"] == slo]


def labels(alert: dict[str, Any], slo: str, severity: str, team: str) -> None:
    labels = alert["labels"]
    assert (labels["slo"], labels["severity"], labels["team"], labels["cluster"]) == (slo, severity, team, lab.CLUSTER)


def reload(url: str) -> None:
    """Prometheus or Alertmanager reloads its configuration files (POST /-/reload)."""
    request = urllib.request.Request(f"{url}/-/reload", data=b"", method="POST")
    with urllib.request.urlopen(request, timeout=10) as response:
        assert response.status == 200


def post_alert(the_lab: lab.Lab, alert: dict[str, Any]) -> None:
    """Post one alert to the lab's Alertmanager, as a rule engine does."""
    request = urllib.request.Request(
        f"{the_lab.alertmanager.url}/api/v2/alerts",
        data=json.dumps([alert]).encode(),
        headers={"Content-Type": "application/json"},
    )
    with urllib.request.urlopen(request, timeout=5) as response:
        assert response.status == 200


def notifications(the_lab: lab.Lab) -> list[tuple[float, str, dict[str, Any]]]:
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


def alert_key(receiver: str, alert: dict[str, Any]) -> str:
    """One alert at one receiver: its name and the labels that tell it from its siblings (instance, group, code)."""
    labels = alert["labels"]
    rest = ",".join(f"{k}={v}" for k, v in sorted(labels.items()) if k not in COMMON)
    return f"{receiver} {labels['alertname']} {rest}".strip()


def open_alerts(the_lab: lab.Lab) -> list[str]:
    """The alerts whose last notification at their receiver is a firing one."""
    last = {alert_key(receiver, alert): alert["status"] for _, receiver, alert in notifications(the_lab)}
    return sorted(key for key, status in last.items() if status == "firing")


def every_alert_resolves(the_lab: lab.Lab, warm_at: float) -> None:
    """Every alert of a lab-fed spec that fired at the sink has a resolved notification after its last firing one,
    waited for once (the module's faults whose specs read a 5m window resolve when the window forgets them);
    prints each alert's firing and resolution on the module's clock (``warm_at``: when its lab was warm).
    Standing: node-clock-sync's true tickets (this machine's clock)."""
    started = time.monotonic()
    fired = {alert_key(r, a) for _, r, a in notifications(the_lab) if a["status"] == "firing"}
    # The faults ran on this module's lab only when its tests run in one process, in file order (tests/suite.py
    # runs the lab tier so); a worker that took this test alone would pass it on a fresh lab, proving nothing.
    assert fired, "no fault test raised an alert on this lab: run tests/lab/ in one process, in file order"
    # The last 5m fault ran a few minutes ago at most: its window, a peer round trip's 30 s observation and the
    # Alertmanager group interval stay well inside 10 minutes on a loaded machine.
    assert servers.wait_until(lambda: not open_alerts(the_lab), 600, 2), (
        open_alerts(the_lab),
        sorted((a["alertname"], a["alertstate"], a.get("instance", "")) for a in the_lab.lab_alerts()),
    )
    waited = time.monotonic() - started
    resolved = {alert_key(r, a) for _, r, a in notifications(the_lab) if a["status"] == "resolved"}
    assert fired <= resolved, fired - resolved
    zero = warm_at
    times: dict[str, dict[str, float]] = {}
    for when, receiver, alert in notifications(the_lab):
        times.setdefault(alert_key(receiver, alert), {}).setdefault(alert["status"], when - zero)
        if alert["status"] == "resolved":
            times[alert_key(receiver, alert)]["resolved"] = when - zero  # the last resolution
    print(f"\nlab: every fault's alert resolved; this test waited {waited:.1f}s (module clock, from the warm lab):")
    for key, seen in sorted(times.items(), key=lambda item: item[1].get("firing", 0)):
        print(f"lab:   {key}: firing at {seen.get('firing', -1):.0f}s, resolved at {seen.get('resolved', -1):.0f}s")
