"""The remote-read decoder on hand-built ReadResponses: Prometheus's own encoding (gogo: a zero value or
timestamp left out), other field orders, records whose lengths differ, bytes that look like records, and
every truncation of an answer (a ``LiveError``, never an IndexError)."""

from __future__ import annotations

import contextlib
import math
import random
import struct

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from compiler.live import remote_read
from compiler.live.client import LiveError
from compiler.live.remote_read import (
    STALE_NAN_BITS,
    RawSeries,
    decode_read_response,
    encode_read_request,
    is_stale,
)
from compiler.promql import Matcher

STALE = struct.unpack("<d", struct.pack("<Q", STALE_NAN_BITS))[0]
NOW = 1_764_000_000_000  # ms: a 6-byte varint


def varint(value: int) -> bytes:
    value &= (1 << 64) - 1
    out = bytearray()
    while value >= 0x80:
        out.append(value & 0x7F | 0x80)
        value >>= 7
    out.append(value)
    return bytes(out)


def field(number: int, payload: bytes) -> bytes:
    return varint(number << 3 | 2) + varint(len(payload)) + payload


def sample(stamp: int, value: float, order: str = "gogo") -> bytes:
    """A Sample as Prometheus writes it (zero fields left out), or timestamp first, or both always written."""
    value_part = b"\x09" + struct.pack("<d", value)
    stamp_part = b"\x10" + varint(stamp)
    if order == "gogo":
        body = (value_part if value != 0 else b"") + (stamp_part if stamp != 0 else b"")
    elif order == "stamp-first":
        body = stamp_part + value_part
    elif order == "extra":  # an unknown field 3 after the timestamp, which does not end the record then
        body = (value_part if value != 0 else b"") + stamp_part + b"\x18\x01"
    else:
        body = value_part + stamp_part
    return field(2, body)


def series(labels: dict[str, str], samples: list[tuple[int, float]], order: str = "gogo", tail: bytes = b"") -> bytes:
    body = b"".join(field(1, field(1, k.encode()) + field(2, v.encode())) for k, v in labels.items())
    return field(1, body + b"".join(sample(t, v, order) for t, v in samples) + tail)


def response(*timeseries: bytes) -> bytes:
    return field(1, b"".join(timeseries))


@pytest.fixture
def slow(monkeypatch: pytest.MonkeyPatch) -> list[int]:
    """The samples read one by one in Python (the fallback), by position."""
    calls: list[int] = []
    real = remote_read._sample_slow

    def counted(buf: bytes, pos: int, end: int) -> tuple[int, float]:
        calls.append(pos)
        return real(buf, pos, end)

    monkeypatch.setattr(remote_read, "_sample_slow", counted)
    return calls


def bits(values: np.ndarray) -> list[int]:
    return [int(x) for x in np.asarray(values, dtype=np.float64).view(np.uint64)]


def expect(decoded: list[RawSeries], wanted: list[tuple[dict[str, str], list[tuple[int, float]]]]) -> None:
    assert [item.labels for item in decoded] == [labels for labels, _ in wanted]
    for item, (_, samples) in zip(decoded, wanted, strict=True):
        assert item.timestamps.dtype == np.int64
        assert item.values.dtype == np.float64
        assert item.timestamps.tolist() == [t for t, _ in samples]
        assert bits(item.values) == bits(np.array([v for _, v in samples], dtype=np.float64))


def test_uniform_records_decode_exactly() -> None:
    samples = [(NOW + 15_000 * i, v) for i, v in enumerate([1.5, -2.0, math.inf, -math.inf, STALE, 1e-300, 7.0])]
    wanted = [({"__name__": "up", "job": "a"}, samples), ({"__name__": "up", "job": "b"}, samples[:1])]
    expect(decode_read_response(response(*(series(labels, s) for labels, s in wanted))), wanted)


def test_zero_values_left_out_make_records_of_two_lengths() -> None:
    values = [0.0, 0.0, 1.0, 0.0, 2.0, 2.0, 0.0, 0.0, 0.0, 3.0] * 20
    samples = [(NOW + 1000 * i, v) for i, v in enumerate(values)]
    raw = response(series({"__name__": "c"}, samples))
    assert raw.count(b"\x12\x07\x10") == values.count(0.0)  # 9-byte records among 18-byte ones
    expect(decode_read_response(raw), [({"__name__": "c"}, samples)])


@pytest.mark.parametrize(
    ("values", "order", "records"),
    [
        ([1.0, 2.0] * 500, "gogo", 0),
        ([0.0, 0.0, 1.0, 0.0, 2.5] * 200, "gogo", 0),  # zero values: two record lengths, still vectorised
        ([0.0, 1.0] * 500, "gogo", 0),  # every other record short: still one pass
        ([0.0, 1.0] * 500, "stamp-first", 1000),  # another encoder's order: record by record
    ],
)
def test_prometheus_encoding_is_decoded_without_a_python_loop_per_sample(
    values: list[float], order: str, records: int, slow: list[int]
) -> None:
    samples = [(NOW + 1000 * i, v) for i, v in enumerate(values)]
    expect(decode_read_response(response(series({"s": "1"}, samples, order))), [({"s": "1"}, samples)])
    assert len(slow) == records


def test_a_zero_timestamp_and_negative_ones() -> None:
    samples = [(-(2**62), 1.0), (-5, 0.0), (0, 4.0), (3, 0.0), (2**40, 5.0), (2**62, 6.0)]
    expect(decode_read_response(response(series({"a": "b"}, samples))), [({"a": "b"}, samples)])


