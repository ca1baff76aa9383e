"""``read_raw`` against the real Prometheus 2.42 on loopback: every stored sample, bit for bit what the query
API answers for ``metric[range]`` (counter resets, runs of zeros, negative values, NaN, infinities, a gap,
millisecond timestamps), the four matcher types applied by the server, the stale markers a real scrape
writes, and a query split when the server's --storage.remote.read-sample-limit refuses it. Then servers
that are not a Prometheus: a one-line ``LiveError``, never a traceback. About 15 s."""

from __future__ import annotations

import json
import math
import threading
import time
from collections.abc import Iterator, Sequence
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from typing import Any

import cramjam
import numpy as np
import pytest

from compiler.live import remote_read, xor_chunks
from compiler.live.client import Access, Client, LiveError
from compiler.live.remote_read import RawSeries, is_stale, read_raw
from compiler.promql import Matcher
from tests import servers

STEP_MS = 15_000
POINTS = 361  # 90 minutes at 15 s
ZONES = ("a", "b", "c")
RACKS = ("r1", "r2")


def counter(i: int) -> float:
    """A counter that starts at 0 for a while, grows, resets twice (once to 0) and idles at 0 again."""
    if i < 20:
        return 0.0
    if i < 150:
        return float(3 * (i - 20))
    if i < 160:
        return 0.0  # reset to zero
    if i < 300:
        return float(i - 160) * 1.5
    return float(i % 7)  # resets every 7 samples


def gauge(zone: str, rack: str, i: int) -> float:
    """Runs of zeros, negative values, NaN and both infinities, a different mix per series."""
    shift = ZONES.index(zone) * 5 + RACKS.index(rack)
    k = (i + shift) % 40
    if k < 12:
        return 0.0
    if k == 13:
        return math.nan
    if k == 17:
        return math.inf
    if k == 19:
        return -math.inf
    if k < 30:
        return -0.25 * k - 1e-9 * shift
    return 21.5 + k * 1e5


def openmetrics(start_ms: int) -> str:
    def stamp(i: int, jitter: int = 0) -> str:
        return f"{(start_ms + i * STEP_MS + jitter) / 1000:.3f}"

    lines = ["# TYPE rr_requests counter"]
    lines += [f'rr_requests_total{{job="api"}} {counter(i)!r} {stamp(i, i % 13)}' for i in range(POINTS)]
    lines.append("# TYPE rr_temperature gauge")
    for zone in ZONES:
        for rack in RACKS:
            labels = f'zone="{zone}",rack="{rack}"'
            lines += [f"rr_temperature{{{labels}}} {_om(gauge(zone, rack, i))} {stamp(i)}" for i in range(POINTS)]
    lines.append("# TYPE rr_gappy gauge")  # present for 30 minutes, absent 30, back for 30
    lines += [f"rr_gappy {i * 0.1!r} {stamp(i)}" for i in range(POINTS) if not 120 <= i < 240]
    return "\n".join(lines) + "\n# EOF\n"


def _om(value: float) -> str:
    return (
        "NaN" if math.isnan(value) else "+Inf" if value == math.inf else "-Inf" if value == -math.inf else repr(value)
    )


@pytest.fixture(scope="module")
def data(tmp_path_factory: pytest.TempPathFactory) -> Iterator[tuple[str, str, int, int]]:
    """Two Prometheus servers on the same history: one with the default sample limit, one refusing a remote
    read of more than 5 samples."""
    end_ms = int(time.time()) // 3600 * 3600 * 1000 - 3 * 3600_000
    start_ms = end_ms - (POINTS - 1) * STEP_MS
    text = openmetrics(start_ms)
    plain, limited = tmp_path_factory.mktemp("rread"), tmp_path_factory.mktemp("rread-limited")
    with (
        servers.prometheus(plain, [], None, servers.backfill(text, plain)) as prom,
        servers.prometheus(
            limited, [], None, servers.backfill(text, limited), ("--storage.remote.read-sample-limit=5",)
        ) as small,
    ):
        yield prom.url, small.url, start_ms, end_ms + STEP_MS


