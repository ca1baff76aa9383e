"""Human-readable views of a compiled model: series budgets and one spec explained end to end.

``explain`` reads the plan for what alerts exist and the generated rule file for their
PromQL, so it shows exactly what ``generate`` writes without knowing how the rule target
builds it.
"""

from __future__ import annotations

from collections import defaultdict
from typing import Any

from compiler.model import ASSUMPTION_MEMORY_MS, SLO, Model, queries, series
from compiler.model.budget import Estimate, estimate
from compiler.model.links import rules_path
from compiler.model.reads import RawRead, raw_reads, repeated
from compiler.plan import SpecPlan
from compiler.plan.coverage import edge_fallbacks, fallback_text
from compiler.text import human
from compiler.text.yamlin import load_own


def budget_report(model: Model) -> str:
    """Estimated recorded series per spec, per family and in total, on the profiled cluster."""
    profile = model.project.cluster_profile
    rows = [estimate(slo, profile) for slo in model.slos]
    width = max((len(row.slo) for row in rows), default=10)
    lines = [
        f"Estimated recorded series on the {profile.name} "
        f"({profile.nodes:,} nodes, {profile.node_pools} pools, {profile.zones} zones):",
        f"  {'spec':<{width}}  {'slices':>8}  {'x series':>8}  {'series':>8}  {'budget':>8}",
    ]
    for row in rows:
        lines.append(
            f"  {row.slo:<{width}}  {row.slices:>8,}  {row.series_per_slice:>8}  {row.series:>8,}  {row.budget:>8,}"
        )
    by_family: dict[str, list[Estimate]] = defaultdict(list)
    for row in rows:
        by_family[row.family].append(row)
    for family, items in sorted(by_family.items()):
        lines.append(f"  family {family}: {sum(i.series for i in items):,} series in {len(items)} spec(s)")
    lines.append(f"  total: {sum(row.series for row in rows):,} series in {len(rows)} spec(s)")
    return "\n".join(lines) + "\n"


def _rule_group(files: dict[str, bytes], slo: SLO) -> list[dict[str, Any]]:
    """The rules of the spec's generated rule file, in file order."""
    document = load_own(files[rules_path(slo)])
    rules: list[dict[str, Any]] = document["groups"][0]["rules"]
    return rules


def group_reads(files: dict[str, bytes], slo: SLO) -> tuple[RawRead, ...]:
    """The raw selectors the spec's generated rule group reads per evaluation."""
    rules = _rule_group(files, slo)
    recorded = {str(rule["record"]) for rule in rules if "record" in rule}
    named = [(str(rule.get("record") or rule.get("alert")), str(rule["expr"])) for rule in rules]
    return raw_reads(named, recorded)


def _reads_lines(reads: tuple[RawRead, ...], indent: str) -> list[str]:
    """One line per raw selector, then what a repeated read costs."""
    lines = [f"{indent}{read.text()}" for read in reads] or [f"{indent}none: every rule reads recorded series"]
    twice = repeated(reads)
    if twice:
        lines.append(
            f"{indent}{len(twice)} selector(s) read more than once per evaluation: each extra read costs "
            "its series' samples again"
        )
    return lines


def reads_report(model: Model, files: dict[str, bytes]) -> str:
    """Per spec, the raw series its rule group reads per evaluation and how many times (1 is the floor)."""
    lines = ["Raw series read per evaluation (times read, over which range, by which rules; 1x is the floor):"]
    total = twice = 0
    for slo in model.slos:
        reads = group_reads(files, slo)
        total += len(reads)
        twice += len(repeated(reads))
        lines.append(f"  {slo.name}:")
        lines.extend(_reads_lines(reads, "    "))
    lines.append(f"  total: {total:,} raw selector(s), {twice:,} read more than once per evaluation")
    return "\n".join(lines) + "\n"


