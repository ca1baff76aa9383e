"""Disruptive mitigation steps must say which check passes first (issue 24, "runbooks for 3 a.m.").

A step that drains, cordons, deletes, stops or restarts something is what on-call runs half
awake, and on a false positive it harms a healthy cluster (a clock-sync alert that cordons
healthy nodes, a staleness alert that restarts every kube-proxy). So such a step must name,
before the disruptive command, the check that has to pass: a condition ("if", "only if",
"once", "after", "when", "unless", "until"), an order ("first") or a stop condition.

The rule reads the step's own text, up to the first disruptive command: "If it stays stale,
cordon the node (kubectl cordon <node>)" passes; "Cordon it: kubectl cordon <node>" does not,
however careful the steps before it are, because a step is read (and run) on its own. It is an
error at the step, read with the spec's other sections, so a spec with other problems gets it
in the same run.
"""

from __future__ import annotations

import re

from compiler.source.reader import SpecReader

DISRUPTIVE = re.compile(
    r"\bkubectl(?:\s+(?:-n|--namespace)[= ]?\s*\S+)?\s+(?:drain|cordon|delete)\b(?!-)"
    r"|\bkubectl\b[^.;:]*?\brollout\s+restart\b"
    r"|\bsystemctl\s+(?:restart|stop|reboot)\b|\breboot\b"
    r"|\bcrictl\s+(?:stop|rm)\b|\betcdctl\s+member\s+remove\b",
    re.IGNORECASE,
)
CHECK = re.compile(
    r"\b(?:first|only\s+(?:if|when|after|once)|if|once|after|when|unless|until|stop\s+conditions?)\b",
    re.IGNORECASE,
)


def unchecked(step: str) -> str | None:
    """The first disruptive command of ``step`` when no check precedes it in the step, else None."""
    found = DISRUPTIVE.search(step)
    if found is None or CHECK.search(step[: found.start()]):
        return None
    return found.group()


def check_disruptive_steps(r: SpecReader) -> None:
    """An error at each mitigation step that runs a disruptive command before naming its check."""
    for index, step in enumerate(r.data["mitigation"]["steps"]):
        command = unchecked(step)
        if command is None:
            continue
        r.error(
            ("mitigation", "steps", index),
            f"mitigation step {index + 1} runs {command!r} without saying first which check must pass: "
            'put the condition before it in the step ("If <check>, ...", "Only once <check>, ...", '
            '"First confirm <check>; then ...") or name the stop condition it waits for',
        )