# the tests of the server's sample limit: the streamed mode has none (storage/remote/read_handler.go@v2.42.0)
SAMPLES_ONLY = {
    "test_a_query_over_the_servers_sample_limit_is_split",
    "test_no_sample_is_lost_or_doubled_at_a_split_point",
    "test_a_millisecond_over_the_limit_is_refused_naming_the_selector",
}

# the tests that compare both modes (they switch it themselves)
BOTH_MODES = {
    "test_streamed_chunks_equal_the_samples_bit_for_bit",
    "test_a_series_split_over_frames_is_joined",
    "test_head_chunks_with_stale_markers_equal_the_samples",
}


@pytest.fixture(autouse=True, params=["streamed", "samples"])
def mode(request: pytest.FixtureRequest, monkeypatch: pytest.MonkeyPatch) -> Iterator[str]:
    """Every test in both modes: the XOR chunks decoded here (when numba is installed), or the samples (forced,
    as without numba); a test against a real Prometheus in the streamed mode must have read chunks."""
    streamed = request.param == "streamed"
    if streamed and (xor_chunks.kernels() is None or request.function.__name__ in SAMPLES_ONLY):
        pytest.skip("the samples mode only")
    if not streamed and request.function.__name__ in BOTH_MODES:
        pytest.skip("compares both modes itself")
    monkeypatch.setattr(remote_read, "STREAMED", streamed)
    decoded: list[int] = []
    original = xor_chunks.decode_stream

    def counting(*args: Any) -> Sequence[RawSeries] | None:
        decoded.append(1)
        return original(*args)

    monkeypatch.setattr(xor_chunks, "decode_stream", counting)
    yield request.param
    if {"data", "scraped", "framed"} & set(request.fixturenames):
        assert bool(decoded) == streamed


def api_samples(
    client: Client, selector: str, end_ms: int
) -> dict[tuple[tuple[str, str], ...], list[tuple[int, float]]]:
    """What the query API answers for ``selector[3h]`` at ``end_ms``: each series' (ms, value) samples."""
    data = client.call("/api/v1/query", [("query", f"{selector}[3h]"), ("time", f"{end_ms / 1000:.3f}")])
    return {
        tuple(sorted(item["metric"].items())): [(round(float(t) * 1000), float(v)) for t, v in item["values"]]
        for item in data["result"]
    }


def assert_same(mine: Sequence[RawSeries], theirs: dict[tuple[tuple[str, str], ...], list[tuple[int, float]]]) -> None:
    assert [tuple(sorted(item.labels.items())) for item in mine] == sorted(theirs)
    for item in mine:
        expected = theirs[tuple(sorted(item.labels.items()))]
        keep = ~is_stale(item.values)  # the query API leaves stale markers out
        assert item.timestamps[keep].tolist() == [t for t, _ in expected]
        got, want = item.values[keep], np.array([v for _, v in expected], dtype=np.float64)
        nan = np.isnan(want)
        assert np.array_equal(np.isnan(got), nan)
        assert got[~nan].view(np.uint64).tolist() == want[~nan].view(np.uint64).tolist()  # bit for bit


def name(metric: str) -> Matcher:
    return Matcher("__name__", "=", metric)


@pytest.mark.parametrize("metric", ["rr_requests_total", "rr_temperature", "rr_gappy"])
def test_every_stored_sample_bit_for_bit(data: tuple[str, str, int, int], metric: str) -> None:
    url, _, start_ms, end_ms = data
    client = Client(Access(url, timeout_s=60))
    got = read_raw(client, [name(metric)], start_ms - 3600_000, end_ms)
    assert_same(got, api_samples(client, metric, end_ms))
    assert client.requests == 2 and client.samples_read == sum(item.timestamps.size for item in got)
    assert client.samples_read == {"rr_requests_total": POINTS, "rr_temperature": 6 * POINTS, "rr_gappy": 241}[metric]
    if metric == "rr_temperature":  # the data set holds what it claims: zeros, negatives, NaN, +-Inf
        values = np.concatenate([item.values for item in got])
        assert (values == 0).sum() > 500 and (values < 0).sum() > 500 and np.isnan(values).sum() == 54
        assert np.isposinf(values).sum() == 54 and np.isneginf(values).sum() == 54
    if metric == "rr_gappy":
        assert np.diff(got[0].timestamps).max() == 121 * STEP_MS


