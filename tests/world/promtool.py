"""Compile the shipped library for a scrape profile in a temp copy, and run promtool on a data set."""

from __future__ import annotations

import re
import resource
import shutil
import subprocess
import sys
import time
from dataclasses import dataclass
from pathlib import Path

from compiler.pipeline import compile_specs
from compiler.plan import plan
from tests.promtool_runs import promtool_test
from tests.world.dataset import Expectations, write_tests
from tests.world.stack import STACKS
from tests.world.timeline import Series
from tests.world.topology import World

REPO = Path(__file__).resolve().parents[2]
LIBRARY = REPO / "slo_specs"
PROFILE_LINE = re.compile(r"^scrape_profile:\n  stack: [a-z-]+\n", re.MULTILINE)


# The first compile of each (stack, leave_out) in this process: later calls copy its output, so the
# day-one tests and the incidents of a worker compile each stack's library once. Tests only read it.
_COMPILED: dict[tuple[str, tuple[str, ...]], Path] = {}


def compile_library(out: Path, stack: str, leave_out: tuple[str, ...] = ()) -> list[Path]:
    """The library's rule files on ``stack``: project.yaml's scrape_profile switched in a copy.

    ``leave_out`` names spec files (relative to slo_specs/) the compiler refuses on this
    stack; the rest must compile cleanly.
    """
    first = _COMPILED.get((stack, leave_out))
    if first is not None and (first / "generated").is_dir():
        for part in ("slo_specs", "generated"):
            shutil.copytree(first / part, out / part)
        return sorted((out / "generated" / "prometheus" / "rules").glob("*.rules.yaml"))
    specs = out / "slo_specs"
    shutil.copytree(LIBRARY, specs)
    project = specs / "project.yaml"
    text, replaced = PROFILE_LINE.subn(f"scrape_profile:\n  stack: {stack}\n", project.read_text(encoding="utf-8"))
    assert replaced == 1, "slo_specs/project.yaml no longer sets scrape_profile.stack on two lines"
    project.write_text(text, encoding="utf-8")
    for name in leave_out:
        (specs / name).unlink()
    generated = out / "generated"
    result = subprocess.run(
        [sys.executable, "-m", "compiler", "generate", "--specs", str(specs), "--out", str(generated)],
        cwd=REPO,
        capture_output=True,
        text=True,
        timeout=300,
        check=False,
    )
    assert result.returncode == 0, result.stdout + result.stderr
    _COMPILED[(stack, leave_out)] = out
    return sorted((generated / "prometheus" / "rules").glob("*.rules.yaml"))


@dataclass(frozen=True)
class Coverage:
    """What the compiler did with the library's specs on a stack: each spec's component, and those left out."""

    components: dict[str, str | None]  # every spec's slice.component
    left_out: dict[str, str]  # spec -> the component the stack does not scrape


def coverage(specs: Path) -> Coverage:
    """The compiler's own plan of ``specs`` (a copy from ``compile_library``), not a hand-kept list."""
    model, diagnostics = compile_specs(specs)
    assert model is not None and not diagnostics, diagnostics.render()
    planned = plan(model)
    return Coverage(
        components={slo.name: slo.slice.component for slo in model.slos},
        left_out={item.slo.name: item.component for item in planned.left_out},
    )


@dataclass(frozen=True)
class Run:
    ok: bool
    output: str
    seconds: float
    series: int
    cpu: float = 0.0  # promtool's user and system CPU seconds


def run(
    directory: Path,
    rule_files: list[Path],
    world: World,
    stack: str,
    expect: Expectations,
    data: list[Series] | None = None,
) -> Run:
    """Write the data set (``data``, or the world's series on ``stack``) next to the rules and let promtool judge it,
    a test file for each group of rule files (tests/world/groups.py); ``cpu`` leaves out the groups promtool judged
    with the same data and rules before (tests/promtool_runs.py)."""
    written = write_tests(directory, rule_files, world, STACKS[stack], expect, data)
    started, before = time.monotonic(), resource.getrusage(resource.RUSAGE_CHILDREN)
    failed = []
    for test in written:
        result = promtool_test(test.path, timeout=900)  # a verdict kept from an earlier run of the same data and rules
        if result.returncode != 0:
            failed.append(f"{test.path.name}:\n{result.stdout}{result.stderr}")
    seconds, after = time.monotonic() - started, resource.getrusage(resource.RUSAGE_CHILDREN)
    cpu = after.ru_utime + after.ru_stime - before.ru_utime - before.ru_stime
    series = len(frozenset().union(*(test.series for test in written)))
    return Run(not failed, _trim("\n".join(failed)), seconds, series, cpu)


def _trim(output: str, limit: int = 6000) -> str:
    return output if len(output) <= limit else output[:limit] + f"\n... ({len(output) - limit} more characters)"
