"""Benchmark: samples the library's rules read per evaluation in a real Prometheus, against the floor.

A synthetic history (``history`` below: every spec's generated-test inputs, one sample a
minute) is backfilled into a Prometheus 2.42 on loopback that runs every generated rule group.
Once each group has evaluated, every rule's expression is queried at the same instant with
``stats=all``: the server's own ``totalQueryableSamples`` is what that rule reads per evaluation.

The floor is each raw series a spec needs read once per evaluation: the samples of the longest
range any of its rules reads the series through (5m for the raw SLI rules), one sample for a
series only read instantly, each series counted once per spec whatever selectors match it.
Rules that read only recorded series are reported apart: their subqueries over recorded history
(the period's budget) read more as history accumulates, which a short synthetic run does not show.

Also prints the latency bad rate before (raw form, the count read three times) and after (the
recorded 5m total) on the same data. Usage:

    python bench/bench_rule_cost.py [--minutes 60] [--all] [--rules SPEC ...]

``--all`` lists every spec above its floor; ``--rules SPEC`` (repeatable) the samples each rule
of SPEC reads, to see which rule reads a series again.
"""

from __future__ import annotations

import argparse
import sys
import tempfile
import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import yaml

REPO_ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(REPO_ROOT))

from compiler.live.client import Access, Client  # noqa: E402
from compiler.model import SLO, LatencySLI, Model, queries, series  # noqa: E402
from compiler.model.links import rules_path  # noqa: E402
from compiler.model.reads import RawRead, raw_reads  # noqa: E402
from compiler.pipeline import compile_specs, render  # noqa: E402
from compiler.promql import format_duration  # noqa: E402
from compiler.targets.prometheus.proof.inputs import Inputs  # noqa: E402
from compiler.targets.prometheus.proof.timeline import Timeline  # noqa: E402
from tests import servers  # noqa: E402


