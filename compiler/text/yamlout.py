"""Deterministic YAML serialisation: insertion order kept, multi-line text as literal blocks.

libyaml's emitter (bundled with the pinned PyYAML wheel) is eight times faster than the
pure-Python one and writes the same text; a test holds the two to byte equality.

Most of what the compiler writes is plain block YAML of mappings, lists and scalars (the
generated promtool tests alone are several megabytes of it), and PyYAML spends most of its
time building a node per value. ``dump`` therefore writes that subset itself: the layout of
block mappings and sequences is fixed, and each distinct scalar's text is asked of PyYAML once
and cached, so quoting and escaping stay PyYAML's own. Anything outside the subset (an object
referenced twice, which PyYAML writes as an anchor; a list of lists; a key that is not a
simple key; a type other than str, int, float, bool and None) is written by PyYAML whole. A
test holds the two to byte equality on every generated file and on random documents.
"""

from __future__ import annotations

import functools
import re
from typing import Any

import yaml

_BASE: type[yaml.SafeDumper] = getattr(yaml, "CSafeDumper", yaml.SafeDumper)
_WIDTH = 1_000_000  # never fold a line: rules and test inputs stay one line each
_SCALAR_TYPES = (str, int, float, bool, type(None))
_LONGEST_DIRECT_SCALAR = 100_000  # longer text is left to PyYAML (it folds at _WIDTH columns)
# Text PyYAML writes plain in block context when its resolver reads it as a string: printable ASCII
# that starts with a letter, digit or '_' (no indicator), ends on neither a space nor ':', and holds
# no ': ' (a key) and no ' #' (a comment). Brackets, quotes and commas inside are plain in block context.
_PLAIN = re.compile(r"[A-Za-z0-9_](?:[ -~]*[!-9;-~])?")
_NOT_PLAIN = (": ", " #")
_ONE_LINE_ASCII = re.compile(r"[ -~]*")  # printable ASCII on one line: plain or single-quoted, never double
# Lines PyYAML can never write plain: empty, an indicator first, a space at either end, a ': ' or ' #'
# inside, a ':' at the end. (Other lines that _PLAIN does not accept are left to PyYAML.)
_NEVER_PLAIN = re.compile(r"\A(?:\Z|[#,\[\]{}&*!|>'\"%@` ]|[-?:](?: |\Z))|: |\ #|[ :]\Z")
_RESOLVER = yaml.resolver.Resolver()
_IMPLICIT = (True, False)
_STR = "tag:yaml.org,2002:str"
_LINE_BREAKS = ("\n", "\r", "\x85", "\u2028", "\u2029")  # what YAML counts as a line break
_LONGEST_SIMPLE_KEY = 120  # PyYAML writes a key of 128 characters or more as a complex key ("? ")


def _represent_str(dumper: yaml.SafeDumper, value: str) -> yaml.ScalarNode:
    if "\n" in value and all(line == line.rstrip() for line in value.split("\n")):
        return dumper.represent_scalar("tag:yaml.org,2002:str", value, style="|")
    return dumper.represent_scalar("tag:yaml.org,2002:str", value)


def _dumper(base: type[yaml.SafeDumper]) -> type[yaml.SafeDumper]:
    dumper: type[yaml.SafeDumper] = type(f"Slo{base.__name__}", (base,), {})
    dumper.add_representer(str, _represent_str)
    return dumper


FAST_DUMPER = _dumper(_BASE)
PURE_DUMPER = _dumper(yaml.SafeDumper)


def pyyaml_dump(data: Any, dumper: type[yaml.SafeDumper] = FAST_DUMPER) -> str:
    """PyYAML's own text for ``data``: what ``dump`` writes, and what the tests hold it to."""
    text: str = yaml.dump(
        data,
        Dumper=dumper,
        sort_keys=False,
        allow_unicode=True,
        default_flow_style=False,
        width=_WIDTH,
    )
    return text


def dump(data: Any, *, dumper: type[yaml.SafeDumper] = FAST_DUMPER) -> str:
    """Serialise ``data``; the same input always gives the same text (PyYAML's, byte for byte)."""
    if dumper is FAST_DUMPER and isinstance(data, dict) and data:
        out: list[str] = []
        try:
            _mapping(data, 0, "", out, set())
        except _NotDirectError:
            return pyyaml_dump(data, dumper)
        return "".join(out)
    return pyyaml_dump(data, dumper)


class _NotDirectError(Exception):
    """The data leaves the subset written directly; PyYAML writes the whole document."""


