"""The compiled half of the streamed remote read (numba, imported only when a remote read happens; see
``compiler.live.xor_chunks``): the frames' CRC32C, the protobuf walk that finds every label and chunk, and the
Gorilla XOR decoder of all the chunks of an answer in one call.

Frames are ``uvarint(size)``, a big-endian CRC32 Castagnoli of the data, then a ``ChunkedReadResponse``
(storage/remote/chunked.go ChunkedWriter.Write@v2.42.0); ``ChunkedReadResponse{repeated ChunkedSeries = 1;
int64 query_index = 2}``, ``ChunkedSeries{repeated Label labels = 1; repeated Chunk chunks = 2}``, ``Chunk{int64
min_time_ms = 1; int64 max_time_ms = 2; Encoding type = 3; bytes data = 4}`` (prompb/remote.proto,
prompb/types.proto@v2.42.0). The XOR chunk format is tsdb/chunkenc/xor.go@v2.42.0 (xorAppender.Append,
xorIterator.Next, xorRead).

Nothing here trusts the bytes: every read is checked against the end of its message or chunk first, and the
buffer carries 16 zero bytes after the answer so that the 9-byte window of a bit read at its last bit stays
inside. Errors are codes (below), turned into one-line messages by the caller.
"""

from __future__ import annotations

from typing import Any

import numpy as np
from numba import njit

OK, TRUNCATED, BAD_CRC, TOO_BIG, BAD_FIELD, BAD_VARINT, BAD_WINDOW = range(7)
U8, U64 = np.uint64(8), np.uint64(64)
Array = Any  # numba's arrays, untyped for mypy


def _crc_tables() -> np.ndarray:
    """CRC32C's byte table and the seven tables that take the next bytes of a word (slicing by 8)."""
    tables = np.zeros((8, 256), np.int64)
    for index in range(256):
        crc = index
        for _ in range(8):
            crc = (crc >> 1) ^ 0x82F63B78 if crc & 1 else crc >> 1
        tables[0, index] = crc
    for row in range(1, 8):
        for index in range(256):
            before = int(tables[row - 1, index])
            tables[row, index] = (before >> 8) ^ int(tables[0, before & 0xFF])
    return tables


CRC_TABLE = _crc_tables()


@njit(cache=True, nogil=True)
def crc32c(buf: Array, start: int, stop: int, table: Array) -> int:
    """CRC32C of buf[start:stop], eight bytes a step (slicing by 8), the bytes left over one by one."""
    crc = 0xFFFFFFFF
    index = start
    while index + 8 <= stop:
        low = crc ^ (
            np.int64(buf[index])
            | (np.int64(buf[index + 1]) << 8)
            | (np.int64(buf[index + 2]) << 16)
            | (np.int64(buf[index + 3]) << 24)
        )
        crc = (
            table[7, low & 0xFF]
            ^ table[6, (low >> 8) & 0xFF]
            ^ table[5, (low >> 16) & 0xFF]
            ^ table[4, (low >> 24) & 0xFF]
            ^ table[3, buf[index + 4]]
            ^ table[2, buf[index + 5]]
            ^ table[1, buf[index + 6]]
            ^ table[0, buf[index + 7]]
        )
        index += 8
    while index < stop:
        crc = table[0, (crc ^ buf[index]) & 0xFF] ^ (crc >> 8)
        index += 1
    return crc ^ 0xFFFFFFFF


@njit(cache=True, nogil=True, inline="always")
def _uvarint(buf: Array, pos: int, end: int) -> tuple[int, int]:
    """A byte-aligned uvarint in buf[pos:end] as int64 (its bits), and the position after it (-1: truncated)."""
    value = np.uint64(0)
    shift = 0
    while True:
        if pos >= end or shift > 63:
            return 0, -1
        byte = buf[pos]
        pos += 1
        value |= np.uint64(byte & 0x7F) << np.uint64(shift)
        if byte < 0x80:
            return int(np.int64(value)), pos  # numba: an int64
        shift += 7


