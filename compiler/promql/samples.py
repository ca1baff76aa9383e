"""Samples as Prometheus prints them: ``{a="x", b="y\\"}"} 1.5E+01, {} -1E+00`` (or ``nil``).

promtool's unit-test failures list what a query returned in this form (``labels.Labels.String``:
names bare, values quoted by Go's ``strconv.Quote``, then ``strconv.FormatFloat(v, 'E', -1, 64)``).
Label values are arbitrary text, so a ``}``, a ``, {`` or a quote inside one is read as part of the
value here, never as the end of the label set; anything that is not this form is an error, so a
caller never takes a half-read answer for the whole one.
"""

from __future__ import annotations

import re

__all__ = ["SampleSyntaxError", "parse_samples"]

_NAME = re.compile(r"[a-zA-Z_][a-zA-Z0-9_]*")
_VALUE = re.compile(r"[-+]?(?:Inf|NaN|[0-9]+(?:\.[0-9]*)?(?:[eE][-+]?[0-9]+)?)")
_SIMPLE = {"a": "\a", "b": "\b", "f": "\f", "n": "\n", "r": "\r", "t": "\t", "v": "\v", "\\": "\\", '"': '"', "'": "'"}
_HEX_DIGITS = {"x": 2, "u": 4, "U": 8}


class SampleSyntaxError(ValueError):
    """The text is not a list of samples in Prometheus's form; the message says where."""


def _fail(text: str, at: int, expected: str) -> SampleSyntaxError:
    return SampleSyntaxError(f"expected {expected} at character {at + 1} of {text[:200]!r}")


def _go_string(text: str, at: int) -> tuple[str, int]:
    """The Go double-quoted string starting at ``text[at]`` (a ``"``), unquoted; and the index after it."""
    if text[at : at + 1] != '"':
        raise _fail(text, at, "a quoted label value")
    out, pending, index = [], bytearray(), at + 1  # \xHH escapes are bytes: a run of them is UTF-8
    while index < len(text):
        char = text[index]
        if char == '"':
            out.append(pending.decode("utf-8", "replace"))
            return "".join(out), index + 1
        if char != "\\":
            out.append(pending.decode("utf-8", "replace") + char)
            pending.clear()
            index += 1
            continue
        kind = text[index + 1 : index + 2]
        if kind in _SIMPLE:
            out.append(pending.decode("utf-8", "replace") + _SIMPLE[kind])
            pending.clear()
            index += 2
        elif kind in _HEX_DIGITS or (kind and kind in "01234567"):
            octal = kind not in _HEX_DIGITS
            start, width = (index + 1, 3) if octal else (index + 2, _HEX_DIGITS[kind])
            digits = text[start : start + width]
            try:
                code = int(digits, 8 if octal else 16) if len(digits) == width else -1
            except ValueError:
                code = -1
            if code < 0 or code > (0xFF if octal else 0x10FFFF):
                raise _fail(text, index, f"an escape with {width} digits")
            if octal or kind == "x":
                pending.append(code)
            else:
                out.append(pending.decode("utf-8", "replace") + chr(code))
                pending.clear()
            index = start + width
        else:
            raise _fail(text, index, "a Go string escape")
    raise _fail(text, at, "a closing quote")


def _label_set(text: str, at: int) -> tuple[dict[str, str], int]:
    """The label set ``{name="value", ...}`` starting at ``text[at]``; and the index after its ``}``."""
    if text[at : at + 1] != "{":
        raise _fail(text, at, "'{'")
    labels: dict[str, str] = {}
    index = at + 1
    while text[index : index + 1] != "}":
        if labels:
            if text[index : index + 2] != ", ":
                raise _fail(text, index, "', ' or '}'")
            index += 2
        name = _NAME.match(text, index)
        if name is None or text[name.end() : name.end() + 1] != "=":
            raise _fail(text, index, "a label name and '='")
        labels[name.group()], index = _go_string(text, name.end() + 1)
    return labels, index + 1


def parse_samples(text: str) -> list[tuple[dict[str, str], float]]:
    """Every sample in ``text``, in order: its labels and its value. ``nil`` is none."""
    text = text.strip()
    if text == "nil":
        return []
    samples, index = [], 0
    while True:
        labels, index = _label_set(text, index)
        value = _VALUE.match(text, index + 1) if text[index : index + 1] == " " else None
        if value is None:
            raise _fail(text, index, "' ' and a number")
        samples.append((labels, float(value.group())))
        index = value.end()
        if index == len(text):
            return samples
        if text[index : index + 2] != ", ":
            raise _fail(text, index, "', ' or the end")
        index += 2
