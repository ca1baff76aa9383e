"""The schemas' references inlined (``schema.references_inlined``) report what the schemas as written report.

Every document of the fixture tree and of the library is broken at every place in turn (a value of
the wrong type, an unknown key, a missing first key), and validated against the packaged schema as
written and as the compiler validates it: the errors must be the same, in the same order, as far as
the compiler reads them.
"""

from __future__ import annotations

import copy
import json
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from jsonschema import Draft202012Validator
from jsonschema.exceptions import ValidationError

from compiler.diagnostics import Diagnostics
from compiler.source import schema
from compiler.source.load import load_tree

REPO_ROOT = Path(__file__).resolve().parents[3]
TREES = (REPO_ROOT / "tests" / "fixtures" / "specs", REPO_ROOT / "slo_specs")
AS_WRITTEN = {
    kind: Draft202012Validator(json.loads(schema.SCHEMA_DIR.joinpath(f"{name}.schema.json").read_text("utf-8")))
    for kind, name in schema.KINDS.items()
}


def _documents() -> list[dict[str, Any]]:
    found = []
    for tree in TREES:
        diagnostics = Diagnostics()
        found += [doc.data for doc in load_tree(tree, REPO_ROOT, diagnostics) if isinstance(doc.data, dict)]
        assert not diagnostics, diagnostics.render()
    return found


def _paths(node: Any, path: tuple[Any, ...] = ()) -> Iterator[tuple[Any, ...]]:
    yield path
    children = node.items() if isinstance(node, dict) else enumerate(node) if isinstance(node, list) else ()
    for key, value in children:
        yield from _paths(value, (*path, key))


def _broken(document: dict[str, Any], path: tuple[Any, ...], how: int) -> dict[str, Any]:
    """``document`` broken at ``path``: the wrong type of value, an unknown key, or its first key gone."""
    broken = copy.deepcopy(document)
    parent: Any = broken
    for key in path[:-1]:
        parent = parent[key]
    node = parent[path[-1]] if path else broken
    if how == 1 and isinstance(node, dict):
        node["zz-unknown"] = 1
    elif how == 2 and isinstance(node, dict) and node:
        node.pop(next(iter(node)))
    elif path:
        parent[path[-1]] = 7 if isinstance(node, str) else [] if isinstance(node, dict) else "seven"
    return broken


_VALUES_READ = ("required", "type", "enum", "const")  # where the compiler reads the keyword's value (not a subschema)


def _read(error: ValidationError) -> tuple[Any, ...]:
    """What ``schema._report`` and ``schema._sections_at_fault`` read of an error."""
    found: Any = error.schema if isinstance(error.schema, dict) else {}
    return (
        error.validator,
        json.dumps(error.validator_value, sort_keys=True) if error.validator in _VALUES_READ else None,
        tuple(error.absolute_path),
        json.dumps(error.instance, sort_keys=True, default=str),
        error.message,
        found.get("x-message"),
        sorted(found.get("properties", {})),
        "propertyNames" in error.relative_schema_path,
    )


def _cases() -> list[tuple[dict[str, Any], tuple[Any, ...], int]]:
    cases = []
    for document in _documents():
        for index, path in enumerate(_paths(document)):
            cases.append((document, path, index % 3))
    return cases[::7]  # every seventh place: each kind of break still lands on every section


CASES = _cases()


def test_the_cases_break_every_kind_of_document_many_ways() -> None:
    kinds = {document["kind"] for document, _, _ in CASES}
    assert kinds == set(schema.KINDS) and len(CASES) > 500


@pytest.mark.parametrize("chunk", range(4))
def test_inlined_references_report_the_same_errors(chunk: int) -> None:
    differing = []
    failing = 0
    for document, path, how in CASES[chunk::4]:
        broken = _broken(document, path, how)
        kind = document["kind"]
        written = [_read(e) for e in AS_WRITTEN[kind].iter_errors(broken)]
        inlined = [_read(e) for e in schema._validator(kind).iter_errors(broken)]
        failing += bool(written)
        if written != inlined:
            differing.append((document.get("name"), path, how, written, inlined))
    assert not differing, differing[:3]
    assert failing > len(CASES[chunk::4]) / 2  # most breaks are errors: the comparison has something to compare
