"""Preflight: will each spec see its data on this Prometheus, and what would fire right now?

Per spec, from the model and the plan only: every selector's match count now, and for one that
matches nothing the matcher that removes the series and the values that exist instead; each
latency threshold's ``le`` edge (naming the stack relabeling that drops it); slice labels on the
series; join info metrics present and unique per join key; counters absent while their component
is up (created on their first event) and whether the spec handles that; the measured slices and
recorded series against the estimate and the budget; the current value against the ranges and
burn thresholds. A finding is ``problem`` when it makes the spec blind or wrong, ``note`` when it
is worth knowing, ``ok`` otherwise.
"""

from __future__ import annotations

import difflib
import functools
import math
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from typing import Any, Literal

from compiler.live import exprs
from compiler.live.client import Client, Labels, QueryError
from compiler.model import (
    SLO,
    Condition,
    GaugeSLI,
    LatencySLI,
    Model,
    QuantileSLI,
    RatioSLI,
    Selector,
    StateSLI,
    budget,
    queries,
    series,
)
from compiler.model.stacks import BUILT_IN_STACKS
from compiler.plan import AlertSpec, SpecPlan
from compiler.promql import Matcher, analyse, counter_selectors, quote, render_selector
from compiler.text import human
from compiler.text.numbers import go_float
from compiler.text.terminal import printable

Status = Literal["ok", "note", "problem"]
# Roles whose absence the rules already read as 0 (the bad rate falls back to 0 * total).
ZERO_FALLBACK_ROLES = frozenset({"bad", "errors"})
SHOWN_VALUES = 5
SHOWN_JOBS = 10  # the jobs listed when no single matcher explains an empty selector


@dataclass(frozen=True)
class Finding:
    check: str  # selector, bucket, slice-label, join, first-event, cardinality, now
    status: Status
    subject: str
    message: str
    detail: dict[str, Any] = field(default_factory=dict)


@dataclass
class SpecReport:
    spec: str
    source: str
    owner: str
    findings: list[Finding] = field(default_factory=list)

    @property
    def problems(self) -> int:
        return sum(1 for finding in self.findings if finding.status == "problem")


@dataclass(frozen=True)
class Role:
    """One selector the SLI reads, what it is for, and whether a missing series is read as 0."""

    name: str
    metric: str | None
    matchers: tuple[Matcher, ...]
    counter: bool
    handled_absent: bool  # the rules read it as 0 while absent
    needs_slice_labels: bool


def matcher_text(matcher: Matcher) -> str:
    return f"{matcher.name}{matcher.op}{quote(matcher.value)}"


def _selector_roles(name: str, selectors: Sequence[Selector], handled: bool) -> list[Role]:
    return [Role(name, s.metric, s.matchers, True, handled, True) for s in selectors]


def _expression_roles(name: str, expr: str, handled: bool) -> list[Role]:
    counters = {(metric, matchers) for metric, matchers in counter_selectors(expr)}
    roles = []
    for metric, matchers in dict.fromkeys(analyse(expr).selectors):
        counter = (metric, matchers) in counters
        roles.append(Role(name, metric, matchers, counter, handled and counter, False))
    return roles


def roles_of(slo: SLO) -> list[Role]:
    """Every selector the spec's SLI reads, in the order the spec names them."""
    sli = slo.sli
    if isinstance(sli, RatioSLI):
        return [
            *_selector_roles("bad", sli.bad, True),
            *_selector_roles("good", sli.good, False),
            *_selector_roles("total", sli.total, False),
        ]
    if isinstance(sli, LatencySLI):
        count = Selector(f"{sli.histogram}_count", sli.matchers)
        bucket = Selector(f"{sli.histogram}_bucket", sli.matchers)
        return [
            *_selector_roles("total", sli.total or (count,), False),
            *_selector_roles("buckets", (bucket,), False),
            *_selector_roles("errors", sli.errors, True),
        ]
    if isinstance(sli, QuantileSLI):
        return _selector_roles("buckets", (Selector(f"{sli.histogram}_bucket", sli.matchers),), False)
    if isinstance(sli, GaugeSLI):
        roles = _expression_roles("expr", sli.expr, sli.absent_as_zero_while is not None)
        if sli.absent_as_zero_while:
            roles += _expression_roles("presence", sli.absent_as_zero_while, False)
        return roles
    assert isinstance(sli, StateSLI)
    return _expression_roles("expr", sli.expr, False)


