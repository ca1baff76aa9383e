"""Tests for compiler.promql.evaluate: the steady-state PromQL evaluator."""

from __future__ import annotations

import math

import pytest

from compiler.promql import PromQLError
from compiler.promql.evaluate import Series, Unsupported, bind, evaluate

Result = list[tuple[dict[str, str], float]]


def gauge(name: str, value: float, **labels: str) -> Series:
    """A constant gauge series."""
    return Series({"__name__": name, **labels}, value)


def counter(name: str, slope: float, **labels: str) -> Series:
    """A counter growing by ``slope`` per second."""
    return Series({"__name__": name, **labels}, slope, counter=True)


def vector(text: str, series: list[Series]) -> Result:
    """Evaluate and insist on an instant-vector result."""
    result = evaluate(text, series)
    assert isinstance(result, list), result
    return result


def scalar(text: str, series: list[Series] | None = None) -> float:
    """Evaluate and insist on a scalar result."""
    result = evaluate(text, series or [])
    assert isinstance(result, float), result
    return result


def as_set(result: Result) -> set[tuple[frozenset[tuple[str, str]], float]]:
    """Order-insensitive view of a vector (Prometheus does not order results)."""
    return {(frozenset(labels.items()), value) for labels, value in result}


def lbl(**labels: str) -> frozenset[tuple[str, str]]:
    """A label set as used by :func:`as_set`."""
    return frozenset(labels.items())


# --------------------------------------------------------------------------
# Scenarios from the compiler's use cases
# --------------------------------------------------------------------------


def test_sum_of_rates_adds_counter_slopes() -> None:
    series = [
        counter("x", 3, job="a", cluster="c1", instance="i1"),
        counter("x", 4, job="a", cluster="c1", instance="i2"),
        counter("x", 100, job="b", cluster="c1", instance="i3"),
        counter("x", 5, job="a", cluster="c2", instance="i4"),
    ]
    result = vector('sum by (cluster) (rate(x{job="a"}[2m]))', series)
    assert as_set(result) == {(lbl(cluster="c1"), 7.0), (lbl(cluster="c2"), 5.0)}


def test_ratio_then_max() -> None:
    series = [gauge("a", 600, cluster="c"), gauge("b", 1000, cluster="c")]
    assert vector("max by (cluster) (a / b)", series) == [({"cluster": "c"}, 0.6)]


@pytest.mark.parametrize(("unschedulable", "expected"), [(0, 1.0), (1, None)])
def test_and_on_filters_by_other_series(unschedulable: float, expected: float | None) -> None:
    series = [
        gauge("kube_node_status_condition", 1, condition="Ready", status="true", cluster="c", node="n"),
        gauge("kube_node_status_condition", 0, condition="DiskPressure", status="true", cluster="c", node="n"),
        gauge("kube_node_spec_unschedulable", unschedulable, cluster="c", node="n", job="ksm"),
    ]
    text = 'kube_node_status_condition{condition="Ready"} and on (cluster, node) (kube_node_spec_unschedulable == 0)'
    result = vector(text, series)
    if expected is None:
        assert result == []
    else:
        assert result == [
            (
                {
                    "__name__": "kube_node_status_condition",
                    "condition": "Ready",
                    "status": "true",
                    "cluster": "c",
                    "node": "n",
                },
                expected,
            )
        ]


def test_aggregate_divided_by_scalar() -> None:
    series = [gauge("x", 200, pod="a"), gauge("x", 300, pod="b")]
    assert vector("max(x) / 400", series) == [({}, 0.75)]


def test_sum_or_vector_zero() -> None:
    assert vector("sum(x) or vector(0)", []) == [({}, 0.0)]
    assert vector("sum(x) or vector(0)", [gauge("x", 2, a="1"), gauge("x", 3, a="2")]) == [({}, 5.0)]


def test_group_left_copies_labels_from_the_one_side() -> None:
    series = [
        gauge("up", 1, node="n1", pod="p1"),
        gauge("up", 0, node="n1", pod="p2"),
        gauge("up", 1, node="n2", pod="p3"),
        gauge("node_info", 1, node="n1", team="sre", zone="z1"),
    ]
    result = vector("up * on (node) group_left (team) node_info", series)
    assert as_set(result) == {
        (lbl(node="n1", pod="p1", team="sre"), 1.0),
        (lbl(node="n1", pod="p2", team="sre"), 0.0),
    }


