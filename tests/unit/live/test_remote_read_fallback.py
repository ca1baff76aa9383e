"""The remote read without numba: the request asks for samples only (the answer is decoded as before), and
numba is imported only when a remote read happens, never by ``generate``, ``check`` or importing the CLI."""

from __future__ import annotations

import subprocess
import sys

import pytest

from compiler.live import remote_read, xor_chunks
from compiler.promql import Matcher
from tests.venvs import REPO_ROOT

MATCHERS = [Matcher("__name__", "=", "up")]


def test_without_numba_the_request_asks_for_samples_only(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(xor_chunks, "_loaded", [None])  # as when ``import numba`` fails
    assert not remote_read._streamed()
    request = remote_read.encode_read_request(MATCHERS, 5, 6, remote_read._streamed())
    assert request.endswith(b"\x10\x00") and b"\x10\x01" not in request[-4:]


def test_the_streamed_request_prefers_chunks_then_samples() -> None:
    request = remote_read.encode_read_request(MATCHERS, 5, 6, True)
    assert request.endswith(b"\x10\x01\x10\x00")  # accepted_response_types = [STREAMED_XOR_CHUNKS, SAMPLES]
    assert request[:-4] == remote_read.encode_read_request(MATCHERS, 5, 6)[:-2]


def test_numba_is_not_imported_by_the_cli_or_the_remote_read_module() -> None:
    code = "import sys, compiler.cli, compiler.live.remote_read, compiler.live.backtest; print('numba' in sys.modules)"
    result = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, cwd=REPO_ROOT, check=True)
    assert result.stdout.strip() == "False"
