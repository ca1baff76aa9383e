"""A small read-only client for the Prometheus HTTP API, on the standard library alone.

Every failure (unreachable, TLS, HTTP error, a server that is not a Prometheus, a query the
server refuses, an answer of the wrong shape) is a ``LiveError`` whose message is one line a
person can act on, so the command line prints it and exits 2 without a traceback. Queries are
sent as form-encoded POST bodies, so long rule expressions never hit URL length limits.

The server is not trusted: redirects are never followed (the credentials would go wherever the
Location points, and a POST would become a GET), a URL carrying ``user:password@`` is refused
(secrets come from files only), each request has a total deadline however slowly the server
trickles its answer, and every answer is checked for its shape before it is read.
"""

from __future__ import annotations

import base64
import contextlib
import http.client
import json
import math
import socket
import ssl
import threading
import time
import urllib.error
import urllib.parse
import urllib.request
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any, NoReturn

import yaml

Labels = dict[str, str]
# query_range answers at most 11,000 points per series; backtest chunks below that.
MAX_POINTS_PER_QUERY = 10_000
# Points (series x steps) one range-query answer may hold: the server's --query.max-samples default is
# 50,000,000, and 2,000,000 points are about 60 MB of JSON for the client to parse.
MAX_SAMPLES_PER_QUERY = 2_000_000
# The bytes one answer may hold: twice the JSON of MAX_SAMPLES_PER_QUERY points. The body is read in
# pieces and given up past this (a 150 MB answer used to be read whole and parsed: 1 GB).
MAX_ANSWER_BYTES = 64 * 1024 * 1024
_READ_BYTES = 1024 * 1024
# A chunked answer read in a block under a sixteenth of _READ_BYTES waits this long before the next read, so
# the server's small writes (a streamed remote read flushes each series' frame) pile up in the socket: one
# read instead of dozens (pleg's 21.6 million samples: 616 reads instead of about 36,000, 0.2 s of CPU less).
_PACE_S = 0.002
_MAX_CHUNK_LINE = 4096  # a chunk's size line with its extensions, at most
# The words of Prometheus's refusal when a query would exceed --query.max-samples (promql.ErrTooManySamples).
TOO_MANY_SAMPLES = "would load too many samples"
QUERY_TIMED_OUT = "query timed out in"  # Prometheus 2.42: "query timed out in expression evaluation"
# Of an error answer (4xx, 5xx) only its message is read.
MAX_ERROR_BYTES = 64 * 1024


class LiveError(Exception):
    """The server could not answer as a Prometheus; the message says what to check."""


class AnswerTooBigError(LiveError):
    """One answer was larger than the client reads: a narrower request may pass."""


class QueryError(LiveError):
    """The server is there but refused one query (bad data, an execution error such as many-to-many)."""


def too_large(error: QueryError) -> bool:
    """The server refused a query for its size (--query.max-samples) or gave up on it (--query.timeout,
    HTTP 503): a shorter time range will pass."""
    return TOO_MANY_SAMPLES in str(error) or QUERY_TIMED_OUT in str(error)


@dataclass(frozen=True)
class Access:
    """Where the server is and how to reach it; secrets are only ever read from files."""

    url: str
    bearer_token_file: Path | None = None
    basic_auth_user: str | None = None
    basic_auth_password_file: Path | None = None
    ca_file: Path | None = None
    timeout_s: float = 30.0


def _secret(path: Path, what: str) -> str:
    try:
        return path.read_text(encoding="utf-8").strip()
    except OSError as exc:
        raise LiveError(f"cannot read the {what} file {path}: {exc.strerror}") from exc


# The longest --timeout taken: a day (socket timeouts overflow somewhere past 1e9 seconds).
MAX_TIMEOUT_S = 86_400.0


