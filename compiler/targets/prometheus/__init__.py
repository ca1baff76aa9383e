"""Prometheus recording and alerting rules: one file and one rule group per spec.

A pure function of the plan: which alerts exist, their names, labels and timing come from
``compiler.plan``; this module adds only the PromQL and the annotation text.

Cost rules: only the first recording rules read raw series, and only over 5m; every
longer window reads the SLO's own recorded, slice-aggregated series (see
``compiler.model.series``). An SLO records ``slo_info``, bad and total rates over 5m and
over each longer tier its windows read (30m, 1h, then 6h and 1d for windows that long),
the period's events (for the traffic guard) and the budget remaining: at most 13 series;
plus, per band with a relative bound, its held baseline (``baseline``), and a fleet's three.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

from compiler.model import ASSUMPTION_MEMORY_MS, SLO, BurnAlert, Model, Range, queries, series, windows
from compiler.model import labels as lbl
from compiler.model.links import rules_path, runbook_url
from compiler.model.naming import Level
from compiler.plan import AlertSpec, Plan, SpecPlan
from compiler.promql import format_duration
from compiler.targets.prometheus import baseline
from compiler.text import human
from compiler.text.numbers import clean_number, go_float
from compiler.text.yamlout import dump

# -- rules ------------------------------------------------------------------------------


def _record(name: str, expr: str, slo: SLO) -> dict[str, Any]:
    return {"record": name, "expr": expr, "labels": {lbl.SLO: slo.name}}


def recording_rules(slo: SLO) -> list[dict[str, Any]]:
    info_labels = {
        lbl.SLO: slo.name,
        lbl.TEAM: slo.owner.name,
        lbl.FAMILY: slo.family,
        lbl.SPEC_HASH: slo.spec_hash,
    }
    if slo.objective is not None:
        info_labels[lbl.OBJECTIVE] = go_float(slo.objective.target)
        info_labels[lbl.PERIOD] = format_duration(slo.objective.period_ms)
    rules: list[dict[str, Any]] = [{"record": series.INFO, "expr": "vector(1)", "labels": info_labels}]
    # A fleet's per-unit value first: the slice's series may aggregate it in the same evaluation.
    rules += [_record(name, expr, slo) for name, expr in queries.raw_expressions(slo).items()]
    if not slo.counts_events or slo.objective is None:
        return [*rules, *_baseline_rules(slo), *fleet_recording_rules(slo), *condition_rules(slo)]
    for tier in series.recorded_tiers(slo):
        bad_name, total_name = series.rate_names(tier)
        rules.append(_record(total_name, series.tier_rate(slo, tier, bad=False), slo))
        rules.append(_record(bad_name, series.tier_rate(slo, tier, bad=True), slo))
    if slo.objective.traffic_guard:
        rules.append(_record(series.PERIOD_EVENTS, series.period_events(slo, slo.objective.period_ms), slo))
    period = format_duration(slo.objective.period_ms)
    budget = go_float(clean_number(slo.objective.budget))
    rules.append(
        _record(
            series.BUDGET_REMAINING,
            f"1 - (\n  avg_over_time({series.recorded(series.BAD_1H, slo)}[{period}:1h])\n"
            f"  / clamp_min(avg_over_time({series.recorded(series.TOTAL_1H, slo)}[{period}:1h]), 1e-12)\n"
            f") / {budget}",
            slo,
        )
    )
    return [*rules, *_baseline_rules(slo), *fleet_recording_rules(slo), *condition_rules(slo)]


def condition_rules(slo: SLO) -> list[dict[str, Any]]:
    """Per condition and slice, how many series hold it now; per assumption, whether it held within a day."""
    rules: list[dict[str, Any]] = []
    for condition in slo.page_conditions:
        labels = {lbl.SLO: slo.name, lbl.CONDITION: condition.name}
        holds = queries.condition_holds(slo, condition)
        rules.append({"record": series.CONDITION_HOLDS, "expr": holds, "labels": dict(labels)})
        if condition.kind == "assumes":
            held = series.assumption_held(slo, condition)
            rules.append({"record": series.ASSUMPTION_HELD, "expr": held, "labels": dict(labels)})
    return rules


def fleet_recording_rules(slo: SLO) -> list[dict[str, Any]]:
    """A fleet's per-slice series: the units that report and those out of range.

    Each unit's value is recorded first, with the raw SLI series (``queries.raw_expressions``).
    The page reads the two per-slice counts, so it costs one comparison per slice however many
    units there are; the per-unit tickets read the per-unit value.
    """
    if slo.fleet is None:
        return []
    units, out = queries.fleet_counts(slo)
    return [
        _record(series.FLEET_UNITS, units, slo),
        _record(series.FLEET_UNITS_OUT, out, slo),
    ]


def _baseline_rules(slo: SLO) -> list[dict[str, Any]]:
    """Each relative band's held baseline, after the value it reads (see ``baseline``)."""
    bands: dict[Level, Range | None] = {"Normal": slo.normal_range, "Critical": slo.critical_range}
    return [
        _record(series.BASELINE[level], baseline.baseline_expr(slo, band, level), slo)
        for level in series.baseline_levels(slo)
        if (band := bands[level]) is not None
    ]


