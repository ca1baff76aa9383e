"""Recorded-series rules evaluated at every timestamp of a grid, as Prometheus 2.42 evaluates them.

Backtest asks the server for the rules that read raw series (range queries at the group's
interval give exactly the samples those rules would have recorded) and evaluates everything
downstream here, on those samples: the rules that read only the spec's own recorded series
(window averages, ratios, comparisons, ``and``, ``absent``). Evaluating them on the server
would need subqueries re-evaluated at every step, which is what makes a 14-day backtest of a
large cluster unaffordable; here each recorded sample is read from memory.

The semantics are Prometheus 2.42's: an instant selector reads the latest sample at or before
the evaluation time within the 5m lookback, and a series that a rule stopped producing is stale
at once (rules write staleness markers); range selectors include both ends (``[t-w, t]``, left-open
only from Prometheus 3); a subquery ``x[w:r]`` reads ``x`` at the multiples of ``r`` within
``[t-w, t]``; a later rule of a group sees the samples an earlier rule wrote at the same
timestamp. The operators' label rules come from the steady-state evaluator
(``compiler.promql.evaluate``), applied per step.
"""

from __future__ import annotations

import math
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from datetime import timedelta

import promql_parser as pp

from compiler.promql import Matcher, _iter_nodes, _selector_parts, _td_ms, parse_expr
from compiler.promql.evaluate import (
    Unsupported,
    _check_unique,
    _drop_name,
    _elem_binop,
    _reduce,
    _result_metric,
    _set_op,
    _signature,
    _vector_scalar,
    _vector_vector,
)
from compiler.promql.synth import matches

LOOKBACK_MS = 5 * 60_000
Labels = dict[str, str]
Vector = list[tuple[Labels, float]]
Steps = list[Vector] | list[float]  # an instant vector per step, or a scalar per step
_RANGE_FUNCTIONS = frozenset(
    {"avg_over_time", "sum_over_time", "count_over_time", "min_over_time", "max_over_time", "last_over_time"}
)


class StepError(Exception):
    """An expression outside what backtest evaluates; the message names the construct."""


@dataclass(frozen=True)
class Grid:
    """Evaluation timestamps: ``start_ms + i * step_ms`` for ``i < n``."""

    start_ms: int
    step_ms: int
    n: int

    def time(self, index: int) -> int:
        return self.start_ms + index * self.step_ms

    def at_or_before(self, t_ms: int) -> int:
        return (t_ms - self.start_ms) // self.step_ms


@dataclass
class Store:
    """Recorded samples by metric name: each series' labels and its value per step (None: absent)."""

    grid: Grid
    series: dict[str, dict[frozenset[tuple[str, str]], tuple[Labels, list[float | None]]]] = field(default_factory=dict)

    def put(self, labels: Labels, values: list[float | None]) -> None:
        named = self.series.setdefault(labels["__name__"], {})
        key = frozenset(labels.items())
        if key in named:
            old = named[key][1]
            named[key] = (labels, [v if v is not None else o for v, o in zip(values, old, strict=True)])
        else:
            named[key] = (labels, values)

    def select(self, name: str | None, matchers: Sequence[Matcher]) -> list[tuple[Labels, list[float | None]]]:
        pools = [self.series.get(name, {})] if name is not None else list(self.series.values())
        return [(labels, values) for pool in pools for labels, values in pool.values() if matches(labels, matchers)]

    def put_vectors(self, name: str, extra: Labels, steps: list[Vector]) -> None:
        """Record an evaluated rule: its samples renamed to ``name``, with the rule's labels."""
        rows: dict[frozenset[tuple[str, str]], tuple[Labels, list[float | None]]] = {}
        for index, vector in enumerate(steps):
            for labels, value in vector:
                full = {**labels, **extra, "__name__": name}
                key = frozenset(full.items())
                if key not in rows:
                    rows[key] = (full, [None] * self.grid.n)
                rows[key][1][index] = value
        for labels, values in rows.values():
            self.put(labels, values)


def _ms(delta: timedelta | None) -> int:
    return _td_ms(delta) if delta is not None else 0


