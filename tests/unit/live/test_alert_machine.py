"""The alerting-rule state machine fed a whole segment at once equals the machine fed one step at a time.

``AlertMachine.feed_columns`` finds each series' runs of present steps with numpy instead of walking every
step over thousands of unit alerts; it must give exactly the step-by-step firings (pending since, fired,
resolved), across segments that carry alerts over, for any ``for`` and any pattern of presence.
"""

from __future__ import annotations

import itertools

import numpy as np
import pytest

from compiler.live.backtest import AlertMachine, Interval, Rule
from compiler.live.columns import Columns

MIN = 60_000


def _columns(present: np.ndarray, names: list[str]) -> Columns:
    labels = [{"__name__": "x", "node": name} for name in names]
    return Columns(labels, np.where(present, 1.0, 0.0), present)


def _by_steps(rule: Rule, times: np.ndarray, parts: list[tuple[Columns, int]]) -> AlertMachine:
    machine = AlertMachine("spec", rule)
    for found, start in parts:
        steps = found.vectors()
        for index in range(start, len(times)):
            machine.feed(int(times[index]), steps[index])
    return machine


def _at_once(rule: Rule, times: np.ndarray, parts: list[tuple[Columns, int]]) -> AlertMachine:
    machine = AlertMachine("spec", rule)
    for found, start in parts:
        machine.feed_columns(times, found, start)
    return machine


def _firings(machine: AlertMachine) -> list[tuple[str, int, int, int | None]]:
    return sorted((i.labels["node"], i.active_ms, i.fired_ms, i.resolved_ms) for i in machine.done)


def _segments(present: np.ndarray, cuts: list[int]) -> list[tuple[int, int]]:
    """Consecutive segments [begin, end) of the steps, each fed from its first step."""
    edges = [0, *cuts, present.shape[1]]
    return [(a, b) for a, b in itertools.pairwise(edges) if b > a]


@pytest.mark.parametrize("seed", range(40))
def test_feeding_a_segment_at_once_equals_feeding_each_step(seed: int) -> None:
    rng = np.random.default_rng(seed)
    rows, steps = int(rng.integers(1, 12)), int(rng.integers(2, 60))
    present = rng.random((rows, steps)) < rng.choice([0.2, 0.5, 0.9])
    for_ms = int(rng.choice([0, 1, 3, 10])) * MIN
    rule = Rule("alert", "NodeDown", "x > 0", {"severity": "ticket"}, for_ms=for_ms)
    names = [f"n{row}" for row in range(rows)]
    times = 1_000 * MIN + np.arange(steps, dtype=np.int64) * MIN
    cuts = sorted({int(c) for c in rng.integers(1, steps, size=int(rng.integers(0, 4)))})
    # Each segment is a fresh Columns over its own steps, as the replay's segments are; only some rows appear.
    by_steps = AlertMachine("spec", rule)
    at_once = AlertMachine("spec", rule)
    for begin, end in _segments(present, cuts):
        shown = [row for row in range(rows) if present[row, begin:end].any() or rng.random() < 0.3]
        found = _columns(present[shown, begin:end], [names[row] for row in shown])
        vectors = found.vectors()
        for index in range(end - begin):
            by_steps.feed(int(times[begin + index]), vectors[index])
        at_once.feed_columns(times[begin:end], found, 0)
    assert _firings(at_once) == _firings(by_steps)
    assert {k for k, a in at_once.active.items() if a.state != "inactive"} == {
        k for k, a in by_steps.active.items() if a.state != "inactive"
    }


def test_a_segment_fed_from_its_overlap_continues_the_alerts_it_carries() -> None:
    """A segment overlapping the one before (its warm-up) is fed from ``start``: a firing alert present there
    carries on, one absent at ``start`` resolves there, a pending one is dropped."""
    rule = Rule("alert", "NodeDown", "x > 0", {"severity": "ticket"}, for_ms=2 * MIN)
    times = np.arange(10, dtype=np.int64) * MIN
    present = np.array(
        [
            [1, 1, 1, 1, 1, 1, 1, 1, 0, 0],  # a: fires at 2m, carried over at 5m, resolves at 8m
            [0, 1, 1, 1, 1, 0, 0, 0, 0, 0],  # b: fires at 3m, absent at 5m: resolved at 5m
            [0, 0, 0, 1, 1, 0, 1, 1, 1, 1],  # c: pending at 3m, dropped at 5m, pending again at 6m, fires at 8m
        ],
        dtype=bool,
    )
    first = _columns(present[:, :5], ["a", "b", "c"])
    second = _columns(present[:, 3:], ["a", "b", "c"])  # steps 3..9, fed from step 5 (index 2)
    at_once = AlertMachine("spec", rule)
    at_once.feed_columns(times[:5], first, 0)
    at_once.feed_columns(times[3:], second, 2)
    expected = [("a", 0, 2 * MIN, 8 * MIN), ("b", MIN, 3 * MIN, 5 * MIN), ("c", 6 * MIN, 8 * MIN, None)]
    assert _firings(at_once) == expected
    assert _firings(at_once) == _firings(_by_steps(rule, times, [(_columns(present, ["a", "b", "c"]), 0)]))


def test_what_the_columns_do_not_take_is_fed_step_by_step() -> None:
    """``keep_firing_for`` and two rows giving one alert's labels take the per-step machine, same answers."""
    times = np.arange(8, dtype=np.int64) * MIN
    present = np.array([[1, 1, 1, 0, 0, 1, 0, 0], [0, 0, 0, 1, 1, 0, 0, 0]], dtype=bool)
    kept = Rule("alert", "NodeDown", "x > 0", {}, for_ms=MIN, keep_firing_for_ms=2 * MIN)
    found = _columns(present, ["a", "b"])
    assert _firings(_at_once(kept, times, [(found, 0)])) == _firings(_by_steps(kept, times, [(found, 0)]))
    same = Columns([{"__name__": "x", "node": "a"}, {"__name__": "y", "node": "a"}], np.ones((2, 8)), present)
    rule = Rule("alert", "NodeDown", "x > 0", {}, for_ms=MIN)
    expected: list[Interval] = _by_steps(rule, times, [(same, 0)]).done
    assert _firings(_at_once(rule, times, [(same, 0)])) == sorted(
        (i.labels["node"], i.active_ms, i.fired_ms, i.resolved_ms) for i in expected
    )
    assert len(expected) == 1  # the two rows take turns as one alert: one firing, never resolved
