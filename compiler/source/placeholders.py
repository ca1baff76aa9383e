"""Placeholders that ``slo-compiler import`` writes for what Sloth and OpenSLO do not say.

An imported spec has no owner, family, slice or mitigation of its own. The importer writes
each as a string starting with ``PLACEHOLDER`` followed by what to write there; until it is
replaced, validation reports it at its position with that text, once, and the schema and
section checks leave the value alone (a second message about the same line would only
repeat that it is not filled in).
"""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

from compiler.diagnostics import Diagnostics
from compiler.source.load import Document, PathKey

MARKER = "PLACEHOLDER"  # the importer's values start with "PLACEHOLDER: "


def placeholder(what_to_write: str) -> str:
    """The value the importer writes where a spec needs a fact the source format lacks."""
    return f"{MARKER}: {what_to_write}"


def find(value: Any, path: PathKey = ()) -> Iterator[tuple[PathKey, str]]:
    """Every placeholder string in a document, with its path."""
    if isinstance(value, str) and value.startswith(f"{MARKER}:"):
        yield path, value[len(MARKER) + 1 :].strip()
    elif isinstance(value, dict):
        for key, item in value.items():
            yield from find(item, (*path, key))
    elif isinstance(value, list):
        for index, item in enumerate(value):
            yield from find(item, (*path, index))


def report(document: Document, diagnostics: Diagnostics) -> list[PathKey]:
    """Report each placeholder at its value; returns their paths."""
    found = list(find(document.data))
    for path, text in found:
        diagnostics.error(document.position(path), f"placeholder left by 'slo-compiler import': {text}")
    return [path for path, _ in found]


def covers(placeholders: list[PathKey], path: PathKey) -> bool:
    """Whether a schema problem at ``path`` is about a placeholder (already reported)."""
    return any(tuple(path[: len(p)]) == tuple(p) for p in placeholders)