class Preflight:
    """Runs every check of one spec against one server."""

    def __init__(self, client: Client, model: Model) -> None:
        self.client = client
        self.model = model
        self._names: list[str] | None = None

    def metric_names(self) -> list[str]:
        if self._names is None:
            self._names = self.client.label_values("__name__")
        return self._names

    def run(self, spec: SpecPlan) -> SpecReport:
        slo = spec.slo
        report = SpecReport(slo.name, slo.source, slo.owner.name)
        for role in roles_of(slo):
            report.findings += self.check_role(slo, role)
        if isinstance(slo.sli, LatencySLI):
            report.findings += self.check_edges(slo, slo.sli)
        for join in slo.slice.joins:
            report.findings += self.check_join(join.info, join.on, join.labels)
        report.findings += [self.check_condition(slo, condition) for condition in slo.page_conditions]
        try:
            report.findings += self.check_slices_and_now(spec)
        except QueryError:
            message = (
                f"the server refuses the spec's own recording expression, so its rules would fail: "
                f"{self.client.last_error or 'no reason given'}"
            )
            report.findings.append(Finding("rule", "problem", series.presence_series(slo), message))
        return report

    # -- assumptions and confirmations ---------------------------------------------

    def check_condition(self, slo: SLO, condition: Condition) -> Finding:
        """An assumption holds, is broken or cannot be told, with the series that decide it; a
        confirmation's series must exist, or the pages it gates can never fire."""
        check = "assumption" if condition.kind == "assumes" else "confirmation"
        counts = {
            text: self.client.count(text)
            for text in dict.fromkeys(
                render_selector(name, matchers) for name, matchers in analyse(condition.expr).selectors
            )
        }
        decide = "; ".join(f"{text} ({count} series)" for text, count in counts.items())
        detail: dict[str, Any] = {"series": counts}
        try:
            holding = [
                _slice_key(slo, labels) for labels, _ in self.client.query(queries.condition_holds(slo, condition))
            ]
        except QueryError:
            reason = self.client.last_error or "no reason given"
            return Finding(check, "problem", condition.name, f"cannot tell: the server refuses it ({reason})", detail)
        detail["holds"] = [dict(key) for key in sorted(holding)]
        if condition.kind == "confirmed_by":
            if not all(counts.values()):
                message = f"its series are absent, so the pages it confirms can never fire: {decide}"
                return Finding(check, "problem", condition.name, message, detail)
            now = f"confirms a page now for {len(holding)} slice(s)" if holding else "confirms no page now"
            return Finding(check, "ok", condition.name, f"{now}; decided by {decide}", detail)
        if holding:
            shown = ", ".join(_show_key(key) for key in sorted(holding)[:SHOWN_VALUES])
            return Finding(
                check, "ok", condition.name, f"holds for {len(holding)} slice(s) ({shown}); decided by {decide}", detail
            )
        message = (
            f"broken: {condition.expr} returns nothing now, so this spec's pages stay silent here (once it has "
            f"not held for a day) and its ticket fires instead; decided by {decide}. {condition.otherwise}"
        )
        return Finding(check, "problem", condition.name, message, detail)

    # -- selectors ----------------------------------------------------------------

    def check_role(self, slo: SLO, role: Role) -> list[Finding]:
        text = render_selector(role.metric, role.matchers)
        matched = self.client.count(text)
        if matched:
            found = [Finding("selector", "ok", text, f"{role.name}: matches {matched} series now", {"series": matched})]
            if role.needs_slice_labels:
                found += self.check_slice_labels(slo, role, text, matched)
            return found
        metric_exists = role.metric is None or self.client.count(render_selector(role.metric, ())) > 0
        if metric_exists:
            return [self.culprit(role, text)]
        return [self.absent_metric(slo, role, text)]

    def culprit(self, role: Role, text: str) -> Finding:
        """Which matcher removes every series, and what values its label has instead."""
        status: Status = "note" if role.handled_absent else "problem"
        for index, matcher in enumerate(role.matchers):
            if matcher.name == "__name__":
                continue
            rest = render_selector(role.metric, role.matchers[:index] + role.matchers[index + 1 :])
            if not self.client.count(rest):
                continue
            values = self.client.query(f"count by ({matcher.name}) ({rest})")
            shown = sorted(values, key=lambda item: (-item[1], item[0].get(matcher.name, "")))[:SHOWN_VALUES]
            listed = ", ".join(f"{labels.get(matcher.name, '(none)')} ({int(n)} series)" for labels, n in shown)
            message = (
                f"{role.name}: matches 0 series; {matcher_text(matcher)} removes every one of them, "
                f"{matcher.name} has {listed}"
            )
            if role.handled_absent:
                message += " (the spec reads 0 bad events meanwhile)"
            detail = {
                "matcher": matcher_text(matcher),
                "values": {lab.get(matcher.name, ""): int(n) for lab, n in shown},
            }
            return Finding("selector", status, text, message, detail)
        message = f"{role.name}: matches 0 series, and no single matcher explains it"
        jobs = self.jobs_of(role.metric) if role.metric is not None else []
        if jobs:
            listed = ", ".join(f"{labels.get('job', '(none)')} ({int(n)} series)" for labels, n in jobs)
            message += f"; {role.metric} is there with job {listed}"
        detail = {"jobs": {labels.get("job", ""): int(n) for labels, n in jobs}} if jobs else {}
        return Finding("selector", status, text, message, detail)

    def jobs_of(self, metric: str) -> list[tuple[Labels, float]]:
        """The jobs that do have ``metric`` (the most series first, at most SHOWN_JOBS): one more query."""
        values = self.client.query(f"count by (job) ({render_selector(metric, ())})")
        return sorted(values, key=lambda item: (-item[1], item[0].get("job", "")))[:SHOWN_JOBS]

    def absent_metric(self, slo: SLO, role: Role, text: str) -> Finding:
        """A metric with no series at all: a counter not created yet, or a wrong name."""
        assert role.metric is not None
        up = self.component_up(slo, role)
        if role.counter and up:
            handled = "the spec reads 0 until then" if role.handled_absent else ""
            if handled:
                message = (
                    f"{role.name}: no series while its component is up ({up} target(s)): "
                    f"created on its first event; {handled}"
                )
                return Finding("first-event", "note", text, message, {"up": up, "handled": True})
            remedy = (
                "declare sli.gauge.absent_as_zero_while (e.g. 'up == 1')"
                if isinstance(slo.sli, GaugeSLI)
                else "read a total that exists from start-up, or write the SLI as a gauge with absent_as_zero_while"
            )
            message = (
                f"{role.name}: no series while its component is up ({up} target(s)): created on its first event, "
                "and until then the SLI has no data, so its no-data alert fires and every other alert is blind; "
                f"{remedy}"
            )
            return Finding("first-event", "problem", text, message, {"up": up, "handled": False})
        near = difflib.get_close_matches(role.metric, self.metric_names(), n=3, cutoff=0.75)
        hint = f"; similar names here: {', '.join(near)}" if near else ""
        status: Status = "note" if role.handled_absent else "problem"
        message = f"{role.name}: metric {role.metric} has no series on this server{hint}"
        return Finding("selector", status, text, message, {"similar": near})

    def component_up(self, slo: SLO, role: Role) -> int:
        """Targets up of the component the selector reads (the spec's component, or its job matchers)."""
        profile = self.model.project.scrape_profile
        component = profile.component(slo.slice.component) if profile and slo.slice.component else None
        jobs = component or tuple(m for m in role.matchers if m.name == "job")
        if isinstance(slo.sli, GaugeSLI) and slo.sli.absent_as_zero_while:
            return self.client.count(f"({slo.sli.absent_as_zero_while}) > 0")
        if not jobs:
            return 0
        return self.client.count(f"{render_selector('up', jobs)} == 1")

    def check_slice_labels(self, slo: SLO, role: Role, text: str, matched: int) -> list[Finding]:
        found = []
        for label in slo.slice.source_labels:
            missing = self.client.count(render_selector(role.metric, (*role.matchers, Matcher(label, "=", ""))))
            if not missing:
                continue
            share = "all" if missing == matched else f"{missing} of {matched}"
            if label in slo.slice.optional_labels:
                message = (
                    f"{role.name}: {share} of its series lack slice label {label}, which the spec declares optional "
                    "(slice.optional_labels): the slices are coarser here, as the spec's comments explain"
                )
                found.append(Finding("slice-label", "note", text, message, {"label": label, "missing": missing}))
                continue
            message = (
                f"{role.name}: {share} of its series lack slice label {label}; they are summed into a slice "
                f'with {label}="" that no owner recognises (a relabeling or another exporter version?)'
            )
            found.append(Finding("slice-label", "problem", text, message, {"label": label, "missing": missing}))
        return found

    # -- buckets -----------------------------------------------------------------

    def check_edges(self, slo: SLO, sli: LatencySLI) -> list[Finding]:
        bucket = render_selector(f"{sli.histogram}_bucket", sli.matchers)
        texts = sorted(set(self.client.label_values("le", bucket)), key=_edge_value)
        edges = [_edge_value(text) for text in texts]
        if not edges:
            return []
        shown = " ".join(texts)
        found = []
        for threshold in sli.thresholds:
            subject = f"{bucket} le={go_float(threshold.le)}"
            if threshold.le in edges:
                found.append(Finding("bucket", "ok", subject, f"threshold {go_float(threshold.le)}: le edge present"))
                continue
            message = (
                f'threshold {go_float(threshold.le)}: no bucket le="{go_float(threshold.le)}" in the scraped series, '
                "so every request counts as slow (the SLI reads 100% bad); "
                f"{self.dropped_by(sli.histogram, threshold.le)}; "
                f"edges present: {shown}"
            )
            found.append(Finding("bucket", "problem", subject, message, {"edges": texts}))
        return found

    def dropped_by(self, histogram: str, edge: float) -> str:
        profile = self.model.project.scrape_profile
        if profile is not None and edge in profile.dropped(histogram):
            return f"the scrape profile {profile.stack} drops it ({profile.relabeling})"
        stacks = [p for p in BUILT_IN_STACKS.values() if edge in p.dropped(histogram)]
        if stacks:
            named = "; ".join(f"{p.stack} drops it in {p.relabeling}" for p in stacks)
            return f"{named}; if this server runs that stack, choose an edge it keeps and name it in scrape_profile"
        return "no known stack drops it: check this server's metric_relabel_configs for the histogram"

    # -- joins -------------------------------------------------------------------

    def check_join(self, info: Selector, on: tuple[str, ...], labels: tuple[str, ...]) -> list[Finding]:
        text = render_selector(info.metric, info.matchers)
        rows = self.client.query(f"max by ({', '.join((*on, *labels))}) ({text})")
        if not rows:
            message = "join info metric has no series: the join drops every slice and the SLI reads nothing"
            return [Finding("join", "problem", text, message)]
        keyed: dict[tuple[str, ...], set[tuple[str, ...]]] = {}
        for row, _ in rows:
            keyed.setdefault(tuple(row.get(k, "") for k in on), set()).add(tuple(row.get(k, "") for k in labels))
        duplicates = {key: values for key, values in keyed.items() if len(values) > 1}
        if not duplicates:
            return [Finding("join", "ok", text, f"{len(keyed)} join key(s), each with one {', '.join(labels)}")]
        examples = []
        for key, values in sorted(duplicates.items())[:SHOWN_VALUES]:
            where = ", ".join(f"{k}={v}" for k, v in zip(on, key, strict=True))
            what = " | ".join(
                ", ".join(f"{k}={v}" for k, v in zip(labels, value, strict=True)) for value in sorted(values)
            )
            examples.append(f"({where}) has {what}")
        message = (
            f"{len(duplicates)} join key(s) have more than one value of {', '.join(labels)}: "
            f"{'; '.join(examples)}; the rule fails with many-to-many matching for the whole spec"
        )
        detail = {"duplicates": len(duplicates)}
        return [Finding("join", "problem", text, message, detail)]

    # -- slices, budget and what would fire now ----------------------------------

    def check_slices_and_now(self, spec: SpecPlan) -> list[Finding]:
        slo = spec.slo
        raw = exprs.raw_queries(slo)
        presence = self.client.query(raw[series.presence_series(slo)])
        parts_expr = queries.raw_expressions(slo).get(series.PARTS_5M)  # reads raw series only
        parts = len(self.client.query(parts_expr)) if parts_expr else 0
        found = [self.cardinality(slo, presence, parts)]
        found += self.empty_slice_labels(slo, presence)
        if presence:
            found += self.now(spec, raw)
        return found

    def cardinality(self, slo: SLO, presence: list[tuple[Labels, float]], parts: int = 0) -> Finding:
        """Slices now and the series they record (with a ratio's ``parts`` as measured), against the budget."""
        estimate = budget.estimate(slo, self.model.project.cluster_profile)
        slices = len(presence)
        recorded = slices * estimate.series_per_slice + parts + 1
        detail = {"slices": slices, "recorded": recorded, "estimate": estimate.series, "budget": estimate.budget}
        subject = f"slice by ({', '.join(slo.slice.by)})"
        if not slices:
            message = "the SLI has no series now: every alert of the spec is blind and its no-data alert would fire"
            return Finding("cardinality", "problem", subject, message, detail)
        text = (
            f"{slices} slice(s) now, {recorded} recorded series (estimate {estimate.series}, budget {estimate.budget})"
        )
        if recorded > estimate.budget:
            return Finding("cardinality", "problem", subject, f"{text}: over the series_budget", detail)
        return Finding("cardinality", "ok", subject, text, detail)

    def empty_slice_labels(self, slo: SLO, presence: list[tuple[Labels, float]]) -> list[Finding]:
        found = []
        for label in slo.slice.by:
            empty = sum(1 for labels, _ in presence if not labels.get(label))
            if empty:
                optional = label in slo.slice.optional_labels
                message = (
                    f"{empty} slice(s) have no {label} label: the series they sum lack it (or a join did not attach it)"
                    + (", which the spec allows (slice.optional_labels)" if optional else "")
                )
                status: Status = "note" if optional else "problem"
                detail = {"label": label, "slices": empty}
                found.append(Finding("slice-label", status, f"slice {label}", message, detail))
        return found

    def now(self, spec: SpecPlan, raw: dict[str, str]) -> list[Finding]:
        slo = spec.slo
        values = self.values(slo, raw)
        found = []
        for alert in spec.alerts:
            verdict = self.judge(spec, alert, values)
            if verdict is not None:
                found.append(verdict)
        return found

    def values(self, slo: SLO, raw: dict[str, str]) -> dict[tuple[tuple[str, str], ...], float]:
        if not slo.counts_events:
            return {_slice_key(slo, labels): value for labels, value in self.client.query(raw[series.VALUE])}
        return self.ratios(slo, 300_000)

    def ratios(self, slo: SLO, window_ms: int) -> dict[tuple[tuple[str, str], ...], float]:
        total, bad = exprs.window_queries(slo, window_ms)
        totals = {_slice_key(slo, labels): value for labels, value in self.client.query(total)}
        bads = {_slice_key(slo, labels): value for labels, value in self.client.query(bad)}
        return {key: _div(bads.get(key, 0.0), value) for key, value in totals.items()}

    def judge(
        self, spec: SpecPlan, alert: AlertSpec, values: dict[tuple[tuple[str, str], ...], float]
    ) -> Finding | None:
        slo = spec.slo
        if alert.kind == "no_data":
            return None
        if alert.burn is not None and slo.objective is not None:
            threshold = slo.objective.threshold(alert.burn)
            long_ratio = self.ratios(slo, alert.burn.long_ms)
            short_ratio = self.ratios(slo, alert.burn.short_ms)
            firing = [k for k in long_ratio if long_ratio[k] > threshold and short_ratio.get(k, 0.0) > threshold]
            windows = f"{alert.label_map.get('long_window')}/{alert.label_map.get('short_window')}"
            rule = f"{alert.name} ({alert.severity_text}, {windows} above {human.share(threshold)} errors)"
            return _verdict(rule, firing, long_ratio, human.share)
        band = alert.band
        if band is None or alert.side is None:
            return None
        bound = band.maximum if alert.side == "Above" else band.minimum
        if bound is None:
            return None
        if alert.fleet is not None:
            return self.judge_fleet(slo, alert, bound)
        beyond = [k for k, v in values.items() if (v > bound if alert.side == "Above" else v < bound)]
        word = "above" if alert.side == "Above" else "below"
        show = functools.partial(human.reading, slo.unit)
        return _verdict(f"{alert.name} ({alert.severity_text}, {word} {show(bound)})", beyond, values, show)

    def judge_fleet(self, slo: SLO, alert: AlertSpec, bound: float) -> Finding | None:
        """A fleet's critical alerts judge each unit, not the slice's value: the unit ticket fires for a slice
        with a unit beyond the bound, the page only for a slice with as many units beyond it as the fleet says."""
        if slo.fleet is None:
            return None
        above = alert.side == "Above"
        expr = exprs.inline_recorded(queries.unit_value(slo.sli, slo.slice, slo.fleet.units), slo)
        units: dict[tuple[tuple[str, str], ...], int] = {}
        out: dict[tuple[tuple[str, str], ...], int] = {}
        for labels, value in self.client.query(expr):
            key = _slice_key(slo, labels)
            units[key] = units.get(key, 0) + 1
            out[key] = out.get(key, 0) + (1 if (value > bound if above else value < bound) else 0)
        word = "above" if above else "below"
        shown_bound = human.value(slo.unit, bound)
        if alert.fleet == "unit":  # held back in a slice that pages (after the page's for, as this assumes)
            firing = [key for key in units if out[key] and not slo.fleet.pages(units[key], out[key])]
            rule = f"{alert.name} ({alert.severity_text}, a unit {word} {shown_bound})"
        else:
            firing = [key for key in units if slo.fleet.pages(units[key], out[key])]
            rule = f"{alert.name} ({alert.severity_text}, {slo.fleet.describe()} {word} {shown_bound})"
        counts = {key: f"{out[key]} of {units[key]} unit(s) {word} {shown_bound}" for key in units}
        if not firing:
            worst = max(units, key=lambda key: out[key], default=None)
            peak = f"; {_show_key(worst)}: {counts[worst]}" if worst is not None else ""
            return Finding("now", "ok", rule, f"quiet now{peak}", {"firing": []})
        shown = "; ".join(f"{_show_key(key)}: {counts[key]}" for key in sorted(firing)[:SHOWN_VALUES])
        more = f" and {len(firing) - SHOWN_VALUES} more" if len(firing) > SHOWN_VALUES else ""
        message = f"would fire now (after its for) for {len(firing)} slice(s): {shown}{more}"
        return Finding("now", "note", rule, message, {"firing": [dict(key) for key in sorted(firing)]})


