"""Prometheus recording and alerting rules: one file and one rule group per spec.

A pure function of the model. Cost rules: only the first recording rules read raw
series, and only over 5m; every longer window reads the SLO's own recorded,
slice-aggregated series (see ``compiler.series``). An SLO records at most six series:
``slo_info``, bad and total rates over 5m, their 1h averages, and the budget remaining.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any, Literal

from compiler import labels as lbl
from compiler import series
from compiler.build import alert_names_for
from compiler.links import runbook_url
from compiler.model import (
    SLO,
    BurnAlert,
    GaugeSLI,
    LatencySLI,
    Model,
    QuantileSLI,
    Range,
    RatioSLI,
    Selector,
    Slice,
    StateSLI,
)
from compiler.numbers import clean_number, format_value, go_float
from compiler.promql import Matcher, format_duration, render_selector
from compiler.yamlout import dump

RULES_DIR = "prometheus/rules"
RAW_RANGE = "5m"
TERM_LABEL = lbl.TERM


# -- naming shared with runbooks, routes and tests --------------------------------------


def alert_names(slo: SLO) -> list[str]:
    """Every alert name a spec produces, in rule order."""
    return alert_names_for(
        slo.alert_name, slo.objective is not None, slo.normal_range, slo.critical_range, slo.no_data.enabled
    )


def rules_path(slo: SLO) -> str:
    return f"{RULES_DIR}/{slo.name}.rules.yaml"


# -- PromQL building blocks -------------------------------------------------------------


def _by(labels: Sequence[str]) -> str:
    return f" by ({', '.join(labels)})" if labels else ""


def _on(labels: Sequence[str]) -> str:
    return f"on ({', '.join(labels)})"


def _selector(selector: Selector, extra: Sequence[Matcher] = ()) -> str:
    return render_selector(selector.metric, (*selector.matchers, *extra))


def _joined(vector: str, slice_: Slice) -> str:
    """Attach slice labels from the joins' info metrics (whose values must be 1), in order."""
    for join in slice_.joins:
        keys = [*join.on, *join.labels]
        info = render_selector(join.info.metric, join.info.matchers)
        vector = f"{vector} * {_on(join.on)} group_left ({', '.join(join.labels)}) max by ({', '.join(keys)}) ({info})"
    return vector


def _indent(text: str, spaces: int = 2) -> str:
    """Indent every line of a nested expression so the generated rules read as a tree."""
    pad = " " * spaces
    return "\n".join(pad + line if line else line for line in text.split("\n"))


def _sum_of(terms: Sequence[str], by: Sequence[str]) -> str:
    if len(terms) == 1:
        return f"sum{_by(by)} ({terms[0]})"
    return f"sum{_by(by)} (\n" + _indent("\nor\n".join(terms)) + "\n)"


def _rate_sum(selectors: Sequence[Selector], slice_: Slice) -> str:
    """sum by (slice) of the 5m rates of one or more selectors.

    Several selectors are combined with ``or`` before the sum; a helper label keeps series
    of different metrics with equal labels (rx and tx errors on one device) apart.
    """
    terms = []
    for index, selector in enumerate(selectors):
        term = _joined(f"rate({_selector(selector)}[{RAW_RANGE}])", slice_)
        if index:
            term = f'label_replace({term}, "{TERM_LABEL}", "{index}", "", "")'
        terms.append(term)
    return _sum_of(terms, slice_.by)


def _le_matcher(le: float) -> Matcher:
    """Prometheus 3 writes integral edges as 1.0, Prometheus 2 as 1: match both."""
    text = go_float(le)
    if le.is_integer() and "e" not in text:
        return Matcher(lbl.BUCKET_BOUND, "=~", f"{text}(\\.0)?")
    return Matcher(lbl.BUCKET_BOUND, "=", text)


def _zero_fallback(expr: str, slo: SLO) -> str:
    """Keep a slice with no bad events at 0 rather than absent, shaped like its total."""
    return f"(\n{_indent(expr)}\n)\nor {_on(slo.slice.by)}\n  0 * {series.recorded(series.TOTAL_5M, slo)}"