@njit(cache=True, nogil=True)
def _skip(buf: Array, key: int, pos: int, end: int) -> int:
    wire = key & 7
    if wire == 0:
        return _uvarint(buf, pos, end)[1]
    if wire == 1:
        pos += 8
    elif wire == 5:
        pos += 4
    elif wire == 2:
        size, pos = _uvarint(buf, pos, end)
        if pos < 0 or size < 0:
            return -1
        pos += size
    else:
        return -1
    return pos if pos <= end else -1


@njit(cache=True, nogil=True)
def walk(buf: Array, n: int, max_frame: int, fill: bool, labels: Array, chunks: Array, state: Array) -> int:
    """Every frame of buf[:n]: checks its CRC (first pass) and counts (state: parts, labels, chunks) or
    records (``fill``) each label (part, start, stop of the Label message) and chunk (part, min ms, max ms,
    encoding, data start, data length). ``state[3]``: where the first error is."""
    pos = 0
    while pos < n:
        state[3] = pos
        size, pos = _uvarint(buf, pos, n)
        if pos < 0 or size < 0:
            return TRUNCATED
        if size > max_frame:
            return TOO_BIG
        stop = pos + 4 + size
        if stop > n:
            return TRUNCATED
        if not fill:
            want = (np.int64(buf[pos]) << 24) | (np.int64(buf[pos + 1]) << 16)
            want |= (np.int64(buf[pos + 2]) << 8) | np.int64(buf[pos + 3])
            if crc32c(buf, pos + 4, stop, CRC_TABLE) != want:
                return BAD_CRC
        code = _response(buf, pos + 4, stop, fill, labels, chunks, state)
        if code != OK:
            return code
        pos = stop
    return OK


@njit(cache=True, nogil=True)
def _message(buf: Array, pos: int, end: int) -> tuple[int, int]:
    """The bounds of a length-delimited field's value at ``pos`` (start -1: it does not fit)."""
    size, pos = _uvarint(buf, pos, end)
    if pos < 0 or size < 0 or size > end - pos:
        return -1, -1
    return pos, pos + size


@njit(cache=True, nogil=True)
def _response(buf: Array, pos: int, end: int, fill: bool, labels: Array, chunks: Array, state: Array) -> int:
    while pos < end:
        key, pos = _uvarint(buf, pos, end)
        if pos < 0:
            return TRUNCATED
        if key == 0x0A:  # ChunkedSeries
            pos, stop = _message(buf, pos, end)
            if pos < 0:
                return TRUNCATED
            code = _series(buf, pos, stop, fill, labels, chunks, state)
            if code != OK:
                return code
            state[0] += 1
            pos = stop
        else:
            pos = _skip(buf, key, pos, end)
            if pos < 0:
                return BAD_FIELD
    return OK


@njit(cache=True, nogil=True)
def _series(buf: Array, pos: int, end: int, fill: bool, labels: Array, chunks: Array, state: Array) -> int:
    part = state[0]
    while pos < end:
        key, pos = _uvarint(buf, pos, end)
        if pos < 0:
            return TRUNCATED
        if key == 0x0A or key == 0x12:  # Label, Chunk
            pos, stop = _message(buf, pos, end)
            if pos < 0:
                return TRUNCATED
            if key == 0x0A:
                if fill:
                    labels[state[1], 0], labels[state[1], 1], labels[state[1], 2] = part, pos, stop
                state[1] += 1
            else:
                if not _chunk(buf, pos, stop, fill, chunks, state[2], part):
                    return BAD_FIELD
                state[2] += 1
            pos = stop
        else:
            pos = _skip(buf, key, pos, end)
            if pos < 0:
                return BAD_FIELD
    return OK