def explain(model: Model, spec: SpecPlan, files: dict[str, bytes]) -> str:
    """Rules, windows, thresholds, estimated series and routing of one spec, in one view."""
    slo = spec.slo
    rules = _rule_group(files, slo)
    alert_exprs = [str(rule["expr"]) for rule in rules if "alert" in rule]
    out: list[str] = []
    add = out.append
    add(f"{slo.name}  ({slo.family}, owner {slo.owner.name}, {slo.mode}; {slo.source}, sha256 {slo.spec_hash})")
    add(f"  {slo.description}")
    add("")
    add(f"slice: by ({', '.join(slo.slice.by) or 'nothing: cluster-wide'})")
    add(f"SLI: {type(slo.sli).__name__.removesuffix('SLI').lower()}, value unit {slo.unit}")
    for fallback, read in edge_fallbacks(slo):
        add(f"  note: {fallback_text(fallback, read)}")
    if slo.objective is not None:
        objective = slo.objective
        add(
            f"objective: {human.percent(objective.target)} over {human.duration(objective.period_ms)} "
            f"(budget {human.percent(objective.budget)})"
        )
    out.extend(_condition_lines(slo))
    add("")
    add("alerts:")
    for rule, expr in zip(spec.alerts, alert_exprs, strict=True):
        details = [rule.severity_text, f"for {human.duration(rule.for_ms)}"]
        if rule.burn is not None and slo.objective is not None:
            threshold = slo.objective.threshold(rule.burn)
            details.insert(
                1,
                f"{human.duration(rule.burn.long_ms)}/{human.duration(rule.burn.short_ms)} windows over "
                f"{human.factor(rule.burn.factor)} (error ratio over {human.share(threshold)})",
            )
        if rule.keep_firing_for_ms:
            details.append(f"keep firing {human.duration(rule.keep_firing_for_ms)}")
        add(f"  {rule.name}: {', '.join(details)}")
        add("    " + expr.replace("\n", "\n    "))
    add("")
    add("recording rules:")
    for record in (rule for rule in rules if "record" in rule):
        add(f"  {record['record']}:")
        add("    " + str(record["expr"]).replace("\n", "\n    "))
    add("")
    add("raw series read per evaluation (times read, over which range, by which rules; 1x is the floor):")
    out.extend(_reads_lines(group_reads(files, slo), "  "))
    out.extend(_unit_reads_lines(slo))
    add("")
    add(_series_line(estimate(slo, model.project.cluster_profile)))
    add("")
    out.extend(_routing_lines(model, slo))
    return "\n".join(out) + "\n"


def _unit_reads_lines(slo: SLO) -> list[str]:
    """Whether a fleet's slice series aggregate its recorded per-unit value or read the raw series again."""
    if slo.fleet is None:
        return []
    unit, parts = series.UNIT_VALUE, series.PARTS_5M
    firsts = ", ".join(name for name in queries.raw_expressions(slo) if name not in (unit, parts))
    if queries.derives_from_units(slo):
        return [f"  {firsts} aggregate {unit} in the same evaluation (vmalert reads the raw series again)"]
    if queries.unit_parts(slo) is not None:
        return [
            f"  {unit}, {firsts} sum {parts}, the counter's rates recorded once per unit, in the same evaluation "
            "(vmalert reads the raw series again)"
        ]
    if queries.ratio_unit_parts(slo):
        return [
            f"  {unit}, {firsts} sum {parts}, the total and bad rates recorded once per unit, in the same "
            "evaluation (vmalert reads the raw series again)"
        ]
    return [
        f"  {firsts} read the raw series again: the units' values do not give the slice's exactly "
        "(an average over units of different sizes, a ratio)"
    ]


def _condition_lines(slo: SLO) -> list[str]:
    """What the pages need: each assumption (remembered for a day) and each confirmation, in words."""
    out: list[str] = []
    if slo.assumes:
        out.append(
            f"assumes (pages wait while one has not held within {human.duration(ASSUMPTION_MEMORY_MS)}; "
            "a ticket names it):"
        )
        for condition in slo.assumes:
            out.append(f"  {condition.name}: {condition.expr}")
            out.append(f"    why: {condition.why}")
            out.append(f"    otherwise: {condition.otherwise} (ticket after {human.duration(condition.for_ms)})")
    if slo.confirmed_by:
        out.append("confirmed by (a page needs one of these for its slice):")
        for condition in slo.confirmed_by:
            out.append(f"  {condition.name}: {condition.expr}")
            out.append(f"    why: {condition.why}")
    return out


def _routing_lines(model: Model, slo: SLO) -> list[str]:
    """Where the spec's alerts go: receivers per severity, shadow, automation and inhibitions."""
    out: list[str] = []
    out.append("routing:")
    team = slo.owner
    if slo.mode == "shadow":
        kinds = ", ".join(r.kind for r in team.receivers_for("shadow")) or "recorded only, no notification"
        out.append(f"  shadow mode: every alert goes to {team.name}-shadow ({kinds}); nothing pages")
    else:
        for severity in ("page", "ticket", "info"):
            kinds = ", ".join(r.kind for r in team.receivers_for(severity)) or "none"
            out.append(f"  severity={model.project.severity_label(severity)} -> {team.name}-{severity} ({kinds})")
        if slo.mitigation.automation:
            out.append(f"  automation: also sent to automation-{slo.mitigation.automation}")
    out.append(f"  a firing page inhibits the ticket of the same slice (equal on {', '.join(slo.slice.by) or 'slo'})")
    for explains in slo.explains:
        out.append(f"  explains {explains.slo}: inhibits its alerts with equal {', '.join(explains.equal)}")
    return out


def _series_line(found: Estimate) -> str:
    """The estimate in words: slices times series per slice, a fleet's per-unit series, slo_info."""
    units = f" + {found.unit_series:,} per-unit series" if found.unit_series else ""
    units += f" + {found.parts_series:,} parts series" if found.parts_series else ""
    return (
        f"estimated series: {found.series:,} ({found.slices:,} slices x {found.series_per_slice}{units} + slo_info), "
        f"budget {found.budget:,}"
    )