def _total_and_bad(slo: SLO) -> tuple[str, str]:
    sli = slo.sli
    by = slo.slice.by
    if isinstance(sli, RatioSLI):
        total = _rate_sum(sli.total, slo.slice)
        if sli.bad:
            return total, _zero_fallback(_rate_sum(sli.bad, slo.slice), slo)
        good = _rate_sum(sli.good, slo.slice)
        recorded_total = series.recorded(series.TOTAL_5M, slo)
        bad = (
            f"clamp_min(\n  {recorded_total}\n  - {_on(by)}\n{_indent(good)},\n  0\n)\nor {_on(by)}\n  {recorded_total}"
        )
        return total, bad
    if isinstance(sli, LatencySLI):
        count = Selector(f"{sli.histogram}_count", sli.matchers)
        total = _rate_sum(sli.total or (count,), slo.slice)
        good_terms = []
        for threshold in sli.thresholds:
            bucket = render_selector(
                f"{sli.histogram}_bucket", (*sli.matchers, *threshold.when, _le_matcher(threshold.le))
            )
            good_terms.append(_joined(f"rate({bucket}[{RAW_RANGE}])", slo.slice))
        count_sum = _rate_sum((count,), slo.slice)
        # A slice with no request under any threshold has no bucket series to subtract: all of it is slow.
        good = f"(\n{_indent(_sum_of(good_terms, by))}\n  or {_on(by)}\n  0 * {count_sum}\n)"
        slow = f"clamp_min(\n{_indent(count_sum)}\n  -\n{_indent(good)},\n  0\n)"
        if not sli.errors:
            return total, slow
        errors = _zero_fallback(_rate_sum(sli.errors, slo.slice), slo)
        return total, f"{slow}\n+ {_on(by)}\n(\n{_indent(errors)}\n)"
    if isinstance(sli, StateSLI):
        state = _joined(f"({sli.expr})", slo.slice)
        bad_state = f"({state})" if slo.slice.joins else state
        return f"count{_by(by)} (\n  {state}\n)", f"sum{_by(by)} (\n  1 - {bad_state}\n)"
    raise TypeError(f"{type(sli).__name__} has no events")  # pragma: no cover


def _value(slo: SLO) -> str:
    sli = slo.sli
    by = _by(slo.slice.by)
    if isinstance(sli, GaugeSLI):
        return f"{sli.aggregate}{by} (\n  {_joined(f'({sli.expr})', slo.slice)}\n)"
    if isinstance(sli, QuantileSLI):
        bucket = render_selector(f"{sli.histogram}_bucket", sli.matchers)
        keep = [lbl.BUCKET_BOUND, *slo.slice.by]
        rate = _joined(f"rate({bucket}[{RAW_RANGE}])", slo.slice)
        return f"histogram_quantile(\n  {go_float(sli.quantile)},\n  sum by ({', '.join(keep)}) (\n    {rate}\n  )\n)"
    raise TypeError(f"{type(sli).__name__} is not a gauge")  # pragma: no cover


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
        rules.append(_record(series.VALUE, _value(slo), slo))
        return rules
    total, bad = _total_and_bad(slo)
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
    """One alerting rule, with what it means, so tests and runbooks need not re-parse the YAML."""

    name: str
    expr: str
    for_ms: int
    keep_firing_for_ms: int
    labels: dict[str, str]
    annotations: dict[str, str]
    kind: Literal["burn", "range", "no_data"]
    burn: BurnAlert | None = None
    band: Range | None = None
    band_label: str = ""  # Normal | Critical
    direction: str = ""  # Above | Below

    def to_rule(self) -> dict[str, Any]:
        rule: dict[str, Any] = {"alert": self.name, "expr": self.expr}
        if self.for_ms:
            rule["for"] = format_duration(self.for_ms)
        if self.keep_firing_for_ms:
            rule["keep_firing_for"] = format_duration(self.keep_firing_for_ms)
        rule["labels"] = dict(self.labels)
        rule["annotations"] = dict(self.annotations)
        return rule


def _labels(slo: SLO, severity: str, extra: dict[str, str]) -> dict[str, str]:
    """Routing labels. A shadow spec is marked so Alertmanager keeps it off paging receivers;
    a live spec with an automated mitigation names its automation webhook."""
    labels = {lbl.SEVERITY: severity, lbl.TEAM: slo.owner.name, lbl.SLO: slo.name, lbl.FAMILY: slo.family, **extra}
    if slo.mode == "shadow":
        labels[lbl.SHADOW] = "true"
    elif slo.mitigation.automation:
        labels[lbl.AUTOMATION] = slo.mitigation.automation
    return labels


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


