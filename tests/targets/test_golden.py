"""Golden files: the fixture specs compile to exactly the committed text.

Run ``UPDATE_GOLDEN=1 pytest tests/targets/test_golden.py`` after an intended change and review
the diff of ``tests/golden/`` like any other code change.
"""

from __future__ import annotations

import os
from pathlib import Path

import pytest
import yaml

from compiler.targets import render_all
from compiler.text import yamlout
from tests.support import compile_tree

REPO_ROOT = Path(__file__).resolve().parents[2]
FIXTURE_SPECS = REPO_ROOT / "tests" / "fixtures" / "specs"
GOLDEN = REPO_ROOT / "tests" / "golden"


def compile_fixtures() -> dict[str, bytes]:
    return render_all(compile_tree(FIXTURE_SPECS))


FILES = compile_fixtures()

if os.environ.get("UPDATE_GOLDEN"):
    for stale in GOLDEN.rglob("*"):
        if stale.is_file():
            stale.unlink()
    for name, content in FILES.items():
        (GOLDEN / name).parent.mkdir(parents=True, exist_ok=True)
        (GOLDEN / name).write_bytes(content)


@pytest.mark.parametrize("name", sorted(FILES))
def test_fixture_spec_compiles_to_its_golden_file(name: str) -> None:
    golden = GOLDEN / name
    assert golden.exists(), f"no golden file for {name}; run UPDATE_GOLDEN=1 pytest {__file__}"
    assert FILES[name].decode() == golden.read_text(encoding="utf-8")


def test_every_golden_file_is_still_generated() -> None:
    committed = {p.relative_to(GOLDEN).as_posix() for p in GOLDEN.rglob("*") if p.is_file()}
    assert committed == set(FILES)


def test_compiling_twice_gives_identical_bytes() -> None:
    assert compile_fixtures() == FILES


@pytest.mark.parametrize("name", sorted(name for name in FILES if name.endswith(".yaml")))
def test_libyaml_and_pure_python_emitters_write_the_same_text(name: str) -> None:
    data = yaml.safe_load(FILES[name])
    assert yamlout.dump(data) == yamlout.dump(data, dumper=yamlout.PURE_DUMPER)
