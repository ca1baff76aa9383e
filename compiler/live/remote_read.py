"""Raw samples from Prometheus's remote-read endpoint, as numpy arrays, each series read once.

The backtest's columnar evaluation asks the server for each raw series' stored samples over the
window (``POST /api/v1/read``, the SAMPLES response type: one snappy-compressed protobuf
``ReadResponse``) instead of asking it to evaluate rules at every step. Every stored float sample
comes back, stale markers included (storage/remote/codec.go ToQueryResult@v2.42.0); they are kept
as stored (``is_stale``).

The protobuf is written and read by hand (prompb/remote.proto and prompb/types.proto@v2.42.0): the
series and their labels are parsed in Python, the samples of a series with numpy. Prometheus's gogo
marshaller writes each ``Sample`` as ``0x12 len [0x09 <double LE>] [0x10 <varint ts>]`` and leaves a
field out when it is zero (``if m.Value != 0``, ``if m.Timestamp != 0`` in prompb/types.pb.go
Sample.MarshalToSizedBuffer@v2.42.0), so a zero value makes a 9-byte record among 18-byte ones. The
records' starts are found with vectorised byte tests and checked to chain (each start plus its
length is the next start); each record shape is then decoded at once. What does not chain (another
encoder's field order, a double whose bytes look like a record) is read record by record in Python.

With numba installed (the ``backtest`` extra), the request asks for ``STREAMED_XOR_CHUNKS`` first: the
server then copies its stored chunks, decoded here by ``compiler.live.xor_chunks`` into the same arrays, bit
for bit; the answer's Content-Type says which of the two it is (an older server answers samples).
``STREAMED = False`` forces the samples, as without numba.

The server is not trusted: the answer is read up to a cap, its declared decompressed size is checked
before decompressing, every length is bounds-checked, and anything malformed is a one-line
``LiveError``. A query the server refuses for its size (``--storage.remote.read-sample-limit``,
HTTP 400 "exceeded sample limit") or whose answer passes the caps is split in two halves of time.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Protocol, overload

import cramjam
import numpy as np
from numpy.lib.stride_tricks import as_strided, sliding_window_view

from compiler.live.client import AnswerTooBigError, Client, LiveError, QueryError
from compiler.promql import Matcher

# Prometheus's staleness marker: a NaN with this bit pattern (model/value/value.go StaleNaN@v2.42.0).
STALE_NAN_BITS = 0x7FF0000000000002
# The compressed answer read at most; a sample is about 18 bytes before and 4-10 after compression.
MAX_REMOTE_READ_BYTES = 512 * 1024 * 1024
# The decompressed answer accepted at most (checked against snappy's declared length before decompressing).
MAX_DECOMPRESSED_BYTES = 1536 * 1024 * 1024
# One request is planned to answer at most this many samples when the caller gives an estimate
# (about 360 MB decompressed; the server's own --storage.remote.read-sample-limit default is 5e7).
MAX_SAMPLES_PER_READ = 20_000_000
# The server's refusal when a query answers more samples than its limit (storage/remote/codec.go@v2.42.0).
SAMPLE_LIMIT = "exceeded sample limit"

_MATCH_TYPES = {"=": 0, "!=": 1, "=~": 2, "!~": 3}
_SAMPLES = 0  # ReadRequest.ResponseType.SAMPLES
_STREAMED_XOR_CHUNKS = 1  # ReadRequest.ResponseType.STREAMED_XOR_CHUNKS (decoded by compiler.live.xor_chunks)
# Ask for the stored XOR chunks when numba is importable (False: always samples, as without numba).
STREAMED = True
_HEADERS = {
    "Content-Encoding": "snappy",
    "Content-Type": "application/x-protobuf",
    "X-Prometheus-Remote-Read-Version": "0.1.0",
}
_PAD = 16  # zero bytes after a decompressed answer, so that an 8-byte word read at its last byte stays inside
Buffer = bytes | memoryview
_ALL_SHAPES = 8  # restarts of the vectorised scan within one series before it is read record by record


LabelKey = tuple[tuple[str, str], ...]


@dataclass(frozen=True)
class RawSeries:
    """One series' stored samples: timestamps in ms (int64, ascending) and values (float64, as stored)."""

    labels: dict[str, str]
    timestamps: np.ndarray
    values: np.ndarray


