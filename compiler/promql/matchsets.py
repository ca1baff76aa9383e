"""Witnesses for what label matchers select: a series one selector matches and another does not.

Whether one regex matcher selects a subset of another is hard to decide in general, but
a single concrete label set that one selector matches and another misses is a proof.
The compiler looks for such witnesses among values drawn from the matchers themselves:
their literal values, strings their regexes generate (``compiler.promql.synth``), the empty
value of an absent label and a value none of them names. Finding none proves nothing,
so callers report only what a witness shows: latency thresholds whose ``when`` leave
series uncovered or overlap, and bad events that the total does not count.
"""

from __future__ import annotations

import itertools
from collections.abc import Callable, Iterator, Mapping, Sequence

from compiler.promql import Matcher, quote, synth

# A value no matcher is likely to name: it stands for "any other value" of a label.
OTHER_VALUE = "any-other-value"
_EXAMPLES_PER_REGEX = 8
_MAX_COMBINATIONS = 4096


def _values_for(label: str, matchers: Sequence[Matcher]) -> list[str]:
    """Candidate values of ``label``: absent, every value the matchers name or generate, and another."""
    values = [""]
    for matcher in matchers:
        if matcher.name != label:
            continue
        if matcher.op in ("=", "!="):
            values.append(matcher.value)
        else:
            try:
                values.extend(synth.regex_examples(matcher.value)[:_EXAMPLES_PER_REGEX])
            except ValueError:
                continue
    values.append(OTHER_VALUE)
    return list(dict.fromkeys(values))


def label_sets(selectors: Sequence[Sequence[Matcher]]) -> Iterator[dict[str, str]]:
    """Label sets over every label the selectors constrain (``__name__`` aside), bounded in number."""
    every = [matcher for selector in selectors for matcher in selector if matcher.name != "__name__"]
    labels = sorted({matcher.name for matcher in every})
    choices = [_values_for(label, every) for label in labels]
    for combination in itertools.islice(itertools.product(*choices), _MAX_COMBINATIONS):
        yield dict(zip(labels, combination, strict=True))


def _without_name(selector: Sequence[Matcher]) -> list[Matcher]:
    return [matcher for matcher in selector if matcher.name != "__name__"]


def find(selectors: Sequence[Sequence[Matcher]], wanted: Callable[[Mapping[str, str]], bool]) -> dict[str, str] | None:
    """The first candidate label set for which ``wanted`` holds, or None (also when a regex is invalid)."""
    try:
        return next((labels for labels in label_sets(selectors) if wanted(labels)), None)
    except ValueError:  # a regex Prometheus refuses (reported where the spec is read): nothing can be decided
        return None


def selects(labels: Mapping[str, str], selector: Sequence[Matcher]) -> bool:
    """Whether ``selector`` (its ``__name__`` aside) selects a series with ``labels``."""
    return synth.matches(labels, _without_name(selector))


def describe(labels: Mapping[str, str], seen: Sequence[Sequence[Matcher]] = ()) -> str:
    """A label set for a message: absent labels and 'any other value' spelled out."""
    parts = []
    for label, value in sorted(labels.items()):
        if value == OTHER_VALUE:
            named = [quote(v) for v in _values_for(label, [m for s in seen for m in s]) if v not in ("", OTHER_VALUE)]
            parts.append(f"{label} other than {', '.join(named)}" if named else f"any {label}")
        elif value == "":
            parts.append(f"no {label} label")
        else:
            parts.append(f"{label}={quote(value)}")
    return ", ".join(parts) if parts else "every series"
