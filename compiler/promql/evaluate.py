"""A tiny steady-state PromQL evaluator for choosing synthetic test inputs.

Generated promtool tests feed invented series into the user's expressions and
assert on the result, so the compiler must know what an expression yields for
given inputs.  Running Prometheus is not an option at compile time, and the
inputs are deliberately simple: every gauge is constant and every counter
grows at a constant rate, observed long after it started.  In that *steady
state* most of PromQL reduces to arithmetic on per-series constants, which is
what this module computes.

Anything whose value would depend on scrape interval, evaluation time or
sample alignment (``count_over_time``, ``time()``, a counter's raw value,
``histogram_quantile`` bucket interpolation …) raises :class:`Unsupported`
instead of guessing: a wrong guess would silently produce a wrong test.

Semantics follow Prometheus 2.x (the version ``promql_parser`` tracks):
which operations drop ``__name__``, one-to-one/many-to-one matching errors,
set operators, aggregation grouping, IEEE arithmetic (``x/0`` is ``±Inf``,
``0/0`` is ``NaN``).  Regexes are RE2's, anchored as ``^(?:re)$``
(:mod:`compiler.promql.regex`), as Prometheus reads them.
"""

from __future__ import annotations

import functools
import math
import unicodedata
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from decimal import Decimal
from typing import Any

import promql_parser as pp

from compiler.promql import (
    Matcher,
    _convert_matcher,
    _td_ms,
    is_valid_label_name,
    parse_expr,
    prometheus_name,
    regex,
)
from compiler.promql.synth import matches

__all__ = ["Series", "Unsupported", "evaluate"]

_NAME = "__name__"

_Labels = dict[str, str]
_Sample = tuple[_Labels, float]
_Vector = list[_Sample]


class Unsupported(Exception):  # noqa: N818 - the name is the public API callers catch
    """The expression is outside the subset this evaluator can decide.

    The message names the construct and why, so the compiler can tell users
    which part of their query prevents generating a behavioural test.
    """


@dataclass(frozen=True)
class Series:
    """One synthetic input series.

    ``value`` is the constant value of a gauge, or the constant per-second
    increase of a counter (whose absolute value is unknown, because it
    depends on how long ago the counter started).
    """

    labels: Mapping[str, str]
    value: float
    counter: bool = False


@dataclass(frozen=True)
class _Range:
    """A range vector at steady state: each series' constant and whether it grows.

    ``selector`` is kept for ``absent_over_time``, which takes its output
    labels from the selector's matchers.
    """

    samples: list[tuple[_Labels, float, bool]]
    seconds: float
    selector: pp.VectorSelector | None


_Value = float | str | _Vector | _Range

_ARITHMETIC = frozenset({"+", "-", "*", "/", "%", "^", "atan2"})
_COMPARISON = frozenset({"==", "!=", ">", "<", ">=", "<="})
_SET_OPS = frozenset({"and", "or", "unless"})
_TIME_FUNCTIONS = frozenset(
    {
        "time",
        "timestamp",
        "minute",
        "hour",
        "day_of_week",
        "day_of_month",
        "day_of_year",
        "days_in_month",
        "month",
        "year",
    }
)
_HISTOGRAM_FUNCTIONS = frozenset(
    {
        "histogram_quantile",
        "histogram_fraction",
        "histogram_count",
        "histogram_sum",
        "histogram_avg",
        "histogram_stddev",
        "histogram_stdvar",
    }
)
# Range functions whose steady-state value is the gauge's value itself.
_GAUGE_IDENTITY_OVER_TIME = frozenset({"avg_over_time", "min_over_time", "max_over_time", "last_over_time"})


# --------------------------------------------------------------------------
# IEEE / Go float helpers
# --------------------------------------------------------------------------


def _is_odd_integer(value: float) -> bool:
    """Whether ``value`` is an odd integer (decides the sign of ``pow`` overflow)."""
    return math.isfinite(value) and value.is_integer() and int(value) % 2 == 1


def _div(a: float, b: float) -> float:
    """IEEE division: Python raises on ``/0`` where Prometheus returns ±Inf/NaN."""
    if b != 0:
        return a / b
    if a == 0 or math.isnan(a):
        return math.nan
    return math.copysign(math.inf, a) * math.copysign(1.0, b)


def _mod(a: float, b: float) -> float:
    """Go's ``math.Mod``: NaN for a zero divisor or infinite dividend."""
    try:
        return math.fmod(a, b)
    except ValueError:
        return math.nan


def _pow(a: float, b: float) -> float:
    """Go's ``math.Pow`` (C99 special cases) without Python's exceptions."""
    try:
        return math.pow(a, b)
    except OverflowError:
        return -math.inf if a < 0 and _is_odd_integer(b) else math.inf
    except ValueError:
        if a == 0:  # 0 to a negative power
            return -math.inf if math.copysign(1.0, a) < 0 and _is_odd_integer(b) else math.inf
        return math.nan  # negative base, fractional exponent