def _edge_value(text: str) -> float:
    try:
        return float(text)
    except ValueError:
        return math.nan


def _div(a: float, b: float) -> float:
    return a / b if b else math.nan


def _slice_key(slo: SLO, labels: Labels) -> tuple[tuple[str, str], ...]:
    return tuple((label, labels.get(label, "")) for label in slo.slice.by)


def _show_key(key: tuple[tuple[str, str], ...]) -> str:
    return ", ".join(f"{k}={v}" for k, v in key) or "cluster-wide"


def _verdict(
    rule: str,
    firing: list[tuple[tuple[str, str], ...]],
    values: dict[tuple[tuple[str, str], ...], float],
    show: Callable[[float], str],
) -> Finding:
    """What one alert would do now: the slices whose condition holds (its ``for`` still has to pass), each value
    written by ``show`` (the spec's unit, or a percent for error ratios)."""
    if not firing:
        finite = [v for v in values.values() if not math.isnan(v)]
        peak = f"; highest value now {show(max(finite))}" if finite else ""
        return Finding("now", "ok", rule, f"quiet now{peak}", {"firing": []})
    shown = "; ".join(f"{_show_key(key)} at {show(values[key])}" for key in sorted(firing)[:SHOWN_VALUES])
    more = f" and {len(firing) - SHOWN_VALUES} more" if len(firing) > SHOWN_VALUES else ""
    message = f"would fire now (after its for) for {len(firing)} slice(s): {shown}{more}"
    return Finding("now", "note", rule, message, {"firing": [dict(key) for key in sorted(firing)]})


