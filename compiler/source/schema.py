"""Check documents against the JSON Schemas in ``compiler/schemas/`` and report problems at their source position.

The same schema files serve editors (``# yaml-language-server: $schema=...``) and the
compiler, so the two can never disagree. They are package data, read through
``importlib.resources``, so an installed wheel finds them wherever it is run from.
jsonschema's own messages are rewritten into sentences an operator can act on: unknown
keys get a did-you-mean, missing fields say which, and a schema node may carry an
``x-message`` to explain a pattern.
"""

from __future__ import annotations

import copy
import dataclasses
import difflib
import json
import math
from collections.abc import Iterator
from dataclasses import dataclass
from functools import cache
from importlib import resources
from importlib.resources.abc import Traversable
from typing import Any

from jsonschema import Draft202012Validator
from jsonschema.exceptions import ValidationError

from compiler.diagnostics import Diagnostics
from compiler.source import placeholders
from compiler.source.load import Document

SCHEMA_DIR: Traversable = resources.files("compiler").joinpath("schemas")
KINDS = {"SLO": "slo", "Owners": "owners", "Project": "project"}
SCHEMA_FILES = tuple(f"{name}.schema.json" for name in KINDS.values())

_TYPE_NAMES = {
    "object": "a mapping",
    "array": "a list",
    "string": "a string",
    "number": "a number",
    "integer": "an integer",
    "boolean": "true or false",
    "null": "null",
}


@cache
def _validator(kind: str) -> Draft202012Validator:
    """The kind's validator. The packaged schemas are checked against the metaschema by the tests
    (``tests/unit/source/test_schemas.py``), not at every start: that check costs more than validating
    a hundred specs."""
    schema = json.loads(SCHEMA_DIR.joinpath(f"{KINDS[kind]}.schema.json").read_text(encoding="utf-8"))
    return Draft202012Validator(references_inlined(schema))


_ANNOTATIONS = frozenset({"description", "title", "$comment", "examples"})  # keywords that never fail


def references_inlined(schema: dict[str, Any]) -> dict[str, Any]:
    """The schema with each local ``{"$ref": "#/$defs/x"}`` replaced by the definition it names.

    jsonschema looks a reference up in its registry each time it meets one: 2,700 look-ups and a third
    of the time spent validating the library. A definition in the reference's place gives the same
    errors, in the same order, with the same ``validator``, ``schema`` and ``absolute_path``; only
    ``schema_path`` loses its ``$ref`` steps. A reference beside a keyword that can fail, to anything
    but a local definition, or inside the definition it names (recursion) stays as it is.
    """
    definitions: dict[str, Any] = schema.get("$defs", {})

    def inlined(node: Any, within: tuple[str, ...]) -> Any:
        if isinstance(node, list):
            return [inlined(item, within) for item in node]
        if not isinstance(node, dict):
            return node
        reference = node.get("$ref")
        if isinstance(reference, str) and reference.startswith("#/$defs/") and set(node) - {"$ref"} <= _ANNOTATIONS:
            name = reference.removeprefix("#/$defs/")
            if name in definitions and name not in within:
                return inlined(definitions[name], (*within, name))
        return {key: inlined(value, within) for key, value in node.items()}

    result: dict[str, Any] = inlined(schema, ())
    return result


def packaged_schemas() -> dict[str, bytes]:
    """The schema files as shipped, byte for byte, for repositories that vendor them for their editors."""
    return {name: SCHEMA_DIR.joinpath(name).read_bytes() for name in SCHEMA_FILES}


def schema_properties(kind: str) -> dict[str, Any]:
    """The top-level properties of a kind's schema (used for did-you-mean on kinds)."""
    schema: Any = _validator(kind).schema
    properties: dict[str, Any] = schema["properties"]
    return properties


def _describe(value: Any) -> str:
    if value is None:
        return "null"
    if isinstance(value, bool):
        return "a boolean"
    if isinstance(value, int | float):
        return "a number"
    if isinstance(value, str):
        return "a string"
    if isinstance(value, list):
        return "a list"
    return "a mapping"


def _field(path: tuple[str | int, ...]) -> str:
    parts = []
    for part in path:
        if isinstance(part, int):
            parts.append(f"[{part}]")
        else:
            parts.append(f".{part}" if parts else part)
    return "".join(parts) or "the document"


