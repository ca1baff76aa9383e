"""The spec's value per slice that a backtest reads when an alert fires (``backtest.column_signal``): the same
keys, order and values as the step evaluator's store gives (``_signal`` over ``_store_of``), built a slice at a
time from the recorded columns."""

from __future__ import annotations

import numpy as np
import pytest

from compiler.live.backtest import ColumnSignal, _signal, _signal_names, _store_of, column_signal
from compiler.live.columns import Columns
from compiler.live.steps import Grid
from compiler.model import SLO, series
from compiler.pipeline import compile_specs
from tests import live_data

GRID = Grid(start_ms=0, step_ms=60_000, n=12)


@pytest.fixture(scope="module")
def slos(tmp_path_factory: pytest.TempPathFactory) -> dict[str, SLO]:
    chosen = {name: live_data.PREFLIGHT_SPECS[name] for name in ("dns-servfail", "scheduler-errors", "evictions")}
    model, diagnostics = compile_specs(live_data.write_tree(tmp_path_factory.mktemp("specs"), chosen))
    assert model is not None and not diagnostics, diagnostics.render()
    return {slo.name: slo for slo in model.slos}


def columns(name: str, rows: list[dict[str, str]], seed: int) -> Columns:
    """Rows of ``name`` with values in [0, 1), absent at random, a zero here and there."""
    random = np.random.default_rng(seed)
    values = random.random((len(rows), GRID.n))
    values[random.random(values.shape) < 0.1] = 0.0
    labels = [{"__name__": name, **row} for row in rows]
    return Columns(labels, values, random.random(values.shape) < 0.8)


Items = list[tuple[tuple[tuple[str, str], ...], list[float | None]]]


def both(slo: SLO, recorded: dict[str, Columns]) -> tuple[Items, Items]:
    made = column_signal(slo, GRID, recorded)
    reference = _signal(slo, _store_of(GRID, recorded, _signal_names(slo)))
    return list(made.items()), list(reference.items())


def test_a_gauge_slice_is_its_last_series(slos: dict[str, SLO]) -> None:
    slo = slos["evictions"]  # sliced by cluster: two series of cluster a (another label apart), the last wins
    rows = [{"cluster": "a", "pod": "1"}, {"cluster": "b"}, {"cluster": "a", "pod": "2"}, {}]
    made, reference = both(slo, {series.VALUE: columns(series.VALUE, rows, 1)})
    assert made == reference
    assert [key for key, _ in made] == [(("cluster", "a"),), (("cluster", "b"),), (("cluster", ""),)]
    assert isinstance(column_signal(slo, GRID, {series.VALUE: columns(series.VALUE, rows, 1)}), ColumnSignal)


@pytest.mark.parametrize("name", ["dns-servfail", "scheduler-errors"])
def test_a_ratio_is_bad_over_total_and_a_slice_without_bad_series_is_its_total(slos: dict[str, SLO], name: str) -> None:
    slo = slos[name]
    total = [{"cluster": c, "profile": p} for c in ("a", "b", "c") for p in ("x", "y")]
    bad = [row for row in total if row["cluster"] != "b"]  # cluster b has no bad series at all
    recorded = {series.TOTAL_5M: columns(series.TOTAL_5M, total, 2), series.BAD_5M: columns(series.BAD_5M, bad, 3)}
    made, reference = both(slo, recorded)
    assert made == reference
    assert len(made) == (6 if "profile" in slo.slice.by else 3)
    signal = column_signal(slo, GRID, recorded)
    assert signal.get((("cluster", "z"),) * len(slo.slice.by)) is None
    assert dict(both(slo, {})[0]) == {}  # nothing recorded: no slice


def test_rows_that_share_labels_are_merged_as_the_store_merges_them(slos: dict[str, SLO]) -> None:
    slo = slos["evictions"]  # an `or` whose sides take turns records one label set in two rows
    held = columns(series.VALUE, [{"cluster": "a"}, {"cluster": "b"}, {"cluster": "a"}], 4)
    made, reference = both(slo, {series.VALUE: held})
    assert made == reference
    assert not isinstance(column_signal(slo, GRID, {series.VALUE: held}), ColumnSignal)


def test_a_slice_is_made_once_and_only_when_read(slos: dict[str, SLO]) -> None:
    slo = slos["evictions"]
    signal = ColumnSignal(slo, {series.VALUE: columns(series.VALUE, [{"cluster": "a"}, {"cluster": "b"}], 5)})
    assert signal._made == {}
    first = signal[(("cluster", "b"),)]
    assert signal[(("cluster", "b"),)] is first
    assert list(signal._made) == [(("cluster", "b"),)]
