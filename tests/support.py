"""Helpers shared by the test modules."""

from __future__ import annotations

import os
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