def _indent(text: str) -> str:
    return "\n".join(f"  {line}" for line in text.splitlines())


def _go_text(text: str) -> str:
    """Literal text inside a Go template: only '{{' starts an action, so neutralise it."""
    return text.replace("{{", '{{ "{{" }}')


def _slice_text(slo: SLO) -> str:
    if not slo.slice.by:
        return "cluster-wide"
    return " ".join(f"{label}={{{{ $labels.{label} }}}}" for label in slo.slice.by)


_HUMANIZE = {
    "ratio": "{{ $value | humanizePercentage }}",
    "seconds": "{{ $value | humanizeDuration }}",
    "bytes": "{{ $value | humanize1024 }}B",
    "bytes_per_second": "{{ $value | humanize1024 }}B/s",
    "per_second": "{{ $value | humanize }}/s",
    "count": "{{ $value | humanize }}",
}


@dataclass(frozen=True)
class AlertRule:
    """One alerting rule: the plan's alert plus its PromQL and annotation text.

    The properties repeat the plan's fields so the generated tests and profiles, which are
    about these rules, read one object.
    """

    spec: AlertSpec
    expr: str
    annotations: dict[str, str]

    @property
    def name(self) -> str:
        return self.spec.name

    @property
    def kind(self) -> str:
        return self.spec.kind

    @property
    def burn(self) -> BurnAlert | None:
        return self.spec.burn

    @property
    def band(self) -> Range | None:
        return self.spec.band

    @property
    def for_ms(self) -> int:
        return self.spec.for_ms

    @property
    def keep_firing_for_ms(self) -> int:
        return self.spec.keep_firing_for_ms

    @property
    def labels(self) -> Mapping[str, str]:
        return self.spec.label_map

    def to_rule(self) -> dict[str, Any]:
        rule: dict[str, Any] = {"alert": self.name, "expr": self.expr}
        if self.for_ms:
            rule["for"] = format_duration(self.for_ms)
        if self.keep_firing_for_ms:
            rule["keep_firing_for"] = format_duration(self.keep_firing_for_ms)
        rule["labels"] = dict(self.labels)  # a rule's own dict: one object twice in a file is a YAML anchor
        rule["annotations"] = dict(self.annotations)
        return rule


def _annotations(model: Model, slo: SLO, name: str, summary: str, description: str) -> dict[str, str]:
    annotations = {
        "summary": summary,
        "description": description,
        "runbook_url": runbook_url(model, slo, name),
        "mitigation": _go_text(slo.mitigation.summary),
    }
    if slo.mitigation.automation and slo.mode == "live":
        # The automation webhook gets the whole mitigation, in order, in the alert payload.
        steps = "\n".join(f"{index}. {step}" for index, step in enumerate(slo.mitigation.steps, 1))
        annotations["mitigation_steps"] = _go_text(steps)
    return annotations


