"""A server that is hostile or broken, not merely absent (issue 26): the live commands keep the
credentials at the origin, refuse a password in the URL, read malformed answers as errors (exit 2,
naming the query, never a traceback), keep the server's text from acting on a terminal or forming
HTML in Markdown, and stop at --timeout however slowly the server answers.

Each server is a loopback ``http.server`` on a free port, in a thread, stopped at the end.
"""

from __future__ import annotations

import threading
import time
from http.server import BaseHTTPRequestHandler
from pathlib import Path
from typing import Any

import pytest

from compiler.cli import main
from compiler.live.backtest import Interval, Result
from compiler.live.client import MAX_ANSWER_BYTES
from compiler.live.summary import render_markdown, render_table, summarise
from tests import live_data
from tests.servers import Route, Seen, hostile, send

BUILDINFO = {"status": "success", "data": {"version": "2.42.0", "revision": "x"}}


def prometheus(query_data: Any, version: str = "2.42.0") -> Route:
    """Answers buildinfo, label values (none) and series (none) properly, and every query with ``query_data``."""

    def route(handler: BaseHTTPRequestHandler) -> None:
        path = handler.path.split("?")[0]
        if path == "/api/v1/status/buildinfo":
            send(handler, {"status": "success", "data": {"version": version}})
        elif path.startswith("/api/v1/query"):
            send(handler, {"status": "success", "data": query_data})
        else:
            send(handler, {"status": "success", "data": []})

    return route


@pytest.fixture
def tree(tmp_path: Path) -> Path:
    return live_data.write_tree(tmp_path / "specs", {"apiserver-errors": live_data.PREFLIGHT_SPECS["apiserver-errors"]})


def run(capsys: pytest.CaptureFixture[str], *argv: str) -> tuple[int, str, str]:
    code = main(list(argv))
    out, err = capsys.readouterr()
    return code, out, err


# -- 1. credentials never leave the origin ----------------------------------------------------------


