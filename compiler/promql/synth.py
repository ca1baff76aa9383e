"""Synthesise label values that satisfy PromQL label matchers.

The compiler generates promtool unit tests whose input series are invented,
not recorded.  Every invented series must be selected by the user's
selectors (otherwise the test exercises nothing), so for each label we need a
concrete value that passes all of its matchers.  For ``=`` that is trivial;
for ``=~`` we derive candidates from the regex itself, because generic guesses
(``"x"``) rarely satisfy patterns such as ``5..`` or ``POST|PUT``.

Prometheus label regexes are RE2 (Go's syntax) and fully anchored; they are
evaluated with RE2 itself (:mod:`compiler.promql.regex`), which also generates
the candidates, so ``[[:alpha:]]+`` gives ``a`` and ``\\p{Greek}`` a Greek
letter.  Every candidate is verified with RE2 before it is returned, so the
generator only has to be *plausible*, never exactly right.  A regex Prometheus
refuses raises :class:`compiler.promql.regex.RegexError` (a ``ValueError``).
"""

from __future__ import annotations

import functools
from collections.abc import Callable, Iterator, Mapping, Sequence

from compiler.promql import Matcher, is_valid_metric_name, regex

__all__ = ["label_value", "matches", "regex_examples", "satisfies", "series_labels", "unsatisfiable"]

_NAME_LABEL = "__name__"

# Prefix variants tried for ``prefer`` (``prefer-1``, ``prefer-2`` …).
_PREFER_VARIANTS = 64
_GENERIC = ("x", "a", "synthetic", *(f"value-{n}" for n in range(64)), *(str(n) for n in range(100)))


# --------------------------------------------------------------------------
# Matching
# --------------------------------------------------------------------------


def _matcher_ok(value: str, matcher: Matcher) -> bool:
    """Apply one matcher to one value (regexes fully anchored, as in Prometheus)."""
    if matcher.op == "=":
        return value == matcher.value
    if matcher.op == "!=":
        return value != matcher.value
    found = regex.fullmatch(matcher.value, value)
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


def regex_examples(pattern: str) -> tuple[str, ...]:
    """Strings ``pattern`` matches (checked with RE2), simplest first; ValueError when Prometheus refuses it.

    Static checks draw witness label values from these (``compiler.promql.matchsets``).
    """
    return regex.examples(pattern)


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
    positive = [regex.examples(m.value) for m in relevant if m.op == "=~"]
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
    found = _series_labels(tuple(matchers), tuple(fixed.items()), index)
    return None if found is None else dict(found)


@functools.lru_cache(maxsize=16_384)  # a fleet's units and a spec's cases ask the same series again
def _series_labels(
    matchers: tuple[Matcher, ...], fixed_items: tuple[tuple[str, str], ...], index: int
) -> tuple[tuple[str, str], ...] | None:
    fixed = dict(fixed_items)
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
    return tuple(result.items()) if matches(result, matchers) else None


def unsatisfiable(matcher: Matcher) -> str | None:
    """Why no label value passes a regex ``matcher`` (``=~`` or ``!~``) as far as the search goes, else None.

    A selector with such a matcher selects nothing the generated tests could feed it: a regex
    that matches nothing (``[^\\x00-\\x{10FFFF}]``), one whose every match is longer than the
    value limit, or ``!~`` of a regex that matches everything.
    """
    if matcher.op not in ("=~", "!~") or label_value(matcher.name, [matcher]) is not None:
        return None
    if matcher.op == "!~":
        return f"{matcher.render()} leaves out every label value (the regex matches them all), so it selects nothing"
    return (
        f"no label value of at most {regex.MAX_VALUE_CHARS:,} characters matches {matcher.render()}, so the "
        "generated tests cannot give it a series to select; simplify the regex"
    )