def _where(path: tuple[str | int, ...]) -> str:
    return f"in {_field(path)}" if path else "at the top level"


def suggest(word: str, choices: list[str]) -> str:
    match = difflib.get_close_matches(word, choices, n=1, cutoff=0.6)
    return f"; did you mean '{match[0]}'?" if match else ""


def _report(error: ValidationError, document: Document, diagnostics: Diagnostics) -> None:
    path = tuple(error.absolute_path)
    name = _field(path)
    schema: dict[str, Any] = error.schema if isinstance(error.schema, dict) else {}
    rule: Any = error.validator_value
    instance: Any = error.instance
    custom = schema.get("x-message")
    if error.validator == "additionalProperties":
        allowed = sorted(schema.get("properties", {}))
        unknown = sorted(set(instance) - set(allowed), key=lambda key: document.key_position((*path, key)))
        for key in unknown:  # in file order, so the hints go to the problems shown first
            where = document.key_position((*path, key))
            hint = suggest(key, allowed) if diagnostics.accepts(where.path) else ""  # not shown anyway
            if not hint and path and _is_top_level(document, key):
                hint = f"; '{key}' is a top-level field: move it out of {_field(path)}"
            hint = hint or _gauge_only_hint(key, path)
            diagnostics.error(where, f"unknown key '{key}' {_where(path)}{hint}")
        return
    if error.validator == "required":
        missing = [key for key in rule if key not in instance]
        for key in missing:
            diagnostics.error(document.position(path), f"missing required field '{key}' {_where(path)}")
        return
    where = document.position(path)
    if "propertyNames" in error.relative_schema_path and isinstance(instance, str):
        where = document.key_position((*path, instance))  # the key at fault, not its whole mapping
    if error.validator == "type":
        expected = rule if isinstance(rule, list) else [rule]
        wanted = " or ".join(_TYPE_NAMES.get(str(t), str(t)) for t in expected)
        diagnostics.error(where, f"{name}: expected {wanted}, got {_describe(error.instance)}")
    elif custom and error.validator == "not":  # a refused key: its value may be the secret it must not hold
        diagnostics.error(where, f"{name} {custom}")
    elif custom:
        diagnostics.error(where, f"{name} {custom}: {json.dumps(error.instance, ensure_ascii=False)}")
    elif error.validator == "enum":
        choices = ", ".join(str(c) for c in rule)
        hint = suggest(str(error.instance), [str(c) for c in rule])
        diagnostics.error(where, f"{name}: '{error.instance}' is not one of: {choices}{hint}")
    elif error.validator == "const":
        diagnostics.error(where, f"{name} must be '{rule}'")
    elif error.validator in ("minItems", "minLength"):
        diagnostics.error(where, f"{name} must not be empty")
    elif error.validator == "uniqueItems":
        diagnostics.error(where, f"{name} has duplicate entries")
    elif error.validator in ("exclusiveMinimum", "minimum", "exclusiveMaximum", "maximum"):
        diagnostics.error(where, f"{name}: {error.instance} is out of range ({error.message})")
    else:
        diagnostics.error(where, f"{name}: {error.message}")


def _is_top_level(document: Document, key: str) -> bool:
    """Whether ``key`` is a field of the document itself (written one level too deep, as ``unit`` often is)."""
    kind = document.data.get("kind") if isinstance(document.data, dict) else None
    return kind in KINDS and key in schema_properties(str(kind))


def _non_finite(value: Any, path: tuple[str | int, ...] = ()) -> Iterator[tuple[tuple[str | int, ...], float]]:
    """Every ``.nan`` and ``.inf`` in a document: JSON Schema cannot exclude them (NaN fails no bound)."""
    if isinstance(value, float) and not math.isfinite(value):
        yield path, value
    elif isinstance(value, dict):
        for key, item in value.items():
            yield from _non_finite(item, (*path, key))
    elif isinstance(value, list):
        for index, item in enumerate(value):
            yield from _non_finite(item, (*path, index))


def _report_non_finite(document: Document, diagnostics: Diagnostics) -> bool:
    """Report each NaN or infinity at its value; no spec field has a use for one."""
    found = False
    for path, value in _non_finite(document.data):
        text = ".nan" if math.isnan(value) else (".inf" if value > 0 else "-.inf")
        diagnostics.error(
            document.position(path), f"{_field(path)}: {text} is not a finite number; write a plain number"
        )
        found = True
    return found


