"""Edit values of a YAML spec in place: only the text of each value, at the position the loader kept, changes.

Comments, layout, quoting and every other byte of the file stay as they are (``slo-compiler tune --write``).
Only plain scalars (numbers, durations) are edited; each is checked to read as the value the loader read
there, so a stale position or an odd spelling is refused instead of written over.
"""

from __future__ import annotations

import re
from collections.abc import Mapping
from typing import Any

from compiler.diagnostics import Position
from compiler.source.load import Document, PathKey, _core_scalar
from compiler.source.reader import dotted

# What PyYAML counts as a line break (its marks count lines by these), and a plain scalar's text as a
# number or a duration is written: up to a space, a comment, or the end of a flow collection's item.
_BREAK = re.compile("\r\n|\r|\n|\x85|\u2028|\u2029")
_PLAIN = re.compile(r"[^\s,\[\]{}#]+")


class EditError(Exception):
    def __init__(self, position: Position, message: str) -> None:
        super().__init__(message)
        self.position, self.message = position, message


def _at(data: Any, key: PathKey) -> Any:
    for part in key:
        if isinstance(data, dict) and isinstance(part, str):
            data = data.get(part)
        elif isinstance(data, list) and isinstance(part, int) and 0 <= part < len(data):
            data = data[part]
        else:
            return None
    return data


def replace_values(text: str, document: Document, edits: Mapping[PathKey, str]) -> str:
    """``text`` (the file ``document`` was loaded from) with the value at each key written as its new text."""
    starts = [0] + [match.end() for match in _BREAK.finditer(text)]
    found: list[tuple[int, int, str]] = []
    for key, new in edits.items():
        position = document.value_positions.get(tuple(key))
        if position is None:
            raise EditError(document.position(key), f"{dotted(key)} is not written in this file")
        if position.line > len(starts):
            raise EditError(position, f"{dotted(key)}: the file changed since it was read")
        offset = starts[position.line - 1] + position.col - 1
        match = _PLAIN.match(text, offset)
        if match is None or _core_scalar(match.group()) != _at(document.data, key):
            raise EditError(position, f"{dotted(key)} is not a plain value written here; edit it by hand")
        if _core_scalar(new) != _core_scalar(new.strip()) or _PLAIN.fullmatch(new) is None:
            raise EditError(position, f"{dotted(key)}: {new!r} is not a plain value")
        found.append((match.start(), match.end(), new))
    for begin, end, new in sorted(found, reverse=True):
        text = text[:begin] + new + text[end:]
    return text
