"""Issue 25 item 1: the lab with vmalert as the evaluator. The generated vmalert profile (VictoriaMetrics
vmalert 1.79, Debian's victoria-metrics package) runs against the lab's real etcd and node_exporter
through its Prometheus (read by query, written back by remote write: recorded series and ALERTS), sending
to the lab's Alertmanager with the generated configuration. The healthy lab raises only its true tickets,
and a stopped member reaches the apiserver team's ticket receiver, as with Prometheus evaluating."""

from __future__ import annotations

import time
from collections.abc import Iterator
from typing import Any

import pytest

from tests import servers
from tests.lab import lab
from tests.lab.test_lab import expected_healthy

pytestmark = [
    pytest.mark.skipif(not lab.etcd_available(), reason="etcd or node_exporter not installed (make tools)"),
    pytest.mark.skipif(lab.vmalert_binary() is None, reason="vmalert is not unpacked into .cache (make test does)"),
]


@pytest.fixture(scope="module")
def running(tmp_path_factory: pytest.TempPathFactory) -> Iterator[lab.Lab]:
    with lab.running(tmp_path_factory.mktemp("lab-vmalert"), evaluator="vmalert") as the_lab:
        # vmalert's recorded series reach the server one remote-write flush after each evaluation
        assert servers.wait_until(the_lab.no_data_gone, 60, 1), the_lab.lab_alerts()
        yield the_lab


def test_vmalert_on_the_healthy_lab_raises_only_its_true_tickets(running: lab.Lab) -> None:
    expected = expected_healthy(running)
    deadline = time.monotonic() + 6
    while time.monotonic() < deadline:
        active = {(a["slo"], a["alertname"], a["severity"]) for a in running.lab_alerts()}
        assert active <= expected, active - expected
        time.sleep(1)
    assert not running.lab_alerts("page"), running.lab_alerts("page")


def test_vmalert_tickets_a_stopped_member_to_the_apiserver_team_and_resolves(running: lab.Lab) -> None:
    follower = next(m for m in running.members if not m.is_leader())
    name = "EtcdMembersBelowNormalRange"

    def delivered(status: str) -> list[dict[str, Any]]:
        return [
            a
            for a in running.sink.alerts("platform-apiserver-ticket")
            if a["labels"]["alertname"] == name and a["status"] == status
        ]

    started = time.monotonic()
    follower.stop()
    try:
        assert servers.wait_until(lambda: delivered("firing"), 45, 0.5), running.lab_alerts()
        fired = time.monotonic() - started
        labels = delivered("firing")[0]["labels"]
        assert (labels["slo"], labels["severity"], labels["team"]) == (
            "etcd-member-availability",
            "ticket",
            "platform-apiserver",
        )
        assert not running.lab_alerts("page"), running.lab_alerts("page")
    finally:
        follower.start()
    restarted = time.monotonic()
    assert servers.wait_until(follower.healthy, 30)
    assert servers.wait_until(lambda: delivered("resolved"), 45, 0.5), running.lab_alerts()
    resolved = time.monotonic() - restarted
    print(f"\nlab (vmalert): {name} reached the sink {fired:.1f}s after the stop, resolved {resolved:.1f}s after")
