"""The text of one imported spec: deterministic YAML with comments that say where it came from."""

from __future__ import annotations

import json
import re

from compiler.importers.draft import LABEL_NAME_OK, NAME_OK, Draft, escaped
from compiler.model.windows import BURN_POLICIES
from compiler.promql import format_duration
from compiler.source.placeholders import placeholder
from compiler.text.numbers import clean_number, go_float

POLICY_NOTE = (
    "burn_policy sloth: Sloth's window pairs and factors (page: 5m/1h at 14.4x or 30m/6h at 6x; ticket: "
    "2h/1d at 3x or 6h/3d at 1x, for 30d) with no `for`, so this SLO pages and tickets when Sloth's rules did"
)
OWNER = placeholder("the team in owners.yaml that owns this SLO; its alerts route to that team's receivers")
FAMILY = placeholder("a family of project.yaml (families:), or one of the default three")
SLICE = placeholder(
    "the labels each alert fires per, e.g. cluster; Sloth summed every series into one, so by: [] keeps that"
)
DESCRIPTION = placeholder("what this SLO means and why it matters; it opens the runbook")
MITIGATION = {
    "summary": placeholder("the one action the on-call takes when this SLO burns"),
    "steps": placeholder("the first step of that action (a query to run, a command, a dashboard to open)"),
    "stop_conditions": placeholder("when not to act on this alert (e.g. a dependency is already paging)"),
    "escalation": placeholder("whom to escalate to, and after how long"),
}


def _q(text: str) -> str:
    """A double-quoted YAML scalar (JSON strings are valid YAML; what YAML cannot hold raw is escaped)."""
    return escaped(json.dumps(text, ensure_ascii=False))


def _plain(text: str, allowed: re.Pattern[str]) -> str:
    """``text`` unquoted when it matches ``allowed`` (a name or a label name), else quoted."""
    return text if allowed.match(text) and text not in _YAML_WORDS else _q(text)


def _comment(text: str) -> str:
    """Text for a ``#`` comment: one line, whatever it holds."""
    return escaped(text)


ALERT_NAME = re.compile(r"^[A-Z][A-Za-z0-9]*$")
PERIOD = re.compile(r"^[0-9]+[dw]$")
# Plain words YAML 1.1 reads as something other than a string.
_YAML_WORDS = frozenset({"y", "n", "yes", "no", "on", "off", "true", "false", "null"})


def render(draft: Draft, source: str) -> str:
    """The spec file for ``draft``, imported from ``source`` (as the user named it)."""
    lines = [
        f"# Imported by `slo-compiler import` from {_comment(source)}:{draft.where.line} ({_comment(draft.origin)}).",
        "# Every PLACEHOLDER value is an error in `slo-compiler validate` until you replace it.",
        "apiVersion: slo-compiler/v1",
        "kind: SLO",
        f"name: {_plain(draft.name, NAME_OK)}",
    ]
    if draft.alert_name:
        lines.append(f"alert_names: {{burn: {_plain(draft.alert_name, ALERT_NAME)}}}")
    lines += [f"family: {_q(FAMILY)}", f"owner: {_q(OWNER)}"]
    lines.append(f"description: {_q(draft.description or DESCRIPTION)}")
    by = f"[{', '.join(_plain(label, LABEL_NAME_OK) for label in draft.by)}]" if draft.by else f"[{_q(SLICE)}]"
    lines += ["slice:", f"  by: {by}", "sli:", "  ratio:"]
    lines += [f"    {draft.ratio_field}: {_q(draft.ratio_selector)}", f"    total: {_q(draft.total_selector)}"]
    lines += _objective(draft)
    lines += [
        "# No range is imported, so no persistence is needed; add normal_range and persistence to alert on a band."
    ]
    lines.append("mitigation:")
    for key, text in MITIGATION.items():
        lines.append(f"  {key}: [{_q(text)}]" if key in ("steps", "stop_conditions") else f"  {key}: {_q(text)}")
    if not draft.severities:
        lines.append("mode: shadow  # Sloth sent no alerts for this SLO: shadow alerts never page")
    lines += _mapping("labels", draft.labels) + _mapping("annotations", draft.annotations)
    lines += [f"# Note: {_comment(note)}" for note in draft.notes]
    return "\n".join(lines) + "\n"


def _objective(draft: Draft) -> list[str]:
    target = go_float(clean_number(draft.target_percent))
    lines = [
        "objective:",
        f"  target: {target}%",
        f"  period: {_plain(draft.period, PERIOD)}  # {_comment(draft.period_note)}",
    ]
    if set(draft.severities) in ({"page", "ticket"}, set()):
        return [*lines, f"  # {POLICY_NOTE}", "  burn_policy: sloth"]
    lines.append(f"  # Sloth's {draft.severities[0]} alert only (the other was disabled), its pairs without `for`:")
    lines.append("  burn_alerts:")
    for step in BURN_POLICIES["sloth"].steps:
        if step.severity in draft.severities:
            share = go_float(clean_number(step.budget_share * 100))
            lines.append(
                f"    - {{severity: {step.severity}, long: {format_duration(step.long_ms)}, "
                f"short: {format_duration(step.short_ms)}, budget_share: {share}%}}"
            )
    return lines


def _mapping(name: str, values: dict[str, str]) -> list[str]:
    if not values:
        return []
    return [f"{name}:", *(f"  {_plain(key, LABEL_NAME_OK)}: {_q(value)}" for key, value in sorted(values.items()))]