def test_the_range_is_inclusive_at_both_ends(data: tuple[str, str, int, int]) -> None:
    url, _, start_ms, _ = data
    client = Client(Access(url))
    first, second = start_ms, start_ms + STEP_MS
    got = read_raw(client, [name("rr_gappy")], first, second)
    assert got[0].timestamps.tolist() == [first, second]
    assert list(read_raw(client, [name("rr_gappy")], first + 1, second - 1)) == []


@pytest.mark.parametrize(
    ("matcher", "zones"),
    [
        (Matcher("zone", "=", "b"), {"b"}),
        (Matcher("zone", "!=", "b"), {"a", "c"}),
        (Matcher("zone", "=~", "a|c"), {"a", "c"}),
        (Matcher("zone", "!~", "a|c"), {"b"}),
        (Matcher("zone", "=~", "a.*"), {"a"}),  # anchored, as PromQL's are
    ],
)
def test_each_matcher_type_is_applied_by_the_server(
    data: tuple[str, str, int, int], matcher: Matcher, zones: set[str]
) -> None:
    url, _, start_ms, end_ms = data
    client = Client(Access(url))
    got = read_raw(client, [name("rr_temperature"), matcher, Matcher("rack", "!=", "r2")], start_ms, end_ms)
    assert {item.labels["zone"] for item in got} == zones
    assert {item.labels["rack"] for item in got} == {"r1"}
    assert all(item.timestamps.size == POINTS for item in got)


def test_a_query_over_the_servers_sample_limit_is_split(data: tuple[str, str, int, int]) -> None:
    url, limited, start_ms, end_ms = data
    whole = read_raw(Client(Access(url)), [name("rr_requests_total")], start_ms, end_ms)
    client = Client(Access(limited, timeout_s=60))
    split = read_raw(client, [name("rr_requests_total")], start_ms, end_ms)
    assert client.requests > POINTS / 5  # every answer held at most 5 samples
    assert client.samples_read == POINTS
    assert [item.labels for item in split] == [item.labels for item in whole]
    assert split[0].timestamps.tolist() == whole[0].timestamps.tolist()
    assert split[0].values.view(np.uint64).tolist() == whole[0].values.view(np.uint64).tolist()


@pytest.mark.parametrize("shift", [-1, 0])
def test_no_sample_is_lost_or_doubled_at_a_split_point(data: tuple[str, str, int, int], shift: int) -> None:
    url, limited, start_ms, _ = data
    at = start_ms + 60 * STEP_MS  # a sample just after (shift -1) or at (shift 0) where the range is first cut
    first, last = at + shift - 60 * STEP_MS, at + shift + 60 * STEP_MS
    client = Client(Access(limited, timeout_s=60))
    got = read_raw(client, [name("rr_gappy")], first, last)
    assert got[0].timestamps.tolist() == [start_ms + i * STEP_MS for i in range(120)]  # then the gap
    assert client.requests > 120 / 5
    assert_same(got, api_samples(Client(Access(url)), "rr_gappy", last))


def test_a_millisecond_over_the_limit_is_refused_naming_the_selector(data: tuple[str, str, int, int]) -> None:
    _, limited, start_ms, _ = data
    client = Client(Access(limited))
    with pytest.raises(LiveError) as caught:
        read_raw(client, [name("rr_temperature")], start_ms, start_ms + STEP_MS)  # 6 series at each stamp
    message = str(caught.value)
    assert '{__name__="rr_temperature"}' in message and "--storage.remote.read-sample-limit" in message
    assert "exceeded sample limit (5)" in message and "\n" not in message


