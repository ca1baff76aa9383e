"""Rules evaluated over a whole time grid at once, one numpy row per series: backtest's local engine.

A rule that reads raw series used to be a range query: the server redid its label work (joins to
``kubelet_node_name``, ``label_replace``, ``or``, ``group_left``) at every step, and that is what
made 14 days of a 7,500-node fleet cost a day of the server's time. Here each raw series' samples
are fetched once (``compiler.live.remote_read``) and a rule's value is computed for every step of
the grid in one pass: label matching is done once per series (a series has the same labels at
every step), the arithmetic once per operator over a ``(series, steps)`` array.

The semantics are Prometheus 2.42's, step by step: an instant selector reads the latest sample at
or before the step within the 5m lookback, and none if that sample is a staleness marker; a range
``[t-w, t]`` includes both ends and skips staleness markers; ``rate`` extrapolates as
``extrapolatedRate`` does, its float operations in the same order; ``histogram_quantile`` is
``bucketQuantile``; ``sum``, ``avg`` (incremental mean), ``min`` and ``max`` fold their inputs in
the vector's order; ``avg_over_time`` is the Kahan-Neumaier mean. A step at which Prometheus would
fail the rule (many-to-many matching, a duplicate label set) gives the rule no result there, and
the first message is kept, as the step evaluator does.

Only the shapes the compiler emits are supported; anything else raises ``StepError`` naming it,
and backtest falls back to its other paths for that rule.
"""

from __future__ import annotations

import importlib
import math
import threading
from collections.abc import Callable, Iterable, Sequence
from concurrent.futures import Executor, Future
from dataclasses import dataclass
from datetime import timedelta
from functools import cached_property
from itertools import repeat
from types import ModuleType
from typing import Literal

import numpy as np
import numpy.typing as npt
import promql_parser as pp

from compiler.live.remote_read import RawBatch, RawLike
from compiler.live.steps import LOOKBACK_MS, Grid, StepError, Vector, reduce_windows
from compiler.promql import Matcher, _selector_parts, _td_ms, is_valid_label_name, parse_expr, regex
from compiler.promql.evaluate import _absent_labels, _go_expand, _result_metric, _show

Labels = dict[str, str]
Floats = npt.NDArray[np.float64]
Bools = npt.NDArray[np.bool_]
Ints = npt.NDArray[np.int64]
STALE_NAN_BITS = 0x7FF0000000000002  # Prometheus's staleness marker (value.StaleNaN)
_NAME = "__name__"
_EMPTY = repeat("")  # the default of every label ``on(...)`` reads: map(labels.get, names, _EMPTY)
BLOCK_CELLS = 2_000_000  # series x steps computed at once in a raw read: its temporaries stay within ~50 MB each
_ARITHMETIC = frozenset({"+", "-", "*", "/", "%", "^", "atan2"})
_COMPARISON = frozenset({"==", "!=", ">", "<", ">=", "<="})
_SETS = frozenset({"and", "or", "unless"})
_RATES = frozenset({"rate", "increase"})
_OVER_TIME = frozenset({"avg_over_time", "max_over_time", "min_over_time", "sum_over_time", "count_over_time"})


Fetch = Callable[[tuple[Matcher, ...], int, int], Sequence[RawLike]]


def _sample_count(series: Sequence[RawLike]) -> int:
    if isinstance(series, RawBatch):  # no Python object per series
        return series.samples
    return sum(len(one.timestamps) for one in series)


@dataclass
class Columns:
    """An instant vector at every step: row ``i`` is series ``labels[i]``, present where ``present[i]``.

    Two rows may carry the same labels when they are never present at the same step (``or`` of two
    sides that take turns); a step where they are is an error step, as in Prometheus.
    """

    labels: list[Labels]
    values: Floats
    present: Bools

    @staticmethod
    def empty(n: int) -> Columns:
        return Columns([], np.zeros((0, n)), np.zeros((0, n), dtype=bool))

    def rows(self, keep: Sequence[int] | Ints) -> Columns:
        index = np.asarray(keep, dtype=np.int64)
        return Columns([self.labels[i] for i in index], self.values[index], self.present[index])

    def vectors(self) -> list[Vector]:
        """The vector at each step, rows in order (what the alert state machines and the step store read)."""
        n = self.present.shape[1]
        out: list[Vector] = [[] for _ in range(n)]
        steps, rows = np.nonzero(self.present.T)  # step-major: each step's rows in row order
        values = self.values[rows, steps]
        for step, row, value in zip(steps.tolist(), rows.tolist(), values.tolist(), strict=True):
            out[step].append((self.labels[row], value))
        return out


Value = Columns | Floats | str  # an instant vector, a scalar per step, or a string literal


def is_stale(values: Floats) -> Bools:
    stale: Bools = values.view(np.uint64) == np.uint64(STALE_NAN_BITS)
    return stale


def _ms(delta: timedelta | None) -> int:
    return _td_ms(delta) if delta is not None else 0


Identity = tuple[str | None, ...]


def identities(rows: Sequence[Labels], leave_out: Iterable[str] = ()) -> tuple[tuple[str, ...], list[Identity]]:
    """A key per label set (without the names ``leave_out``), equal exactly when the sets are: its value, or None,
    for every name any row has, in one order; and those names. One C-level ``map`` per row, where a frozenset of
    its items costs several times more over the hundreds of thousands of rows of a per-node rule."""
    names = tuple(sorted(set().union(*rows).difference(leave_out))) if rows else ()
    return names, [tuple(map(labels.get, names)) for labels in rows]


@dataclass(frozen=True)
class _Signer:
    """Vector matching's key (``compiler.promql.evaluate._signature``) for the label sets of both operands, as
    values in one order of names: ``on(...)``'s labels ("" where missing, as Prometheus reads them), or every
    name either side has but ``ignoring(...)``'s and ``__name__`` (None where missing)."""

    names: tuple[str, ...]
    on: bool

    @staticmethod
    def of(mod: pp.BinModifier | None, *sides: Sequence[Labels]) -> _Signer:
        matching = mod.matching if mod is not None else None
        if matching is not None and matching.type == pp.LabelModifierType.Include:
            return _Signer(tuple(sorted(set(matching.labels))), on=True)
        ignored = {*(matching.labels if matching is not None else ()), _NAME}
        return _Signer(identities([labels for side in sides for labels in side], ignored)[0], on=False)

    def keys(self, rows: Sequence[Labels]) -> list[Identity]:
        if self.on:
            return [tuple(map(labels.get, self.names, _EMPTY)) for labels in rows]
        return [tuple(map(labels.get, self.names)) for labels in rows]

    def shown(self, key: Identity) -> str:
        return _show({name: value for name, value in zip(self.names, key, strict=True) if value is not None})


def _drop_name(labels: Labels) -> Labels:
    return {k: v for k, v in labels.items() if k != _NAME} if _NAME in labels else labels


