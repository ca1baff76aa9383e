"""Tests for compiler.promql: parsing, quoting, durations, label flow, injection."""

from __future__ import annotations

import promql_parser
import pytest

from compiler.promql import (
    Analysis,
    Matcher,
    PromQLError,
    analyse,
    format_duration,
    inject_matchers,
    is_valid_label_name,
    is_valid_metric_name,
    labels_lost,
    parse_duration,
    parse_expr,
    parse_selector,
    quote,
    render_expr,
    render_selector,
    render_series,
)

# --------------------------------------------------------------------------
# Matcher / quote / selectors
# --------------------------------------------------------------------------

TRICKY_VALUES = [
    "plain",
    "",
    'say "hi"',
    "back\\slash",
    "C:\\path\\",
    "line1\nline2",
    "tab\there",
    "cr\rlf",
    "{{ $labels.instance }}",
    "{{ .Value | humanize }}",
    "^(a|b)+.*[0-9]{2,}\\d$",
    "é ünïcödé 日本語 😀",
    "bell\a\b\f\v",
    "nul\x00ctl\x01\x1f\x7f",
    "c1\x85\x9f",
    "'single' `back`",
    '\\"',
]


@pytest.mark.parametrize("value", TRICKY_VALUES)
def test_quote_round_trips_through_parse_selector(value: str) -> None:
    text = render_selector("up", [Matcher("job", "=", "x"), Matcher("v", "!=", value)])
    name, matchers = parse_selector(text)
    assert name == "up"
    assert matchers == (Matcher("job", "=", "x"), Matcher("v", "!=", value))


@pytest.mark.parametrize(
    "regex", ["^(a|b)+.*[0-9]{2,}\\d$", "a\\.b\\\\c", '"quoted"|x', "\\{\\{ x \\}\\}", "ä|ö|😀", "\\n|\\t"]
)
def test_quote_round_trips_regex_values(regex: str) -> None:
    # The parser validates regexes, so only valid ones can be used here.
    text = render_selector(None, [Matcher("path", "=~", regex)])
    assert parse_selector(text) == (None, (Matcher("path", "=~", regex),))


@pytest.mark.parametrize("value", TRICKY_VALUES)
def test_quote_round_trips_as_string_literal(value: str) -> None:
    node = promql_parser.parse(quote(value))
    assert isinstance(node, promql_parser.StringLiteral)
    assert node.val == value


def test_quote_exact_escapes() -> None:
    assert quote('a"b') == '"a\\"b"'
    assert quote("a\\b") == '"a\\\\b"'
    assert quote("a\nb\tc") == '"a\\nb\\tc"'
    assert quote("\x01") == '"\\x01"'
    assert quote("é") == '"é"'
    assert quote("\x85") == '"\\u0085"'
    assert quote("{{ $x }}") == '"{{ $x }}"'


def test_matcher_render() -> None:
    assert Matcher("job", "=", "apiserver").render() == 'job="apiserver"'
    assert Matcher("code", "=~", "5..").render() == 'code=~"5.."'
    assert Matcher("a", "!=", 'q"').render() == 'a!="q\\""'
    assert Matcher("a", "!~", "x").render() == 'a!~"x"'


@pytest.mark.parametrize(("name", "op"), [("job", "=="), ("job", "~"), ("bad-name", "="), ("0a", "=")])
def test_matcher_rejects_invalid(name: str, op: str) -> None:
    with pytest.raises(ValueError):
        Matcher(name, op, "v")


def test_parse_selector_forms() -> None:
    assert parse_selector('http_requests_total{job="api",code=~"5.."}') == (
        "http_requests_total",
        (Matcher("job", "=", "api"), Matcher("code", "=~", "5..")),
    )
    assert parse_selector('{a="b",c=~"d"}') == (None, (Matcher("a", "=", "b"), Matcher("c", "=~", "d")))
    assert parse_selector("up") == ("up", ())
    assert parse_selector("job:slo_errors:rate5m") == ("job:slo_errors:rate5m", ())


