"""``slo-compiler test``: the proof a user's CI runs, with the real promtool and amtool.

The generated promtool tests (``prometheus/tests/*.test.yaml`` and the heartbeat's) run one
promtool process per file, a few at a time; each failure (an expression or an alert at a time) is
traced back to the named test groups of that file. Every case of
``alertmanager/routing-tests.yaml`` is resolved by ``amtool config routes test`` against the
generated ``alertmanager.yaml`` and must reach exactly its receivers, in order.

Time is bounded twice (``Limits``): each promtool process by ``--promtool-timeout`` and the whole
run by ``--timeout``. A process past either is killed and its file named; what the run's deadline
left unstarted is counted as not run. Either makes the run a timeout (exit 2), not a failure.
"""

from __future__ import annotations

import json
import os
import re
import shutil
import subprocess
import time
from collections.abc import Sequence
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import yaml

from compiler.promql import format_duration, parse_duration
from compiler.targets.alertmanager import matcher
from compiler.text.terminal import printable
from compiler.text.yamlin import load_own

INSTALL_HINT = {
    "promtool": "install Prometheus's promtool (Debian/Ubuntu: apt-get install prometheus; or the release archive "
    "from https://prometheus.io/download/) and put it on PATH",
    "amtool": "install Alertmanager's amtool (Debian/Ubuntu: apt-get install prometheus-alertmanager; or the "
    "release archive from https://prometheus.io/download/) and put it on PATH",
}
ROUTING_TESTS = Path("alertmanager") / "routing-tests.yaml"
CONFIG = Path("alertmanager") / "alertmanager.yaml"
TEST_GLOBS = ("prometheus/tests/*.test.yaml", "prometheus/heartbeat/*.test.yaml")
AMTOOL_WORKERS = 4
PROMTOOL_WORKERS = max(1, min(4, os.cpu_count() or 1))
DEFAULT_TIMEOUT_MS = 30 * 60_000  # the whole run (the library's 95 files took 8-10 minutes on 2 loaded cores)
DEFAULT_PROMTOOL_TIMEOUT_MS = 10 * 60_000  # one promtool process (one test file)
# Failures promtool 2.x prints: `expr: "<quoted>", time: <duration>,` and `alertname: <name>, time: <duration>,`.
_EXPR_FAILURE = re.compile(r'^\s*expr: ("(?:[^"\\]|\\.)*"), time: ([0-9a-z]+)', re.MULTILINE)
_ALERT_FAILURE = re.compile(r"^\s*alertname: ([^,\s]+), time: ([0-9a-z]+)", re.MULTILINE)
_FILE_HEADER = re.compile(r"^Unit Testing:\s+(.+)$", re.MULTILINE)


class ToolMissingError(Exception):
    """promtool or amtool is not on PATH (a usage error: exit 2)."""


@dataclass(frozen=True)
class Limits:
    """The run's bounds in milliseconds, and its deadline on the monotonic clock."""

    run_ms: int = DEFAULT_TIMEOUT_MS
    promtool_ms: int = DEFAULT_PROMTOOL_TIMEOUT_MS
    deadline: float = field(default=0.0, compare=False)

    @classmethod
    def starting_now(cls, run_ms: int = DEFAULT_TIMEOUT_MS, promtool_ms: int = DEFAULT_PROMTOOL_TIMEOUT_MS) -> Limits:
        return cls(run_ms, promtool_ms, time.monotonic() + run_ms / 1000)

    def left(self) -> float:
        """Seconds until the run's deadline (0 once it has passed)."""
        return max(0.0, self.deadline - time.monotonic())


@dataclass
class Outcome:
    promtool_files: int = 0
    routing_cases: int = 0
    failures: list[str] = field(default_factory=list)
    timeouts: list[str] = field(default_factory=list)


def require(tool: str) -> str:
    found = shutil.which(tool)
    if found is None:
        raise ToolMissingError(f"{tool} not found: {INSTALL_HINT[tool]}")
    return found


def _millis(text: Any) -> int | None:
    try:
        return parse_duration(str(text))
    except ValueError:
        return None