def _go_max(a: float, b: float) -> float:
    """Go's ``math.Max``: NaN wins (Python's ``max`` is order-dependent)."""
    return math.nan if math.isnan(a) or math.isnan(b) else max(a, b)


def _go_min(a: float, b: float) -> float:
    """Go's ``math.Min``: NaN wins."""
    return math.nan if math.isnan(a) or math.isnan(b) else min(a, b)


def _arith(op: str, a: float, b: float) -> float:
    """Apply an arithmetic operator with Prometheus (Go) float semantics."""
    if op == "+":
        return a + b
    if op == "-":
        return a - b
    if op == "*":
        return a * b
    if op == "/":
        return _div(a, b)
    if op == "%":
        return _mod(a, b)
    if op == "^":
        return _pow(a, b)
    if op == "atan2":
        return math.atan2(a, b)
    raise Unsupported(f"binary operator {op!r} is not supported")


def _compare(op: str, a: float, b: float) -> bool:
    """Apply a comparison operator (NaN compares false except with ``!=``)."""
    if op == "==":
        return a == b
    if op == "!=":
        return a != b
    if op == ">":
        return a > b
    if op == "<":
        return a < b
    if op == ">=":
        return a >= b
    if op == "<=":
        return a <= b
    raise Unsupported(f"comparison operator {op!r} is not supported")


def _elem_binop(op: str, lhs: float, rhs: float) -> tuple[float, bool]:
    """Prometheus' ``vectorElemBinop``: (value, keep); comparisons keep the lhs value."""
    if op in _COMPARISON:
        return lhs, _compare(op, lhs, rhs)
    return _arith(op, lhs, rhs), True


def _ln(x: float) -> float:
    """Natural log with Go's results for 0 (-Inf) and negatives (NaN)."""
    if math.isnan(x) or x < 0:
        return math.nan
    return -math.inf if x == 0 else math.log(x)


def _log_base(base: float) -> Callable[[float], float]:
    """A ``log2``/``log10`` with the same special cases as :func:`_ln`."""

    def log(x: float) -> float:
        if math.isnan(x) or x < 0:
            return math.nan
        if x == 0:
            return -math.inf
        return math.log2(x) if base == 2 else math.log10(x)

    return log


def _sqrt(x: float) -> float:
    """Square root that returns NaN for negatives, like Go."""
    return math.nan if math.isnan(x) or x < 0 else math.sqrt(x)


def _exp(x: float) -> float:
    """Exponential that overflows to +Inf, like Go."""
    try:
        return math.exp(x)
    except OverflowError:
        return math.inf


def _integral(fn: Callable[[float], int]) -> Callable[[float], float]:
    """Wrap ``math.ceil``/``floor`` so Inf and NaN pass through as in Go."""

    def apply(x: float) -> float:
        return x if not math.isfinite(x) else float(fn(x))

    return apply


def _sgn(x: float) -> float:
    """Sign of ``x``; NaN stays NaN."""
    if x > 0:
        return 1.0
    if x < 0:
        return -1.0
    return x  # 0, -0 or NaN


_SIMPLE_FUNCTIONS: dict[str, Callable[[float], float]] = {
    "abs": abs,
    "ceil": _integral(math.ceil),
    "floor": _integral(math.floor),
    "exp": _exp,
    "ln": _ln,
    "log2": _log_base(2),
    "log10": _log_base(10),
    "sqrt": _sqrt,
    "sgn": _sgn,
}


def _round(x: float, to_nearest: float) -> float:
    """Prometheus' ``round``: half rounds up, to a multiple of ``to_nearest``."""
    inverse = _div(1.0, to_nearest)
    return _div(_integral(math.floor)(x * inverse + 0.5), inverse)


def _quantile(q: float, values: Sequence[float]) -> float:
    """Prometheus' ``quantile`` (linear interpolation; ±Inf outside [0, 1])."""
    if not values or math.isnan(q):
        return math.nan
    if q < 0:
        return -math.inf
    if q > 1:
        return math.inf
    ordered = sorted(values)
    rank = q * (len(ordered) - 1)
    lower = max(0, math.floor(rank))
    upper = min(len(ordered) - 1, lower + 1)
    weight = rank - math.floor(rank)
    return ordered[lower] * (1 - weight) + ordered[upper] * weight


def _format_float(value: float) -> str:
    """Go's ``strconv.FormatFloat(v, 'f', -1, 64)``, used by ``count_values``."""
    if math.isnan(value):
        return "NaN"
    if math.isinf(value):
        return "+Inf" if value > 0 else "-Inf"
    text = format(Decimal(repr(value)), "f")
    if "." in text:
        text = text.rstrip("0").rstrip(".")
    return text


# --------------------------------------------------------------------------
# Label helpers
# --------------------------------------------------------------------------


def _drop_name(labels: Mapping[str, str]) -> _Labels:
    """Copy of ``labels`` without ``__name__`` (what most operations produce)."""
    return {k: v for k, v in labels.items() if k != _NAME}


