"""The compiled ``rate()``/``increase()`` (``compiler.live.column_kernels``) gives the numpy path's values bit for
bit, and the same absent cells, on counters with resets, gaps, jittered scrapes, zeros, NaN and infinities, for
series that share their timestamps and series that do not, windows of none to many samples."""

from __future__ import annotations

import random

import numpy as np
import pytest

from compiler.live import columns
from compiler.live.columns import STALE_NAN_BITS, ColumnEvaluator, Columns
from compiler.live.steps import Grid
from tests.unit.live.test_columns import MINUTE, Raw, source

pytestmark = pytest.mark.skipif(columns._compiled() is None, reason="numba is not installed")


def counters(seed: int, shared: bool) -> list[Raw]:
    rng = random.Random(seed)
    series = []
    common = np.cumsum([rng.choice([15_000, 30_000, 30_000, 31_000, 95_000]) for _ in range(400)])
    for index in range(12):
        stamps = common if shared else np.cumsum([rng.choice([7_000, 15_000, 60_000, 400_000]) for _ in range(400)])
        value, values = rng.choice([0.0, 5.0, 1e15]), []
        for _ in stamps:
            roll = rng.random()
            if roll < 0.03:
                value = rng.choice([0.0, value / 3])  # a reset
            elif roll < 0.035:
                value = rng.choice([float("nan"), float("inf")])
            elif roll > 0.5:
                value += rng.choice([0.0, 1.0, 0.1, 1e-9, 250.0])
            values.append(value)
            value = value if np.isfinite(value) else 1.0
        series.append(Raw({"__name__": "c", "i": str(index)}, stamps.astype(np.int64), np.array(values)))
    return series


def evaluated(expr: str, series: list[Raw], grid: Grid) -> Columns:
    evaluator = ColumnEvaluator(grid, source(*series))  # type: ignore[arg-type]
    evaluator.plan([expr])
    return evaluator.run(expr)


@pytest.mark.parametrize("shared", [True, False])
@pytest.mark.parametrize("expr", ["rate(c[5m])", "increase(c[90s])", "rate(c[30m] offset 7m)", "increase(c[1m])"])
def test_the_compiled_rates_equal_the_numpy_path(expr: str, shared: bool, monkeypatch: pytest.MonkeyPatch) -> None:
    series = counters(len(expr) + shared, shared)
    grid = Grid(-10 * MINUTE, 20_000, 900)  # from before the first sample to past the last
    compiled = evaluated(expr, series, grid)
    monkeypatch.setattr(columns, "_compiled", lambda: None)
    plain = evaluated(expr, series, grid)
    assert compiled.labels == plain.labels and compiled.present.any()
    assert np.array_equal(compiled.present, plain.present)
    bits = compiled.values[compiled.present].view(np.uint64), plain.values[plain.present].view(np.uint64)
    assert bits[0].tolist() == bits[1].tolist()


def gauges(seed: int, shared: bool) -> list[Raw]:
    """Gauges with staleness markers, gaps longer than the lookback, NaN and infinities."""
    rng = random.Random(seed)
    stale = np.array([STALE_NAN_BITS], np.uint64).view(np.float64)[0]
    series = []
    common = np.cumsum([rng.choice([15_000, 30_000, 400_000]) for _ in range(300)])
    for index in range(9):
        stamps = common if shared else np.cumsum([rng.choice([10_000, 60_000, 301_000, 900_000]) for _ in range(300)])
        values = [rng.choice([stale, float("nan"), float("inf"), -0.0, 1.5, float(index)]) for _ in stamps]
        series.append(Raw({"__name__": "c", "i": str(index)}, stamps.astype(np.int64), np.array(values)))
    return series


@pytest.mark.parametrize("shared", [True, False])
@pytest.mark.parametrize("expr", ["c", "c offset 3m", "c offset 50s"])
def test_the_compiled_instant_selector_equals_the_numpy_path(
    expr: str, shared: bool, monkeypatch: pytest.MonkeyPatch
) -> None:
    series = gauges(len(expr) + shared, shared)
    grid = Grid(-10 * MINUTE, 15_000, 1_500)
    compiled = evaluated(expr, series, grid)
    monkeypatch.setattr(columns, "_compiled", lambda: None)
    plain = evaluated(expr, series, grid)
    assert compiled.labels == plain.labels and compiled.present.any() and not compiled.present.all()
    assert np.array_equal(compiled.present, plain.present)
    assert compiled.values.view(np.uint64).tolist() == plain.values.view(np.uint64).tolist()  # absent cells too


@pytest.mark.parametrize(("op", "rows"), [("sum", 60), ("sum", 400), ("avg", 60), ("count", 60)])
@pytest.mark.parametrize("seed", range(4))
def test_the_compiled_fold_equals_the_numpy_path(
    op: str, rows: int, seed: int, monkeypatch: pytest.MonkeyPatch
) -> None:
    """``sum`` over small and large groups (400 rows in 7 groups: the running sum), ``avg`` and ``count``: each
    group's rows folded in their order, the same float operations on the same cells (a running mean that keeps an
    Inf, NaN, -0.0, values far apart in size). Bit for bit but a NaN's sign: NaN + NaN keeps one operand's, and
    numpy's vector loop may take them in either order."""
    rng = np.random.default_rng(seed)
    steps, groups = 50, 7
    ids = rng.integers(0, groups, rows)
    ids[:groups] = np.arange(groups)  # every group has a row
    values = rng.choice([0.0, -0.0, 1.0, 0.1, 1e-9, 1e15, -3.5, np.inf, -np.inf, np.nan], size=(rows, steps))
    values = np.where(rng.random((rows, steps)) < 0.6, rng.random((rows, steps)) * 10.0 - 2.0, values)
    present = rng.random((rows, steps)) < 0.7
    values[ids == 0, 0], present[ids == 0, 0] = -0.0, True  # a total of -0.0: its sign is the fold's order
    compiled = columns._fold(op, ids, groups, values, present)
    monkeypatch.setattr(columns, "_compiled", lambda: None)
    plain = columns._fold(op, ids, groups, values, present)
    assert np.array_equal(compiled[1], plain[1]) and plain[1].any()
    found, expected = compiled[0][plain[1]], plain[0][plain[1]]
    assert np.array_equal(np.isnan(found), np.isnan(expected)) and (op == "count" or np.isnan(expected).any())
    numbers = ~np.isnan(expected)
    assert found[numbers].view(np.uint64).tolist() == expected[numbers].view(np.uint64).tolist()
