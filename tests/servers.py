"""Real engines on loopback for the end-to-end tier: Prometheus, Alertmanager and a webhook receiver;
and ``hostile``, a loopback HTTP server in a thread whose answers a test chooses.

Every process gets its own free port on 127.0.0.1 and its own temp dir, and is stopped by
PID (terminate, then kill) however the test ends.
"""

from __future__ import annotations

import contextlib
import json
import os
import shutil
import socket
import subprocess
import threading
import time
import urllib.parse
import urllib.request
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from typing import Any

# The PATH the session started with: a test may empty PATH for a moment (to show a tool missing) while a
# clock-bound scenario's thread (tests/clockwork.py) starts a program.
_PATH = os.environ.get("PATH", os.defpath)


def program(name: str) -> str:
    """The absolute path of ``name`` on the session's PATH (``name`` itself when it is not there)."""
    return shutil.which(name, path=_PATH) or name


def free_port() -> int:
    """A port free now, for a program that takes its port as a flag. Another process (or an outgoing connection's
    ephemeral port) may take it before the program binds it, so a server in this process binds port 0 instead."""
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as sock:
        sock.bind(("127.0.0.1", 0))
        port: int = sock.getsockname()[1]
        return port


Seen = list[tuple[str, str, dict[str, str]]]  # what a hostile server was asked: method, path, headers
Route = Callable[[BaseHTTPRequestHandler], None]


@contextmanager
def hostile(route: Route, seen: Seen) -> Iterator[str]:
    """A loopback server that records each request (method, path, headers) and lets ``route`` answer it
    (the request's body is ``handler.request_body``)."""

    class Handler(BaseHTTPRequestHandler):
        request_body = b""

        def answer(self) -> None:
            seen.append((self.command, self.path, dict(self.headers)))
            length = int(self.headers.get("Content-Length") or 0)
            if length:
                self.request_body = self.rfile.read(length)
            with contextlib.suppress(OSError):  # the client hung up (a deadline cut it)
                route(self)

        do_GET = answer  # noqa: N815 - http.server's names
        do_POST = answer  # noqa: N815

        def log_message(self, *args: Any) -> None:
            return

    server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)  # the kernel picks the port: no race
    server.daemon_threads = True
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    try:
        yield f"http://127.0.0.1:{server.server_address[1]}"
    finally:
        server.shutdown()
        server.server_close()


def send(handler: BaseHTTPRequestHandler, body: Any, status: int = 200, headers: dict[str, str] | None = None) -> None:
    raw = body if isinstance(body, bytes) else json.dumps(body).encode()
    handler.send_response(status)
    for name, value in {"Content-Type": "application/json", "Content-Length": str(len(raw)), **(headers or {})}.items():
        handler.send_header(name, value)
    handler.end_headers()
    handler.wfile.write(raw)


def http_json(url: str, data: bytes | None = None, timeout: float = 5) -> Any:
    request = urllib.request.Request(url, data=data, headers={"Content-Type": "application/json"} if data else {})
    with urllib.request.urlopen(request, timeout=timeout) as response:
        return json.loads(response.read())


def wait_until(predicate: Any, timeout: float, interval: float = 0.25) -> bool:
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        try:
            if predicate():
                return True
        except OSError:
            pass
        time.sleep(interval)
    return False


@contextmanager
def process(args: list[str], log: Path) -> Iterator[subprocess.Popen[bytes]]:
    with log.open("wb") as sink:
        proc = subprocess.Popen([program(args[0]), *args[1:]], stdout=sink, stderr=subprocess.STDOUT)
        try:
            yield proc
        finally:
            proc.terminate()
            try:
                proc.wait(timeout=10)
            except subprocess.TimeoutExpired:
                proc.kill()
                proc.wait(timeout=10)


@contextmanager
def serving(args: list[str], port: int, log: Path) -> Iterator[str]:
    """Run a server and yield its URL once /-/ready answers; its log is the error when it does not."""
    with process(args, log) as proc:
        url = f"http://127.0.0.1:{port}"
        ready = wait_until(lambda: urllib.request.urlopen(f"{url}/-/ready", timeout=2).status == 200, 30)
        if not ready or proc.poll() is not None:
            raise RuntimeError(log.read_text(errors="replace")[-3000:])
        yield url


@dataclass
class Webhook:
    """Records every Alertmanager notification, keyed by the receiver path it was posted to."""

    port: int
    received: dict[str, list[dict[str, Any]]] = field(default_factory=dict)
    arrived: dict[str, list[float]] = field(default_factory=dict)  # time.monotonic() of each payload
    lock: threading.Lock = field(default_factory=threading.Lock)

    def alerts(self, receiver: str) -> list[dict[str, Any]]:
        with self.lock:
            return [alert for payload in self.received.get(receiver, []) for alert in payload["alerts"]]

    def receivers(self) -> set[str]:
        with self.lock:
            return set(self.received)


