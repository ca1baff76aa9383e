"""The streamed remote read's decoder (``compiler.live.xor_chunks``) on hand-built answers: XOR chunks written by
a small pure-Python encoder that follows tsdb/chunkenc/xor.go@v2.42.0 (every delta-of-delta bucket, value
windows reused and new, 64 significant bits, NaN, infinities, the stale marker), frames with their CRC32C, a
series split over frames, overlapping chunks, the range cut; then hostile answers: a one-line
``MalformedError``, never an IndexError or a numba exception. Chunks Prometheus itself wrote are checked in
tests/live/test_remote_read.py."""

from __future__ import annotations

import math
import random
import struct

import numpy as np
import pytest

from compiler.live import xor_chunks
from compiler.live.client import AnswerTooBigError
from compiler.live.remote_read import STALE_NAN_BITS, MalformedError, RawSeries

pytestmark = pytest.mark.skipif(xor_chunks.kernels() is None, reason="numba is not installed")

STALE = struct.unpack("<d", struct.pack("<Q", STALE_NAN_BITS))[0]
NOW = 1_764_000_000_000


class Bits:
    """tsdb/chunkenc/bstream.go: bits most significant first."""

    def __init__(self) -> None:
        self.bits: list[int] = []

    def write(self, value: int, count: int) -> None:
        self.bits += [(value >> (count - 1 - index)) & 1 for index in range(count)]

    def byte(self, value: int) -> None:
        self.write(value, 8)

    def data(self) -> bytes:
        padded = self.bits + [0] * (-len(self.bits) % 8)
        return bytes(int("".join(map(str, padded[i : i + 8])), 2) for i in range(0, len(padded), 8))


def _uvarint(value: int) -> bytes:
    value &= (1 << 64) - 1
    out = bytearray()
    while value >= 0x80:
        out.append(value & 0x7F | 0x80)
        value >>= 7
    return bytes(out + bytes([value]))


def _float_bits(value: float) -> int:
    bits: int = struct.unpack(">Q", struct.pack(">d", value))[0]
    return bits


def _bit_range(value: int, size: int) -> bool:
    return -((1 << (size - 1)) - 1) <= value <= 1 << (size - 1)


def _write_value(out: Bits, delta: int, window: list[int]) -> None:
    """xorWrite: ``window`` is (leading, trailing), leading 0xff before the first."""
    if delta == 0:
        out.write(0, 1)
        return
    out.write(1, 1)
    leading = min(64 - delta.bit_length(), 31)
    trailing = (delta & -delta).bit_length() - 1
    if window[0] != 0xFF and leading >= window[0] and trailing >= window[1]:
        out.write(0, 1)
        out.write(delta >> window[1], 64 - window[0] - window[1])
        return
    window[:] = [leading, trailing]
    out.write(1, 1)
    out.write(leading, 5)
    significant = 64 - leading - trailing
    out.write(significant & 63, 6)  # 64 is written as 0
    out.write(delta >> trailing, significant)


def xor_chunk(samples: list[tuple[int, float]]) -> bytes:
    """xorAppender.Append of every sample."""
    out = Bits()
    out.write(len(samples), 16)
    window = [0xFF, 0]
    last_t = last_delta = last_v = 0
    for index, (stamp, value) in enumerate(samples):
        bits = _float_bits(value)
        if index == 0:
            for byte in _uvarint((stamp << 1) ^ (stamp >> 63)):  # zigzag varint
                out.byte(byte)
            out.write(bits, 64)
        elif index == 1:
            for byte in _uvarint(stamp - last_t):
                out.byte(byte)
            _write_value(out, bits ^ last_v, window)
        else:
            dod = (stamp - last_t) - last_delta
            if dod == 0:
                out.write(0, 1)
            else:
                prefix = (
                    next((p, s) for p, s in ((0b10, 14), (0b110, 17), (0b1110, 20)) if _bit_range(dod, s))
                    if (_bit_range(dod, 20))
                    else (0b1111, 64)
                )
                out.write(prefix[0], prefix[0].bit_length())
                out.write(dod & ((1 << prefix[1]) - 1), prefix[1])
            _write_value(out, bits ^ last_v, window)
        if index:
            last_delta = stamp - last_t
        last_t, last_v = stamp, bits
    return out.data()


