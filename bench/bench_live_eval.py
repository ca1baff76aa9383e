"""Benchmark: the whole library evaluated live by a real Prometheus 2.42 scraping a 7,500-node cluster.

The data set is the backtest bench's (``bench.bench_backtest.library_series``: every spec's series,
the per-node specs' replicated to ``--nodes`` nodes). Its per-minute day values and daily rise give
the sample of every series at any minute ``i`` after a fixed origin: ``day[(i - 1) % 1440] + rise *
((i - 1) // 1440)``. The origin is chosen from wall time so that the bench's start sits at minute
``--minute-of-day`` of the generated day (720 by default: calm, the incident is minutes 1320-1439)
of its second day (counters have risen for one day).

1. History: the ``--history`` before now (1h by default; the longest range any rule reads a raw
   metric over is 5m) is written as OpenMetrics, one file per 2h block, and built into blocks with
   ``promtool tsdb create-blocks-from openmetrics``; minutes that passed while it was built are built
   too, until the history ends at the current minute, so every window is full from the first
   evaluation. Nothing is cached: the blocks must end when Prometheus starts.
2. Live data: a loopback HTTP server in this process renders every series' value at the current
   minute (no timestamps: Prometheus stamps the scrape), scraped every ``--scrape-interval`` (30s,
   kube-prometheus-stack's default, which the project's scrape profile names) with ``honor_labels``.
3. Prometheus starts on those blocks with the scrape job and no rules; once it has scraped twice,
   its own ``process_cpu_seconds_total`` is read over ``--baseline`` (ingestion and compaction only).
   Then every ``generated/prometheus/rules/*.rules.yaml`` is loaded (``/-/reload``); once every group
   has evaluated (warm), ``/metrics`` is polled over ``--window``: each group's
   ``prometheus_rule_group_last_duration_seconds`` at every evaluation, against
   ``prometheus_rule_group_interval_seconds``; process CPU over the same length of window; failures.

Rule CPU per minute is given two ways: the process CPU with rules minus without (what the rules cost
the server, including writing the recorded series and any contention), and the sum of the groups'
evaluation durations per minute (wall time in the evaluator, which on a loaded machine includes
waiting for a core: the groups run at once, so it is CPU only when the server has cores to spare).
Prometheus inherits this process's niceness: when it gets less CPU than the rules need, groups overrun
their interval (the missed evaluations are printed) and the process CPU is a lower bound of the need.
Usage:

    python bench/bench_live_eval.py [--nodes 7500] [--history 1h] [--baseline 5m] [--window 5m]
"""

from __future__ import annotations

import argparse
import json
import os
import re
import resource
import statistics
import subprocess
import sys
import tempfile
import threading
import time
import urllib.parse
import urllib.request
from collections.abc import Iterator
from dataclasses import dataclass, field
from http.server import BaseHTTPRequestHandler
from pathlib import Path
from typing import Any

REPO_ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(REPO_ROOT))

from bench.bench_backtest import DAY_MIN, Day, _finish, _promtool, library_series  # noqa: E402
from compiler.model import Model  # noqa: E402
from compiler.pipeline import compile_specs  # noqa: E402
from compiler.promql import parse_duration  # noqa: E402
from tests import servers  # noqa: E402

BLOCK_S = 7200  # promtool's 2h blocks, aligned to the epoch
METRIC = re.compile(r"^([a-zA-Z_:][a-zA-Z0-9_:]*)(?:\{(.*)\})? (\S+)$")
LABEL = re.compile(r'([a-zA-Z_][a-zA-Z0-9_]*)="((?:[^"\\]|\\.)*)"')