def test_credentials_never_leave_the_origin(tree: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    token = tmp_path / "token"
    token.write_text("t0ken-never-leaks\n", encoding="utf-8")
    elsewhere: Seen = []
    here: Seen = []
    with hostile(lambda h: send(h, BUILDINFO), elsewhere) as other:

        def redirect(handler: BaseHTTPRequestHandler) -> None:
            send(handler, b"", 302, {"Location": f"{other}{handler.path}"})

        with hostile(redirect, here) as url:
            code, out, err = run(
                capsys, "preflight", "--prometheus", url, "--specs", str(tree), "--bearer-token-file", str(token)
            )
    assert not [headers for _, _, headers in elsewhere if "Authorization" in headers]
    assert elsewhere == []  # nothing at all is sent to the Location
    assert here and here[0][2]["Authorization"] == "Bearer t0ken-never-leaks"
    assert (code, out) == (2, "")
    assert "HTTP 302" in err and f"redirect to {other}" in err and "not followed" in err
    assert "t0ken" not in err and err.count("\n") == 1


def test_a_redirect_on_a_query_post_is_not_followed_either(tree: Path, capsys: pytest.CaptureFixture[str]) -> None:
    elsewhere: Seen = []
    with hostile(prometheus({"resultType": "vector", "result": []}), elsewhere) as other:

        def route(handler: BaseHTTPRequestHandler) -> None:
            if handler.path.startswith("/api/v1/status/buildinfo"):
                send(handler, BUILDINFO)
            else:
                send(handler, b"", 302, {"Location": f"{other}/api/v1/query"})

        with hostile(route, []) as url:
            code, _, err = run(capsys, "preflight", "--prometheus", url, "--specs", str(tree))
    assert elsewhere == [] and code == 2 and "HTTP 302" in err


# -- 2. URL user-info ------------------------------------------------------------------------------


@pytest.mark.parametrize("userinfo", ["admin:s3cretpw@", "admin:s3cretpw:x@", ":s3cretpw@"])
@pytest.mark.parametrize("command", [["preflight"], ["backtest", "--last", "1h"]])
def test_url_user_info_is_refused_without_echoing_the_password(
    tree: Path, capsys: pytest.CaptureFixture[str], userinfo: str, command: list[str]
) -> None:
    seen: Seen = []
    with hostile(lambda h: send(h, BUILDINFO), seen) as url:
        target = url.replace("http://", f"http://{userinfo}")
        code, out, err = run(capsys, *command, "--prometheus", target, "--specs", str(tree))
    assert code == 2 and "s3cretpw" not in out + err
    assert "must not carry credentials" in err or "must be a URL" in err
    assert seen == []


# -- 3. malformed answers are errors, not crashes ------------------------------------------------------

NOW = 1_700_000_000.0
MALFORMED = {
    "data-list": [1, 2],
    "data-string": "vector",
    "result-string": {"resultType": "vector", "result": "none"},
    "value-abc": {"resultType": "vector", "result": [{"metric": {}, "value": [NOW, "abc"]}]},
    "count-inf": {"resultType": "vector", "result": [{"metric": {}, "value": [NOW, "+Inf"]}]},
    "count-nan": {"resultType": "vector", "result": [{"metric": {}, "value": [NOW, "NaN"]}]},
    "count-negative": {"resultType": "vector", "result": [{"metric": {}, "value": [NOW, "-3"]}]},
    "count-fraction": {"resultType": "vector", "result": [{"metric": {}, "value": [NOW, "1.5"]}]},
    "value-empty": {"resultType": "vector", "result": [{"metric": {}, "value": []}]},
    "value-null": {"resultType": "vector", "result": [{"metric": {}, "value": None}]},
    "metric-string": {"resultType": "vector", "result": [{"metric": "up", "value": [NOW, "1"]}]},
    "metric-nested": {"resultType": "vector", "result": [{"metric": {"a": {"b": 1}}, "value": [NOW, "1"]}]},
    "series-number": {"resultType": "vector", "result": [7]},
    "scalar-short": {"resultType": "scalar", "result": [NOW]},
}


@pytest.mark.parametrize("shape", sorted(MALFORMED))
def test_malformed_answers_are_errors_not_crashes(tree: Path, capsys: pytest.CaptureFixture[str], shape: str) -> None:
    with hostile(prometheus(MALFORMED[shape]), []) as url:
        code, out, err = run(capsys, "preflight", "--prometheus", url, "--specs", str(tree))
    assert (code, out) == (2, ""), err
    assert "internal error" not in err and "Traceback" not in err and err.count("\n") == 1
    assert 'the query count(apiserver_request_total{code=~"5..",job="apiserver"})' in err


def test_malformed_json_nesting_is_an_error(tree: Path, capsys: pytest.CaptureFixture[str]) -> None:
    deep = b'{"status": "success", "data": ' + b"[" * 100_000 + b"]" * 100_000 + b"}"
    with hostile(lambda h: send(h, deep), []) as url:
        code, _, err = run(capsys, "preflight", "--prometheus", url, "--specs", str(tree))
    assert code == 2 and "does not answer like a Prometheus" in err


# -- 4. terminal and markup injection -------------------------------------------------------------------

EVIL = "\x1b[31mevil\x1b]0;pwned\x07\u202e"


def test_terminal_injection_is_escaped_in_the_preflight_table(tree: Path, capsys: pytest.CaptureFixture[str]) -> None:
    answer = {"resultType": "vector", "result": [{"metric": {"cluster": EVIL}, "value": [NOW, "1"]}]}
    with hostile(prometheus(answer, version=f"2.42.0{EVIL}"), []) as url:
        code, out, err = run(capsys, "preflight", "--prometheus", url, "--specs", str(tree))
    assert code in (0, 1), err
    assert "\x1b" not in out and "\x07" not in out and "\u202e" not in out
    assert "Prometheus 2.42.0\\x1b[31mevil\\x1b]0;pwned\\x07\\u202e" in out
    assert "cluster=\\x1b[31mevil" in out  # the label value reaches the table, escaped


def test_terminal_injection_is_escaped_in_a_live_error(tree: Path, capsys: pytest.CaptureFixture[str]) -> None:
    refusal = {"status": "error", "error": f"no {EVIL}"}
    with hostile(lambda h: send(h, refusal, 500), []) as url:
        code, _, err = run(capsys, "preflight", "--prometheus", url, "--specs", str(tree))
    assert code == 2 and "\x1b" not in err and "no \\x1b[31mevil" in err


def _hostile_result() -> dict[str, Any]:
    labels = {"alertname": "X", "severity": "page", "cluster": f"<img src=x onerror=alert(1)>|{EVIL}"}
    result = Result(start_ms=0, end_ms=3_600_000, warmup_ms=0)
    result.intervals.append(Interval("spec", "X", labels, active_ms=0, fired_ms=60_000))
    result.problems.append("<script>alert(1)</script> & more")
    return summarise(result)


def test_markup_injection_is_escaped_in_backtest_markdown() -> None:
    text = render_markdown(_hostile_result())
    assert "<img" not in text and "<script" not in text and "\x1b" not in text
    assert "cluster=&lt;img src=x onerror=alert(1)&gt;\\|\\x1b[31mevil" in text
    assert "&lt;script&gt;alert(1)&lt;/script&gt; &amp; more" in text


def test_terminal_injection_is_escaped_in_the_backtest_table() -> None:
    text = render_table(_hostile_result())
    assert "\x1b" not in text and "\x07" not in text and "cluster=<img src=x onerror=alert(1)>|\\x1b[31mevil" in text


# -- 5. timeouts --------------------------------------------------------------------------------------------


@pytest.mark.parametrize("value", ["inf", "1e308", "0", "-1", "nan", "soon"])
def test_a_timeout_that_is_no_deadline_is_a_usage_error(
    tree: Path, capsys: pytest.CaptureFixture[str], value: str
) -> None:
    with pytest.raises(SystemExit) as exited:
        main(["preflight", "--prometheus", "http://127.0.0.1:9", "--specs", str(tree), "--timeout", value])
    err = capsys.readouterr().err
    assert exited.value.code == 2 and "--timeout" in err and "Traceback" not in err


def test_the_timeout_is_a_total_deadline_not_per_read(tree: Path, capsys: pytest.CaptureFixture[str]) -> None:
    stop = threading.Event()

    def trickle(handler: BaseHTTPRequestHandler) -> None:
        handler.send_response(200)
        handler.send_header("Content-Type", "application/json")
        handler.send_header("Content-Length", "1000")
        handler.end_headers()
        while not stop.is_set():
            handler.wfile.write(b" ")
            handler.wfile.flush()
            stop.wait(2)

    with hostile(trickle, []) as url:
        began = time.monotonic()
        try:
            code, out, err = run(capsys, "preflight", "--prometheus", url, "--specs", str(tree), "--timeout", "3")
        finally:
            elapsed = time.monotonic() - began
            stop.set()
    assert elapsed < 10
    assert (code, out) == (2, "") and "did not answer within 3s (--timeout)" in err


# -- 6. answer size ----------------------------------------------------------------------------------------

HUGE = 150 * 1024 * 1024  # what a server might send; the client stops past MAX_ANSWER_BYTES


def huge_answer(declare: bool, sent: list[int]) -> Route:
    """buildinfo properly; every query a JSON answer of HUGE bytes, streamed (with or without its length)."""

    def route(handler: BaseHTTPRequestHandler) -> None:
        if handler.path.startswith("/api/v1/status/buildinfo"):
            send(handler, BUILDINFO)
            return
        handler.send_response(200)
        handler.send_header("Content-Type", "application/json")
        if declare:
            handler.send_header("Content-Length", str(HUGE))
        handler.end_headers()
        handler.wfile.write(b'{"status": "success", "data": {"resultType": "vector", "result": [')
        chunk = b" " * (1024 * 1024)
        while sent[0] < HUGE:
            handler.wfile.write(chunk)  # raises once the client has hung up
            sent[0] += len(chunk)

    return route


# -- 7. answers without end (property finds, tests/live/test_property_new_surfaces.py) ------------------


def _lying_length(length: str, status: int = 200) -> Route:
    def route(handler: BaseHTTPRequestHandler) -> None:
        if status == 200 or not handler.path.startswith("/api/v1/status/buildinfo"):
            send(handler, b'{"status": "success", "data": []}', status, {"Content-Length": length})
        else:
            send(handler, BUILDINFO)

    return route


@pytest.mark.parametrize("declare", [True, False], ids=["content-length", "streamed"])
def test_unbounded_work_answer_size(tree: Path, capsys: pytest.CaptureFixture[str], declare: bool) -> None:
    sent = [0]
    with hostile(huge_answer(declare, sent), []) as url:
        code, out, err = run(capsys, "preflight", "--prometheus", url, "--specs", str(tree))
    assert (code, out) == (2, ""), err
    assert err.count("\n") == 1 and err.startswith(f"slo-compiler: Prometheus at {url} answered the query ")
    assert f"with more than {MAX_ANSWER_BYTES // 2**20} MiB" in err and "the limit of one answer" in err
    assert ("bytes declared" in err) == declare
    # The client stopped reading at the cap: the server could not send its 150 MB (the socket buffers
    # hold a few MB more than the client read).
    assert sent[0] < MAX_ANSWER_BYTES + 16 * 1024 * 1024


@pytest.mark.parametrize("status", [200, 500])
@pytest.mark.parametrize("length", [str(10**12), str(10**20)])
def test_unbounded_answer_size_announced(
    tree: Path, capsys: pytest.CaptureFixture[str], length: str, status: int
) -> None:
    """A Content-Length past what fits in memory (or in an index) is refused before reading, on a success
    and on an error answer: it was exit 70 (MemoryError, OverflowError)."""
    with hostile(_lying_length(length, status), []) as url:
        code, out, err = run(capsys, "preflight", "--prometheus", url, "--specs", str(tree), "--timeout", "5")
    assert (code, out) == (2, ""), err
    assert "internal error" not in err and err.count("\n") == 1
    if status == 200:
        assert f"with more than 64 MiB ({int(length):,} bytes declared), the limit of one answer" in err
    else:
        assert "answered HTTP 500" in err


def test_unbounded_answer_size_streamed(
    tree: Path, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    """An answer without a Content-Length that goes on past the limit is cut there, not read to the end;
    the limit is lowered to 1 MiB so the test streams 1 MiB, not 256."""
    from compiler.live import client

    monkeypatch.setattr(client, "MAX_ANSWER_BYTES", 1024 * 1024)
    sent = [0]

    def endless(handler: BaseHTTPRequestHandler) -> None:
        handler.send_response(200)
        handler.send_header("Content-Type", "application/json")
        handler.end_headers()  # no Content-Length: the body ends when the connection does
        handler.wfile.write(b'{"status": "success", "data": {"version": "')
        while sent[0] < 64 * 1024 * 1024:
            handler.wfile.write(b"x" * 65_536)
            sent[0] += 65_536

    with hostile(endless, []) as url:
        code, out, err = run(capsys, "preflight", "--prometheus", url, "--specs", str(tree), "--timeout", "5")
    assert (code, out) == (2, ""), err
    assert "with more than 1 MiB, the limit of one answer" in err
    assert sent[0] < 16 * 1024 * 1024


def test_deep_nesting_in_an_error_answer(tree: Path, capsys: pytest.CaptureFixture[str]) -> None:
    """An error answer (HTTP 500) nested too deep for the JSON parser: its message is left out, the status
    is reported (it was exit 70, RecursionError)."""
    deep = b'{"error": ' + b"[" * 100_000 + b"]" * 100_000 + b"}"
    with hostile(lambda h: send(h, deep, 500), []) as url:
        code, _, err = run(capsys, "preflight", "--prometheus", url, "--specs", str(tree))
    assert code == 2 and "answered HTTP 500" in err and "internal error" not in err