@contextmanager
def webhook() -> Iterator[Webhook]:
    hook = Webhook(0)

    class Handler(BaseHTTPRequestHandler):
        def do_POST(self) -> None:
            body = self.rfile.read(int(self.headers.get("Content-Length", "0")))
            receiver = urllib.parse.unquote(self.path.strip("/"))
            with hook.lock:
                hook.received.setdefault(receiver, []).append(json.loads(body))
                hook.arrived.setdefault(receiver, []).append(time.monotonic())
            self.send_response(200)
            self.end_headers()

        def log_message(self, *args: Any) -> None:
            return

    server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)  # the kernel picks the port: no race with a free_port
    hook.port = server.server_address[1]
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    try:
        yield hook
    finally:
        server.shutdown()
        server.server_close()


@dataclass
class Prometheus:
    url: str

    def query(self, expr: str) -> list[dict[str, Any]]:
        data = http_json(f"{self.url}/api/v1/query?{urllib.parse.urlencode({'query': expr})}")
        result: list[dict[str, Any]] = data["data"]["result"]
        return result

    def rule_groups(self) -> list[dict[str, Any]]:
        groups: list[dict[str, Any]] = http_json(f"{self.url}/api/v1/rules")["data"]["groups"]
        return groups


@contextmanager
def prometheus(
    workdir: Path,
    rule_files: list[Path],
    alertmanager_port: int | None,
    blocks: Path,
    flags: tuple[str, ...] = (),
    external_labels: dict[str, str] | None = None,
) -> Iterator[Prometheus]:
    port = free_port()
    config: dict[str, Any] = {
        "global": {
            "evaluation_interval": "2s",
            "scrape_interval": "1m",
            **({"external_labels": external_labels} if external_labels else {}),
        },
        "rule_files": [str(path) for path in rule_files],
        "storage": {"tsdb": {"out_of_order_time_window": "2h"}},
    }
    if alertmanager_port is not None:
        config["alerting"] = {"alertmanagers": [{"static_configs": [{"targets": [f"127.0.0.1:{alertmanager_port}"]}]}]}
    (workdir / "prometheus.yml").write_text(json.dumps(config), encoding="utf-8")
    args = [
        "prometheus",
        f"--config.file={workdir / 'prometheus.yml'}",
        f"--storage.tsdb.path={blocks}",
        f"--web.listen-address=127.0.0.1:{port}",
        "--rules.alert.resend-delay=2s",
        "--rules.alert.for-grace-period=1s",
        *flags,
    ]
    with serving(args, port, workdir / "prometheus.log") as url:
        yield Prometheus(url)


@dataclass
class Alertmanager:
    url: str
    port: int

    def alerts(self, **filters: str) -> list[dict[str, Any]]:
        query = urllib.parse.urlencode({**filters})
        alerts: list[dict[str, Any]] = http_json(f"{self.url}/api/v2/alerts?{query}")
        return alerts


@contextmanager
def alertmanager(workdir: Path, config: Path) -> Iterator[Alertmanager]:
    port = free_port()
    args = [
        "prometheus-alertmanager",
        f"--config.file={config}",
        f"--storage.path={workdir / 'am-data'}",
        f"--web.listen-address=127.0.0.1:{port}",
        "--cluster.listen-address=",
    ]
    with serving(args, port, workdir / "alertmanager.log") as url:
        yield Alertmanager(url, port)


def backfill(openmetrics: str, workdir: Path) -> Path:
    """Write blocks for the given OpenMetrics text and return the TSDB directory."""
    source = workdir / "input.om"
    source.write_text(openmetrics, encoding="utf-8")
    blocks = workdir / "tsdb"
    result = subprocess.run(
        [program("promtool"), "tsdb", "create-blocks-from", "openmetrics", str(source), str(blocks)],
        capture_output=True,
        text=True,
    )
    if result.returncode:
        raise RuntimeError(result.stderr[-3000:])
    return blocks


def backfill_rules(prom: Prometheus, rule_file: Path, start: int, end: int, blocks: Path, workdir: Path) -> None:
    """Evaluate recording rules over the past with promtool and add the blocks to the TSDB.

    The caller restarts Prometheus so it loads them; rules that read other recorded series
    must be backfilled in a later stage (promtool evaluates each file against the server).
    """
    output = workdir / f"backfill-{rule_file.stem}"
    result = subprocess.run(
        [
            program("promtool"),
            "tsdb",
            "create-blocks-from",
            "rules",
            f"--start={start}",
            f"--end={end}",
            f"--url={prom.url}",
            f"--output-dir={output}",
            str(rule_file),
        ],
        capture_output=True,
        text=True,
    )
    if result.returncode:
        raise RuntimeError(result.stderr[-3000:])
    for block in output.iterdir():
        if block.is_dir():
            block.rename(blocks / block.name)