def _field(number: int, payload: bytes) -> bytes:
    return _uvarint(number << 3 | 2) + _uvarint(len(payload)) + payload


def _crc32c(data: bytes) -> int:
    crc = 0xFFFFFFFF
    for byte in data:
        crc ^= byte
        for _ in range(8):
            crc = (crc >> 1) ^ 0x82F63B78 if crc & 1 else crc >> 1
    return crc ^ 0xFFFFFFFF


def frame(labels: dict[str, str], chunks: list[bytes], encoding: int = 1, crc: int | None = None) -> bytes:
    series = b"".join(_field(1, _field(1, k.encode()) + _field(2, v.encode())) for k, v in sorted(labels.items()))
    for data in chunks:  # min and max ms are left at 0: the decoder does not use them
        chunk = b"\x08\x00\x10\x00\x18" + _uvarint(encoding) + _field(4, data)
        series += _field(2, chunk)
    body = _field(1, series) + b"\x10\x00"
    check = _crc32c(body) if crc is None else crc
    return _uvarint(len(body)) + struct.pack(">I", check) + body


def decode(raw: bytes, start: int = -(2**62), end: int = 2**62) -> list[RawSeries]:
    got = xor_chunks.decode_stream(raw, start, end, 10**8)
    assert got is not None
    # the batch's arrays are its series one after another, and nothing else
    assert got.bounds.tolist() == [0, *np.cumsum([item.timestamps.size for item in got]).tolist()]
    assert got.timestamps.size == got.values.size == got.samples
    return list(got)


def bits_of(series: RawSeries) -> list[tuple[int, int]]:
    return list(zip(series.timestamps.tolist(), series.values.view(np.uint64).tolist(), strict=True))


def expected(samples: list[tuple[int, float]]) -> list[tuple[int, int]]:
    return [(stamp, _float_bits(value)) for stamp, value in samples]


def _intervals(first: int, dods: list[int]) -> list[int]:
    out = [first]
    for dod in dods:
        out.append(out[-1] + dod)
    return out


def _steps(deltas: list[int], values: list[float]) -> list[tuple[int, float]]:
    stamp, out = NOW, []
    for delta, value in zip([0, *deltas], values, strict=False):
        stamp += delta
        out.append((stamp, value))
    return out


CASES = {
    "one sample": [(NOW, 1.5)],
    "two samples": [(NOW, 1.5), (NOW + 15_000, -2.0)],
    "constant": _steps([15_000] * 200, [7.0] * 201),
    "every dod bucket": _steps(
        # deltas of delta 0, +1, -1001 (14 bits), 8192, -8191 (14), 8193, -65535 (17), 65537, 524288 (20),
        # -524287 (20), 524289 (64), then 10**9 and back to 1 (64, negative)
        _intervals(10**6, [0, 1, -1001, 8192, -8191, 8193, -65535, 65537, 524288, -524287, 524289, 10**9, -(10**9)]),
        [float(i) for i in range(16)],
    ),
    "negative deltas of delta to 64 bits": _steps([10**12, 1, 10**12, 3], [1.0, 2.0, 3.0, 4.0, 5.0]),
    "special values": _steps([1000] * 9, [0.0, math.nan, math.inf, -math.inf, STALE, -0.0, 1e-300, 5e-324, 1.0, 0.0]),
    "64 significant bits": [
        (NOW, 0.0),
        (NOW + 1, struct.unpack(">d", struct.pack(">Q", 0x8000000000000001))[0]),
        (NOW + 2, struct.unpack(">d", struct.pack(">Q", 0x7FFFFFFFFFFFFFFF))[0]),
    ],
    "negative first timestamp": [(-5_000, 1.0), (-4_000, 2.0), (3_000, 3.0)],
}