def test_group_right_keeps_the_right_side_labels_and_operand_order() -> None:
    series = [gauge("limit", 10, node="n1"), gauge("used", 4, node="n1", pod="p1")]
    result = vector("limit - on (node) group_right used", series)
    assert result == [({"node": "n1", "pod": "p1"}, 6.0)]


def test_label_replace_go_template_and_anchoring() -> None:
    series = [gauge("x", 1, pod="api-12"), gauge("x", 2, pod="xapi-12x"), gauge("x", 3, pod="db")]
    result = vector('label_replace(x, "svc", "${1}-$2$$", "pod", "api-(\\\\d)(\\\\d+)")', series)
    assert as_set(result) == {
        (lbl(__name__="x", pod="api-12", svc="1-2$"), 1.0),
        (lbl(__name__="x", pod="xapi-12x"), 2.0),
        (lbl(__name__="x", pod="db"), 3.0),
    }


def test_label_replace_empty_result_deletes_label_and_named_groups_work() -> None:
    series = [gauge("x", 1, pod="api", svc="old")]
    assert vector('label_replace(x, "svc", "$nope", "pod", ".*")', series) == [({"__name__": "x", "pod": "api"}, 1.0)]
    result = vector('label_replace(x, "svc", "$name", "pod", "(?P<name>a)pi")', series)
    assert result == [({"__name__": "x", "pod": "api", "svc": "a"}, 1.0)]


# --------------------------------------------------------------------------
# Unsupported and errors
# --------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("text", "reason"),
    [
        ("histogram_quantile(0.99, sum by (le) (rate(h_bucket[5m])))", "histogram_quantile"),
        ("time()", "evaluation time"),
        ("x - time()", "evaluation time"),
        ("c", "read without a range function"),
        ("count_over_time(x[5m])", "scrape interval"),
        ("sum_over_time(x[5m])", "scrape interval"),
        ("max_over_time(c[5m])", "raw value"),
        ("changes(c[5m])", "scrape interval"),
        ("x[5m]", "range vector"),
        ('"text"', "string"),
    ],
)
def test_unsupported_constructs(text: str, reason: str) -> None:
    series = [gauge("x", 1), counter("c", 2), counter("h_bucket", 1, le="1")]
    with pytest.raises(Unsupported, match=reason):
        evaluate(text, series)


def test_one_to_one_with_duplicates_on_right_raises() -> None:
    series = [gauge("a", 1, node="n"), gauge("b", 1, node="n", pod="p1"), gauge("b", 2, node="n", pod="p2")]
    with pytest.raises(Unsupported, match="many-to-many matching not allowed"):
        evaluate("a / on (node) b", series)


def test_one_to_one_with_duplicates_on_left_raises() -> None:
    series = [gauge("a", 1, node="n", pod="p1"), gauge("a", 2, node="n", pod="p2"), gauge("b", 1, node="n")]
    with pytest.raises(Unsupported, match="many-to-one matching must be explicit"):
        evaluate("a / on (node) b", series)


def test_group_left_needing_unique_result_labels_raises() -> None:
    # Both left series differ only by ``team``, which group_left overwrites from the right.
    series = [gauge("a", 1, node="n", team="x"), gauge("a", 2, node="n", team="y"), gauge("b", 1, node="n", team="z")]
    with pytest.raises(Unsupported, match="grouping labels must ensure unique matches"):
        evaluate("a / on (node) group_left (team) b", series)


def test_same_labelset_after_dropping_names_raises() -> None:
    with pytest.raises(Unsupported, match="same labelset"):
        evaluate('rate({__name__=~"a|b"}[5m])', [counter("a", 1), counter("b", 2)])


def test_invalid_promql_is_a_promql_error() -> None:
    with pytest.raises(PromQLError):
        evaluate("sum(", [])


