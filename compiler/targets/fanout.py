"""A large plan rendered on two cores: the targets' work shared between this process and one forked child.

Rendering is most of compiling a large tree (1,000 specs: 6.9 s of 8.2 s on one core), and every target
is a pure function of the plan, so the work divides without changing a byte. It is a list of items, each
a whole target or, for the targets that write one file per spec, the files of a block of specs. Both
processes take the next item from one queue (a pipe holding the items' numbers: a one-byte read from a
pipe is atomic) until none is left; the child sends back what it rendered when the queue is empty, and
``run_shared`` answers every item's outcome in the items' order, so the caller merges exactly what one process
would have rendered (a test holds the two byte-identical).

Only where it pays and is safe (``worth_it``): a plan of ``MIN_SPECS`` specs or more (below that, the
fork and the copy back cost about what they save), on Linux (macOS's system libraries are not safe to use
after a fork), with two CPUs for this process and no other thread (a fork copies only the calling thread,
so a lock another thread held would stay held in the child). Whatever the child does not send back (an
internal error, a signal, a child slower than ``CHILD_GRACE_S`` after the parent's own work) is rendered
again here, so an error is raised here as it would be in one process, and Ctrl-C stops both: the child is
killed and reaped by its PID.
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
from collections.abc import Callable, Iterator, Mapping, Sequence
from dataclasses import dataclass

from compiler.model import SLO

MIN_SPECS = 50  # on 2 cores, 25 specs break even; 50 render in 0.76x the time, 200 in 0.61x (docs/development.md)
CHILD_GRACE_S = 60.0  # how long the child may still take once this process has nothing left to render
_MAX_ITEMS = 255  # the queue holds each item's number as one byte


@dataclass(frozen=True)
class Outcome:
    """One item's files, or the specs its target could not compile (a ``TargetError``'s problems)."""

    files: dict[str, bytes]
    problems: tuple[tuple[SLO, str], ...] = ()


Item = Callable[[], Outcome]


def worth_it(spec_count: int) -> bool:
    """Whether rendering ``spec_count`` specs in two processes pays here, and is safe to start."""
    if spec_count < MIN_SPECS or not sys.platform.startswith("linux") or threading.active_count() != 1:
        return False
    return len(os.sched_getaffinity(0)) >= 2


def run_here(items: Sequence[Item]) -> list[Outcome]:
    """Every item's outcome, rendered in this process, in order."""
    return [item() for item in items]


def run_shared(items: Sequence[Item], order: Sequence[int], slos: Mapping[str, SLO]) -> list[Outcome]:
    """Every item's outcome, in the items' order, rendered here and in a forked child; ``order`` is the order
    the items are taken in (the largest first, so the last ones to finish are small); ``slos`` names the specs
    whose problems the child reports by name."""
    if len(items) > _MAX_ITEMS or sorted(order) != list(range(len(items))):
        raise ValueError(f"fan-out of {len(items)} items in the order {list(order)}")
    queue_out, queue_in = os.pipe()
    os.write(queue_in, bytes(order))  # a few hundred bytes at most: far below a pipe's capacity
    os.close(queue_in)
    results_out, results_in = os.pipe()
    sys.stdout.flush()
    sys.stderr.flush()
    gc.freeze()  # the plan's objects out of the collector's reach: its passes in the child would copy their pages
    try:
        pid = os.fork()
    except BaseException:
        gc.unfreeze()
        for end in (queue_out, results_out, results_in):
            os.close(end)
        raise
    if pid == 0:  # the child: it never returns
        os.close(results_out)
        _child(items, queue_out, results_in)
    gc.unfreeze()
    os.close(results_in)
    outcomes: dict[int, Outcome] = {}
    try:
        for index in _taken(queue_out):
            outcomes[index] = items[index]()
        payload = _read_all(results_out, CHILD_GRACE_S)
        if payload is not None:  # the child closed its end: it has exited or is exiting
            status, pid = _reaped(pid), 0
            for index, files, problems in pickle.loads(payload) if status == 0 else ():
                outcomes[index] = Outcome(files, tuple((slos[name], message) for name, message in problems))
    finally:
        os.close(queue_out)
        os.close(results_out)
        if pid:
            _stop(pid)
    return [outcomes[index] if index in outcomes else items[index]() for index in range(len(items))]


def _taken(queue: int) -> Iterator[int]:
    """The items' numbers this process takes from the queue, one at a time, until it is empty."""
    while True:
        taken = os.read(queue, 1)
        if not taken:
            return
        yield taken[0]


def _child(items: Sequence[Item], queue: int, results: int) -> None:
    """Render items until the queue is empty, send them back and exit; stop taking items at the first error
    (the parent renders that item again and raises it)."""
    code = 0
    try:
        signal.signal(signal.SIGINT, signal.SIG_DFL)  # Ctrl-C ends the child at once: the parent handles it
        done: list[tuple[int, dict[str, bytes], list[tuple[str, str]]]] = []
        try:
            for index in _taken(queue):
                outcome = items[index]()
                done.append((index, outcome.files, [(slo.name, message) for slo, message in outcome.problems]))
        except Exception:  # an internal error: not sent, so the parent renders this item again and raises it
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
