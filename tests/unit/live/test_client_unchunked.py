"""A chunked answer's framing parsed from blocks of the stream (``client._unchunked``): chunks of any size across
block edges, extensions and trailers, the last chunk ending the body even with bytes after it; a size that is
not hex, a chunk without its CRLF, a stream that ends early and a body past the cap are refused."""

from __future__ import annotations

import http.client
import io
import random

import pytest

from compiler.live import client
from compiler.live.client import _TooBigError, _unchunked


def framed(pieces: list[bytes], last: bytes = b"0\r\n\r\n") -> bytes:
    return b"".join(b"%x\r\n%s\r\n" % (len(piece), piece) for piece in pieces) + last


def read(raw: bytes, cap: int = 10**9) -> bytes:
    return _unchunked(io.BufferedReader(io.BytesIO(raw)), cap)


def test_chunks_of_every_size_across_block_edges_give_the_body(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(client, "_READ_BYTES", 7)  # every chunk and size line split over blocks
    rng = random.Random(5)
    pieces = [bytes(rng.randrange(256) for _ in range(rng.choice([1, 2, 9, 30, 255]))) for _ in range(200)]
    assert read(framed(pieces)) == b"".join(pieces)
    assert read(framed([b"a" * 4096, b"b"])) == b"a" * 4096 + b"b"


def test_extensions_trailers_and_bytes_after_the_last_chunk_are_not_the_body() -> None:
    raw = b"3;name=value\r\nabc\r\n2 \r\nde\r\n0\r\nX-Trailer: 1\r\n\r\n"
    assert read(raw) == b"abcde"
    assert read(framed([b"xyz"]) + b"HTTP/1.1 200 OK\r\n") == b"xyz"
    assert read(b"0\r\n\r\n") == b""


@pytest.mark.parametrize(
    "raw",
    [
        b"3\r\nabc\r\n",  # ends before the last chunk
        b"3\r\nab",  # ends inside a chunk
        b"zz\r\nabc\r\n0\r\n\r\n",  # not hex
        b"\r\nabc\r\n0\r\n\r\n",  # no size
        b"-3\r\nabc\r\n0\r\n\r\n",  # not hex either
        b"3\r\nabcd\r\n0\r\n\r\n",  # a chunk longer than its size
        b"1" * 17 + b"\r\n",  # more than 64 bits of size
        b"3" + b" " * 5000,  # a size line that never ends
        b"",
    ],
)
def test_broken_framing_is_an_incomplete_read(raw: bytes) -> None:
    with pytest.raises(http.client.IncompleteRead):
        read(raw)


def test_a_body_past_the_cap_is_refused() -> None:
    assert read(framed([b"a" * 10, b"b" * 10]), cap=20) == b"a" * 10 + b"b" * 10
    with pytest.raises(_TooBigError):
        read(framed([b"a" * 10, b"b" * 11]), cap=20)