class RawLike(Protocol):
    """One raw series as the server stores it: ascending timestamps (ms) and values, markers kept."""

    @property
    def labels(self) -> dict[str, str]: ...

    @property
    def timestamps(self) -> np.ndarray: ...

    @property
    def values(self) -> np.ndarray: ...


class RawBatch(Sequence[RawSeries]):
    """Series whose samples lie one after another in two arrays: series ``i`` is ``labels[i]`` with the samples
    ``bounds[i]:bounds[i + 1]``, none of them empty. A read of 90,000 series decodes into one pair of arrays;
    keeping them whole spares the backtest a Python object per series and a copy of every sample (its columnar
    evaluation concatenates the series anyway: ``compiler.live.columns``). Indexing gives ``RawSeries`` views."""

    def __init__(
        self,
        labels: list[dict[str, str]],
        timestamps: np.ndarray,
        values: np.ndarray,
        bounds: np.ndarray,
        keys: list[LabelKey] | None = None,
    ):
        """``keys``: each series' labels as sorted pairs, when known (a read sorted by them keeps them)."""
        self.labels, self.timestamps, self.values, self.bounds = labels, timestamps, values, bounds
        self.keys = keys

    def sort_keys(self) -> list[LabelKey]:
        """Each series' labels as sorted (name, value) pairs, the order reads are sorted in."""
        if self.keys is None:
            self.keys = [tuple(sorted(labels.items())) for labels in self.labels]
        return self.keys

    def sorted(self) -> RawBatch:
        """The series sorted by their labels."""
        keys = self.sort_keys()
        order = sorted(range(len(keys)), key=keys.__getitem__)
        found = self.take(order)
        found.keys = [keys[index] for index in order]
        return found

    @staticmethod
    def joined(series: Sequence[RawLike]) -> RawBatch:
        """``series`` (the empty ones left out) as one batch."""
        held = [one for one in series if one.timestamps.size]
        if isinstance(series, RawBatch) and len(held) == len(series):
            return series
        bounds = np.zeros(len(held) + 1, np.int64)
        np.cumsum([one.timestamps.size for one in held], out=bounds[1:])
        if not held:
            return RawBatch([], np.zeros(0, np.int64), np.zeros(0, np.float64), bounds)
        return RawBatch(
            [one.labels for one in held],
            np.concatenate([one.timestamps for one in held]),
            np.concatenate([one.values for one in held]),
            bounds,
        )

    def take(self, order: Sequence[int]) -> RawBatch:
        """The series in ``order`` (indices into this batch)."""
        if list(order) == list(range(len(self.labels))):
            return self
        picked = np.asarray(order, np.int64)
        return RawBatch.gathered(
            [self.labels[index] for index in picked.tolist()],
            self.timestamps,
            self.values,
            self.bounds[picked],
            self.bounds[picked + 1] - self.bounds[picked],
        )

    @staticmethod
    def gathered(
        labels: list[dict[str, str]],
        timestamps: np.ndarray,
        values: np.ndarray,
        starts: np.ndarray,
        sizes: np.ndarray,
        parts: np.ndarray | None = None,
        keys: list[LabelKey] | None = None,
    ) -> RawBatch:
        """A batch of the sample ranges ``starts[i]:starts[i] + sizes[i]`` of the arrays, in that order: series
        ``j`` is ``labels[j]`` with the next ``parts[j]`` ranges (one each without ``parts``)."""
        bounds = np.zeros(sizes.size + 1, np.int64)
        np.cumsum(sizes, out=bounds[1:])
        picked = _gather_runs(timestamps, values, starts, sizes, int(bounds[-1]))
        if parts is not None:
            bounds = bounds[np.concatenate(([0], np.cumsum(parts)))]
        return RawBatch(labels, picked[0], picked[1], bounds, keys)

    @property
    def samples(self) -> int:
        return int(self.bounds[-1])

    def __len__(self) -> int:
        return len(self.labels)

    @overload
    def __getitem__(self, index: int) -> RawSeries: ...

    @overload
    def __getitem__(self, index: slice) -> Sequence[RawSeries]: ...

    def __getitem__(self, index: int | slice) -> RawSeries | Sequence[RawSeries]:
        if isinstance(index, slice):
            return [self[one] for one in range(*index.indices(len(self.labels)))]
        if not -len(self.labels) <= index < len(self.labels):
            raise IndexError(index)
        index %= len(self.labels)
        start, stop = int(self.bounds[index]), int(self.bounds[index + 1])
        return RawSeries(self.labels[index], self.timestamps[start:stop], self.values[start:stop])