def test_an_estimate_splits_the_range_ahead(data: tuple[str, str, int, int], monkeypatch: pytest.MonkeyPatch) -> None:
    url, _, start_ms, end_ms = data
    monkeypatch.setattr(remote_read, "MAX_SAMPLES_PER_READ", 500)
    client = Client(Access(url))
    got = read_raw(client, [name("rr_temperature")], start_ms, end_ms, expected_samples=6 * POINTS)
    assert client.requests == 5  # ceil(2166 / 500) pieces of time
    assert_same(got, api_samples(client, "rr_temperature", end_ms))


# -- stale markers, written by a real scrape ---------------------------------------------------------


@pytest.fixture
def scraped(tmp_path: Path) -> Iterator[tuple[str, dict[str, bool]]]:
    """A Prometheus scraping a loopback target every second; the test turns ``rr_flappy`` off."""
    exposed = {"flappy": True}

    class Target(BaseHTTPRequestHandler):
        def do_GET(self) -> None:
            body = ("rr_flappy 1\n" if exposed["flappy"] else "") + "rr_steady 2\n"
            self.send_response(200)
            self.send_header("Content-Type", "text/plain; version=0.0.4")
            self.end_headers()
            self.wfile.write(body.encode())

        def log_message(self, *args: Any) -> None:
            return

    target = ThreadingHTTPServer(("127.0.0.1", 0), Target)
    threading.Thread(target=target.serve_forever, daemon=True).start()
    port = servers.free_port()
    config = {
        "global": {"scrape_interval": "1s", "scrape_timeout": "1s"},
        "scrape_configs": [
            {"job_name": "target", "static_configs": [{"targets": [f"127.0.0.1:{target.server_address[1]}"]}]}
        ],
    }
    (tmp_path / "prometheus.yml").write_text(json.dumps(config), encoding="utf-8")
    args = [
        "prometheus",
        f"--config.file={tmp_path / 'prometheus.yml'}",
        f"--storage.tsdb.path={tmp_path / 'tsdb'}",
        f"--web.listen-address=127.0.0.1:{port}",
    ]
    try:
        with servers.serving(args, port, tmp_path / "prometheus.log") as url:
            yield url, exposed
    finally:
        target.shutdown()
        target.server_close()


def test_stale_markers_a_scrape_writes_are_returned(scraped: tuple[str, dict[str, bool]]) -> None:
    url, exposed = scraped
    client = Client(Access(url))
    begin = int(time.time() * 1000) - 60_000

    def flappy() -> RawSeries | None:
        got = read_raw(client, [name("rr_flappy")], begin, int(time.time() * 1000) + 60_000)
        return got[0] if got else None

    assert servers.wait_until(lambda: (series := flappy()) is not None and series.timestamps.size >= 3, 60)
    exposed["flappy"] = False
    assert servers.wait_until(lambda: (series := flappy()) is not None and bool(is_stale(series.values[-1:])[0]), 60)
    series = flappy()
    assert series is not None and series.labels == {
        "__name__": "rr_flappy",
        "instance": series.labels["instance"],
        "job": "target",
    }
    stale = is_stale(series.values)
    assert stale.sum() == 1 and stale[-1] and np.isnan(series.values[-1])
    assert (series.values[:-1] == 1.0).all()  # every sample before it, as scraped
    steady = read_raw(client, [name("rr_steady")], begin, int(time.time() * 1000) + 60_000)
    assert steady and not is_stale(steady[0].values).any()


# -- servers that are not a Prometheus ----------------------------------------------------------------


def answer(body: bytes, status: int = 200, content_type: str = "application/x-protobuf") -> servers.Route:
    def route(handler: BaseHTTPRequestHandler) -> None:
        servers.send(handler, body, status, {"Content-Type": content_type})

    return route


STREAMED_TYPE = "application/x-streamed-protobuf; proto=prometheus.ChunkedReadResponse"


