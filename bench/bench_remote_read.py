"""Benchmark: raw samples read through Prometheus's remote-read endpoint (``compiler.live.remote_read``).

Backfills ``--series`` gauges of ``--samples`` samples each (15 s apart; a third of the values 0, which
Prometheus's encoder leaves out, so records of two lengths as in real data) into a real Prometheus in a temp
dir, then reads them all ``--repeat`` times with ``read_raw`` and prints, for the best run: wall time and
samples/s end to end (request + decompress + decode), the client's CPU (this process) split into its
phases, the server's CPU (its own ``process_cpu_seconds_total``) and the bytes on the wire, in each mode
(``--mode both``, back to back: the stored XOR chunks decoded here, then the samples). Then, back to back
on the same answer, the samples decode alone with the vectorised path and with the per-sample Python
fallback forced. Usage:

    python bench/bench_remote_read.py [--series 300] [--samples 5000] [--repeat 3] [--mode both]
"""

from __future__ import annotations

import argparse
import random
import statistics
import sys
import tempfile
import time
import urllib.request
from pathlib import Path

REPO_ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(REPO_ROOT))

import cramjam  # noqa: E402

from compiler.live import remote_read  # noqa: E402
from compiler.live.client import Access, Client  # noqa: E402
from compiler.live.remote_read import read_raw  # noqa: E402
from compiler.promql import Matcher  # noqa: E402
from tests import servers  # noqa: E402

STEP_MS = 15_000


def openmetrics(series: int, samples: int, start_ms: int) -> str:
    rng = random.Random(1)
    lines = ["# TYPE bench_gauge gauge"]
    for index in range(series):
        level = rng.uniform(1, 1000)
        for i in range(samples):
            value = 0.0 if (i // 7 + index) % 3 == 0 else round(level + rng.gauss(0, 10), 3)
            lines.append(f'bench_gauge{{instance="node-{index}"}} {value!r} {(start_ms + i * STEP_MS) / 1000:.3f}')
    return "\n".join(lines) + "\n# EOF\n"


def server_cpu(url: str) -> float:
    with urllib.request.urlopen(f"{url}/metrics", timeout=10) as response:
        for line in response.read().decode().splitlines():
            if line.startswith("process_cpu_seconds_total "):
                return float(line.split()[1])
    raise RuntimeError("no process_cpu_seconds_total")


def measure(client: Client, url: str, streamed: bool, start_ms: int, end_ms: int, total: int, repeat: int) -> None:
    """read_raw in one mode, best of ``repeat``: wall, client and server CPU, bytes on the wire."""
    setattr(remote_read, "STREAMED", streamed)  # noqa: B010 - the mode switch
    matchers = [Matcher("__name__", "=", "bench_gauge")]
    read_raw(client, matchers, start_ms, end_ms)  # warm the server's caches (and compile the decoder)
    runs = []
    for _ in range(repeat):
        cpu_server, cpu_client, wall = server_cpu(url), time.process_time(), time.perf_counter()
        got = read_raw(client, matchers, start_ms, end_ms)
        wall = time.perf_counter() - wall
        runs.append((wall, time.process_time() - cpu_client, server_cpu(url) - cpu_server))
        assert sum(item.timestamps.size for item in got) == total, "not every sample came back"
    body = bytes(cramjam.snappy.compress_raw(remote_read.encode_read_request(matchers, start_ms, end_ms, streamed)))
    wire = len(client.request(f"{url}/api/v1/read", body, remote_read._HEADERS, "bench", 1 << 31, True))
    wall, cpu_client, cpu_server = min(runs)
    print(
        f"{'streamed' if streamed else 'samples '} read_raw, best of {repeat}: {wall:.3f}s wall, "
        f"{total / wall / 1e6:.2f} M samples/s; client CPU {cpu_client:.3f}s "
        f"({total / cpu_client / 1e6:.1f} M samples/s/core), server CPU {cpu_server:.2f}s "
        f"({total / max(cpu_server, 1e-9) / 1e6:.1f} M samples/s/core); {wire / 1e6:.1f} MB on the wire "
        f"({wire / total:.2f} bytes/sample)"
    )


def phases(client: Client, url: str, start_ms: int, end_ms: int, total: int, repeat: int) -> None:
    """The samples mode's client phases on one answer, and its vectorised decode against the Python fallback."""
    matchers = [Matcher("__name__", "=", "bench_gauge")]
    body = bytes(cramjam.snappy.compress_raw(remote_read.encode_read_request(matchers, start_ms, end_ms)))
    began = time.perf_counter()
    raw = client.request(f"{url}/api/v1/read", body, remote_read._HEADERS, "bench", 1 << 31, True)
    fetched = time.perf_counter() - began
    began = time.perf_counter()
    plain = remote_read._decompress(client, raw, "bench")
    unpacked = time.perf_counter() - began
    decode = []
    for _ in range(repeat):
        began = time.perf_counter()
        remote_read._decode(*plain)
        decode.append(time.perf_counter() - began)
    print(
        f"samples, one answer: {len(raw) / 1e6:.1f} MB snappy, {plain[1] / 1e6:.1f} MB protobuf "
        f"({plain[1] / total:.1f} bytes/sample); request {fetched:.3f}s, decompress {unpacked:.3f}s, "
        f"decode {statistics.median(decode):.3f}s ({total / statistics.median(decode) / 1e6:.1f} M samples/s)"
    )
    setattr(remote_read, "_ALL_SHAPES", 0)  # noqa: B010 - every sample through the Python fallback
    began = time.perf_counter()
    remote_read._decode(*plain)
    slow = time.perf_counter() - began
    print(f"decode with the per-sample Python fallback forced: {slow:.3f}s ({total / slow / 1e6:.2f} M samples/s)")
    print(f"vectorised / fallback decode speed: {slow / statistics.median(decode):.0f}x (back to back)")


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--series", type=int, default=300)
    parser.add_argument("--samples", type=int, default=5000)
    parser.add_argument("--repeat", type=int, default=3)
    parser.add_argument("--mode", choices=("both", "streamed", "samples"), default="both")
    args = parser.parse_args()
    total = args.series * args.samples
    end_ms = int(time.time()) // 3600 * 3600 * 1000 - 2 * 3600_000
    start_ms = end_ms - (args.samples - 1) * STEP_MS
    with tempfile.TemporaryDirectory(prefix="bench-remote-read-") as tmp:
        workdir = Path(tmp)
        began = time.monotonic()
        blocks = servers.backfill(openmetrics(args.series, args.samples, start_ms), workdir)
        print(
            f"backfilled {args.series} series x {args.samples} samples = {total:,} in {time.monotonic() - began:.1f}s"
        )
        with servers.prometheus(workdir, [], None, blocks, ("--storage.tsdb.retention.time=3650d",)) as prom:
            client = Client(Access(prom.url, timeout_s=300))
            for streamed in (True, False):
                if args.mode in ("both", "streamed" if streamed else "samples"):
                    measure(client, prom.url, streamed, start_ms, end_ms, total, args.repeat)
            if args.mode != "streamed":
                phases(client, prom.url, start_ms, end_ms, total, args.repeat)


if __name__ == "__main__":
    main()
