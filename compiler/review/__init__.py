"""``slo-compiler diff``: a spec change reviewed by what it does.

Both revisions are compiled; their plans are reduced to facts (``facts``) and compared
(``changes``); for each changed spec the generated test cases are re-run in promtool to
show when each alert now fires and resolves (``behaviour``); ``render`` writes Markdown for
a pull request or text for a terminal. A view like ``explain``: it reads the model, the
plan and the rendered files, never a target's code.
"""

from __future__ import annotations

from compiler.plan import Plan
from compiler.review.behaviour import BehaviourChange, compare_timings, measure
from compiler.review.changes import Review, compare
from compiler.review.facts import plan_facts
from compiler.review.render import render

__all__ = ["Review", "behaviour_of", "compare", "plan_facts", "render", "review"]


def review(base: Plan | None, head: Plan) -> Review:
    """The structural review of going from ``base`` (None: nothing yet) to ``head``."""
    return compare(plan_facts(base) if base else {}, plan_facts(head))


def behaviour_of(
    result: Review, base: Plan | None, head: Plan, base_files: dict[str, bytes], head_files: dict[str, bytes]
) -> dict[str, tuple[BehaviourChange, ...]]:
    """Per changed or added spec: the alert timings that moved, measured with promtool."""
    found: dict[str, tuple[BehaviourChange, ...]] = {}
    for change in result.specs:
        if change.status == "removed":
            continue
        slo = head.of(change.name).slo
        before = {}
        if base is not None and change.status in ("changed", "renamed"):
            before = measure(base.of(change.old_name or change.name).slo, base_files)
        found[change.name] = compare_timings(slo, before, measure(slo, head_files))
    return found
