"""The local engine's own rules, on series built here (against Prometheus: tests/live/test_live_columns.py)."""

from __future__ import annotations

import math
from dataclasses import dataclass

import numpy as np
import pytest

from compiler.live.columns import STALE_NAN_BITS, ColumnEvaluator, Columns
from compiler.live.steps import Grid, StepError
from compiler.promql import Matcher

MINUTE = 60_000
STALE = np.array([STALE_NAN_BITS], dtype=np.uint64).view(np.float64)[0]


@dataclass(frozen=True)
class Raw:
    labels: dict[str, str]
    timestamps: np.ndarray
    values: np.ndarray


def source(*series: Raw) -> object:
    """A fetch over fixed series, filtered by name, that counts its calls."""
    calls: list[tuple[str, int, int]] = []

    def fetch(matchers: tuple[Matcher, ...], start_ms: int, end_ms: int) -> list[Raw]:
        name = next(m.value for m in matchers if m.name == "__name__")
        calls.append((name, start_ms, end_ms))
        return [s for s in series if s.labels["__name__"] == name]

    fetch.calls = calls  # type: ignore[attr-defined]
    return fetch


def raw(name: str, values: list[float], **labels: str) -> Raw:
    return Raw({"__name__": name, **labels}, np.arange(len(values), dtype=np.int64) * MINUTE, np.array(values))


def run(expr: str, *series: Raw, steps: int = 12, start: int = 10) -> tuple[Columns, ColumnEvaluator]:
    evaluator = ColumnEvaluator(Grid(start * MINUTE, MINUTE, steps), source(*series))  # type: ignore[arg-type]
    evaluator.plan([expr])
    return evaluator.run(expr), evaluator


def at(result: Columns, step: int) -> dict[frozenset[tuple[str, str]], float]:
    return {frozenset(labels.items()): value for labels, value in result.vectors()[step]}


def test_rate_of_a_steady_counter_is_its_slope_and_a_reset_is_added_back() -> None:
    steady, _ = run("rate(c[5m])", raw("c", [60.0 * m for m in range(30)]))
    assert [value for _, value in steady.vectors()[0]] == [1.0]
    resets = [60.0 * m for m in range(15)] + [60.0 * m for m in range(15)]  # back to 0 at minute 15
    reset, _ = run("increase(c[5m])", raw("c", resets), start=17)
    (value,) = [value for _, value in reset.vectors()[0]]
    assert value == 240.0  # 720 to 840, then 0 to 120: the drop is a reset to zero, not a negative increase


def test_a_staleness_marker_ends_an_instant_read_and_a_range_skips_it() -> None:
    values = [1.0] * 12 + [STALE] + [2.0] * 17
    instant, _ = run("g", raw("g", values), start=11, steps=3)
    assert [len(vector) for vector in instant.vectors()] == [1, 0, 1]  # minute 12 is the marker
    window, _ = run("max_over_time(g[5m])", raw("g", values), start=12, steps=1)
    assert [value for _, value in window.vectors()[0]] == [1.0]


def test_a_gap_longer_than_the_lookback_leaves_no_value() -> None:
    values = [1.0] * 10 + [math.nan] * 0
    series = Raw({"__name__": "g"}, np.array([0, MINUTE * 9], dtype=np.int64), np.array([1.0, 2.0]))
    found, _ = run("g", series, start=13, steps=3)
    assert [len(vector) for vector in found.vectors()] == [1, 1, 0]  # 14m is 5m after 9m; 15m is past it
    assert values


def test_each_raw_selector_is_fetched_once_widely_enough() -> None:
    fetch = source(raw("c", [60.0 * m for m in range(40)]))
    evaluator = ColumnEvaluator(Grid(20 * MINUTE, MINUTE, 5), fetch)  # type: ignore[arg-type]
    exprs = ["rate(c[5m])", "c", "max_over_time(c[10m])"]
    evaluator.plan(exprs)
    for expr in exprs:
        evaluator.run(expr)
    assert fetch.calls == [("c", 10 * MINUTE, 24 * MINUTE)]  # type: ignore[attr-defined]


def test_avg_folds_in_order_and_keeps_an_infinite_mean() -> None:
    found, _ = run(
        "avg(g)",
        raw("g", [math.inf] * 20, node="a"),
        raw("g", [1.0] * 20, node="b"),
        raw("g", [2.0] * 20, node="c"),
        steps=1,
    )
    assert [value for _, value in found.vectors()[0]] == [math.inf]
    mean, _ = run("avg(g)", raw("g", [0.1] * 20, node="a"), raw("g", [0.2] * 20, node="b"), steps=1)
    expected = 0.1 + (0.2 / 2 - 0.1 / 2)  # Prometheus 2.42's incremental mean, not (0.1 + 0.2) / 2
    assert [value for _, value in mean.vectors()[0]] == [expected]


def test_a_many_to_many_match_fails_only_the_steps_where_it_happens() -> None:
    left = raw("g", [1.0] * 30, node="a")
    info = raw("info", [1.0] * 30, node="a", pool="p1")
    second = Raw({"__name__": "info", "node": "a", "pool": "p2"}, np.arange(14, 16) * MINUTE, np.array([1.0, 1.0]))
    found, evaluator = run("g * on (node) info", left, info, second, start=12, steps=12)
    assert evaluator.first_error() is not None and "many-to-many" in evaluator.first_error()[1]  # type: ignore[index]
    failed = [index for index in range(12) if evaluator.errors[index]]
    assert failed == list(range(2, 9))  # minutes 14 to 20: the second info series within its 5m lookback
    assert all(len(vector) == 1 for index, vector in enumerate(found.vectors()) if index not in failed)


