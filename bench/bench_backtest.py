"""Benchmark: backtest the whole library against a real Prometheus holding synthetic history.

Every spec of ``slo_specs/`` gets the generated tests' own inputs (slices a and b, one sample per
minute) for ``--days`` days, backfilled into a Prometheus 2.42 on loopback; then every spec is
replayed over the last ``--replay`` with ``--warmup`` before it. Prints the wall and CPU time
(CPU: this process, i.e. the in-memory stage), the range queries and the raw samples the server
read (its own query stats). Usage:

    python bench/bench_backtest.py [--days 2] [--replay 1d] [--warmup 1d]
"""

from __future__ import annotations

import argparse
import sys
import tempfile
import time
from pathlib import Path

REPO_ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(REPO_ROOT))

from compiler.live.backtest import Backtest  # noqa: E402
from compiler.live.client import Access, Client  # noqa: E402
from compiler.model.budget import estimate  # noqa: E402
from compiler.model.links import rules_path  # noqa: E402
from compiler.pipeline import compile_specs, render  # noqa: E402
from compiler.plan import plan  # noqa: E402
from compiler.promql import parse_duration  # noqa: E402
from compiler.targets.prometheus.proof.inputs import Inputs  # noqa: E402
from compiler.targets.prometheus.proof.timeline import Timeline  # noqa: E402
from tests import engines  # noqa: E402


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
    """Specs reading the same series synthesise it each; keep the first spec's samples of each series."""
    owner: dict[str, int] = {}
    kept = []
    for index, text in enumerate(texts):
        for line in text.splitlines():
            if line.startswith("#"):
                continue
            series = line.rsplit(" ", 2)[0]
            if owner.setdefault(series, index) == index:
                kept.append(line)
    return "\n".join(kept) + "\n"


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--days", type=float, default=2)
    parser.add_argument("--replay", default="1d")
    parser.add_argument("--warmup", default="1d")
    args = parser.parse_args()
    end = int(time.time()) // 60 * 60
    minutes = int(args.days * 1440)
    text, fed = history(minutes, end - minutes * 60)
    model, diagnostics = compile_specs(REPO_ROOT / "slo_specs")
    assert model is not None
    files = render(model, diagnostics)
    with tempfile.TemporaryDirectory() as tmp:
        began = time.monotonic()
        blocks = engines.backfill(text, Path(tmp))
        print(f"backfilled {text.count(chr(10))} samples for {fed} spec(s) in {time.monotonic() - began:.1f} s")
        with engines.prometheus(Path(tmp), [], None, blocks) as prom:
            replay_ms, warmup_ms = parse_duration(args.replay) or 0, parse_duration(args.warmup) or 0
            replay = Backtest(Client(Access(prom.url, timeout_s=300)), end * 1000 - replay_ms, end * 1000, warmup_ms)
            wall, cpu = time.monotonic(), time.process_time()
            for spec in plan(model):
                limit = estimate(spec.slo, model.project.cluster_profile).budget
                replay.run_spec(spec, files[rules_path(spec.slo)], model.project.evaluation_interval_ms, limit)
            wall, cpu = time.monotonic() - wall, time.process_time() - cpu
    result = replay.result
    print(
        f"backtest of {len(model.slos)} specs over {args.replay} (+{args.warmup} warm-up) at 1m: {wall:.1f} s wall, "
        f"{cpu:.1f} s CPU in process, {result.queries} requests, {result.samples_read} samples read, "
        f"{len(result.intervals)} firing interval(s), {len(result.problems)} problem(s)"
    )
    for problem in result.problems:
        print(f"  problem: {problem}")


if __name__ == "__main__":
    main()
