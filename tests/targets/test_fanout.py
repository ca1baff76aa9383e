"""Rendering a large plan in two processes (compiler/targets/fanout.py): the same files, and nothing lost or left
running when the child fails, is killed or the parent fails."""

from __future__ import annotations

import dataclasses
import os
import signal
import sys
import threading
from collections.abc import Sequence
from pathlib import Path

import pytest

from compiler import targets
from compiler.model import Model
from compiler.plan import Plan, SpecPlan, plan
from compiler.targets import PER_SPEC, fanout, render_plan
from tests.support import LIBRARY_SPECS, compile_tree

PARENT = os.getpid()


@pytest.fixture(scope="module")
def library() -> Model:
    return compile_tree(LIBRARY_SPECS)


def _in_child() -> bool:
    return os.getpid() != PARENT


def test_the_library_renders_the_same_files_in_the_same_order_in_two_processes(
    library: Model, monkeypatch: pytest.MonkeyPatch
) -> None:
    planned = plan(library)
    assert len(planned.specs) >= fanout.MIN_SPECS, "the library is below the fan-out threshold: test a larger plan"
    monkeypatch.setattr(fanout, "worth_it", lambda count: False)
    alone = render_plan(planned)
    forked: list[int] = []
    real_fork = os.fork

    def counted_fork() -> int:
        pid = real_fork()
        forked.append(pid)
        return pid

    monkeypatch.setattr(fanout, "worth_it", lambda count: True)
    monkeypatch.setattr(os, "fork", counted_fork)
    shared = render_plan(planned)
    assert len(forked) == 1 and forked[0] > 0
    assert list(shared.items()) == list(alone.items())  # paths, order and bytes
    assert any(path.startswith("prometheus/tests/") for path in shared) and PER_SPEC


def _items(log: Path | None = None) -> list[fanout.Item]:
    def item(number: int) -> fanout.Item:
        def rendered() -> fanout.Outcome:
            if log is not None:
                with log.open("a", encoding="utf-8") as out:
                    out.write(f"{number} {os.getpid()}\n")
            return fanout.Outcome({f"file-{number}": str(number).encode() * 100_000})

        return rendered

    return [item(number) for number in range(20)]


EXPECTED = [fanout.Outcome({f"file-{n}": str(n).encode() * 100_000}) for n in range(20)]


def _gated(items: list[fanout.Item], marker: Path, in_child: fanout.Item | None = None) -> list[fanout.Item]:
    """Items 0 and 1, taken first, run ``in_child`` in the child (themselves when it is None); in this process
    they wait for the child to have taken one of them (it writes ``marker``), so the child takes one of the two
    whatever the scheduler does."""

    def gate(good: fanout.Item) -> fanout.Item:
        def rendered() -> fanout.Outcome:
            if _in_child():
                marker.write_text("taken", encoding="utf-8")
                return good() if in_child is None else in_child()
            waited = threading.Event()
            for _ in range(2000):
                if marker.exists() or waited.wait(0.01):
                    break
            return good()

        return rendered

    return [gate(items[0]), gate(items[1]), *items[2:]]


def test_both_processes_take_items_and_every_outcome_comes_back_in_order(tmp_path: Path) -> None:
    log = tmp_path / "taken"
    outcomes = fanout.run_shared(_gated(_items(log), tmp_path / "marker"), list(range(20)), {})
    assert outcomes == EXPECTED
    taken = [line.split() for line in log.read_text(encoding="utf-8").splitlines()]
    assert {pid for _, pid in taken} - {str(PARENT)}, "the child took no item"
    assert sorted(int(number) for number, _ in taken) == list(range(20)), "an item rendered twice or never"


def test_an_item_that_fails_in_the_child_is_rendered_again_here(tmp_path: Path) -> None:
    marker = tmp_path / "marker"

    def fails() -> fanout.Outcome:
        raise RuntimeError("a compiler bug, in the child only")

    outcomes = fanout.run_shared(_gated(_items(), marker, fails), list(range(20)), {})
    assert marker.exists(), "the child never took a gated item"
    assert outcomes == EXPECTED


