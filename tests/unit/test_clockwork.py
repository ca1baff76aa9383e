"""tests/clockwork.py, the early start of clock-bound scenarios: a result is what the run returned (or its
failure, raised in the test), a run starts once however many tests read it, and the session's end stops a
run still waiting and closes what it left open."""

from __future__ import annotations

import time
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from types import SimpleNamespace
from typing import Any

import pytest

from tests import clockwork

STARTS: list[Path] = []
CLOSED: list[str] = []


@contextmanager
def engine(name: str) -> Iterator[str]:
    try:
        yield name
    finally:
        CLOSED.append(name)


@clockwork.scenario(early=False)
def counted_run(clock: clockwork.Clock) -> tuple[str, bool]:
    STARTS.append(clock.workdir)
    clock.ready()
    return clock.stack.enter_context(engine("counted")), clock.workdir.is_dir()


@clockwork.scenario(early=False)
def failing_run(clock: clockwork.Clock) -> None:
    raise ValueError("the engine did not start")


@clockwork.scenario(early=False)
def waiting_run(clock: clockwork.Clock) -> None:
    clock.stack.enter_context(engine("waiting"))
    clock.ready()
    clock.wait(600)


@clockwork.scenario(early=False)
def preparing_run(clock: clockwork.Clock) -> None:
    time.sleep(0.3)
    STARTS.append(clock.workdir)  # the in-process part: the session waits for it
    clock.ready()
    clock.wait(600)


@clockwork.scenario()
def early_run(clock: clockwork.Clock) -> str:
    return "early"


@clockwork.needs(early_run)
def needs_early() -> None:
    """What a test that reads ``early_run`` looks like to the collection."""


def test_the_result_is_what_the_run_returned_once_and_close_releases_it() -> None:
    STARTS.clear()
    assert clockwork.result(counted_run) == ("counted", True)
    assert clockwork.result(counted_run) == ("counted", True)
    assert len(STARTS) == 1 and "counted" not in CLOSED
    clockwork.close(counted_run)
    assert "counted" in CLOSED and not STARTS[0].exists()


def test_a_failing_run_fails_the_test_that_reads_it() -> None:
    with pytest.raises(ValueError, match="did not start"):
        clockwork.result(failing_run)
    clockwork.close(failing_run)


def test_close_stops_a_run_that_still_waits_and_closes_its_engines() -> None:
    scenario = clockwork._SCENARIOS[clockwork._key(waiting_run)]
    scenario.start()
    time.sleep(0.2)
    began = time.monotonic()
    clockwork.close(waiting_run)
    assert time.monotonic() - began < 30 and "waiting" in CLOSED


def test_the_session_goes_on_only_once_the_run_is_ready() -> None:
    STARTS.clear()
    scenario = clockwork._SCENARIOS[clockwork._key(preparing_run)]
    scenario.start()
    assert len(STARTS) == 1 and scenario.thread is not None and scenario.thread.is_alive()
    clockwork.close(preparing_run)


def test_collecting_a_test_that_needs_a_run_starts_it_and_collect_only_does_not() -> None:
    item = SimpleNamespace(function=needs_early)

    def session(collect_only: bool) -> Any:
        return SimpleNamespace(items=[item], config=SimpleNamespace(option=SimpleNamespace(collectonly=collect_only)))

    scenario = clockwork._SCENARIOS[clockwork._key(early_run)]
    clockwork.start_collected(session(True))
    assert scenario.thread is None
    clockwork.start_collected(session(False))
    assert scenario.thread is not None
    assert clockwork.result(early_run) == "early"
    clockwork.close(early_run)