def test_parse_selector_name_matcher_is_returned_as_name() -> None:
    assert parse_selector('{__name__="x",a="b"}') == ("x", (Matcher("a", "=", "b"),))
    assert parse_selector('{__name__="x"}') == ("x", ())
    # A regex on __name__ is a real filter, not a name.
    assert parse_selector('{__name__=~"x.*"}') == (None, (Matcher("__name__", "=~", "x.*"),))


@pytest.mark.parametrize(
    "text",
    ["rate(x[5m])", "x[5m]", "x offset 5m", "x + y", "x @ 100", "sum(x)", "-x", "(x)", "1", '"s"'],
)
def test_parse_selector_rejects_non_selectors(text: str) -> None:
    with pytest.raises(PromQLError, match="plain vector selector"):
        parse_selector(text)


def test_parse_selector_syntax_error_is_promql_error() -> None:
    with pytest.raises(PromQLError, match=r"^invalid PromQL: "):
        parse_selector('x{a="b"')


def test_parse_expr_errors() -> None:
    with pytest.raises(PromQLError, match="invalid PromQL: unclosed left parenthesis"):
        parse_expr("sum(rate(x[5m])")
    with pytest.raises(PromQLError):
        parse_expr("")
    with pytest.raises(ValueError):  # PromQLError is a ValueError
        parse_expr("x +")
    assert isinstance(parse_expr("up"), promql_parser.VectorSelector)


def test_parse_expr_converts_parser_panics() -> None:
    # promql_parser panics (pyo3 PanicException, not an Exception) on this.
    with pytest.raises(PromQLError, match="invalid PromQL"):
        parse_expr("x[1e999]")


def test_numeric_durations_are_rendered_with_units() -> None:
    assert inject_matchers("rate(x[300])", []) == "rate(x[5m])"
    assert analyse("x[300]").ranges_ms == (300_000,)


def test_render_selector() -> None:
    m1, m2 = Matcher("b", "=", "2"), Matcher("a", "!=", "1")
    assert render_selector("up", [m1, m2]) == 'up{b="2",a!="1"}'
    assert render_selector("up", [m2, m1]) == 'up{a!="1",b="2"}'
    assert render_selector("up", []) == "up"
    assert render_selector(None, [m1]) == '{b="2"}'
    with pytest.raises(ValueError):
        render_selector(None, [])
    with pytest.raises(ValueError):
        render_selector("bad-name", [m1])


@pytest.mark.parametrize(
    ("name", "labels"),
    [
        ("up", [("job", "a"), ("instance", 'x"y\\z\n')]),
        (None, [("le", "+Inf")]),
        ("up", []),
        ("kube_node_info", [("node", "ä 😀\x07\x85")]),
    ],
)
def test_a_series_renders_as_its_selector_of_equality_matchers(name: str | None, labels: list[tuple[str, str]]) -> None:
    assert render_series(name, labels) == render_selector(name, [Matcher(k, "=", v) for k, v in labels])


def test_a_series_refuses_what_its_selector_refuses() -> None:
    for name, labels in ((None, []), ("bad-name", [("a", "1")]), ("up", [("9x", "1")]), ("up", [("a-b", "1")])):
        with pytest.raises(ValueError) as refused:
            render_series(name, labels)
        with pytest.raises(ValueError) as expected:
            render_selector(name, [Matcher(k, "=", v) for k, v in labels])
        assert str(refused.value) == str(expected.value)


def test_name_validation() -> None:
    assert is_valid_label_name("job")
    assert is_valid_label_name("_x9")
    assert not is_valid_label_name("9x")
    assert not is_valid_label_name("a:b")
    assert not is_valid_label_name("a-b")
    assert not is_valid_label_name("")
    assert is_valid_metric_name("job:errors:rate5m")
    assert is_valid_metric_name(":x")
    assert not is_valid_metric_name("1x")
    assert not is_valid_metric_name("a.b")
    assert not is_valid_metric_name("")