def _groups_failing(test_file: Path, detail: str) -> list[str]:
    """The names of the test groups of ``test_file`` that promtool's failure ``detail`` points at."""
    try:
        groups = load_own(test_file.read_text(encoding="utf-8")).get("tests") or []
    except (OSError, yaml.YAMLError, AttributeError):
        return []
    wanted: list[tuple[str, str, int | None]] = []
    for quoted, at in _EXPR_FAILURE.findall(detail):
        try:
            wanted.append(("expr", json.loads(quoted), _millis(at)))
        except ValueError:
            continue
    wanted += [("alertname", name, _millis(at)) for name, at in _ALERT_FAILURE.findall(detail)]
    names: list[str] = []
    for group in groups if isinstance(groups, list) else []:
        if not isinstance(group, dict):
            continue
        checks = [("expr", c.get("expr"), c.get("eval_time")) for c in group.get("promql_expr_test") or []]
        checks += [("alertname", c.get("alertname"), c.get("eval_time")) for c in group.get("alert_rule_test") or []]
        if any((kind, text, _millis(at)) in wanted for kind, text, at in checks):
            names.append(str(group.get("name", "(unnamed)")))
    return names


def _promtool_failures(output: str, files: Sequence[Path]) -> list[str]:
    """One line per failing file (its failing test groups named), from promtool's merged output."""
    by_name = {str(path): path for path in files}
    headers = list(_FILE_HEADER.finditer(output))
    failures: list[str] = []
    for index, header in enumerate(headers):
        end = headers[index + 1].start() if index + 1 < len(headers) else len(output)
        block = output[header.end() : end]
        if "SUCCESS" in block and "FAILED" not in block:
            continue
        path = by_name.get(header[1].strip(), Path(header[1].strip()))
        groups = _groups_failing(path, block)
        if groups:
            named = "; ".join(f"'{name}'" for name in groups)
            failures.append(f"{path}: promtool test failed: {named}")
        else:
            first = next((line.strip() for line in block.splitlines() if line.strip()), "failed")
            failures.append(f"{path}: promtool test failed: {first}")
    if not headers and output.strip():
        failures.append(f"promtool test rules failed: {output.strip().splitlines()[-1]}")
    return failures


NOT_RUN = "not run"


def _promtool_file(promtool: str, path: Path, limits: Limits) -> list[str] | str:
    """The failures of one test file (empty when it passed), or why it has no verdict: timed out, not run."""
    left = limits.left()
    if left <= 0:
        return NOT_RUN
    bound = min(limits.promtool_ms / 1000, left)
    try:
        result = subprocess.run(
            [promtool, "test", "rules", str(path)],
            stdout=subprocess.PIPE,
            stderr=subprocess.STDOUT,  # promtool writes the file headers to stdout, the failures to stderr
            text=True,
            errors="replace",
            timeout=bound,
            check=False,
        )
    except subprocess.TimeoutExpired:
        if bound < limits.promtool_ms / 1000:
            return f"{path}: promtool test timed out: the run's --timeout {format_duration(limits.run_ms)} passed"
        return f"{path}: promtool test timed out after {format_duration(limits.promtool_ms)} (--promtool-timeout)"
    if result.returncode == 0:
        return []
    return _promtool_failures(result.stdout, [path]) or [f"{path}: promtool test rules exited {result.returncode}"]


def run_promtool(out: Path, outcome: Outcome, limits: Limits | None = None) -> None:
    """Each test file in its own promtool process, bounded by ``limits``."""
    limits = limits or Limits.starting_now()
    files = sorted(path for pattern in TEST_GLOBS for path in out.glob(pattern))
    if not files:
        outcome.failures.append(f"{out}: no promtool test files (prometheus/tests/*.test.yaml)")
        return
    promtool = require("promtool")
    with ThreadPoolExecutor(max_workers=PROMTOOL_WORKERS) as pool:
        verdicts = list(pool.map(lambda path: _promtool_file(promtool, path, limits), files))
    outcome.promtool_files += sum(1 for verdict in verdicts if verdict == [])
    outcome.failures += [failure for verdict in verdicts if isinstance(verdict, list) for failure in verdict]
    outcome.timeouts += [verdict for verdict in verdicts if isinstance(verdict, str) and verdict != NOT_RUN]
    not_run = sum(1 for verdict in verdicts if verdict == NOT_RUN)
    if not_run:
        outcome.timeouts.append(
            f"{out}: {not_run} promtool test file(s) not run: the run's --timeout "
            f"{format_duration(limits.run_ms)} passed"
        )