def check_url(url: str) -> str | None:
    """Why ``url`` cannot be a server's base URL, or None; never repeats a password written in it."""
    try:
        parts = urllib.parse.urlsplit(url)
        parts.port  # noqa: B018 - raises ValueError on a port that is not a number
    except ValueError:
        return "--prometheus must be a URL such as http://prometheus:9090 (its host or port does not parse)"
    if parts.username is not None or parts.password is not None:
        return (
            "--prometheus must not carry credentials (user:password@host); give the user with --basic-auth-user "
            "and the password in the file --basic-auth-password-file names"
        )
    if parts.scheme not in ("http", "https") or not parts.hostname:
        return "--prometheus must be an http:// or https:// URL such as http://prometheus:9090"
    return None


def check_timeout(seconds: float) -> str | None:
    """Why ``seconds`` cannot be a request deadline, or None."""
    if not math.isfinite(seconds) or not 0 < seconds <= MAX_TIMEOUT_S:
        return f"--timeout must be a number of seconds above 0 and at most {MAX_TIMEOUT_S:g}, got {seconds!r}"
    return None


def _origin(location: str, base: str) -> str:
    """scheme://host:port of a redirect's target, without any user-info or path it carries."""
    try:
        parts = urllib.parse.urlsplit(urllib.parse.urljoin(base + "/", location))
        port = f":{parts.port}" if parts.port is not None else ""
    except ValueError:
        return "an unreadable Location"
    host = parts.hostname or "?"
    return f"{parts.scheme}://{host}{port}"


class _NoRedirect(urllib.request.HTTPRedirectHandler):
    """Every 3xx is answered as the HTTPError it is: nothing is sent to the Location."""

    def redirect_request(self, *args: Any, **kwargs: Any) -> None:
        return None


class _Deadline:
    """Cuts the sockets a request opened once its total time is up, however slowly the server answers
    (a socket timeout is per read, so a byte every few seconds would never trip it)."""

    def __init__(self) -> None:
        self.sockets: list[socket.socket] = []
        self.expired = False
        self._lock = threading.Lock()

    def track(self, sock: socket.socket) -> None:
        with self._lock:
            self.sockets.append(sock)
            if self.expired:
                self._cut(sock)

    def expire(self) -> None:
        with self._lock:
            self.expired = True
            for sock in self.sockets:
                self._cut(sock)

    @staticmethod
    def _cut(sock: socket.socket) -> None:
        # shutdown, not close: urllib has already "closed" the socket it reads the body through.
        with contextlib.suppress(OSError):
            sock.shutdown(socket.SHUT_RDWR)


def _opener(deadline: _Deadline, context: ssl.SSLContext | None) -> urllib.request.OpenerDirector:
    class Connection(http.client.HTTPConnection):
        def connect(self) -> None:
            super().connect()
            deadline.track(self.sock)

    class TLSConnection(http.client.HTTPSConnection):
        def connect(self) -> None:
            super().connect()
            deadline.track(self.sock)

    class HTTP(urllib.request.HTTPHandler):
        def http_open(self, req: urllib.request.Request) -> http.client.HTTPResponse:
            return self.do_open(Connection, req)

    class HTTPS(urllib.request.HTTPSHandler):
        def https_open(self, req: urllib.request.Request) -> http.client.HTTPResponse:
            return self.do_open(TLSConnection, req, context=context)

    return urllib.request.build_opener(HTTP(), HTTPS(context=context), _NoRedirect())


class _TooBigError(Exception):
    """The unchunked body passed its cap."""


