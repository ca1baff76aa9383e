"""A remote read's series kept as one pair of arrays (``RawBatch``): indexing, reordering and joining the pieces
of a read split in time give what the per-series lists gave, sample for sample."""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np
import pytest

from compiler.live.remote_read import RawBatch, RawSeries, _merged, _merged_by_labels, sample_count


def series(labels: dict[str, str], stamps: list[int]) -> RawSeries:
    return RawSeries(labels, np.array(stamps, np.int64), np.array([float(s) / 10 for s in stamps]))


def flat(items: Sequence[RawSeries]) -> list[tuple[dict[str, str], list[int], list[float]]]:
    return [(one.labels, one.timestamps.tolist(), one.values.tolist()) for one in items]


THREE = [series({"n": "b"}, [1, 2, 3]), series({"n": "a"}, [4]), series({"n": "c"}, [5, 6])]


def test_a_batch_indexes_as_its_series_and_leaves_the_empty_ones_out() -> None:
    batch = RawBatch.joined([THREE[0], series({"n": "x"}, []), *THREE[1:]])
    assert len(batch) == 3 and batch.samples == sample_count(batch) == sample_count(THREE) == 6
    assert flat(batch) == flat(THREE)
    assert flat([batch[-1], batch[-3]]) == flat([THREE[2], THREE[0]])
    assert flat(batch[1:]) == flat(THREE[1:])
    for wrong in (3, -4):
        with pytest.raises(IndexError):
            batch[wrong]
    assert RawBatch.joined(batch) is batch
    empty = RawBatch.joined([])
    assert (len(empty), empty.samples, empty.bounds.tolist()) == (0, 0, [0])


def test_taking_reorders_the_series_and_keeps_each_ones_samples() -> None:
    batch = RawBatch.joined(THREE)
    assert batch.take([0, 1, 2]) is batch
    moved = batch.take([1, 0, 2])
    assert flat(moved) == flat([THREE[1], THREE[0], THREE[2]])
    assert moved.bounds.tolist() == [0, 1, 4, 6]


def test_the_pieces_of_a_split_read_join_per_series_in_time_order_sorted_by_labels() -> None:
    early = RawBatch.joined([series({"n": "b"}, [1, 2]), series({"n": "a"}, [3])])
    late = RawBatch.joined([series({"n": "c"}, [9]), series({"n": "b"}, [7, 8])])
    joined = _merged([early, late])
    assert flat(joined) == flat([series({"n": "a"}, [3]), series({"n": "b"}, [1, 2, 7, 8]), series({"n": "c"}, [9])])
    assert joined.bounds.tolist() == [0, 1, 5, 6]


def test_pieces_of_the_same_series_join_as_the_general_path_joins_them() -> None:
    """Consecutive segments of one selector hold the same series: joined without a step per series, the batch is
    the one the label-by-label join gives, sample for sample, with the sort keys."""
    rng = np.random.default_rng(7)
    names = [{"n": f"{index:03}"} for index in range(40)]
    pieces = []
    for piece in range(3):
        found = [
            series(labels, sorted(rng.choice(range(piece * 100, piece * 100 + 100), 1 + i % 5, replace=False)))
            for i, labels in enumerate(names)
        ]
        pieces.append(RawBatch.joined(found).sorted())
    fast, general = _merged(pieces), _merged_by_labels(pieces)
    assert flat(fast) == flat(general)
    assert fast.bounds.tolist() == general.bounds.tolist() and fast.keys == general.keys


def test_runs_are_gathered_by_the_kernel_as_by_index() -> None:
    """``RawBatch.gathered`` copies runs of samples with the compiled kernel when numba is there; the same
    batch as the index gather (the path without numba) gives, runs empty, repeated or out of order."""
    stamps = np.arange(50, dtype=np.int64) * 10
    values = stamps / 3.0
    starts, sizes = np.array([40, 0, 7, 7, 49]), np.array([5, 3, 0, 4, 1])
    got = RawBatch.gathered([{}] * 5, stamps, values, starts, sizes)
    picks = np.concatenate([np.arange(a, a + b) for a, b in zip(starts.tolist(), sizes.tolist(), strict=True)])
    assert got.timestamps.tolist() == stamps[picks].tolist() and got.values.tolist() == values[picks].tolist()
    float_stamps = RawBatch.gathered([{}] * 5, stamps.astype(np.float64), values, starts, sizes)  # the index path
    assert float_stamps.timestamps.tolist() == stamps[picks].tolist()
