"""``regex._product`` merges its candidates' runs instead of sorting every pair: the same strings, in order.

The reference below is the product as it was first written (every pair formed, sorted by rank, the
first ``_MAX_CANDIDATES`` distinct pairs kept); the strings a regex yields feed every generated test.
"""

from __future__ import annotations

from collections.abc import Sequence
from unittest import mock

from hypothesis import given, settings
from hypothesis import strategies as st

from compiler.promql import regex


def _reference(parts: Sequence[Sequence[str]], limit: int) -> list[str]:
    per_part = max(1, regex._PRODUCT_BUDGET // max(1, len(parts)))
    acc: list[tuple[str, int]] = [("", 0)]
    for options in parts:
        if not options:
            return []
        if len(options) == 1:
            acc = [(text + options[0], rank) for text, rank in acc if len(text) + len(options[0]) <= limit]
            continue
        combined = [
            (text + option, rank + i)
            for text, rank in acc
            for i, option in enumerate(options[:per_part])
            if len(text) + len(option) <= limit
        ]
        combined.sort(key=lambda item: item[1])
        acc = list(dict.fromkeys(combined))[: regex._MAX_CANDIDATES]
    return [text for text, _ in acc]


# Few letters, so that pairs repeat (the same string at the same rank is kept once, at another rank twice).
OPTIONS = st.lists(st.text(alphabet="ab", max_size=3), min_size=0, max_size=12)


@settings(max_examples=300, deadline=None)
@given(st.lists(OPTIONS, min_size=0, max_size=6), st.sampled_from([4, 6, regex.MAX_VALUE_CHARS]))
def test_the_product_is_the_full_sort_of_its_pairs(parts: list[list[str]], limit: int) -> None:
    with mock.patch.object(regex, "MAX_VALUE_CHARS", limit):
        assert regex._product(parts) == _reference(parts, limit)


def test_a_wide_product_keeps_the_lowest_ranks_of_many_pairs() -> None:
    """Three parts of 40 options: 64,000 strings, of which the 64 lowest ranks are kept, ties by part order."""
    parts = [[f"{part}{index:02d}" for index in range(40)] for part in "xyz"]
    found = regex._product(parts)
    assert found == _reference(parts, regex.MAX_VALUE_CHARS)
    assert found[:4] == ["x00y00z00", "x00y00z01", "x00y01z00", "x01y00z00"]
    assert len(found) == regex._MAX_CANDIDATES
