"""Text from outside (a server's label values, error strings) made safe to print on a terminal."""

from __future__ import annotations


def _escape(char: str) -> str:
    code = ord(char)
    if code < 0x100:
        return f"\\x{code:02x}"
    if code < 0x10000:
        return f"\\u{code:04x}"
    return f"\\U{code:08x}"


def printable(text: object) -> str:
    """``text`` with every character a terminal would act on rather than show (ESC and the other C0/C1
    controls, newlines, bidi overrides and other format characters) written as its repr-style escape,
    e.g. ``\\x1b``; everything else, backslashes included, as it is."""
    value = str(text)
    if value.isprintable():
        return value
    return "".join(char if char.isprintable() else _escape(char) for char in value)
