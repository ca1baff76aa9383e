"""Samples in Prometheus's printed form, as promtool's unit-test failures list them."""

from __future__ import annotations

import math

import pytest

from compiler.promql.samples import SampleSyntaxError, parse_samples


def test_label_value_with_a_closing_brace_is_part_of_the_value() -> None:
    text = r'{alertname="X", cluster="a}b", note="q\"}, {x=\"y\"} 1"} 1.5E+01, {} -1E+00'
    assert parse_samples(text) == [
        ({"alertname": "X", "cluster": "a}b", "note": 'q"}, {x="y"} 1'}, 15.0),
        ({}, -1.0),
    ]


def test_go_escapes_are_decoded() -> None:
    """strconv.Quote: simple escapes, \\x bytes of UTF-8, \\u and \\U runes."""
    text = r'{a="tab\there\nnew\\", b="\xe2\x82\xac", c="\u00e9\U0001f600", d="\x07"} 2E+00'
    assert parse_samples(text) == [({"a": "tab\there\nnew\\", "b": "€", "c": "é\U0001f600", "d": "\a"}, 2.0)]


def test_special_values_and_nil() -> None:
    assert parse_samples("nil") == []
    values = [value for _, value in parse_samples("{} NaN, {} +Inf, {} -Inf, {} 0E+00")]
    assert math.isnan(values[0]) and values[1:] == [math.inf, -math.inf, 0.0]


@pytest.mark.parametrize(
    "text",
    ['{a="x"', '{a="x} 1', "{a=x} 1", '{a="x"} one', '{a="x"}1', "{} 1 {} 2", r'{a="\q"} 1', r'{a="\x4"} 1', ""],
)
def test_anything_else_is_an_error_not_a_partial_answer(text: str) -> None:
    with pytest.raises(SampleSyntaxError):
        parse_samples(text)
