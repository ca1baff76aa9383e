"""Deterministic JSON: sorted keys, two-space indent, as ``json.dumps(sort_keys=True, indent=2)`` writes it.

The standard library writes indented JSON with its pure-Python encoder (its C encoder only
writes compact JSON), one generator frame per value; dashboards are most of the bytes the
compiler writes after the tests, so this writer builds the same text with one list of parts.
Strings go through the C string encoder. Objects JSON cannot write are handed to ``default``
(the Grafana SDK's builders answer ``to_json()``), which replaces a round trip through
``json.dumps`` and ``json.loads``. A test holds the output to ``json.dumps``, byte for byte.
"""

from __future__ import annotations

import json
from collections.abc import Callable
from typing import Any

_STRING: Callable[[str], str] = json.encoder.encode_basestring  # C, as json.dumps(ensure_ascii=False) uses
_FLOAT_WORDS = {float("inf"): "Infinity", float("-inf"): "-Infinity"}
_STR_ONLY = {str}

Default = Callable[[Any], Any]


def _unknown(data: Any) -> Any:
    raise TypeError(f"Object of type {type(data).__name__} is not JSON serializable")


def dumps(data: Any, default: Default = _unknown) -> str:
    """``json.dumps(json.loads(json.dumps(data, default=default)), sort_keys=True, indent=2,
    ensure_ascii=False)``, byte for byte."""
    out: list[str] = []
    _value(data, "\n", out, default)
    return "".join(out)


def _value(data: Any, newline: str, out: list[str], default: Default) -> None:
    kind = type(data)
    if kind is str:
        out.append(_STRING(data))
    elif kind is dict:
        _object(data, newline, out, default)
    elif kind is list or kind is tuple:
        _array(data, newline, out, default)
    elif data is None:
        out.append("null")
    elif data is True:
        out.append("true")
    elif data is False:
        out.append("false")
    elif kind is float:
        out.append(_float(data))
    elif isinstance(data, str):
        out.append(_STRING(data))
    elif isinstance(data, int):
        out.append(int.__repr__(data))
    elif isinstance(data, float):
        out.append(_float(data))
    elif isinstance(data, dict):
        _object(data, newline, out, default)
    elif isinstance(data, list | tuple):
        _array(data, newline, out, default)
    else:
        _value(default(data), newline, out, default)


def _float(number: float) -> str:
    if number != number:
        return "NaN"
    return _FLOAT_WORDS.get(number) or float.__repr__(number)


def _key(key: Any) -> str:
    """A key as JSON writes it (a string; numbers, booleans and null as their JSON text)."""
    if isinstance(key, str):
        return str(key)
    if key is None or isinstance(key, bool | int | float):
        parts: list[str] = []
        _value(key, "", parts, _unknown)
        return "".join(parts)
    raise TypeError(f"keys must be str, int, float, bool or None, not {type(key).__name__}")


def _object(data: dict[Any, Any], newline: str, out: list[str], default: Default) -> None:
    if not data:
        out.append("{}")
        return
    inner = newline + "  "
    if set(map(type, data)) == _STR_ONLY:  # the usual object: its keys sort as they are
        items = sorted(data.items())
    else:
        items = sorted({_key(key): value for key, value in data.items()}.items())
    separator = "{" + inner
    for key, value in items:
        kind = type(value)
        if kind is str:  # the usual values written here, the rest by ``_value``
            out.append(f"{separator}{_STRING(key)}: {_STRING(value)}")
        elif kind is int:
            out.append(f"{separator}{_STRING(key)}: {int.__repr__(value)}")
        else:
            out.append(f"{separator}{_STRING(key)}: ")
            _value(value, inner, out, default)
        separator = "," + inner
    out.append(newline + "}")


def _array(data: list[Any] | tuple[Any, ...], newline: str, out: list[str], default: Default) -> None:
    if not data:
        out.append("[]")
        return
    inner = newline + "  "
    separator = "[" + inner
    for item in data:
        if type(item) is str:
            out.append(separator + _STRING(item))
        else:
            out.append(separator)
            _value(item, inner, out, default)
        separator = "," + inner
    out.append(newline + "]")


# Inside an HTML <script> element the text ends at the first "</script" whatever JSON means
# there, "<!--" changes how it is read, and U+2028/U+2029 end a line in older JavaScript; these
# characters only ever occur inside JSON strings, where a \u escape means the same character.
_SCRIPT_ESCAPES = {ord("<"): "\\u003c", ord(">"): "\\u003e", ord("&"): "\\u0026", 0x2028: "\\u2028", 0x2029: "\\u2029"}


def for_script(data: Any) -> str:
    """Compact, sorted JSON that is safe as the text of an HTML ``<script>`` element: ``<``, ``>``, ``&``,
    U+2028 and U+2029 written as ``\\u`` escapes, so no spec text can close the element or open a comment."""
    text = json.dumps(data, sort_keys=True, ensure_ascii=False, separators=(",", ":"), allow_nan=False)
    return text.translate(_SCRIPT_ESCAPES)