@pytest.mark.parametrize(
    ("route", "words"),
    [
        (answer(b"not found", 404, "text/plain"), "has no Prometheus HTTP API"),
        (answer(b'{"status":"success","data":[]}', 200, "application/json"), "not snappy"),
        (answer(bytes(cramjam.snappy.compress_raw(b"\x0a\x05\x0a\x03\x12\x01"))), "malformed ReadResponse"),
        (answer(bytes(cramjam.snappy.compress_raw(b"\x0a\x04\x0a\x02\x12\x09"))), "malformed ReadResponse"),
        (answer(b"\xff\xff\xff\xff\xff\x01" + b"\x00" * 20), "once decompressed"),  # declares 2^35 bytes
        (answer(b"boom\nsecond line", 500, "text/plain"), "answered HTTP 500: boom"),
        (answer(b"\x05\x00\x00\x00\x00garbage", 200, STREAMED_TYPE), "ChunkedReadResponse"),
        (answer(b"\xff" * 12, 200, STREAMED_TYPE), "ChunkedReadResponse"),
    ],
)
def test_a_server_that_is_not_a_prometheus_is_a_one_line_error(route: servers.Route, words: str) -> None:
    seen: servers.Seen = []
    with servers.hostile(route, seen) as url, pytest.raises(LiveError) as caught:
        read_raw(Client(Access(url, timeout_s=10)), [name("up")], 0, 1000)
    if "ChunkedReadResponse" in words and not remote_read._streamed():
        words = "not asked for"  # a streamed answer to a request for samples
    assert words in str(caught.value) and "\n" not in str(caught.value)
    assert '{__name__="up"}' in str(caught.value) or "ChunkedReadResponse" not in words


def test_the_request_carries_the_clients_credentials_and_the_remote_read_headers(tmp_path: Path) -> None:
    token = tmp_path / "token"
    token.write_text("s3cret\n", encoding="utf-8")
    seen: servers.Seen = []
    bodies: list[bytes] = []

    def route(handler: BaseHTTPRequestHandler) -> None:
        bodies.append(getattr(handler, "request_body", b""))
        servers.send(handler, bytes(cramjam.snappy.compress_raw(b"")), 200, {"Content-Type": "application/x-protobuf"})

    with servers.hostile(route, seen) as url:
        client = Client(Access(url, bearer_token_file=token))
        assert list(read_raw(client, [name("up"), Matcher("job", "=~", "a.*")], 5, 6)) == []
    method, path, headers = seen[0]
    assert (method, path) == ("POST", "/api/v1/read")
    assert headers["Authorization"] == "Bearer s3cret"
    assert headers["Content-Encoding"] == "snappy" and headers["X-Prometheus-Remote-Read-Version"] == "0.1.0"
    assert bytes(cramjam.snappy.decompress_raw(bodies[0])) == remote_read.encode_read_request(
        [name("up"), Matcher("job", "=~", "a.*")], 5, 6, remote_read._streamed()
    )


# -- the streamed mode answers bit for bit what the samples mode does -------------------------------------


def both_modes(url: str, metric: str, start_ms: int, end_ms: int) -> tuple[Sequence[RawSeries], Sequence[RawSeries]]:
    """What ``read_raw`` answers streamed and with samples (back to back; the mode fixture's switch aside)."""
    answers = []
    for streamed in (True, False):
        setattr(remote_read, "STREAMED", streamed)  # noqa: B010 - the mode fixture restores it
        answers.append(read_raw(Client(Access(url, timeout_s=60)), [name(metric)], start_ms, end_ms))
    return answers[0], answers[1]


def assert_identical(streamed: Sequence[RawSeries], samples: Sequence[RawSeries]) -> None:
    """Labels, order, timestamps and values as uint64 bits (every NaN, the stale marker among them)."""
    assert [item.labels for item in streamed] == [item.labels for item in samples]
    for mine, theirs in zip(streamed, samples, strict=True):
        assert mine.timestamps.dtype == theirs.timestamps.dtype and mine.values.dtype == theirs.values.dtype
        assert mine.timestamps.tolist() == theirs.timestamps.tolist()
        assert mine.values.view(np.uint64).tolist() == theirs.values.view(np.uint64).tolist()