def _gather_runs(
    timestamps: np.ndarray, values: np.ndarray, starts: np.ndarray, sizes: np.ndarray, total: int
) -> tuple[np.ndarray, np.ndarray]:
    """The sample runs ``starts[i]:starts[i] + sizes[i]`` one after another: copied run by run by the compiled
    kernel when numba is there (a read's runs are hundreds of samples long), else gathered by index."""
    from compiler.live import xor_chunks  # numba's import only when a remote read happens

    module = xor_chunks.kernels() if starts.size else None
    if (
        module is None
        or timestamps.dtype != np.int64
        or values.dtype != np.float64
        or starts.min() < 0
        or int((starts + sizes).max()) > timestamps.size
        or timestamps.size != values.size
    ):
        picks = np.repeat(starts - np.cumsum(sizes) + sizes, sizes) + np.arange(total, dtype=np.int64)
        return timestamps[picks], values[picks]
    out_stamps, out_values = np.empty(total, np.int64), np.empty(total, np.float64)
    module.gather_runs(timestamps, values, starts.astype(np.int64), sizes.astype(np.int64), out_stamps, out_values)
    return out_stamps, out_values


def sample_count(series: Sequence[RawLike]) -> int:
    """The samples of ``series``, without a Python object per series for a batch."""
    if isinstance(series, RawBatch):
        return series.samples
    return sum(one.timestamps.size for one in series)


def is_stale(values: np.ndarray) -> np.ndarray:
    """Which values are Prometheus's staleness marker (that NaN exactly, not any NaN)."""
    stale: np.ndarray = np.asarray(values, dtype=np.float64).view(np.uint64) == np.uint64(STALE_NAN_BITS)
    return stale


class MalformedError(LiveError):
    """The answer is not a ReadResponse (truncated, or not protobuf at all)."""


# -- encoding the request ----------------------------------------------------------------


def _varint(value: int) -> bytes:
    value &= (1 << 64) - 1  # an int64 is written as its two's complement
    out = bytearray()
    while value >= 0x80:
        out.append((value & 0x7F) | 0x80)
        value >>= 7
    out.append(value)
    return bytes(out)


def _field(number: int, payload: bytes) -> bytes:
    return _varint(number << 3 | 2) + _varint(len(payload)) + payload


def encode_read_request(matchers: Sequence[Matcher], start_ms: int, end_ms: int, streamed: bool = False) -> bytes:
    """A ReadRequest of one Query over [start_ms, end_ms] (both included), asking for raw samples, or (``streamed``)
    for the stored XOR chunks first and raw samples from a server that cannot stream them."""
    query = b"\x08" + _varint(start_ms) + b"\x10" + _varint(end_ms)
    for matcher in matchers:
        body = b"\x08" + _varint(_MATCH_TYPES[matcher.op])
        body += _field(2, matcher.name.encode()) + _field(3, matcher.value.encode())
        query += _field(3, body)
    accepted = (_STREAMED_XOR_CHUNKS, _SAMPLES) if streamed else (_SAMPLES,)
    return _field(1, query) + b"".join(b"\x10" + _varint(kind) for kind in accepted)


# -- decoding the answer ----------------------------------------------------------------


def _read_varint(buf: Buffer, pos: int, end: int) -> tuple[int, int]:
    value = shift = 0
    while True:
        if pos >= end or shift > 63:
            raise MalformedError("a truncated or overlong varint")
        byte = buf[pos]
        pos += 1
        value |= (byte & 0x7F) << shift
        if byte < 0x80:
            return value & ((1 << 64) - 1), pos
        shift += 7


