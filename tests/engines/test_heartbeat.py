"""Issue 27 on the real engines: the heartbeat reaches its service at its cadence and stops when Prometheus stops;
foreign alerts reach the receiver the project names; amtool and promtool accept every heartbeat file.

The end-to-end test runs the generated files as they are (only the heartbeat URL points at a local
sink, and the project's own settings are short: rules every 2s, a heartbeat every 5s): Alertmanager
0.25 with the generated alertmanager.yaml, Prometheus 2.42 with the generated heartbeat rule file. It takes
about 35 s of real time for a second of CPU: it starts when the session collects a test that
needs it (tests/clockwork.py), so the wait overlaps other tests.
"""

from __future__ import annotations

import itertools
import subprocess
import time
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import yaml

from compiler.pipeline import compile_specs
from compiler.targets import alertmanager, render_all
from tests import clockwork, servers
from tests.conftest import OWNERS_YAML, VALID_SLO
from tests.promtool_runs import promtool_test

INTERVAL_S = 5
PROJECT = """\
apiVersion: slo-compiler/v1
kind: Project
runbook_base_url: https://runbooks.example.com/slo
evaluation_interval: 2s
heartbeat:
  receiver: {{webhook: {{url: "http://127.0.0.1:{port}/heartbeat"}}}}
  interval: {interval}s
foreign_alerts: {{team: platform-nodes, channel: ticket}}
rule_profiles:
  prometheus_operator: {{namespace: monitoring}}
  thanos: {{partial_response_strategy: abort}}
  mimir: {{tenant: platform}}
  vmalert: {{}}
"""


def generate(root: Path, port: int = 9) -> Path:
    """The generated tree of a one-spec project with a webhook heartbeat to ``port``; returns its directory."""
    specs = root / "specs"
    specs.mkdir(parents=True)
    (specs / "owners.yaml").write_text(OWNERS_YAML, encoding="utf-8")
    (specs / "project.yaml").write_text(PROJECT.format(port=port, interval=INTERVAL_S), encoding="utf-8")
    (specs / "dns-errors.yaml").write_text(VALID_SLO, encoding="utf-8")
    out = root / "generated"
    model, diagnostics = compile_specs(specs)  # never compile_tree: its chdir would move a test in another thread
    assert model is not None and not diagnostics, diagnostics.render()
    for name, content in render_all(model).items():
        (out / name).parent.mkdir(parents=True, exist_ok=True)
        (out / name).write_bytes(content)
    return out


def run(*args: str | Path, cwd: Path | None = None) -> subprocess.CompletedProcess[str]:
    return subprocess.run([str(a) for a in args], capture_output=True, text=True, cwd=cwd, timeout=60, check=False)


def amtool_routes(config: Path, labels: dict[str, str]) -> str:
    result = run(
        "amtool",
        "config",
        "routes",
        "test",
        f"--config.file={config}",
        *(alertmanager.matcher(name, value) for name, value in labels.items()),
    )
    assert result.returncode == 0, result.stdout + result.stderr
    return result.stdout.strip()


def test_heartbeat_routing_is_exact_in_amtool(tmp_path: Path) -> None:
    out = generate(tmp_path)
    config = out / alertmanager.CONFIG_PATH
    result = run("amtool", "check-config", config)
    assert result.returncode == 0, result.stdout + result.stderr
    cases: list[dict[str, Any]] = yaml.safe_load((out / alertmanager.ROUTING_TESTS_PATH).read_text())
    assert [c for c in cases if c["labels"].get("slo_compiler") == "heartbeat"], "no heartbeat case"
    for case in cases:
        assert amtool_routes(config, case["labels"]) == ",".join(case["receivers"]), case
    # A heartbeat that also carried a team and the page severity still reaches only its heartbeat receiver.
    disguised = {
        "alertname": "SloCompilerHeartbeat",
        "slo_compiler": "heartbeat",
        "evaluator": "thanos-ruler",
        "team": "platform-network",
        "severity": "page",
    }
    assert amtool_routes(config, disguised) == "heartbeat-thanos-ruler"
    # Foreign alerts are never dropped: they reach the team the project names, whatever they carry.
    assert (
        amtool_routes(config, {"alertname": "KubePodCrashLooping", "severity": "critical"}) == "platform-nodes-ticket"
    )


