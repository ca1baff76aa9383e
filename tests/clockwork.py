"""Clock-bound scenarios started early, so their waits overlap the rest of the session instead of holding a
worker idle.

Some tests start real engines and wait for ``for``, ``keep_firing_for`` and evaluations to happen on the
clock (a minute or more of real time for a few seconds of CPU). A test module registers such a run with
``@clockwork.scenario``: a function of a ``Clock`` (an ExitStack for what must live until the test is done,
a temp dir, ``wait`` instead of ``time.sleep``) that starts the engines, waits, collects what the test
asserts and returns it; each test that reads it says so with ``@clockwork.needs(run)``. As soon as a
session has collected such a test (in each pytest-xdist worker that collected it: with worksteal any
worker may run the test, so each starts its own run, which costs a few seconds of CPU and is correct
whichever worker runs it), the run starts in a background thread; the test (or its fixture) calls
``result``, which waits for the run (usually long done) and re-raises its failure. ``close`` stops its
engines (by PID) and removes its temp dir; the session's end closes every run, finished or not.

The run is in a thread of a process whose tests may patch global state meanwhile (``targets.TARGETS``,
``Path.write_bytes``, the working directory): its in-process part (compiling, rendering, writing files) comes
before it calls ``clock.ready()``, and until then the session waits (tests/servers.py finds its programs
on the PATH the session started with, which a test may empty for a moment). After ``ready`` it only runs
programs, talks HTTP and waits.

Every assertion about behaviour stays in the test: the scenario records facts (and checks only its own
preconditions, such as the specs compiling). A scenario's timeline is relative to
its own start, so it does not matter how long after it the test runs.
"""

from __future__ import annotations

import contextlib
import shutil
import tempfile
import threading
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, TypeVar

import pytest

T = TypeVar("T")
F = TypeVar("F", bound=Callable[..., Any])
_NEEDS = "clockwork_needs"  # the attribute ``needs`` sets on a test function: the keys of its scenarios


class StoppedError(Exception):
    """The session ended before the scenario's clock ran out."""


@dataclass
class Clock:
    """What a scenario runs with."""

    workdir: Path  # its own temp dir, removed by close
    stack: contextlib.ExitStack = field(default_factory=contextlib.ExitStack)  # closed by close
    stop: threading.Event = field(default_factory=threading.Event)  # set by close
    prepared: threading.Event = field(default_factory=threading.Event)

    def ready(self) -> None:
        """The in-process part is done: the session goes on while the engines run."""
        self.prepared.set()

    def wait(self, seconds: float) -> None:
        """``time.sleep`` for a scenario: raises StoppedError when the session ends meanwhile."""
        if seconds > 0 and self.stop.wait(seconds):
            raise StoppedError


Run = Callable[[Clock], T]


@dataclass
class _Scenario:
    run: Run[Any]
    early: bool  # started as soon as a test that needs it is collected (False: when a test asks)
    clock: Clock | None = None
    thread: threading.Thread | None = None
    value: Any = None
    error: BaseException | None = None

    def start(self) -> None:
        """Start the run in its thread and return once it is ready (or over)."""
        if self.thread is not None:
            return
        self.clock = Clock(Path(tempfile.mkdtemp(prefix=f"clockwork-{self.run.__name__}-")))
        self.thread = threading.Thread(target=self._body, name=f"clockwork {self.run.__name__}", daemon=True)
        self.thread.start()
        self.clock.prepared.wait()

    def _body(self) -> None:
        assert self.clock is not None
        try:
            self.value = self.run(self.clock)
        except BaseException as exc:  # handed to the test that asks for the result
            self.error = exc
        finally:
            self.clock.ready()

    def close(self) -> None:
        clock = self.clock
        if clock is None:
            return
        clock.stop.set()
        try:
            if self.thread is not None:
                self.thread.join(timeout=60)
            clock.stack.close()
        finally:  # an engine that failed to stop still leaves no temp dir behind
            shutil.rmtree(clock.workdir, ignore_errors=True)
            self.clock, self.thread, self.value, self.error = None, None, None, None


# By module file and name: a module imported twice (by a conftest as ``tests.engines.test_x``, then by pytest's
# collection as ``test_x``) has one scenario of each name, the last imported's (so it shares the module
# globals of the tests that read it) unless the first has started.
_SCENARIOS: dict[tuple[str, str], _Scenario] = {}


def _key(run: Run[Any]) -> tuple[str, str]:
    return run.__code__.co_filename, run.__qualname__


def scenario(*, early: bool = True) -> Callable[[Run[T]], Run[T]]:
    """Register ``run`` as a clock-bound scenario; ``early=False`` (say, when the tests that need it will be
    skipped) leaves it to start when a test asks for its result."""

    def register(run: Run[T]) -> Run[T]:
        known = _SCENARIOS.get(_key(run))
        if known is None or known.thread is None:
            _SCENARIOS[_key(run)] = _Scenario(run, early)
        return run

    return register


def needs(*runs: Run[Any]) -> Callable[[F], F]:
    """Mark a test as reading ``runs``: collecting it starts them."""

    def mark(test: F) -> F:
        setattr(test, _NEEDS, (*getattr(test, _NEEDS, ()), *(_key(run) for run in runs)))
        return test

    return mark


def result(run: Run[T]) -> T:
    """What ``run`` returned, waiting for it (and starting it when nothing has): its failure is raised here."""
    found = _SCENARIOS[_key(run)]
    found.start()
    assert found.thread is not None
    found.thread.join()
    if found.error is not None:
        raise found.error
    value: T = found.value
    return value


def close(run: Run[Any]) -> None:
    """Stop the engines ``run`` left running and remove its temp dir (a later ``result`` runs it again)."""
    _SCENARIOS[_key(run)].close()


def start_collected(session: pytest.Session) -> None:
    """Start every scenario a collected test needs (none for --collect-only)."""
    if session.config.option.collectonly:
        return
    for item in session.items:
        for key in getattr(getattr(item, "function", None), _NEEDS, ()):
            if key in _SCENARIOS and _SCENARIOS[key].early:
                _SCENARIOS[key].start()


def close_all() -> None:
    """Close every scenario, each even when an earlier one fails to close; the first failure is raised."""
    failures: list[BaseException] = []
    for found in _SCENARIOS.values():
        try:
            found.close()
        except Exception as exc:  # re-raised below, once every scenario is closed
            failures.append(exc)
    if failures:
        raise failures[0]
