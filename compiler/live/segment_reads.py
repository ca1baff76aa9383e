"""The raw reads of a spec's consecutive time segments, each sample asked of the server once.

The local engine cuts a long replay into segments (``backtest.segments``), and each segment evaluates the
warm-up before its first own step again, so its raw selectors reach back over the previous segment's last
hour or more. Read as they are asked, those samples were read twice, and every read started and ended
inside a stored chunk, which the server re-encodes to trim it to the range (tsdb/querier.go
blockBaseSeriesSet.Next and populateWithDelGenericSeriesIterator@v2.42.0): on a read of 90,000 bucket series
over 4 hours the trimming was half of the server's CPU.

``SegmentReads`` wraps the fetch: a selector's samples read for one segment are kept, the next segment's
read asks only for what lies after them, and a read ends on the server's 2-hour block boundary (or the
replay's end), where stored chunks end too (head chunks are cut at the chunk range, blocks cover aligned
ranges: tsdb/head_append.go and tsdb/compact.go@v2.42.0), so no chunk is trimmed at the end. Each segment
gets exactly the series and samples a read of its own range would give.
"""

from __future__ import annotations

import threading
from collections.abc import Callable, Sequence
from dataclasses import dataclass

import numpy as np

from compiler.live import xor_chunks
from compiler.live.remote_read import RawBatch, RawLike, _merged
from compiler.promql import Matcher

BLOCK_MS = 2 * 3600 * 1000  # the TSDB's block and head chunk range (--storage.tsdb.min-block-duration)

Reader = Callable[[tuple[Matcher, ...], int, int], Sequence[RawLike]]


@dataclass(frozen=True)
class _Held:
    start_ms: int
    end_ms: int  # the samples from start_ms to end_ms (both included) are all here
    batch: RawBatch


def cut(batch: RawBatch, start_ms: int, end_ms: int) -> RawBatch:
    """The samples of ``batch`` from ``start_ms`` to ``end_ms`` (both included), series left empty dropped.
    A series' samples rise in time, so those kept are one run of it, found per series (``_runs_within``) and
    copied run by run, with no per-sample owner."""
    stamps = batch.timestamps
    starts = batch.bounds[:-1]
    if not stamps.size or (stamps[starts].min() >= start_ms and stamps[batch.bounds[1:] - 1].max() <= end_ms):
        return batch
    before, within = _runs_within(batch, start_ms, end_ms)
    held = np.flatnonzero(within > 0)
    picked = held.tolist()
    keys = None if batch.keys is None else [batch.keys[index] for index in picked]
    labels = batch.labels if len(picked) == len(batch) else [batch.labels[index] for index in picked]
    return RawBatch.gathered(labels, stamps, batch.values, starts[held] + before[held], within[held], None, keys)


def _runs_within(batch: RawBatch, start_ms: int, end_ms: int) -> tuple[np.ndarray, np.ndarray]:
    """Each series' samples before ``start_ms``, and from it to ``end_ms``: by the compiled kernel's binary
    searches when numba is there, else by counting."""
    module = xor_chunks.kernels()
    stamps, starts = batch.timestamps, batch.bounds[:-1]
    if module is None or stamps.dtype != np.int64:
        before = np.add.reduceat(stamps < start_ms, starts, dtype=np.int64)
        return before, np.add.reduceat(stamps <= end_ms, starts, dtype=np.int64) - before
    before, within = np.empty(len(batch), np.int64), np.empty(len(batch), np.int64)
    module.runs_within(stamps, batch.bounds.astype(np.int64), start_ms, end_ms, before, within)
    return before, within


class SegmentReads:
    """A fetch that keeps each selector's last read and asks the server only for the samples after it."""

    def __init__(self, read: Reader, last_ms: int) -> None:
        """``last_ms``: no read goes past it (the replay's last step)."""
        self.read, self.last_ms = read, last_ms
        self._held: dict[tuple[Matcher, ...], _Held] = {}
        self._lock = threading.Lock()

    def _boundary(self, end_ms: int) -> int:
        """The last millisecond of the block ``end_ms`` falls in, or ``last_ms`` when that is earlier."""
        return max(end_ms, min(self.last_ms, (end_ms // BLOCK_MS + 1) * BLOCK_MS - 1))

    def __call__(self, key: tuple[Matcher, ...], start_ms: int, end_ms: int) -> Sequence[RawLike]:
        with self._lock:
            held = self._held.get(key)
        if held is not None and held.start_ms <= start_ms and end_ms <= held.end_ms:
            return cut(held.batch, start_ms, end_ms)
        until = self._boundary(end_ms)
        if held is not None and held.start_ms <= start_ms <= held.end_ms + 1:
            fresh = RawBatch.joined(self.read(key, held.end_ms + 1, until))
            batch = _merged([cut(held.batch, start_ms, held.end_ms), fresh])
        else:
            batch = RawBatch.joined(self.read(key, start_ms, until))
        with self._lock:
            self._held[key] = _Held(start_ms, until, batch)
        return cut(batch, start_ms, end_ms)
