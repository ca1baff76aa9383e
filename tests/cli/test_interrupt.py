"""Interrupting `generate` at any moment leaves the previous output intact (or the new one, whole)."""

from __future__ import annotations

import contextlib
import os
import shutil
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest

from compiler.write import MANIFEST_NAME, read_tree

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


Trees = tuple[Path, Path, dict[str, bytes], dict[str, bytes]]


@pytest.fixture(scope="module")
def trees(tmp_path_factory: pytest.TempPathFactory) -> Trees:
    """An old and a new spec tree with their complete outputs (the old one's is written at
    ``old-specs-out`` beside them)."""
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
    tmp_path: Path, trees: Trees, sig: signal.Signals, delay: float
) -> None:
    old_specs, new_specs, old_files, new_files = trees
    out = tmp_path / "generated"
    shutil.copytree(old_specs.parent / "old-specs-out", out)  # the old output, as `generate` wrote it
    assert read_tree(out, with_manifest=True) == read_tree(old_specs.parent / "old-specs-out", with_manifest=True)
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


def test_interrupt_after_the_output_was_written_says_so(tmp_path: Path) -> None:
    """SIGINT while the summary waits on a blocked terminal: the new output is in place, and the message
    says so (was: "output left as it was"). stdout is a pipe already full, so the summary's write blocks."""
    specs = shutil.copytree(REPO_ROOT / "tests" / "fixtures" / "specs", tmp_path / "specs")
    out = tmp_path / "generated"
    read_end, write_end = os.pipe()
    os.set_blocking(write_end, False)
    with contextlib.suppress(BlockingIOError):
        while True:
            os.write(write_end, b"x" * 4096)
    os.set_blocking(write_end, True)  # the flag is shared with the child's copy of the descriptor
    env = {**os.environ, "PYTHONPATH": str(REPO_ROOT)}
    process = subprocess.Popen(
        [sys.executable, "-m", "compiler", "generate", "--specs", str(specs), "--out", str(out)],
        cwd=tmp_path,
        env=env,
        stdout=write_end,
        stderr=subprocess.PIPE,
    )
    os.close(write_end)
    try:
        deadline = time.monotonic() + 120
        while not (out / MANIFEST_NAME).exists() and process.poll() is None and time.monotonic() < deadline:
            time.sleep(0.02)
        assert (out / MANIFEST_NAME).exists(), "generate never wrote its output"
        time.sleep(0.2)  # let it reach the blocked summary
        process.send_signal(signal.SIGINT)
        _, err = process.communicate(timeout=60)
    finally:
        os.close(read_end)
    assert process.returncode == 130
    message = err.decode()
    assert "left as it was" not in message
    assert message.strip().endswith(f"new output was written to {out}"), message