def _check_unique(vector: _Vector) -> _Vector:
    """Reject results with two identical label sets, as Prometheus does.

    This happens e.g. for ``rate({__name__=~"a|b"}[5m])`` when series differ
    only by name, which the function drops; Prometheus fails the query.
    """
    seen: set[frozenset[tuple[str, str]]] = set()
    for labels, _ in vector:
        key = frozenset(labels.items())
        if key in seen:
            raise Unsupported(f"vector cannot contain metrics with the same labelset: {_show(labels)}")
        seen.add(key)
    return vector


def _show(labels: Mapping[str, str]) -> str:
    """Render a label set for error messages."""
    return "{" + ", ".join(f'{k}="{v}"' for k, v in sorted(labels.items())) + "}"


@functools.lru_cache(maxsize=4096)
def _selector_matchers(node: pp.VectorSelector) -> tuple[tuple[Matcher, ...], tuple[tuple[Matcher, ...], ...]]:
    """All matchers of a selector, with the metric name as a ``__name__`` matcher.

    Returns the matchers every series must pass and the alternative groups of
    a Prometheus 3 ``or`` selector (at least one group must pass).  Unlike
    ``promql._selector_parts`` nothing is dropped, because here the matchers
    actually select series.

    Memoised per node of the shared parse trees (a node is hashed by identity, and the cache holds it):
    solving a spec's test inputs evaluates the same expression tens of thousands of times.
    """
    base = [_convert_matcher(m) for m in node.matchers.matchers]
    if node.name is not None:
        base.append(Matcher(_NAME, "=", node.name))
    groups = tuple(tuple(_convert_matcher(m) for m in group) for group in node.matchers.or_matchers)
    return tuple(base), groups


def _absent_labels(arg: pp.Expr) -> _Labels:
    """Labels of ``absent(arg)``'s output (Prometheus' createLabelsForAbsentFunction).

    Only equality matchers of a bare selector contribute, and a label that is
    also constrained any other way is left out, because its value is unknown.
    """
    if isinstance(arg, pp.MatrixSelector):
        arg = arg.vector_selector
    if not isinstance(arg, pp.VectorSelector):
        return {}
    base, groups = _selector_matchers(arg)
    labels: _Labels = {}
    unknown: set[str] = {m.name for group in groups for m in group}
    for m in base:
        if m.name == _NAME:
            continue
        if m.op == "=" and m.name not in labels:
            labels[m.name] = m.value
        else:
            unknown.add(m.name)
    return {k: v for k, v in labels.items() if k not in unknown and v != ""}


def _go_expand(template: str, match: Any) -> str:
    """Go's ``Regexp.ExpandString``: ``$1``, ``${1}``, ``$name``, ``$$``.

    Python's ``Match.expand`` uses ``\\1`` syntax and rejects unknown groups,
    whereas Go substitutes an empty string, so label_replace needs this.
    """
    out: list[str] = []
    rest = template
    while True:
        before, dollar, after = rest.partition("$")
        out.append(before)
        if not dollar:
            return "".join(out)
        rest = after
        if rest.startswith("$"):
            out.append("$")
            rest = rest[1:]
            continue
        parsed = _go_extract(rest)
        if parsed is None:
            out.append("$")
            continue
        name, rest = parsed
        out.append(_group_text(match, name))


def _go_extract(text: str) -> tuple[str, str] | None:
    """Parse a ``$`` reference name (Go's ``extract``); None if malformed."""
    brace = text.startswith("{")
    body = text[1:] if brace else text
    end = 0
    while end < len(body):
        ch = body[end]
        if not (ch.isalpha() or unicodedata.category(ch) == "Nd" or ch == "_"):
            break
        end += 1
    if end == 0:
        return None
    name = body[:end]
    if brace:
        if end >= len(body) or body[end] != "}":
            return None
        end += 1
    return name, body[end:]


def _group_text(match: Any, name: str) -> str:
    """Text of group ``name`` (a number or a group name); "" if it did not take part."""
    if name.isascii() and name.isdigit() and not (name.startswith("0") and len(name) > 1):
        number = int(name)
        if number <= (match.re.groups or 0):
            return match.group(number) or ""
        return ""
    if name in match.re.groupindex:
        return match.group(name) or ""
    return ""


# --------------------------------------------------------------------------
# Evaluator
# --------------------------------------------------------------------------