@pytest.mark.parametrize("order", ["stamp-first", "always", "extra"])
def test_other_encoders_field_orders(order: str) -> None:
    mixed = [(NOW + i, float(i % 3)) for i in range(50)]
    uniform = [(NOW + i, 1.0 + i) for i in range(50)]
    both = response(series({"x": "y"}, mixed, order), series({"x": "z"}, uniform, order))
    expect(decode_read_response(both), [({"x": "y"}, mixed), ({"x": "z"}, uniform)])


@pytest.mark.parametrize(
    "tricky",
    [
        [0x12, 0x07, 0x10] * 2 + [3, 0x40],  # a start whose timestamp varint does not end with it
        [0x12, 0x02, 0x10, 0x05, 0x12, 0x02, 0x10, 0x40],  # two well-formed records inside a value
    ],
)
def test_doubles_whose_bytes_look_like_records(tricky: list[int], slow: list[int]) -> None:
    value = struct.unpack("<d", bytes(tricky))[0]
    samples = [(NOW + 1000 * i, value if i % 3 else 0.0) for i in range(300)]
    expect(decode_read_response(response(series({"t": "1"}, samples))), [({"t": "1"}, samples)])
    assert slow == []  # still one vectorised pass


def test_a_sample_whose_value_runs_past_its_record_is_malformed() -> None:
    # 12 05 09 <4 bytes>: a value field cut short by its record's length, the series going on after it
    body = field(1, field(1, b"a") + field(2, b"b")) + b"\x12\x05\x09\x00\x00\xf0\x3f" + sample(NOW, 1.0)
    with pytest.raises(LiveError, match="truncated sample value"):
        decode_read_response(response(field(1, body)))


def test_exemplars_and_unknown_fields_after_the_samples_are_skipped() -> None:
    samples = [(NOW + i, 1.0 + i) for i in range(10)]
    tail = field(3, field(2, b"\x00" * 8)) + b"\x28\x05"  # an exemplar, then an unknown varint field 5
    expect(decode_read_response(response(series({"e": "1"}, samples, tail=tail))), [({"e": "1"}, samples)])


def test_several_query_results_and_empty_answers() -> None:
    one = series({"a": "1"}, [(NOW, 1.0)])
    assert decode_read_response(b"") == []
    assert decode_read_response(field(1, b"")) == []
    expect(decode_read_response(response(one) + response(one)), [({"a": "1"}, [(NOW, 1.0)])] * 2)


def test_every_truncation_is_a_live_error() -> None:
    samples = [(NOW + 1000 * i, [0.0, 1.0, STALE][i % 3]) for i in range(12)]
    raw = response(series({"__name__": "m", "job": "j"}, samples), series({"__name__": "n"}, samples))
    for cut in range(1, len(raw)):
        with pytest.raises(LiveError):
            decode_read_response(raw[:cut])


def test_random_bytes_give_series_or_a_live_error_never_another_exception() -> None:
    rng = random.Random(7)
    raw = response(series({"__name__": "m"}, [(NOW + 1000 * i, float(i % 2)) for i in range(40)]))
    for _ in range(2000):
        mutated = bytearray(raw)
        for _ in range(rng.randint(1, 4)):
            mutated[rng.randrange(len(mutated))] = rng.randrange(256)
        with contextlib.suppress(LiveError):
            decode_read_response(bytes(mutated))


def test_out_of_order_samples_are_refused() -> None:
    with pytest.raises(LiveError, match="time order"):
        decode_read_response(response(series({"a": "1"}, [(NOW, 1.0), (NOW - 1, 2.0)])))


def test_is_stale_is_the_marker_only() -> None:
    values = np.array([STALE, math.nan, 0.0, math.inf, STALE])
    assert is_stale(values).tolist() == [True, False, False, False, True]


def test_the_request_encodes_each_matcher_type() -> None:
    matchers = [
        Matcher("__name__", "=", "up"),
        Matcher("a", "!=", ""),
        Matcher("b", "=~", "x.*"),
        Matcher("c", "!~", "y"),
    ]
    raw = encode_read_request(matchers, NOW, NOW + 1)
    query = b"\x08" + varint(NOW) + b"\x10" + varint(NOW + 1)
    for kind, (name, value) in enumerate([("__name__", "up"), ("a", ""), ("b", "x.*"), ("c", "y")]):
        query += field(3, b"\x08" + bytes([kind]) + field(2, name.encode()) + field(3, value.encode()))
    assert raw == field(1, query) + b"\x10\x00"


values_strategy = st.one_of(
    st.sampled_from([0.0, 1.0, -1.0, math.inf, -math.inf, math.nan, STALE, 5e-324]),
    st.floats(allow_nan=False),
)


@settings(max_examples=200, deadline=None)
@given(
    st.lists(
        st.tuples(st.lists(values_strategy, max_size=60), st.integers(1, 2**40), st.sampled_from(["gogo", "always"])),
        max_size=4,
    )
)
def test_round_trip(cases: list[tuple[list[float], int, str]]) -> None:
    wanted = []
    parts = []
    for index, (values, step, order) in enumerate(cases):
        samples = [(NOW - 2**40 + step * i, v) for i, v in enumerate(values)]
        samples = [(t, 0.0 if v == 0 else v) for t, v in samples]  # -0.0 is written as a left-out 0
        labels = {"__name__": "m", "i": str(index)}
        wanted.append((labels, samples))
        parts.append(series(labels, samples, order))
    expect(decode_read_response(response(*parts)), wanted)