@pytest.mark.parametrize("case", sorted(CASES))
def test_a_chunk_decodes_to_what_was_encoded(case: str) -> None:
    samples = CASES[case]
    [got] = decode(frame({"__name__": "m"}, [xor_chunk(samples)]))
    assert got.labels == {"__name__": "m"}
    assert bits_of(got) == expected(samples)


def test_random_chunks_of_120_samples_and_more_reuse_and_renew_the_value_window() -> None:
    rng = random.Random(4)
    for _ in range(30):
        size = rng.choice([120, 121, 240, 500])
        stamps = sorted(rng.sample(range(NOW, NOW + 10**8), size))
        kinds = [lambda: rng.uniform(-1e6, 1e6), lambda: float(rng.randint(0, 3)), lambda: rng.choice([0.5, 0.25])]
        samples = [(stamp, rng.choice(kinds)()) for stamp in stamps]
        [got] = decode(frame({"job": "x"}, [xor_chunk(samples)]))
        assert bits_of(got) == expected(samples)


def test_frames_of_one_series_join_and_the_range_is_cut_inclusively() -> None:
    first = _steps([10] * 9, [float(i) for i in range(10)])
    second = [(stamp + 100, value + 10) for stamp, value in first]
    other = [(NOW + 5, 42.0)]
    raw = frame({"a": "1"}, [xor_chunk(first)]) + frame({"a": "1"}, [xor_chunk(second)])
    raw += frame({"a": "2"}, [xor_chunk(other)])
    whole = decode(raw)
    assert [item.labels for item in whole] == [{"a": "1"}, {"a": "2"}]
    assert bits_of(whole[0]) == expected(first + second)
    cut = decode(raw, NOW + 20, NOW + 110)
    assert bits_of(cut[0]) == expected([sample for sample in first + second if NOW + 20 <= sample[0] <= NOW + 110])
    assert decode(raw, NOW + 6, NOW + 9) == []  # a series with no sample in the range is left out
    assert [item.labels for item in decode(raw, NOW + 5, NOW + 5)] == [{"a": "2"}]


def raw_frame(labels: list[bytes], chunks: list[bytes]) -> bytes:
    """A frame whose Label messages are given as bytes (``frame`` writes well-formed ones)."""
    series = b"".join(_field(1, label) for label in labels)
    for data in chunks:
        series += _field(2, b"\x08\x00\x10\x00\x18\x01" + _field(4, data))
    body = _field(1, series) + b"\x10\x00"
    return _uvarint(len(body)) + struct.pack(">I", _crc32c(body)) + body


def test_labels_are_read_as_the_server_writes_them_and_as_protobuf_allows() -> None:
    """Fields in either order, an unknown field skipped, a missing value empty, a name given twice read last;
    parts split over frames join only when their label bytes are equal, length included."""
    chunk = [xor_chunk([(NOW, 1.0)])]
    later = [xor_chunk([(NOW + 10, 2.0)])]
    unknown = _field(2, b"v") + b"\x18\x07" + _field(1, b"b")  # value first, then field 3 (a varint), then name
    raw = raw_frame([_field(1, b"a") + _field(2, b"1"), unknown], chunk)
    raw += raw_frame([_field(1, b"a") + _field(2, b"1"), unknown], later)  # the same series, another frame
    raw += raw_frame([_field(1, b"a") + _field(2, b"2"), unknown], later)  # one byte apart: another series
    raw += raw_frame([_field(1, b"a") + _field(2, b"2")], later)  # fewer labels: another series
    raw += raw_frame([_field(1, b"e"), _field(1, b"x") + _field(1, b"y") + _field(2, b"z")], chunk)
    got = decode(raw)
    assert [(item.labels, item.timestamps.tolist()) for item in got] == [
        ({"a": "1", "b": "v"}, [NOW, NOW + 10]),
        ({"a": "2", "b": "v"}, [NOW + 10]),
        ({"a": "2"}, [NOW + 10]),
        ({"e": "", "y": "z"}, [NOW]),
    ]


