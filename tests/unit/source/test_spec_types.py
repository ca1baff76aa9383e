"""The TypedDicts of the spec language stay generated from the schemas, and mypy uses them."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

from compiler.source import typegen

REPO_ROOT = Path(__file__).resolve().parents[3]


def test_spec_types_module_is_what_the_schemas_generate() -> None:
    committed = typegen.OUTPUT.read_text(encoding="utf-8")
    assert committed == typegen.generate(), "schemas changed: run `python -m compiler.source.typegen`"


def test_every_schema_object_has_a_typed_dict() -> None:
    text = typegen.generate()
    for name in ("SLOSpec", "ProjectSpec", "OwnersSpec", "SLOMitigation", "SLOBurnAlert", "SLOPersistence"):
        assert f"class {name}(" in text or f"{name} = TypedDict(" in text, name


def test_a_misspelt_field_is_a_type_error(tmp_path: Path) -> None:
    """The point of the types: reading ``mitigation.summry`` fails mypy --strict."""
    probe = tmp_path / "probe.py"
    probe.write_text(
        "from compiler.source.spec_types import SLOSpec\n\n\n"
        "def summary(spec: SLOSpec) -> str:\n"
        '    return spec["mitigation"]["summry"]\n',
        encoding="utf-8",
    )
    result = subprocess.run(
        [sys.executable, "-m", "mypy", "--strict", "--no-incremental", "--follow-imports=silent", str(probe)],
        cwd=REPO_ROOT,
        capture_output=True,
        text=True,
        timeout=300,
        check=False,
    )
    assert result.returncode == 1, result.stdout + result.stderr
    assert '"summry"' in result.stdout, result.stdout