def test_promtool_accepts_every_heartbeat_rule_file_and_passes_its_test(tmp_path: Path) -> None:
    out = generate(tmp_path)
    heartbeat_dir = out / "prometheus" / "heartbeat"
    result = promtool_test(heartbeat_dir / "slo-compiler-heartbeat.test.yaml")
    assert result.returncode == 0 and "SUCCESS" in result.stdout, result.stdout + result.stderr
    files = sorted(p for p in out.rglob("*") if p.is_file() and p.parent.name == "heartbeat" and "test" not in p.name)
    assert len(files) == 5, files
    for path in files:
        document = yaml.safe_load(path.read_text(encoding="utf-8"))
        groups = document["spec"]["groups"] if "spec" in document else document["groups"]
        plain = tmp_path / f"plain-{path.parent.parent.name}.yaml"  # promtool takes Prometheus's fields only
        plain.write_text(
            yaml.safe_dump(
                {"groups": [{k: v for k, v in g.items() if k in {"name", "interval", "rules"}} for g in groups]}
            )
        )
        result = run("promtool", "check", "rules", "--lint=all", "--lint-fatal", plain)
        assert result.returncode == 0, (path, result.stdout + result.stderr)


def _heartbeat_alerts(am: servers.Alertmanager) -> list[dict[str, Any]]:
    return am.alerts(filter='alertname="SloCompilerHeartbeat"', active="true")


@dataclass
class Run:
    pinged: bool  # three pings reached the sink while Prometheus ran
    arrived: list[float]  # time.monotonic() of each ping, up to Prometheus's stop
    received: list[dict[str, Any]]  # every payload the sink got, to the end
    receivers: set[str]
    expired: bool  # Alertmanager let the heartbeat go
    left: list[dict[str, Any]]  # the heartbeat alerts it still held when the wait ended
    stopped: float  # Prometheus terminated by its PID
    gone: float  # the heartbeat left Alertmanager
    count: int  # pings when it left
    later: list[float]  # every ping's time, 2 intervals after it left


@clockwork.scenario()
def heartbeat_run(clock: clockwork.Clock) -> Run:
    """Started when the session collects a test that needs it (tests/clockwork.py): the generated heartbeat through
    Alertmanager to a sink while Prometheus runs, then after Prometheus stops; the test asserts on it."""
    workdir = clock.workdir
    sink = clock.stack.enter_context(servers.webhook())
    out = generate(workdir, sink.port)
    clock.ready()
    am = clock.stack.enter_context(servers.alertmanager(workdir, out / alertmanager.CONFIG_PATH))
    rules = [out / "prometheus" / "heartbeat" / "slo-compiler-heartbeat.rules.yaml"]
    with servers.prometheus(workdir, rules, am.port, workdir / "tsdb"):
        pinged = servers.wait_until(lambda: len(sink.arrived.get("heartbeat", [])) >= 3, 40)
    stopped = time.monotonic()
    arrived = list(sink.arrived.get("heartbeat", []))
    # Alertmanager holds the heartbeat until the end time Prometheus gave it (4 x 2s), then lets it go,
    # and sends nothing for it: no "resolved" (send_resolved: false) and no more pings.
    expired = servers.wait_until(lambda: not _heartbeat_alerts(am), 20)
    gone = time.monotonic()
    left = _heartbeat_alerts(am)
    count = len(sink.arrived.get("heartbeat", []))
    clock.wait(2 * INTERVAL_S + 1)
    with sink.lock:
        later = list(sink.arrived.get("heartbeat", []))
        received = list(sink.received.get("heartbeat", []))
        receivers = set(sink.received)
    return Run(pinged, arrived, received, receivers, expired, left, stopped, gone, count, later)


@clockwork.needs(heartbeat_run)
def test_heartbeat_reaches_the_sink_at_its_cadence_and_stops_when_prometheus_stops() -> None:
    run = clockwork.result(heartbeat_run)
    clockwork.close(heartbeat_run)
    assert run.pinged, run.arrived
    gaps = [later - earlier for earlier, later in itertools.pairwise(run.arrived)]
    assert all(INTERVAL_S - 1.5 <= gap <= INTERVAL_S + 1.5 for gap in gaps), gaps
    payload = run.received[0]
    assert payload["receiver"] == "heartbeat-prometheus" and payload["status"] == "firing"
    assert payload["alerts"][0]["labels"]["evaluator"] == "prometheus"
    assert payload["alerts"][0]["labels"]["slo_compiler"] == "heartbeat"
    assert run.receivers == {"heartbeat"}, "the heartbeat reached something else"
    assert run.expired, run.left
    assert len(run.later) == run.count, "a ping after the heartbeat ended"
    assert all(when <= run.gone for when in run.later)
    assert run.gone - run.stopped < 15
    assert all(p["status"] == "firing" for p in run.received)