@pytest.mark.parametrize(
    ("label", "words"),
    [
        (b"\x0a\x05ab", "truncated"),  # a name longer than its Label message
        (b"\x0a\x01a\x12\x02\xff\xfe", "not UTF-8"),
        (b"\x0a\x01a\x1f", "unknown wire type"),
        (b"\x0a\x01a\x18\xff", "longer than its message"),  # an unknown varint field cut short
    ],
)
def test_a_hostile_label_is_a_one_line_error(label: bytes, words: str) -> None:
    with pytest.raises(MalformedError) as caught:
        xor_chunks.decode_stream(raw_frame([label], [xor_chunk([(NOW, 1.0)])]), 0, 2**62, 10**8)
    assert words in str(caught.value) and "\n" not in str(caught.value)


def test_overlapping_chunks_keep_each_timestamp_once() -> None:
    one = [(NOW, 1.0), (NOW + 10, 2.0), (NOW + 20, 3.0)]
    two = [(NOW + 10, 2.0), (NOW + 15, 2.5), (NOW + 30, 4.0)]
    before, after = [(NOW - 5, 7.0)], [(NOW + 1, 8.0), (NOW + 2, 9.0)]
    raw = frame({"a": "0"}, [xor_chunk(before)]) + frame({"a": "1"}, [xor_chunk(one), xor_chunk(two)])
    first, got, last = decode(raw + frame({"a": "2"}, [xor_chunk(after)]))
    assert got.timestamps.tolist() == [NOW, NOW + 10, NOW + 15, NOW + 20, NOW + 30]
    assert got.values.tolist() == [1.0, 2.0, 2.5, 3.0, 4.0]
    assert (bits_of(first), bits_of(last)) == (expected(before), expected(after))


def test_a_chunk_of_another_encoding_asks_for_samples() -> None:
    raw = frame({"a": "1"}, [xor_chunk([(NOW, 1.0)])], encoding=2)
    assert xor_chunks.decode_stream(raw, 0, 2**62, 10**8) is None


def test_an_empty_answer_has_no_series() -> None:
    assert decode(b"") == []


GOOD = frame({"a": "1"}, [xor_chunk(_steps([15_000] * 30, [float(i % 5) for i in range(31)]))])


@pytest.mark.parametrize(
    ("raw", "words"),
    [
        (frame({"a": "1"}, [xor_chunk([(NOW, 1.0)])], crc=1), "CRC32C"),
        (b"\xff\xff\xff\xff\x7f" + b"\x00" * 40, "longer than 64 MiB"),
        (frame({"a": "1"}, [b"\xff\xff\x01"]), "claims more samples"),
        (frame({"a": "1"}, [b"\x00\x03\x01\x02"]), "truncated"),
        (frame({"a": "1"}, [b"\x00"]), "shorter than its 2-byte header"),
        (frame({"a": "1"}, [b"\x00\x02" + b"\xff" * 11]), "malformed varint"),
        (GOOD[:-3], "truncated"),
        (b"\x05\x00\x00\x00\x00\x0f\x01\x02\x03\x04", "CRC32C"),
    ],
)
def test_a_hostile_answer_is_a_one_line_error(raw: bytes, words: str) -> None:
    with pytest.raises(MalformedError) as caught:
        xor_chunks.decode_stream(raw, 0, 2**62, 10**8)
    assert words in str(caught.value) and "\n" not in str(caught.value)


def test_every_truncation_and_every_flipped_byte_is_an_error_or_an_answer() -> None:
    """Whatever the bytes, a MalformedError or series: never an IndexError or a crash of the compiled code."""
    rng = random.Random(7)
    body = GOOD[5:]  # the frame's data: re-framed with a right CRC, so that the decoder sees the damage
    for cut in range(len(GOOD)):
        with pytest.raises(MalformedError):
            xor_chunks.decode_stream(GOOD[:cut], 0, 2**62, 10**8) if cut else _raise()
    for _ in range(400):
        damaged = bytearray(body)
        damaged[rng.randrange(len(damaged))] = rng.randrange(256)
        raw = _uvarint(len(damaged)) + struct.pack(">I", _crc32c(bytes(damaged))) + bytes(damaged)
        try:
            xor_chunks.decode_stream(raw, 0, 2**62, 10**8)
        except MalformedError as exc:
            assert "\n" not in str(exc)


