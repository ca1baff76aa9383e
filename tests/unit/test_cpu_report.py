"""``--cpu-durations`` (tests/cpu_report.py) charges a test the CPU it took, not the time it waited."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest

from tests.support import REPO_ROOT

TESTS = """
import subprocess, sys, time

def test_spins():
    end = time.process_time() + 0.4
    while time.process_time() < end:
        pass

def test_waits():
    time.sleep(0.4)

SPIN = "import time\\nend = time.process_time() + 0.4\\nwhile time.process_time() < end: pass"

def test_runs_a_child():
    subprocess.run([sys.executable, "-c", SPIN], check=True)
"""


@pytest.mark.parametrize("workers", ["0", "2"])
def test_the_table_ranks_tests_by_their_cpu_and_their_childrens(workers: str, tmp_path: Path) -> None:
    """In one process and from xdist's workers (the figures reach the controller in the reports)."""
    (tmp_path / "test_sample.py").write_text(TESTS, encoding="utf-8")
    plugin = ["-p", "no:cacheprovider", "-p", "tests.cpu_report", "--cpu-durations=3"]
    result = subprocess.run(
        [sys.executable, "-m", "pytest", "-q", "-n", workers, *plugin],
        cwd=tmp_path,
        env={**os.environ, "PYTHONPATH": str(REPO_ROOT)},
        capture_output=True,
        text=True,
        timeout=120,
        check=False,
    )
    assert result.returncode == 0, result.stdout + result.stderr
    rows = [line.split() for line in result.stdout.splitlines() if "s cpu  " in line]
    seconds = {row[-1].rsplit("::", 1)[-1]: float(row[0].removesuffix("s")) for row in rows if "::" in row[-1]}
    assert set(seconds) == {"test_spins", "test_waits", "test_runs_a_child"}, result.stdout
    assert seconds["test_spins"] >= 0.35 and seconds["test_runs_a_child"] >= 0.35, seconds
    assert seconds["test_waits"] < 0.2, seconds
    total = next(row for row in rows if row[2:4] == ["in", "all,"])
    assert float(total[0].removesuffix("s")) >= 0.7, total
    module = next(row for row in rows if row[2] == "test_sample.py")
    assert module[3:] == ["(3", "tests)"] and float(module[0].removesuffix("s")) >= 0.7, module