@pytest.fixture(scope="module")
def framed(tmp_path_factory: pytest.TempPathFactory) -> Iterator[tuple[str, int, int]]:
    """The data set in a Prometheus that cuts its streamed frames at 1 KiB, so that a series of three chunks
    comes over several frames."""
    end_ms = int(time.time()) // 3600 * 3600 * 1000 - 3 * 3600_000
    start_ms = end_ms - (POINTS - 1) * STEP_MS
    workdir = tmp_path_factory.mktemp("rread-framed")
    flags = ("--storage.remote.read-max-bytes-in-frame=1024",)
    with servers.prometheus(workdir, [], None, servers.backfill(openmetrics(start_ms), workdir), flags) as prom:
        yield prom.url, start_ms, end_ms + STEP_MS


@pytest.mark.parametrize("metric", ["rr_requests_total", "rr_temperature", "rr_gappy"])
@pytest.mark.parametrize("cut", ["whole", "mid-chunk"])
def test_streamed_chunks_equal_the_samples_bit_for_bit(data: tuple[str, str, int, int], metric: str, cut: str) -> None:
    url, _, start_ms, end_ms = data
    if cut == "mid-chunk":  # both ends inside a chunk of 120 samples, off the sample grid at one end
        start_ms, end_ms = start_ms + 37 * STEP_MS + 1, start_ms + 250 * STEP_MS
    streamed, samples = both_modes(url, metric, start_ms - 3600_000 if cut == "whole" else start_ms, end_ms)
    assert samples and sum(item.timestamps.size for item in samples) > 50
    assert_identical(streamed, samples)


def test_a_series_split_over_frames_is_joined(framed: tuple[str, int, int]) -> None:
    url, start_ms, end_ms = framed
    client = Client(Access(url, timeout_s=60))
    body = bytes(
        cramjam.snappy.compress_raw(remote_read.encode_read_request([name("rr_temperature")], 0, end_ms, True))
    )
    raw = client.request(f"{url}/api/v1/read", body, remote_read._HEADERS, "test", 1 << 30)
    module = xor_chunks.kernels()
    assert module is not None
    arr = np.zeros(len(raw) + 16, np.uint8)
    arr[: len(raw)] = np.frombuffer(raw, np.uint8)
    _, chunks = xor_chunks._walk(module, arr, len(raw))
    assert len(set(chunks[:, 0].tolist())) > 6  # more frames than the six series
    for metric in ("rr_temperature", "rr_requests_total"):
        streamed, samples = both_modes(url, metric, start_ms + 100 * STEP_MS + 7, end_ms)
        assert len(samples) == {"rr_temperature": 6, "rr_requests_total": 1}[metric]
        assert_identical(streamed, samples)


def test_head_chunks_with_stale_markers_equal_the_samples(scraped: tuple[str, dict[str, bool]]) -> None:
    url, exposed = scraped
    begin = int(time.time() * 1000) - 60_000

    def flappy() -> Sequence[RawSeries]:
        return read_raw(Client(Access(url)), [name("rr_flappy")], begin, int(time.time() * 1000) + 60_000)

    assert servers.wait_until(lambda: bool(got := flappy()) and got[0].timestamps.size >= 3, 60)
    exposed["flappy"] = False
    assert servers.wait_until(lambda: bool(got := flappy()) and bool(is_stale(got[0].values[-1:])[0]), 60)
    now = int(time.time() * 1000)
    streamed, samples = both_modes(url, "rr_flappy", begin, now)
    assert is_stale(samples[0].values).sum() == 1
    assert_identical(streamed, samples)
    middle = (int(samples[0].timestamps[0]) + int(samples[0].timestamps[-1])) // 2
    assert_identical(*both_modes(url, "rr_flappy", middle, now))  # a cut inside the head chunk
