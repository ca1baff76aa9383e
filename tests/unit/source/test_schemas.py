"""The JSON Schemas are valid, and every spec points editors at the right one."""

from __future__ import annotations

import json
import re
from pathlib import Path

import pytest
from jsonschema import Draft202012Validator

from compiler.source.load import discover

REPO_ROOT = Path(__file__).resolve().parents[3]
SCHEMAS = sorted((REPO_ROOT / "compiler" / "schemas").glob("*.schema.json"))
SPEC_FILES = [path for path in discover(REPO_ROOT / "slo_specs") if path.suffix != ".jsonnet"]
SCHEMA_LINE = re.compile(r"^# yaml-language-server: \$schema=(\S+)$", re.MULTILINE)
KIND_SCHEMA = {"SLO": "slo.schema.json", "Owners": "owners.schema.json", "Project": "project.schema.json"}


@pytest.mark.parametrize("path", SCHEMAS, ids=[p.name for p in SCHEMAS])
def test_schema_is_valid_draft_2020_12(path: Path) -> None:
    Draft202012Validator.check_schema(json.loads(path.read_text(encoding="utf-8")))


def test_every_slo_property_is_documented_for_editors() -> None:
    schema = json.loads((REPO_ROOT / "compiler" / "schemas" / "slo.schema.json").read_text(encoding="utf-8"))
    undocumented = [
        name
        for name, body in schema["properties"].items()
        if name not in {"apiVersion", "kind"} and "description" not in body and "$ref" not in body
    ]
    assert undocumented == []


@pytest.mark.parametrize("path", SPEC_FILES, ids=[p.name for p in SPEC_FILES])
def test_spec_names_its_schema_for_the_yaml_language_server(path: Path) -> None:
    text = path.read_text(encoding="utf-8")
    match = SCHEMA_LINE.search(text)
    assert match, "missing '# yaml-language-server: $schema=...' line"
    kind = re.search(r"^kind: (\w+)$", text, re.MULTILINE)
    assert kind is not None
    target = (path.parent / match.group(1)).resolve()
    assert target == (REPO_ROOT / "compiler" / "schemas" / KIND_SCHEMA[kind.group(1)]).resolve()
