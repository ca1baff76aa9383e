"""Synthesise label values that satisfy PromQL label matchers.

The compiler generates promtool unit tests whose input series are invented,
not recorded.  Every invented series must be selected by the user's
selectors (otherwise the test exercises nothing), so for each label we need a
concrete value that passes all of its matchers.  For ``=`` that is trivial;
for ``=~`` we derive candidates from the regex itself, because generic guesses
(``"x"``) rarely satisfy patterns such as ``5..`` or ``POST|PUT``.

Prometheus label regexes are RE2 and fully anchored.  We evaluate them with
Python's :mod:`re` (``fullmatch``), which agrees with RE2 on the syntax used
in practice; RE2-only syntax (e.g. ``\\pL``) raises :class:`ValueError`.
Candidate generation walks Python's own regex parse tree (``re._parser``),
so it understands exactly the syntax that verification uses.  Every
candidate is verified with ``re.fullmatch`` before it is returned, so the
generator only has to be *plausible*, never exactly right.
"""

from __future__ import annotations

import functools
import re
from collections.abc import Callable, Iterator, Mapping, Sequence
from typing import TYPE_CHECKING, Any

from compiler.promql import Matcher, is_valid_metric_name

if TYPE_CHECKING:  # typeshed only describes the deprecated public alias.
    import sre_parse as _sre
else:  # Same module at runtime, without the DeprecationWarning of ``sre_parse``.
    from re import _parser as _sre

__all__ = ["label_value", "matches", "regex_examples", "satisfies", "series_labels"]

_NAME_LABEL = "__name__"

# Most candidates kept per regex node.  Bounds the search (products of nodes
# are truncated to this size) while leaving room for many distinct variants.
_MAX_CANDIDATES = 64
# Repeats are expanded for their minimum count and a couple more.
_EXTRA_REPEATS = 2
# Prefix variants tried for ``prefer`` (``prefer-1``, ``prefer-2`` …).
_PREFER_VARIANTS = 64
# Characters used for ``.`` and negated classes.  Digits first so that
# status-code patterns such as ``5..`` give readable values (``500``).
_ANY_POOL = "0123456789abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ_-.:/"
_GENERIC = ("x", "a", "synthetic", *(f"value-{n}" for n in range(_MAX_CANDIDATES)), *(str(n) for n in range(100)))

_CATEGORY_CHARS: dict[int, str] = {
    _sre.CATEGORY_DIGIT: "0123456789",
    _sre.CATEGORY_NOT_DIGIT: "abcdefghijklmnopqrstuvwxyz_-",
    _sre.CATEGORY_SPACE: " \t",
    _sre.CATEGORY_NOT_SPACE: "a0bcdefghijklmnopqrstuvwxyz123456789",
    _sre.CATEGORY_WORD: "abcdefghijklmnopqrstuvwxyz0123456789_ABCDEFGHIJKLMNOPQRSTUVWXYZ",
    _sre.CATEGORY_NOT_WORD: "-.:/ ",
    _sre.CATEGORY_LINEBREAK: "\n",
    _sre.CATEGORY_NOT_LINEBREAK: "a0bcdefghijklmnopqrstuvwxyz",
}
_REPEAT_OPS = frozenset(
    op for op in (_sre.MAX_REPEAT, _sre.MIN_REPEAT, getattr(_sre, "POSSESSIVE_REPEAT", None)) if op is not None
)
_EMPTY_OPS = frozenset({_sre.AT, _sre.ASSERT, _sre.ASSERT_NOT, _sre.GROUPREF, _sre.GROUPREF_EXISTS})


# --------------------------------------------------------------------------
# Matching
# --------------------------------------------------------------------------


@functools.lru_cache(maxsize=1024)
def _compile(pattern: str) -> re.Pattern[str]:
    """Compile a matcher regex once; callers test many candidates against it."""
    try:
        # No ``(?:…)`` wrapper: ``fullmatch`` already anchors every branch, and
        # wrapping would break leading global flags such as ``(?i)``.
        return re.compile(pattern)
    except re.error as exc:
        raise ValueError(f"unsupported or invalid regular expression {pattern!r}: {exc}") from exc


def _matcher_ok(value: str, matcher: Matcher) -> bool:
    """Apply one matcher to one value (regexes fully anchored, as in Prometheus)."""
    if matcher.op == "=":
        return value == matcher.value
    if matcher.op == "!=":
        return value != matcher.value
    found = _compile(matcher.value).fullmatch(value) is not None
    return found if matcher.op == "=~" else not found


def satisfies(value: str, matchers: Sequence[Matcher]) -> bool:
    """Return whether ``value`` passes every matcher in ``matchers``.

    Label names are not checked: callers pass the matchers of one label.
    ``""`` stands for a missing label, exactly as Prometheus evaluates
    matchers against absent labels (so ``a!="x"`` accepts it).
    """
    return all(_matcher_ok(value, m) for m in matchers)