class Clock:
    """Minute ``i`` of the data set starts at ``origin + 60 i``; its samples are the generator's."""

    def __init__(self, minute_of_day: int, now: float) -> None:
        first = DAY_MIN + minute_of_day + 1  # the minute the bench starts in: day 2, at minute_of_day
        self.origin = int(now // 60) * 60 - first * 60

    def minute(self, now: float) -> int:
        return int((now - self.origin) // 60)

    @staticmethod
    def value(day: Day, minute: int) -> float | None:
        values, rise = day
        sample = values[(minute - 1) % DAY_MIN]
        return None if sample is None else sample + rise * ((minute - 1) // DAY_MIN)


@dataclass
class Build:
    series: int = 0
    samples: int = 0
    passes: int = 0
    wall_s: float = 0.0
    promtool_cpu_s: float = 0.0
    first: int = 0  # minutes of the data set held in blocks: [first, end)
    end: int = 0


def build_history(every: dict[str, Day], clock: Clock, history_min: int, tsdb: Path, work: Path) -> Build:
    """Blocks from ``history_min`` minutes before now to the current minute, one OpenMetrics file per 2h
    block, promtool building one while the next is written; then again for the minutes that passed."""
    began, cpu = time.monotonic(), _children_cpu()
    build = Build(series=len(every))
    build.first = build.end = clock.minute(time.time()) - history_min
    while (now := clock.minute(time.time())) > build.end:
        running: tuple[subprocess.Popen[bytes], Path] | None = None
        for start, stop in _block_spans(clock, build.end, now):
            source = work / f"history-{start}.om"
            with source.open("w", encoding="utf-8") as out:
                for name, day in every.items():
                    lines = []
                    for minute in range(start, stop):
                        value = clock.value(day, minute)
                        if value is not None:
                            lines.append(f"{name} {value!r} {clock.origin + minute * 60}\n")
                    out.writelines(lines)
                    build.samples += len(lines)
                out.write("# EOF\n")
            _finish(running)
            running = _promtool(source, tsdb), source
        _finish(running)
        build.end, build.passes = now, build.passes + 1
    build.wall_s, build.promtool_cpu_s = time.monotonic() - began, _children_cpu() - cpu
    return build


def _block_spans(clock: Clock, start: int, stop: int) -> Iterator[tuple[int, int]]:
    """[start, stop) minutes cut where promtool's 2h blocks begin."""
    while start < stop:
        boundary = (clock.origin + start * 60) // BLOCK_S * BLOCK_S + BLOCK_S
        end = min(stop, (boundary - clock.origin) // 60)
        yield start, end
        start = end


class Target:
    """The cluster as a scrape target: every series' value at the current minute, rendered once a minute."""

    def __init__(self, every: dict[str, Day], clock: Clock) -> None:
        self.every, self.clock = every, clock
        self.lock = threading.Lock()
        self.rendered: tuple[int, bytes] = (-1, b"")
        self.render_s: list[float] = []

    def body(self) -> bytes:
        minute = self.clock.minute(time.time())
        with self.lock:
            if self.rendered[0] != minute:
                began = time.monotonic()
                lines = []
                for name, day in self.every.items():
                    value = self.clock.value(day, minute)
                    if value is not None:
                        lines.append(f"{name} {value!r}\n")
                self.rendered = (minute, "".join(lines).encode())
                self.render_s.append(time.monotonic() - began)
            return self.rendered[1]

    def route(self, handler: BaseHTTPRequestHandler) -> None:
        servers.send(handler, self.body(), headers={"Content-Type": "text/plain; version=0.0.4"})


@dataclass
class Group:
    name: str
    file: str
    interval_s: float
    durations: dict[float, float] = field(default_factory=dict)  # last evaluation time -> its duration
    failures: float = 0.0
    rules: int = 0

    def worst(self) -> float:
        return max(self.durations.values(), default=0.0)

    def mean(self) -> float:
        return statistics.fmean(self.durations.values()) if self.durations else 0.0


def scrape(url: str) -> dict[str, list[tuple[dict[str, str], float]]]:
    """Prometheus's own /metrics, by name: each series' labels and value."""
    with urllib.request.urlopen(f"{url}/metrics", timeout=60) as response:
        text = response.read().decode()
    found: dict[str, list[tuple[dict[str, str], float]]] = {}
    for line in text.splitlines():
        if line and not line.startswith("#") and (match := METRIC.match(line)):
            labels = dict(LABEL.findall(match.group(2) or ""))
            found.setdefault(match.group(1), []).append((labels, float(match.group(3))))
    return found


def one(metrics: dict[str, list[tuple[dict[str, str], float]]], name: str, **labels: str) -> float:
    return sum(value for found, value in metrics.get(name, []) if labels.items() <= found.items())


def by_group(metrics: dict[str, list[tuple[dict[str, str], float]]], name: str) -> dict[str, float]:
    return {labels["rule_group"]: value for labels, value in metrics.get(name, [])}


def write_config(path: Path, target: str, scrape_s: int, rule_files: list[Path]) -> None:
    config = {
        "global": {
            "scrape_interval": f"{scrape_s}s",
            "scrape_timeout": f"{scrape_s - 5}s",
            "evaluation_interval": "1m",
        },
        "rule_files": [str(file) for file in rule_files],
        "scrape_configs": [
            {
                "job_name": "bench-cluster",
                "honor_labels": True,
                "static_configs": [{"targets": [target.removeprefix("http://")]}],
            }
        ],
    }
    path.write_text(json.dumps(config), encoding="utf-8")


def cpu_window(url: str, seconds: float) -> tuple[float, float]:
    """Prometheus's process CPU seconds over the next ``seconds``, and the wall seconds it covered."""
    first, began = one(scrape(url), "process_cpu_seconds_total"), time.monotonic()
    time.sleep(seconds)
    return one(scrape(url), "process_cpu_seconds_total") - first, time.monotonic() - began


def watch_groups(url: str, seconds: float) -> tuple[dict[str, Group], float, float]:
    """Poll /metrics over ``seconds``: every group's duration at each of its evaluations; the process CPU
    and wall seconds of the window."""
    groups: dict[str, Group] = {}
    began, first_cpu = time.monotonic(), None
    metrics: dict[str, list[tuple[dict[str, str], float]]] = {}
    while True:
        metrics = scrape(url)
        if first_cpu is None:
            first_cpu = one(metrics, "process_cpu_seconds_total")
        stamps = by_group(metrics, "prometheus_rule_group_last_evaluation_timestamp_seconds")
        durations = by_group(metrics, "prometheus_rule_group_last_duration_seconds")
        for key, interval in by_group(metrics, "prometheus_rule_group_interval_seconds").items():
            file, _, name = key.rpartition(";")
            group = groups.setdefault(key, Group(name, Path(file).name, interval))
            if stamps.get(key, 0) > 0:
                group.durations[stamps[key]] = durations[key]
        if time.monotonic() - began >= seconds:
            break
        time.sleep(min(10.0, max(0.0, seconds - (time.monotonic() - began))))
    for key, value in by_group(metrics, "prometheus_rule_evaluation_failures_total").items():
        groups[key].failures = value
    for key, value in by_group(metrics, "prometheus_rule_group_rules").items():
        groups[key].rules = int(value)
    return groups, one(metrics, "process_cpu_seconds_total") - (first_cpu or 0.0), time.monotonic() - began


def warm(url: str, timeout_s: float) -> float:
    """Wait until every loaded group has evaluated once, then for one more evaluation of each; seconds."""
    began = time.monotonic()

    def evaluated(after: dict[str, float]) -> dict[str, float] | None:
        stamps = by_group(scrape(url), "prometheus_rule_group_last_evaluation_timestamp_seconds")
        done = stamps and all(stamp > after.get(key, 0) for key, stamp in stamps.items())
        return stamps if done else None

    first: dict[str, float] = {}
    if not servers.wait_until(lambda: first.update(evaluated({}) or {}) or bool(first), timeout_s, 5):
        raise RuntimeError("the rule groups did not all evaluate")
    again: dict[str, float] = {}
    if not servers.wait_until(lambda: again.update(evaluated(first) or {}) or bool(again), timeout_s, 5):
        raise RuntimeError("the rule groups did not all evaluate twice")
    return time.monotonic() - began


def get_json(url: str, timeout: float = 120) -> Any:
    with urllib.request.urlopen(url, timeout=timeout) as response:
        return json.loads(response.read())


def profile(url: str, groups: list[Group], count: int) -> list[str]:
    """For each of the ``count`` costliest groups, its costliest rules (/api/v1/rules' own evaluation
    time) and what their expression reads as an instant query with stats=all."""
    rules = {(Path(g["file"]).name, g["name"]): g["rules"] for g in get_json(f"{url}/api/v1/rules")["data"]["groups"]}
    lines = []
    for group in groups[:count]:
        costly = sorted(rules.get((group.file, group.name), []), key=lambda rule: -rule["evaluationTime"])[:2]
        for rule in costly:
            query = urllib.parse.urlencode({"query": rule["query"], "stats": "all"})
            answer = get_json(f"{url}/api/v1/query?{query}")["data"]
            stats = answer.get("stats", {})
            timings, samples = stats.get("timings", {}), stats.get("samples", {})
            lines.append(
                f"  {group.name}: {rule.get('name')} took {rule['evaluationTime'] * 1000:.0f} ms in the group; "
                f"as a query {timings.get('evalTotalTime', 0) * 1000:.0f} ms, "
                f"{samples.get('totalQueryableSamples', 0):,} samples read, "
                f"{samples.get('peakSamples', 0):,} peak, {len(answer['result']):,} series out"
                + (f", {len(rule['alerts']):,} alerts active" if rule.get("type") == "alerting" else "")
            )
    return lines


def rule_problems(url: str) -> list[str]:
    """Every rule whose last evaluation failed (a query limit shows here), with its error."""
    problems = []
    for group in get_json(f"{url}/api/v1/rules")["data"]["groups"]:
        for rule in group["rules"]:
            if rule.get("health") != "ok" or rule.get("lastError"):
                problems.append(f"  {group['name']}: {rule.get('name')}: {rule.get('health')} {rule.get('lastError')}")
    return problems


def vm_hwm_mb(pid: int) -> float:
    for line in Path(f"/proc/{pid}/status").read_text(encoding="utf-8").splitlines():
        if line.startswith("VmHWM:"):
            return int(line.split()[1]) / 1024
    return 0.0


def _children_cpu() -> float:
    usage = resource.getrusage(resource.RUSAGE_CHILDREN)
    return usage.ru_utime + usage.ru_stime


def settle_seconds(model: Model, text: str) -> float:
    """``--settle``: a duration, or (auto) the longest ``for`` of a fleet's page plus two evaluations."""
    if text != "auto":
        return _seconds(text)
    longest = max(
        (slo.critical_range.for_ms for slo in model.slos if slo.fleet is not None and slo.critical_range is not None),
        default=0,
    )
    return (longest + 2 * model.project.evaluation_interval_ms) / 1000


def _seconds(text: str) -> float:
    return (parse_duration(text) or 0) / 1000


def table(groups: list[Group]) -> list[str]:
    lines = [
        "| Rule group | Rules | Interval | Last | Mean | Worst | Worst / interval |",
        "|---|---|---|---|---|---|---|",
    ]
    for group in groups:
        last = group.durations[max(group.durations)] if group.durations else 0.0
        lines.append(
            f"| {group.name} | {group.rules} | {group.interval_s:g}s | {last * 1000:.1f} ms | "
            f"{group.mean() * 1000:.1f} ms | {group.worst() * 1000:.1f} ms | {group.worst() / group.interval_s:.2%} |"
        )
    return lines


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--nodes", type=int, default=7500, help="nodes of the per-node specs")
    parser.add_argument("--history", default="1h", help="backfilled before now (rate windows need it)")
    parser.add_argument("--minute-of-day", type=int, default=720, help="the generated day's minute at the start")
    parser.add_argument("--scrape-interval", default="30s")
    parser.add_argument("--baseline", default="5m", help="process CPU measured without rules over this")
    parser.add_argument("--window", default="5m", help="groups and process CPU measured with rules over this")
    parser.add_argument(
        "--settle",
        default="auto",
        help="wait this long after the groups are warm before measuring; auto: the longest for of a fleet's "
        "page plus two evaluations (the steady state: each slice that pages holds its unit tickets back)",
    )
    parser.add_argument("--top", type=int, default=40, help="groups in the table (worst first); 0: all")
    parser.add_argument("--profile", type=int, default=5, help="groups whose costliest rules are profiled")
    parser.add_argument(
        "--rules", type=Path, default=REPO_ROOT / "generated/prometheus/rules", help="the *.rules.yaml loaded"
    )
    args = parser.parse_args()
    began = time.monotonic()
    model, diagnostics = compile_specs(REPO_ROOT / "slo_specs")
    assert model is not None and not diagnostics, diagnostics.render()
    rule_files = sorted(args.rules.glob("*.rules.yaml"))
    clock = Clock(args.minute_of_day, time.time())
    every = library_series(model, args.nodes, clock.origin)  # clocks and expiry times read as wall time
    generated_s = time.monotonic() - began
    scrape_s = int(_seconds(args.scrape_interval))
    with tempfile.TemporaryDirectory(prefix="bench-live-eval-") as temp:
        work = Path(temp)
        build = build_history(every, clock, int(_seconds(args.history) // 60), work / "tsdb", work)
        print(
            f"data: {build.series:,} series ({args.nodes:,} nodes for per-node specs), "
            f"generated in {generated_s:.0f} s; "
            f"history {build.end - build.first} min to minute {(build.end - 1) % DAY_MIN} of the day "
            f"({build.samples:,} samples) built in {build.wall_s:.0f} s wall, {build.promtool_cpu_s:.0f} s CPU in "
            f"promtool, {build.passes} pass(es)"
        )
        target = Target(every, clock)
        with servers.hostile(target.route, []) as target_url:
            target.body()
            config = work / "prometheus.yml"
            write_config(config, target_url, scrape_s, [])
            port = servers.free_port()
            command = [
                "prometheus",
                f"--config.file={config}",
                f"--storage.tsdb.path={work / 'tsdb'}",
                f"--web.listen-address=127.0.0.1:{port}",
                "--web.enable-lifecycle",
                "--storage.tsdb.retention.time=30d",
            ]
            url = f"http://127.0.0.1:{port}"
            with servers.process(command, work / "prometheus.log") as proc:
                ready = servers.wait_until(
                    lambda: urllib.request.urlopen(f"{url}/-/ready", timeout=5).status == 200, 300
                )
                if not ready or proc.poll() is not None:
                    raise RuntimeError((work / "prometheus.log").read_text(errors="replace")[-3000:])
                scraped = servers.wait_until(
                    lambda: one(scrape(url), "prometheus_target_interval_length_seconds_count") >= 2, 5 * scrape_s
                )
                assert scraped, "the target was not scraped twice"
                ingest_s = time.monotonic() - began
                base_cpu, base_wall = cpu_window(url, _seconds(args.baseline))
                write_config(config, target_url, scrape_s, rule_files)
                urllib.request.urlopen(urllib.request.Request(f"{url}/-/reload", method="POST"), timeout=120)
                warm_s = warm(url, 600)
                settle_s = settle_seconds(model, args.settle)
                print(f"groups warm {warm_s:.0f} s after loading; settling {settle_s:.0f} s before measuring")
                time.sleep(settle_s)
                groups, rules_cpu, rules_wall = watch_groups(url, _seconds(args.window))
                metrics = scrape(url)
                problems, worst = rule_problems(url), sorted(groups.values(), key=lambda g: -g.worst() / g.interval_s)
                alerts = get_json(f"{url}/api/v1/query?query=count+by+(alertstate)+(ALERTS)")["data"]["result"]
                print(
                    "alerts active at the end: "
                    + (", ".join(f"{a['value'][1]} {a['metric']['alertstate']}" for a in alerts) or "none")
                )
                profiled = profile(url, worst, args.profile)
                report(args, worst, metrics, problems, profiled, target)
                base_per_min, rules_per_min = base_cpu / base_wall * 60, rules_cpu / rules_wall * 60
                durations_per_min = sum(g.mean() * 60 / g.interval_s for g in worst)
                print(
                    f"Prometheus process CPU: {base_per_min:.2f} s/min without rules ({base_wall:.0f} s window), "
                    f"{rules_per_min:.2f} s/min with rules ({rules_wall:.0f} s window): rules cost "
                    f"{rules_per_min - base_per_min:.2f} s of CPU per minute; sum of group durations "
                    f"{durations_per_min:.2f} s per minute"
                )
                print(
                    f"Prometheus peak RSS (VmHWM) {vm_hwm_mb(proc.pid):,.0f} MB; head series "
                    f"{one(metrics, 'prometheus_tsdb_head_series'):,.0f}; ready for the baseline {ingest_s:.0f} s "
                    f"after the start, groups warm {warm_s:.0f} s after loading; bench process peak RSS "
                    f"{resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024:,.0f} MB; "
                    f"total {time.monotonic() - began:.0f} s; load {os.getloadavg()[0]:.2f}"
                )


def report(
    args: argparse.Namespace,
    worst: list[Group],
    metrics: dict[str, list[tuple[dict[str, str], float]]],
    problems: list[str],
    profiled: list[str],
    target: Target,
) -> None:
    over = [g for g in worst if g.worst() > 0.05 * g.interval_s]
    evaluations = min((len(g.durations) for g in worst), default=0)
    print(
        f"{len(worst)} rule groups, {sum(g.rules for g in worst)} rules, at least {evaluations} evaluations of "
        f"each in the {args.window} window; worst first:"
    )
    print("\n".join(table(worst[: args.top or None])))
    if args.top and len(worst) > args.top:
        rest = worst[args.top]
        print(f"(and {len(worst) - args.top} more groups, each at most {rest.worst() / rest.interval_s:.2%})")
    verdict = (
        "every group at most 5% of its interval" if not over else f"{len(over)} group(s) over 5% of their interval"
    )
    print(f"{verdict}; worst {worst[0].name if worst else '-'} at {worst[0].worst() / worst[0].interval_s:.2%}")
    failures = one(metrics, "prometheus_rule_evaluation_failures_total")
    missed = by_group(metrics, "prometheus_rule_group_iterations_missed_total")
    late = sorted((value, key.rpartition(";")[2]) for key, value in missed.items() if value)
    print(
        f"rule evaluation failures: {failures:.0f}; rules unhealthy at the end: {len(problems)}; evaluations missed "
        f"(a group still running when its next was due) since loading: {sum(missed.values()):.0f}"
        + (f", most in {late[-1][1]} ({late[-1][0]:.0f})" if late else "")
    )
    print("\n".join(problems[:20]))
    print("costliest rules of the worst groups:")
    print("\n".join(profiled))
    render = statistics.fmean(target.render_s) if target.render_s else 0.0
    print(f"target rendered {len(target.render_s)} times, {render:.2f} s each (this process, not Prometheus)")


if __name__ == "__main__":
    main()