def _burn_rule(model: Model, slo: SLO, alert: AlertSpec) -> AlertRule:
    objective, burn = slo.objective, alert.burn
    assert objective is not None and burn is not None
    threshold = go_float(objective.threshold(burn))
    long_w, short_w = human.duration(burn.long_ms), human.duration(burn.short_ms)
    expr = (
        f"(\n{_indent(series.window_ratio(slo, burn.long_ms))}\n) > {threshold}\n"
        f"and\n(\n{_indent(series.window_ratio(slo, burn.short_ms))}\n) > {threshold}"
    )
    guard = series.traffic_guard(slo, burn)
    if guard is not None:  # the long window's bad events are a share of the period's budget
        expr += f"\nand\n(\n{_indent(guard)}\n)"
    period = human.duration(objective.period_ms)
    exhaustion = human.duration(windows.exhaustion_ms(objective.period_ms, burn.factor))
    target = human.percent(objective.target)
    summary = (
        f"{slo.name}: error budget burning {human.factor(burn.factor)} too fast over {long_w} and {short_w} "
        f"({_slice_text(slo)})"
    )
    description = (
        f"{_slice_text(slo)}: the error ratio over {long_w} is {_HUMANIZE['ratio']} and the {short_w} window "
        f"agrees, above {human.factor(burn.factor)} the budget of the {target} objective over {period} "
        f"(threshold {human.share(burn.factor * objective.budget)}). At this rate the whole {period} "
        f"budget is gone in {exhaustion}."
    )
    return AlertRule(alert, expr, _annotations(model, slo, alert.name, summary, description))


def _range_condition(slo: SLO, band: Range, side: str, level: Level) -> tuple[str, list[str]]:
    """The PromQL of one side of a band, and the bounds in words for the description."""
    now = series.value(slo)
    rel = band.relative
    above = side == "Above"
    static = band.maximum if above else band.minimum
    parts, bounds = [], []
    if static is not None:
        parts.append(f"{now} {'>' if above else '<'} {go_float(static)}")
        bounds.append(f"{'max' if above else 'min'} {human.value(slo.unit, static)}")
    relative = baseline.crossing(slo, band, above, baseline.baseline(slo, level))
    if relative is not None and rel is not None:
        parts.append(relative)
        bounds.append(relative_text(slo, band, above))
    expr = parts[0] if len(parts) == 1 else "(\n  " + "\n)\nor\n(\n  ".join(parts) + "\n)"
    return expr, bounds


def _unit_text(slo: SLO) -> str:
    units = slo.fleet.units if slo.fleet is not None else ()
    return " ".join(f"{label}={{{{ $labels.{label} }}}}" for label in units)


def _fleet_unit_rule(model: Model, slo: SLO, alert: AlertSpec) -> AlertRule:
    """One unit beyond the critical range: a ticket that names the unit, never a page."""
    band, side = alert.band, alert.side
    assert band is not None and side is not None
    above = side == "Above"
    bound = band.maximum if above else band.minimum
    assert bound is not None
    word = "above" if above else "below"
    expr = f"{series.recorded(series.UNIT_VALUE, slo)} {'>' if above else '<'} {go_float(bound)}"
    summary = f"{slo.name}: {_unit_text(slo)} {word} its critical range ({_slice_text(slo)})"
    description = (
        f"{_unit_text(slo)} in {_slice_text(slo)}: its value {_HUMANIZE[slo.unit]} is {word} the critical "
        f"range ({'max' if above else 'min'} {human.value(slo.unit, bound)}) for at least "
        f"{human.duration(alert.for_ms)}. One unit is a ticket; the slice pages only when many are out."
    )
    return AlertRule(alert, expr, _annotations(model, slo, alert.name, summary, description))


def _fleet_page_rule(model: Model, slo: SLO, alert: AlertSpec) -> AlertRule:
    """The slice's critical page: at least K units out, or a share of a slice with enough units."""
    fleet, band, side = slo.fleet, alert.band, alert.side
    assert fleet is not None and band is not None and side is not None
    out, units = series.recorded(series.FLEET_UNITS_OUT, slo), series.recorded(series.FLEET_UNITS, slo)
    on = f"on ({', '.join(slo.slice.by)})" if slo.slice.by else "on ()"
    count = f"{out} >= {fleet.page_units}" if fleet.page_units is not None else None
    share_terms = []
    if fleet.page_share is not None:
        share_terms.append(f"{on} ({out} / {units} >= {go_float(clean_number(fleet.page_share))})")
        if fleet.min_units is not None:
            share_terms.append(f"{on} ({units} >= {fleet.min_units})")
    if count is not None and fleet.require_both:
        expr = count + "".join(f"\n  and {term}" for term in share_terms)
    elif count is not None and share_terms:
        expr = f"(\n  {count}\n)\nor\n(\n  {out}" + "".join(f"\n  and {t}" for t in share_terms) + "\n)"
    else:
        expr = count or out + "".join(f"\n  and {term}" for term in share_terms)
    words = fleet.describe()
    bound = band.maximum if side == "Above" else band.minimum
    assert bound is not None
    word = "above" if side == "Above" else "below"
    summary = f"{slo.name}: {_HUMANIZE['count']} units {word} the critical range ({_slice_text(slo)})"
    description = (
        f"{_slice_text(slo)}: {_HUMANIZE['count']} units are {word} the critical range "
        f"({'max' if side == 'Above' else 'min'} {human.value(slo.unit, bound)}) for at least "
        f"{human.duration(band.for_ms)}: a correlated failure (it pages when {words} are out)."
    )
    return AlertRule(alert, expr, _annotations(model, slo, alert.name, summary, description))