def test_duplicate_input_series_rejected() -> None:
    with pytest.raises(ValueError, match="duplicate input series"):
        evaluate("x", [gauge("x", 1, a="1"), gauge("x", 2, a="1", b="")])


# --------------------------------------------------------------------------
# Range functions and subqueries
# --------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("text", "expected"),
    [
        ("rate(c[5m])", 2.0),
        ("irate(c[5m])", 2.0),
        ("deriv(c[5m])", 2.0),
        ("increase(c[1h])", 7200.0),
        ("delta(c[10m])", 1200.0),
        ("resets(c[5m])", 0.0),
        ("delta(g[5m])", 0.0),
        ("rate(g[5m])", 0.0),
        ("changes(g[5m])", 0.0),
        ("avg_over_time(g[5m])", 7.0),
        ("min_over_time(g[5m])", 7.0),
        ("max_over_time(g[5m])", 7.0),
        ("quantile_over_time(0.9, g[5m])", 7.0),
        ("stddev_over_time(g[5m])", 0.0),
        ("stdvar_over_time(g[5m])", 0.0),
        ("present_over_time(g[5m])", 1.0),
        ("rate(c[5m:1m])", 2.0),
        ("max_over_time(rate(c[5m])[1h:1m])", 2.0),
        ("rate(c[5m] offset 1h)", 2.0),
        ("avg_over_time(g[5m] @ 100)", 7.0),
    ],
)
def test_range_functions_at_steady_state(text: str, expected: float) -> None:
    result = vector(text, [counter("c", 2, job="j"), gauge("g", 7, job="j")])
    assert result == [({"job": "j"}, expected)]


def test_last_over_time_keeps_the_metric_name() -> None:
    assert vector("last_over_time(g[5m])", [gauge("g", 7)]) == [({"__name__": "g"}, 7.0)]


def test_absent_and_absent_over_time_take_labels_from_equality_matchers() -> None:
    assert vector('absent(x{job="a", env=~"p.*", zone="z", zone!="y"})', []) == [({"job": "a"}, 1.0)]
    assert vector('absent_over_time(x{job="a"}[5m])', []) == [({"job": "a"}, 1.0)]
    assert vector('absent(x{job="a"})', [gauge("x", 1, job="a")]) == []
    assert vector('absent_over_time(x{job="a"}[5m])', [gauge("x", 1, job="a")]) == []


# --------------------------------------------------------------------------
# Operators
# --------------------------------------------------------------------------


def test_scalar_arithmetic_follows_ieee() -> None:
    assert evaluate("1 / 0", []) == math.inf
    assert evaluate("-1 / 0", []) == -math.inf
    assert math.isnan(scalar("0 / 0"))
    assert math.isnan(scalar("5 % 0"))
    assert evaluate("0 ^ -1", []) == math.inf
    assert evaluate("2 ^ 3 ^ 2", []) == 512.0
    assert evaluate("7 % 4", []) == 3.0
    assert evaluate("-7 % 4", []) == -3.0
    assert evaluate("1 < bool 2", []) == 1.0


def test_vector_divided_by_zero_vector() -> None:
    series = [gauge("a", 1), gauge("a", 0, x="1"), gauge("b", 0), gauge("b", 0, x="1")]
    result = vector("a / b", series)
    assert len(result) == 2
    by_labels = {frozenset(labels.items()): value for labels, value in result}
    assert by_labels[frozenset()] == math.inf
    assert math.isnan(by_labels[lbl(x="1")])


def test_filtering_comparison_keeps_name_and_lhs_value() -> None:
    series = [gauge("x", 5, a="1"), gauge("x", 1, a="2"), gauge("y", 3, a="1"), gauge("y", 3, a="2")]
    assert vector("x > 2", series) == [({"__name__": "x", "a": "1"}, 5.0)]
    assert vector("2 < x", series) == [({"__name__": "x", "a": "1"}, 5.0)]
    assert vector("x > y", series) == [({"__name__": "x", "a": "1"}, 5.0)]


def test_bool_comparison_drops_name_and_keeps_all() -> None:
    series = [gauge("x", 5, a="1"), gauge("x", 1, a="2")]
    assert as_set(vector("x > bool 2", series)) == {(lbl(a="1"), 1.0), (lbl(a="2"), 0.0)}


