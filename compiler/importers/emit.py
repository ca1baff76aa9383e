"""The text of one imported spec: deterministic YAML with comments that say where it came from."""

from __future__ import annotations

import json
import re

from compiler.importers.draft import LABEL_NAME_OK, NAME_OK, Draft, Shape, escaped, short_name
from compiler.model.windows import BURN_POLICIES, PolicyStep, burn_factor
from compiler.promql import format_duration, parse_duration
from compiler.source.placeholders import placeholder
from compiler.text.numbers import clean_number, complement, go_float

POLICY_NOTE = (
    "burn_policy sloth: Sloth's window pairs and factors (page: 5m/1h at 14.4x or 30m/6h at 6x; ticket: "
    "2h/1d at 3x or 6h/3d at 1x, for 30d) with no `for`, so this SLO pages and tickets when Sloth's rules did"
)
OWNER = placeholder("the team in owners.yaml that owns this SLO; its alerts route to that team's receivers")
FAMILY = placeholder("a family of project.yaml (families:), or one of the default three")
SLICE = {
    tool: placeholder(
        f"the labels each alert fires per, e.g. cluster; {tool}'s query summed every series into one, so by: [] "
        "keeps that"
    )
    for tool in ("Sloth", "OpenSLO")
}
DEFAULT_NOTE = (
    "burn_policy default: OpenSLO says nothing about burn-rate windows (alertPolicies are not imported), so the "
    "default pairs: page 1h/5m 14.4x for 2m or 6h/30m 6x for 15m, ticket 1d/2h 3x for 1h or 3d/6h 1x for 3h, at 30d"
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
        f"name: {_plain(short_name(draft.name), NAME_OK)}",
    ]
    if draft.alert_name:
        lines.append(f"alert_names: {{burn: {_plain(draft.alert_name, ALERT_NAME)}}}")
    lines += [f"family: {_q(FAMILY)}", f"owner: {_q(OWNER)}"]
    lines.append(f"description: {_q(draft.description or DESCRIPTION)}")
    slice_ = _q(SLICE.get(draft.tool, SLICE["Sloth"]))
    by = f"[{', '.join(_plain(label, LABEL_NAME_OK) for label in draft.by)}]" if draft.by else f"[{slice_}]"
    lines += ["slice:", f"  by: {by}", "sli:", *_sli(draft)]
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


def _sli(draft: Draft) -> list[str]:
    """The ``sli:`` body: a ratio, or the latency or state the query was read as."""
    shape = draft.shape or Shape(())
    if shape.latency is not None:
        latency = shape.latency
        lines = ["  latency:", f"    histogram: {_q(latency.histogram)}"]
        if latency.selector:
            lines.append(f"    selector: {_q(latency.selector)}")
        lines.append(f"    threshold: {go_float(latency.threshold)}")
        if shape.buckets:
            edges = ", ".join(go_float(edge) for edge in shape.buckets)
            lines.append(f"    buckets: [{edges}]  # the edge the query read; add the histogram's other finite edges")
        if shape.next_kept_above:
            lines.append("    # a built-in stack drops this edge: there the next kept edge above is read")
            lines.append("    on_dropped_edge: next_kept_above")
        return lines
    if shape.state is not None:
        return ["  state:", f"    expr: {_q(shape.state.expr)}"]
    return [
        "  ratio:",
        f"    {draft.ratio_field}: {_q(draft.ratio_selector)}",
        f"    total: {_q(draft.total_selector)}",
    ]


def _objective(draft: Draft) -> list[str]:
    target = go_float(clean_number(draft.target_percent))
    lines = [
        "objective:",
        f"  target: {target}%",
        f"  period: {_plain(draft.period, PERIOD)}  # {_comment(draft.period_note)}",
    ]
    policy, steps, wanted, possible = _pairs(draft)
    budget = complement(clean_number(float(go_float(clean_number(draft.target_percent))) / 100))
    period_ms = parse_duration(draft.period) or 0
    if possible == list(steps):
        return [*lines, f"  # {POLICY_NOTE if policy == 'sloth' else DEFAULT_NOTE}", f"  burn_policy: {policy}"]
    if len(wanted) < len(steps):
        lines.append(f"  # Sloth's {draft.severities[0]} alert only (the other was disabled), its pairs without `for`:")
    for step in wanted:
        if step not in possible:
            factor = go_float(_factor(step, period_ms))
            lines.append(
                f"  # the {format_duration(step.long_ms)}/{format_duration(step.short_ms)} pair is left out: "
                f"{factor}x the {go_float(clean_number(budget * 100))}% budget can never be exceeded "
                f"({'Sloth wrote it and it never fired' if policy == 'sloth' else 'it could never fire'})"
            )
    lines.append(f"  # the pairs of burn_policy {policy} that can fire:" if len(wanted) == len(steps) else "")
    lines.append("  burn_alerts:")
    lines += [_burn_alert(step) for step in possible]
    return [line for line in lines if line]


def _pairs(draft: Draft) -> tuple[str, tuple[PolicyStep, ...], list[PolicyStep], list[PolicyStep]]:
    """(policy, its steps, the steps of the severities the source alerted on, those of them that can fire)."""
    policy = "sloth" if draft.tool == "Sloth" else "default"
    steps = BURN_POLICIES[policy].steps
    wanted = [step for step in steps if step.severity in draft.severities or not draft.severities]
    budget = complement(clean_number(float(go_float(clean_number(draft.target_percent))) / 100))
    period_ms = parse_duration(draft.period) or 0
    possible = [step for step in wanted if _factor(step, period_ms) * budget < 1]
    return policy, steps, wanted, possible


def _factor(step: PolicyStep, period_ms: int) -> float:
    return clean_number(burn_factor(step.budget_share, period_ms, step.long_ms))


def summary(draft: Draft) -> str:
    """How the written spec alerts, in a few words for the line `import` prints."""
    policy, steps, wanted, possible = _pairs(draft)
    if possible == list(steps):
        if policy == "sloth":
            return "burn_policy sloth (Sloth's window pairs, no `for`: it pages when Sloth did)"
        return "burn_policy default (OpenSLO names no burn-rate windows: the default pairs, with `for`)"
    left_out = len(wanted) - len(possible)
    return f"burn_alerts: {len(possible)} of burn_policy {policy}'s pairs" + (
        f" ({left_out} left out: they can never fire at this target)" if left_out else ""
    )


def _burn_alert(step: PolicyStep) -> str:
    share = go_float(clean_number(step.budget_share * 100))
    wait = f", for: {format_duration(step.for_ms)}" if step.for_ms else ""
    return (
        f"    - {{severity: {step.severity}, long: {format_duration(step.long_ms)}, "
        f"short: {format_duration(step.short_ms)}, budget_share: {share}%{wait}}}"
    )


def _mapping(name: str, values: dict[str, str]) -> list[str]:
    if not values:
        return []
    return [f"{name}:", *(f"  {_plain(key, LABEL_NAME_OK)}: {_q(value)}" for key, value in sorted(values.items()))]
