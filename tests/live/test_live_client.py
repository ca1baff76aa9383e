"""The live client's access and error handling: credentials by file, and one clear line for every
way a server can fail to be a Prometheus (exit 2, nothing printed on stdout, no traceback).

The servers here are small loopback HTTP servers that answer like the failure they stand for;
the commands' behaviour against a real Prometheus is in test_live_preflight and test_live_backtest.
"""

from __future__ import annotations

import base64
import json
import shutil
import ssl
import subprocess
import threading
from collections.abc import Iterator
from contextlib import contextmanager
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from typing import Any

import pytest

from compiler.cli import main
from compiler.live.client import Access, Client, LiveError
from tests import live_data

BUILDINFO = {"status": "success", "data": {"version": "2.42.0", "revision": "x"}}


@contextmanager
def answering(status: int, body: bytes, seen: list[dict[str, str]], tls: ssl.SSLContext | None = None) -> Iterator[str]:
    """A loopback server answering every request with ``status`` and ``body``, recording the headers."""

    class Handler(BaseHTTPRequestHandler):
        def answer(self) -> None:
            seen.append(dict(self.headers))
            self.send_response(status)
            self.send_header("Content-Type", "application/json")
            self.end_headers()
            self.wfile.write(body)

        do_GET = answer  # noqa: N815 - http.server's names
        do_POST = answer  # noqa: N815

        def log_message(self, *args: Any) -> None:
            return

    server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)  # the kernel picks the port: no race
    port = server.server_address[1]
    if tls is not None:
        server.socket = tls.wrap_socket(server.socket, server_side=True)
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    try:
        yield f"{'https' if tls else 'http'}://127.0.0.1:{port}"
    finally:
        server.shutdown()
        server.server_close()


def test_a_bearer_token_is_read_from_its_file_and_sent(tmp_path: Path) -> None:
    token = tmp_path / "token"
    token.write_text("s3cret\n", encoding="utf-8")
    seen: list[dict[str, str]] = []
    with answering(200, json.dumps(BUILDINFO).encode(), seen) as url:
        assert Client(Access(url, bearer_token_file=token)).buildinfo()["version"] == "2.42.0"
    assert seen[0]["Authorization"] == "Bearer s3cret"


def test_basic_auth_takes_the_password_from_its_file(tmp_path: Path) -> None:
    password = tmp_path / "password"
    password.write_text("pa:ss\n", encoding="utf-8")
    seen: list[dict[str, str]] = []
    with answering(200, json.dumps(BUILDINFO).encode(), seen) as url:
        Client(Access(url, basic_auth_user="reader", basic_auth_password_file=password)).buildinfo()
    assert base64.b64decode(seen[0]["Authorization"].removeprefix("Basic ")) == b"reader:pa:ss"


@pytest.mark.skipif(shutil.which("openssl") is None, reason="needs openssl to make a certificate")
def test_a_ca_file_verifies_the_server_and_without_it_the_error_is_one_line(tmp_path: Path) -> None:
    cert, key = tmp_path / "cert.pem", tmp_path / "key.pem"
    names = ["-subj", "/CN=127.0.0.1", "-addext", "subjectAltName=IP:127.0.0.1"]
    files = ["-keyout", str(key), "-out", str(cert)]
    subprocess.run(
        ["openssl", "req", "-x509", "-newkey", "rsa:2048", "-nodes", "-days", "1", *names, *files],
        check=True,
        capture_output=True,
    )
    tls = ssl.SSLContext(ssl.PROTOCOL_TLS_SERVER)
    tls.load_cert_chain(cert, key)
    with answering(200, json.dumps(BUILDINFO).encode(), [], tls) as url:
        assert Client(Access(url, ca_file=cert)).buildinfo()["version"] == "2.42.0"
        with pytest.raises(
            LiveError, match=r"cannot reach Prometheus at https://127.0.0.1:\d+: .*CERTIFICATE_VERIFY_FAILED"
        ):
            Client(Access(url)).buildinfo()


@pytest.mark.parametrize(
    ("status", "body", "message"),
    [
        (401, b"{}", "refused the credentials (HTTP 401); check the token or password file"),
        (404, b"not found", "has no Prometheus HTTP API"),
        (200, b"<html>Grafana</html>", "does not answer like a Prometheus HTTP API (no JSON status)"),
        (200, b'{"status": "success", "data": {}}', "answered /api/v1/status/buildinfo without a version"),
        (500, b'{"status": "error", "error": "boom"}', "answered HTTP 500: boom"),
    ],
)
def test_a_server_that_is_not_a_working_prometheus_is_one_line(status: int, body: bytes, message: str) -> None:
    with (
        answering(status, body, []) as url,
        pytest.raises(LiveError, match=message.replace("(", r"\(").replace(")", r"\)")),
    ):
        Client(Access(url)).buildinfo()


def test_the_commands_exit_2_with_one_line_and_no_output(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    tree = live_data.write_tree(tmp_path / "specs", {"apiserver-errors": live_data.PREFLIGHT_SPECS["apiserver-errors"]})
    missing = tmp_path / "no-such-token"
    with answering(200, b"<html></html>", []) as url:
        for command in (["preflight"], ["backtest", "--last", "1h"]):
            code = main([*command, "--prometheus", url, "--specs", str(tree)])
            out, err = capsys.readouterr()
            assert (code, out) == (2, "") and err.count("\n") == 1 and "does not answer like a Prometheus" in err
        code = main(["preflight", "--prometheus", url, "--specs", str(tree), "--bearer-token-file", str(missing)])
        out, err = capsys.readouterr()
        assert (code, out) == (2, "") and f"cannot read the bearer token file {missing}" in err


def test_backtest_usage_errors_exit_2(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    tree = live_data.write_tree(tmp_path / "specs", {"apiserver-errors": live_data.PREFLIGHT_SPECS["apiserver-errors"]})
    base = ["backtest", "--prometheus", "http://127.0.0.1:9", "--specs", str(tree)]
    for extra, message in (
        (["--last", "fortnight"], "--last 'fortnight' must be a positive duration"),
        (["--from", "2026-11-02T00:00:00Z"], "--from needs --to"),
        (["--from", "2026-11-02T00:00:00Z", "--to", "2026-11-01T00:00:00Z"], "--to must be after --from"),
        (["--last", "1h", "--warmup", "soon"], "--warmup 'soon' must be a positive duration such as 14d (or auto"),
    ):
        assert main([*base, *extra]) == 2
        assert message in capsys.readouterr().err
    for value in ("0", "two"):  # refused by argparse, which exits 2 itself
        with pytest.raises(SystemExit) as exited:
            main([*base, "--last", "1h", "--concurrency", value])
        assert exited.value.code == 2
        assert f"expected a whole number of at least 1, got '{value}'" in capsys.readouterr().err
