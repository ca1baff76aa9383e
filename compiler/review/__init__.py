"""``slo-compiler diff``: a spec change reviewed by what it does.

Both revisions are compiled; their plans are reduced to facts (``facts``) and compared
(``changes``); for each alert whose rule changed, the figures a reviewer can act on are
shown before -> after (``figures``: detection and budget spent for burn alerts, from the
plan's alert-quality model; for range alerts the bound and the first fire on the range's
own generated case, re-run in promtool by ``behaviour``), with any declared scenario the
change breaks; ``render`` writes Markdown for a pull request or text for a terminal. A view
like ``explain``: it reads the model, the plan and the rendered files, never a target's code.
"""

from __future__ import annotations

from compiler.plan import Plan, SpecPlan
from compiler.review.behaviour import measure, scenario_breaks
from compiler.review.changes import Review, SpecChange, compare
from compiler.review.facts import plan_facts
from compiler.review.figures import Behaviour, alert_behaviour, rule_changed
from compiler.review.render import render

__all__ = ["Behaviour", "Review", "behaviour_of", "compare", "plan_facts", "render", "review"]


def review(base: Plan | None, head: Plan) -> Review:
    """The structural review of going from ``base`` (None: nothing yet) to ``head``."""
    return compare(plan_facts(base) if base else {}, plan_facts(head))


def _spec_behaviour(
    change: SpecChange, specs: tuple[SpecPlan | None, SpecPlan], files: tuple[dict[str, bytes], dict[str, bytes]]
) -> Behaviour:
    """One spec's figures; promtool runs only on the cases of changed range alerts and on the scenarios."""
    changed = [alert for alert in change.alerts if alert.status != "removed" and rule_changed(alert)]
    if not changed:
        return Behaviour()
    base, head = specs
    names = {alert.key for alert in changed} | {alert.old_key for alert in changed if alert.old_key}
    ranges = {a.name for spec in (base, head) if spec for a in spec.alerts if a.kind == "range" and a.name in names}

    def wanted(case: str) -> bool:
        return case.startswith("scenario ") or case.split(": ", 1)[0] in ranges

    before = measure(base.slo, files[0], wanted) if base else {}
    after = measure(head.slo, files[1], wanted)
    return Behaviour(alert_behaviour(specs, change.alerts, (before, after)), scenario_breaks(head.slo, before, after))


def behaviour_of(
    result: Review, base: Plan | None, head: Plan, base_files: dict[str, bytes], head_files: dict[str, bytes]
) -> dict[str, Behaviour]:
    """Per changed or added spec: what its changed alerts do before and after, and the scenarios it breaks."""
    found: dict[str, Behaviour] = {}
    for change in result.specs:
        if change.status == "removed":
            continue
        old = None
        if base is not None and change.status in ("changed", "renamed"):
            old = base.of(change.old_name or change.name)
        behaviour = _spec_behaviour(change, (old, head.of(change.name)), (base_files, head_files))
        if behaviour.alerts or behaviour.scenarios:
            found[change.name] = behaviour
    return found