def test_comparison_with_on_keeps_only_matching_labels() -> None:
    series = [gauge("x", 5, a="1", b="2"), gauge("y", 1, a="1")]
    assert vector("x > on (a) y", series) == [({"a": "1"}, 5.0)]


def test_arithmetic_drops_name_and_unary_minus_too() -> None:
    series = [gauge("x", 5, a="1")]
    assert vector("x + 1", series) == [({"a": "1"}, 6.0)]
    assert vector("-x", series) == [({"a": "1"}, -5.0)]
    assert vector("x", series) == [({"__name__": "x", "a": "1"}, 5.0)]


def test_default_matching_ignores_name_only() -> None:
    series = [gauge("a", 6, k="1"), gauge("a", 8, k="2"), gauge("b", 2, k="1"), gauge("b", 4, k="3")]
    assert vector("a / b", series) == [({"k": "1"}, 3.0)]


def test_ignoring_matching() -> None:
    series = [gauge("a", 6, k="1", code="500"), gauge("b", 2, k="1")]
    assert vector("a / ignoring (code) b", series) == [({"k": "1"}, 3.0)]
    assert vector("a / b", series) == []


def test_or_and_unless_with_matching() -> None:
    series = [gauge("a", 1, k="1"), gauge("a", 2, k="2"), gauge("b", 9, k="2", z="x"), gauge("b", 8, k="3")]
    assert as_set(vector("a unless on (k) b", series)) == {(lbl(__name__="a", k="1"), 1.0)}
    assert as_set(vector("a and on (k) b", series)) == {(lbl(__name__="a", k="2"), 2.0)}
    assert as_set(vector("a or on (k) b", series)) == {
        (lbl(__name__="a", k="1"), 1.0),
        (lbl(__name__="a", k="2"), 2.0),
        (lbl(__name__="b", k="3"), 8.0),
    }
    assert len(vector("a or b", series)) == 4


# --------------------------------------------------------------------------
# Aggregations and functions
# --------------------------------------------------------------------------


AGG_SERIES = [
    gauge("x", 1, job="a", pod="1"),
    gauge("x", 3, job="a", pod="2"),
    gauge("x", 8, job="b", pod="3"),
]


@pytest.mark.parametrize(
    ("text", "expected"),
    [
        ("sum by (job) (x)", {(lbl(job="a"), 4.0), (lbl(job="b"), 8.0)}),
        ("avg by (job) (x)", {(lbl(job="a"), 2.0), (lbl(job="b"), 8.0)}),
        ("min by (job) (x)", {(lbl(job="a"), 1.0), (lbl(job="b"), 8.0)}),
        ("max without (pod) (x)", {(lbl(job="a"), 3.0), (lbl(job="b"), 8.0)}),
        ("count by (job) (x)", {(lbl(job="a"), 2.0), (lbl(job="b"), 1.0)}),
        ("group by (job) (x)", {(lbl(job="a"), 1.0), (lbl(job="b"), 1.0)}),
        ("stddev by (job) (x)", {(lbl(job="a"), 1.0), (lbl(job="b"), 0.0)}),
        ("stdvar by (job) (x)", {(lbl(job="a"), 1.0), (lbl(job="b"), 0.0)}),
        ("quantile by (job) (0.5, x)", {(lbl(job="a"), 2.0), (lbl(job="b"), 8.0)}),
        ("sum(x)", {(lbl(), 12.0)}),
        ("sum by (nope) (x)", {(lbl(), 12.0)}),
        (
            "topk by (job) (1, x)",
            {(lbl(__name__="x", job="a", pod="2"), 3.0), (lbl(__name__="x", job="b", pod="3"), 8.0)},
        ),
        ("bottomk(1, x)", {(lbl(__name__="x", job="a", pod="1"), 1.0)}),
        ('count_values("v", x)', {(lbl(v="1"), 1.0), (lbl(v="3"), 1.0), (lbl(v="8"), 1.0)}),
        ('count_values by (job) ("v", x > 2)', {(lbl(job="a", v="3"), 1.0), (lbl(job="b", v="8"), 1.0)}),
    ],
)
def test_aggregations(text: str, expected: set[tuple[frozenset[tuple[str, str]], float]]) -> None:
    assert as_set(vector(text, AGG_SERIES)) == expected