def matches(labels: Mapping[str, str], matchers: Sequence[Matcher]) -> bool:
    """Return whether a series with ``labels`` is selected by ``matchers``.

    Full selector semantics, including ``__name__``; a missing label (or one
    with an empty value, which Prometheus does not store) reads as ``""``.
    """
    return all(_matcher_ok(labels.get(m.name, ""), m) for m in matchers)


# --------------------------------------------------------------------------
# Candidate generation from a regex parse tree
# --------------------------------------------------------------------------


def _dedupe(items: Iterator[str] | Sequence[str], limit: int = _MAX_CANDIDATES) -> list[str]:
    """First ``limit`` distinct items, order kept (order encodes preference)."""
    seen: dict[str, None] = {}
    for item in items:
        if item not in seen:
            seen[item] = None
            if len(seen) >= limit:
                break
    return list(seen)


def _product(parts: Sequence[Sequence[str]]) -> list[str]:
    """Concatenations of one option per part, lowest total option rank first.

    Ranking by the sum of option indices (a diagonal walk) makes the first
    result use every part's preferred option and later results vary one part
    at a time, which gives many distinct yet simple strings within the bound.
    """
    acc: list[tuple[str, int]] = [("", 0)]
    for options in parts:
        if not options:
            return []
        combined = [(text + option, rank + i) for text, rank in acc for i, option in enumerate(options)]
        combined.sort(key=lambda item: item[1])  # stable: keeps earlier-prefix order within a rank
        seen: set[str] = set()
        acc = []
        for text, rank in combined:
            if text not in seen:
                seen.add(text)
                acc.append((text, rank))
                if len(acc) >= _MAX_CANDIDATES:
                    break
    return [text for text, _ in acc]


def _interleave(groups: Sequence[Sequence[str]]) -> list[str]:
    """Round-robin over alternatives so every branch's best string comes early."""
    out: list[str] = []
    for i in range(max((len(g) for g in groups), default=0)):
        out.extend(g[i] for g in groups if i < len(g))
    return _dedupe(out)


def _in_class(ch: str, items: Sequence[tuple[Any, Any]]) -> bool:
    """Whether ``ch`` belongs to a parsed character class (NEGATE ignored here)."""
    code = ord(ch)
    for op, av in items:
        if op == _sre.LITERAL and code == av:
            return True
        if op == _sre.RANGE and av[0] <= code <= av[1]:
            return True
        if op == _sre.CATEGORY and ch in _CATEGORY_CHARS.get(av, ""):
            return True
    return False


def _class_chars(items: Sequence[tuple[Any, Any]]) -> list[str]:
    """Candidate characters for ``[...]``: members in order, or non-members if negated."""
    if items and items[0][0] == _sre.NEGATE:
        rest = items[1:]
        return [ch for ch in _ANY_POOL if not _in_class(ch, rest)]
    chars: list[str] = []
    for op, av in items:
        if op == _sre.LITERAL:
            chars.append(chr(av))
        elif op == _sre.RANGE:
            low, high = av
            chars.extend(chr(c) for c in range(low, min(high, low + _MAX_CANDIDATES) + 1))
        elif op == _sre.CATEGORY:
            chars.extend(_CATEGORY_CHARS.get(av, ""))
    return _dedupe(chars)


def _expand_item(op: Any, av: Any) -> list[str]:
    """Candidate strings for one parse-tree node, preferred first."""
    if op == _sre.LITERAL:
        return [chr(av)]
    if op == _sre.NOT_LITERAL:
        return [ch for ch in _ANY_POOL if ord(ch) != av]
    if op == _sre.ANY:
        return list(_ANY_POOL)
    if op == _sre.IN:
        return _class_chars(av)
    if op == _sre.BRANCH:
        return _interleave([_expand_seq(branch) for branch in av[1]])
    if op == _sre.SUBPATTERN:
        return _expand_seq(av[3])
    if op == getattr(_sre, "ATOMIC_GROUP", None):
        return _expand_seq(av)
    if op in _REPEAT_OPS:
        low, high, sub = av
        inner = _expand_seq(sub)
        out: list[str] = []
        for count in range(low, min(high, low + _EXTRA_REPEATS) + 1):
            out.extend(_product([inner] * count) if count else [""])
        return _dedupe(out)
    if op in _EMPTY_OPS:
        # Anchors and lookarounds consume nothing; backreferences are not RE2
        # and are left to verification to reject.
        return [""]
    return [""]


def _expand_seq(sub: Any) -> list[str]:
    """Candidates for a sequence of nodes (a concatenation)."""
    return _product([_expand_item(op, av) for op, av in sub])


@functools.lru_cache(maxsize=1024)
def _regex_candidates(pattern: str) -> tuple[str, ...]:
    """Plausible strings matching ``pattern``, simplest first (unverified)."""
    _compile(pattern)  # Surface syntax errors as ValueError first.
    try:
        parsed = _sre.parse(pattern)
    except re.error:  # Cannot happen after _compile; kept so the cache stays total.
        return ()
    candidates = _expand_seq(parsed)
    if parsed.state.flags & re.IGNORECASE:
        # Case variants are further valid values of e.g. ``(?i)get|list``.
        candidates = _dedupe(
            [*candidates, *(c.upper() for c in candidates), *(c.capitalize() for c in candidates)], 3 * _MAX_CANDIDATES
        )
    return tuple(candidates)