class _Evaluator:
    """Evaluates one parsed expression against a fixed set of input series."""

    def __init__(self, series: Sequence[Series], now: float | None = None) -> None:
        self._now = now
        self._series: list[tuple[_Labels, float, bool]] = []
        # Indices of the series each selector node picks: they depend on the labels alone, so
        # ``with_values`` shares them between evaluations of the same series with other values.
        self._picked: dict[pp.VectorSelector, list[int]] = {}
        seen: set[frozenset[tuple[str, str]]] = set()
        for s in series:
            # Prometheus does not store empty label values; absent == "".
            labels = {k: v for k, v in s.labels.items() if v != ""}
            key = frozenset(labels.items())
            if key in seen:
                raise ValueError(f"duplicate input series {_show(labels)}")
            seen.add(key)
            self._series.append((labels, float(s.value), s.counter))

    def with_values(self, values: Sequence[float], now: float | None) -> _Evaluator:
        """An evaluator of the same series (labels, counters, selections) holding other values."""
        other = object.__new__(_Evaluator)
        other._now = now
        other._series = [
            (labels, float(value), counter) for (labels, _, counter), value in zip(self._series, values, strict=True)
        ]
        other._picked = self._picked
        return other

    # -- dispatch ---------------------------------------------------------

    def eval(self, node: pp.Expr) -> _Value:
        """Evaluate ``node`` to a scalar, string, instant vector or range."""
        if isinstance(node, pp.NumberLiteral):
            return float(node.val)
        if isinstance(node, pp.StringLiteral):
            return str(node.val)
        if isinstance(node, pp.ParenExpr):
            return self.eval(node.expr)
        if isinstance(node, pp.UnaryExpr):
            return self._negate(self.eval(node.expr))
        if isinstance(node, pp.VectorSelector):
            return self._instant(node)
        if isinstance(node, pp.MatrixSelector):
            return _Range(self._select(node.vector_selector), _td_ms(node.range) / 1000, node.vector_selector)
        if isinstance(node, pp.SubqueryExpr):
            return self._subquery(node)
        if isinstance(node, pp.Call):
            return self._call(node)
        if isinstance(node, pp.AggregateExpr):
            return self._aggregate(node)
        if isinstance(node, pp.BinaryExpr):
            return self._binary(node)
        raise Unsupported(f"unsupported PromQL construct: {type(node).__name__}")

    def vector(self, node: pp.Expr) -> _Vector:
        """Evaluate a node that must yield an instant vector."""
        value = self.eval(node)
        if not isinstance(value, list):
            raise Unsupported(f"expected an instant vector, got {type(value).__name__}")
        return value

    def scalar(self, node: pp.Expr) -> float:
        """Evaluate a node that must yield a scalar (function/aggregation parameters)."""
        value = self.eval(node)
        if not isinstance(value, float):
            raise Unsupported(f"expected a scalar, got {type(value).__name__}")
        return value

    def string(self, node: pp.Expr) -> str:
        """Evaluate a node that must yield a string (label names, regexes)."""
        value = self.eval(node)
        if not isinstance(value, str):
            raise Unsupported(f"expected a string, got {type(value).__name__}")
        return value

    def range(self, node: pp.Expr) -> _Range:
        """Evaluate a node that must yield a range vector."""
        value = self.eval(node)
        if not isinstance(value, _Range):
            raise Unsupported(f"expected a range vector, got {type(value).__name__}")
        return value

    # -- selectors ----------------------------------------------------------

    def _select(self, node: pp.VectorSelector) -> list[tuple[_Labels, float, bool]]:
        """Series selected by ``node``; ``offset``/``@`` are moot for constant inputs."""
        picked = self._picked.get(node)
        if picked is None:
            base, groups = _selector_matchers(node)
            picked = [
                index
                for index, (labels, _, _) in enumerate(self._series)
                if matches(labels, base) and (not groups or any(matches(labels, g) for g in groups))
            ]
            self._picked[node] = picked
        series = self._series
        return [(dict(series[index][0]), series[index][1], series[index][2]) for index in picked]

    def _instant(self, node: pp.VectorSelector) -> _Vector:
        """An instant selector: only gauges have a known value."""
        out: _Vector = []
        for labels, value, counter in self._select(node):
            if counter:
                raise Unsupported(
                    f"counter {_show(labels)} is read without a range function; its raw value depends on its start time"
                )
            out.append((labels, value))
        return out

    def _subquery(self, node: pp.SubqueryExpr) -> _Range:
        """A subquery over a steady-state expression is a constant range.

        A bare selector keeps its counters growing (so ``rate`` over the
        subquery still yields the slope); anything else is evaluated once,
        because at steady state its value is the same at every step.
        """
        if node.range is None:
            raise Unsupported("subquery without a range")
        inner = node.expr
        while isinstance(inner, pp.ParenExpr):
            inner = inner.expr
        seconds = _td_ms(node.range) / 1000
        if isinstance(inner, pp.VectorSelector):
            return _Range(self._select(inner), seconds, None)
        return _Range([(labels, value, False) for labels, value in self.vector(inner)], seconds, None)

    # -- unary --------------------------------------------------------------

    def _negate(self, value: _Value) -> _Value:
        """Unary minus; on vectors it drops ``__name__`` like any arithmetic."""
        if isinstance(value, float):
            return -value
        if isinstance(value, list):
            return _check_unique([(_drop_name(labels), -v) for labels, v in value])
        raise Unsupported("unary minus is only supported on scalars and instant vectors")

    # -- functions ----------------------------------------------------------

    def _call(self, node: pp.Call) -> _Value:
        """Evaluate a function call at steady state."""
        name: str = node.func.name
        args: list[pp.Expr] = list(node.args)
        if name == "time" and self._now is not None:
            return self._now
        if name in _TIME_FUNCTIONS:
            raise Unsupported(f"{name}() depends on the evaluation time")
        if name in _HISTOGRAM_FUNCTIONS:
            raise Unsupported(f"{name}() depends on the bucket layout and is not modelled")
        if name in _SIMPLE_FUNCTIONS:
            fn = _SIMPLE_FUNCTIONS[name]
            return _check_unique([(_drop_name(labels), fn(v)) for labels, v in self.vector(args[0])])
        if name == "round":
            to_nearest = self.scalar(args[1]) if len(args) > 1 else 1.0
            return _check_unique([(_drop_name(labels), _round(v, to_nearest)) for labels, v in self.vector(args[0])])
        if name in ("clamp", "clamp_min", "clamp_max"):
            return self._clamp(name, args)
        if name == "scalar":
            vec = self.vector(args[0])
            return vec[0][1] if len(vec) == 1 else math.nan
        if name == "vector":
            return [({}, self.scalar(args[0]))]
        if name == "pi":
            return math.pi
        if name == "absent":
            return [] if self.vector(args[0]) else [(_absent_labels(args[0]), 1.0)]
        if name in ("sort", "sort_desc"):
            vec = self.vector(args[0])
            return sorted(vec, key=lambda sample: sample[1], reverse=name == "sort_desc")
        if name == "label_replace":
            return self._label_replace(args)
        if name == "label_join":
            return self._label_join(args)
        if any(t == pp.ValueType.Matrix for t in node.func.arg_types):
            return self._range_function(name, args)
        raise Unsupported(f"function {prometheus_name(name)}() is not supported by the steady-state evaluator")

    def _clamp(self, name: str, args: list[pp.Expr]) -> _Vector:
        """clamp/clamp_min/clamp_max with Go's NaN-propagating min/max."""
        vec = self.vector(args[0])
        if name == "clamp":
            low, high = self.scalar(args[1]), self.scalar(args[2])
            if high < low:
                return []  # Prometheus returns nothing for an empty interval.
            return _check_unique([(_drop_name(labels), _go_max(low, _go_min(high, v))) for labels, v in vec])
        bound = self.scalar(args[1])
        fn = _go_max if name == "clamp_min" else _go_min
        return _check_unique([(_drop_name(labels), fn(v, bound)) for labels, v in vec])

    def _label_replace(self, args: list[pp.Expr]) -> _Vector:
        """label_replace(v, dst, replacement, src, regex), anchored like Prometheus."""
        vec = self.vector(args[0])
        dst, replacement, src, pattern = (self.string(a) for a in args[1:5])
        if not is_valid_label_name(dst):
            raise Unsupported(f"invalid destination label name in label_replace(): {dst!r}")
        reason = regex.problem(pattern)
        if reason is not None:
            raise Unsupported(f"invalid regular expression in label_replace(): {pattern!r}: {reason}")
        out: _Vector = []
        for labels, value in vec:
            match = regex.match(pattern, labels.get(src, ""))  # anchored as ^(?:pattern)$, as Prometheus does
            new = dict(labels)
            if match is not None:
                result = _go_expand(replacement, match)
                if result:
                    new[dst] = result
                else:
                    new.pop(dst, None)
            out.append((new, value))
        return _check_unique(out)

    def _label_join(self, args: list[pp.Expr]) -> _Vector:
        """label_join(v, dst, separator, src...)."""
        vec = self.vector(args[0])
        dst, separator = self.string(args[1]), self.string(args[2])
        sources = [self.string(a) for a in args[3:]]
        if not is_valid_label_name(dst):
            raise Unsupported(f"invalid destination label name in label_join(): {dst!r}")
        out: _Vector = []
        for labels, value in vec:
            joined = separator.join(labels.get(s, "") for s in sources)
            new = dict(labels)
            if joined:
                new[dst] = joined
            else:
                new.pop(dst, None)
            out.append((new, value))
        return _check_unique(out)

    def _range_function(self, name: str, args: list[pp.Expr]) -> _Vector:
        """Functions over a range vector, reduced to per-series constants."""
        if name == "double_exponential_smoothing":  # holt_winters in Prometheus 2.42
            for factor, arg in zip(("smoothing", "trend"), args[1:3], strict=True):
                if not 0 < self.scalar(arg) < 1:
                    raise Unsupported(
                        f"holt_winters() needs a {factor} factor strictly between 0 and 1; Prometheus fails the "
                        f"rule with {self.scalar(arg):g}"
                    )
        if name == "quantile_over_time":
            q, rng = self.scalar(args[0]), self.range(args[1])
        else:
            q, rng = math.nan, self.range(args[0])
        if name == "absent_over_time":
            if rng.samples:
                return []
            return [(_absent_labels(rng.selector) if rng.selector is not None else {}, 1.0)]
        out: _Vector = []
        for labels, value, counter in rng.samples:
            result = self._range_value(name, value, counter, rng.seconds, q, labels)
            # Every range function drops the metric name except last_over_time.
            out.append((labels if name == "last_over_time" else _drop_name(labels), result))
        return _check_unique(out)

    @staticmethod
    def _range_value(name: str, value: float, counter: bool, seconds: float, q: float, labels: _Labels) -> float:
        """Steady-state value of one range function for one series.

        A counter's value is its slope: anything derived from the slope is
        known, anything derived from its absolute value is not.
        """
        if name in ("rate", "irate", "deriv"):
            return value if counter else 0.0
        if name in ("increase", "delta"):
            # Extrapolation makes a linear series' increase exactly slope * range.
            return value * seconds if counter else 0.0
        if name == "resets":
            return 0.0
        if name == "present_over_time":
            return 1.0
        if name in ("count_over_time", "sum_over_time"):
            raise Unsupported(f"{name}() depends on the scrape interval")
        if name in ("idelta", "changes"):
            if counter and value != 0:
                raise Unsupported(f"{name}() of growing counter {_show(labels)} depends on the scrape interval")
            return 0.0
        if counter:
            shown = prometheus_name(name)
            raise Unsupported(f"{shown}() of counter {_show(labels)} depends on its raw value, which is unknown")
        if name in _GAUGE_IDENTITY_OVER_TIME or name in ("predict_linear", "double_exponential_smoothing"):
            return value  # a constant gauge has no trend: its smoothed value (holt_winters) is itself
        if name == "quantile_over_time":
            return _quantile(q, [value])
        if name in ("stddev_over_time", "stdvar_over_time"):
            return 0.0 if math.isfinite(value) else math.nan
        raise Unsupported(f"function {prometheus_name(name)}() is not supported by the steady-state evaluator")

    # -- aggregation ----------------------------------------------------------

    def _aggregate(self, node: pp.AggregateExpr) -> _Vector:
        """sum/min/max/avg/count/group/stddev/stdvar/topk/bottomk/count_values/quantile."""
        op = str(node.op)
        vec = self.vector(node.expr)
        param: float | str | None = None
        if node.param is not None:
            param = self.string(node.param) if op == "count_values" else self.scalar(node.param)
        mod = node.modifier
        without = mod is not None and mod.type == pp.AggModifierType.Without
        grouping: list[str] = list(mod.labels) if mod is not None else []

        if op == "count_values":
            if not isinstance(param, str) or not is_valid_label_name(param):
                raise Unsupported(f"invalid label name in count_values(): {param!r}")
            vec = [({**labels, param: _format_float(value)}, value) for labels, value in vec]
            if not without:
                grouping.append(param)

        def group_key(labels: _Labels) -> _Labels:
            if without:
                return {k: v for k, v in labels.items() if k not in grouping and k != _NAME}
            return {k: v for k, v in labels.items() if k in grouping}

        groups: dict[frozenset[tuple[str, str]], tuple[_Labels, _Vector]] = {}
        for labels, value in vec:
            key_labels = group_key(labels)
            entry = groups.setdefault(frozenset(key_labels.items()), (key_labels, []))
            entry[1].append((labels, value))

        if op in ("topk", "bottomk"):
            if not isinstance(param, float):
                raise Unsupported(f"{op}() needs a numeric parameter")
            return self._top(op, param, [members for _, members in groups.values()])
        out: _Vector = []
        for key_labels, members in groups.values():
            out.append((key_labels, _reduce(op, [v for _, v in members], param)))
        return _check_unique(out)

    @staticmethod
    def _top(op: str, k_param: float, groups: list[_Vector]) -> _Vector:
        """topk/bottomk keep whole input samples (with their names)."""
        if math.isnan(k_param):
            raise Unsupported(f"{op}() parameter is NaN")
        k = int(k_param)
        if k < 1:
            return []
        out: _Vector = []
        for members in groups:
            if op == "topk":
                ranked = sorted(members, key=lambda s: (math.isnan(s[1]), -s[1] if not math.isnan(s[1]) else 0.0))
            else:
                ranked = sorted(members, key=lambda s: (math.isnan(s[1]), s[1] if not math.isnan(s[1]) else 0.0))
            out.extend(ranked[:k])
        return out

    # -- binary operators -------------------------------------------------------

    def _binary(self, node: pp.BinaryExpr) -> _Value:
        """Scalar/vector arithmetic, comparisons and set operators."""
        op = str(node.op)
        mod = node.modifier
        fill = mod.fill_values if mod is not None else None
        if fill is not None and (fill.lhs is not None or fill.rhs is not None):
            raise Unsupported("fill modifiers are not supported")
        return_bool = bool(mod.return_bool) if mod is not None else False
        lhs, rhs = self.eval(node.lhs), self.eval(node.rhs)

        if op in _SET_OPS:
            if not isinstance(lhs, list) or not isinstance(rhs, list):
                raise Unsupported(f"set operator {op!r} needs instant vectors on both sides")
            return _check_unique(_set_op(op, lhs, rhs, _signature(mod)))
        if isinstance(lhs, float) and isinstance(rhs, float):
            if op in _COMPARISON:
                if not return_bool:
                    raise Unsupported("comparisons between scalars must use the bool modifier")
                return 1.0 if _compare(op, lhs, rhs) else 0.0
            return _arith(op, lhs, rhs)
        if isinstance(lhs, list) and isinstance(rhs, float):
            return _check_unique(_vector_scalar(op, lhs, rhs, swap=False, return_bool=return_bool))
        if isinstance(lhs, float) and isinstance(rhs, list):
            return _check_unique(_vector_scalar(op, rhs, lhs, swap=True, return_bool=return_bool))
        if isinstance(lhs, list) and isinstance(rhs, list):
            return _check_unique(_vector_vector(op, lhs, rhs, mod, return_bool))
        raise Unsupported(f"operator {op!r} is not supported between these operand types")