def _unchunked(stream: Any, cap: int) -> bytes:
    """A chunked answer's body, its framing parsed here from blocks of the raw stream (RFC 9112 section 7.1).

    ``http.client`` parses the framing one chunk at a time, four buffered reads and their Python calls each:
    a streamed remote read writes one chunk per series (90,000 for a per-node histogram's buckets), and that
    was more than a second of a 4-second read. The request says ``Connection: close`` (urllib's default), so
    the server closes the connection after the last chunk and a block read never waits past the answer; the
    parse stops at the last chunk anyway. The body is capped at ``cap`` bytes; a size line that is not hex
    or a chunk not followed by CRLF is ``http.client.IncompleteRead`` (a connection problem to the caller)."""
    body = bytearray()
    buf = bytearray()
    pos, small = 0, False
    while True:
        line_end = buf.find(b"\r\n", pos)
        if line_end >= 0:
            size = _chunk_size(bytes(buf[pos:line_end]))
            if size == 0:
                return bytes(body)  # trailers, if any, are not read
            data_end = line_end + 2 + size
            if len(buf) >= data_end + 2:
                if buf[data_end : data_end + 2] != b"\r\n":
                    raise http.client.IncompleteRead(bytes(body))
                body += buf[line_end + 2 : data_end]
                if len(body) > cap:
                    raise _TooBigError
                pos = data_end + 2
                continue
        elif len(buf) - pos > _MAX_CHUNK_LINE:
            raise http.client.IncompleteRead(bytes(body))
        if small:
            time.sleep(_PACE_S)
        block = stream.read1(_READ_BYTES)  # what the socket holds (up to _READ_BYTES), not a wait for all of it
        if not block:
            raise http.client.IncompleteRead(bytes(body))
        small = len(block) < _READ_BYTES // 16
        if pos:
            del buf[:pos]
            pos = 0
        buf += block


def _chunk_size(line: bytes) -> int:
    size = line.split(b";", 1)[0].strip()
    if not size or len(size) > 16 or size.strip(b"0123456789abcdefABCDEF"):
        raise http.client.IncompleteRead(b"")
    return int(size, 16)


def _number(value: object) -> float:
    """A sample value as the API writes it ("1.5", "NaN", "+Inf"), or ValueError."""
    if isinstance(value, bool) or not isinstance(value, str | int | float):
        raise ValueError(value)
    return float(value)


