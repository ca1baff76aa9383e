"""The streamed remote read (``STREAMED_XOR_CHUNKS``): the server copies its stored Gorilla XOR chunks (about
1.4 bytes a sample) instead of decoding them and re-encoding every sample as protobuf, and the chunks are
decoded here by the compiled kernels of ``compiler.live.xor_kernels`` (numba, an optional dependency: the
``backtest`` extra). ``kernels()`` imports them on first use only, so that commands that make no remote read
do not pay numba's import; without numba the remote read asks for samples, as before.

The answer is bit for bit what the SAMPLES response type gives: the server sends whole chunks, which may
start before or end after the range and, in a series, overlap (prompb/types.proto ChunkedSeries@v2.42.0), so
the samples are cut to [start, end] (both included) and a timestamp seen twice is kept once (the first, in
chunk order). A series split over several frames (``--storage.remote.read-max-bytes-in-frame``) comes again
with the same labels and is joined. A chunk of another encoding (a native histogram) makes the caller ask
for samples instead, which is what the SAMPLES mode answers for it (storage/remote/codec.go ToQueryResult@v2.42.0
stops a series at its first histogram sample).
"""

from __future__ import annotations

import importlib
import threading
from types import ModuleType

import numpy as np

from compiler.live.client import AnswerTooBigError
from compiler.live.remote_read import LabelKey, MalformedError, RawBatch, RawSeries

CONTENT_TYPE = "application/x-streamed-protobuf"
# A frame longer than this is refused (the server's --storage.remote.read-max-bytes-in-frame defaults to 1 MiB).
MAX_FRAME_BYTES = 64 * 1024 * 1024
_XOR = (1, 0x81)  # chunkenc.EncXOR, and EncOOOXOR (the same bytes; tsdb/chunkenc/chunk.go@v2.42.0)
_PAD = 16
_ERRORS = {
    1: "a truncated frame or message",
    2: "a frame whose CRC32C does not match its data",
    3: f"a frame longer than {MAX_FRAME_BYTES // (1024 * 1024)} MiB",
    4: "a field of an unknown wire type or longer than its message",
    5: "a malformed varint",
    6: "an XOR value window wider than 64 bits",
}
_lock = threading.Lock()
_loaded: list[ModuleType | None] = []


def kernels() -> ModuleType | None:
    """The compiled kernels, or None when numba cannot be imported (imported once, on first use)."""
    with _lock:
        if not _loaded:
            try:
                _loaded.append(importlib.import_module("compiler.live.xor_kernels"))
            except ImportError:
                _loaded.append(None)
        return _loaded[0]


def warm() -> bool:
    """Compile the kernels now (about 9 s of numba's JIT, once a process): before forking workers, so that each
    does not compile them again. False when numba is not installed."""
    if not _streamed_available():
        return False
    decode_stream(b"", 0, 0, 1)  # an empty answer goes through every kernel, with the types real ones have
    module = kernels()
    assert module is not None
    none, one = np.zeros(0, np.int64), np.zeros(1, np.int64)
    module.gather_runs(none, np.zeros(0), none, none, none, np.zeros(0))  # the segment reads' cuts and joins
    module.runs_within(none, one, 0, 0, none, none)
    return True


def _streamed_available() -> bool:
    return kernels() is not None


def _walk(module: ModuleType, arr: np.ndarray, size: int) -> tuple[np.ndarray, np.ndarray]:
    """Every Label message (part, start, stop) and chunk (part, min ms, max ms, encoding, data start, length)."""
    state = np.zeros(4, np.int64)
    empty = np.zeros((0, 6), np.int64)
    code = module.walk(arr, size, MAX_FRAME_BYTES, False, empty, empty, state)
    if code:
        raise MalformedError(f"{_ERRORS.get(code, 'garbage')} at byte {state[3]}")
    labels, chunks = np.zeros((state[1], 3), np.int64), np.zeros((state[2], 6), np.int64)
    state[:] = 0
    module.walk(arr, size, MAX_FRAME_BYTES, True, labels, chunks, state)
    return labels, chunks


def _samples(
    module: ModuleType, arr: np.ndarray, chunks: np.ndarray, max_samples: int
) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """The stamps and values of every chunk, in order, and where each chunk's start (one more entry)."""
    starts, sizes = chunks[:, 4], chunks[:, 5]
    if np.any(sizes < 2):
        raise MalformedError("a chunk shorter than its 2-byte header")
    counts = (arr[starts].astype(np.int64) << 8) | arr[starts + 1]
    if np.any(counts > 4 * sizes + 2):  # past its first two, a sample takes two bits at least
        raise MalformedError("a chunk that claims more samples than its bytes can hold")
    offsets = np.zeros(counts.size + 1, np.int64)
    np.cumsum(counts, out=offsets[1:])
    if offsets[-1] > max_samples:
        raise AnswerTooBigError(f"{int(offsets[-1]):,} samples in one answer, more than the limit of {max_samples:,}")
    stamps, values = np.empty(offsets[-1], np.uint64), np.empty(offsets[-1], np.uint64)
    code, chunk = module.decode(arr, starts, sizes, offsets, stamps, values)
    if code:
        problem = "truncated XOR data" if code == 1 else _ERRORS.get(code, "garbage")
        raise MalformedError(f"chunk {chunk} holds {problem} (its header claims {counts[chunk]} samples)")
    return stamps.view(np.int64), values.view(np.float64), offsets


LabelMemo = dict[bytes, tuple[dict[str, str], LabelKey]]