def relative_text(slo: SLO, band: Range, above: bool) -> str:
    """A relative bound in words: factors and the floor are crossed at equality, the baseline is held."""
    rel = band.relative
    assert rel is not None
    factor = rel.max_factor if above else rel.min_factor
    assert factor is not None
    offset, hold = human.duration(rel.offset_ms), human.duration(rel.hold_ms)
    text = (
        f"{'at least' if above else 'at most'} {human.factor(factor)} its baseline (its value {offset} earlier, "
        f"held for up to {hold} while this fires)"
    )
    if rel.floor:
        floor_value = human.value(slo.unit, rel.floor)
        text += f" once at {floor_value} or more" if above else f" when that was {floor_value} or more"
    return text


def _range_rule(model: Model, slo: SLO, alert: AlertSpec) -> AlertRule:
    band, side, level = alert.band, alert.side, alert.level
    assert band is not None and side is not None and level is not None
    if alert.fleet == "unit":
        return _fleet_unit_rule(model, slo, alert)
    if alert.fleet == "page":
        return _fleet_page_rule(model, slo, alert)
    expr, bounds = _range_condition(slo, band, side, level)
    floor = ""
    if band.min_bad_events is not None:  # a traffic floor: the 5m window's bad events, not only their share
        events = go_float(clean_number(band.min_bad_events))
        expr = f"(\n{_indent(expr)}\n)\nand\n{series.bad_events_5m(slo)} >= {events}"
        floor = f", with at least {human.count(band.min_bad_events)} bad events in 5 minutes"
    reason = f" {_go_text(band.reason)}" if band.reason else ""
    word = "above" if side == "Above" else "below"
    summary = f"{slo.name}: {word} its {level.lower()} range ({_slice_text(slo)})"
    description = (
        f"{_slice_text(slo)}: the value {_HUMANIZE[slo.unit]} is {word} the {level.lower()} range "
        f"({'; '.join(bounds)}{floor}) for at least {human.duration(band.for_ms)}.{reason}"
    )
    return AlertRule(alert, expr, _annotations(model, slo, alert.name, summary, description))


def _no_data_rule(model: Model, slo: SLO, alert: AlertSpec) -> AlertRule:
    presence = series.recorded(series.presence_series(slo), slo)
    wait = human.duration(alert.for_ms)
    summary = f"{slo.name}: no SLI data for {wait}"
    versions = f" (spec checked against Kubernetes {slo.k8s_versions})" if slo.k8s_versions else ""
    description = (
        f"No series feed the {slo.name} SLI for {wait}: every alert of this spec is blind. Check the scrape "
        f"targets and whether a metric was renamed by an upgrade{versions}."
    )
    annotations = _annotations(model, slo, alert.name, summary, _go_text(description))
    # Missing data has its own mitigation: the spec's is for a bad signal, not for a blind one.
    what, steps = queries.no_data_steps(slo)
    annotations["mitigation"] = _go_text(" ".join((what, *(f"{i}. {step}" for i, step in enumerate(steps, 1)))))
    if "mitigation_steps" in annotations:
        annotations["mitigation_steps"] = _go_text("\n".join(f"{i}. {step}" for i, step in enumerate(steps, 1)))
    return AlertRule(alert, f"absent({presence})", annotations)