def test_group_left_takes_the_one_side_labels() -> None:
    found, _ = run(
        "g * on (node) group_left (pool) info",
        raw("g", [2.0] * 20, node="a", disk="x"),
        raw("g", [3.0] * 20, node="a", disk="y"),
        raw("info", [1.0] * 20, node="a", pool="p1"),
        steps=1,
    )
    assert at(found, 0) == {
        frozenset({"node": "a", "disk": "x", "pool": "p1"}.items()): 2.0,
        frozenset({"node": "a", "disk": "y", "pool": "p1"}.items()): 3.0,
    }


def test_the_sides_of_an_or_that_take_turns_are_one_series_in_a_subquery() -> None:
    """``(x or on () 0 * y)[15m:1m]``: the right side stands in while the left is absent; a range over it reads
    one series, not two with the same labels (which would fail the rule)."""
    left = Raw({"__name__": "x"}, np.arange(0, 15) * MINUTE, np.full(15, 5.0))
    right = raw("y", [7.0] * 40)
    found, evaluator = run("max_over_time((sum(x) or on () 0 * sum(y))[15m:1m])", left, right, start=10, steps=20)
    assert evaluator.first_error() is None
    assert [[value for _, value in vector] for vector in found.vectors()[15:]] == [[5.0]] * 5  # the last 15m read


def test_histogram_quantile_interpolates_and_a_missing_bucket_is_skipped() -> None:
    buckets = [("0.1", 10.0), ("0.5", 50.0), ("1", 90.0), ("+Inf", 100.0)]
    series = [raw("h_bucket", [count] * 20, le=le) for le, count in buckets]
    found, _ = run("histogram_quantile(0.9, h_bucket)", *series, steps=1)
    assert [value for _, value in found.vectors()[0]] == [1.0]
    found, _ = run("histogram_quantile(0.5, h_bucket)", *series, steps=1)
    assert [value for _, value in found.vectors()[0]] == [0.5]
    without = [s for s in series if s.labels["le"] != "0.5"]
    found, _ = run("histogram_quantile(0.5, h_bucket)", *without, steps=1)
    assert [value for _, value in found.vectors()[0]] == [0.1 + (1 - 0.1) * (40 / 80)]


def test_a_shape_it_does_not_take_is_a_step_error_naming_it() -> None:
    with pytest.raises(StepError, match="topk"):
        run("topk(1, g)", raw("g", [1.0] * 20))


def test_series_scraped_together_are_searched_once_with_the_same_answer() -> None:
    """A target's series share their timestamps (searched once per target); the answer is the one-by-one one."""
    from dataclasses import replace

    from compiler.live.columns import _Flat

    phases = [0, 7_000, 31_000]  # three targets scraped at their own offsets, six series each, one with a gap
    series = []
    for target, phase in enumerate(phases):
        for index in range(6):
            stamps = np.arange(40, dtype=np.int64) * MINUTE + phase
            if target == 2 and index == 5:
                stamps = np.delete(stamps, range(10, 20))
            series.append(Raw({"__name__": "b", "t": str(target), "i": str(index)}, stamps, np.ones(len(stamps))))
    flat = _Flat.of(series, fresh=True)
    assert flat.shared is not None and len(flat.shared[1]) == 4
    times = np.arange(-5, 50, dtype=np.int64) * 30_000
    for side in ("left", "right"):
        assert (flat.search(times, side) == replace(flat, shared=None).search(times, side)).all()


@pytest.mark.parametrize("expr", ["rate(c[5m])", "max_over_time(c[3m])", "c"])
def test_a_wide_read_in_blocks_of_series_gives_the_whole(expr: str, monkeypatch: pytest.MonkeyPatch) -> None:
    series = [raw("c", [float(m * (i + 1) % 17) for m in range(40)], i=str(i)) for i in range(30)]
    whole, _ = run(expr, *series, start=10, steps=25)
    monkeypatch.setattr("compiler.live.columns.BLOCK_CELLS", 60)  # 2 series a block
    blocks, _ = run(expr, *series, start=10, steps=25)
    assert blocks.labels == whole.labels
    assert (blocks.present == whole.present).all() and (
        blocks.values[blocks.present] == whole.values[whole.present]
    ).all()


@pytest.mark.parametrize("op", ["sum", "max", "min", "count"])
def test_a_large_group_folds_as_prometheus_adds_one_series_after_another(op: str) -> None:
    """Over 64 series a group is folded by a running sum (``sum``) or a reduction (order-free ``max``, ``min``,
    ``count``): the same values as adding the series one after another, as Prometheus 2.42 does."""
    values = [0.1 * (i % 7) + 1 / (i + 3) if i % 11 or op == "sum" else math.nan for i in range(100)]
    series = [raw("g", [v] * 20, node=f"n{i:03}") for i, v in enumerate(values)]
    found, _ = run(f"{op} by () (g)", *series, steps=1)
    present = [v for v in values]
    total = 0.0
    for index, value in enumerate(present):
        total = value if index == 0 else total + value
    finite = [v for v in present if not math.isnan(v)]
    expected = {"sum": total, "max": max(finite), "min": min(finite), "count": float(len(present))}[op]
    (got,) = [value for _, value in found.vectors()[0]]
    assert got == expected or (math.isnan(got) and math.isnan(expected))
    if op == "sum":
        assert float(np.sum(values)) != expected  # numpy's pairwise sum rounds differently: the order is tested