def _burn_alert(model: Model, slo: SLO, burn: BurnAlert) -> AlertRule:
    objective = slo.objective
    assert objective is not None
    threshold = go_float(objective.threshold(burn))
    long_w, short_w = format_duration(burn.long_ms), format_duration(burn.short_ms)
    expr = (
        f"(\n  {series.window_ratio(slo, burn.long_ms)}\n) > {threshold}\n"
        f"and\n(\n  {series.window_ratio(slo, burn.short_ms)}\n) > {threshold}"
    )
    period = format_duration(objective.period_ms)
    exhaustion = format_duration(int(objective.period_ms / burn.factor) // 60_000 * 60_000)
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
    name = f"{slo.alert_name}ErrorBudgetBurn"
    labels = {lbl.LONG_WINDOW: long_w, lbl.SHORT_WINDOW: short_w, lbl.BURN_FACTOR: go_float(burn.factor)}
    return AlertRule(
        name=name,
        expr=expr,
        for_ms=burn.for_ms,
        keep_firing_for_ms=burn.keep_firing_for_ms,
        labels=_labels(slo, burn.severity, labels),
        annotations=_annotations(model, slo, name, summary, description),
        kind="burn",
        burn=burn,
    )


def _range_alerts(model: Model, slo: SLO, band: Range, label: str) -> list[AlertRule]:
    rules = []
    now = series.value(slo)
    rel = band.relative
    reason = f" {_go_text(band.reason)}" if band.reason else ""
    persistence = format_duration(band.for_ms)
    for direction in ("Above", "Below"):
        static = band.maximum if direction == "Above" else band.minimum
        factor = None if rel is None else (rel.max_factor if direction == "Above" else rel.min_factor)
        if static is None and factor is None:
            continue
        op = ">" if direction == "Above" else "<"
        parts, bounds = [], []
        if static is not None:
            parts.append(f"{now} {op} {go_float(static)}")
            bounds.append(f"{'max' if direction == 'Above' else 'min'} {format_value(slo.unit, static)}")
        if factor is not None and rel is not None:
            past = series.value(slo, rel.offset_ms)
            offset = format_duration(rel.offset_ms)
            floor = go_float(rel.floor)
            if direction == "Above":
                cond = f"{now} > {go_float(factor)} * {past}"
                if rel.floor:
                    cond += f"\n  and {now} > {floor}"
                bounds.append(
                    f"{go_float(factor)}x its value {offset} ago"
                    + (f" once above {format_value(slo.unit, rel.floor)}" if rel.floor else "")
                )
            else:
                cond = f"{now} < {go_float(factor)} * {past}"
                if rel.floor:
                    cond += f"\n  and {past} > {floor}"
                bounds.append(
                    f"{go_float(factor)}x its value {offset} ago"
                    + (f" when that was above {format_value(slo.unit, rel.floor)}" if rel.floor else "")
                )
            parts.append(cond)
        expr = parts[0] if len(parts) == 1 else "(\n  " + "\n)\nor\n(\n  ".join(parts) + "\n)"
        name = f"{slo.alert_name}{direction}{label}Range"
        word = "above" if direction == "Above" else "below"
        summary = f"{slo.name}: {word} its {label.lower()} range ({_slice_text(slo)})"
        description = (
            f"{_slice_text(slo)}: the value {_HUMANIZE[slo.unit]} is {word} the {label.lower()} range "
            f"({'; '.join(bounds)}) for at least {persistence}.{reason}"
        )
        rules.append(
            AlertRule(
                name=name,
                expr=expr,
                for_ms=band.for_ms,
                keep_firing_for_ms=band.keep_firing_for_ms,
                labels=_labels(slo, band.severity, {}),
                annotations=_annotations(model, slo, name, summary, description),
                kind="range",
                band=band,
                band_label=label,
                direction=direction,
            )
        )
    return rules


def _no_data_alert(model: Model, slo: SLO) -> AlertRule:
    presence = series.recorded(series.presence_series(slo), slo)
    wait = format_duration(slo.no_data.for_ms)
    summary = f"{slo.name}: no SLI data for {wait}"
    versions = f" (spec checked against Kubernetes {slo.k8s_versions})" if slo.k8s_versions else ""
    description = (
        f"No series feed the {slo.name} SLI for {wait}: every alert of this spec is blind. Check the scrape "
        f"targets and whether a metric was renamed by an upgrade{versions}."
    )
    name = f"{slo.alert_name}NoData"
    return AlertRule(
        name=name,
        expr=f"absent({presence})",
        for_ms=slo.no_data.for_ms,
        keep_firing_for_ms=0,
        labels=_labels(slo, slo.no_data.severity, {}),
        annotations=_annotations(model, slo, name, summary, _go_text(description)),
        kind="no_data",
    )


def alert_rules(model: Model, slo: SLO) -> list[AlertRule]:
    rules: list[AlertRule] = []
    if slo.objective is not None:
        rules.extend(_burn_alert(model, slo, burn) for burn in slo.objective.burn_alerts)
    if slo.normal_range is not None:
        rules.extend(_range_alerts(model, slo, slo.normal_range, "Normal"))
    if slo.critical_range is not None:
        rules.extend(_range_alerts(model, slo, slo.critical_range, "Critical"))
    if slo.no_data.enabled:
        rules.append(_no_data_alert(model, slo))
    return rules


def rule_group(model: Model, slo: SLO) -> dict[str, Any]:
    return {
        "name": f"slo-{slo.name}",
        "interval": format_duration(model.project.evaluation_interval_ms),
        "rules": [*recording_rules(slo), *(rule.to_rule() for rule in alert_rules(model, slo))],
    }


def render(model: Model) -> dict[str, bytes]:
    files: dict[str, bytes] = {}
    for slo in model.slos:
        header = (
            f"# Generated by slo-compiler from {slo.source} (spec {slo.name}, sha256 {slo.spec_hash}).\n"
            "# Do not edit: change the spec and run `make generate`.\n"
        )
        body = dump({"groups": [rule_group(model, slo)]})
        files[rules_path(slo)] = (header + body).encode("utf-8")
    return files