def _case_labels(case: dict[str, Any]) -> str:
    labels = case.get("labels") or {}
    shown = ", ".join(f"{key}={labels[key]}" for key in ("alertname", "severity", "team") if key in labels)
    return shown or "no labels"


def _route_case(amtool: str, config: Path, number: int, case: Any, limits: Limits) -> str | None:
    """None when ``case`` reaches exactly its receivers, in order; else why not, in one line (NOT_RUN
    when the run's deadline passed before or while amtool ran)."""
    if not isinstance(case, dict) or not isinstance(case.get("labels"), dict):
        return f"routing case {number}: not a mapping with labels and receivers"
    receivers = [str(receiver) for receiver in case.get("receivers") or []]
    left = limits.left()
    if left <= 0:
        return NOT_RUN
    try:
        result = _amtool(amtool, config, receivers, case["labels"], left)
    except subprocess.TimeoutExpired:
        return NOT_RUN
    if result.returncode == 0:
        return None
    resolved = [line.strip() for line in result.stdout.splitlines() if line.strip() and "WARNING" not in line]
    if result.returncode == 1 and resolved:
        return f"routing case {number} ({_case_labels(case)}): expected {','.join(receivers)}, got {resolved[0]}"
    said = (result.stderr.strip() or result.stdout.strip() or f"exit {result.returncode}").splitlines()[-1]
    return f"routing case {number} ({_case_labels(case)}): amtool failed: {said}"


def _amtool(
    amtool: str, config: Path, receivers: list[str], labels: dict[Any, Any], timeout: float
) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [
            amtool,
            "config",
            "routes",
            "test",
            f"--config.file={config}",
            f"--verify.receivers={','.join(receivers)}",
            *(matcher(str(name), str(value)) for name, value in labels.items()),
        ],
        capture_output=True,
        text=True,
        errors="replace",
        timeout=timeout,
        check=False,
    )


def run_amtool(out: Path, outcome: Outcome, limits: Limits | None = None) -> None:
    limits = limits or Limits.starting_now()
    try:
        cases = load_own((out / ROUTING_TESTS).read_text(encoding="utf-8"))
    except (OSError, yaml.YAMLError) as exc:
        outcome.failures.append(f"{out / ROUTING_TESTS}: cannot read the routing tests: {exc}")
        return
    if not isinstance(cases, list):
        outcome.failures.append(f"{out / ROUTING_TESTS}: not a list of routing cases")
        return
    amtool = require("amtool")
    with ThreadPoolExecutor(max_workers=AMTOOL_WORKERS) as pool:
        verdicts = list(
            pool.map(lambda item: _route_case(amtool, out / CONFIG, item[0], item[1], limits), enumerate(cases, 1))
        )
    failed = [verdict for verdict in verdicts if verdict is not None and verdict != NOT_RUN]
    outcome.failures += [f"{out / ROUTING_TESTS}: {verdict}" for verdict in failed]
    outcome.routing_cases += sum(1 for verdict in verdicts if verdict is None)
    not_run = sum(1 for verdict in verdicts if verdict == NOT_RUN)
    if not_run:
        outcome.timeouts.append(
            f"{out / ROUTING_TESTS}: {not_run} routing case(s) not run: the run's --timeout "
            f"{format_duration(limits.run_ms)} passed"
        )


def run(out: Path, limits: Limits | None = None) -> Outcome:
    """Both suites over ``out`` within ``limits`` (the defaults, from now, when not given);
    ToolMissingError before anything runs when either tool is missing."""
    require("promtool")
    require("amtool")
    limits = limits or Limits.starting_now()
    outcome = Outcome()
    run_promtool(out, outcome, limits)
    run_amtool(out, outcome, limits)
    return outcome


def summary(outcome: Outcome) -> str:
    return (
        f"{outcome.promtool_files} promtool test file(s) passed, {outcome.routing_cases} routing case(s) passed"
        + (f", {len(outcome.failures)} failed" if outcome.failures else "")
        + (f", {len(outcome.timeouts)} timed out" if outcome.timeouts else "")
    )


def report(outcome: Outcome) -> list[str]:
    return [printable(line) for line in [*outcome.failures, *outcome.timeouts]]
