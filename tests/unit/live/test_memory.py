"""A backtest process keeps the memory it frees (``compiler.live.memory``): a large array freed and allocated
again reuses the same pages instead of new ones from the kernel. Run in a Python child: the setting is the
whole process's."""

from __future__ import annotations

import json
import platform
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest

REPO = Path(__file__).resolve().parents[3]

CHILD = """
import json, sys, threading
import numpy._core.multiarray
from compiler.live.memory import keep_freed_memory

def resident_mb():
    with open("/proc/self/statm") as statm:
        return int(statm.read().split()[1]) * 4096 / 2**20

kept = keep_freed_memory() if sys.argv[1] == "keep" else None
huge_pages = numpy._core.multiarray._set_madvise_hugepage(True)  # returns the setting it replaces
block = bytearray(256 * 2**20)  # touched: zeroed pages
before = resident_mb()
del block
after = resident_mb()

def in_a_thread(found):  # blocks a reader thread allocates: glibc would give it an arena of its own
    blocks = [bytearray(24 * 2**20) for _ in range(8)]
    found["before"] = resident_mb()
    del blocks
    found["after"] = resident_mb()

thread = {}
worker = threading.Thread(target=in_a_thread, args=(thread,))
worker.start()
worker.join()
print(json.dumps({"kept": kept, "huge_pages": huge_pages, "before": before, "after": after, "thread": thread}))
"""


def child(mode: str) -> dict[str, Any]:
    found = subprocess.run([sys.executable, "-c", CHILD, mode], capture_output=True, text=True, check=True, cwd=REPO)
    answer: dict[str, Any] = json.loads(found.stdout)
    return answer


@pytest.mark.skipif(platform.libc_ver()[0] != "glibc", reason="mallopt is glibc's")
def test_freed_memory_stays_in_the_process_only_when_asked() -> None:
    kept, plain = child("keep"), child("plain")
    assert kept["kept"] is True
    assert kept["after"] > kept["before"] - 16  # the 256 MiB stay mapped
    assert plain["after"] < plain["before"] - 150  # by default they go back to the kernel
    # A thread's blocks reuse what the main thread freed (one arena for every thread, not fresh pages in an
    # arena of its own), and stay mapped once freed.
    assert kept["thread"]["before"] < kept["after"] + 16
    assert kept["thread"]["after"] > kept["thread"]["before"] - 16
    assert plain["thread"]["after"] < plain["thread"]["before"] - 150


def test_a_replaying_process_asks_for_no_transparent_huge_pages() -> None:
    """numpy's default asks for them on every array of 4 MiB or more; each fault then compacts and zeroes 2 MiB."""
    assert child("plain")["huge_pages"] is True
    assert child("keep")["huge_pages"] is False


def test_the_cycle_collector_is_paused_inside_and_restored_after() -> None:
    """A replay pauses Python's cycle collector (``collector_paused``) and leaves it as it found it, even when the
    replay raises."""
    import gc

    from compiler.live.memory import collector_paused

    assert gc.isenabled()
    with pytest.raises(RuntimeError), collector_paused():
        assert not gc.isenabled()
        raise RuntimeError
    assert gc.isenabled()
    gc.disable()
    try:
        with collector_paused():
            assert not gc.isenabled()
        assert not gc.isenabled()
    finally:
        gc.enable()
