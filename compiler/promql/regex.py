"""Label regexes as Prometheus reads them: Go's RE2 syntax, anchored as ``^(?:re)$``.

Prometheus 2.42 compiles a matcher's regex with Go's ``regexp`` as ``"^(?:" + re + ")$"``; this
module does the same with RE2 (``google-re2``), the C++ library Go's syntax follows, and refuses
the two constructs C++ RE2 accepts and Go 1.19/1.20 does not (``\\C`` and ``(?<name>...)``).
Python's :mod:`re` is not used for label regexes: it reads ``[[:alpha:]]`` as a set of the
characters ``[:alph`` and refuses ``\\p{Greek}`` and ``\\z``, which Prometheus accepts.

``examples`` generates strings a regex matches, simplest first, and keeps only those RE2 itself
matches: the generator walks RE2's syntax to find plausible strings (literals, alternation,
repetition, groups and flags), and asks RE2 which characters a class, ``.`` or escape matches,
so ``[[:alpha:]]``, ``\\pL`` and ``(?i)[a-c]`` need no table of their own here.
"""

from __future__ import annotations

import functools
import heapq
import itertools
from collections.abc import Iterator, Sequence
from typing import Any

import re2

__all__ = [
    "MAX_NESTING",
    "MAX_REGEX_CHARS",
    "MAX_VALUE_CHARS",
    "RegexError",
    "examples",
    "fullmatch",
    "match",
    "problem",
]

# A label regex longer than this is refused before RE2 sees it: RE2's compile time grows with the
# pattern (a second for 4,096 characters of (.|x), ten for 350,000 of a{1000}), and no matcher needs more.
MAX_REGEX_CHARS = 4_096
# Groups may nest this deep (Go's regexp refuses about 1,000 levels; no label regex needs 100).
MAX_NESTING = 100
# Generated label values are at most this long; a regex whose shortest match is longer has no test value.
MAX_VALUE_CHARS = 4_096
# Most candidates kept per regex node (products of nodes are truncated to this size).
_MAX_CANDIDATES = 64
# Repeats are expanded for their minimum count and a couple more.
_EXTRA_REPEATS = 2
# A concatenation of many parts keeps fewer options per part, so the work stays linear in the pattern.
_PRODUCT_BUDGET = 4_096
# Characters tried for a class, ``.`` or an escape, in preference order: readable ASCII first (digits
# first, so ``5..`` gives ``500``), then the rest of ASCII, then the Basic Multilingual Plane, then
# control characters, then the other planes. A tier is searched only when the ones before found nothing.
_PREFERRED = "0123456789abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ_-.:/"
_ASCII = _PREFERRED + "".join(chr(c) for c in range(0x20, 0x7F) if chr(c) not in _PREFERRED)
# (Planes 1-3 hold the assigned characters beyond the BMP; 4-16 are searched by no class.)
_TIERS: tuple[tuple[int, int], ...] = ((0xA0, 0xD7FF), (0xE000, 0xFFFD), (0x00, 0x1F), (0x7F, 0x9F), (0x10000, 0x3FFFF))
_ZERO_WIDTH_ESCAPES = frozenset("AbBz")
_REPEAT_LIMIT = 1000  # RE2 and Go refuse larger counts; the parser never needs more

_OPTIONS = re2.Options()
_OPTIONS.log_errors = False  # RE2 would write every refused pattern to stderr


class RegexError(ValueError):
    """A label regex Prometheus would refuse; ``reason`` says why, in RE2's (or Go's) words."""

    def __init__(self, pattern: str, reason: str) -> None:
        super().__init__(f"invalid regular expression {pattern!r}: {reason}")
        self.reason = reason


def _class_end(pattern: str, index: int) -> int:
    """The index just past the bracketed class that starts at ``pattern[index]`` (``[``)."""
    index += 1
    if pattern[index : index + 1] == "^":
        index += 1
    if pattern[index : index + 1] == "]":  # a leading ] is a member
        index += 1
    while index < len(pattern) and pattern[index] != "]":
        if pattern.startswith("[:", index):
            close = pattern.find(":]", index + 2)
            index = index + 1 if close < 0 else close + 2
        else:
            index += 2 if pattern[index] == "\\" else 1
    return index + 1