def _reduce(op: str, values: list[float], param: float | str | None) -> float:
    """Reduce one aggregation group to a value."""
    n = len(values)
    if op == "sum":
        return sum(values, 0.0)
    if op in ("count", "count_values"):
        return float(n)
    if op == "group":
        return 1.0
    if op == "avg":
        return sum(values, 0.0) / n
    if op in ("min", "max"):
        real = [v for v in values if not math.isnan(v)]
        if not real:
            return math.nan  # NaN only wins when every value is NaN
        return min(real) if op == "min" else max(real)
    if op in ("stddev", "stdvar"):
        mean = sum(values, 0.0) / n
        variance = sum(((v - mean) ** 2 for v in values), 0.0) / n
        return math.sqrt(variance) if op == "stddev" else variance
    if op == "quantile":
        if not isinstance(param, float):
            raise Unsupported("quantile() needs a numeric parameter")
        return _quantile(param, values)
    raise Unsupported(f"aggregation {op}() is not supported by the steady-state evaluator")


_Signature = Callable[[Mapping[str, str]], tuple[tuple[str, str], ...]]


def _signature(mod: pp.BinModifier | None) -> _Signature:
    """Matching key for vector matching: on(...) keeps, ignoring(...) drops (and __name__)."""
    matching = mod.matching if mod is not None else None
    if matching is not None and matching.type == pp.LabelModifierType.Include:
        names = sorted(set(matching.labels))
        return lambda labels: tuple((name, labels.get(name, "")) for name in names)
    ignored = set(matching.labels) if matching is not None else set()
    ignored.add(_NAME)
    return lambda labels: tuple(sorted((k, v) for k, v in labels.items() if k not in ignored))


