"""When do alerts really fire? First-fire minutes measured with the real promtool.

The generated tests prove that each alert fires by the minute the compiler predicts; this
module asks the other question, for people comparing rules (ours before and after a change,
ours against another generator's): given rule files and raw input series, at which minute
does each alert series first fire? ``first_fire_minutes`` answers it with ``promtool test
rules`` (2.42 has no query tool over a unit test's storage, so the answer is read from the
failure report of an expectation that cannot hold).

``python bench/burn_timing.py`` measures the default burn policy on a 99.9%/30d ratio SLO:
good traffic for longer than the longest window, then a step to an error ratio of 1.1x, 2x
and 10x each pair's threshold and to 100% errors, and prints each pair's first-fire minute
after the step next to the SRE-workbook time (``workbook_minutes``) plus its ``for``.
"""

from __future__ import annotations

import argparse
import math
import re
import subprocess
import sys
import tempfile
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from pathlib import Path

import yaml

CHUNK_MIN = 1000  # subquery points per expectation: promtool loads at most 10,000 samples per query
RATE_PER_MIN = 6000.0  # 100 requests per second
_GOT = re.compile(r"(\{[^{}]*\}) (-?[0-9.]+E[+-][0-9]+)")


@dataclass(frozen=True)
class InputSeries:
    """One raw input series in promtool's expanding notation, sampled every minute from minute 0."""

    series: str
    values: str


def first_fire_minutes(
    rule_files: Sequence[Path],
    inputs: Sequence[InputSeries],
    end_min: int,
    prove: Callable[[Path], subprocess.CompletedProcess[str]] | None = None,
) -> dict[str, int]:
    """Each alert series (its labels as promtool prints them) and the first minute it is firing, up to ``end_min``.

    Alerts that never fire by ``end_min`` are absent from the result. Evaluation runs every
    minute, as the generated tests do. ``prove`` runs ``promtool test rules`` on the test file it is given
    (the tests pass theirs, which reuses a verdict promtool gave on the same files before).
    """
    with tempfile.TemporaryDirectory(prefix="burn-timing-") as tmp:
        test = Path(tmp) / "timing.test.yaml"
        test.write_text(yaml.safe_dump(_test_document(rule_files, inputs, end_min), sort_keys=False))
        result = (prove or _promtool)(test)
    if "FAILED" not in result.stdout + result.stderr:
        raise RuntimeError(f"promtool did not report the samples:\n{result.stdout}\n{result.stderr}")
    found: dict[str, int] = {}
    for labels, value in _GOT.findall(result.stderr):
        minute = round(float(value) / 60)
        found[labels] = min(found.get(labels, minute), minute)
    if not found and "got: []" not in result.stderr:
        raise RuntimeError(f"promtool failed for another reason:\n{result.stderr[-3000:]}")
    return found


def _promtool(test: Path) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        ["promtool", "test", "rules", test.name], cwd=test.parent, capture_output=True, text=True, timeout=3600
    )


def _test_document(rule_files: Sequence[Path], inputs: Sequence[InputSeries], end_min: int) -> dict[str, object]:
    """A test whose expectations cannot hold: each reports the firing timestamps of one chunk of minutes."""
    expr = f'min_over_time(timestamp(ALERTS{{alertstate="firing"}})[{CHUNK_MIN}m:1m])'
    checks = [
        {"expr": expr, "eval_time": f"{end}m", "exp_samples": [{"labels": "never", "value": -1}]}
        for end in range(CHUNK_MIN, end_min + CHUNK_MIN, CHUNK_MIN)
    ]
    return {
        "rule_files": [str(path.resolve()) for path in rule_files],
        "evaluation_interval": "1m",
        "tests": [
            {
                "interval": "1m",
                "input_series": [{"series": item.series, "values": item.values} for item in inputs],
                "promql_expr_test": checks,
            }
        ],
    }


def by_pair(found: dict[str, int]) -> dict[str, int]:
    """``{"1h/5m": minute}``: the first-fire minutes of burn alerts keyed by their window labels."""
    pairs = {}
    for labels, minute in found.items():
        long_w = re.search(r'long_window="([^"]+)"', labels)
        short_w = re.search(r'short_window="([^"]+)"', labels)
        if long_w and short_w:
            pairs[f"{long_w.group(1)}/{short_w.group(1)}"] = minute
    return pairs


def workbook_minutes(threshold: float, long_min: int, short_min: int, error_ratio: float) -> float:
    """The SRE-workbook detection time of a step from 0 to ``error_ratio`` under steady traffic.

    Each window's error ratio is the share of its events since the step times the ratio, so
    the long window crosses the threshold after ``threshold x long / error_ratio`` and the
    short window after ``threshold x short / error_ratio``; both must hold.
    """
    return max(threshold * long_min, threshold * short_min) / error_ratio