class Client:
    """GET/POST against one Prometheus; returns the ``data`` member of its JSON answers."""

    def __init__(self, access: Access) -> None:
        self.access = access
        refused = check_url(access.url) or check_timeout(access.timeout_s)
        if refused:
            raise LiveError(refused)
        self.base = access.url.rstrip("/")
        self.headers: dict[str, str] = {}
        if access.bearer_token_file is not None:
            self.headers["Authorization"] = f"Bearer {_secret(access.bearer_token_file, 'bearer token')}"
        elif access.basic_auth_user is not None:
            password = (
                "" if access.basic_auth_password_file is None else _secret(access.basic_auth_password_file, "password")
            )
            token = base64.b64encode(f"{access.basic_auth_user}:{password}".encode()).decode()
            self.headers["Authorization"] = f"Basic {token}"
        self.context: ssl.SSLContext | None = None
        if access.ca_file is not None:
            try:
                self.context = ssl.create_default_context(cafile=str(access.ca_file))
            except (OSError, ssl.SSLError) as exc:
                raise LiveError(f"cannot load the CA file {access.ca_file}: {exc}") from exc
        self.requests = 0
        self.last_error = ""
        self.samples_read = 0  # raw samples the server read for range queries (its query stats) or remote read sent
        self.server_s = 0.0  # the server's own time evaluating those range queries (its query stats)
        self._counting = threading.Lock()  # backtest asks several range queries at once
        self._external: Labels | None = None
        # The labels of the series remote read decoded, by their bytes: set by a caller that reads the same
        # series again (backtest, one spec's time segments), so each series' labels are decoded once.
        self.label_memo: dict[bytes, tuple[Labels, tuple[tuple[str, str], ...]]] | None = None

    def call(self, path: str, params: Sequence[tuple[str, str]] = (), post: bool = True) -> Any:
        """One API call; the answer's ``data``, or a ``LiveError`` that says why not."""
        body = urllib.parse.urlencode(list(params)).encode()
        url = f"{self.base}{path}"
        if not post and params:
            url, body = f"{url}?{body.decode()}", b""
        headers = {"Content-Type": "application/x-www-form-urlencoded"} if post else {}
        query = dict(params).get("query") or dict(params).get("match[]")
        about = f"the query {query}" if query else path
        raw = self.request(url, body if post else None, headers, about, MAX_ANSWER_BYTES)
        return self._data(raw)

    def request(
        self,
        url: str,
        body: bytes | None,
        headers: dict[str, str],
        about: str,
        cap: int,
        plain_errors: bool = False,
        answer_headers: dict[str, str] | None = None,
    ) -> bytes:
        """One HTTP request with the client's credentials, TLS context and total deadline; the answer's body
        (at most ``cap`` bytes), or a ``LiveError`` that says why not (a ``QueryError`` for HTTP 400, 422 and
        503). ``plain_errors``: an error answer's reason is its first line of text (not a JSON ``error``).
        ``answer_headers``: filled with the answer's headers (names in lower case)."""
        request = urllib.request.Request(url, data=body, headers={**self.headers, **headers})
        with self._counting:
            self.requests += 1
        deadline = _Deadline()
        timer = threading.Timer(self.access.timeout_s, deadline.expire)
        timer.daemon = True
        timer.start()
        try:
            with _opener(deadline, self.context).open(request, timeout=self.access.timeout_s) as response:
                raw = self._body(response, about, cap)
                if answer_headers is not None:
                    answer_headers.update((key.lower(), value) for key, value in response.headers.items())
        except urllib.error.HTTPError as exc:
            if deadline.expired:
                self._late()
            message = self._http_error(exc, plain_errors)
            raise (QueryError if exc.code in (400, 422, 503) else LiveError)(message) from exc
        except (urllib.error.URLError, OSError, ValueError, http.client.HTTPException) as exc:
            if deadline.expired:
                self._late()
            reason = getattr(exc, "reason", exc)
            raise LiveError(f"cannot reach Prometheus at {self.base}: {reason}") from exc
        finally:
            timer.cancel()
        if deadline.expired:
            self._late()
        return raw

    def _body(self, response: http.client.HTTPResponse, about: str, cap: int) -> bytes:
        """The answer's body, read in pieces up to ``cap`` bytes; past it a ``LiveError`` naming the query."""
        declared = response.headers.get("Content-Length", "")
        if declared.isdigit() and int(declared) > cap:
            self._too_big(about, cap, f" ({int(declared):,} bytes declared)")
        if response.chunked and response.fp is not None:
            try:
                return _unchunked(response.fp, cap)
            except _TooBigError:
                self._too_big(about, cap, "")
        pieces: list[bytes] = []
        size = 0
        while piece := response.read(min(_READ_BYTES, cap + 1 - size)):
            pieces.append(piece)
            size += len(piece)
            if size > cap:
                self._too_big(about, cap, "")
        if declared.isdigit() and size < int(declared):
            raise http.client.IncompleteRead(b"", int(declared) - size)  # reported as a connection problem
        return b"".join(pieces)

    def _too_big(self, about: str, cap: int, declared: str) -> NoReturn:
        raise AnswerTooBigError(
            f"Prometheus at {self.base} answered {about} with more than {cap // (1024 * 1024)} MiB"
            f"{declared}, the limit of one answer; ask for less (a shorter span, or fewer specs at once)"
        )

    def _late(self) -> NoReturn:
        raise LiveError(
            f"Prometheus at {self.base} did not answer within {self.access.timeout_s:g}s (--timeout); "
            "is it overloaded, or is a proxy holding the connection?"
        )

    def _http_error(self, exc: urllib.error.HTTPError, plain: bool = False) -> str:
        try:
            text = exc.read(MAX_ERROR_BYTES)
            if plain:  # remote read answers its errors as text (http.Error): the first line, printable only
                line = text.decode("utf-8", "replace").strip().split("\n", 1)[0][:300]
                detail = "".join(char for char in line if char.isprintable())
            else:
                detail = str(json.loads(text).get("error", ""))  # an error's reason is short
        except (ValueError, RecursionError, OSError, AttributeError, http.client.HTTPException):
            detail = ""
        self.last_error = detail
        if 300 <= exc.code < 400:
            target = _origin(exc.headers.get("Location", "") if exc.headers else "", self.base)
            return (
                f"Prometheus at {self.base} answered HTTP {exc.code}, a redirect to {target}; redirects are not "
                "followed (credentials would go with them): give the URL it redirects to as --prometheus"
            )
        if exc.code in (401, 403):
            return (
                f"Prometheus at {self.base} refused the credentials (HTTP {exc.code}); check the token or password file"
            )
        if exc.code == 404:
            return f"{self.base} has no Prometheus HTTP API ({exc.url} answered 404); is this the server's base URL?"
        return f"Prometheus at {self.base} answered HTTP {exc.code}{': ' + detail if detail else ''}"

    def _data(self, raw: bytes) -> Any:
        try:
            answer = json.loads(raw)
        except (ValueError, RecursionError):
            answer = None
        if not isinstance(answer, dict) or "status" not in answer:
            raise LiveError(f"{self.base} does not answer like a Prometheus HTTP API (no JSON status)")
        if answer["status"] != "success":
            raise QueryError(f"Prometheus at {self.base} refused a query: {answer.get('error', 'no reason given')}")
        return answer.get("data")

    # -- the endpoints --------------------------------------------------------------

    def buildinfo(self) -> dict[str, str]:
        """The server's version; also the first proof that it is a Prometheus at all."""
        data = self.call("/api/v1/status/buildinfo", post=False)
        if not isinstance(data, dict) or "version" not in data:
            raise LiveError(f"{self.base} answered /api/v1/status/buildinfo without a version; is it a Prometheus?")
        return {str(key): str(value) for key, value in data.items()}

    def _malformed(self, what: str, expr: str | None = None) -> NoReturn:
        about = f"the query {expr}" if expr is not None else "a request"
        raise LiveError(f"Prometheus at {self.base} answered {about} with {what}; is it a Prometheus?")

    def _labels(self, metric: object, expr: str | None) -> Labels:
        if not isinstance(metric, dict) or not all(isinstance(v, str) for v in metric.values()):
            self._malformed("a series whose labels are not a mapping of strings", expr)
        return {str(key): value for key, value in metric.items()}

    def _sample(self, pair: object, expr: str) -> tuple[float, float]:
        if not isinstance(pair, list | tuple) or len(pair) != 2:
            self._malformed(f"a sample that is not a [time, value] pair ({str(pair)[:40]})", expr)
        try:
            return _number(pair[0]), _number(pair[1])
        except (ValueError, OverflowError):
            self._malformed(f"a sample that is not a number ({str(pair)[:40]})", expr)

    def _result(self, data: object, expr: str) -> list[Any]:
        if not isinstance(data, dict):
            self._malformed(f"data that is not an object ({type(data).__name__})", expr)
        result = data.get("result", [])
        if not isinstance(result, list):
            self._malformed(f"a result that is not a list ({type(result).__name__})", expr)
        if not all(isinstance(item, dict) for item in result):
            self._malformed("a result holding something other than series", expr)
        return result

    def query(self, expr: str, at: float | None = None) -> list[tuple[Labels, float]]:
        """An instant query: each series' labels and value (a scalar answer is one unlabelled series)."""
        params = [("query", expr)] + ([("time", _ts(at))] if at is not None else [])
        data = self.call("/api/v1/query", params)
        if isinstance(data, dict) and data.get("resultType") == "scalar":
            return [({}, self._sample(data.get("result"), expr)[1])]
        return [
            (self._labels(item.get("metric", {}), expr), self._sample(item.get("value"), expr)[1])
            for item in self._result(data, expr)
        ]

    def query_range(
        self, expr: str, start: float, end: float, step_s: float
    ) -> list[tuple[Labels, list[tuple[float, float]]]]:
        """A range query: each series' labels and its (timestamp, value) points."""
        params = [("query", expr), ("start", _ts(start)), ("end", _ts(end)), ("step", _ts(step_s)), ("stats", "all")]
        data = self.call("/api/v1/query_range", params)
        result = self._result(data, expr)
        series = []
        for item in result:
            values = item.get("values", [])
            if not isinstance(values, list):
                self._malformed("a series whose values are not a list", expr)
            series.append((self._labels(item.get("metric", {}), expr), [self._sample(p, expr) for p in values]))
        stats = data.get("stats") if isinstance(data.get("stats"), dict) else {}
        samples, timings = stats.get("samples") or {}, stats.get("timings") or {}
        try:
            read = _number(samples.get("totalQueryableSamples", 0)) if isinstance(samples, dict) else 0.0
            spent = _number(timings.get("execTotalTime", 0.0)) if isinstance(timings, dict) else 0.0
        except ValueError:
            read, spent = 0.0, 0.0  # the statistics are only reported, never relied on
        with self._counting:
            self.samples_read += int(read) if math.isfinite(read) else 0
            self.server_s += spent if math.isfinite(spent) else 0.0
        return series

    def count(self, expr: str) -> int:
        """How many series ``expr`` returns now (0 when none)."""
        query = f"count({expr})"
        result = self.query(query)
        if not result:
            return 0
        value = result[0][1]
        if not math.isfinite(value) or value < 0 or value != int(value):
            self._malformed(f"a count that is not a whole number ({value!r})", query)
        return int(value)

    def label_values(self, label: str, match: str | None = None) -> list[str]:
        params = [("match[]", match)] if match else []
        data = self.call(f"/api/v1/label/{urllib.parse.quote(label)}/values", params, post=False)
        if data is None:
            return []
        if not isinstance(data, list) or not all(isinstance(value, str) for value in data):
            self._malformed(f"label values that are not a list of strings (the values of {label})")
        return list(data)

    def external_labels(self) -> Labels:
        """The server's ``global.external_labels`` (its configuration, asked once): the remote-read endpoint adds
        them to every series it answers, and turns a matcher equal to one into "the label is absent", while
        its rules see neither."""
        if self._external is None:
            data = self.call("/api/v1/status/config", post=False)
            text = data.get("yaml") if isinstance(data, dict) else None
            if not isinstance(text, str):
                self._malformed("a configuration without its YAML text")
            try:
                document = yaml.load(text, Loader=getattr(yaml, "CSafeLoader", yaml.SafeLoader))
            except yaml.YAMLError:
                self._malformed("a configuration that is not YAML")
            found = (document.get("global") or {}).get("external_labels") if isinstance(document, dict) else None
            self._external = {str(k): str(v) for k, v in found.items()} if isinstance(found, dict) else {}
        return dict(self._external)

    def read_raw(self, matchers: Sequence[Any], start_ms: int, end_ms: int) -> Sequence[Any]:
        """Every stored sample of the selected series over ``[start_ms, end_ms]``, staleness markers included,
        through remote read (``compiler.live.remote_read``)."""
        from compiler.live.remote_read import read_raw

        return read_raw(self, matchers, start_ms, end_ms)

    def series(self, match: str, start: float | None = None, end: float | None = None) -> list[Labels]:
        params = [("match[]", match)]
        if start is not None and end is not None:
            params += [("start", _ts(start)), ("end", _ts(end))]
        data = self.call("/api/v1/series", params)
        if data is None:
            return []
        if not isinstance(data, list):
            self._malformed(f"series that are not a list (the series of {match})")
        return [self._labels(item, None) for item in data]


def _ts(value: float) -> str:
    """A timestamp or duration in seconds as the API takes it, without float noise."""
    return f"{value:.3f}".rstrip("0").rstrip(".")