class StepEvaluator:
    """Evaluates one expression at every step of the grid against the store."""

    def __init__(self, store: Store) -> None:
        self.store = store
        self.grid = store.grid
        self.errors: list[tuple[int, str]] = []  # (step, message) where the rule failed

    def run(self, text: str) -> list[Vector]:
        result = self.eval(parse_expr(text))
        if result and not isinstance(result[0], list):
            return [[({}, float(value))] for value in result]
        return result  # type: ignore[return-value]

    def eval(self, node: pp.Expr) -> Steps:
        if isinstance(node, pp.ParenExpr):
            return self.eval(node.expr)
        if isinstance(node, pp.NumberLiteral):
            return [float(node.val)] * self.grid.n
        if isinstance(node, pp.VectorSelector):
            return self.instant(node)
        if isinstance(node, pp.Call):
            return self.call(node)
        if isinstance(node, pp.BinaryExpr):
            return self.binary(node)
        if isinstance(node, pp.AggregateExpr):
            return self.aggregate(node)
        if isinstance(node, pp.UnaryExpr):
            inner = self.eval(node.expr)
            return self._map(inner, lambda v: -v)
        raise StepError(f"backtest cannot evaluate {type(node).__name__} over recorded series")

    def vectors(self, node: pp.Expr) -> list[Vector]:
        value = self.eval(node)
        if value and not isinstance(value[0], list):
            raise StepError("expected an instant vector, got a scalar")
        return value  # type: ignore[return-value]

    def scalars(self, node: pp.Expr) -> list[float]:
        value = self.eval(node)
        if value and isinstance(value[0], list):
            raise StepError("expected a scalar, got an instant vector")
        return value  # type: ignore[return-value]

    # -- selectors --------------------------------------------------------------

    def _selected(self, node: pp.VectorSelector) -> list[tuple[Labels, list[float | None]]]:
        if node.at is not None:
            raise StepError("backtest cannot evaluate @ modifiers")
        name, matchers = _selector_parts(node)
        return self.store.select(name, matchers)

    def value_at(self, values: list[float | None], t_ms: int) -> float | None:
        """The instant value at ``t_ms``: the latest step at or before it, within the lookback."""
        index = self.grid.at_or_before(t_ms)
        if index < 0 or index >= self.grid.n or self.grid.time(index) < t_ms - LOOKBACK_MS:
            return None
        return values[index]

    def instant(self, node: pp.VectorSelector) -> list[Vector]:
        offset = _ms(node.offset)
        out: list[Vector] = [[] for _ in range(self.grid.n)]
        for labels, values in self._selected(node):
            for index in range(self.grid.n):
                value = values[index] if not offset else self.value_at(values, self.grid.time(index) - offset)
                if value is not None:
                    out[index].append((labels, value))
        return out

    # -- functions --------------------------------------------------------------

    def call(self, node: pp.Call) -> Steps:
        name: str = node.func.name
        args = list(node.args)
        if name in _RANGE_FUNCTIONS:
            return self.range_function(name, args[0])
        if name == "vector":
            unlabelled: Labels = {}
            return [[(unlabelled, value)] for value in self.scalars(args[0])]
        if name == "time":
            return [self.grid.time(index) / 1000 for index in range(self.grid.n)]
        if name == "absent":
            labels = _absent_labels(args[0])
            return [[] if vector else [(dict(labels), 1.0)] for vector in self.vectors(args[0])]
        if name in ("clamp_min", "clamp_max", "abs"):
            vectors = self.vectors(args[0])
            bounds = self.scalars(args[1]) if name != "abs" else [0.0] * self.grid.n
            pick = _CLAMPS[name]
            return [
                [(_drop_name(labels), pick(value, bound)) for labels, value in vector]
                for vector, bound in zip(vectors, bounds, strict=True)
            ]
        raise StepError(f"backtest cannot evaluate {name}() over recorded series")

    def matrix_windows(self, node: pp.MatrixSelector) -> list[tuple[int, int]]:
        """Per step, the first and last step index inside ``[t - offset - range, t - offset]``."""
        width, offset = _ms(node.range), _ms(node.vector_selector.offset)
        spans = []
        for index in range(self.grid.n):
            end = self.grid.time(index) - offset
            low = max(0, -((self.grid.start_ms - (end - width)) // self.grid.step_ms))
            spans.append((low, min(self.grid.n - 1, self.grid.at_or_before(end))))
        return spans

    def range_function(self, name: str, arg: pp.Expr) -> list[Vector]:
        if isinstance(arg, pp.SubqueryExpr):
            return self.subquery_function(name, arg)
        if not isinstance(arg, pp.MatrixSelector):
            raise StepError("backtest reads ranges of recorded series only")
        spans = self.matrix_windows(arg)
        out: list[Vector] = [[] for _ in range(self.grid.n)]
        for labels, values in self._selected(arg.vector_selector):
            result = labels if name == "last_over_time" else _drop_name(labels)
            for index, value in enumerate(reduce_windows(name, values, spans)):
                if value is not None:
                    out[index].append((result, value))
        return out

    def subquery_function(self, name: str, node: pp.SubqueryExpr) -> list[Vector]:
        """``f(x[w:r])``: ``x`` read at the multiples of ``r``, then the same windows per step."""
        inner = node.expr
        while isinstance(inner, pp.ParenExpr):
            inner = inner.expr
        if isinstance(inner, pp.VectorSelector):
            selected, inner_offset = self._selected(inner), _ms(inner.offset)
        else:
            # An expression of instant reads only: its value at a multiple of the step is its value at the last
            # grid time at or before it, where every series it reads last had a sample (or was stale).
            if not _instant_reads_only(inner):
                raise StepError("backtest evaluates subqueries of a recorded series or of its instant reads only")
            selected, inner_offset = _series_of(self.vectors(inner), self.grid.n), 0
        width, offset = _ms(node.range), _ms(node.offset)
        step = _ms(node.step) or self.grid.step_ms
        base = -((-(self.grid.start_ms - offset - width)) // step) * step  # first multiple any window reads
        times = list(range(base, self.grid.time(self.grid.n - 1) - offset + 1, step)) if self.grid.n else []
        spans = []
        for index in range(self.grid.n):
            end = self.grid.time(index) - offset
            first = -((-(end - width)) // step) * step
            spans.append(((first - base) // step, (end - base) // step))
        out: list[Vector] = [[] for _ in range(self.grid.n)]
        for labels, values in selected:
            result = labels if name == "last_over_time" else _drop_name(labels)
            points = [self.value_at(values, t - inner_offset) for t in times]
            for index, value in enumerate(reduce_windows(name, points, spans)):
                if value is not None:
                    out[index].append((result, value))
        return out

    # -- operators --------------------------------------------------------------

    def binary(self, node: pp.BinaryExpr) -> Steps:
        op = str(node.op)
        mod = node.modifier
        return_bool = bool(mod.return_bool) if mod is not None else False
        lhs, rhs = self.eval(node.lhs), self.eval(node.rhs)
        lvec = bool(lhs) and isinstance(lhs[0], list)
        rvec = bool(rhs) and isinstance(rhs[0], list)
        out: list[Vector] = []
        fast = _FastBinary(op, mod, return_bool)
        for index in range(self.grid.n):
            left, right = lhs[index], rhs[index]
            try:
                if fast.applies(lvec, rvec):
                    out.append(fast.at(left, right, lvec, rvec))
                else:
                    out.append(self._at(op, mod, return_bool, left, right, lvec, rvec))
            except Unsupported as exc:
                self.errors.append((index, str(exc)))
                out.append([])
        if not lvec and not rvec:
            return [_scalar_op(op, float(a), float(b)) for a, b in zip(lhs, rhs, strict=True)]  # type: ignore[arg-type]
        return out

    @staticmethod
    def _at(
        op: str, mod: pp.BinModifier | None, return_bool: bool, left: object, right: object, lvec: bool, rvec: bool
    ) -> Vector:
        if lvec and rvec:
            assert isinstance(left, list) and isinstance(right, list)
            if op in ("and", "or", "unless"):
                return _check_unique(_set_op(op, left, right, _signature(mod)))
            return _check_unique(_vector_vector(op, left, right, mod, return_bool))
        if lvec:
            assert isinstance(left, list)
            return _check_unique(_vector_scalar(op, left, float(right), swap=False, return_bool=return_bool))  # type: ignore[arg-type]
        if rvec:
            assert isinstance(right, list)
            return _check_unique(_vector_scalar(op, right, float(left), swap=True, return_bool=return_bool))  # type: ignore[arg-type]
        return []

    def aggregate(self, node: pp.AggregateExpr) -> list[Vector]:
        op = str(node.op)
        if op not in ("sum", "avg", "min", "max", "count", "group"):
            raise StepError(f"backtest cannot evaluate {op}() over recorded series")
        mod = node.modifier
        without = mod is not None and mod.type == pp.AggModifierType.Without
        grouping = set(mod.labels) if mod is not None else set()
        out: list[Vector] = []
        for vector in self.vectors(node.expr):
            groups: dict[frozenset[tuple[str, str]], tuple[Labels, list[float]]] = {}
            for labels, value in vector:
                if without:
                    key_labels = {k: v for k, v in labels.items() if k not in grouping and k != "__name__"}
                else:
                    key_labels = {k: v for k, v in labels.items() if k in grouping}
                groups.setdefault(frozenset(key_labels.items()), (key_labels, []))[1].append(value)
            out.append([(labels, _reduce(op, values, None)) for labels, values in groups.values()])
        return out

    def _map(self, value: Steps, fn: Callable[[float], float]) -> Steps:
        if value and isinstance(value[0], list):
            return [[(_drop_name(labels), fn(v)) for labels, v in vector] for vector in value]
        return [fn(float(v)) for v in value]  # type: ignore[arg-type]


class _FastBinary:
    """One-to-one vector matching and vector/scalar operations with their label work done once per series.

    The labels of a series are the same dict at every step, so its matching key and its result
    labels are computed at its first step and reused (by identity, the dicts kept alive here):
    the same rules as ``compiler.promql.evaluate``, without redoing them at each of 20,000 steps.
    """

    def __init__(self, op: str, mod: pp.BinModifier | None, return_bool: bool) -> None:
        self.op, self.mod, self.return_bool = op, mod, return_bool
        card = mod.card if mod is not None else pp.VectorMatchCardinality.OneToOne
        self.one_to_one = card == pp.VectorMatchCardinality.OneToOne and op not in ("and", "or", "unless")
        matching = mod.matching if mod is not None else None
        self.on = matching is not None and matching.type == pp.LabelModifierType.Include
        self.match_labels = list(matching.labels) if matching is not None else []
        self.signature = _signature(mod)
        self.keys: dict[int, tuple[tuple[str, str], ...]] = {}
        self.results: dict[tuple[int, int], Labels] = {}
        self.alive: list[Labels] = []

    def applies(self, lvec: bool, rvec: bool) -> bool:
        return self.one_to_one if lvec and rvec else (lvec or rvec) and self.op not in ("and", "or", "unless")

    def key(self, labels: Labels) -> tuple[tuple[str, str], ...]:
        found = self.keys.get(id(labels))
        if found is None:
            found = self.keys[id(labels)] = self.signature(labels)
            self.alive.append(labels)
        return found

    def result(self, left: Labels, right: Labels) -> Labels:
        found = self.results.get((id(left), id(right)))
        if found is None:
            found = _result_metric(left, right, self.op, True, self.on, self.match_labels, [])
            if self.return_bool:
                found = _drop_name(found)
            self.results[(id(left), id(right))] = found
            self.alive += [left, right]
        return found

    def at(self, left: Vector | float, right: Vector | float, lvec: bool, rvec: bool) -> Vector:
        if not (lvec and rvec):
            return self.with_scalar(left, right, lvec)
        assert isinstance(left, list) and isinstance(right, list)
        one: dict[tuple[tuple[str, str], ...], tuple[Labels, float]] = {}
        for labels, value in right:
            key = self.key(labels)
            if key in one:
                raise Unsupported(f"found duplicate series for the match group {dict(key)} on the right hand-side")
            one[key] = (labels, value)
        out: Vector = []
        matched: set[tuple[tuple[str, str], ...]] = set()
        for labels, value in left:
            key = self.key(labels)
            partner = one.get(key)
            if partner is None:
                continue
            result, keep = _elem_binop(self.op, value, partner[1])
            if self.return_bool:
                result, keep = (1.0 if keep else 0.0), True
            if not keep:
                continue
            if key in matched:
                raise Unsupported("multiple matches for labels: many-to-one matching must be explicit (group_left)")
            matched.add(key)
            out.append((self.result(labels, partner[0]), result))
        return out

    def with_scalar(self, left: Vector | float, right: Vector | float, lvec: bool) -> Vector:
        vector, scalar = (left, right) if lvec else (right, left)
        assert isinstance(vector, list) and not isinstance(scalar, list)
        comparison = self.op in _COMPARISONS
        out: Vector = []
        for labels, value in vector:
            lv, rv = (value, float(scalar)) if lvec else (float(scalar), value)
            result, keep = _elem_binop(self.op, lv, rv)
            if comparison and not lvec:
                result = value
            if self.return_bool:
                result, keep = (1.0 if keep else 0.0), True
            if keep:
                named = comparison and not self.return_bool
                out.append((labels if named else self.result(labels, labels), result))
        return out


_COMPARISONS = frozenset({"==", "!=", ">", "<", ">=", "<="})

_CLAMPS: dict[str, Callable[[float, float], float]] = {
    "clamp_min": lambda v, bound: v if math.isnan(v) else max(v, bound),
    "clamp_max": lambda v, bound: v if math.isnan(v) else min(v, bound),
    "abs": lambda v, _bound: abs(v),
}


def _scalar_op(op: str, a: float, b: float) -> float:
    if op == "+":
        return a + b
    if op == "-":
        return a - b
    if op == "*":
        return a * b
    if op == "/":
        return (
            a / b if b else (math.nan if a == 0 or math.isnan(a) else math.copysign(math.inf, a) * math.copysign(1, b))
        )
    raise StepError(f"backtest cannot evaluate scalar {op}")


# Windows this long or longer are summed from prefix sums rather than one by one.
PREFIX_FROM = 64


def _instant_reads_only(node: pp.Expr) -> bool:
    """No range, subquery, offset or ``@`` anywhere in the expression."""
    for part in _iter_nodes(node):
        if isinstance(part, pp.MatrixSelector | pp.SubqueryExpr):
            return False
        if isinstance(part, pp.VectorSelector) and (part.offset is not None or part.at is not None):
            return False
    return True


def _series_of(vectors: list[Vector], n: int) -> list[tuple[Labels, list[float | None]]]:
    """An expression's per-step vectors as series: each label set with its value at every step (None: absent)."""
    found: dict[tuple[tuple[str, str], ...], tuple[Labels, list[float | None]]] = {}
    for index, vector in enumerate(vectors):
        for labels, value in vector:
            key = tuple(sorted(labels.items()))
            if key not in found:
                found[key] = (labels, [None] * n)
            found[key][1][index] = value
    return list(found.values())


def reduce_windows(name: str, points: list[float | None], spans: list[tuple[int, int]]) -> list[float | None]:
    """``name`` over ``points[low..high]`` for each span (None: no point present in it).

    avg, sum and count of long windows of finite points come from compensated prefix sums, so a
    14-day replay reads each recorded sample once rather than once per window it falls in; the
    result agrees with Prometheus's own float arithmetic to within a few units in the last place.
    """
    fast = name in ("avg_over_time", "sum_over_time", "count_over_time") and all(
        p is None or math.isfinite(p) for p in points
    )
    sums, counts = _prefix(points) if fast else ([], [])
    out: list[float | None] = []
    for low, high in spans:
        if high < low or high < 0:
            out.append(None)
        elif fast and high - low + 1 >= PREFIX_FROM:
            count = counts[high + 1] - counts[max(low, 0)]
            total = (sums[high + 1][0] - sums[max(low, 0)][0]) + (sums[high + 1][1] - sums[max(low, 0)][1])
            out.append(
                None
                if not count
                else float(count)
                if name == "count_over_time"
                else total / count
                if name == "avg_over_time"
                else total
            )
        else:
            window = [p for p in points[max(low, 0) : high + 1] if p is not None]
            out.append(_over_time(name, window) if window else None)
    return out


def _prefix(points: list[float | None]) -> tuple[list[tuple[float, float]], list[int]]:
    """Neumaier-compensated running sums (value, correction) and running counts of present points."""
    sums: list[tuple[float, float]] = [(0.0, 0.0)]
    counts = [0]
    total, correction, count = 0.0, 0.0, 0
    for point in points:
        if point is not None:
            added = total + point
            if abs(total) >= abs(point):
                correction += (total - added) + point
            else:
                correction += (point - added) + total
            total = added
            count += 1
        sums.append((total, correction))
        counts.append(count)
    return sums, counts


def _over_time(name: str, window: list[float]) -> float:
    """One range function over the window's present values, with Prometheus 2.42's arithmetic."""
    if name == "avg_over_time":
        mean, count = 0.0, 0.0
        for value in window:  # the incremental mean of funcAvgOverTime (2.42)
            count += 1
            if math.isinf(mean):
                same_infinity = math.isinf(value) and (mean > 0) == (value > 0)
                if same_infinity or not (math.isinf(value) or math.isnan(value)):
                    continue
            mean += value / count - mean / count
        return mean
    if name == "sum_over_time":
        return sum(window)
    if name == "count_over_time":
        return float(len(window))
    if name == "min_over_time":
        return min(window)
    if name == "max_over_time":
        return max(window)
    return window[-1]


def _absent_labels(node: pp.Expr) -> Labels:
    """absent()'s labels: the equality matchers of a plain selector (a name matched twice is dropped)."""
    if not isinstance(node, pp.VectorSelector):
        return {}
    _, matchers = _selector_parts(node)
    equal: Labels = {}
    twice: set[str] = set()
    for matcher in matchers:
        if matcher.op == "=" and matcher.name != "__name__":
            if matcher.name in equal:
                twice.add(matcher.name)
            equal[matcher.name] = matcher.value
    return {k: v for k, v in equal.items() if k not in twice}
