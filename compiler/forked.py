"""Work shared between this process and one forked child, for the stages whose work divides into items.

A large tree's compile is work on each spec (its schema check and model: ``source.project``) and on
each output (``targets.fanout``), every item a pure function of what this process already holds, so it
divides without changing a byte. Both processes take the next item's number from one queue (a pipe: a
one-byte read from a pipe is atomic) until none is left; the child sends back what it computed when the
queue is empty, pickled, and ``run_shared`` answers every item's result in the items' order.

Only where it is safe (``available``): on Linux (macOS's system libraries are not safe to use after a
fork), with two CPUs for this process and no other thread (a fork copies only the calling thread, so a
lock another thread held would stay held in the child). Whatever the child does not send back (an
internal error, a signal, a child slower than ``grace_s`` after this process's own work) is computed
again here, so an error is raised here as it would be in one process, and Ctrl-C stops both: the child
is killed and reaped by its PID.
"""

from __future__ import annotations

import contextlib
import gc
import os
import pickle
import select
import signal
import sys
import threading
import time
from collections.abc import Callable, Iterator, Sequence
from typing import Any, TypeVar

Result = TypeVar("Result")
MAX_ITEMS = 255  # the queue holds each item's number as one byte


def available() -> bool:
    """Whether a forked child can share the work here: Linux, this thread alone, two CPUs for this process."""
    if not sys.platform.startswith("linux") or threading.active_count() != 1:
        return False
    return len(os.sched_getaffinity(0)) >= 2


def _same(value: Any) -> Any:
    return value


def run_shared(
    items: Sequence[Callable[[], Result]],
    order: Sequence[int],
    grace_s: float,
    sent: Callable[[Result], Any] = _same,
    received: Callable[[Any], Result] = _same,
) -> list[Result]:
    """Every item's result, in the items' order, computed here and in a forked child.

    ``order`` is the order the items are taken in (the largest first, so the last ones to finish are
    small); ``grace_s`` how long the child may still take once this process has nothing left to do. The
    child sends ``sent(result)`` and this process reads it back with ``received``: a result can name
    objects this process holds instead of pickling copies of them.
    """
    if len(items) > MAX_ITEMS or sorted(order) != list(range(len(items))):
        raise ValueError(f"work of {len(items)} items shared in the order {list(order)}")
    queue_out, queue_in = os.pipe()
    os.write(queue_in, bytes(order))  # a few hundred bytes at most: far below a pipe's capacity
    os.close(queue_in)
    results_out, results_in = os.pipe()
    sys.stdout.flush()
    sys.stderr.flush()
    gc.freeze()  # this process's objects out of the collector's reach: its passes in the child would copy their pages
    try:
        pid = os.fork()
    except BaseException:
        gc.unfreeze()
        for end in (queue_out, results_out, results_in):
            os.close(end)
        raise
    if pid == 0:  # the child: it never returns
        os.close(results_out)
        _child(items, queue_out, results_in, sent)
    gc.unfreeze()
    os.close(results_in)
    results: dict[int, Result] = {}
    try:
        for index in _taken(queue_out):
            results[index] = items[index]()
        payload = _read_all(results_out, grace_s)
        if payload is not None:  # the child closed its end: it has exited or is exiting
            status, pid = _reaped(pid), 0
            for index, value in pickle.loads(payload) if status == 0 else ():
                results[index] = received(value)
    finally:
        os.close(queue_out)
        os.close(results_out)
        if pid:
            _stop(pid)
    return [results[index] if index in results else items[index]() for index in range(len(items))]


def _taken(queue: int) -> Iterator[int]:
    """The items' numbers this process takes from the queue, one at a time, until it is empty."""
    while True:
        taken = os.read(queue, 1)
        if not taken:
            return
        yield taken[0]


def _child(items: Sequence[Callable[[], Result]], queue: int, results: int, sent: Callable[[Result], Any]) -> None:
    """Compute items until the queue is empty, send them back and exit; stop taking items at the first error
    (the parent computes that item again and raises it)."""
    code = 0
    try:
        signal.signal(signal.SIGINT, signal.SIG_DFL)  # Ctrl-C ends the child at once: the parent handles it
        done: list[tuple[int, Any]] = []
        try:
            for index in _taken(queue):
                done.append((index, sent(items[index]())))
        except Exception:  # an internal error: not sent, so the parent computes this item again and raises it
            pass
        payload = pickle.dumps(done, protocol=pickle.HIGHEST_PROTOCOL)
        view = memoryview(payload)
        while view:
            view = view[os.write(results, view) :]
    except BaseException:
        code = 1
    finally:
        os._exit(code)  # no atexit handlers, no flush of the parent's buffers: they are the parent's


def _read_all(source: int, grace: float) -> bytes | None:
    """Everything the child writes until it closes its end, or None when that takes longer than ``grace``."""
    chunks: list[bytes] = []
    deadline = time.monotonic() + grace
    while True:
        left = deadline - time.monotonic()
        if left <= 0 or not select.select([source], [], [], left)[0]:
            return None
        chunk = os.read(source, 1 << 20)
        if not chunk:
            return b"".join(chunks)
        chunks.append(chunk)


def _reaped(pid: int) -> int:
    """The child's exit status, once it has exited."""
    _, status = os.waitpid(pid, 0)
    return os.waitstatus_to_exitcode(status)


def _stop(pid: int) -> None:
    """Kill the child by its PID and reap it (it is done or stuck: either way its work is not used)."""
    with contextlib.suppress(ProcessLookupError):
        os.kill(pid, signal.SIGKILL)
    with contextlib.suppress(ChildProcessError):
        os.waitpid(pid, 0)