def regex_examples(pattern: str) -> tuple[str, ...]:
    """Strings ``pattern`` plausibly matches, simplest first (unverified; ValueError when invalid).

    Static checks draw witness label values from these (``compiler.promql.matchsets``).
    """
    return _regex_candidates(pattern)


# --------------------------------------------------------------------------
# Value selection
# --------------------------------------------------------------------------


def _candidates(relevant: Sequence[Matcher], prefer: str | None) -> Iterator[str]:
    """All candidate values for one label in preference order (finite, unverified).

    The order never depends on the requested index, which is what makes
    distinct indices yield distinct values.
    """
    if prefer is not None and satisfies(prefer, relevant):
        yield prefer
        for n in range(1, _PREFER_VARIANTS + 1):
            yield f"{prefer}-{n}"
    positive = [_regex_candidates(m.value) for m in relevant if m.op == "=~"]
    for options in positive:
        yield from options
    # Several regexes on one label: try concatenations (``a.*`` and ``.*b`` -> ``ab``).
    for i, first in enumerate(positive):
        for j, second in enumerate(positive):
            if i != j:
                for head in first[:8]:
                    for tail in second[:8]:
                        yield head + tail
    yield from _GENERIC


def _any_ok(_value: str) -> bool:
    """Acceptance test for ordinary labels: any string is a legal label value."""
    return True


def _metric_name_ok(value: str) -> bool:
    """Acceptance test for ``__name__``: input series need a legal metric name."""
    return value == "" or is_valid_metric_name(value)


def _pick(
    label: str, matchers: Sequence[Matcher], index: int, prefer: str | None, accept: Callable[[str], bool]
) -> str | None:
    """Shared implementation of :func:`label_value` with an extra acceptance test."""
    relevant = [m for m in matchers if m.name == label]
    equal = {m.value for m in relevant if m.op == "="}
    if equal:
        # Only one value can satisfy ``=``; it is the answer for every index.
        if len(equal) > 1:
            return None
        (value,) = equal
        return value if satisfies(value, relevant) and accept(value) else None

    found: list[str] = []
    seen: set[str] = set()
    for candidate in _candidates(relevant, prefer):
        if candidate in seen or candidate == "":
            continue
        seen.add(candidate)
        if accept(candidate) and satisfies(candidate, relevant):
            found.append(candidate)
            if len(found) > index:
                return found[index]
    # Exhausted: the empty value (label absent) is the least preferred option.
    if satisfies("", relevant) and accept(""):
        found.append("")
    if not found:
        return None
    # Fewer admissible values than ``index``: cycle, as ``=`` does.
    return found[index % len(found)]


def label_value(label: str, matchers: Sequence[Matcher], index: int = 0, prefer: str | None = None) -> str | None:
    """Return a deterministic value for ``label`` satisfying its matchers in ``matchers``.

    Matchers on other labels are ignored so callers can pass a whole selector.
    Distinct ``index`` values give distinct values as long as the search finds
    enough of them (``=`` admits only one, which is returned for every index;
    beyond what was found, values repeat cyclically).  ``prefer`` is used when
    it satisfies the matchers, so generated tests can reuse meaningful values
    (e.g. the SLO's own ``cluster``).  Non-empty values are preferred; ``""``
    (label absent) is returned only after them.  ``None`` means no value was
    found within the bounded search, which for contradictory matchers (``a="x"``
    with ``a!="x"``) is the right answer.
    """
    return _pick(label, matchers, index, prefer, _any_ok)


def series_labels(matchers: Sequence[Matcher], fixed: Mapping[str, str], index: int = 0) -> dict[str, str] | None:
    """Return the labels of a series selected by ``matchers`` that contains ``fixed``.

    ``fixed`` values win over generated ones, but a fixed value that a matcher
    rejects makes the request impossible (``None``): silently changing it would
    produce a test that checks the wrong series.  ``__name__`` is generated too
    (and must then be a valid metric name) when matchers constrain it.  Labels
    with empty values are omitted because Prometheus does not store them.
    Keys are sorted so generated test files are stable.
    """
    labels: dict[str, str] = {}
    for name, value in fixed.items():
        if not satisfies(value, [m for m in matchers if m.name == name]):
            return None
        labels[name] = value
    for name in dict.fromkeys(m.name for m in matchers):
        if name in fixed:
            continue
        picked = _pick(name, matchers, index, None, _metric_name_ok if name == _NAME_LABEL else _any_ok)
        if picked is None:
            return None
        labels[name] = picked
    result = {name: labels[name] for name in sorted(labels) if labels[name] != ""}
    return result if matches(result, matchers) else None