@njit(cache=True, nogil=True)
def label_spans(buf: Array, labels: Array, ends: Array, spans: Array, same: Array) -> int:
    """Each Label message's name and value (``spans``: their start and stop in buf, empty where absent), and for
    each part whether its labels are byte for byte those of the part before (``same``: one series split over
    frames). ``labels`` are (part, start, stop) rows by part, ``ends`` where each part's rows start (one more)."""
    for row in range(labels.shape[0]):
        pos, stop = labels[row, 1], labels[row, 2]
        spans[row, 0] = spans[row, 1] = spans[row, 2] = spans[row, 3] = pos
        while pos < stop:
            key, pos = _uvarint(buf, pos, stop)
            if pos < 0:
                return TRUNCATED
            if key == 0x0A or key == 0x12:  # name, value
                pos, end = _message(buf, pos, stop)
                if pos < 0:
                    return TRUNCATED
                field = 0 if key == 0x0A else 2
                spans[row, field], spans[row, field + 1] = pos, end
                pos = end
            else:
                pos = _skip(buf, key, pos, stop)
                if pos < 0:
                    return BAD_FIELD
    for part in range(1, ends.shape[0] - 1):
        first, last, before = ends[part], ends[part + 1], ends[part - 1]
        alike = last - first == first - before
        row = 0
        while alike and row < last - first:
            a0, a1 = labels[first + row, 1], labels[first + row, 2]
            b0, b1 = labels[before + row, 1], labels[before + row, 2]
            alike = a1 - a0 == b1 - b0
            offset = 0
            while alike and offset < a1 - a0:
                alike = buf[a0 + offset] == buf[b0 + offset]
                offset += 1
            row += 1
        same[part] = alike
    return OK


@njit(cache=True, nogil=True)
def _chunk(buf: Array, pos: int, end: int, fill: bool, chunks: Array, index: int, part: int) -> bool:
    low = high = kind = 0
    data, size = end, 0
    while pos < end:
        key, pos = _uvarint(buf, pos, end)
        if pos < 0:
            return False
        if key == 0x08 or key == 0x10 or key == 0x18:
            value, pos = _uvarint(buf, pos, end)
            if key == 0x08:
                low = value
            elif key == 0x10:
                high = value
            else:
                kind = value
        elif key == 0x22:
            data, pos = _message(buf, pos, end)
            size = pos - data
        else:
            pos = _skip(buf, key, pos, end)
        if pos < 0:
            return False
    if fill:
        chunks[index, 0], chunks[index, 1], chunks[index, 2] = part, low, high
        chunks[index, 3], chunks[index, 4], chunks[index, 5] = kind, data, size
    return True


# -- the XOR chunks ----------------------------------------------------------------------------------


@njit(cache=True, nogil=True, inline="always")
def _bits(buf: Array, pos: int, count: int) -> np.uint64:
    """``count`` (1 to 64) bits from bit ``pos`` of buf, most significant first (the caller checked that they
    are inside the chunk; the 16 bytes of padding keep the 9-byte window inside the buffer)."""
    at = pos >> 3
    off = pos & 7
    # Always the 8 bytes from ``at`` (inside the padding), written so that LLVM makes them one load and a byte
    # swap; a ninth byte only when the bits run past them (more than 57 bits, or fewer at a late offset).
    word = (np.uint64(buf[at]) << np.uint64(56)) | (np.uint64(buf[at + 1]) << np.uint64(48))
    word |= (np.uint64(buf[at + 2]) << np.uint64(40)) | (np.uint64(buf[at + 3]) << np.uint64(32))
    word |= (np.uint64(buf[at + 4]) << np.uint64(24)) | (np.uint64(buf[at + 5]) << np.uint64(16))
    word |= (np.uint64(buf[at + 6]) << U8) | np.uint64(buf[at + 7])
    word <<= np.uint64(off)
    if off + count > 64:
        word |= np.uint64(buf[at + 8]) >> np.uint64(8 - off)
    return word >> np.uint64(64 - count)