def _set_op(op: str, lhs: _Vector, rhs: _Vector, sig: _Signature) -> _Vector:
    """and/or/unless; samples pass through unchanged (names included)."""
    if op == "and":
        if not lhs or not rhs:
            return []
        right = {sig(labels) for labels, _ in rhs}
        return [s for s in lhs if sig(s[0]) in right]
    if op == "or":
        if not lhs:
            return list(rhs)
        if not rhs:
            return list(lhs)
        left = {sig(labels) for labels, _ in lhs}
        return list(lhs) + [s for s in rhs if sig(s[0]) not in left]
    right = {sig(labels) for labels, _ in rhs}
    return [s for s in lhs if sig(s[0]) not in right]


def _vector_scalar(op: str, vec: _Vector, scalar: float, *, swap: bool, return_bool: bool) -> _Vector:
    """Vector/scalar operations (Prometheus' VectorscalarBinop).

    Comparisons always keep the vector element's value, even when the scalar
    is on the left; filtering comparisons keep ``__name__``.
    """
    out: _Vector = []
    for labels, v in vec:
        lv, rv = (scalar, v) if swap else (v, scalar)
        value, keep = _elem_binop(op, lv, rv)
        if op in _COMPARISON and swap:
            value = rv
        if return_bool:
            value, keep = (1.0 if keep else 0.0), True
        if keep:
            new = _drop_name(labels) if op in _ARITHMETIC or return_bool else dict(labels)
            out.append((new, value))
    return out