def step_inputs(history_min: int, error_ratio: float, end_min: int, labels: str = '{cluster="a"}') -> list[InputSeries]:
    """100 req/s from minute 0, all good for ``history_min``, then ``error_ratio`` of them bad."""
    after = end_min - history_min
    bad = RATE_PER_MIN * error_ratio
    return [
        InputSeries(f"requests_total{labels}", f"0+{RATE_PER_MIN:g}x{end_min}"),
        InputSeries(f"errors_total{labels}", f"0x{history_min} {bad!r}+{bad!r}x{after - 1}"),
    ]


# -- the default policy on a 99.9%/30d ratio SLO ------------------------------------------------------------

OWNERS = """\
apiVersion: slo-compiler/v1
kind: Owners
teams:
  - name: team-a
    contact: "#a"
    receivers:
      page: [{webhook: {url: "http://127.0.0.1:9/p"}}]
      ticket: [{webhook: {url: "http://127.0.0.1:9/t"}}]
"""
PROJECT = """\
apiVersion: slo-compiler/v1
kind: Project
runbook_base_url: https://runbooks.example.com/slo
evaluation_interval: 1m
"""
SPEC = """\
apiVersion: slo-compiler/v1
kind: SLO
name: burn-timing
family: node-network-errors
owner: team-a
description: Errors over requests, for measuring when the burn pairs fire.
slice: {{by: [cluster]}}
sli: {{ratio: {{bad: errors_total, total: requests_total}}}}
objective: {{target: 99.9%, period: 30d{extra}}}
mitigation: {{summary: Nothing., steps: [Nothing.], stop_conditions: [Nothing.], escalation: Nobody.}}
"""


def compile_spec(workdir: Path, objective_extra: str = "") -> Path:
    """Compile the measurement spec with this checkout's compiler; the path of its rules file."""
    specs = workdir / "specs"
    specs.mkdir(parents=True, exist_ok=True)
    (specs / "owners.yaml").write_text(OWNERS)
    (specs / "project.yaml").write_text(PROJECT)
    (specs / "burn-timing.yaml").write_text(SPEC.format(extra=objective_extra))
    out = workdir / "out"
    subprocess.run(
        [sys.executable, "-m", "compiler", "generate", "--specs", str(specs), "--out", str(out)],
        check=True,
        capture_output=True,
        cwd=Path(__file__).resolve().parent.parent,
    )
    return out / "prometheus" / "rules" / "burn-timing.rules.yaml"


@dataclass(frozen=True)
class Pair:
    name: str  # "1h/5m"
    long_min: int
    short_min: int
    threshold: float
    for_min: int


def pairs_of(rules: Path) -> list[Pair]:
    """The burn pairs of a compiled rules file, read from its alert labels and expressions."""
    found = []
    for rule in yaml.safe_load(rules.read_text())["groups"][0]["rules"]:
        labels = rule.get("labels", {})
        if "long_window" not in labels:
            continue
        threshold = float(re.findall(r"> ([0-9.e-]+)", rule["expr"])[0])
        found.append(
            Pair(
                f"{labels['long_window']}/{labels['short_window']}",
                _minutes(labels["long_window"]),
                _minutes(labels["short_window"]),
                threshold,
                _minutes(rule.get("for", "0m")),
            )
        )
    return found


def _minutes(text: str) -> int:
    units = {"m": 1, "h": 60, "d": 1440}
    return sum(int(n) * units[u] for n, u in re.findall(r"(\d+)([mhd])", text))


def measure(rules: Path, pair: Pair, error_ratio: float, margin_min: int = 90) -> tuple[float, int | None]:
    """(workbook minute + ``for``, measured first-fire minute), both counted from the step."""
    history = pair.long_min + 60
    expected = workbook_minutes(pair.threshold, pair.long_min, pair.short_min, error_ratio) + pair.for_min
    end = history + math.ceil(expected) + margin_min
    fired = by_pair(first_fire_minutes([rules], step_inputs(history, error_ratio, end), end)).get(pair.name)
    return expected, None if fired is None else fired - history


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--levels", default="1.1,2,10", help="multiples of each pair's threshold")
    parser.add_argument("--objective", default="", help="extra objective fields, e.g. ', traffic_guard: false'")
    args = parser.parse_args()
    with tempfile.TemporaryDirectory(prefix="burn-timing-") as tmp:
        rules = compile_spec(Path(tmp), args.objective)
        print("| Pair | for | error ratio | workbook + for (min) | fires at (min) | late by |")
        print("|---|---|---|---|---|---|")
        for pair in pairs_of(rules):
            ratios = [float(level) * pair.threshold for level in args.levels.split(",")] + [1.0]
            for ratio in ratios:
                expected, fired = measure(rules, pair, ratio)
                late = "never" if fired is None else f"{fired - expected:+.2f}"
                label = "100%" if ratio == 1.0 else f"{ratio / pair.threshold:g}x ({ratio:.4%})"
                print(f"| {pair.name} | {pair.for_min}m | {label} | {expected:.2f} | {fired} | {late} |", flush=True)


if __name__ == "__main__":
    main()