@njit(cache=True, nogil=True, inline="always")
def _bit_uvarint(buf: Array, pos: int, end: int) -> tuple[np.uint64, int]:
    """binary.ReadUvarint over the bit stream: at most 10 bytes, the tenth at most 1 (-1: truncated, -2:
    overlong)."""
    value = np.uint64(0)
    for index in range(10):
        if pos + 8 > end:
            return value, -1
        byte = _bits(buf, pos, 8)
        pos += 8
        if byte < 0x80:
            if index == 9 and byte > 1:
                return value, -2
            return value | (byte << np.uint64(7 * index)), pos
        value |= (byte & np.uint64(0x7F)) << np.uint64(7 * index)
    return value, -2


@njit(cache=True, nogil=True, inline="always")
def _dod_in(word: np.uint64) -> tuple[int, int, np.uint64]:
    """A delta of delta at the top of ``word``: prefix 0, 10, 110, 1110, 1111 then 0, 14, 17, 20, 64 bits. The
    prefix's bits, the value's, and the value (but for 64 bits, which the caller reads)."""
    one = np.uint64(1)
    if word >> np.uint64(63) == np.uint64(0):
        return 1, 0, np.uint64(0)
    if (word >> np.uint64(62)) & one == np.uint64(0):
        used, bits = 2, 14
    elif (word >> np.uint64(61)) & one == np.uint64(0):
        used, bits = 3, 17
    elif (word >> np.uint64(60)) & one == np.uint64(0):
        used, bits = 4, 20
    else:
        return 4, 64, np.uint64(0)
    dod = (word << np.uint64(used)) >> np.uint64(64 - bits)
    if dod > (one << np.uint64(bits - 1)):
        dod -= one << np.uint64(bits)  # negative, in two's complement (wraps)
    return used, bits, dod


@njit(cache=True, nogil=True, inline="always")
def _value_in(word: np.uint64, leading: int, trailing: int) -> tuple[int, int, int]:
    """A value's control bits at the top of ``word`` (0: unchanged; 10: XOR in the last window; 11: 5 bits of
    leading zeros and 6 of significant bits, 0 meaning 64): the control's bits, the significant bits that
    follow, and the leading zeros of their window."""
    if word >> np.uint64(63) == np.uint64(0):
        return 1, 0, leading
    if (word >> np.uint64(62)) & np.uint64(1) == np.uint64(0):
        return 2, 64 - leading - trailing, leading
    bits = int(np.int64((word >> np.uint64(51)) & np.uint64(63)))
    return 13, 64 if bits == 0 else bits, int(np.int64((word >> np.uint64(57)) & np.uint64(31)))