class ColumnEvaluator:
    """Evaluates rule expressions over ``grid``: raw series through ``fetch`` (each selector fetched once,
    over the widest window any expression reads it with), recorded series from ``recorded``."""

    def __init__(self, grid: Grid, fetch: Fetch, recorded: dict[str, Columns] | None = None) -> None:
        self.grid = grid
        self.fetch = fetch
        self.recorded = recorded if recorded is not None else {}
        self.times: Ints = grid.start_ms + np.arange(grid.n, dtype=np.int64) * grid.step_ms
        self._raw: dict[tuple[Matcher, ...], tuple[int, Sequence[RawLike]]] = {}
        self._asked: dict[tuple[Matcher, ...], tuple[int, Future[Sequence[RawLike]]]] = {}
        self._flats: dict[tuple[tuple[Matcher, ...], bool], tuple[Sequence[RawLike], _Flat]] = {}
        self.reach: dict[tuple[Matcher, ...], int] = {}  # how far before a step each raw selector is read
        # A recorded selector's rows, per series set it was matched against (several rules read one record).
        self._picked: dict[tuple[str, tuple[Matcher, ...]], tuple[Columns, Columns]] = {}
        self.errors: Bools = np.zeros(grid.n, dtype=bool)
        self.messages: dict[int, str] = {}
        self.samples_fetched = 0

    # -- entry points -------------------------------------------------------------

    def plan(self, texts: Iterable[str]) -> None:
        """Note how far back every raw selector of ``texts`` reads, so each is fetched once, widely enough."""
        for text in texts:
            self._note_reach(parse_expr(text), 0)

    def run(self, text: str) -> Columns:
        """A rule's result at every step; steps where Prometheus would fail the rule are empty (``errors``)."""
        self.errors = np.zeros(self.grid.n, dtype=bool)
        self.messages = {}
        value = self.eval(parse_expr(text))
        if isinstance(value, str):
            raise StepError("a rule cannot evaluate to a string")
        if not isinstance(value, Columns):
            value = Columns([{}], value[None, :].copy(), np.ones((1, self.grid.n), dtype=bool))
        if self.errors.any():
            value = Columns(value.labels, value.values, value.present & ~self.errors[None, :])
        return value

    def first_error(self) -> tuple[int, str] | None:
        if not self.messages:
            return None
        step = min(self.messages)
        return step, self.messages[step]

    def _fail(self, steps: Bools, message: str) -> None:
        for step in np.nonzero(steps & ~self.errors)[0].tolist():
            self.messages.setdefault(int(step), message)
        self.errors |= steps

    # -- reading ------------------------------------------------------------------

    def _note_reach(self, node: pp.Expr, outer: int) -> None:
        if isinstance(node, pp.VectorSelector):
            if not self._is_recorded(node):
                key = self._matchers(node)
                self.reach[key] = max(self.reach.get(key, 0), outer + LOOKBACK_MS + _ms(node.offset))
            return
        if isinstance(node, pp.MatrixSelector):
            selector = node.vector_selector
            if not self._is_recorded(selector):
                key = self._matchers(selector)
                self.reach[key] = max(self.reach.get(key, 0), outer + _ms(node.range) + _ms(selector.offset))
            return
        from compiler.promql import _children

        for child in _children(node):
            self._note_reach(child, outer)

    def _is_recorded(self, node: pp.VectorSelector) -> bool:
        return node.name is not None and node.name in self.recorded

    @staticmethod
    def _matchers(node: pp.VectorSelector) -> tuple[Matcher, ...]:
        if node.at is not None:
            raise StepError("backtest cannot evaluate @ modifiers")
        name, matchers = _selector_parts(node)
        named = (Matcher(_NAME, "=", name),) if name is not None else ()
        return tuple(sorted(set(named + tuple(matchers)), key=lambda m: (m.name, m.op, m.value)))

    def prefetch(self, pool: Executor) -> None:
        """Ask for every planned raw selector at once, ``pool`` at a time: the server reads the next ones while
        this process evaluates (called after ``plan``)."""
        for key, reach in self.reach.items():
            if key not in self._raw and key not in self._asked:
                self._asked[key] = (reach, pool.submit(self.fetch, key, *self._span(reach)))

    def _span(self, reach: int) -> tuple[int, int]:
        return (int(self.times[0]) - reach, int(self.times[-1])) if self.grid.n else (0, 0)

    def raw(self, node: pp.VectorSelector, reach_ms: int) -> Sequence[RawLike]:
        key = self._matchers(node)
        reach = max(self.reach.get(key, 0), reach_ms)
        if key in self._asked:
            asked_reach, future = self._asked.pop(key)
            found = future.result()
            self.samples_fetched += _sample_count(found)
            self._raw[key] = (asked_reach, found)
        held = self._raw.get(key)
        if held is None or held[0] < reach:
            found = self.fetch(key, *self._span(reach))
            self.samples_fetched += _sample_count(found)
            held = (reach, found)
            self._raw[key] = held
        return held[1]

    def _flat(self, node: pp.VectorSelector, reach_ms: int, fresh: bool) -> _Flat:
        """The selector's series one after another in one array (without staleness markers when ``fresh``: a
        range skips them), searched for every series and step at once."""
        key = (self._matchers(node), fresh)
        held = self._flats.get(key)
        series = self.raw(node, reach_ms)
        if held is None or held[0] is not series:
            held = (series, _Flat.of(series, fresh))
            self._flats[key] = held
        return held[1]

    # -- expressions ----------------------------------------------------------------

    def eval(self, node: pp.Expr) -> Value:
        if isinstance(node, pp.ParenExpr):
            return self.eval(node.expr)
        if isinstance(node, pp.NumberLiteral):
            return np.full(self.grid.n, float(node.val))
        if isinstance(node, pp.StringLiteral):
            return str(node.val)
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
            if isinstance(inner, Columns):
                return Columns([_drop_name(labels) for labels in inner.labels], -inner.values, inner.present)
            if isinstance(inner, str):
                raise StepError("unary minus of a string")
            return -inner
        raise StepError(f"the local engine cannot evaluate {type(node).__name__}")

    def columns(self, node: pp.Expr) -> Columns:
        value = self.eval(node)
        if not isinstance(value, Columns):
            raise StepError("expected an instant vector")
        return value

    def scalar(self, node: pp.Expr) -> Floats:
        value = self.eval(node)
        if isinstance(value, (Columns, str)):
            raise StepError("expected a scalar")
        return value

    def string(self, node: pp.Expr) -> str:
        value = self.eval(node)
        if not isinstance(value, str):
            raise StepError("expected a string")
        return value

    def instant(self, node: pp.VectorSelector) -> Columns:
        n = self.grid.n
        offset = _ms(node.offset)
        if self._is_recorded(node):
            return self._recorded_instant(node, offset)
        flat = self._flat(node, LOOKBACK_MS + offset, fresh=False)
        if not flat.labels:
            return Columns.empty(n)
        refs = self.times - offset
        rows = len(flat.labels)
        values, present = np.zeros((rows, n)), np.zeros((rows, n), dtype=bool)
        compiled = _compiled()
        if compiled is not None:  # every series and step in one pass
            series = (flat.ts, flat.vs, flat.vs.view(np.uint64), flat.first, flat.stop)
            compiled.instants(*series, refs, LOOKBACK_MS, np.uint64(STALE_NAN_BITS), values, present)
        block = max(1, BLOCK_CELLS // max(n, 1))
        for first in range(0, rows if compiled is None else 0, block):
            part = slice(first, min(rows, first + block))
            index = flat.search(refs, "right", part) - 1
            clipped = np.clip(index, 0, max(len(flat.ts) - 1, 0))
            picked = flat.vs[clipped]
            here = (index >= flat.first[part, None]) & (flat.ts[clipped] >= refs - LOOKBACK_MS) & ~is_stale(picked)
            values[part], present[part] = picked, here
        keep = np.asarray(present.any(axis=1), dtype=bool)
        return Columns(_kept(flat.labels, keep), values[keep], present[keep])

    def _recorded_instant(self, node: pp.VectorSelector, offset: int) -> Columns:
        name, matchers = _selector_parts(node)
        from compiler.promql.synth import matches

        held = self.recorded.get(name or "") or Columns.empty(self.grid.n)
        earlier = self._picked.get((name or "", matchers))
        if earlier is not None and earlier[0] is held:
            picked = earlier[1]
        else:
            picked = held.rows([i for i, labels in enumerate(held.labels) if matches(labels, matchers)])
            self._picked[name or "", matchers] = (held, picked)
        if not offset:
            return picked
        if offset % self.grid.step_ms:
            raise StepError("an offset that is not a multiple of the group's interval")
        shift = offset // self.grid.step_ms
        values = np.zeros_like(picked.values)
        present = np.zeros_like(picked.present)
        if shift < self.grid.n:
            values[:, shift:] = picked.values[:, : self.grid.n - shift]
            present[:, shift:] = picked.present[:, : self.grid.n - shift]
        return Columns(picked.labels, values, present)

    # -- functions ----------------------------------------------------------------

    def call(self, node: pp.Call) -> Value:
        name: str = node.func.name
        args = list(node.args)
        if name in _RATES or name in _OVER_TIME or name == "last_over_time":
            return self.range_function(name, args[0])
        if name == "vector":
            return Columns([{}], self.scalar(args[0])[None, :].copy(), np.ones((1, self.grid.n), dtype=bool))
        if name == "time":
            return self.times / 1000
        if name == "absent":
            inner = self.columns(args[0])
            missing = (
                np.asarray(~inner.present.any(axis=0), dtype=bool)
                if len(inner.labels)
                else np.ones(self.grid.n, dtype=bool)
            )
            return Columns([_absent_labels(args[0])], np.ones((1, self.grid.n)), missing[None, :])
        if name in ("clamp_min", "clamp_max", "abs"):
            inner = self.columns(args[0])
            if name == "abs":
                values = np.abs(inner.values)
            else:
                bound = self.scalar(args[1])[None, :]
                values = np.maximum(inner.values, bound) if name == "clamp_min" else np.minimum(inner.values, bound)
            return self._unnamed(Columns(inner.labels, values, inner.present))
        if name == "label_replace":
            return self.label_replace(args)
        if name == "histogram_quantile":
            return self.histogram_quantile(self.scalar(args[0]), self.columns(args[1]))
        raise StepError(f"the local engine cannot evaluate {name}()")

    def range_function(self, name: str, arg: pp.Expr) -> Columns:
        if isinstance(arg, pp.SubqueryExpr):
            return self.subquery_function(name, arg)
        if not isinstance(arg, pp.MatrixSelector):
            raise StepError(f"the local engine cannot evaluate {name}() of {type(arg).__name__}")
        selector = arg.vector_selector
        if self._is_recorded(selector):
            if name in _RATES:
                raise StepError(f"the local engine evaluates {name}() of raw series only")
            held = self._recorded_instant(selector, 0)
            width, offset = _ms(arg.range), _ms(selector.offset)
            ends = self.times - offset
            low = -((self.grid.start_ms - (ends - width)) // self.grid.step_ms)
            high = (ends - self.grid.start_ms) // self.grid.step_ms
            return self._windows(name, held, held.values, held.present, low, np.minimum(high, self.grid.n - 1))
        width, offset = _ms(arg.range), _ms(selector.offset)
        flat = self._flat(selector, width + offset, fresh=True)
        if not flat.labels:
            return Columns.empty(self.grid.n)
        ends = self.times - offset
        starts = ends - width
        rows, n = len(flat.labels), self.grid.n
        values, present = np.zeros((rows, n)), np.zeros((rows, n), dtype=bool)
        compiled = _compiled() if name in _RATES else None
        if compiled is not None:  # every series and step in one pass, no temporaries
            series = (flat.ts, flat.vs, flat.drops, flat.first, flat.stop)
            compiled.extrapolated_rates(*series, starts, ends, width, name == "rate", values, present)
        block = max(1, BLOCK_CELLS // max(n, 1))  # rows at a time: the temporaries stay small
        for first in range(0, rows if compiled is None else 0, block):
            part = slice(first, min(rows, first + block))
            low = flat.search(starts, "left", part).ravel()
            high = (flat.search(ends, "right", part) - 1).ravel()
            count = high - low + 1
            if name in _RATES:
                height = part.stop - part.start
                bounds = np.tile(starts, height), np.tile(ends, height)
                value, ok = _extrapolated_rate(
                    flat.ts, flat.vs, flat.drops, low, high, count, *bounds, width, name == "rate"
                )
            else:
                value, ok = _over_time(name, flat.vs, low, high, count)
            values[part], present[part] = value.reshape(-1, n), ok.reshape(-1, n)
        keep = np.asarray(present.any(axis=1), dtype=bool)
        out = Columns(_kept(flat.labels, keep), values[keep], present[keep])
        return out if name == "last_over_time" else self._unnamed(out)

    def subquery_function(self, name: str, node: pp.SubqueryExpr) -> Columns:
        """``f(x[w:r])``: ``x`` (instant reads, evaluated on the grid) read at the multiples of ``r`` within the
        lookback, then ``f`` over each step's window of those points."""
        if name in _RATES:
            raise StepError(f"the local engine cannot evaluate {name}() of a subquery")
        inner = self.columns(node.expr)
        width, offset = _ms(node.range), _ms(node.offset)
        step = _ms(node.step) or self.grid.step_ms
        n = self.grid.n
        if not n:
            return Columns.empty(0)
        base = -((-(self.grid.start_ms - offset - width)) // step) * step  # the first multiple any window reads
        times = np.arange(base, int(self.times[-1]) - offset + 1, step, dtype=np.int64)
        index = (times - self.grid.start_ms) // self.grid.step_ms
        usable = (index >= 0) & (index < n)
        clipped = np.clip(index, 0, max(n - 1, 0))
        usable &= self.grid.start_ms + clipped * self.grid.step_ms >= times - LOOKBACK_MS
        values = inner.values[:, clipped]
        present = inner.present[:, clipped] & usable[None, :]
        ends = self.times - offset
        low = (-((-(ends - width)) // step) * step - base) // step
        high = (ends - base) // step
        return self._windows(name, inner, values, present, low, high)

    def _windows(self, name: str, source: Columns, values: Floats, present: Bools, low: Ints, high: Ints) -> Columns:
        """``name`` over each step's window ``[low, high]`` of every row's points (absent points skipped)."""
        if name not in _OVER_TIME and name != "last_over_time":
            raise StepError(f"the local engine cannot evaluate {name}() over a window")
        source, values, present = _merged(source, values, present)
        labels = [labels if name == "last_over_time" else _drop_name(labels) for labels in source.labels]
        n = self.grid.n
        rows = len(labels)
        if not rows:
            return Columns.empty(n)
        low = np.maximum(low, 0)
        longest = int((high - low).max()) + 1 if n else 0
        if rows <= 64 or longest > 240:  # few rows or long windows: the step evaluator's own fold, row by row
            spans = list(zip(low.tolist(), high.tolist(), strict=True))
            out_v, out_p = np.zeros((rows, n)), np.zeros((rows, n), dtype=bool)
            for row in range(rows):
                points = [v if p else None for v, p in zip(values[row].tolist(), present[row].tolist(), strict=True)]
                for step, reduced in enumerate(reduce_windows(name, points, spans)):
                    if reduced is not None:
                        out_v[row, step], out_p[row, step] = reduced, True
            return self._apart(source.labels, Columns(labels, out_v, out_p))
        acc = np.full((rows, n), math.nan)
        comp = np.zeros((rows, n))
        count = np.zeros((rows, n))
        with np.errstate(all="ignore"):
            for k in range(max(longest, 0)):
                position = low + k
                inside = position <= high
                column = np.where(inside, position, 0)
                value = values[:, column]
                here = present[:, column] & inside[None, :]
                first = here & (count == 0)
                more = here & (count > 0)
                count = count + here
                if name == "max_over_time":
                    acc = np.where(here, np.fmax(acc, value), acc)
                elif name == "min_over_time":
                    acc = np.where(here, np.fmin(acc, value), acc)
                elif name == "last_over_time":
                    acc = np.where(here, value, acc)
                elif name == "sum_over_time":
                    acc = np.where(first, value, np.where(more, acc + value, acc))
                elif name == "avg_over_time":
                    acc, comp = _mean_step(np.where(first, 0.0, acc), comp, value, count, here)
            if name == "avg_over_time":
                acc = np.where(np.isinf(acc), acc, acc + comp)
            if name == "count_over_time":
                acc = count.copy()
        return self._apart(source.labels, Columns(labels, acc, count > 0))

    def label_replace(self, args: list[pp.Expr]) -> Columns:
        inner = self.columns(args[0])
        dst, replacement, src, pattern = (self.string(arg) for arg in args[1:5])
        if not is_valid_label_name(dst):
            raise StepError(f"invalid destination label name in label_replace(): {dst!r}")
        if regex.problem(pattern) is not None:
            raise StepError(f"invalid regular expression in label_replace(): {pattern!r}")
        out = []
        for labels in inner.labels:
            match = regex.match(pattern, labels.get(src, ""))
            new = dict(labels)
            if match is not None:
                result = _go_expand(replacement, match)
                if result:
                    new[dst] = result
                else:
                    new.pop(dst, None)
            out.append(new)
        return self._unique(Columns(out, inner.values, inner.present))

    def histogram_quantile(self, q: Floats, buckets: Columns) -> Columns:
        groups: dict[Identity, tuple[Labels, list[tuple[float, int]]]] = {}
        names = identities(buckets.labels, ("le", _NAME))[0]
        for row, labels in enumerate(buckets.labels):
            try:
                bound = float(labels.get("le", "x"))
            except ValueError:
                continue
            key = tuple(map(labels.get, names))
            if key not in groups:
                groups[key] = ({k: v for k, v in zip(names, key, strict=True) if v is not None}, [])
            groups[key][1].append((bound, row))
        if not groups:
            return Columns.empty(self.grid.n)
        members = [sorted(rows, key=lambda member: member[0]) for _, rows in groups.values()]
        alike: dict[tuple[float, ...], list[int]] = {}  # groups with the same bucket bounds: computed together
        for group, rows in enumerate(members):
            alike.setdefault(tuple(bound for bound, _ in rows), []).append(group)
        values = np.full((len(members), self.grid.n), math.nan)
        present = np.zeros((len(members), self.grid.n), dtype=bool)
        for bounds, chosen in alike.items():
            block = max(1, BLOCK_CELLS // max(1, len(bounds) * self.grid.n))
            for first in range(0, len(chosen), block):
                picked = chosen[first : first + block]
                index = np.array([[row for _, row in members[group]] for group in picked], dtype=np.int64)
                value, ok = _bucket_quantiles(q, np.array(bounds), buckets.values[index], buckets.present[index])
                values[picked], present[picked] = value, ok
        return Columns([rest for rest, _ in groups.values()], values, present)

    # -- operators ----------------------------------------------------------------

    def binary(self, node: pp.BinaryExpr) -> Value:
        op = str(node.op)
        mod = node.modifier
        return_bool = bool(mod.return_bool) if mod is not None else False
        lhs, rhs = self.eval(node.lhs), self.eval(node.rhs)
        if isinstance(lhs, str) or isinstance(rhs, str):
            raise StepError("a binary operator over a string")
        if not isinstance(lhs, Columns) and not isinstance(rhs, Columns):
            value, keep = _elementwise(op, lhs, rhs)
            if op in _COMPARISON:
                if not return_bool:
                    raise StepError("comparisons between scalars must use the bool modifier")
                return keep.astype(np.float64)
            return value
        if isinstance(lhs, Columns) and isinstance(rhs, Columns):
            if op in _SETS:
                return self.set_op(op, lhs, rhs, mod)
            return self.vector_vector(op, lhs, rhs, mod, return_bool)
        if op in _SETS:
            raise StepError(f"{op} needs vectors on both sides")
        if isinstance(lhs, Columns):
            return self.vector_scalar(op, lhs, np.asarray(rhs), swap=False, return_bool=return_bool)
        assert isinstance(rhs, Columns)
        return self.vector_scalar(op, rhs, np.asarray(lhs), swap=True, return_bool=return_bool)

    def vector_scalar(self, op: str, vec: Columns, scalar: Floats, *, swap: bool, return_bool: bool) -> Columns:
        left, right = (scalar[None, :], vec.values) if swap else (vec.values, scalar[None, :])
        value, keep = _elementwise(op, left, right)
        value = np.broadcast_to(value, vec.values.shape)
        if op in _COMPARISON:
            value = vec.values
        present = vec.present
        if return_bool:
            value = keep.astype(np.float64)
        elif op in _COMPARISON:
            present = present & keep
        out = Columns(vec.labels, np.array(value, dtype=np.float64), present)
        return out if op in _COMPARISON and not return_bool else self._unnamed(out)

    def set_op(self, op: str, lhs: Columns, rhs: Columns, mod: pp.BinModifier | None) -> Columns:
        signer = _Signer.of(mod, lhs.labels, rhs.labels)
        if op == "or":
            held = _present_by_key(signer.keys(lhs.labels), lhs.present, self.grid.n)
            taken = held.rows(signer.keys(rhs.labels))
            out = Columns(
                lhs.labels + rhs.labels,
                np.vstack([lhs.values, rhs.values]),
                np.vstack([lhs.present, rhs.present & ~taken]),
            )
            # No new clash: a right row is dropped wherever a left row with its key is present, and its key is
            # that of any left row with its labels (each side's own clashes failed their steps already).
            return out
        if not lhs.labels:
            return lhs
        other = _present_by_key(signer.keys(rhs.labels), rhs.present, self.grid.n)
        matched = other.rows(signer.keys(lhs.labels))
        present = lhs.present & (matched if op == "and" else ~matched)
        return Columns(lhs.labels, lhs.values, present)

    def vector_vector(
        self, op: str, lhs: Columns, rhs: Columns, mod: pp.BinModifier | None, return_bool: bool
    ) -> Columns:
        match = _Match.of(op, mod, return_bool, lhs, rhs)
        many, one = (rhs, lhs) if match.one_to_many else (lhs, rhs)
        by_key: dict[Identity, list[int]] = {}
        for row, key in enumerate(match.signer.keys(one.labels)):
            by_key.setdefault(key, []).append(row)
        keys = match.signer.keys(many.labels)
        if len(by_key) == len(one.labels):
            return self._unique_partners(match, many, one, keys, by_key)
        return self._shared_partners(match, many, one, keys, self._chosen(match, one, by_key))

    def _chosen(self, match: _Match, one: Columns, by_key: dict[Identity, list[int]]) -> dict[Identity, Ints]:
        """The one side's row per key and step: its only present row; two present rows fail the step."""
        chosen: dict[Identity, Ints] = {}
        for key, rows in by_key.items():
            clash = one.present[rows].sum(axis=0) > 1
            if clash.any():
                side = "left" if match.one_to_many else "right"
                self._fail(
                    clash,
                    f"found duplicate series for the match group {match.signer.shown(key)} on the {side} hand-side of "
                    "the operation; many-to-many matching not allowed: matching labels must be unique on one side",
                )
            pick = np.full(self.grid.n, -1, dtype=np.int64)
            for row in reversed(rows):
                pick = np.where(one.present[row], row, pick)
            chosen[key] = pick
        return chosen

    def _shared_partners(
        self, match: _Match, many: Columns, one: Columns, keys: list[Identity], chosen: dict[Identity, Ints]
    ) -> Columns:
        """Vector matching where a key has several series on the one side, taking turns: per step."""
        n = self.grid.n
        out_labels: list[Labels] = []
        rows_v: list[Floats] = []
        rows_p: list[Bools] = []
        out_keys: list[Identity] = []
        steps = np.arange(n)
        for row, (labels, key) in enumerate(zip(many.labels, keys, strict=True)):
            partner_pick = chosen.get(key)
            if partner_pick is None:
                continue
            present = many.present[row] & (partner_pick >= 0)
            partner_rows = np.maximum(partner_pick, 0)
            partner = one.values[partner_rows, steps]
            pair = (partner, many.values[row]) if match.one_to_many else (many.values[row], partner)
            value, present = match.apply(pair, present)
            # the result's labels depend on the partner only through the group labels it lends
            partners = np.unique(partner_rows[present]).tolist()
            for partner_row in partners if match.include else partners[:1]:
                out_labels.append(match.metric(labels, one.labels[partner_row]))
                rows_v.append(value)
                rows_p.append(present & (partner_rows == partner_row) if match.include else present)
                out_keys.append(key)
        if not rows_v:
            return Columns.empty(n)
        return self._matched(match, Columns(out_labels, np.vstack(rows_v), np.vstack(rows_p)), out_keys)

    def _unique_partners(
        self, match: _Match, many: Columns, one: Columns, keys: list[Identity], by_key: dict[Identity, list[int]]
    ) -> Columns:
        """Vector matching when every key has one series on the one side (the usual case): each series of the
        many side has one partner, found once, and the arithmetic is one operation over all of them."""
        partner_of = [by_key[key][0] if key in by_key else -1 for key in keys]
        rows = np.array([row for row, partner in enumerate(partner_of) if partner >= 0], dtype=np.int64)
        if not len(rows):
            return Columns.empty(self.grid.n)
        partners = np.array([partner_of[row] for row in rows.tolist()], dtype=np.int64)
        every = len(rows) == len(many.labels)  # every series has its partner: its rows as they are, not a copy
        mine, here = (many.values, many.present) if every else (many.values[rows], many.present[rows])
        theirs = one.values[partners]
        pair = (theirs, mine) if match.one_to_many else (mine, theirs)
        value, present = match.apply(pair, here & one.present[partners])
        labels = [
            match.metric(many.labels[row], one.labels[partner])
            for row, partner in zip(rows.tolist(), partners.tolist(), strict=True)
        ]
        return self._matched(match, Columns(labels, value, present), [keys[row] for row in rows.tolist()])

    def _matched(self, match: _Match, out: Columns, keys: list[Identity]) -> Columns:
        """The errors of a match: two series of the many side on one key at a step (one-to-one), or one label
        set twice. A one-to-one result's labels are its key's (``on``'s labels, or all but ``ignoring``'s and,
        unless a comparison keeps it, the name), so distinct keys are distinct label sets."""
        if match.one_to_one and len(set(keys)) == len(keys):
            return out
        if match.one_to_one:
            counts = _present_by_key(keys, out.present, self.grid.n, count=True)
            clash = np.asarray((counts.table > 1).any(axis=0), dtype=bool)
            if clash.any():
                self._fail(
                    clash, "multiple matches for labels: many-to-one matching must be explicit (group_left/group_right)"
                )
        return self._unique(out, "multiple matches for labels: grouping labels must ensure unique matches")

    def aggregate(self, node: pp.AggregateExpr) -> Columns:
        op = str(node.op)
        if op not in ("sum", "avg", "min", "max", "count", "group"):
            raise StepError(f"the local engine cannot evaluate {op}()")
        inner = self.columns(node.expr)
        mod = node.modifier
        without = mod is not None and mod.type == pp.AggModifierType.Without
        grouping = set(mod.labels) if mod is not None else set()
        # The grouping labels' values are the key (for ``without``: every other label's); a group's number is the
        # order of its first row, and its label set is built once.
        names = identities(inner.labels, grouping | {_NAME})[0] if without else tuple(sorted(grouping))
        groups: dict[Identity, int] = {}
        numbers = [groups.setdefault(key, len(groups)) for key in (tuple(map(row.get, names)) for row in inner.labels)]
        n = self.grid.n
        if not groups:
            return Columns.empty(n)
        ids = np.array(numbers, dtype=np.int64)
        value, present = _fold(op, ids, len(groups), inner.values, inner.present)
        keep = np.asarray(present.any(axis=1), dtype=bool)
        kept_labels = [
            {name: label for name, label in zip(names, key, strict=True) if label is not None}
            for key, held in zip(groups, keep.tolist(), strict=True)
            if held
        ]
        return Columns(kept_labels, value[keep], present[keep])

    # -- helpers ------------------------------------------------------------------

    def _unnamed(self, cols: Columns) -> Columns:
        """``cols`` without their metric names, checked for rows that now clash: only when the names differ (a
        vector's rows never clash where they are present, so rows of one name stay apart without it)."""
        return self._apart(
            cols.labels, Columns([_drop_name(labels) for labels in cols.labels], cols.values, cols.present)
        )

    def _apart(self, named: list[Labels], cols: Columns) -> Columns:
        """``cols``, the rows of ``named`` (distinct label sets) with their names maybe dropped, checked for rows
        that now clash: only when the names differ."""
        return cols if len({labels.get(_NAME) for labels in named}) <= 1 else self._unique(cols)

    def _unique(self, cols: Columns, message: str = "vector cannot contain metrics with the same labelset") -> Columns:
        """Rows with the same labels present at the same step fail the rule there."""
        seen: dict[Identity, list[int]] = {}
        for row, identity in enumerate(identities(cols.labels)[1]):
            seen.setdefault(identity, []).append(row)
        if len(seen) == len(cols.labels):
            return cols
        for rows in seen.values():
            if len(rows) > 1:
                clash = cols.present[rows].sum(axis=0) > 1
                if clash.any():
                    self._fail(clash, message)
        return cols


@dataclass
class _ByKey:
    """Per matching key, whether any of its series is present at each step (or how many are)."""

    ids: dict[Identity, int]
    table: npt.NDArray[np.int64] | Bools

    def rows(self, keys: list[Identity]) -> Bools:
        """The table's row of each key (none present for a key it lacks)."""
        index = np.array([self.ids.get(key, -1) for key in keys], dtype=np.int64)
        if not len(keys) or not self.ids:
            return np.zeros((len(keys), self.table.shape[1]), dtype=bool)
        picked: Bools = self.table[np.maximum(index, 0)].astype(bool, copy=False)
        picked[index < 0] = False
        return picked


@dataclass(frozen=True)
class _Flat:
    """Series concatenated: ``ts``/``vs`` hold series ``i``'s samples at ``first[i]:stop[i]``, ascending in time;
    ``keys`` orders them by series, then time, so one ``searchsorted`` finds every series' index at every step."""

    labels: list[Labels]
    ts: Ints
    vs: Floats
    first: Ints
    stop: Ints
    base: int
    span: int
    shared: tuple[Ints, list[Ints]] | None = None  # series sharing their timestamps: each one's group, groups' times

    @staticmethod
    def of(series: Sequence[RawLike], fresh: bool) -> _Flat:
        """``series`` concatenated (without their staleness markers when ``fresh``), the empty ones left out: one
        pass over all samples, not one per series (a per-node selector holds hundreds of thousands)."""
        if isinstance(series, RawBatch):  # a remote read's series, already one after another
            counts = np.diff(series.bounds)
        else:
            counts = np.array([len(one.timestamps) for one in series], dtype=np.int64)
        if not counts.sum():
            empty = np.zeros(0, dtype=np.int64)
            return _Flat([], empty, np.zeros(0), empty, empty, 0, 1)
        if isinstance(series, RawBatch):
            ts_all = series.timestamps.astype(np.int64, copy=False)
            vs_all = series.values.astype(np.float64, copy=False)
            labels_of = series.labels
        else:
            ts_all = np.concatenate([one.timestamps for one in series]).astype(np.int64, copy=False)
            vs_all = np.concatenate([one.values for one in series]).astype(np.float64, copy=False)
            labels_of = [one.labels for one in series]
        if fresh:
            live = ~is_stale(vs_all)
            if not live.all():
                owner = np.repeat(np.arange(len(series), dtype=np.int64), counts)
                ts_all, vs_all = ts_all[live], vs_all[live]
                counts = np.bincount(owner[live], minlength=len(series))
        held = np.flatnonzero(counts)
        sizes = counts[held]
        stop = np.cumsum(sizes)
        base = int(ts_all.min()) - 10 * 86_400_000  # room for the reads before the first sample
        span = int(ts_all.max()) - base + 20 * 86_400_000
        groups: dict[bytes, int] = {}
        first_list, stop_list = (stop - sizes).tolist(), stop.tolist()
        group_of = np.array(
            [groups.setdefault(ts_all[a:b].tobytes(), len(groups)) for a, b in zip(first_list, stop_list, strict=True)],
            dtype=np.int64,
        )
        shared = None
        if len(groups) * 4 <= len(held):  # a target's series are scraped together: searched once per target
            first_of = {group: index for index, group in reversed(list(enumerate(group_of.tolist())))}
            shared = (group_of, [ts_all[first_list[first_of[g]] : stop_list[first_of[g]]] for g in range(len(groups))])
        return _Flat(
            [labels_of[index] for index in held.tolist()],
            ts_all,
            vs_all,
            stop - sizes,
            stop,
            base,
            span,
            shared,
        )

    @cached_property
    def keys(self) -> Ints:
        """Each sample's series and time as one number (``span`` apart per series): built only for a search
        over series that do not share their timestamps (three passes over every sample)."""
        ids = np.repeat(np.arange(len(self.labels), dtype=np.int64), self.stop - self.first)
        keys: Ints = ids * self.span + (self.ts - self.base)
        return keys

    @cached_property
    def drops(self) -> Ints:
        """How many times the values went down, up to each sample: a window holds a counter reset where this
        differs between its first and last sample (series boundaries fall outside every window)."""
        drops = np.zeros(len(self.vs), dtype=np.int64)
        if len(self.vs) > 1:
            drops[1:] = np.cumsum(self.vs[1:] < self.vs[:-1])
        return drops

    def search(self, times: Ints, side: Literal["left", "right"], rows: slice | None = None) -> Ints:
        """For every series (rows, all or a block of them) and time (columns): the index in ``ts`` where ``times``
        would go."""
        rows = rows if rows is not None else slice(0, len(self.labels))
        if self.shared is not None:
            group_of, stamps = self.shared
            per_group = np.zeros((len(stamps), len(times)), dtype=np.int64)
            for group in np.unique(group_of[rows]).tolist():
                per_group[group] = np.searchsorted(stamps[group], times, side=side)
            shared: Ints = self.first[rows, None] + per_group[group_of[rows]]
            return shared
        wanted = (
            np.arange(rows.start, rows.stop, dtype=np.int64)[:, None] * self.span
            + (np.clip(times, self.base, self.base + self.span - 1) - self.base)[None, :]
        )
        found: Ints = np.searchsorted(self.keys, wanted, side=side)
        return found


@dataclass(frozen=True)
class _Match:
    """One vector/vector operator's matching: its key, which side is "many", and how the result is labelled."""

    op: str
    one_to_many: bool
    one_to_one: bool
    on: bool
    match_labels: list[str]
    include: list[str]
    return_bool: bool
    signer: _Signer

    @staticmethod
    def of(op: str, mod: pp.BinModifier | None, return_bool: bool, lhs: Columns, rhs: Columns) -> _Match:
        card = mod.card if mod is not None else pp.VectorMatchCardinality.OneToOne
        matching = mod.matching if mod is not None else None
        return _Match(
            op,
            card == pp.VectorMatchCardinality.OneToMany,
            card == pp.VectorMatchCardinality.OneToOne,
            matching is not None and matching.type == pp.LabelModifierType.Include,
            list(matching.labels) if matching is not None else [],
            list(mod.group_labels or []) if mod is not None else [],
            return_bool,
            _Signer.of(mod, lhs.labels, rhs.labels),
        )

    def apply(self, pair: tuple[Floats, Floats], present: Bools) -> tuple[Floats, Bools]:
        """The operator over the (left, right) values: the result, and where it is present (a comparison
        without ``bool`` filters)."""
        value, keep = _elementwise(self.op, *pair)
        if self.return_bool:
            return keep.astype(np.float64), present
        if self.op in _COMPARISON:  # the left side's values, a view: copied
            return np.array(value, dtype=np.float64), present & keep
        return value, present  # arithmetic: a new array already

    def metric(self, many: Labels, one: Labels) -> Labels:
        labels = _result_metric(many, one, self.op, self.one_to_one, self.on, self.match_labels, self.include)
        return _drop_name(labels) if self.return_bool else labels


def _kept(labels: list[Labels], keep: Bools) -> list[Labels]:
    return [one for one, kept in zip(labels, keep.tolist(), strict=True) if kept]


def _merged(source: Columns, values: Floats, present: Bools) -> tuple[Columns, Floats, Bools]:
    """Rows with the same labels as one series (a range reads a series by its labels: the two sides of an ``or``
    that take turns are one series over time); where two are present at once the first row's point is kept
    (that step already failed where they were made)."""
    rows: dict[Identity, list[int]] = {}
    for row, identity in enumerate(identities(source.labels)[1]):
        rows.setdefault(identity, []).append(row)
    if len(rows) == len(source.labels):
        return source, values, present
    keep = [group[0] for group in rows.values()]
    out_v, out_p = values[keep].copy(), present[keep].copy()
    for place, group in enumerate(rows.values()):
        for row in group[1:]:
            fill = present[row] & ~out_p[place]
            out_v[place] = np.where(fill, values[row], out_v[place])
            out_p[place] |= fill
    return source.rows(keep), out_v, out_p


def _present_by_key(keys: list[Identity], present: Bools, n: int, count: bool = False) -> _ByKey:
    ids: dict[Identity, int] = {}
    index = np.array([ids.setdefault(key, len(ids)) for key in keys], dtype=np.int64)
    if len(ids) == len(keys):  # every key once, in order: the table is the rows themselves
        return _ByKey(ids, present.astype(np.int64) if count else present)
    table = np.zeros((len(ids), n), dtype=np.int64)
    np.add.at(table, index, present.astype(np.int64))
    return _ByKey(ids, table if count else table > 0)


def _elementwise(op: str, left: npt.ArrayLike, right: npt.ArrayLike) -> tuple[Floats, Bools]:
    """Prometheus's vectorElemBinop: the arithmetic value, or for a comparison the left value and whether it holds."""
    a, b = np.asarray(left, dtype=np.float64), np.asarray(right, dtype=np.float64)
    with np.errstate(all="ignore"):
        if op == "+":
            return a + b, np.ones(np.broadcast(a, b).shape, dtype=bool)
        if op == "-":
            return a - b, np.ones(np.broadcast(a, b).shape, dtype=bool)
        if op == "*":
            return a * b, np.ones(np.broadcast(a, b).shape, dtype=bool)
        if op == "/":
            return a / b, np.ones(np.broadcast(a, b).shape, dtype=bool)
        if op in _COMPARISON:
            compare = {
                "==": np.equal,
                "!=": np.not_equal,
                ">": np.greater,
                "<": np.less,
                ">=": np.greater_equal,
                "<=": np.less_equal,
            }[op]
            return np.broadcast_to(a, np.broadcast(a, b).shape), compare(a, b)
    raise StepError(f"the local engine cannot evaluate the operator {op}")


def _fold(op: str, ids: Ints, groups: int, values: Floats, present: Bools) -> tuple[Floats, Bools]:
    """Each group's aggregation at every step, folding its rows in their order as Prometheus 2.42 does: the
    k-th rows of all groups at once, k from the first."""
    n = values.shape[1]
    if groups == len(ids):  # a group per row (``by`` keeping the series apart; ids are then the rows in order)
        if op in ("count", "group"):
            return np.where(present, 1.0, 0.0) if op == "count" else np.ones(values.shape), present.copy()
        return np.where(present, values, 0.0), present.copy()
    sizes = np.bincount(ids, minlength=groups)
    compiled = _compiled()
    if compiled is not None and op in ("sum", "avg", "count"):
        # The same folds, row by row in one pass (a count adds ones, in any order the same; a sum over large
        # groups is _fold_wide's running sum).
        kind = "running sum" if op == "sum" and int(sizes.max(initial=0)) > 64 else op
        rows = np.ascontiguousarray(ids, dtype=np.int64)
        cells, here = np.ascontiguousarray(values, dtype=np.float64), np.ascontiguousarray(present, dtype=bool)
        total, seen, counted = compiled.fold_rows(compiled.FOLD_OPS[kind], rows, groups, cells, here)
        return (counted if op == "count" else total), seen
    if op in ("count", "group", "max", "min") or (op == "sum" and len(sizes) and int(sizes.max()) > 64):
        return _fold_wide(op, ids, groups, values, present)
    order = np.argsort(ids, kind="stable")
    sorted_ids = ids[order]
    starts = np.searchsorted(sorted_ids, np.arange(groups))
    rank = np.arange(len(ids)) - starts[sorted_ids]
    acc = np.zeros((groups, n))
    seen = np.zeros((groups, n), dtype=bool)
    count = np.zeros((groups, n))
    with np.errstate(all="ignore"):
        for k in range(int(rank.max()) + 1 if len(rank) else 0):
            rows = order[rank == k]
            group = ids[rows]
            value, here = values[rows], present[rows]
            was, total, cnt = seen[group], acc[group], count[group]
            first, more = here & ~was, here & was
            cnt = cnt + here
            if op == "sum":
                total = np.where(first, value, np.where(more, total + value, total))
            elif op == "max":
                total = np.where(first | (more & ((total < value) | np.isnan(total))), value, total)
            elif op == "min":
                total = np.where(first | (more & ((total > value) | np.isnan(total))), value, total)
            elif op == "avg":  # the incremental mean, Inf kept as Prometheus 2.42 keeps it
                same_inf = np.isinf(value) & ((total > 0) == (value > 0))
                finite_in = ~np.isinf(value) & ~np.isnan(value)
                skip = more & np.isinf(total) & (same_inf | finite_in)
                step = total + (value / cnt - total / cnt)
                total = np.where(first, value, np.where(more & ~skip, step, total))
            acc[group], seen[group], count[group] = total, was | here, cnt
    if op == "count":
        acc = count.copy()
    elif op == "group":
        acc = np.ones((groups, n))
    return acc, seen


def _fold_wide(op: str, ids: Ints, groups: int, values: Floats, present: Bools) -> tuple[Floats, Bools]:
    """``_fold`` for the aggregations whose order does not matter (count; max and min, which keep the largest
    or smallest value that is not NaN, NaN only when all are) and for ``sum`` over large groups, added in row
    order by a running sum (``cumsum`` adds one row after another, as Prometheus does; an absent row adds 0)."""
    order = np.argsort(ids, kind="stable")
    sorted_ids = ids[order]
    starts = np.searchsorted(sorted_ids, np.arange(groups))
    here = present[order]
    seen = np.logical_or.reduceat(here, starts, axis=0) if len(order) else np.zeros((groups, values.shape[1]), bool)
    with np.errstate(all="ignore"):
        if op == "count":
            acc = np.add.reduceat(here.astype(np.float64), starts, axis=0)
        elif op == "group":
            acc = np.ones((groups, values.shape[1]))
        elif op in ("max", "min"):
            masked = np.where(here, values[order], np.nan)
            acc = (np.fmax if op == "max" else np.fmin).reduceat(masked, starts, axis=0)
        else:
            masked = np.where(here, values[order], 0.0)
            stops = np.append(starts[1:], len(order))
            acc = np.vstack(
                [np.cumsum(masked[a:b], axis=0)[-1] for a, b in zip(starts.tolist(), stops.tolist(), strict=True)]
            )
    return acc, np.asarray(seen, dtype=bool)


_kernels: list[ModuleType | None] = []
_kernels_lock = threading.Lock()


def _compiled() -> ModuleType | None:
    """The compiled kernels (``compiler.live.column_kernels``), or None without numba (imported once)."""
    with _kernels_lock:
        if not _kernels:
            try:
                _kernels.append(importlib.import_module("compiler.live.column_kernels"))
            except ImportError:
                _kernels.append(None)
        return _kernels[0]


def warm() -> None:
    """Compile the range kernels now, on the types real calls have (before forking workers, so that each does
    not compile them again); nothing without numba."""
    compiled = _compiled()
    if compiled is not None:
        none, grid = np.zeros(0, np.int64), np.zeros((0, 0))
        compiled.extrapolated_rates(none, np.zeros(0), none, none, none, none, none, 60_000, True, grid, grid > 0)
        values = np.zeros(0)
        stale = np.uint64(STALE_NAN_BITS)
        compiled.instants(none, values, values.view(np.uint64), none, none, none, LOOKBACK_MS, stale, grid, grid > 0)


def _extrapolated_rate(
    ts: Ints,
    vs: Floats,
    drops: Ints,
    low: Ints,
    high: Ints,
    count: Ints,
    starts: Ints,
    ends: Ints,
    width_ms: int,
    is_rate: bool,
) -> tuple[Floats, Bools]:
    """``extrapolatedRate`` of a counter at every step, its float operations in Prometheus 2.42's order.
    ``drops``: how many times the values went down up to each sample (``_Flat.drops``), to find the resets."""
    ok = count >= 2
    lo, hi = np.where(ok, low, 0), np.where(ok, high, 0)
    first, last = vs[lo], vs[hi]
    with np.errstate(all="ignore"):
        result = last - first
        reset = ok & (drops[hi] != drops[lo])
        for step in np.nonzero(reset)[0].tolist():  # a counter reset inside the window: added up as Go does
            total = vs[hi[step]] - vs[lo[step]]
            previous = vs[lo[step]]
            for value in vs[lo[step] + 1 : hi[step] + 1].tolist():
                if value < previous:
                    total += previous
                previous = value
            result[step] = total
        first_t, last_t = ts[lo], ts[hi]
        to_start = (first_t - starts).astype(np.float64) / 1000
        to_end = (ends - last_t).astype(np.float64) / 1000
        sampled = (last_t - first_t).astype(np.float64) / 1000
        average = sampled / (count - 1).astype(np.float64)
        to_zero = sampled * (first / result)
        use_zero = (result > 0) & (first >= 0) & (to_zero < to_start)
        to_start = np.where(use_zero, to_zero, to_start)
        threshold = average * 1.1
        interval = sampled + np.where(to_start < threshold, to_start, average / 2)
        interval = interval + np.where(to_end < threshold, to_end, average / 2)
        factor = interval / sampled
        if is_rate:
            factor = factor / (width_ms / 1000)
        result = result * factor
    return result, ok


def _over_time(name: str, vs: Floats, low: Ints, high: Ints, count: Ints) -> tuple[Floats, Bools]:
    """``<name>_over_time`` of a raw range at every step, folding the window in order as Prometheus 2.42 does."""
    ok = count >= 1
    if name == "count_over_time":
        return count.astype(np.float64), ok
    if name == "last_over_time":
        last: Floats = vs[np.where(ok, high, 0)]
        return last, ok
    widest = int(count.max()) if len(count) else 0
    acc = np.zeros(len(count))
    comp = np.zeros(len(count))
    with np.errstate(all="ignore"):
        for k in range(widest):
            here = k < count
            value = vs[np.where(here, low + k, 0)]
            if name == "max_over_time":
                acc = np.where(here & ((k == 0) | (value > acc) | np.isnan(acc)), value, acc)
            elif name == "min_over_time":
                acc = np.where(here & ((k == 0) | (value < acc) | np.isnan(acc)), value, acc)
            elif name == "sum_over_time":
                acc = np.where(here, np.where(k == 0, value, acc + value), acc)
            else:  # avg_over_time: the Kahan-Neumaier incremental mean
                acc, comp = _mean_step(acc, comp, value, np.full(len(count), float(k + 1)), here)
        if name == "avg_over_time":
            acc = np.where(np.isinf(acc), acc, acc + comp)
    return acc, ok


def _mean_step(acc: Floats, comp: Floats, value: Floats, count: Floats, here: Bools) -> tuple[Floats, Floats]:
    """One value into ``avg_over_time``'s running mean where ``here`` (``count`` values so far, this one
    included): ``kahanSumInc`` of ``value/count - mean/count``, an infinite mean kept as Prometheus 2.42 keeps it."""
    finite_in = ~np.isinf(value) & ~np.isnan(value)
    skip = np.isinf(acc) & ((np.isinf(value) & ((acc > 0) == (value > 0))) | finite_in)
    inc = value / count - acc / count
    total = acc + inc
    bigger = np.abs(acc) >= np.abs(inc)
    new_comp = comp + np.where(bigger, (acc - total) + inc, (inc - total) + acc)
    update = here & ~skip
    return np.where(update, total, acc), np.where(update, new_comp, comp)


def _bucket_quantiles(q: Floats, bounds: Floats, counts: Floats, here: Bools) -> tuple[Floats, Bools]:
    """``bucketQuantile`` of groups sharing their bucket bounds (sorted): ``counts`` and ``here`` are (group,
    bucket, step); a value at every step a group has any bucket. The usual steps (every bucket there, distinct
    bounds ending at +Inf, 0 <= q <= 1) are computed for all groups at once, the others as Prometheus steps."""
    ok: Bools = np.asarray(here.any(axis=1), dtype=bool)
    out: Floats = np.full(ok.shape, math.nan)
    usual = np.zeros(ok.shape, dtype=bool)
    last = len(bounds) - 1
    if len(bounds) >= 2 and len(np.unique(bounds)) == len(bounds) and math.isinf(bounds[-1]) and bounds[-1] > 0:
        usual = here.all(axis=1) & ~np.isnan(counts).any(axis=1) & ((q >= 0) & (q <= 1))[None, :]
        with np.errstate(all="ignore"):
            c = np.maximum.accumulate(counts, axis=1)
            observations = c[:, -1, :]
            rank = q[None, :] * observations
            below = c[:, :-1, :] >= rank[:, None, :]
            b = np.where(below.any(axis=1), below.argmax(axis=1), last)
            prev = np.maximum(b - 1, 0)
            at_b = np.take_along_axis(c, np.minimum(b, last)[:, None, :], axis=1)[:, 0, :]
            at_prev = np.take_along_axis(c, prev[:, None, :], axis=1)[:, 0, :]
            start = np.where(b > 0, bounds[prev], 0.0)
            end = bounds[np.minimum(b, last)]
            count = np.where(b > 0, at_b - at_prev, at_b)
            rank = np.where(b > 0, rank - at_prev, rank)
            value = start + (end - start) * (rank / count)
        value = np.where(b == last, bounds[-2], value)
        value = np.where((b == 0) & (bounds[0] <= 0), bounds[0], value)
        value = np.where(observations == 0, math.nan, value)
        out[usual] = value[usual]
    for group, step in zip(*np.nonzero(ok & ~usual), strict=True):  # a partial or unusual group: Prometheus's steps
        held = here[group, :, step].tolist()
        bucket_counts = counts[group, :, step].tolist()
        pairs = [(float(bounds[i]), bucket_counts[i]) for i in range(len(bounds)) if held[i]]
        out[group, step] = _bucket_quantile_at(float(q[step]), pairs)
    return out, ok


def _bucket_quantile_at(q: float, pairs: list[tuple[float, float]]) -> float:
    if math.isnan(q):
        return math.nan
    if q < 0:
        return -math.inf
    if q > 1:
        return math.inf
    pairs = sorted(pairs, key=lambda pair: pair[0])
    if not math.isinf(pairs[-1][0]) or pairs[-1][0] < 0:
        return math.nan
    merged: list[list[float]] = []
    for bound, count in pairs:
        if merged and merged[-1][0] == bound:
            merged[-1][1] += count
        else:
            merged.append([bound, count])
    top = merged[0][1]
    for bucket in merged[1:]:
        if bucket[1] > top:
            top = bucket[1]
        elif bucket[1] < top:
            bucket[1] = top
    if len(merged) < 2:
        return math.nan
    observations = merged[-1][1]
    if observations == 0:
        return math.nan
    rank = q * observations
    b = next((i for i in range(len(merged) - 1) if merged[i][1] >= rank), len(merged) - 1)
    if b == len(merged) - 1:
        return merged[-2][0]
    if b == 0 and merged[0][0] <= 0:
        return merged[0][0]
    start, end, count = 0.0, merged[b][0], merged[b][1]
    if b > 0:
        start = merged[b - 1][0]
        count -= merged[b - 1][1]
        rank -= merged[b - 1][1]
    return start + (end - start) * (rank / count)