def _skip(buf: Buffer, wire: int, pos: int, end: int) -> int:
    """The position after a field of wire type ``wire`` whose value starts at ``pos``."""
    if wire == 0:
        return _read_varint(buf, pos, end)[1]
    if wire == 1:
        pos += 8
    elif wire == 2:
        size, pos = _read_varint(buf, pos, end)
        pos += size
    elif wire == 5:
        pos += 4
    else:
        raise MalformedError(f"a field of wire type {wire}")
    if pos > end:
        raise MalformedError("a field longer than its message")
    return pos


def _int64(value: int) -> int:
    return value - (1 << 64) if value >= 1 << 63 else value


def _sample_slow(buf: Buffer, pos: int, end: int) -> tuple[int, float]:
    """One Sample message in buf[pos:end], fields in any order, unknown ones skipped."""
    stamp, value = 0, 0.0
    while pos < end:
        key, pos = _read_varint(buf, pos, end)
        if key == 0x09:
            if pos + 8 > end:
                raise MalformedError("a truncated sample value")
            value = float(np.frombuffer(buf, "<f8", 1, pos)[0])
            pos += 8
        elif key == 0x10:
            raw, pos = _read_varint(buf, pos, end)
            stamp = _int64(raw)
        else:
            pos = _skip(buf, key & 7, pos, end)
    return stamp, value


def _records(arr: np.ndarray, pos: int, end: int) -> np.ndarray | int:
    """The starts of the longest chain of records ``0x12 len ...`` that begins at ``pos`` and holds the
    shapes Prometheus writes (the value and/or the timestamp, in that order); ``_decode_records`` checks
    them. Empty when the record at ``pos`` is not one of those; their common length when every record from
    ``pos`` to ``end`` has the same."""
    first = int(arr[pos + 1]) + 2 if pos + 1 < end else 0
    # the common case: every record of the series has the same length
    if first > 2 and (end - pos) % first == 0:
        grid = arr[pos:end].reshape(-1, first)
        if np.all(grid[:, 0] == 0x12) and np.all(grid[:, 1] == first - 2):
            return first  # every record to the end has this length (``_decode_grid``)
    # mixed lengths: every position that could start a record, then the chain they form from pos
    size = end - pos
    if size < 3:
        return np.empty(0, np.int64)
    region = arr[pos:end]
    maybe = np.flatnonzero(region[:-2] == 0x12)
    sizes = region[maybe + 1].astype(np.int64)
    tags = region[maybe + 2]
    after = maybe + 11
    ts_after = (after < size) & (region[np.minimum(after, size - 1)] == 0x10)
    fits = (sizes >= 2) & (sizes <= 20) & (maybe + sizes + 2 <= size)
    fits &= np.where(tags == 0x09, (sizes == 9) | ((sizes >= 11) & ts_after), tags == 0x10)
    starts = maybe[fits]
    if starts.size == 0 or starts[0] != 0:
        return np.empty(0, np.int64)
    following = starts + sizes[fits] + 2
    if np.array_equal(following[:-1], starts[1:]):
        return starts.astype(np.int64) + pos
    # bytes inside a value that look like a record: keep the candidates reached from the first one (pointer
    # doubling: after round k every candidate within 2**k records of the first is marked)
    count = starts.size
    found = np.searchsorted(starts, following)
    hit = found < count
    hit[hit] = starts[found[hit]] == following[hit]
    jump = np.append(np.where(hit, found, count), count)
    chain = np.zeros(count + 1, dtype=bool)
    chain[0] = True
    for _ in range(max(1, int(count).bit_length())):
        chain[jump[chain]] = True
        jump = jump[jump]
    return starts[chain[:count]].astype(np.int64) + pos


def _decode_grid(grid: np.ndarray) -> tuple[np.ndarray, np.ndarray] | None:
    """The common case: records of one length, one per row of ``grid``, decoded by columns (no gathers);
    None when they do not all have the shape of the first."""
    width = grid.shape[1]
    if grid[0, 2] == 0x09 and width >= 13 and np.all(grid[:, 11] == 0x10) and np.all(grid[:, 2] == 0x09):
        values = np.ascontiguousarray(grid[:, 3:11]).view("<f8").ravel()
        first = 12
    elif grid[0, 2] == 0x10 and width >= 4 and np.all(grid[:, 2] == 0x10):
        values = np.zeros(grid.shape[0], dtype=np.float64)
        first = 3
    else:
        return None
    size = width - first
    if size > 10:
        return None
    stamps = np.zeros(grid.shape[0], dtype=np.uint64)
    for index in range(size):
        column = grid[:, first + index]
        if (index < size - 1 and not np.all(column >= 0x80)) or (index == size - 1 and np.any(column >= 0x80)):
            return None  # the varint does not end where its record does
        stamps |= (column & 0x7F).astype(np.uint64) << np.uint64(7 * index)
    return stamps.view(np.int64), values