# --------------------------------------------------------------------------
# Durations
# --------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("text", "ms"),
    [
        ("5m", 300_000),
        ("1h30m", 5_400_000),
        ("30d", 2_592_000_000),
        ("1w", 604_800_000),
        ("500ms", 500),
        ("0s", 0),
        ("1y", 365 * 86_400_000),
        ("1d2h3m4s5ms", 86_400_000 + 7_200_000 + 180_000 + 4_000 + 5),
        ("90s", 90_000),
    ],
)
def test_parse_duration_valid(text: str, ms: int) -> None:
    assert parse_duration(text) == ms


@pytest.mark.parametrize(
    "text", ["", "5", "0", "5 m", "1.5h", "-5m", "5M", "m", "30m1h", "1h1h", " 5m", "5m ", "1e3s", "5min"]
)
def test_parse_duration_invalid(text: str) -> None:
    assert parse_duration(text) is None


@pytest.mark.parametrize(
    ("ms", "text"),
    [
        (300_000, "5m"),
        (5_400_000, "1h30m"),
        (2_592_000_000, "30d"),
        (604_800_000, "7d"),
        (0, "0s"),
        (1_500, "1s500ms"),
        (1, "1ms"),
        (86_400_000 + 1, "1d1ms"),
    ],
)
def test_format_duration(ms: int, text: str) -> None:
    assert format_duration(ms) == text
    assert parse_duration(text) == ms


def test_format_duration_rejects_negative() -> None:
    with pytest.raises(ValueError):
        format_duration(-1)


# --------------------------------------------------------------------------
# analyse
# --------------------------------------------------------------------------


def test_analyse_collects_everything_in_order() -> None:
    a = analyse(
        'sum(rate(errs{job="a"}[5m] offset 1h)) / sum(rate({__name__="total",job="a"}[30m]))'
        " + max_over_time(up[1h:1m] offset 5m)"
    )
    assert a == Analysis(
        selectors=(
            ("errs", (Matcher("job", "=", "a"),)),
            ("total", (Matcher("job", "=", "a"),)),
            ("up", ()),
        ),
        ranges_ms=(300_000, 1_800_000, 3_600_000),
        functions=("rate", "rate", "max_over_time"),
        offsets_ms=(3_600_000, 300_000),
    )


def test_analyse_negative_offset_and_literals() -> None:
    a = analyse("x offset -5m > 3")
    assert a.offsets_ms == (-300_000,)
    assert a.selectors == (("x", ()),)
    assert a.functions == ()
    assert a.ranges_ms == ()


def test_analyse_or_selector_reports_matchers_common_to_all_alternatives() -> None:
    a = analyse('x{a="1",c="3" or b="2",c="3"}')
    assert a.selectors == (("x", (Matcher("c", "=", "3"),)),)


def test_analyse_raises_promql_error() -> None:
    with pytest.raises(PromQLError):
        analyse("rate(x[5m]")


