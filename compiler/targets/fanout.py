"""A large plan rendered on two cores: the targets' work shared between this process and one forked child.

Rendering is most of compiling a large tree (1,000 specs: 6.9 s of 8.2 s on one core), and every target
is a pure function of the plan, so the work divides without changing a byte. It is a list of items, each
a whole target or, for the targets that write one file per spec, the files of a block of specs, shared
by ``compiler.forked``: both processes take the next item until none is left, and ``run_shared`` answers
every item's outcome in the items' order, so the caller merges exactly what one process would have
rendered (a test holds the two byte-identical).

Only where it pays and is safe (``worth_it``): a plan of ``MIN_SPECS`` specs or more (below that, the
fork and the copy back cost about what they save), where ``forked.available`` allows a fork. Whatever
the child does not send back is rendered again here, so an error is raised here as it would be in one
process.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass

from compiler import forked
from compiler.model import SLO

MIN_SPECS = 50  # on 2 cores, 25 specs break even; 50 render in 0.76x the time, 200 in 0.61x (docs/development.md)
CHILD_GRACE_S = 60.0  # how long the child may still take once this process has nothing left to render


@dataclass(frozen=True)
class Outcome:
    """One item's files, or the specs its target could not compile (a ``TargetError``'s problems)."""

    files: dict[str, bytes]
    problems: tuple[tuple[SLO, str], ...] = ()


Item = Callable[[], Outcome]


def worth_it(spec_count: int) -> bool:
    """Whether rendering ``spec_count`` specs in two processes pays here, and is safe to start."""
    return spec_count >= MIN_SPECS and forked.available()


def run_here(items: Sequence[Item]) -> list[Outcome]:
    """Every item's outcome, rendered in this process, in order."""
    return [item() for item in items]


def run_shared(items: Sequence[Item], order: Sequence[int], slos: Mapping[str, SLO]) -> list[Outcome]:
    """Every item's outcome, in the items' order, rendered here and in a forked child; ``order`` is the order
    the items are taken in (the largest first, so the last ones to finish are small); ``slos`` names the specs
    whose problems the child reports by name, so they come back holding this process's SLOs."""

    def sent(outcome: Outcome) -> tuple[dict[str, bytes], list[tuple[str, str]]]:
        return outcome.files, [(slo.name, message) for slo, message in outcome.problems]

    def received(value: tuple[dict[str, bytes], list[tuple[str, str]]]) -> Outcome:
        files, problems = value
        return Outcome(files, tuple((slos[name], message) for name, message in problems))

    return forked.run_shared(items, order, CHILD_GRACE_S, sent, received)
