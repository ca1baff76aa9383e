"""A review as Markdown for a pull-request comment, or as plain text for a terminal.

One line per changed fact (``threshold: error ratio > 0.144 -> error ratio > 0.072``),
grouped by spec and alert, then the behaviour: one line per alert whose rule changed with
its figures before -> after, and any declared scenario the change breaks, so a reviewer
reads what the change does before opening any generated file.
"""

from __future__ import annotations

from compiler.review.changes import AlertChange, FactChange, Review, SpecChange
from compiler.review.figures import AlertBehaviour, Behaviour, Figure
from compiler.text.markdown import cell, code

# The facts shown for an added spec or alert (every fact is new; these say what it is).
_ADDED_SPEC_FACTS = ("owner", "family", "mode", "sli", "slice", "objective", "estimated series")
_ADDED_ALERT_FACTS = ("severity", "windows", "threshold", "for", "receivers")


def _delta(before: int, after: int) -> str:
    sign = "+" if after >= before else "-"
    return f"{before:,} -> {after:,} ({sign}{abs(after - before):,})"


def summary(review: Review) -> str:
    counts = {
        status: sum(1 for s in review.specs if s.status == status)
        for status in ("changed", "added", "removed", "renamed")
    }
    parts = [f"{count} {status}" for status, count in counts.items() if count]
    specs = ", ".join(parts) if parts else "no spec changed"
    return (
        f"{specs}; {review.unchanged} unchanged; estimated series {_delta(review.series_before, review.series_after)}"
    )


def _facts(facts: tuple[FactChange, ...], added: bool, shown: tuple[str, ...], md: bool) -> list[str]:
    def show(text: str) -> str:
        return code(text) if md else text

    if added:
        return [f"{name}: {show(after)}" for name, _, after in facts if name in shown]
    return [f"{name}: {show(before)} -> {show(after)}" for name, before, after in facts]


def _alert_lines(alert: AlertChange, md: bool) -> list[str]:
    if alert.status == "renamed":
        title = f"alert renamed: {alert.old_key} -> {alert.key}"
    else:
        title = f"alert {alert.status}: {alert.key}"
    head, item = ("- ", "  - ") if md else ("  * ", "      ")
    lines = [head + (f"**{title}**" if md else title)]
    if alert.status != "removed":
        lines += [item + line for line in _facts(alert.facts, alert.status == "added", _ADDED_ALERT_FACTS, md)]
    return lines


def _figure_text(figure: Figure, added: bool) -> str:
    template, before, after = figure
    if added:
        return template.format(after)
    if before == after:
        return template.format(after) + " (unchanged)"
    return template.format(f"{after} (was {before})")


def _side(alert: AlertBehaviour, which: int) -> str:
    return "; ".join(figure[0].format(figure[which]) for figure in alert.figures)


def _behaviour_text(behaviour: Behaviour) -> list[str]:
    lines = ["  behaviour:"]
    for alert in behaviour.alerts:
        figures = "; ".join(_figure_text(figure, alert.added) for figure in alert.figures)
        lines.append(f"      {alert.alert}: {'new: ' if alert.added else ''}{figures}")
    for change in behaviour.scenarios:
        lines.append(
            f"      {change.case}: {change.alert}: {change.before} -> {change.after}  <- NOW FAILS ITS EXPECTATION"
        )
    return lines


def _behaviour_lines(behaviour: Behaviour | None, md: bool) -> list[str]:
    if behaviour is None or not (behaviour.alerts or behaviour.scenarios):
        return []
    if not md:
        return _behaviour_text(behaviour)
    lines = ["", "Behaviour:", "", "| alert | before | after |", "|---|---|---|"]
    for alert in behaviour.alerts:
        before = "(new)" if alert.added else cell(_side(alert, 1))
        lines.append(f"| {cell(alert.alert)} | {before} | {cell(_side(alert, 2))} |")
    if behaviour.scenarios:
        lines += [
            "",
            "Declared scenarios the change breaks (promtool):",
            "",
            "| case | alert | before | after |",
            "|---|---|---|---|",
        ]
        for change in behaviour.scenarios:
            lines.append(
                f"| {cell(change.case)} | {cell(change.alert)} | {change.before} | {change.after} "
                "(**now fails its expectation**) |"
            )
    return lines


def _spec_lines(spec: SpecChange, behaviour: Behaviour | None, md: bool) -> list[str]:
    name = f"{spec.old_name} -> {spec.name}" if spec.status == "renamed" else spec.name
    lines = [f"### {name} ({spec.status})", ""] if md else [f"{name} ({spec.status})"]
    item = "- " if md else "  - "
    lines += [item + line for line in _facts(spec.facts, spec.status == "added", _ADDED_SPEC_FACTS, md)]
    if spec.status != "removed":
        for alert in spec.alerts:
            lines += _alert_lines(alert, md)
    lines += _behaviour_lines(behaviour, md)
    return [*lines, ""]


def render(review: Review, base: str, behaviour: dict[str, Behaviour], md: bool) -> str:
    """The whole review: a title, a summary line, then one block per changed spec."""
    lines = [f"## slo-compiler diff against {base}" if md else f"slo-compiler diff against {base}", ""]
    lines += [summary(review), ""]
    lines += [(f"> {note}" if md else f"note: {note}") for note in review.notes]
    for spec in review.specs:
        lines += _spec_lines(spec, behaviour.get(spec.name), md)
    return "\n".join(lines).rstrip() + "\n"