def test_a_child_killed_by_a_signal_leaves_its_items_to_this_process(tmp_path: Path) -> None:
    marker = tmp_path / "marker"

    def killed() -> fanout.Outcome:
        os.kill(os.getpid(), signal.SIGKILL)
        raise AssertionError("unreachable")

    outcomes = fanout.run_shared(_gated(_items(), marker, killed), list(range(20)), {})
    assert marker.exists(), "the child never took a gated item"
    assert outcomes == EXPECTED


def test_an_error_here_is_raised_and_the_child_is_killed_and_reaped(tmp_path: Path) -> None:
    child = tmp_path / "child"

    def everywhere() -> fanout.Outcome:
        if _in_child():
            child.write_text(str(os.getpid()), encoding="utf-8")
            threading.Event().wait(30)  # still rendering when the parent fails
            return fanout.Outcome({})
        while not child.exists():
            threading.Event().wait(0.01)
        raise RuntimeError("a compiler bug")

    with pytest.raises(RuntimeError, match="a compiler bug"):
        fanout.run_shared([everywhere, everywhere], [0, 1], {})
    with pytest.raises(ProcessLookupError):  # killed and reaped: no process, not even a zombie
        os.kill(int(child.read_text(encoding="utf-8")), 0)


def test_the_problems_the_child_finds_come_back_at_their_specs(library: Model, tmp_path: Path) -> None:
    """The child names each spec it could not compile; the problems come back holding this process's SLO."""
    marker = tmp_path / "marker"

    def problems(slo_index: int) -> fanout.Item:
        def rendered() -> fanout.Outcome:
            slo = library.slos[slo_index]
            return fanout.Outcome({}, ((slo, f"cannot prove {slo.name}"),))

        return rendered

    expected = [problems(0)(), problems(1)()]
    child_first = _gated([problems(0), problems(1)], marker)
    slos = {slo.name: slo for slo in library.slos}
    outcomes = fanout.run_shared(child_first, [0, 1], slos)
    assert marker.exists(), "the child never took an item"
    assert outcomes == expected
    assert all(found[0][0] is library.slos[index] for index, found in enumerate(o.problems for o in outcomes))


def test_a_small_plan_or_a_second_thread_renders_in_this_process() -> None:
    assert not fanout.worth_it(fanout.MIN_SPECS - 1)
    stop = threading.Event()
    thread = threading.Thread(target=stop.wait)
    thread.start()
    try:
        assert not fanout.worth_it(fanout.MIN_SPECS)
    finally:
        stop.set()
        thread.join()
    here = sys.platform.startswith("linux") and threading.active_count() == 1 and len(os.sched_getaffinity(0)) >= 2
    assert fanout.worth_it(fanout.MIN_SPECS) == here


def test_a_plan_of_any_size_fits_the_queue_in_blocks_that_cover_every_spec_once(
    library: Model, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The queue holds at most 255 items: a larger plan gets larger blocks, never a fan-out it refuses."""
    seen: list[tuple[str, SpecPlan]] = []

    def recorder(name: str) -> targets.PerSpec:
        def per_spec(_: Plan, specs: Sequence[SpecPlan]) -> dict[str, bytes]:
            seen.extend((name, spec) for spec in specs)
            return {}

        return per_spec

    monkeypatch.setattr(targets, "TARGETS", tuple((name, lambda _: {}) for name, _ in targets.TARGETS))
    monkeypatch.setattr(targets, "PER_SPEC", {name: (recorder(name), None) for name in targets.PER_SPEC})
    planned = plan(library)
    for copies in (1, 10, 70):
        large = dataclasses.replace(planned, specs=planned.specs * copies)
        items, order = targets._work(large)
        assert len(items) <= 255 and sorted(order) == list(range(len(items))), (copies, len(items))
        seen.clear()
        fanout.run_here(items)
        assert seen == [(name, spec) for name in targets.PER_SPEC for spec in large.specs]