# --------------------------------------------------------------------------
# labels_lost
# --------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("expr", "labels", "lost"),
    [
        ("sum by (cluster)(rate(x[5m]))", ["resource", "cluster"], ("resource",)),
        ("max by (cluster, resource)(x) / on(cluster) group_left y", ["cluster", "resource"], ()),
        ("sum(x)", ["cluster", "resource"], ("cluster", "resource")),
        ("x / y", ["cluster", "resource"], ()),
        ("sum without (resource)(x)", ["cluster", "resource"], ("resource",)),
        ("sum(x) by (resource, cluster) / sum(y) by (resource, cluster)", ["resource"], ()),
        ("count_values by (a) ('v', x)", ["a", "v", "b"], ("b",)),
        ("quantile by (a) (0.9, x)", ["a", "b"], ("b",)),
        ("topk(3, x)", ["a"], ()),
        ("vector(1)", ["a"], ("a",)),
        ("scalar(x)", ["a"], ("a",)),
        ("time()", ["a"], ("a",)),
        ('absent(x{a="1",b=~"2"})', ["a", "b"], ("b",)),
        ('label_replace(sum by (a)(x), "dst", "$1", "a", "(.*)")', ["a", "dst", "b"], ("b",)),
        ('label_join(sum(x), "dst", ",", "a")', ["dst", "a"], ("a",)),
        ("rate(x[5m]) * 100", ["a"], ()),
        ("2 * sum by (a)(x)", ["a", "b"], ("b",)),
        ("x / on(cluster) y", ["cluster", "resource"], ("resource",)),
        ("x / ignoring(resource) y", ["cluster", "resource"], ("resource",)),
        ("sum by (c)(x) * on(c) group_right(r) y", ["c", "r", "z"], ("r",)),
        ("sum by (c, r)(x) * on(c) group_right(r) y", ["c", "r", "z"], ()),
        ("sum by (c)(x) * on(c) group_left(r) sum by (c)(y)", ["c", "r"], ("r",)),
        ("x and on(a) sum by (a)(y)", ["a", "b"], ()),
        ("sum by (a, b)(x) or vector(0)", ["a", "b"], ("a", "b")),
        ("sum by (a, b)(x) or sum by (a)(y)", ["a", "b"], ("b",)),
        ("histogram_quantile(0.99, sum by (le, a)(rate(x_bucket[5m])))", ["a", "le"], ("le",)),
        ("max_over_time(sum by (a)(rate(x[5m]))[1h:5m])", ["a", "b"], ("b",)),
        ("-(sum by (a)(x))", ["a", "b"], ("b",)),
        ("clamp_max(sum by (a)(x), 1)", ["a", "b"], ("b",)),
        ("sum by (a)(sum by (a, b)(x))", ["a", "b"], ("b",)),
        ("sum by (a, b)(sum by (a)(x))", ["a", "b"], ("b",)),
    ],
)
def test_labels_lost(expr: str, labels: list[str], lost: tuple[str, ...]) -> None:
    assert labels_lost(expr, labels) == lost


def test_labels_lost_keeps_input_order_and_dedupes() -> None:
    assert labels_lost("sum(x)", ["b", "a", "b"]) == ("b", "a")


# --------------------------------------------------------------------------
# inject_matchers / rendering
# --------------------------------------------------------------------------

CORPUS = [
    "up",
    'up{job="api"}',
    '{__name__="up",job="api"}',
    '{__name__=~"job:.*"}',
    'rate(http_requests_total{code=~"5.."}[5m])',
    "sum by (cluster, resource) (rate(x[5m]))",
    "sum(rate(x[5m])) without (instance)",
    "sum(rate(errors[5m])) / sum(rate(total[5m]))",
    "1 - (sum(rate(good[30d])) / sum(rate(total[30d])))",
    "(a + b) * c",
    "a + b * c",
    "(a - b) - c",
    "a - (b - c)",
    "a / (b / c)",
    "2 ^ 3 ^ 4",
    "(2 ^ 3) ^ 4",
    "-a ^ 2",
    "(-a) ^ 2",
    "-1 ^ 2",
    "(-1) ^ 2",
    "a - -b",
    "2 ^ -x",
    "2 ^ -x ^ 3",
    "-(a + b)",
    "- -a",
    "a > bool 0.5",
    "a == bool on(x) b",
    "a + on(cluster) group_left(team, owner) b",
    "a * ignoring(instance) group_right() b",
    "a / on() group_left b",
    "a / on(x) group_left() (b - c)",
    "a and on(x) b or c unless d",
    "(a or b) and c",
    "a or b and c",
    "a atan2 b",
    "a % 3 > 1 < 5",
    "topk(5, rate(x[5m]))",
    "bottomk by (job) (3, x)",
    "quantile(0.9, x)",
    "quantile without (pod) (0.99, rate(x[1m]))",
    'count_values("version", build_info)',
    "limitk(2, x)",
    "x offset 5m",
    "x offset -1h",
    "rate(x[5m] offset 1w)",
    "x @ 1609746000",
    "x @ 1609746000.123 offset 5m",
    "rate(x[5m] @ end())",
    "x @ start()",
    "max_over_time(rate(x[5m])[1h:1m])",
    "max_over_time(rate(x[5m])[1h:])",
    "avg_over_time((a + b)[30m:5m] offset 10m)",
    "min_over_time(x[1h:] @ 100)",
    "x[1500ms]",
    "increase(x[30d])",
    "x[90m]",
    'histogram_quantile(0.99, sum by (le) (rate(h_bucket{job="a"}[5m])))',
    'label_replace(up, "dst", "$1", "src", "(.*)")',
    'label_join(up, "dst", ",", "a", "b")',
    'absent(up{job="x"})',
    "absent_over_time(up[5m])",
    "vector(0)",
    "scalar(sum(x))",
    "time() - x",
    "sum(x) or vector(0)",
    "NaN",
    "Inf",
    "-Inf",
    "1e-300",
    "1.5e+20 * x",
    "0x1F + x",
    "0.000001 * x",
    '"a string"',
    'x{a="q\\"uote",b="back\\\\slash",c="new\\nline"}',
    'x{a="é 😀",b!="{{ .x }}",c=~"\\\\{\\\\{"}',
    "sort_by_label(x, \"a\", 'b')",
    "clamp(x, -1, 1)",
    "round(x, 0.5)",
    "a + on(c) fill(0) b",
    "a + on(c) fill_left(1) fill_right(2) b",
    'x{a="1" or b="2"}',
    "(x)",
    "((x))",
    "sum by () (x)",
]


