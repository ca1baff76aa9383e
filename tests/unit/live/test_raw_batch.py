"""A remote read's series kept as one pair of arrays (``RawBatch``): indexing, reordering and joining the pieces
of a read split in time give what the per-series lists gave, sample for sample."""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np
import pytest

from compiler.live.remote_read import RawBatch, RawSeries, _merged, sample_count


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
