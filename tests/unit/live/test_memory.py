"""A backtest process keeps the memory it frees (``compiler.live.memory``): a large array freed and allocated
again reuses the same pages instead of new ones from the kernel. Run in a Python child: the setting is the
whole process's."""

from __future__ import annotations

import json
import platform
import subprocess
import sys
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parents[3]

CHILD = """
import json, sys
from compiler.live.memory import keep_freed_memory

def resident_mb():
    with open("/proc/self/statm") as statm:
        return int(statm.read().split()[1]) * 4096 / 2**20

kept = keep_freed_memory() if sys.argv[1] == "keep" else None
block = bytearray(256 * 2**20)  # touched: zeroed pages
before = resident_mb()
del block
print(json.dumps({"kept": kept, "before": before, "after": resident_mb()}))
"""


def child(mode: str) -> dict[str, float]:
    found = subprocess.run([sys.executable, "-c", CHILD, mode], capture_output=True, text=True, check=True, cwd=REPO)
    answer: dict[str, float] = json.loads(found.stdout)
    return answer


@pytest.mark.skipif(platform.libc_ver()[0] != "glibc", reason="mallopt is glibc's")
def test_freed_memory_stays_in_the_process_only_when_asked() -> None:
    kept, plain = child("keep"), child("plain")
    assert kept["kept"] is True
    assert kept["after"] > kept["before"] - 16  # the 256 MiB stay mapped
    assert plain["after"] < plain["before"] - 200  # by default they go back to the kernel