@pytest.mark.parametrize("expr", CORPUS)
def test_round_trip_preserves_ast(expr: str) -> None:
    rendered = inject_matchers(expr, [])
    assert str(promql_parser.parse(rendered)) == str(promql_parser.parse(expr))
    # The renderer is a fixed point: rendering its own output changes nothing.
    assert inject_matchers(rendered, []) == rendered


@pytest.mark.parametrize("expr", CORPUS)
def test_injected_matchers_reach_every_selector(expr: str) -> None:
    extra = [Matcher("slo", "=", 'my "slo"'), Matcher("env", "=~", "prod|staging")]
    result = inject_matchers(expr, extra)
    before = analyse(expr)
    after = analyse(result)
    assert len(after.selectors) == len(before.selectors)
    for (name_before, matchers_before), (name_after, matchers_after) in zip(
        before.selectors, after.selectors, strict=True
    ):
        assert name_after == name_before
        assert matchers_after == matchers_before + tuple(extra)
    assert after.ranges_ms == before.ranges_ms
    assert after.offsets_ms == before.offsets_ms
    assert after.functions == before.functions


def test_corpus_is_large_enough() -> None:
    assert len(CORPUS) >= 30


def test_inject_exact_output() -> None:
    env = [Matcher("env", "=", "prod")]
    assert inject_matchers("up", env) == 'up{env="prod"}'
    assert (
        inject_matchers("sum by (a) (rate(x[5m] offset 1h)) / on(a) group_left(b) y", env)
        == 'sum by (a) (rate(x{env="prod"}[5m] offset 1h)) / on (a) group_left (b) y{env="prod"}'
    )
    assert inject_matchers("max_over_time(rate(x[5m])[1h:])", env) == 'max_over_time(rate(x{env="prod"}[5m])[1h:])'
    assert inject_matchers("x[7d]", env) == 'x{env="prod"}[7d]'


def test_inject_keeps_existing_matcher_on_same_label() -> None:
    result = inject_matchers('x{env="dev"}', [Matcher("env", "=", "prod")])
    assert result == 'x{env="dev",env="prod"}'
    assert analyse(result).selectors == (("x", (Matcher("env", "=", "dev"), Matcher("env", "=", "prod"))),)


def test_inject_into_or_selector_applies_to_each_alternative() -> None:
    result = inject_matchers('x{a="1" or b="2"}', [Matcher("env", "=", "p")])
    assert result == 'x{a="1",env="p" or b="2",env="p"}'


def test_render_escapes_strings_that_promql_parser_str_does_not() -> None:
    expr = 'label_replace(x{a="q\\"b"}, "dst", "say \\"hi\\"", "a", "(.*)")'
    rendered = inject_matchers(expr, [])
    node = promql_parser.parse(rendered)
    assert isinstance(node, promql_parser.Call)
    assert node.args[2].val == 'say "hi"'
    assert analyse(rendered).selectors == (("x", (Matcher("a", "=", 'q"b'),)),)