def _label_bytes(labels: np.ndarray, ends: np.ndarray) -> tuple[list[int], list[int]]:
    """Each part's bytes from its first Label message to the end of its last (empty for a part without
    labels): the same bytes, the same labels."""
    if not labels.shape[0]:
        return [0] * (ends.size - 1), [0] * (ends.size - 1)
    labelled = ends[1:] > ends[:-1]
    opens = np.where(labelled, labels[np.minimum(ends[:-1], labels.shape[0] - 1), 1], 0)
    closes = np.where(labelled, labels[np.maximum(ends[1:] - 1, 0), 2], 0)
    return opens.tolist(), closes.tolist()


def _parts(
    module: ModuleType, arr: np.ndarray, labels: np.ndarray, parts: int, raw: bytes, memo: LabelMemo
) -> tuple[np.ndarray, list[dict[str, str]], list[LabelKey]]:
    """Each part's series (consecutive parts with the same label bytes are one series split over frames) and its
    labels as sorted pairs (the order reads are sorted in). The kernel finds every name and value; each distinct
    string is decoded once (names and most values repeat), and a series whose label bytes ``memo`` holds (the
    same series in an earlier read: a replay reads each selector once per time segment) is not decoded again."""
    series_of = np.zeros(parts, np.int64)
    found: list[dict[str, str]] = []
    keys: list[LabelKey] = []
    ends = np.searchsorted(labels[:, 0], np.arange(parts + 1))
    spans = np.zeros((labels.shape[0], 4), np.int64)
    same = np.zeros(parts, np.bool_)
    code = module.label_spans(arr, labels, ends, spans, same)
    if code:
        raise MalformedError(f"a Label message with {_ERRORS.get(code, 'garbage')}")
    texts: dict[bytes, str] = {}
    bounds, alike = ends.tolist(), same.tolist()
    opens, closes = _label_bytes(labels, ends)
    for part in range(parts):
        if not (alike[part] and found):
            whole = raw[opens[part] : closes[part]]
            held = memo.get(whole)
            if held is None:
                series: dict[str, str] = {}
                for name_start, name_stop, value_start, value_stop in spans[bounds[part] : bounds[part + 1]].tolist():
                    name, value = raw[name_start:name_stop], raw[value_start:value_stop]  # arr holds raw's bytes
                    key = texts.get(name) or texts.setdefault(name, str(name, "utf-8"))
                    series[key] = texts.get(value) or texts.setdefault(value, str(value, "utf-8"))
                held = memo.setdefault(whole, (series, tuple(sorted(series.items()))))
            found.append(held[0])
            keys.append(held[1])
        series_of[part] = len(found) - 1
    return series_of, found, keys


def decode_stream(
    raw: bytes, start_ms: int, end_ms: int, max_samples: int, memo: LabelMemo | None = None
) -> RawBatch | None:
    """The series of a streamed answer, cut to [start_ms, end_ms]; None when a chunk is not XOR (ask for
    samples). ``MalformedError`` for anything that is not such an answer, never another exception. ``memo``:
    the labels of the series read before, by their bytes (``Client.label_memo``), filled with this answer's."""
    module = kernels()
    assert module is not None, "decode_stream without numba"
    arr = np.zeros(len(raw) + _PAD, np.uint8)
    arr[: len(raw)] = np.frombuffer(raw, np.uint8)
    labels, chunks = _walk(module, arr, len(raw))
    if chunks.shape[0] and not np.isin(chunks[:, 3], _XOR).all():
        return None
    try:
        parts = int(chunks[-1, 0]) + 1 if chunks.shape[0] else 0
        series_of, found, keys = _parts(module, arr, labels, parts, raw, {} if memo is None else memo)
    except UnicodeDecodeError as exc:
        raise MalformedError("a label that is not UTF-8") from exc
    stamps, values, offsets = _samples(module, arr, chunks, max_samples)
    # Each series' samples, from its first chunk's (the parts are in order, so their series are); then cut.
    bounds = offsets[np.searchsorted(series_of[chunks[:, 0]], np.arange(len(found) + 1))]
    keep = (stamps >= start_ms) & (stamps <= end_ms)
    if not keep.all():
        counts = np.zeros(len(found), np.int64)
        held = np.flatnonzero(np.diff(bounds))
        if held.size:  # the samples from a series' start to the next non-empty one's are all its own
            counts[held] = np.add.reduceat(keep, bounds[held], dtype=np.int64)
        bounds = np.zeros(len(found) + 1, np.int64)
        np.cumsum(counts, out=bounds[1:])
        stamps, values = stamps[keep], values[keep]
    # The series whose times do not rise all the way (overlapping chunks), found in one pass over all samples:
    # a time not after the one before it, where that is not a series' first sample.
    down = np.flatnonzero(stamps[1:] <= stamps[:-1]) + 1
    owners = np.searchsorted(bounds, down, side="right") - 1
    unsorted = set(owners[down != bounds[owners]].tolist())
    if not unsorted:  # the samples are the batch as they are; a series the cut left empty is dropped
        sizes = np.diff(bounds)
        held = np.flatnonzero(sizes)
        kept = np.zeros(held.size + 1, np.int64)
        np.cumsum(sizes[held], out=kept[1:])
        picked = held.tolist()
        return RawBatch([found[index] for index in picked], stamps, values, kept, [keys[index] for index in picked])
    out = []
    spans = bounds.tolist()
    for index, labels_of in enumerate(found):
        times, vals = stamps[spans[index] : spans[index + 1]], values[spans[index] : spans[index + 1]]
        if index in unsorted:  # overlapping chunks
            order = np.argsort(times, kind="stable")
            times, vals = times[order], vals[order]
            first = np.concatenate(([True], times[1:] != times[:-1]))
            times, vals = times[first], vals[first]
        out.append(RawSeries(labels_of, times, vals))
    return RawBatch.joined(out)
