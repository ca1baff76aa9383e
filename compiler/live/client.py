"""A small read-only client for the Prometheus HTTP API, on the standard library alone.

Every failure (unreachable, TLS, HTTP error, a server that is not a Prometheus, a query the
server refuses) is a ``LiveError`` whose message is one line a person can act on, so the
command line prints it and exits 2 without a traceback. Queries are sent as form-encoded POST
bodies, so long rule expressions never hit URL length limits.
"""

from __future__ import annotations

import base64
import json
import math
import ssl
import threading
import urllib.error
import urllib.parse
import urllib.request
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

Labels = dict[str, str]
# query_range answers at most 11,000 points per series; backtest chunks below that.
MAX_POINTS_PER_QUERY = 10_000
# Points (series x steps) one range-query answer may hold: the server's --query.max-samples default is
# 50,000,000, and 2,000,000 points are about 60 MB of JSON for the client to parse.
MAX_SAMPLES_PER_QUERY = 2_000_000
# The words of Prometheus's refusal when a query would exceed --query.max-samples (promql.ErrTooManySamples).
TOO_MANY_SAMPLES = "would load too many samples"
QUERY_TIMED_OUT = "query timed out in"  # Prometheus 2.42: "query timed out in expression evaluation"


class LiveError(Exception):
    """The server could not answer as a Prometheus; the message says what to check."""


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


class Client:
    """GET/POST against one Prometheus; returns the ``data`` member of its JSON answers."""

    def __init__(self, access: Access) -> None:
        self.access = access
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
        self.samples_read = 0  # raw samples the server read for range queries (its query stats)
        self.server_s = 0.0  # the server's own time evaluating those range queries (its query stats)
        self._counting = threading.Lock()  # backtest asks several range queries at once

    def call(self, path: str, params: Sequence[tuple[str, str]] = (), post: bool = True) -> Any:
        """One API call; the answer's ``data``, or a ``LiveError`` that says why not."""
        body = urllib.parse.urlencode(list(params)).encode()
        url = f"{self.base}{path}"
        if not post and params:
            url, body = f"{url}?{body.decode()}", b""
        request = urllib.request.Request(url, data=body if post else None, headers=self.headers)
        if post:
            request.add_header("Content-Type", "application/x-www-form-urlencoded")
        with self._counting:
            self.requests += 1
        try:
            with urllib.request.urlopen(request, timeout=self.access.timeout_s, context=self.context) as response:
                raw = response.read()
        except urllib.error.HTTPError as exc:
            message = self._http_error(exc)
            raise (QueryError if exc.code in (400, 422, 503) else LiveError)(message) from exc
        except (urllib.error.URLError, OSError, ValueError) as exc:
            reason = getattr(exc, "reason", exc)
            raise LiveError(f"cannot reach Prometheus at {self.base}: {reason}") from exc
        return self._data(raw)

    def _http_error(self, exc: urllib.error.HTTPError) -> str:
        try:
            detail = str(json.loads(exc.read()).get("error", ""))
        except (ValueError, OSError, AttributeError):
            detail = ""
        self.last_error = detail
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
        except ValueError:
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

    def query(self, expr: str, at: float | None = None) -> list[tuple[Labels, float]]:
        """An instant query: each series' labels and value (a scalar answer is one unlabelled series)."""
        params = [("query", expr)] + ([("time", _ts(at))] if at is not None else [])
        data = self.call("/api/v1/query", params)
        if data.get("resultType") == "scalar":
            return [({}, float(data["result"][1]))]
        return [(dict(item["metric"]), float(item["value"][1])) for item in data.get("result", [])]

    def query_range(
        self, expr: str, start: float, end: float, step_s: float
    ) -> list[tuple[Labels, list[tuple[float, float]]]]:
        """A range query: each series' labels and its (timestamp, value) points."""
        params = [("query", expr), ("start", _ts(start)), ("end", _ts(end)), ("step", _ts(step_s)), ("stats", "all")]
        data = self.call("/api/v1/query_range", params)
        samples = (data.get("stats") or {}).get("samples") or {}
        with self._counting:
            self.samples_read += int(samples.get("totalQueryableSamples", 0))
            self.server_s += float(((data.get("stats") or {}).get("timings") or {}).get("execTotalTime", 0.0))
        return [
            (dict(item["metric"]), [(float(t), float(v)) for t, v in item.get("values", [])])
            for item in data.get("result", [])
        ]

    def count(self, expr: str) -> int:
        """How many series ``expr`` returns now (0 when none)."""
        result = self.query(f"count({expr})")
        return int(result[0][1]) if result and not math.isnan(result[0][1]) else 0

    def label_values(self, label: str, match: str | None = None) -> list[str]:
        params = [("match[]", match)] if match else []
        data = self.call(f"/api/v1/label/{urllib.parse.quote(label)}/values", params, post=False)
        return [str(value) for value in data or []]

    def series(self, match: str, start: float | None = None, end: float | None = None) -> list[Labels]:
        params = [("match[]", match)]
        if start is not None and end is not None:
            params += [("start", _ts(start)), ("end", _ts(end))]
        data = self.call("/api/v1/series", params)
        return [dict(item) for item in data or []]


def _ts(value: float) -> str:
    """A timestamp or duration in seconds as the API takes it, without float noise."""
    return f"{value:.3f}".rstrip("0").rstrip(".")