def _raise() -> None:
    raise MalformedError("empty")


def test_more_samples_than_the_limit_is_too_big() -> None:
    with pytest.raises(AnswerTooBigError):
        xor_chunks.decode_stream(GOOD, 0, 2**62, 10)


def test_warming_compiles_every_kernel_on_the_types_of_a_real_answer() -> None:
    assert xor_chunks.warm()
    module = xor_chunks.kernels()
    assert module is not None
    signatures = {len(module.walk.signatures), len(module.decode.signatures)}
    assert min(signatures) >= 1
    decode(GOOD)
    assert {len(module.walk.signatures), len(module.decode.signatures)} == signatures  # nothing compiled again


def test_a_cut_with_overlapping_chunks_and_a_series_left_empty_keeps_each_ones_samples() -> None:
    one = [(NOW, 1.0), (NOW + 10, 2.0), (NOW + 20, 3.0)]
    two = [(NOW + 10, 2.0), (NOW + 15, 2.5), (NOW + 30, 4.0)]
    early, late = [(NOW - 50, 9.0), (NOW - 40, 8.0)], [(NOW + 12, 5.0), (NOW + 40, 6.0)]
    raw = frame({"a": "1"}, [xor_chunk(one), xor_chunk(two)]) + frame({"a": "2"}, [xor_chunk(early)])
    first, last = decode(raw + frame({"a": "3"}, [xor_chunk(late)]), NOW + 10, NOW + 30)
    assert (first.labels, first.timestamps.tolist()) == ({"a": "1"}, [NOW + 10, NOW + 15, NOW + 20, NOW + 30])
    assert (last.labels, bits_of(last)) == ({"a": "3"}, expected(late[:1]))


def test_a_series_read_again_reuses_its_labels_from_the_memo_and_decodes_the_same() -> None:
    """The label memo (a replay reads each selector once per segment): the second answer's series are the first
    one's label dicts, each with its labels as sorted pairs, and decode to what no memo gives; a series of other
    labels is decoded on its own."""
    first = frame({"job": "a", "instance": "x"}, [xor_chunk([(NOW, 1.0), (NOW + 60_000, 2.0)])])
    first += frame({"job": "a", "instance": "y"}, [xor_chunk([(NOW, 3.0)])])
    later = frame({"job": "a", "instance": "x"}, [xor_chunk([(NOW + 120_000, 4.0)])])
    later += frame({"job": "b", "instance": "y"}, [xor_chunk([(NOW + 120_000, 5.0)])])
    memo: xor_chunks.LabelMemo = {}
    one = xor_chunks.decode_stream(first, 0, 2**62, 10**6, memo)
    assert len(memo) == 2
    two = xor_chunks.decode_stream(later, 0, 2**62, 10**6, memo)
    plain = xor_chunks.decode_stream(later, 0, 2**62, 10**6)
    assert one is not None and two is not None and plain is not None
    assert len(memo) == 3
    assert two.labels[0] is one.labels[0]
    assert two.labels[1] == {"job": "b", "instance": "y"} and two.labels[1] is not one.labels[1]
    assert two.keys == [tuple(sorted(labels.items())) for labels in two.labels] == plain.sort_keys()
    assert [(s.labels, bits_of(s)) for s in two] == [(s.labels, bits_of(s)) for s in plain]


class _StopError(Exception):
    """The reference decoder's error: the kernel's code for it."""


