"""Tests for compiler.promql.synth: label values and series that satisfy PromQL matchers."""

from __future__ import annotations

import re

import pytest

from compiler.promql import Matcher
from compiler.promql.synth import label_value, matches, satisfies, series_labels


def m(name: str, op: str, value: str) -> Matcher:
    """Short constructor so matcher-heavy tests stay readable."""
    return Matcher(name, op, value)


# --------------------------------------------------------------------------
# satisfies / matches
# --------------------------------------------------------------------------


def test_satisfies_anchors_regexes_at_both_ends() -> None:
    assert satisfies("500", [m("code", "=~", "5..")])
    assert not satisfies("1500", [m("code", "=~", "5..")])
    assert not satisfies("5000", [m("code", "=~", "5..")])


def test_satisfies_treats_empty_as_missing_label() -> None:
    assert satisfies("", [m("a", "!=", "x")])
    assert satisfies("", [m("a", "=~", "x|")])
    assert not satisfies("", [m("a", "=~", ".+")])
    assert satisfies("", [m("a", "=", "")])


def test_satisfies_requires_every_matcher() -> None:
    both = [m("c", "=~", "5.."), m("c", "!=", "500")]
    assert satisfies("501", both)
    assert not satisfies("500", both)


def test_invalid_regex_raises_value_error() -> None:
    with pytest.raises(ValueError, match="regular expression"):
        satisfies("a", [m("a", "=~", "(")])


def test_matches_uses_name_and_missing_labels() -> None:
    selector = [m("__name__", "=", "up"), m("job", "=~", "api|web"), m("env", "!=", "dev")]
    assert matches({"__name__": "up", "job": "api"}, selector)
    assert not matches({"__name__": "down", "job": "api"}, selector)
    assert not matches({"__name__": "up", "job": "api", "env": "dev"}, selector)
    assert not matches({"__name__": "up"}, selector)


# --------------------------------------------------------------------------
# label_value
# --------------------------------------------------------------------------


def test_alternation_gives_first_branch_then_the_others_in_order() -> None:
    verbs = [m("verb", "=~", "POST|PUT|PATCH|DELETE|APPLY")]
    assert label_value("verb", verbs) == "POST"
    values = [label_value("verb", verbs, i) for i in range(5)]
    assert values == ["POST", "PUT", "PATCH", "DELETE", "APPLY"]


def test_dot_pattern_gives_status_code_and_distinct_variants() -> None:
    codes = [m("code", "=~", "5..")]
    first = label_value("code", codes)
    second = label_value("code", codes, 1)
    assert first == "500"
    assert second is not None
    assert re.fullmatch("5..", second)
    assert second != first


def test_negative_regex_only() -> None:
    value = label_value("device", [m("device", "!~", "lo|veth.+")])
    assert value
    assert value != "lo"
    assert not value.startswith("veth")


def test_empty_alternative_prefers_non_empty_value_then_empty() -> None:
    scope = [m("scope", "=~", "resource|")]
    assert label_value("scope", scope) == "resource"
    assert label_value("scope", scope, 1) == ""


def test_non_empty_value_preferred_even_when_regex_lists_empty_first() -> None:
    assert label_value("scope", [m("scope", "=~", "|resource")]) == "resource"
    assert label_value("pod", [m("pod", "=~", ".*")]) != ""


def test_only_empty_value_is_allowed() -> None:
    assert label_value("scope", [m("scope", "=~", "")]) == ""
    assert label_value("scope", [m("scope", "=", "")], 3) == ""


def test_priority_levels_with_hyphens() -> None:
    levels = "system|node-high|leader-election|workload-high"
    matcher = [m("priority_level", "=~", levels)]
    values = [label_value("priority_level", matcher, i) for i in range(4)]
    assert values == levels.split("|")


def test_optional_group_uses_minimum_repeat_first() -> None:
    le = [m("le", "=~", "1(\\.0)?")]
    assert label_value("le", le) == "1"
    assert label_value("le", le, 1) == "1.0"


def test_positive_and_negative_matchers_on_one_label() -> None:
    matcher = [m("code", "=~", "5.."), m("code", "!~", "50."), m("code", "!=", "510")]
    value = label_value("code", matcher)
    assert value is not None
    assert re.fullmatch("5..", value)
    assert not value.startswith("50")
    assert value != "510"


def test_two_positive_regexes_are_combined() -> None:
    value = label_value("x", [m("x", "=~", "a.*"), m("x", "=~", ".*b")])
    assert value is not None
    assert value.startswith("a")
    assert value.endswith("b")


def test_matchers_on_other_labels_are_ignored() -> None:
    assert label_value("job", [m("code", "=", "500"), m("job", "=", "api")]) == "api"


def test_unconstrained_label_gets_non_empty_distinct_values() -> None:
    values = {label_value("cluster", [], i) for i in range(10)}
    assert len(values) == 10
    assert "" not in values
    assert None not in values


@pytest.mark.parametrize(
    "matchers",
    [
        [m("a", "=", "x"), m("a", "!=", "x")],
        [m("a", "=", "x"), m("a", "=", "y")],
        [m("a", "=~", "POST"), m("a", "!~", "P.*")],
        [m("a", "=~", "[0-9]+"), m("a", "=~", "[a-z]+")],
        [m("a", "=", "x"), m("a", "=~", "y.*")],
    ],
)
def test_impossible_combinations_return_none(matchers: list[Matcher]) -> None:
    assert label_value("a", matchers) is None


def test_equality_returns_the_same_value_for_every_index() -> None:
    matcher = [m("job", "=", "apiserver"), m("job", "=~", "api.*")]
    assert [label_value("job", matcher, i) for i in range(3)] == ["apiserver"] * 3


