"""``slo-compiler test``: the proof a user's CI runs, with the real promtool and amtool.

The generated promtool tests (``prometheus/tests/*.test.yaml`` and the heartbeat's) run in one
promtool invocation; its output is split per file, and each failure (an expression or an alert at
a time) is traced back to the named test groups of that file. Every case of
``alertmanager/routing-tests.yaml`` is resolved by ``amtool config routes test`` against the
generated ``alertmanager.yaml`` and must reach exactly its receivers, in order.
"""

from __future__ import annotations

import json
import re
import shutil
import subprocess
from collections.abc import Sequence
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import yaml

from compiler.promql import parse_duration
from compiler.targets.alertmanager import matcher
from compiler.text.terminal import printable

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
# Failures promtool 2.x prints: `expr: "<quoted>", time: <duration>,` and `alertname: <name>, time: <duration>,`.
_EXPR_FAILURE = re.compile(r'^\s*expr: ("(?:[^"\\]|\\.)*"), time: ([0-9a-z]+)', re.MULTILINE)
_ALERT_FAILURE = re.compile(r"^\s*alertname: ([^,\s]+), time: ([0-9a-z]+)", re.MULTILINE)
_FILE_HEADER = re.compile(r"^Unit Testing:\s+(.+)$", re.MULTILINE)


class ToolMissingError(Exception):
    """promtool or amtool is not on PATH (a usage error: exit 2)."""


@dataclass
class Outcome:
    promtool_files: int = 0
    routing_cases: int = 0
    failures: list[str] = field(default_factory=list)


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
        groups = yaml.safe_load(test_file.read_text(encoding="utf-8")).get("tests") or []
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


def run_promtool(out: Path, outcome: Outcome) -> None:
    files = sorted(path for pattern in TEST_GLOBS for path in out.glob(pattern))
    if not files:
        outcome.failures.append(f"{out}: no promtool test files (prometheus/tests/*.test.yaml)")
        return
    result = subprocess.run(
        [require("promtool"), "test", "rules", *(str(path) for path in files)],
        stdout=subprocess.PIPE,
        stderr=subprocess.STDOUT,  # promtool writes the file headers to stdout, the failures to stderr
        text=True,
        errors="replace",
        check=False,
    )
    failures = _promtool_failures(result.stdout, files) if result.returncode != 0 else []
    if result.returncode != 0 and not failures:
        failures = [f"promtool test rules exited {result.returncode}"]
    outcome.failures += failures
    outcome.promtool_files += len(files) - len(failures)


def _case_labels(case: dict[str, Any]) -> str:
    labels = case.get("labels") or {}
    shown = ", ".join(f"{key}={labels[key]}" for key in ("alertname", "severity", "team") if key in labels)
    return shown or "no labels"


def _route_case(amtool: str, config: Path, number: int, case: Any) -> str | None:
    """None when ``case`` reaches exactly its receivers, in order; else why not, in one line."""
    if not isinstance(case, dict) or not isinstance(case.get("labels"), dict):
        return f"routing case {number}: not a mapping with labels and receivers"
    receivers = [str(receiver) for receiver in case.get("receivers") or []]
    result = subprocess.run(
        [
            amtool,
            "config",
            "routes",
            "test",
            f"--config.file={config}",
            f"--verify.receivers={','.join(receivers)}",
            *(matcher(str(name), str(value)) for name, value in case["labels"].items()),
        ],
        capture_output=True,
        text=True,
        errors="replace",
        check=False,
    )
    if result.returncode == 0:
        return None
    resolved = [line.strip() for line in result.stdout.splitlines() if line.strip() and "WARNING" not in line]
    if result.returncode == 1 and resolved:
        return f"routing case {number} ({_case_labels(case)}): expected {','.join(receivers)}, got {resolved[0]}"
    said = (result.stderr.strip() or result.stdout.strip() or f"exit {result.returncode}").splitlines()[-1]
    return f"routing case {number} ({_case_labels(case)}): amtool failed: {said}"


def run_amtool(out: Path, outcome: Outcome) -> None:
    try:
        cases = yaml.safe_load((out / ROUTING_TESTS).read_text(encoding="utf-8"))
    except (OSError, yaml.YAMLError) as exc:
        outcome.failures.append(f"{out / ROUTING_TESTS}: cannot read the routing tests: {exc}")
        return
    if not isinstance(cases, list):
        outcome.failures.append(f"{out / ROUTING_TESTS}: not a list of routing cases")
        return
    amtool = require("amtool")
    with ThreadPoolExecutor(max_workers=AMTOOL_WORKERS) as pool:
        verdicts = list(pool.map(lambda item: _route_case(amtool, out / CONFIG, item[0], item[1]), enumerate(cases, 1)))
    failed = [verdict for verdict in verdicts if verdict is not None]
    outcome.failures += [f"{out / ROUTING_TESTS}: {verdict}" for verdict in failed]
    outcome.routing_cases += len(cases) - len(failed)


def run(out: Path) -> Outcome:
    """Both suites over ``out``; ToolMissingError before anything runs when either tool is missing."""
    require("promtool")
    require("amtool")
    outcome = Outcome()
    run_promtool(out, outcome)
    run_amtool(out, outcome)
    return outcome


def summary(outcome: Outcome) -> str:
    return f"{outcome.promtool_files} promtool test file(s) passed, {outcome.routing_cases} routing case(s) passed" + (
        f", {len(outcome.failures)} failed" if outcome.failures else ""
    )


def report(outcome: Outcome) -> list[str]:
    return [printable(failure) for failure in outcome.failures]