def validate_document(document: Document, diagnostics: Diagnostics) -> str | None:
    """Validate one document; returns its kind when it is schema-valid, else None."""
    checked = check_document(document, diagnostics)
    return checked.kind if checked is not None and checked.valid else None


def _gauge_only_hint(key: str, path: tuple[str | int, ...]) -> str:
    """Say why ``absent_as_zero_while`` is not needed outside a gauge, where users reach for it first.

    A ratio's ``bad`` and a latency SLI's ``errors`` already read 0 in every slice whose total
    has series; only a gauge over first-event counters has nothing to fall back on.
    """
    if key != "absent_as_zero_while" or path[:1] != ("sli",):
        return ""
    return (
        "; it is a field of sli.gauge only: a ratio's bad and a latency SLI's errors already read 0 in every "
        "slice whose total has series, so drop it here"
    )


@dataclass(frozen=True)
class Checked:
    """A document after its schema check, with what the semantic checks may still read of it.

    ``readable`` is the document without its unknown keys (reported already, and read by
    nobody), so a misspelt optional key does not hide every other problem; ``broken`` names
    the top-level sections whose values failed the schema or are missing, which no
    section reader may touch (they index schema-valid shapes).
    """

    kind: str
    readable: Document
    broken: frozenset[str]
    valid: bool


def check_document(document: Document, diagnostics: Diagnostics) -> Checked | None:
    """Validate one document and report every schema problem; None when it has no known kind."""
    data = document.data
    if not isinstance(data, dict):
        diagnostics.error(document.position(()), f"expected a mapping with 'kind', got {_describe(data)}")
        return None
    kind = data.get("kind")
    if kind not in KINDS:
        hint = suggest(str(kind), list(KINDS)) if isinstance(kind, str) else ""
        where = document.position(("kind",)) if "kind" in data else document.position(())
        diagnostics.error(where, f"kind must be one of {', '.join(KINDS)}, got {json.dumps(kind)}{hint}")
        return None
    errors = sorted(_validator(kind).iter_errors(data), key=lambda e: [str(p) for p in e.absolute_path])
    before = len(diagnostics)
    filled_in = placeholders.report(document, diagnostics)
    errors = [e for e in errors if not placeholders.covers(filled_in, tuple(e.absolute_path))]
    for error in errors:
        _report(error, document, diagnostics)
    non_finite = [path for path, _ in _non_finite(data)]
    _report_non_finite(document, diagnostics)
    valid = len(diagnostics) == before and not errors and not non_finite
    if valid:
        return Checked(kind, document, frozenset(), True)
    broken, unknown = _sections_at_fault(errors, non_finite)
    broken |= {str(path[0]) for path in filled_in if path}  # no section reader may read a placeholder
    return Checked(kind, _without(document, unknown), broken, False)


def _sections_at_fault(
    errors: list[ValidationError], non_finite: list[tuple[str | int, ...]]
) -> tuple[frozenset[str], list[tuple[str | int, ...]]]:
    """(top-level sections a schema error sits in or that are missing, paths of unknown keys).

    An unknown key breaks nothing: readers never look at it, so it is only dropped.
    """
    broken: set[str] = set()
    unknown: list[tuple[str | int, ...]] = []
    for error in errors:
        path = tuple(error.absolute_path)
        if error.validator == "additionalProperties" and isinstance(error.instance, dict):
            allowed = error.schema.get("properties", {}) if isinstance(error.schema, dict) else {}
            unknown += [(*path, key) for key in error.instance if key not in allowed]
        elif path:
            broken.add(str(path[0]))
        elif error.validator == "required" and isinstance(error.instance, dict):
            required: Any = error.validator_value
            broken.update(str(key) for key in required if key not in error.instance)
        else:
            broken.add("")  # the document as a whole: no section can be trusted
    broken.update(str(path[0]) for path in non_finite if path)
    return frozenset(broken), unknown


def _without(document: Document, unknown: list[tuple[str | int, ...]]) -> Document:
    """A copy of the document with the unknown keys removed (positions stay those of the file)."""
    data = copy.deepcopy(document.data)
    for path in unknown:
        node: Any = data
        for part in path[:-1]:
            node = node[part]
        node.pop(path[-1], None)
    return dataclasses.replace(document, data=data)