def history(minutes: int, start: int) -> tuple[str, int]:
    """OpenMetrics for every library spec: slice a with a two-hour incident each day, b calm."""
    model, diagnostics = compile_specs(REPO_ROOT / "slo_specs")
    assert model is not None and not diagnostics, diagnostics.render()
    texts, specs = [], 0
    for slo in model.slos:
        try:
            inputs = Inputs(slo)
            wave = Timeline.constant(0.0, 0)
            for day in range(minutes // 1440 + 1):
                wave = wave.then(0.0, min(1320, minutes - day * 1440)).then(0.2, min(120, minutes - day * 1440 - 1320))
            timelines = {
                "a": wave,
                **({"b": Timeline.constant(0.0, len(wave.values) - 1)} if "b" in inputs.slices else {}),
            }
            text = inputs.openmetrics(timelines, start).removesuffix("# EOF\n")
            texts.append(text.replace('cluster="cluster-', f'cluster="s{specs}-cluster-'))  # each spec its clusters
            specs += 1
        except Exception:  # a spec whose inputs cannot take these values still gets replayed, on no data
            continue
    return _first_owner(texts) + "# EOF\n", specs


def _first_owner(texts: list[str]) -> str:
    """Keep one run of samples per series: the first spec's, in time order.

    Specs reading the same series synthesise it each, and a spec's inputs may write a series
    twice (a histogram's ``_count`` for each threshold): OpenMetrics needs each series' samples
    once, in increasing time, so a sample not after the series' last kept one is dropped.
    """
    owner: dict[str, int] = {}
    last: dict[str, float] = {}
    kept = []
    for index, text in enumerate(texts):
        for line in text.splitlines():
            if line.startswith("#"):
                continue
            series, _, stamp = line.rsplit(" ", 2)
            if owner.setdefault(series, index) != index or float(stamp) <= last.get(series, float("-inf")):
                continue
            last[series] = float(stamp)
            kept.append(line)
    return "\n".join(kept) + "\n"


FUTURE_S = 600  # the synthetic history reaches this far past the start, so every 5m window is full


@dataclass
class Cost:
    """Samples read per evaluation, summed over specs."""

    raw_rules: int = 0  # rules reading raw series (the 5m SLI rules, a gauge's expression)
    recorded_rules: int = 0  # rules reading only the group's own recorded series
    floor: int = 0
    latency_before: int = 0
    latency_after: int = 0
    latency_specs: int = 0
    per_spec: dict[str, tuple[int, int]] = field(default_factory=dict)  # spec: (raw-rule samples, floor)
    per_rule: dict[str, list[tuple[str, int, bool]]] = field(default_factory=dict)  # spec: (rule, samples, raw)


def samples(client: Client, expr: str, at: float) -> tuple[int, list[dict[str, Any]]]:
    """The samples the server read to evaluate ``expr`` at ``at``, and the result."""
    data = client.call("/api/v1/query", [("query", expr), ("time", f"{at:.3f}"), ("stats", "all")])
    stats = (data.get("stats") or {}).get("samples") or {}
    return int(stats.get("totalQueryableSamples", 0)), list(data.get("result") or [])


def floor(client: Client, reads: tuple[RawRead, ...], at: float) -> int:
    """Each series the reads match, read once: over the longest range it is read through, or one sample."""
    needed: dict[frozenset[tuple[str, str]], int] = {}
    for read in reads:
        range_ms = max(read.ranges_ms)
        expr = f"{read.selector}[{format_duration(range_ms)}]" if range_ms else read.selector
        _, result = samples(client, expr, at)
        for item in result:
            key = frozenset(item["metric"].items())
            count = len(item.get("values") or []) if range_ms else 1
            needed[key] = max(needed.get(key, 0), count)
    return sum(needed.values())


def measure_spec(client: Client, slo: SLO, rules: list[dict[str, Any]], at: float, cost: Cost) -> None:
    """Add one spec's rules, floor and (for a latency SLI) the bad rate before the fix to ``cost``."""
    recorded = {str(rule["record"]) for rule in rules if "record" in rule}
    spec_raw, spec_reads = 0, []
    for rule in rules:
        name, expr = str(rule.get("record") or rule.get("alert")), str(rule["expr"])
        read, _ = samples(client, expr, at)
        reads = raw_reads([(name, expr)], recorded)
        cost.per_rule.setdefault(slo.name, []).append((name, read, bool(reads)))
        if reads:
            spec_raw += read
            spec_reads.append((name, expr))
        else:
            cost.recorded_rules += read
        if isinstance(slo.sli, LatencySLI) and name == series.BAD_5M:
            before, _ = samples(client, queries.total_and_bad(slo, same_evaluation=False)[1], at)
            cost.latency_before += before
            cost.latency_after += read
            cost.latency_specs += 1
    spec_floor = floor(client, raw_reads(spec_reads, recorded), at)
    cost.raw_rules += spec_raw
    cost.floor += spec_floor
    cost.per_spec[slo.name] = (spec_raw, spec_floor)


def wait_evaluated(client: Client, groups: int, timeout_s: float) -> bool:
    """Whether every rule group has evaluated at least once within ``timeout_s``."""

    def done() -> bool:
        listed = client.call("/api/v1/rules", post=False)["groups"]
        return len(listed) == groups and all(not g["lastEvaluation"].startswith("0001") for g in listed)

    return servers.wait_until(done, timeout_s, interval=2)


def run(model: Model, files: dict[str, bytes], minutes: int) -> Cost:
    """Backfill, start Prometheus with every rule file, and measure once every group has run."""
    end = int(time.time()) // 60 * 60 + FUTURE_S
    text, _ = history(minutes, end - minutes * 60)
    cost = Cost()
    with tempfile.TemporaryDirectory() as tmp:
        workdir = Path(tmp)
        blocks = servers.backfill(text, workdir)
        rule_files = []
        for slo in model.slos:
            path = workdir / f"{slo.name}.rules.yaml"
            path.write_bytes(files[rules_path(slo)])
            rule_files.append(path)
        with servers.prometheus(workdir, rule_files, None, blocks) as prom:
            client = Client(Access(prom.url, timeout_s=120))
            if not wait_evaluated(client, len(model.slos), 180):
                raise SystemExit("not every rule group evaluated within 180 s")
            at = time.time()
            for slo in model.slos:
                rules = yaml.safe_load(files[rules_path(slo)])["groups"][0]["rules"]
                measure_spec(client, slo, rules, at, cost)
    return cost


def rules_report(cost: Cost, names: list[str]) -> str:
    """Per rule of each named spec: the samples it read, and whether it reads raw series."""
    lines = []
    for name in names:
        read, low = cost.per_spec.get(name, (0, 0))
        lines.append(f"{name}: {read:,} / {low:,}")
        for rule, samples_read, raw in cost.per_rule.get(name, []):
            lines.append(f"  {samples_read:>6,} {'raw' if raw else 'recorded'} {rule}")
    return "\n".join(lines)


def report(cost: Cost, specs: int, everything: bool = False) -> str:
    """The figures, the latency fix before and after, and the specs furthest above their floor."""
    ratio = cost.raw_rules / cost.floor if cost.floor else float("nan")
    before_total = cost.raw_rules - cost.latency_after + cost.latency_before
    lines = [
        f"samples per evaluation: {cost.raw_rules:,}, floor: {cost.floor:,}, ratio: {ratio:.2f} "
        f"(the rules reading raw series of {specs} specs; each needed raw series read once is the floor)",
        f"rules over recorded series only: {cost.recorded_rules:,} samples (grows with recorded history)",
        f"latency bad rate ({cost.latency_specs} specs): before {cost.latency_before:,} samples, "
        f"after {cost.latency_after:,}; all raw-reading rules before {before_total:,} "
        f"(ratio {before_total / cost.floor if cost.floor else float('nan'):.2f})",
        "above the floor:" if everything else "furthest above the floor:",
    ]
    worst = sorted(cost.per_spec.items(), key=lambda item: item[1][0] / max(item[1][1], 1), reverse=True)
    worst = [item for item in worst if item[1][0] > item[1][1]][: None if everything else 6]
    lines += [f"  {name}: {read:,} / {low:,} = {read / max(low, 1):.2f}" for name, (read, low) in worst]
    return "\n".join(lines)


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--minutes", type=int, default=60, help="synthetic history before the measurement")
    parser.add_argument("--all", action="store_true", help="list every spec above its floor, not the 6 furthest")
    parser.add_argument("--rules", action="append", default=[], metavar="SPEC", help="samples per rule of SPEC")
    args = parser.parse_args()
    model, diagnostics = compile_specs(REPO_ROOT / "slo_specs")
    assert model is not None and not diagnostics, diagnostics.render()
    files = render(model, diagnostics)
    began = time.monotonic()
    cost = run(model, files, args.minutes)
    print(report(cost, len(model.slos), args.all))
    if args.rules:
        print(rules_report(cost, args.rules))
    print(f"({time.monotonic() - began:.0f} s)")


if __name__ == "__main__":
    main()
