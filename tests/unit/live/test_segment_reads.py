"""Consecutive segments' raw reads (``compiler.live.segment_reads``): every segment gets exactly what a read of its
own range gives, while the server is asked for each sample once, up to its 2-hour block boundary."""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np

from compiler.live import segment_reads
from compiler.live.remote_read import RawBatch, RawLike, RawSeries
from compiler.live.segment_reads import BLOCK_MS, SegmentReads, cut
from compiler.promql import Matcher

KEY = (Matcher("__name__", "=", "up"),)
HOUR = 3_600_000
STEP = 60_000


def stored() -> list[RawSeries]:
    """Three series over 12 hours: one always there, one that stops after 5h, one that starts at 7h."""
    times = np.arange(0, 12 * HOUR, STEP, dtype=np.int64)
    return [
        RawSeries({"i": "a"}, times, times / 1000.0),
        RawSeries({"i": "b"}, times[times < 5 * HOUR], np.ones(int((times < 5 * HOUR).sum()))),
        RawSeries({"i": "c"}, times[times >= 7 * HOUR], np.full(int((times >= 7 * HOUR).sum()), 2.0)),
    ]


class Server:
    def __init__(self) -> None:
        self.asked: list[tuple[int, int]] = []
        self.samples = 0

    def __call__(self, key: tuple[Matcher, ...], start_ms: int, end_ms: int) -> Sequence[RawLike]:
        self.asked.append((start_ms, end_ms))
        found = cut(RawBatch.joined(stored()), start_ms, end_ms)
        self.samples += found.samples
        return found


def view(series: Sequence[RawLike]) -> list[tuple[dict[str, str], list[int], list[float]]]:
    return [(one.labels, one.timestamps.tolist(), one.values.tolist()) for one in series]


def test_each_segment_gets_its_own_range_and_each_sample_is_asked_once() -> None:
    server = Server()
    reads = SegmentReads(server, 11 * HOUR)
    ranges = [(30 * STEP, 4 * HOUR), (3 * HOUR, 7 * HOUR + STEP), (6 * HOUR, 9 * HOUR), (8 * HOUR, 11 * HOUR)]
    for start, end in ranges:
        assert view(reads(KEY, start, end)) == view(Server()(KEY, start, end))
    # the first read ends on the block boundary after 4h, each next one starts after the last, none past 11h
    assert server.asked == [
        (30 * STEP, 6 * HOUR - 1),
        (6 * HOUR, 8 * HOUR - 1),
        (8 * HOUR, 10 * HOUR - 1),
        (10 * HOUR, 11 * HOUR),
    ]
    assert all(end % BLOCK_MS == BLOCK_MS - 1 for _, end in server.asked[:-1])
    assert server.samples == RawBatch.joined(Server()(KEY, 30 * STEP, 11 * HOUR)).samples == 631 + 270 + 241


def test_a_read_reaching_before_what_is_held_asks_again() -> None:
    server = Server()
    reads = SegmentReads(server, 11 * HOUR)
    reads(KEY, 4 * HOUR, 5 * HOUR)
    assert view(reads(KEY, 3 * HOUR, 5 * HOUR)) == view(Server()(KEY, 3 * HOUR, 5 * HOUR))
    assert view(reads(KEY, 4 * HOUR, 4 * HOUR + STEP)) == view(Server()(KEY, 4 * HOUR, 4 * HOUR + STEP))
    assert server.asked == [(4 * HOUR, 6 * HOUR - 1), (3 * HOUR, 6 * HOUR - 1)]


def test_a_cut_keeps_each_series_samples_in_the_range_and_drops_the_series_left_empty() -> None:
    """``cut`` finds each series' run by binary search (the compiled kernel) or by counting (without numba): both
    keep, per series, exactly its samples from start to end, both included."""
    rng = np.random.default_rng(3)
    found = [
        RawSeries({"i": str(index)}, times, times / 7.0)
        for index in range(60)
        if (times := np.unique(rng.integers(0, 1000, rng.integers(1, 30))).astype(np.int64)).size
    ]
    batch = RawBatch.joined(found)
    for start, end in ((0, 999), (-5, 2000), (250, 260), (500, 499), (0, 0), (999, 999), (300, 700)):
        want = [
            (one.labels, kept.tolist(), (kept / 7.0).tolist())
            for one in found
            if (kept := one.timestamps[(one.timestamps >= start) & (one.timestamps <= end)]).size
        ]
        assert view(cut(batch, start, end)) == want
        before, within = segment_reads._runs_within(batch, start, end)
        counted_before = [int((one.timestamps < start).sum()) for one in found]
        counted_within = [int(((one.timestamps >= start) & (one.timestamps <= end)).sum()) for one in found]
        assert (before.tolist(), within.tolist()) == (counted_before, counted_within)