@njit(cache=True, nogil=True)
def _chunk_samples(buf: Array, start: int, size: int, first: int, count: int, stamps: Array, values: Array) -> int:
    """One XOR chunk (buf[start:start+size], its 2-byte count read) into stamps/values from ``first``. Past the
    first two samples, a delta of delta and a value alternate, each parsed from one 8-byte load at its first
    bit (top 57 bits the stream's; checked against ``end`` before use; the padding keeps it inside), written
    out here: numba counts a reference to ``buf`` on every call that takes it, even inlined, and those atomic
    counts were three quarters of the decoder's time (30 ns a sample, now 8 to 10)."""
    pos, end = (start + 2) * 8, (start + size) * 8
    leading = trailing = 0
    raw, pos = _bit_uvarint(buf, pos, end)
    if pos == -2:
        return BAD_VARINT
    if pos < 0 or pos + 64 > end:
        return TRUNCATED
    stamp = (raw >> np.uint64(1)) ^ (np.uint64(0) - (raw & np.uint64(1)))  # zigzag
    value = _bits(buf, pos, 64)
    pos += 64
    stamps[first], values[first] = stamp, value
    if count < 2:
        return OK
    delta, pos = _bit_uvarint(buf, pos, end)
    if pos < 0:
        return TRUNCATED if pos == -1 else BAD_VARINT
    stamp += delta
    index, in_value = 1, True  # the second sample has no delta of delta: its value comes next
    while index < count:
        if pos + 1 > end:
            return TRUNCATED
        at = pos >> 3
        word = (np.uint64(buf[at]) << np.uint64(56)) | (np.uint64(buf[at + 1]) << np.uint64(48))
        word |= (np.uint64(buf[at + 2]) << np.uint64(40)) | (np.uint64(buf[at + 3]) << np.uint64(32))
        word |= (np.uint64(buf[at + 4]) << np.uint64(24)) | (np.uint64(buf[at + 5]) << np.uint64(16))
        word |= (np.uint64(buf[at + 6]) << U8) | np.uint64(buf[at + 7])
        word <<= np.uint64(pos & 7)
        in_value = not in_value
        if in_value:  # this word starts at a delta of delta
            used, bits, dod = _dod_in(word)
            if pos + used + bits > end:  # its prefix or its value runs past the chunk
                return TRUNCATED
            delta += _bits(buf, pos + used, 64) if bits == 64 else dod
            pos += used + bits
            stamp += delta
            continue
        used, bits, window = _value_in(word, leading, trailing)
        if pos + used > end:  # the control bits run past the chunk
            return TRUNCATED
        if used == 13:
            if window + bits > 64:
                return BAD_WINDOW
            leading, trailing = window, 64 - window - bits
        if pos + used + bits > end:
            return TRUNCATED
        if bits and used + bits <= 57:  # (no bits: the same value)
            value ^= ((word << np.uint64(used)) >> np.uint64(64 - bits)) << np.uint64(trailing)
        elif bits:
            value ^= _bits(buf, pos + used, bits) << np.uint64(trailing)
        pos += used + bits
        stamps[first + index], values[first + index] = stamp, value
        index += 1
    return OK


@njit(cache=True, nogil=True)
def decode(buf: Array, starts: Array, sizes: Array, offsets: Array, stamps: Array, values: Array) -> tuple[int, int]:
    """Every chunk c (buf[starts[c]:starts[c]+sizes[c]]) into stamps/values (uint64 bits) from offsets[c] to
    offsets[c + 1]; (error code, the failing chunk)."""
    for chunk in range(starts.size):
        count = offsets[chunk + 1] - offsets[chunk]
        if count == 0:
            continue
        code = _chunk_samples(buf, starts[chunk], sizes[chunk], offsets[chunk], count, stamps, values)
        if code != OK:
            return code, chunk
    return OK, -1


@njit(cache=True, nogil=True)
def gather_runs(
    stamps: Array, values: Array, starts: Array, sizes: Array, out_stamps: Array, out_values: Array
) -> None:
    """The runs ``starts[i]:starts[i] + sizes[i]`` of stamps and values, one after another, into the outputs (the
    caller checked that every run lies inside the inputs and that the outputs hold them all)."""
    at = 0
    for run in range(starts.size):
        first, size = starts[run], sizes[run]
        out_stamps[at : at + size] = stamps[first : first + size]
        out_values[at : at + size] = values[first : first + size]
        at += size


@njit(cache=True, nogil=True)
def runs_within(stamps: Array, bounds: Array, start: int, end: int, before: Array, within: Array) -> None:
    """For each series ``i`` (samples ``bounds[i]:bounds[i + 1]``, rising in time): how many of its samples lie
    before ``start`` and how many from ``start`` to ``end`` (both included), by binary search."""
    for series in range(bounds.size - 1):
        first, stop = bounds[series], bounds[series + 1]
        low = first + np.searchsorted(stamps[first:stop], start, side="left")
        high = first + np.searchsorted(stamps[first:stop], end, side="right")
        before[series] = low - first
        within[series] = high - low