def vanished_expr(slo: SLO, window_ms: int) -> str:
    """Slices with a sample within ``window_ms`` and none now; the value is how many fewer slices the spec has.

    Only when the spec has fewer slices than ``window_ms`` ago, so a whole-spec absence (no
    slice now) is left to the NoData alert; and not while a slice is new (absent twice the
    window ago), so a rename (one slice's units moving to new label values, with any overlap
    shorter than the window) stays quiet.
    """
    presence = series.recorded(series.presence_series(slo), slo)
    window, twice = format_duration(window_ms), format_duration(2 * window_ms)
    return (
        f"(\n  last_over_time({presence}[{window}])\n  unless\n  {presence}\n) * 0\n"
        f"+ on () group_left ()\n(\n  count({presence} offset {window}) - count({presence}) > 0\n)\n"
        f"unless on ()\n(\n  {presence}\n  unless\n  {presence} offset {twice}\n)"
    )


def _vanished_rule(model: Model, slo: SLO, alert: AlertSpec) -> AlertRule:
    vanished = slo.no_data.vanished
    assert vanished is not None
    window, wait = human.duration(vanished.window_ms), human.duration(alert.for_ms)
    summary = f"{slo.name}: a slice stopped reporting {wait} ago ({_slice_text(slo)})"
    description = (
        f"{_slice_text(slo)}: this slice had SLI series within the last {window} and has had none for {wait}, "
        f"and the spec has {{{{ $value | humanize }}}} slice(s) fewer than {window} ago: its units were deleted "
        "or stopped reporting, and the other alerts of this spec cannot see it. It resolves when the slice "
        f"returns or {window} after its last sample."
    )
    annotations = _annotations(model, slo, alert.name, summary, description)
    return AlertRule(alert, vanished_expr(slo, vanished.window_ms), annotations)


def _assumption_rule(model: Model, slo: SLO, alert: AlertSpec) -> AlertRule:
    """A broken assumption: slices the spec sees where it has not held for a day, or nowhere a sign of it."""
    condition = alert.condition
    assert condition is not None
    held = series.condition_selector(series.ASSUMPTION_HELD, slo, condition)
    presence = series.recorded(series.presence_series(slo), slo)
    on = f"on ({', '.join(slo.slice.by)})"
    expr = f"(\n  {presence}\n  unless {on}\n  {held}\n)\nor\n(\n  absent({held})\n  unless on ()\n  {presence}\n)"
    memory = human.duration(ASSUMPTION_MEMORY_MS)
    summary = f"{slo.name}: assumption {condition.name} does not hold ({_slice_text(slo)}), so its pages are held back"
    description = (
        f"{_slice_text(slo)}: {slo.name} assumes {condition.name} ({_go_text(condition.expr)}), and it has not held "
        f"at any time in the last {memory}. {_go_text(condition.why)} While it is broken this spec does not page; "
        f"its tickets still fire. {_go_text(condition.otherwise)}"
    )
    annotations = _annotations(model, slo, alert.name, summary, description)
    annotations["runbook_url"] = runbook_url(model, slo, f"assumption-{condition.name}")
    annotations["mitigation"] = _go_text(condition.otherwise)
    return AlertRule(alert, expr, annotations)


_RULE_BUILDERS = {
    "burn": _burn_rule,
    "range": _range_rule,
    "no_data": _no_data_rule,
    "vanished": _vanished_rule,
    "assumption": _assumption_rule,
}


def _with_gate(slo: SLO, rule: AlertRule) -> AlertRule:
    """A page waits for the spec's assumptions and a confirmation (``series.gated``); nothing else does."""
    if not rule.spec.gated or not slo.page_conditions:
        return rule
    return AlertRule(rule.spec, series.gated(slo, rule.expr, per_slice=rule.kind != "no_data"), rule.annotations)


def holds_back(model: Model, slo: SLO, severity: str) -> str | None:
    """What Alertmanager holds back while an alert of ``slo`` with channel ``severity`` fires, with links.

    One entry per ``explains`` entry (``explains_component`` is expanded into them) whose source
    can be this alert: the explained spec, the labels it must share, and its runbook, so the one
    page of an incident names the pages it holds back. A shadow spec holds back nothing.
    """
    if slo.mode != "live":
        return None
    entries = [
        f"{explains.slo} (same {', '.join(explains.equal)}): {model.project.runbook_base_url}/{explains.slo}.md"
        for explains in slo.explains
        if explains.severity in ("any", severity)
    ]
    if not entries:
        return None
    return _go_text("While this fires, Alertmanager holds back the alerts of " + "; ".join(entries))