@pytest.mark.parametrize(
    ("text", "expected"),
    [
        ("abs(x)", 2.5),
        ("ceil(x)", -2.0),
        ("floor(x)", -3.0),
        ("round(x)", -2.0),
        ("round(y, 0.25)", 1.25),
        ("clamp(x, -1, 1)", -1.0),
        ("clamp_min(x, 0)", 0.0),
        ("clamp_max(y, 1)", 1.0),
        ("sqrt(y * 4)", math.sqrt(1.3 * 4)),
        ("exp(y - y)", 1.0),
        ("ln(y - y)", -math.inf),
        ("log2(y * 0 + 8)", 3.0),
        ("log10(y * 0 + 1000)", 3.0),
        ("sgn(x)", -1.0),
    ],
)
def test_simple_functions_drop_name(text: str, expected: float) -> None:
    result = vector(text, [gauge("x", -2.5, k="v"), gauge("y", 1.3, k="v")])
    assert len(result) == 1
    labels, value = result[0]
    assert labels == {"k": "v"}
    assert value == pytest.approx(expected)


def test_sqrt_of_negative_and_empty_clamp() -> None:
    series = [gauge("x", -4)]
    (only,) = vector("sqrt(x)", series)
    assert math.isnan(only[1])
    assert vector("clamp(x, 1, 0)", series) == []


def test_scalar_and_vector_conversions() -> None:
    assert evaluate("scalar(x)", [gauge("x", 4)]) == 4.0
    assert math.isnan(scalar("scalar(x)", [gauge("x", 4, a="1"), gauge("x", 5, a="2")]))
    assert evaluate("vector(scalar(x) * 2)", [gauge("x", 4)]) == [({}, 8.0)]


def test_label_join() -> None:
    series = [gauge("x", 1, a="p", b="q")]
    assert vector('label_join(x, "ab", "-", "a", "b")', series) == [
        ({"__name__": "x", "a": "p", "b": "q", "ab": "p-q"}, 1.0)
    ]


def test_regex_selector_matching_is_anchored_and_supports_or_groups() -> None:
    series = [gauge("x", 1, code="500"), gauge("x", 2, code="1500"), gauge("x", 3, code="404")]
    assert vector('x{code=~"5.."}', series) == [({"__name__": "x", "code": "500"}, 1.0)]
    assert len(vector('x{code="404" or code="500"}', series)) == 2


BOUND_EXPR = 'sum by (cluster) (rate(hits{job="a"}[5m])) / sum by (cluster) (rate(requests{job="a"}[5m])) * on () up'


def test_bind_evaluates_as_evaluate_does_for_every_set_of_values() -> None:
    """A bound expression keeps which series each selector picks; its results are evaluate's for each value."""
    labels = [
        {"__name__": "hits", "job": "a", "cluster": "x"},
        {"__name__": "requests", "job": "a", "cluster": "x"},
        {"__name__": "requests", "job": "b", "cluster": "x"},
        {"__name__": "up"},
    ]
    counters = [True, True, True, False]
    at = bind(BOUND_EXPR, labels, counters)
    for values in ([1.0, 4.0, 9.0, 1.0], [3.0, 4.0, 0.0, 2.0], [0.0, 2.0, 5.0, 0.5], [1.0, 4.0, 9.0, 1.0]):
        series = [Series(lab, value, counter) for lab, value, counter in zip(labels, values, counters, strict=True)]
        assert at(values, None) == evaluate(BOUND_EXPR, series)
    assert at([1.0, 4.0, 9.0, 1.0], None) == [({}, 0.25)]  # on () keeps no label


def test_bind_refuses_duplicate_series_at_its_first_evaluation() -> None:
    """Like evaluate, at the first evaluation, not when bound (a solve with no candidate never evaluates)."""
    at = bind("up", [{"__name__": "up"}, {"__name__": "up"}], [False, False])
    with pytest.raises(ValueError, match="duplicate input series"):
        at([1.0, 1.0], None)