def _mapping(data: dict[Any, Any], indent: int, first: str, out: list[str], seen: set[int]) -> None:
    """A non-empty block mapping whose keys start at column ``indent``; ``first`` opens its first line."""
    _once(data, seen)
    prefix = first
    for key, value in data.items():
        key_text = _key(key)
        if type(value) is dict and value:
            out.append(f"{prefix}{key_text}:\n")
            _mapping(value, indent + 2, " " * (indent + 2), out, seen)
        elif type(value) is list and value:
            out.append(f"{prefix}{key_text}:\n")
            _sequence(value, indent, out, seen)  # PyYAML does not indent a sequence inside a mapping
        else:
            out.append(f"{prefix}{key_text}: {_value(value, indent, seen)}\n")
        prefix = " " * indent


def _sequence(items: list[Any], indent: int, out: list[str], seen: set[int]) -> None:
    _once(items, seen)
    dash = " " * indent + "- "
    for item in items:
        if type(item) is dict and item:
            _mapping(item, indent + 2, dash, out, seen)
        elif type(item) is list and item:
            raise _NotDirectError  # a list of lists: rare, left to PyYAML
        else:
            out.append(f"{dash}{_value(item, indent, seen)}\n")


def _once(container: dict[Any, Any] | list[Any], seen: set[int]) -> None:
    """PyYAML writes an object met twice as an anchor and an alias: left to it."""
    if id(container) in seen:
        raise _NotDirectError
    seen.add(id(container))


@functools.lru_cache(maxsize=16_384, typed=True)  # a document repeats a few dozen keys thousands of times
def _key(key: Any) -> str:
    if type(key) not in _SCALAR_TYPES or key == "":
        raise _NotDirectError
    if type(key) is str and any(mark in key for mark in _LINE_BREAKS):
        raise _NotDirectError  # a multi-line key is a complex key ("? ...")
    text = _scalar(key)
    if "\n" in text or len(text) > _LONGEST_SIMPLE_KEY:
        raise _NotDirectError
    return text


def _value(value: Any, indent: int, seen: set[int]) -> str:
    """A scalar, ``{}`` or ``[]`` after ``key: `` or ``- ``; continuation lines indented under the key."""
    kind = type(value)
    if kind is dict or kind is list:
        _once(value, seen)
        return "{}" if kind is dict else "[]"
    if kind not in _SCALAR_TYPES or (kind is str and len(value) > _LONGEST_DIRECT_SCALAR):
        raise _NotDirectError
    text = _scalar(value)
    if "\n" not in text or not indent:
        return text
    pad = " " * indent
    head, *rest = text.split("\n")
    return "\n".join([head, *(pad + line if line else line for line in rest)])


def _resolved_tag(value: str) -> str:
    """The tag PyYAML's resolver gives plain ``value`` (``str`` unless it reads as a number, bool, null...)."""
    tag: str = _RESOLVER.resolve(yaml.ScalarNode, value, _IMPLICIT)  # type: ignore[no-untyped-call]
    return tag


def _scalar(value: str | int | float | bool | None) -> str:
    """``_scalar_text``, memoised; but 0.0 and -0.0 are equal keys PyYAML writes apart, so a zero float is
    never looked up (the cache would answer one with the other's text)."""
    if type(value) is float and value == 0.0:
        return _scalar_text(value)
    return _scalar_cached(value)


@functools.lru_cache(maxsize=65_536, typed=True)
def _scalar_cached(value: str | int | float | bool | None) -> str:
    return _scalar_text(value)


def _scalar_text(value: str | int | float | bool | None) -> str:
    """PyYAML's text for one scalar as a block mapping value at column 0 (continuation lines at 2).

    Most strings of a generated file (series, sample vectors, expressions) are written plain, as
    they are: PyYAML does so when no character of the text can start or end a plain scalar
    differently and its resolver reads the text as a string (not ``0x181``, ``1e3``, ``yes``).
    Those are recognised here without a dump, and so are the lines of printable ASCII that PyYAML
    cannot write plain, which it single-quotes; every other scalar is asked of PyYAML.
    """
    if type(value) is str and _ONE_LINE_ASCII.fullmatch(value):
        plain = _PLAIN.fullmatch(value) is not None and not any(mark in value for mark in _NOT_PLAIN)
        if plain and _resolved_tag(value) == _STR:
            return value
        if plain or _NEVER_PLAIN.search(value):
            return "'" + value.replace("'", "''") + "'"  # PyYAML's style for a line it cannot write plain
    text = pyyaml_dump({"k": value}, FAST_DUMPER)
    if not text.startswith("k: ") or text.endswith("\n...\n"):
        raise _NotDirectError  # an open-ended block scalar (kept trailing newlines) ends the document
    return text[3:-1]
