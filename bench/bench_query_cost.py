"""Benchmark: what candidate rule expressions cost a real Prometheus 2.42 on the 7,500-node data set.

For choosing between two forms of a rule (where a join goes, what is recorded first): the live-eval
bench's data (``bench.bench_live_eval``: every library series, the per-node specs' at ``--nodes``)
is backfilled for ``--history`` and scraped live, with no rules loaded; each query of the file is
then run as an instant query with ``stats=all``, ``--rounds`` times, interleaved (round 1 runs every
query once, then round 2, ...) so a noisy machine affects every query alike. Reported per query: the
median and the fastest evaluation time (Prometheus's own ``evalTotalTime``), the samples read, the
peak and the series out. A query with ``same_as: OTHER`` is checked to give OTHER's series and values
(within 1e-9 relative): the count of series only one side has and of values that differ, both 0.

The queries file (YAML): ``name: {expr: PROMQL, same_as: NAME}``; see ``bench/queries/``.
Usage:

    python bench/bench_query_cost.py bench/queries/pleg-join.yaml [--nodes 7500] [--rounds 9]
"""

from __future__ import annotations

import argparse
import json
import statistics
import sys
import tempfile
import time
import urllib.parse
import urllib.request
from pathlib import Path
from typing import Any

import yaml

REPO_ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(REPO_ROOT))

from bench.bench_backtest import library_series  # noqa: E402
from bench.bench_live_eval import Clock, Target, build_history, one, scrape, write_config  # noqa: E402
from compiler.pipeline import compile_specs  # noqa: E402
from tests import servers  # noqa: E402


def query(url: str, expr: str, stats: bool = False) -> Any:
    params = {"query": expr, **({"stats": "all"} if stats else {})}
    with urllib.request.urlopen(f"{url}/api/v1/query?{urllib.parse.urlencode(params)}", timeout=600) as answer:
        body = json.loads(answer.read())
    if body.get("status") != "success":
        raise RuntimeError(f"{expr}: {body}")
    return body["data"]


def differences(url: str, left: str, right: str) -> int:
    """Series only one side has, plus values that differ by more than 1e-9 relative (NaN equals NaN)."""
    checks = (
        f"count(({left}) unless ({right})) or vector(0)",
        f"count(({right}) unless ({left})) or vector(0)",
        f"count(abs(({left}) - ({right})) > 1e-9 * (abs({right}) + 1)) or vector(0)",
    )
    return sum(int(float(query(url, check)["result"][0]["value"][1])) for check in checks)


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("queries", type=Path, help="YAML: name: {expr: PROMQL, same_as: NAME}")
    parser.add_argument("--nodes", type=int, default=7500)
    parser.add_argument("--rounds", type=int, default=9)
    parser.add_argument("--history", type=int, default=20, help="minutes backfilled before now")
    args = parser.parse_args()
    queries: dict[str, dict[str, str]] = yaml.safe_load(args.queries.read_text(encoding="utf-8"))
    model, diagnostics = compile_specs(REPO_ROOT / "slo_specs")
    assert model is not None and not diagnostics, diagnostics.render()
    clock = Clock(720, time.time())
    every = library_series(model, args.nodes, clock.origin)
    with tempfile.TemporaryDirectory(prefix="bench-query-cost-") as temp:
        work = Path(temp)
        build = build_history(every, clock, args.history, work / "tsdb", work)
        print(f"data: {build.series:,} series ({args.nodes:,} nodes), {build.samples:,} samples backfilled")
        target = Target(every, clock)
        with servers.hostile(target.route, []) as target_url:
            target.body()
            config = work / "prometheus.yml"
            write_config(config, target_url, 30, [])
            port = servers.free_port()
            url = f"http://127.0.0.1:{port}"
            command = [
                "prometheus",
                f"--config.file={config}",
                f"--storage.tsdb.path={work / 'tsdb'}",
                f"--web.listen-address=127.0.0.1:{port}",
                "--storage.tsdb.retention.time=30d",
            ]
            with servers.process(command, work / "prometheus.log"):
                ready = servers.wait_until(
                    lambda: urllib.request.urlopen(f"{url}/-/ready", timeout=5).status == 200, 300
                )
                assert ready, (work / "prometheus.log").read_text(errors="replace")[-3000:]
                scraped = servers.wait_until(
                    lambda: one(scrape(url), "prometheus_target_interval_length_seconds_count") >= 2, 150
                )
                assert scraped, "the target was not scraped twice"
                seconds: dict[str, list[float]] = {name: [] for name in queries}
                last: dict[str, dict[str, Any]] = {}
                for _ in range(args.rounds):
                    for name, spec in queries.items():
                        data = query(url, spec["expr"], stats=True)
                        seconds[name].append(data["stats"]["timings"]["evalTotalTime"])
                        last[name] = data
                print("| Query | Median | Fastest | Samples read | Peak | Series out |")
                print("|---|---|---|---|---|---|")
                for name in queries:
                    samples = last[name]["stats"]["samples"]
                    print(
                        f"| {name} | {statistics.median(seconds[name]) * 1000:,.0f} ms "
                        f"| {min(seconds[name]) * 1000:,.0f} ms | {samples['totalQueryableSamples']:,} "
                        f"| {samples['peakSamples']:,} | {len(last[name]['result']):,} |"
                    )
                for name, spec in queries.items():
                    if "same_as" in spec:
                        found = differences(url, spec["expr"], queries[spec["same_as"]]["expr"])
                        print(f"{name} against {spec['same_as']}: {found} series or values differ")


if __name__ == "__main__":
    main()