def test_render_preserves_precedence_without_source_parens() -> None:
    # A unary minus over a power must stay a unary over the whole power.
    assert inject_matchers("-a ^ 2", []) == "-a ^ 2"
    assert inject_matchers("(-a) ^ 2", []) == "(-a) ^ 2"
    assert inject_matchers("2 ^ 3 ^ 4", []) == "2 ^ 3 ^ 4"
    assert inject_matchers("a - (b - c)", []) == "a - (b - c)"


def test_inject_rejects_invalid_expression() -> None:
    with pytest.raises(PromQLError):
        inject_matchers("sum(x", [Matcher("a", "=", "b")])


def _strip_parens(expr: promql_parser.Expr) -> promql_parser.Expr:
    """Return an AST with every ParenExpr removed (as a rewrite might produce)."""
    return promql_parser.transform(
        expr, post_visit=lambda n: n.expr if isinstance(n, promql_parser.ParenExpr) else None
    )


def _shape(node: promql_parser.Expr) -> object:
    """Structure of an expression, ignoring parentheses, for precedence checks."""
    if isinstance(node, promql_parser.ParenExpr):
        return _shape(node.expr)
    if isinstance(node, promql_parser.BinaryExpr):
        return (str(node.op), _shape(node.lhs), _shape(node.rhs))
    if isinstance(node, promql_parser.UnaryExpr):
        return ("neg", _shape(node.expr))
    if isinstance(node, promql_parser.SubqueryExpr):
        return ("subquery", _shape(node.expr), node.range, node.step)
    if isinstance(node, promql_parser.Call):
        return (node.func.name, *(_shape(a) for a in node.args))
    if isinstance(node, promql_parser.AggregateExpr):
        return (str(node.op), _shape(node.expr))
    return str(node)


PRECEDENCE_CORPUS = [
    "(a + b) * c",
    "a * (b + c)",
    "(a - b) - c",
    "a - (b - c)",
    "(2 ^ 3) ^ 4",
    "2 ^ (3 ^ 4)",
    "(-a) ^ 2",
    "(-1) ^ 2",
    "2 ^ (-1)",
    "-(a ^ 2)",
    "-(a + b)",
    "(a or b) and c",
    "a or (b and c)",
    "(a > b) + c",
    "(a unless b) or (c and d)",
    "avg_over_time((a + b)[30m:5m])",
    "sum((a + b) * c)",
    "(a + b) / on(x) group_left() (c - d)",
]


@pytest.mark.parametrize("expr", PRECEDENCE_CORPUS)
def test_render_expr_adds_parens_an_ast_without_them_needs(expr: str) -> None:
    stripped = _strip_parens(promql_parser.parse(expr))
    assert _shape(stripped) == _shape(promql_parser.parse(expr))
    rendered = render_expr(stripped)
    assert _shape(promql_parser.parse(rendered)) == _shape(stripped)


def test_render_expr_injects_matchers() -> None:
    node = promql_parser.parse("rate(x[5m])")
    assert render_expr(node, [Matcher("a", "=", "b")]) == 'rate(x{a="b"}[5m])'
    assert render_expr(node) == "rate(x[5m])"


def test_prometheus_2_function_names_round_trip() -> None:
    """holt_winters is read (the parser knows only its Prometheus 3 name) and written back as holt_winters;
    the same letters in a string, a label name or a metric name are left alone; the 3.x name is refused."""
    text = 'holt_winters(x{a="holt_winters(y[5m], 1, 1)"}[5m], 0.5, 0.5) + holt_winters{holt_winters="1"}'
    rendered = inject_matchers(text, [Matcher("job", "=", "j")])
    assert rendered == (
        'holt_winters(x{a="holt_winters(y[5m], 1, 1)",job="j"}[5m], 0.5, 0.5) + holt_winters{holt_winters="1",job="j"}'
    )
    assert analyse(text).functions == ("holt_winters",)
    with pytest.raises(PromQLError, match=r"Prometheus 3's name; Prometheus 2\.42.*holt_winters"):
        parse_expr("double_exponential_smoothing(x[5m], 0.5, 0.5)")
    assert parse_selector('x{a="double_exponential_smoothing(1)"}')[1][0].value == "double_exponential_smoothing(1)"