def reference_samples(chunk: bytes) -> list[tuple[int, int]]:
    """xorIterator.Next of a whole chunk, bit by bit, in plain Python: the kernel's answer for the chunk, or
    ``_StopError`` with its error code (1 truncated, 5 malformed varint, 6 a window wider than 64 bits)."""
    whole, end = int.from_bytes(chunk, "big"), len(chunk) * 8
    pos = 16

    def bits(count: int) -> int:
        nonlocal pos
        if pos + count > end:
            raise _StopError(1)
        pos += count
        return (whole >> (end - pos)) & ((1 << count) - 1)

    def uvarint() -> int:
        value = 0
        for index in range(10):
            byte = bits(8)
            if byte < 0x80:
                if index == 9 and byte > 1:
                    raise _StopError(5)
                return value | byte << 7 * index
            value |= (byte & 0x7F) << 7 * index
        raise _StopError(5)

    count = whole >> (end - 16) if end >= 16 else 0
    raw = uvarint()
    stamp, value, out = (raw >> 1) ^ -(raw & 1), bits(64), []
    out.append((stamp, value))
    delta = leading = trailing = 0
    for index in range(1, count):
        if index == 1:
            delta = uvarint()
        else:
            ones = 0
            while ones < 4 and bits(1):
                ones += 1
            size = (0, 14, 17, 20, 64)[ones]
            dod = bits(size) if size else 0
            if 0 < size < 64 and dod > 1 << (size - 1):
                dod -= 1 << size
            delta += dod
        stamp += delta
        if bits(1):
            if bits(1):
                leading, size = bits(5), bits(6) or 64
                if leading + size > 64:
                    raise _StopError(6)
                trailing = 64 - leading - size
            value ^= bits(64 - leading - trailing) << trailing
        out.append((stamp, value))
    return [(s & (2**64 - 1), v & (2**64 - 1)) for s, v in out]


def test_the_kernel_decodes_damaged_chunks_as_the_reference_decoder_does() -> None:
    """Random chunks (every delta-of-delta width, values kept, XORed in the last window and in a new one),
    then bits flipped or the chunk cut short: the compiled decoder gives the reference's samples, or its
    error for the same chunk, whatever the damage (the kernel reads a word past a field before checking it
    against the chunk's end)."""
    module = xor_chunks.kernels()
    assert module is not None
    rng = random.Random(11)
    steps = [0, 1, 15_000, 15_001, 14_999, 60_000, -(10**6), 10**6, 2**40, -(2**19), 2**20 + 5]
    checked = failed = 0
    for _ in range(600):
        stamp, value, samples = rng.randint(-(10**12), 10**13), rng.choice([0.0, 1.0, math.nan, -2.5]), []
        for _ in range(rng.randint(1, 150)):
            stamp += rng.choice(steps)
            pick = rng.random()
            if pick > 0.7:
                value = struct.unpack("<d", struct.pack("<Q", rng.getrandbits(64)))[0]
            elif pick > 0.4:
                value += rng.choice([1.0, 0.5, 1e-9, 3.0])
            samples.append((stamp, value))
        chunk = bytearray(xor_chunk(samples))
        if rng.random() < 0.5:
            for _ in range(rng.randint(1, 3)):
                chunk[rng.randrange(len(chunk))] ^= 1 << rng.randrange(8)
        else:
            del chunk[max(2, len(chunk) - rng.randint(0, 6)) :]
        count = int.from_bytes(chunk[:2], "big")
        if count == 0 or count > 4 * len(chunk) + 2:
            continue  # refused before the kernel (xor_chunks._samples)
        arr = np.zeros(len(chunk) + 16, np.uint8)
        arr[: len(chunk)] = np.frombuffer(bytes(chunk), np.uint8)
        stamps, values = np.zeros(count, np.uint64), np.zeros(count, np.uint64)
        one = np.zeros(1, np.int64)
        code, _ = module.decode(arr, one, one + len(chunk), np.array([0, count], np.int64), stamps, values)
        try:
            want, want_code = reference_samples(bytes(chunk)), 0
        except _StopError as stop:
            want, want_code = [], stop.args[0]
        assert code == want_code, (bytes(chunk).hex(), code, want_code)
        if not code:
            assert list(zip(stamps.tolist(), values.tolist(), strict=True)) == want
        checked, failed = checked + 1, failed + bool(code)
    assert checked > 500 and 100 < failed < checked - 100  # both outcomes, many times