def _go_only_problem(pattern: str) -> str | None:
    """What Go's regexp (Prometheus 2.42) refuses and C++ RE2 accepts (``\\C``, ``(?<name>``), or groups
    nested deeper than the limit (Go refuses 1,000 levels, and the generator walks them recursively)."""
    index, depth = 0, 0
    while index < len(pattern):
        char = pattern[index]
        if char == "\\":
            following = pattern[index + 1 : index + 2]
            if following == "C":
                return "invalid escape sequence: \\C (Go's regexp, which Prometheus uses, has no \\C)"
            if following == "Q":
                end = pattern.find("\\E", index + 2)
                index = len(pattern) if end < 0 else end + 2
                continue
            index += 2
            continue
        if char == "[":
            index = _class_end(pattern, index)
            continue
        if char == "(":
            if pattern.startswith("(?<", index) and pattern[index + 3 : index + 4] not in ("=", "!"):
                return "invalid or unsupported Perl syntax: (?< (write named groups as (?P<name>...))"
            depth += 1
            if depth > MAX_NESTING:
                return f"groups nest more than {MAX_NESTING} levels deep, the limit"
        elif char == ")":
            depth = max(0, depth - 1)
        index += 1
    return None


@functools.lru_cache(maxsize=2048)
def _compiled(pattern: str, anchored: bool = True) -> Any:
    """RE2's compiled form of ``pattern`` (anchored as Prometheus anchors it), or RegexError."""
    if len(pattern) > MAX_REGEX_CHARS:
        raise RegexError(
            pattern[:40] + "...", f"{len(pattern):,} characters long, over the {MAX_REGEX_CHARS:,}-character limit"
        )
    problem_text = _go_only_problem(pattern)
    if problem_text is not None:
        raise RegexError(pattern, problem_text)
    wrapped = f"^(?:{pattern})$" if anchored else pattern
    try:
        return re2.compile(wrapped, _OPTIONS)
    except re2.error as exc:
        reason = exc.args[0] if exc.args else str(exc)
        if isinstance(reason, bytes):
            reason = reason.decode("utf-8", "replace")
        # RE2 quotes the fragment at fault, which may be the whole anchored pattern: show the user's.
        raise RegexError(pattern, str(reason).replace(wrapped, pattern)) from None


def problem(pattern: str) -> str | None:
    """Why Prometheus would refuse ``pattern`` as a label regex, or None when it accepts it."""
    try:
        _compiled(pattern)
    except RegexError as exc:
        return exc.reason
    return None


def match(pattern: str, value: str) -> Any:
    """RE2's match of ``value`` against ``pattern`` anchored as Prometheus anchors it (None when it does not
    match); its groups are numbered as in ``pattern``. RegexError when Prometheus refuses the pattern."""
    return _compiled(pattern).match(value)


@functools.lru_cache(maxsize=65_536)  # the static checks ask the same few values of each selector many times
def fullmatch(pattern: str, value: str) -> bool:
    """Whether a ``=~`` matcher with ``pattern`` selects ``value`` (RegexError when Prometheus refuses it)."""
    return _compiled(pattern).match(value) is not None


# --------------------------------------------------------------------------
# Candidate strings from RE2 syntax
# --------------------------------------------------------------------------


def _dedupe(items: Sequence[str], limit: int = _MAX_CANDIDATES) -> list[str]:
    """First ``limit`` distinct items, order kept (order encodes preference)."""
    return list(dict.fromkeys(item for item in items if len(item) <= MAX_VALUE_CHARS))[:limit]


