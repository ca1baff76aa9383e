"""The benchmark keeps working (its figures are measured by `make bench`, never asserted here)."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

REPO_ROOT = Path(__file__).resolve().parents[2]


def test_the_benchmark_compiles_its_synthetic_specs() -> None:
    result = subprocess.run(
        [sys.executable, "bench/bench_compile.py", "--specs", "6", "--repeat", "1"],
        cwd=REPO_ROOT,
        env={**os.environ, "PYTHONPATH": str(REPO_ROOT)},
        capture_output=True,
        text=True,
        timeout=300,
    )
    assert result.returncode == 0, result.stderr[-2000:]
    assert "specs: 6" in result.stdout
    assert "compile / load+schema ratio:" in result.stdout