def test_prefer_is_used_when_valid_and_varied_by_index() -> None:
    assert label_value("cluster", [], prefer="prod") == "prod"
    assert label_value("cluster", [], 1, prefer="prod") == "prod-1"
    assert label_value("verb", [m("verb", "=~", "GET|PUT")], prefer="PUT") == "PUT"
    assert label_value("verb", [m("verb", "=~", "GET|PUT")], 1, prefer="PUT") == "GET"


def test_prefer_is_ignored_when_invalid() -> None:
    assert label_value("verb", [m("verb", "=~", "GET|PUT")], prefer="POST") == "GET"


def test_values_are_deterministic() -> None:
    matcher = [m("pod", "=~", "api-[a-f0-9]{4}")]
    assert label_value("pod", matcher, 7) == label_value("pod", matcher, 7)


@pytest.mark.parametrize(
    "pattern",
    [
        "5..",
        "api-[a-f0-9]{4}",
        "(?i)get|list",
        "[^a-z]+",
        "\\d+\\.\\d+",
        "\\w+:\\s?x",
        "kube-(apiserver|controller-manager|scheduler)",
        "(a|b)(c|d)*",
        ".*-canary",
        "x{2,3}y+?",
    ],
)
def test_generated_values_always_match_and_differ_by_index(pattern: str) -> None:
    matcher = [m("l", "=~", pattern)]
    values = [label_value("l", matcher, i) for i in range(3)]
    for value in values:
        assert value is not None
        assert re.fullmatch(pattern, value), (pattern, value)
    assert len(set(values)) == 3, values


# --------------------------------------------------------------------------
# series_labels
# --------------------------------------------------------------------------


def test_series_labels_fills_every_matched_label_and_keeps_fixed() -> None:
    selector = [
        m("__name__", "=", "apiserver_request_total"),
        m("verb", "=~", "POST|PUT"),
        m("code", "=~", "5.."),
        m("device", "!~", "lo"),
    ]
    labels = series_labels(selector, {"cluster": "prod"})
    assert labels is not None
    assert labels["__name__"] == "apiserver_request_total"
    assert labels["cluster"] == "prod"
    assert labels["verb"] == "POST"
    assert labels["code"] == "500"
    assert labels["device"] != "lo"
    assert list(labels) == sorted(labels)
    assert matches(labels, selector)


def test_series_labels_index_varies_the_series() -> None:
    selector = [m("__name__", "=", "x"), m("code", "=~", "5..")]
    first, second = series_labels(selector, {}, 0), series_labels(selector, {}, 1)
    assert first is not None
    assert second is not None
    assert first != second
    assert first["__name__"] == second["__name__"] == "x"


def test_series_labels_fixed_value_violating_a_matcher_is_none() -> None:
    assert series_labels([m("cluster", "=~", "prod-.*")], {"cluster": "dev"}) is None


def test_series_labels_fixed_value_wins_when_it_satisfies() -> None:
    labels = series_labels([m("cluster", "=~", "prod-.*")], {"cluster": "prod-eu"})
    assert labels == {"cluster": "prod-eu"}


def test_series_labels_omits_empty_values() -> None:
    labels = series_labels([m("__name__", "=", "x"), m("scope", "=~", ""), m("a", "=", "")], {"b": ""})
    assert labels == {"__name__": "x"}


def test_series_labels_impossible_selector_is_none() -> None:
    assert series_labels([m("a", "=", "1"), m("a", "!=", "1")], {}) is None


def test_series_labels_generated_metric_name_is_valid() -> None:
    labels = series_labels([m("__name__", "=~", "5..|node_.*")], {})
    assert labels is not None
    assert re.fullmatch("[a-zA-Z_:][a-zA-Z0-9_:]*", labels["__name__"])
    assert labels["__name__"].startswith("node_")


# --------------------------------------------------------------------------
# RE2 semantics (issue 26): Prometheus reads label regexes as Go's RE2
# --------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("pattern", "first"),
    [
        ("[[:alpha:]]+", "a"),
        ("[[:^alpha:]]", "0"),
        ("\\p{Greek}+", "Ͱ"),
        ("\\pN\\PL", "00"),
        ("a\\z", "a"),
        ("\\Aa\\b", "a"),
        ("\\Qa.b\\E|x", "a.b"),
        ("\\x{263a}", "☺"),
        ("(?i:A)b", "Ab"),
        ("(?s).", "0"),
        ("(?U)a+", "a"),
        ("(?P<name>x)y", "xy"),
        ("[]a]", "a"),
    ],
)
def test_regex_semantics_are_re2_not_python(pattern: str, first: str) -> None:
    """Values come from RE2's reading of the regex, and RE2 matches every one of them."""
    import re2

    values = [label_value("l", [m("l", "=~", pattern)], i) for i in range(3)]
    assert values[0] == first
    for value in values:
        assert value is not None
        assert re2.fullmatch(f"(?:{pattern})", value), (pattern, value)
    assert satisfies(first, [m("l", "=~", pattern)])


def test_regex_negative_matcher_uses_re2() -> None:
    value = label_value("l", [m("l", "!~", "[[:alpha:]]+")])
    assert value is not None
    assert not (value.isascii() and value.isalpha())  # "x", Python's reading, is what RE2 refuses here


@pytest.mark.parametrize("pattern", ["(?x)a", "a**", "(?<n>a)", "\\C", "(?=a)", "(?P=x)", "a{1001}"])
def test_regex_prometheus_refuses_raises_value_error(pattern: str) -> None:
    with pytest.raises(ValueError, match="invalid regular expression"):
        satisfies("a", [m("a", "=~", pattern)])