def run(client: Client, model: Model, specs: Sequence[SpecPlan]) -> list[SpecReport]:
    checker = Preflight(client, model)
    return [checker.run(spec) for spec in specs]


# -- output ------------------------------------------------------------------------

_STATUS_TEXT = {"ok": "ok", "note": "note", "problem": "PROBLEM"}


def render_table(reports: Sequence[SpecReport], server: str) -> str:
    """One block per spec, one line per finding: status, check, what was checked, what was found. Text
    from the server (label values, its version, its errors) is shown with control characters escaped."""
    problems = sum(report.problems for report in reports)
    lines = [f"preflight against {printable(server)}: {len(reports)} spec(s), {problems} problem(s)", ""]
    for report in reports:
        verdict = f"{report.problems} problem(s)" if report.problems else "sees its data"
        lines.append(printable(f"{report.spec} ({report.owner}, {report.source}): {verdict}"))
        for finding in report.findings:
            lines.append(f"  {_STATUS_TEXT[finding.status]:<8} {finding.check:<12} {printable(finding.subject)}")
            lines.append(f"  {'':<8} {'':<12} {printable(finding.message)}")
        lines.append("")
    return "\n".join(lines)


def render_json(reports: Sequence[SpecReport], server: str) -> dict[str, Any]:
    return {
        "prometheus": server,
        "problems": sum(report.problems for report in reports),
        "specs": [
            {
                "spec": report.spec,
                "owner": report.owner,
                "source": report.source,
                "problems": report.problems,
                "findings": [
                    {
                        "check": f.check,
                        "status": f.status,
                        "subject": f.subject,
                        "message": f.message,
                        "detail": f.detail,
                    }
                    for f in report.findings
                ],
            }
            for report in reports
        ],
    }
