"""Helpers shared by the test modules."""

from __future__ import annotations

import atexit
import hashlib
import os
import shutil
import subprocess
import sys
import tempfile
from pathlib import Path

from compiler.model import Model
from compiler.pipeline import compile_specs

REPO_ROOT = Path(__file__).resolve().parent.parent
FIXTURE_SPECS = REPO_ROOT / "tests" / "fixtures" / "specs"
LIBRARY_SPECS = REPO_ROOT / "slo_specs"


def compile_tree(spec_dir: Path, cwd: Path = REPO_ROOT) -> Model:
    """The model of a spec tree; source paths are shown relative to ``cwd`` (the repo root by default)."""
    previous = Path.cwd()
    os.chdir(cwd)
    try:
        model, diagnostics = compile_specs(spec_dir)
    finally:
        os.chdir(previous)
    assert model is not None and not diagnostics, diagnostics.render()
    return model


# -- reference outputs, generated once per worker process ---------------------------------------------

_REFERENCES: dict[str, Path] = {}
_REFERENCE_ROOT: list[Path] = []
GENERATE_TIMEOUT = 300


def _tree_key(spec_dir: Path) -> str:
    """The content of a spec tree (names, bytes, link targets) and its directory's name, as a hash."""
    digest = hashlib.sha256(spec_dir.name.encode())
    for path in sorted(spec_dir.rglob("*")):
        digest.update(b"\0" + path.relative_to(spec_dir).as_posix().encode())
        if path.is_symlink():
            digest.update(b"\1" + path.readlink().as_posix().encode())
        elif path.is_file():
            digest.update(b"\2" + path.read_bytes())
    return digest.hexdigest()


def reference_output(spec_dir: Path) -> Path:
    """A read-only directory holding what ``generate`` writes for ``spec_dir`` (manifest included).

    The first call for a tree's content runs the real command, in a process of its own, on a copy of
    the tree under the same directory name (so every position reads the same) in a directory of this
    worker process; later calls with the same content return that directory. Tests compare with it,
    or copy it where they need an output to start from; they never write into it.
    """
    key = _tree_key(spec_dir)
    if key in _REFERENCES:
        return _REFERENCES[key]
    if not _REFERENCE_ROOT:
        _REFERENCE_ROOT.append(Path(tempfile.mkdtemp(prefix="slo-compiler-references-")))
        atexit.register(shutil.rmtree, _REFERENCE_ROOT[0], ignore_errors=True)
    workdir = _REFERENCE_ROOT[0] / key
    shutil.copytree(spec_dir, workdir / spec_dir.name, symlinks=True)
    env = {**os.environ, "PYTHONPATH": str(REPO_ROOT)}
    env.pop("SLO_COMPILER_DEBUG", None)
    result = subprocess.run(
        [sys.executable, "-m", "compiler", "generate", "--specs", spec_dir.name, "--out", "reference"],
        cwd=workdir,
        env=env,
        capture_output=True,
        text=True,
        timeout=GENERATE_TIMEOUT,
        check=False,
    )
    assert result.returncode == 0, result.stdout + result.stderr
    _REFERENCES[key] = workdir / "reference"
    return _REFERENCES[key]