def _decode_records(arr: np.ndarray, words: np.ndarray, starts: np.ndarray) -> tuple[np.ndarray, np.ndarray] | None:
    """Timestamps and values of the records at ``starts``, each shape at once; None when one of them is not
    ``0x12 len [0x09 <8 bytes>] [0x10 <varint that ends with the record>]``."""
    count = starts.size
    lengths = arr[starts + 1].astype(np.int64)
    tags = arr[starts + 2]
    with_value = tags == 0x09
    every_value = bool(with_value.all())
    # the timestamp's varint: after the value (length - 10 bytes) or alone (length - 1 bytes)
    ts_from = starts + 12 if every_value else np.where(with_value, starts + 12, starts + 3)
    ts_size = lengths - 10 if every_value else np.where(with_value, lengths - 10, lengths - 1)
    if not every_value and np.any(~with_value & (tags != 0x10)):
        return None
    if np.any((ts_size > 10) | (ts_size == 0) | (ts_size < -1)):
        return None
    timed_value = with_value & (ts_size > 0)
    if np.any(timed_value) and not np.all(arr[starts[timed_value] + 11] == 0x10):
        return None
    values = np.zeros(count, dtype=np.float64)
    if every_value:
        values = _words_at(words, starts + 3).view("<f8")
    elif np.any(with_value):
        values[with_value] = _words_at(words, starts[with_value] + 3).view("<f8")
    stamps = np.zeros(count, dtype=np.uint64)
    present = np.bincount(ts_size + 1, minlength=12)  # how many of each varint size, from -1 (no timestamp)
    for size in (int(found) for found in np.flatnonzero(present[1:])):  # the varint sizes there are
        which = slice(None) if present[size + 1] == count else np.flatnonzero(ts_size == size)
        if size <= 8:  # the varint's bytes as one little-endian word
            word = _words_at(words, ts_from[which])
            marks = sum(0x80 << (8 * index) for index in range(size))
            if not np.all(word & np.uint64(marks) == np.uint64(marks - (0x80 << (8 * (size - 1))))):
                return None  # the varint does not end where its record does
            stamp = word & np.uint64(0x7F)
            for index in range(1, size):
                stamp |= ((word >> np.uint64(8 * index)) & np.uint64(0x7F)) << np.uint64(7 * index)
        else:  # a negative timestamp: ten bytes
            rows = sliding_window_view(arr, size)[ts_from[which]]
            more = rows >= 0x80
            if not more[:, :-1].all() or more[:, -1].any():
                return None
            stamp = np.zeros(rows.shape[0], dtype=np.uint64)
            for index in range(size):
                stamp |= (rows[:, index] & 0x7F).astype(np.uint64) << np.uint64(7 * index)
        stamps[which] = stamp
    return stamps.view(np.int64), values


