"""Prometheus recording and alerting rules: one file and one rule group per spec.

A pure function of the plan: which alerts exist, their names, labels and timing come from
``compiler.plan``; this module adds only the PromQL and the annotation text.

Cost rules: only the first recording rules read raw series, and only over 5m; every
longer window reads the SLO's own recorded, slice-aggregated series (see
``compiler.model.series``). An SLO records at most six series: ``slo_info``, bad and
total rates over 5m, their 1h averages, and the budget remaining.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from compiler.model import SLO, BurnAlert, Model, Range, queries, series, windows
from compiler.model import labels as lbl
from compiler.model.links import rules_path, runbook_url
from compiler.plan import AlertSpec, Plan, SpecPlan
from compiler.promql import format_duration
from compiler.text.numbers import clean_number, format_value, go_float
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
    if not slo.counts_events:
        rules.append(_record(series.VALUE, queries.value(slo), slo))
        return rules
    total, bad = queries.total_and_bad(slo)
    rules.append(_record(series.TOTAL_5M, total, slo))
    rules.append(_record(series.BAD_5M, bad, slo))
    if slo.objective is None:
        return rules
    rules.append(_record(series.TOTAL_1H, f"avg_over_time({series.recorded(series.TOTAL_5M, slo)}[1h])", slo))
    rules.append(_record(series.BAD_1H, f"avg_over_time({series.recorded(series.BAD_5M, slo)}[1h])", slo))
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
    return rules


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
    def labels(self) -> dict[str, str]:
        return self.spec.label_map

    def to_rule(self) -> dict[str, Any]:
        rule: dict[str, Any] = {"alert": self.name, "expr": self.expr}
        if self.for_ms:
            rule["for"] = format_duration(self.for_ms)
        if self.keep_firing_for_ms:
            rule["keep_firing_for"] = format_duration(self.keep_firing_for_ms)
        rule["labels"] = self.labels
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
    long_w, short_w = format_duration(burn.long_ms), format_duration(burn.short_ms)
    expr = (
        f"(\n  {series.window_ratio(slo, burn.long_ms, hourly_days=burn.hourly_days)}\n) > {threshold}\n"
        f"and\n(\n  {series.window_ratio(slo, burn.short_ms, hourly_days=burn.hourly_days)}\n) > {threshold}"
    )
    period = format_duration(objective.period_ms)
    exhaustion = format_duration(windows.exhaustion_ms(objective.period_ms, burn.factor))
    target = f"{go_float(clean_number(objective.target * 100))}%"
    summary = (
        f"{slo.name}: error budget burning {go_float(burn.factor)}x too fast over {long_w} and {short_w} "
        f"({_slice_text(slo)})"
    )
    description = (
        f"{_slice_text(slo)}: the error ratio over {long_w} is {_HUMANIZE['ratio']} and the {short_w} window "
        f"agrees, above {go_float(burn.factor)}x the budget of the {target} objective over {period} "
        f"(threshold {format_value(slo.unit, burn.factor * objective.budget)}). At this rate the whole {period} "
        f"budget is gone in {exhaustion}."
    )
    return AlertRule(alert, expr, _annotations(model, slo, alert.name, summary, description))


def _range_condition(slo: SLO, band: Range, side: str) -> tuple[str, list[str]]:
    """The PromQL of one side of a band, and the bounds in words for the description."""
    now = series.value(slo)
    rel = band.relative
    above = side == "Above"
    static = band.maximum if above else band.minimum
    factor = None if rel is None else (rel.max_factor if above else rel.min_factor)
    op = ">" if above else "<"
    parts, bounds = [], []
    if static is not None:
        parts.append(f"{now} {op} {go_float(static)}")
        bounds.append(f"{'max' if above else 'min'} {format_value(slo.unit, static)}")
    if factor is not None and rel is not None:
        past = series.value(slo, rel.offset_ms)
        offset = format_duration(rel.offset_ms)
        floor = go_float(rel.floor)
        cond = f"{now} {op} {go_float(factor)} * {past}"
        if rel.floor:
            cond += f"\n  and {now if above else past} > {floor}"
        floor_text = ""
        if rel.floor:
            floor_value = format_value(slo.unit, rel.floor)
            floor_text = f" once above {floor_value}" if above else f" when that was above {floor_value}"
        bounds.append(f"{go_float(factor)}x its value {offset} ago{floor_text}")
        parts.append(cond)
    expr = parts[0] if len(parts) == 1 else "(\n  " + "\n)\nor\n(\n  ".join(parts) + "\n)"
    return expr, bounds


def _range_rule(model: Model, slo: SLO, alert: AlertSpec) -> AlertRule:
    band, side, level = alert.band, alert.side, alert.level
    assert band is not None and side is not None and level is not None
    expr, bounds = _range_condition(slo, band, side)
    reason = f" {_go_text(band.reason)}" if band.reason else ""
    word = "above" if side == "Above" else "below"
    summary = f"{slo.name}: {word} its {level.lower()} range ({_slice_text(slo)})"
    description = (
        f"{_slice_text(slo)}: the value {_HUMANIZE[slo.unit]} is {word} the {level.lower()} range "
        f"({'; '.join(bounds)}) for at least {format_duration(band.for_ms)}.{reason}"
    )
    return AlertRule(alert, expr, _annotations(model, slo, alert.name, summary, description))


def _no_data_rule(model: Model, slo: SLO, alert: AlertSpec) -> AlertRule:
    presence = series.recorded(series.presence_series(slo), slo)
    wait = format_duration(alert.for_ms)
    summary = f"{slo.name}: no SLI data for {wait}"
    versions = f" (spec checked against Kubernetes {slo.k8s_versions})" if slo.k8s_versions else ""
    description = (
        f"No series feed the {slo.name} SLI for {wait}: every alert of this spec is blind. Check the scrape "
        f"targets and whether a metric was renamed by an upgrade{versions}."
    )
    return AlertRule(alert, f"absent({presence})", _annotations(model, slo, alert.name, summary, _go_text(description)))


_RULE_BUILDERS = {"burn": _burn_rule, "range": _range_rule, "no_data": _no_data_rule}


def _with_extra_annotations(rule: AlertRule) -> AlertRule:
    """The team's extra annotations after the compiler's own, as literal text (never a template action)."""
    if not rule.spec.annotations:
        return rule
    extra = {key: _go_text(text) for key, text in rule.spec.annotations}
    return AlertRule(rule.spec, rule.expr, {**rule.annotations, **extra})


def alert_rules(model: Model, spec: SpecPlan) -> list[AlertRule]:
    """The alerting rules of one spec, in the plan's order."""
    return [_with_extra_annotations(_RULE_BUILDERS[alert.kind](model, spec.slo, alert)) for alert in spec.alerts]


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
            "# Do not edit: change the spec and run `make generate`.\n"
        )
        body = dump({"groups": [rule_group(plan.model, spec)]})
        files[rules_path(slo)] = (header + body).encode("utf-8")
    return files