def _with_holds_back(model: Model, slo: SLO, rule: AlertRule) -> AlertRule:
    text = holds_back(model, slo, rule.spec.severity)
    if text is None:
        return rule
    return AlertRule(rule.spec, rule.expr, {**rule.annotations, lbl.HOLDS_BACK: text})


def _with_extra_annotations(rule: AlertRule) -> AlertRule:
    """The team's extra annotations after the compiler's own, as literal text (never a template action)."""
    if not rule.spec.annotations:
        return rule
    extra = {key: _go_text(text) for key, text in rule.spec.annotations}
    return AlertRule(rule.spec, rule.expr, {**rule.annotations, **extra})


def paging_flag(model: Model, slo: SLO, page: AlertRule) -> str:
    """Per slice, a series while the fleet page's (gated) condition has held at every evaluation step of its
    ``for`` on history at least that long (about when the page fires): a subquery over the slice counts,
    never a per-unit read. The offset read asks for that history, so a young server, or a proof's first
    minutes, cannot count a short stretch as the whole ``for``."""
    by = ", ".join(slo.slice.by)
    units = series.recorded(series.FLEET_UNITS, slo)
    now = f"count by ({by}) (\n{_indent(page.expr)}\n)\nor on ({by}) 0 * sum by ({by}) ({units})"
    if not page.for_ms:
        return f"(\n{_indent(now)}\n) > 0"
    window, step = format_duration(page.for_ms), format_duration(model.project.evaluation_interval_ms)
    held = f"min_over_time(\n  (\n{_indent(_indent(now))}\n  )[{window}:{step}]\n) > 0"
    return f"{held}\nand on ({by})\n{units} offset {window}"


def _held_back_while_paging(model: Model, slo: SLO, unit: AlertRule, page: AlertRule) -> AlertRule:
    """A unit ticket is held back in a slice whose page has fired: the page is the incident, and a fleet-wide
    incident is then one alert on the server too, not one per node (7,500 active alerts cost Prometheus
    minutes of template expansion per evaluation, docs/live-tools.md). Before the page fires, and as soon
    as its condition breaks, every unit out has its ticket, so no flapping share can hide a unit."""
    on = f"on ({', '.join(slo.slice.by)})"
    expr = f"(\n{_indent(unit.expr)}\n)\nunless {on}\n(\n{_indent(paging_flag(model, slo, page))}\n)"
    wait, words = human.duration(page.for_ms), slo.fleet.describe() if slo.fleet else "its units"
    note = f" While {page.name} fires for the slice ({words} out for {wait}), its unit tickets are held back: "
    note += "the page is the incident."
    description = unit.annotations["description"] + _go_text(note)
    return AlertRule(unit.spec, expr, {**unit.annotations, "description": description})


def alert_rules(model: Model, spec: SpecPlan) -> list[AlertRule]:
    """The alerting rules of one spec, in the plan's order."""
    built = [_with_gate(spec.slo, _RULE_BUILDERS[alert.kind](model, spec.slo, alert)) for alert in spec.alerts]
    pages = {rule.spec.side: rule for rule in built if rule.spec.fleet == "page"}
    built = [
        _held_back_while_paging(model, spec.slo, rule, pages[rule.spec.side])
        if rule.spec.fleet == "unit" and rule.spec.side in pages
        else rule
        for rule in built
    ]
    return [_with_extra_annotations(_with_holds_back(model, spec.slo, rule)) for rule in built]


def rule_group(model: Model, spec: SpecPlan) -> dict[str, Any]:
    return {
        "name": f"slo-{spec.slo.name}",
        "interval": format_duration(model.project.evaluation_interval_ms),
        "rules": [*recording_rules(spec.slo), *(rule.to_rule() for rule in alert_rules(model, spec))],
    }


def render(plan: Plan) -> dict[str, bytes]:
    files: dict[str, bytes] = {}
    for spec in plan:
        slo = spec.slo
        header = (
            f"# Generated by slo-compiler from {slo.source} (spec {slo.name}, sha256 {slo.spec_hash}).\n"
            "# Do not edit: change the spec and run `slo-compiler generate`.\n"
        )
        body = dump({"groups": [rule_group(plan.model, spec)]})
        files[rules_path(slo)] = (header + body).encode("utf-8")
    return files
