"""Inputs for the conditions a spec's pages need (``assumes``, ``confirmed_by``).

A condition reads series of its own (the compiler refuses one that reads the SLI's), so its
inputs are separate from the SLI's and constant through a test: each slice's series at
values that make the condition hold, or break it, or absent. The values are found with the
steady-state evaluator: the inputs held at 1, 0, 2 and the numbers the expression compares
with (and one either side), the first assignment that yields a series per slice (holds)
and the first that yields none (broken).
"""

from __future__ import annotations

import itertools
from collections.abc import Iterator, Sequence
from dataclasses import dataclass
from typing import Literal

from compiler import promql
from compiler.model import Condition
from compiler.promql import evaluate as minieval
from compiler.text.numbers import clean_number, go_float

State = Literal["holds", "broken", "absent"]
MAX_ASSIGNMENTS = 4096  # value combinations tried per condition before it is reported as unprovable
_BASE_VALUES = (1.0, 0.0, 2.0)


class ConditionError(ValueError):
    """No input makes the condition hold, or none breaks it; the message says which and why."""


@dataclass(frozen=True)
class ConditionSeries:
    """One input series of a condition in one slice, and its value when the condition holds or is broken."""

    labels: dict[str, str]
    counter: bool
    holds: float
    broken: float | None  # None: only its absence breaks the condition (``count(x) > 0``)

    def value(self, state: State) -> float | None:
        return None if state == "absent" else self.holds if state == "holds" else self.broken


def _candidates(expr: str) -> list[float]:
    """1, 0, 2, then every number the expression states and one either side of it."""
    values = list(_BASE_VALUES)
    for literal in promql.number_literals(expr):
        for value in (literal, literal + 1, literal - 1, literal * 2):
            value = clean_number(value)
            if value >= 0 and value not in values:
                values.append(value)
    return values


def _assignments(count: int, values: Sequence[float]) -> Iterator[tuple[float, ...]]:
    return itertools.islice(itertools.product(values, repeat=count), MAX_ASSIGNMENTS)


def _what(condition: Condition) -> str:
    """How a message names the condition: a staleness SLI's ``while`` (no ``why``) by its field."""
    if condition.name == "while" and not condition.why:
        return "sli.staleness.while"
    return f"{condition.kind} '{condition.name}'"


def solve(
    condition: Condition, labels: Sequence[dict[str, str]], counters: Sequence[bool]
) -> tuple[tuple[float, ...], tuple[float, ...] | None]:
    """(values where it holds, values where it is broken) for the series ``labels`` of one slice; None for
    the second when no value breaks it, only the series' absence (a condition on their existence)."""
    values = _candidates(condition.expr)
    holds: tuple[float, ...] | None = None
    broken: tuple[float, ...] | None = None
    for assignment in _assignments(len(labels), values):
        series = [
            minieval.Series(lab, value, counter)
            for lab, value, counter in zip(labels, assignment, counters, strict=True)
        ]
        try:
            result = minieval.evaluate(condition.expr, series)
        except minieval.Unsupported as exc:
            raise ConditionError(
                f"cannot derive test inputs for {_what(condition)}: {exc}; the generated tests "
                "compute the condition for their inputs, so write it without that construct"
            ) from exc
        present = bool(result) if isinstance(result, list) else result == result  # a scalar always "holds"
        if present and holds is None:
            holds = assignment
        if not present and broken is None:
            broken = assignment
        if holds is not None and broken is not None:
            return holds, broken
    if holds is not None:
        return holds, None
    raise ConditionError(
        f"cannot derive test inputs for {_what(condition)}: no values of its series make it "
        f"hold (tried each at {', '.join(go_float(v) for v in values)}); the generated tests must "
        "show the pages with the condition holding and broken, so write it as a comparison of its series "
        "(e.g. 'max by (cluster) (x) > 0')"
    )
