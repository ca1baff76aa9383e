"""Benchmark: compile N synthetic specs and compare with merely loading and schema-checking them.

Both phases run in the same process on the same files, so the ratio is meaningful on a
noisy shared machine even when the absolute times are not. Usage:

    python bench/bench_compile.py --specs 1000 [--repeat 3]
"""

from __future__ import annotations

import argparse
import os
import resource
import shutil
import sys
import tempfile
import time
from pathlib import Path

from compiler.diagnostics import Diagnostics
from compiler.pipeline import compile_specs, render
from compiler.source.load import load_tree
from compiler.source.schema import validate_document
from compiler.targets import fanout

OWNERS = """\
apiVersion: slo-compiler/v1
kind: Owners
teams:
  - {name: team-a, contact: "#a", receivers: {page: [{pagerduty: {routing_key_file: /s/a}}], ticket: [{webhook: {url: "http://x/a"}}]}}
  - {name: team-b, contact: "#b", receivers: {page: [{pagerduty: {routing_key_file: /s/b}}], ticket: [{webhook: {url: "http://x/b"}}]}}
"""

KINDS = (
    """\
sli:
  ratio:
    bad: 'coredns_dns_responses_total{{rcode="SERVFAIL",shard="{i}"}}'
    total: 'coredns_dns_responses_total{{shard="{i}"}}'
objective: {{target: 99.9%, period: 30d}}
normal_range: {{max: 0.01}}
""",
    """\
sli:
  latency:
    histogram: apiserver_request_sli_duration_seconds
    selector: '{{verb=~"LIST|GET",shard="{i}"}}'
    threshold:
      - {{when: '{{scope=~"resource|"}}', le: 1}}
      - {{when: '{{scope!~"resource|"}}', le: 30}}
    errors: 'apiserver_request_total{{code=~"5..",shard="{i}"}}'
objective: {{target: 99%, period: 28d}}
""",
    """\
sli:
  gauge:
    expr: 'sum by (cluster, resource) (rate(apiserver_request_total{{verb="LIST",shard="{i}"}}[2m]))'
unit: per_second
normal_range:
  min: 0.5
  max: 1000
  relative: {{offset: 1h, max_factor: 3, floor: 50}}
""",
)

SPEC = """\
apiVersion: slo-compiler/v1
kind: SLO
name: bench-{i:05d}
family: watch-list-volume
owner: team-{team}
description: Synthetic spec {i}.
slice:
  by: [cluster, resource]
  selector: '{{job="apiserver"}}'
{body}persistence: {{for: 10m}}
mitigation:
  summary: Do the thing.
  steps: [One, Two]
  stop_conditions: [Unless]
  escalation: Call someone.
"""


def write_specs(root: Path, count: int) -> None:
    (root / "owners.yaml").write_text(OWNERS, encoding="utf-8")
    for i in range(count):
        body = KINDS[i % len(KINDS)].format(i=i)
        text = SPEC.format(i=i, team="ab"[i % 2], body=body)
        (root / f"spec-{i:05d}.yaml").write_text(text, encoding="utf-8")


def load_and_schema_check(root: Path) -> int:
    diagnostics = Diagnostics()
    documents = load_tree(root, root, diagnostics)
    valid = sum(1 for document in documents if validate_document(document, diagnostics))
    assert not diagnostics, diagnostics.render()
    return valid


def full_compile(root: Path) -> int:
    """What ``generate`` runs before it writes: the pipeline's two calls (rendering on two cores past
    ``compiler.targets.fanout.MIN_SPECS`` specs, when the machine has them)."""
    model, diagnostics = compile_specs(root)
    assert model is not None, diagnostics.render()
    files = render(model, diagnostics)
    assert files and not diagnostics, diagnostics.render()
    return len(files)


def clear_compiler_caches() -> None:
    """Forget every memoised parse and rendering, so each timed run starts as a new process would."""
    for name, module in list(sys.modules.items()):
        if name != "compiler" and not name.startswith("compiler."):
            continue
        for value in vars(module).values():
            clear = getattr(value, "cache_clear", None)
            if callable(clear) and getattr(value, "__module__", None) == name:
                clear()


def best_of(repeat: int, function: object, root: Path) -> tuple[float, float]:
    """The fastest run's wall time, and the CPU it took in this process and the children it reaped."""
    assert callable(function)
    best, cpu = float("inf"), 0.0
    for _ in range(repeat):
        clear_compiler_caches()
        start, cpu_start = time.perf_counter(), _cpu()
        function(root)
        took = time.perf_counter() - start
        if took < best:
            best, cpu = took, _cpu() - cpu_start
    return best, cpu


def _cpu() -> float:
    mine, children = resource.getrusage(resource.RUSAGE_SELF), resource.getrusage(resource.RUSAGE_CHILDREN)
    return mine.ru_utime + mine.ru_stime + children.ru_utime + children.ru_stime


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--specs", type=int, default=1000)
    parser.add_argument("--repeat", type=int, default=3, help="take the best of this many runs of each phase")
    args = parser.parse_args()
    root = Path(tempfile.mkdtemp(prefix="slo-bench-"))
    try:
        write_specs(root, args.specs)
        full_compile(root)  # warm caches (schema compilation, imports) outside the timings
        load, _ = best_of(args.repeat, load_and_schema_check, root)
        total, cpu = best_of(args.repeat, full_compile, root)
    finally:
        shutil.rmtree(root)
    n = args.specs
    print(f"specs: {n} (best of {args.repeat}; cpu count {os.cpu_count()})")
    print(f"load + schema check: {load:.3f} s total, {load / n * 1000:.3f} ms/spec")
    per_spec = total / n * 1000
    print(f"full compile (load, check, model, every target): {total:.3f} s total, {per_spec:.3f} ms/spec")
    shared = "two processes" if fanout.worth_it(n) else "one process"
    print(f"  CPU: {cpu:.3f} s, rendering in {shared} (compiler/targets/fanout.py)")
    print(f"compile / load+schema ratio: {total / load:.2f}x (checks, PromQL, every output)")


if __name__ == "__main__":
    main()