def _product(parts: Sequence[Sequence[str]]) -> list[str]:
    """Concatenations of one option per part, lowest total option rank first (a diagonal walk), so the
    first result uses every part's preferred option and later ones vary one part at a time."""
    per_part = max(1, _PRODUCT_BUDGET // max(1, len(parts)))
    acc: list[tuple[str, int]] = [("", 0)]
    for options in parts:
        if not options:
            return []
        if len(options) == 1:  # the common case, a literal: no ranking to redo
            acc = [(text + options[0], rank) for text, rank in acc if len(text) + len(options[0]) <= MAX_VALUE_CHARS]
            continue
        # The lowest ranks first, ties in the order the pairs are formed (acc's order, then the option's):
        # ``acc`` is in rank order, so each of its strings gives a run of ranks that only grows, and
        # merging the runs finds the first _MAX_CANDIDATES without forming all len(acc) x per_part pairs.
        runs = [_extended(text, rank, index, options[:per_part]) for index, (text, rank) in enumerate(acc)]
        kept: dict[tuple[str, int], None] = {}
        for rank, _, _, text in heapq.merge(*runs):
            kept[(text, rank)] = None
            if len(kept) == _MAX_CANDIDATES:
                break
        acc = list(kept)
    return [text for text, _ in acc]


def _extended(text: str, rank: int, index: int, options: Sequence[str]) -> Iterator[tuple[int, int, int, str]]:
    """``text`` followed by each option that fits, as (rank, index in acc, option's index, string)."""
    room = MAX_VALUE_CHARS - len(text)
    for position, option in enumerate(options):
        if len(option) <= room:
            yield rank + position, index, position, text + option


def _interleave(groups: Sequence[Sequence[str]]) -> list[str]:
    """Round-robin over alternatives so every branch's best string comes early."""
    out: list[str] = []
    for i in range(max((len(g) for g in groups), default=0)):
        out.extend(g[i] for g in groups if i < len(g))
    return _dedupe(out)


@functools.cache
def _pool(low: int, high: int) -> str:
    return "".join(chr(code) for code in range(low, high + 1))


@functools.lru_cache(maxsize=1024)
def _class_members(text: str, flags: str) -> tuple[str, ...]:
    """Characters the one-character RE2 expression ``text`` (a class, ``.`` or an escape) matches."""
    try:
        regex = _compiled(f"(?{flags}:{text})" if flags else text, anchored=False)
    except RegexError:
        return ()
    found = [match.group(0) for match in itertools.islice(regex.finditer(_ASCII), _MAX_CANDIDATES)]
    for low, high in _TIERS:
        if found:
            break
        pool = _pool(low, high)
        found = [match.group(0) for match in itertools.islice(regex.finditer(pool), _MAX_CANDIDATES)]
    return tuple(char for char in found if len(char) == 1)


class _Generator:
    """A recursive-descent walk over RE2 syntax that returns candidate strings instead of a tree.

    Anything it misreads only costs candidates: every result is checked with RE2 afterwards.
    """

    def __init__(self, pattern: str) -> None:
        self.text = pattern
        self.at = 0
        self.flags: set[str] = set()

    def peek(self, length: int = 1) -> str:
        return self.text[self.at : self.at + length]

    def alternation(self) -> list[str]:
        branches = [self.concatenation()]
        while self.peek() == "|":
            self.at += 1
            branches.append(self.concatenation())
        return _interleave(branches)

    def concatenation(self) -> list[str]:
        parts: list[list[str]] = []
        while self.at < len(self.text) and self.peek() not in ("|", ")"):
            atom = self.atom()
            parts.append(self.repeat(atom))
        return _product(parts)

    def repeat(self, atom: list[str]) -> list[str]:
        while True:
            char = self.peek()
            if char in ("*", "+", "?"):
                self.at += 1
                low, high = {"*": (0, None), "+": (1, None), "?": (0, 1)}[char]
            elif char == "{" and (counts := self._counts()) is not None:
                low, high = counts
            else:
                return atom
            if self.peek() == "?":  # lazy: the same strings match
                self.at += 1
            atom = self._expand(atom, low, high)

    def _counts(self) -> tuple[int, int | None] | None:
        end = self.text.find("}", self.at)
        body = self.text[self.at + 1 : end] if end > 0 else ""
        low_text, comma, high_text = body.partition(",")
        if not low_text.isdigit() or (high_text and not high_text.isdigit()):
            return None  # not a repeat: RE2 reads the brace as a literal
        self.at = end + 1
        low = min(int(low_text), _REPEAT_LIMIT)
        high = low if not comma else (min(int(high_text), _REPEAT_LIMIT) if high_text else None)
        return low, high

    @staticmethod
    def _expand(inner: list[str], low: int, high: int | None) -> list[str]:
        top = low + _EXTRA_REPEATS if high is None else min(high, low + _EXTRA_REPEATS)
        out: list[str] = []
        for count in range(low, top + 1):
            if count == 0:
                out.append("")
            elif count * min((len(s) for s in inner), default=0) > MAX_VALUE_CHARS:
                break
            elif count > 8:  # a long run: the preferred option repeated, then one varied position
                out.extend(option + inner[0] * (count - 1) for option in inner[:_MAX_CANDIDATES])
            else:
                out.extend(_product([inner] * count))
        return _dedupe(out)

    def atom(self) -> list[str]:
        char = self.peek()
        if char == "(":
            return self.group()
        if char == "[":
            return self.one_of(self._class_text())
        if char == ".":
            self.at += 1
            return self.one_of(".")
        if char in ("^", "$"):
            self.at += 1
            return [""]
        if char == "\\":
            return self.escape()
        self.at += 1
        return self.literal(char)

    def literal(self, char: str) -> list[str]:
        if "i" in self.flags and char.swapcase() != char:
            return [char, char.swapcase()]
        return [char]

    def one_of(self, text: str) -> list[str]:
        flags = "".join(sorted(self.flags & {"i", "s"}))
        return list(_class_members(text, flags))

    def group(self) -> list[str]:
        self.at += 1  # (
        saved = set(self.flags)
        if self.peek() == "?":
            end = self.at + 1
            while end < len(self.text) and self.text[end] not in (":", ")", "<"):
                end += 1
            head = self.text[self.at + 1 : end]
            if head.startswith("P") or self.text[end : end + 1] == "<":  # (?P<name>...) or (?<name>...)
                close = self.text.find(">", end)
                self.at = len(self.text) if close < 0 else close + 1
            else:
                self._set_flags(head)
                self.at = end + 1
                if self.text[end : end + 1] == ")":  # (?i): the flags hold to the end of the enclosing group
                    return [""]
        found = self.alternation()
        if self.peek() == ")":
            self.at += 1
        self.flags = saved
        return found

    def _set_flags(self, text: str) -> None:
        on, _, off = text.partition("-")
        self.flags |= set(on)
        self.flags -= set(off)

    def _class_text(self) -> str:
        """The source text of a bracketed class, ``[`` to its closing ``]``."""
        start = self.at
        self.at = _class_end(self.text, start)
        return self.text[start : self.at]

    def _skip_escape(self) -> None:
        """Move past one escape: ``\\p{Greek}``, ``\\pL``, ``\\x{263a}``, ``\\x41``, ``\\123``, ``\\n``."""
        kind = self.text[self.at + 1 : self.at + 2]
        self.at += 2
        if kind in ("p", "P", "x") and self.peek() == "{":
            close = self.text.find("}", self.at)
            self.at = len(self.text) if close < 0 else close + 1
        elif kind in ("p", "P"):
            self.at += 1
        elif kind == "x":
            self.at += 2
        elif kind.isdigit():  # an octal code: up to two more digits
            for _ in range(2):
                if self.peek() == "" or self.peek() not in "01234567":
                    break
                self.at += 1

    def escape(self) -> list[str]:
        kind = self.text[self.at + 1 : self.at + 2]
        if kind == "Q":
            end = self.text.find("\\E", self.at + 2)
            stop = len(self.text) if end < 0 else end
            quoted = self.text[self.at + 2 : stop]
            self.at = len(self.text) if end < 0 else end + 2
            return _product([self.literal(char) for char in quoted]) if quoted else [""]
        if kind in _ZERO_WIDTH_ESCAPES:
            self.at += 2
            return [""]
        start = self.at
        self._skip_escape()
        return self.one_of(self.text[start : self.at])


@functools.lru_cache(maxsize=1024)
def examples(pattern: str) -> tuple[str, ...]:
    """Strings ``pattern`` matches (RE2, anchored), simplest first; RegexError when Prometheus refuses it.

    Every string is checked with RE2. Case variants follow for ``(?i)`` regexes; the empty string is
    included when the regex matches it, last.
    """
    regex = _compiled(pattern)
    generator = _Generator(pattern)
    candidates = generator.alternation()
    while generator.at < len(pattern):  # an unbalanced ")" (Prometheus's wrapper closes the group there)
        generator.at += 1
        candidates += generator.alternation()
    found = [c for c in _dedupe(candidates, 3 * _MAX_CANDIDATES) if c and regex.match(c) is not None]
    if regex.match("") is not None:
        found.append("")
    return tuple(found)
