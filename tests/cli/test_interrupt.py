"""Interrupting `generate` at any moment leaves the previous output intact (or the new one, whole)."""

from __future__ import annotations

import os
import shutil
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest

from compiler.write import read_tree

REPO_ROOT = Path(__file__).resolve().parents[2]


def _generate(specs: Path, out: Path) -> subprocess.Popen[bytes]:
    env = {**os.environ, "PYTHONPATH": str(REPO_ROOT)}
    return subprocess.Popen(
        [sys.executable, "-m", "compiler", "generate", "--specs", str(specs), "--out", str(out)],
        cwd=specs.parent,
        env=env,
        stdout=subprocess.DEVNULL,
        stderr=subprocess.DEVNULL,
    )


@pytest.fixture(scope="module")
def trees(tmp_path_factory: pytest.TempPathFactory) -> tuple[Path, Path, dict[str, bytes], dict[str, bytes]]:
    """An old and a new spec tree with their complete outputs."""
    root = tmp_path_factory.mktemp("interrupt")
    old, new = root / "old-specs", root / "new-specs"
    shutil.copytree(REPO_ROOT / "tests" / "fixtures" / "specs", old)
    shutil.copytree(REPO_ROOT / "slo_specs", new)
    outputs = []
    for specs in (old, new):
        out = root / f"{specs.name}-out"
        assert _generate(specs, out).wait(timeout=120) == 0
        outputs.append(read_tree(out))
    return old, new, outputs[0], outputs[1]


@pytest.mark.parametrize("sig", [signal.SIGINT, signal.SIGTERM], ids=["SIGINT", "SIGTERM"])
@pytest.mark.parametrize("delay", [0.05, 0.3, 0.8, 1.5, 3.0])
def test_an_interrupted_generate_leaves_the_old_or_the_complete_new_output(
    tmp_path: Path, trees: tuple[Path, Path, dict[str, bytes], dict[str, bytes]], sig: signal.Signals, delay: float
) -> None:
    old_specs, new_specs, old_files, new_files = trees
    out = tmp_path / "generated"
    assert _generate(old_specs, out).wait(timeout=120) == 0
    assert read_tree(out) == old_files
    process = _generate(new_specs, out)
    time.sleep(delay)
    process.send_signal(sig)
    process.wait(timeout=120)
    after = read_tree(out)
    assert after in (old_files, new_files), "partial output after an interrupt"
    # A later run repairs anything the interrupted one left beside the output.
    assert _generate(new_specs, out).wait(timeout=120) == 0
    assert read_tree(out) == new_files
    assert not list(tmp_path.glob(".generated.*"))