def _vector_vector(op: str, lhs: _Vector, rhs: _Vector, mod: pp.BinModifier | None, return_bool: bool) -> _Vector:
    """Vector/vector operations with one-to-one or group_left/right matching.

    Mirrors Prometheus' VectorBinop, including its errors for ambiguous
    matches, which surface here as :class:`Unsupported`.
    """
    card = mod.card if mod is not None else pp.VectorMatchCardinality.OneToOne
    matching = mod.matching if mod is not None else None
    on = matching is not None and matching.type == pp.LabelModifierType.Include
    match_labels = list(matching.labels) if matching is not None else []
    include = list(mod.group_labels or []) if mod is not None else []
    one_to_many = card == pp.VectorMatchCardinality.OneToMany
    one_to_one = card == pp.VectorMatchCardinality.OneToOne
    sig = _signature(mod)
    many, one = (rhs, lhs) if one_to_many else (lhs, rhs)

    one_side: dict[tuple[tuple[str, str], ...], _Sample] = {}
    for sample in one:
        key = sig(sample[0])
        if key in one_side:
            side = "left" if one_to_many else "right"
            raise Unsupported(
                f"found duplicate series for the match group {_show(dict(key))} on the {side} hand-side of the "
                f"operation: [{_show(sample[0])}, {_show(one_side[key][0])}]; many-to-many matching not allowed: "
                "matching labels must be unique on one side"
            )
        one_side[key] = sample

    matched: dict[tuple[tuple[str, str], ...], set[frozenset[tuple[str, str]]]] = {}
    out: _Vector = []
    for labels, v in many:
        key = sig(labels)
        partner = one_side.get(key)
        if partner is None:
            continue
        vl, vr = (partner[1], v) if one_to_many else (v, partner[1])
        value, keep = _elem_binop(op, vl, vr)
        if return_bool:
            value = 1.0 if keep else 0.0
        elif not keep:
            continue
        metric = _result_metric(labels, partner[0], op, one_to_one, on, match_labels, include)
        if return_bool:
            metric = _drop_name(metric)
        if one_to_one:
            if key in matched:
                raise Unsupported(
                    "multiple matches for labels: many-to-one matching must be explicit (group_left/group_right)"
                )
            matched[key] = set()
        else:
            inserted = matched.setdefault(key, set())
            metric_key = frozenset(metric.items())
            if metric_key in inserted:
                raise Unsupported("multiple matches for labels: grouping labels must ensure unique matches")
            inserted.add(metric_key)
        out.append((metric, value))
    return out