def _words(arr: np.ndarray) -> np.ndarray:
    """Every 8 bytes of ``arr`` (padded with 16 zero bytes at its end) as a little-endian word: row r, column
    i is the word at byte r + 8i, so the word at any byte offset is one gather (``_words_at``)."""
    whole = arr[: arr.size // 8 * 8].view("<u8")
    return as_strided(whole, shape=(8, (arr.size - 15) // 8 + 1), strides=(1, 8), writeable=False)


def _words_at(words: np.ndarray, offsets: np.ndarray) -> np.ndarray:
    found: np.ndarray = words[offsets & 7, offsets >> 3]
    return found


def _label(buf: Buffer, pos: int, stop: int) -> tuple[str, str]:
    """One Label message in buf[pos:stop]: its name and value."""
    name = value = ""
    while pos < stop:
        inner, pos = _read_varint(buf, pos, stop)
        if inner in (0x0A, 0x12):
            length, pos = _read_varint(buf, pos, stop)
            if pos + length > stop:
                raise MalformedError("a label string longer than its label")
            text = str(buf[pos : pos + length], "utf-8")
            pos += length
            if inner == 0x0A:
                name = text
            else:
                value = text
        else:
            pos = _skip(buf, inner & 7, pos, stop)
    return name, value


def _series(
    buf: Buffer, arr: np.ndarray, words: np.ndarray, pos: int, end: int
) -> tuple[dict[str, str], np.ndarray, np.ndarray]:
    """One TimeSeries message in buf[pos:end]."""
    labels: dict[str, str] = {}
    stamp_parts: list[np.ndarray] = []
    value_parts: list[np.ndarray] = []
    restarts = 0
    while pos < end:
        key, pos = _read_varint(buf, pos, end)
        if key == 0x0A:  # Label
            size, pos = _read_varint(buf, pos, end)
            if pos + size > end:
                raise MalformedError("a label longer than its series")
            name, value = _label(buf, pos, pos + size)
            labels[name] = value
            pos += size
        elif key == 0x12:  # Sample: this record and the run of records after it
            starts = _records(arr, pos - 1, end) if restarts < _ALL_SHAPES else np.empty(0, np.int64)
            restarts += 1
            if isinstance(starts, int):  # one length to the end of the series
                decoded = _decode_grid(arr[pos - 1 : end].reshape(-1, starts))
                following = end
                if decoded is None:
                    starts = np.arange(pos - 1, end, starts, dtype=np.int64)
            if not isinstance(starts, int):
                decoded = _decode_records(arr, words, starts) if starts.size else None
                following = int(starts[-1]) + int(arr[starts[-1] + 1]) + 2 if starts.size else pos
            if decoded is not None:
                stamp_parts.append(decoded[0])
                value_parts.append(decoded[1])
                pos = following
            else:
                size, pos = _read_varint(buf, pos, end)
                if pos + size > end:
                    raise MalformedError("a sample longer than its series")
                stamp, number = _sample_slow(buf, pos, pos + size)
                stamp_parts.append(np.array([stamp], dtype=np.int64))
                value_parts.append(np.array([number], dtype=np.float64))
                pos += size
        else:  # exemplars, histograms (not asked for), unknown fields
            pos = _skip(buf, key & 7, pos, end)
    if not stamp_parts:
        return labels, np.empty(0, np.int64), np.empty(0, np.float64)
    if len(stamp_parts) == 1:
        return labels, stamp_parts[0], value_parts[0]
    return labels, np.concatenate(stamp_parts), np.concatenate(value_parts)


def decode_read_response(raw: bytes) -> list[RawSeries]:
    """The series of a (decompressed) ReadResponse, of all its results in order; ``MalformedError`` when the
    bytes are not one (never an IndexError, whatever they hold)."""
    arr = np.zeros(len(raw) + _PAD, dtype=np.uint8)
    arr[: len(raw)] = np.frombuffer(raw, dtype=np.uint8)
    return _decode(arr, len(raw))


def _decode(arr: np.ndarray, end: int) -> list[RawSeries]:
    """``decode_read_response`` of the ``end`` bytes at the start of ``arr``, which holds _PAD more (a word
    read at the last byte stays inside)."""
    buf = arr.data
    words = _words(arr)
    out: list[RawSeries] = []
    pos = 0
    try:
        while pos < end:
            key, pos = _read_varint(buf, pos, end)
            if key != 0x0A:
                pos = _skip(buf, key & 7, pos, end)
                continue
            size, pos = _read_varint(buf, pos, end)
            stop = pos + size
            if stop > end:
                raise MalformedError("a query result longer than the answer")
            while pos < stop:
                inner, pos = _read_varint(buf, pos, stop)
                if inner != 0x0A:
                    pos = _skip(buf, inner & 7, pos, stop)
                    continue
                length, pos = _read_varint(buf, pos, stop)
                if pos + length > stop:
                    raise MalformedError("a series longer than its query result")
                labels, stamps, values = _series(buf, arr, words, pos, pos + length)
                if stamps.size > 1 and not np.all(stamps[1:] > stamps[:-1]):
                    raise MalformedError("a series whose samples are not in time order")
                out.append(RawSeries(labels, stamps, values))
                pos += length
    except UnicodeDecodeError as exc:
        raise MalformedError("a label that is not UTF-8") from exc
    return out


# -- the request ------------------------------------------------------------------------


def selector(matchers: Sequence[Matcher]) -> str:
    return "{" + ",".join(matcher.render() for matcher in matchers) + "}"


def _decompress(client: Client, raw: bytes, about: str) -> tuple[np.ndarray, int]:
    """The answer decompressed into an array _PAD bytes longer (for ``_decode``), and its length."""
    try:
        declared, _ = _read_varint(raw, 0, min(len(raw), 10))
    except MalformedError:
        declared = -1
    if declared < 0:
        raise LiveError(f"{client.base} answered {about} with a body that is not snappy; is it a Prometheus?")
    if declared > MAX_DECOMPRESSED_BYTES:
        raise AnswerTooBigError(
            f"Prometheus at {client.base} answered {about} with {declared:,} bytes once decompressed, more than "
            f"the limit of {MAX_DECOMPRESSED_BYTES // (1024 * 1024)} MiB"
        )
    out = np.zeros(declared + _PAD, dtype=np.uint8)
    try:
        written = int(cramjam.snappy.decompress_raw_into(raw, out.data))
    except Exception as exc:  # cramjam raises its own DecompressionError (and ValueError on some inputs)
        raise LiveError(f"{client.base} answered {about} with a body that is not snappy; is it a Prometheus?") from exc
    if written != declared:
        raise LiveError(f"{client.base} answered {about} with a snappy body shorter than it declares")
    return out, written


def _streamed() -> bool:
    if not STREAMED:
        return False
    from compiler.live import xor_chunks  # numba's import only when a remote read happens

    return xor_chunks.kernels() is not None


def _read_once(client: Client, matchers: Sequence[Matcher], start_ms: int, end_ms: int, streamed: bool) -> RawBatch:
    about = f"the remote read of {selector(matchers)} from {start_ms} to {end_ms} ms"
    body = bytes(cramjam.snappy.compress_raw(encode_read_request(matchers, start_ms, end_ms, streamed)))
    answer: dict[str, str] = {}
    url, cap = f"{client.base}/api/v1/read", MAX_REMOTE_READ_BYTES
    raw = client.request(url, body, _HEADERS, about, cap, plain_errors=True, answer_headers=answer)
    chunked = answer.get("content-type", "").startswith("application/x-streamed-protobuf")
    if chunked and not streamed:
        raise LiveError(f"{client.base} answered {about} with streamed chunks, which were not asked for")
    try:
        if chunked:
            from compiler.live import xor_chunks

            got = xor_chunks.decode_stream(raw, start_ms, end_ms, MAX_DECOMPRESSED_BYTES // 16, client.label_memo)
            if got is None:  # a native histogram's chunk: the samples mode's answer for it
                return _read_once(client, matchers, start_ms, end_ms, False)
            series = got
        else:
            series = RawBatch.joined(_decode(*_decompress(client, raw, about)))
    except MalformedError as exc:
        kind = "ChunkedReadResponse stream" if chunked else "ReadResponse"
        raise LiveError(f"{client.base} answered {about} with a malformed {kind} ({exc}); is it a Prometheus?") from exc
    except AnswerTooBigError as exc:
        if not chunked:
            raise
        raise AnswerTooBigError(f"Prometheus at {client.base} answered {about} with {exc}") from exc
    with client._counting:
        client.samples_read += series.samples
    return series


def _read_split(client: Client, matchers: Sequence[Matcher], start_ms: int, end_ms: int, into: list[RawBatch]) -> None:
    """Read [start_ms, end_ms], in halves of time for as long as the server (or the caps) refuse it whole."""
    try:
        into.append(_read_once(client, matchers, start_ms, end_ms, _streamed()))
        return
    except QueryError as exc:
        if SAMPLE_LIMIT not in str(exc):
            raise
        refused: LiveError = exc
    except AnswerTooBigError as exc:
        refused = exc
    if end_ms <= start_ms:
        raise LiveError(
            f"{refused}; one millisecond of {selector(matchers)} is already too much: narrow the matchers, or raise "
            "the server's --storage.remote.read-sample-limit"
        )
    middle = start_ms + (end_ms - start_ms) // 2
    _read_split(client, matchers, start_ms, middle, into)
    _read_split(client, matchers, middle + 1, end_ms, into)


def read_raw(
    client: Client,
    matchers: Sequence[Matcher],
    start_ms: int,
    end_ms: int,
    expected_samples: int | None = None,
) -> RawBatch:
    """Every stored sample of the series ``matchers`` select, from ``start_ms`` to ``end_ms`` (both included),
    stale markers included, one ``RawSeries`` per label set that has samples there, sorted by labels (the
    server also lists a series of a block that has none in the range: it is left out, as the query API does).

    The range is asked in pieces of at most ``MAX_SAMPLES_PER_READ`` samples when ``expected_samples`` says
    it holds more, and any piece the server refuses for its size is split again in halves. The labels are as
    the server answers them: the remote-read endpoint adds its ``external_labels`` (the query API does not).
    """
    if end_ms < start_ms:
        return RawBatch.joined([])
    pieces = 1
    if expected_samples is not None and expected_samples > MAX_SAMPLES_PER_READ:
        pieces = min(math.ceil(expected_samples / MAX_SAMPLES_PER_READ), end_ms - start_ms + 1)
    span = end_ms - start_ms + 1
    answers: list[RawBatch] = []
    for index in range(pieces):
        first = start_ms + span * index // pieces
        last = start_ms + span * (index + 1) // pieces - 1
        _read_split(client, matchers, first, last, answers)
    if len(answers) == 1:
        return answers[0].sorted()
    return _merged(answers)


def _merged(answers: Sequence[RawBatch]) -> RawBatch:
    """The pieces of one read (in time order) as one batch sorted by labels: each series' parts one after
    another, in the pieces' order."""
    if len(answers) > 1 and all(answer.sort_keys() == answers[0].sort_keys() for answer in answers[1:]):
        return _merged_alike(answers)
    return _merged_by_labels(answers)


def _merged_by_labels(answers: Sequence[RawBatch]) -> RawBatch:
    """``_merged`` of any pieces: each series' parts found by its labels."""
    parts: dict[LabelKey, list[tuple[int, int]]] = {}
    for piece, answer in enumerate(answers):
        for index, key in enumerate(answer.sort_keys()):
            parts.setdefault(key, []).append((piece, index))
    offsets = np.cumsum([0] + [answer.samples for answer in answers]).tolist()
    spans = [answer.bounds.tolist() for answer in answers]
    labels: list[dict[str, str]] = []
    starts: list[int] = []
    sizes: list[int] = []
    counts: list[int] = []
    keys = sorted(parts)
    for key in keys:
        places = parts[key]
        labels.append(answers[places[0][0]].labels[places[0][1]])
        counts.append(len(places))
        for piece, index in places:
            bounds = spans[piece]
            starts.append(offsets[piece] + bounds[index])
            sizes.append(bounds[index + 1] - bounds[index])
    return RawBatch.gathered(
        labels,
        np.concatenate([answer.timestamps for answer in answers]),
        np.concatenate([answer.values for answer in answers]),
        np.array(starts, np.int64),
        np.array(sizes, np.int64),
        np.array(counts, np.int64),
        keys,
    )


def _merged_alike(answers: Sequence[RawBatch]) -> RawBatch:
    """``_merged`` of pieces that hold the same series in the same order (consecutive time segments of one
    selector, the usual case), without a Python step per series."""
    offsets = np.cumsum([0] + [answer.samples for answer in answers])[:-1].tolist()
    starts = np.stack([offset + answer.bounds[:-1] for offset, answer in zip(offsets, answers, strict=True)], axis=1)
    sizes = np.stack([np.diff(answer.bounds) for answer in answers], axis=1)
    first = answers[0]
    return RawBatch.gathered(
        first.labels,
        np.concatenate([answer.timestamps for answer in answers]),
        np.concatenate([answer.values for answer in answers]),
        starts.ravel(),
        sizes.ravel(),
        np.full(len(first), len(answers), np.int64),
        first.sort_keys(),
    )
