"""Freed memory kept in the process while a backtest replays, for the next arrays to reuse.

glibc's malloc gives every allocation of 128 KiB or more its own ``mmap`` and unmaps it when it is freed
(``M_MMAP_THRESHOLD``; it grows only up to 32 MiB), and returns the top of the heap to the kernel past
128 KiB free (``M_TRIM_THRESHOLD``). A backtest allocates arrays of hundreds of megabytes again and again (a
read's decoded samples, a rule's series x steps), so each one is memory fresh from the kernel, zeroed on its
first touch, page by page. Measured on the 2-core virtual machine this project is developed on, that costs
about a second per gigabyte (the host backs the guest's freed pages again on touch): decoding a 24-hour read
of 9,000 bucket series took 1.3 s into new arrays and 0.6 s into arrays already touched.

``keep_freed_memory`` asks glibc to serve every allocation from the heap and keep what is freed (up to 2 GiB
at its top), so later arrays reuse pages already mapped. The process's resident memory then stays at its peak
until it exits, which a backtest, a short-lived command whose peak is bounded by its time segments, can
afford. Called before the workers are forked (they inherit the setting). Elsewhere (musl, macOS) there is no
``mallopt`` and nothing changes.

Two more settings keep the reuse real (measured on kubelet-pleg-health's day at 7,500 nodes, one process:
100.8 s with 58.5 s of it in the kernel, then 57.0 s with 13.4 s, then 5.2 s in the kernel):

- numpy asks the kernel for transparent huge pages on every array of 4 MiB or more (``madvise``); with
  the kernel's ``defrag`` on ``madvise`` (Debian's default) each such fault compacts memory to find 2 MiB
  and zeroes it: half of that day's CPU was ``clear_page_erms`` under ``do_huge_pmd_anonymous_page``.
  ``keep_freed_memory`` turns that request off for the process (numpy's own switch; the environment's
  ``NUMPY_MADVISE_HUGEPAGE`` does the same for a whole process).
- glibc gives a thread that allocates while another does an arena of its own (heaps of 64 MiB, unmapped
  once wholly free), so a thread's blocks came from fresh pages, not from what the other thread had freed:
  6.4 million minor faults that day, 1.5 million with one arena. One arena (``M_ARENA_MAX``) serves every
  thread from the heap kept above, at the cost of a lock the threads seldom contend for (the reader and
  the evaluation).

Python's cycle collector is paused while a spec replays (``collector_paused``). A replay allocates millions of
containers (a dict of labels per series, lists of a read's offsets) and keeps most of them until its segment
ends, so the collector's full passes, each over every object alive, found nothing to free and took a
seventh of kubelet-pleg-health's day (5.6 s of 39.6 s in 52 full passes, at 7,500 nodes). What a replay
frees, it frees by reference counts; a cycle it made is collected when the collector runs again after it.
"""

from __future__ import annotations

import ctypes
import ctypes.util
import gc
from collections.abc import Iterator
from contextlib import contextmanager

_M_TRIM_THRESHOLD = -1  # glibc malloc.h
_M_MMAP_MAX = -4
_M_ARENA_MAX = -8
_KEEP_AT_TOP = 2**31 - 1  # bytes free at the top of the heap before it is returned (a C int at most)


def keep_freed_memory() -> bool:
    """Keep freed memory in this process (glibc); False where that cannot be set."""
    try:
        libc = ctypes.CDLL(ctypes.util.find_library("c") or "libc.so.6")
        mallopt = libc.mallopt
    except (OSError, AttributeError):
        return False
    _no_huge_page_requests()
    mallopt.argtypes, mallopt.restype = [ctypes.c_int, ctypes.c_int], ctypes.c_int
    settings = ((_M_ARENA_MAX, 1), (_M_MMAP_MAX, 0), (_M_TRIM_THRESHOLD, _KEEP_AT_TOP))
    return all([bool(mallopt(option, value)) for option, value in settings])


def _no_huge_page_requests() -> None:
    """Stop numpy asking for transparent huge pages (its private switch; a numpy without it is left as is)."""
    import numpy._core.multiarray as multiarray  # numpy loads only when a command replays

    switch = getattr(multiarray, "_set_madvise_hugepage", None)
    if callable(switch):
        switch(False)


@contextmanager
def collector_paused() -> Iterator[None]:
    """Python's cycle collector off inside (for the whole process), back as it was after."""
    was = gc.isenabled()
    gc.disable()
    try:
        yield
    finally:
        if was:
            gc.enable()