def _result_metric(
    many: _Labels,
    one: _Labels,
    op: str,
    one_to_one: bool,
    on: bool,
    match_labels: list[str],
    include: list[str],
) -> _Labels:
    """Labels of a vector/vector result (Prometheus' resultMetric)."""
    labels = _drop_name(many) if op in _ARITHMETIC else dict(many)
    if one_to_one:
        if on:
            labels = {k: v for k, v in labels.items() if k in match_labels}
        else:
            labels = {k: v for k, v in labels.items() if k not in match_labels}
    for name in include:
        # group_x labels come from the "one" side, or are removed if it lacks them.
        if one.get(name, ""):
            labels[name] = one[name]
        else:
            labels.pop(name, None)
    return labels


def evaluate(
    text: str, series: Sequence[Series], now: float | None = None
) -> list[tuple[dict[str, str], float]] | float:
    """Evaluate ``text`` at steady state over ``series``.

    Returns a float for scalar expressions, otherwise the instant vector as
    ``(labels, value)`` pairs; ``__name__`` is present exactly where
    Prometheus keeps it.  Raises :class:`Unsupported` for anything the
    steady-state model cannot decide, :class:`~compiler.promql.PromQLError`
    for invalid PromQL and :class:`ValueError` for duplicate input series.

    ``now`` is the value of ``time()``; without it ``time()`` is unsupported. The generated
    tests pass the first evaluation's time: an age (``time() - created``) only grows, so a
    comparison of it that holds then holds for the rest of the test.
    """
    return _result(_Evaluator(series, now).eval(parse_expr(text)))


def bind(
    text: str, labels: Sequence[Mapping[str, str]], counters: Sequence[bool]
) -> Callable[[Sequence[float], float | None], list[tuple[dict[str, str], float]] | float]:
    """``evaluate`` for series whose labels stay and whose values change: ``bind(...)(values, now)``.

    Solving a spec's test inputs evaluates one expression over the same series with a few dozen
    values; which series each selector picks is worked out once, at the first evaluation (which
    raises what ``evaluate`` raises).
    """
    bound: list[_Evaluator] = []

    def at(values: Sequence[float], now: float | None = None) -> list[tuple[dict[str, str], float]] | float:
        if not bound:
            bound.append(_Evaluator([Series(lab, 0.0, counter) for lab, counter in zip(labels, counters, strict=True)]))
        return _result(bound[0].with_values(values, now).eval(parse_expr(text)))

    return at


def _result(result: _Value) -> list[tuple[dict[str, str], float]] | float:
    """An evaluation's result as ``evaluate`` returns it: a scalar or an instant vector."""
    if isinstance(result, float):
        return result
    if isinstance(result, list):
        return [(dict(labels), value) for labels, value in result]
    kind = "a string" if isinstance(result, str) else "a range vector"
    raise Unsupported(f"the expression evaluates to {kind}, not an instant vector or scalar")
