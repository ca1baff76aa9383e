"""Semantic checks and construction of the frozen model from schema-valid documents.

Everything the JSON Schema cannot say is checked here, each problem reported at the
position of the value at fault: unknown owners, duplicate names, objective range,
PromQL that does not parse, thresholds that are not bucket edges, bounds that can never
be crossed, windows that do not fit the period, labels that an aggregation loses.
"""

from __future__ import annotations

import functools
import math
import re
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any, Literal

from compiler import promql
from compiler.diagnostics import Diagnostics
from compiler.model import (
    SLI,
    SLO,
    BurnAlert,
    Expectation,
    Explains,
    GaugeSLI,
    Join,
    LatencySLI,
    LatencyThreshold,
    Mitigation,
    Model,
    NoData,
    Objective,
    Project,
    QuantileSLI,
    Range,
    RatioSLI,
    Relative,
    Scenario,
    Segment,
    Selector,
    Severity,
    Slice,
    StateSLI,
    Team,
    Unit,
)
from compiler.model.buckets import KNOWN_BUCKETS
from compiler.model.budget import estimate
from compiler.model.labels import reserved_because
from compiler.promql import Matcher, PromQLError, matchsets
from compiler.source.load import Document, PathKey
from compiler.source.registry import build_project, build_teams, check_receiver_names, check_templated_fields
from compiler.source.schema import _suggest, validate_document
from compiler.text.numbers import clean_number, go_float

MINUTE = 60_000
EXPECTATION_KINDS: dict[str, Literal["firing", "silent", "nothing"]] = {
    "fires_by": "firing",
    "silent_until": "silent",
    "nothing_fires_until": "nothing",
}
HOUR = 60 * MINUTE
DAY = 24 * HOUR
RAW_RANGE_LIMIT_MS = 5 * MINUTE
# promtool evaluates every rule at every minute of a scenario: 1d of them costs seconds, a year hours.
SCENARIO_LIMIT_MS = DAY
MAX_WAIT_MS = DAY  # longest for / keep_firing_for
MAX_OFFSET_MS = 7 * DAY  # longest relative.offset: the same time last week
MIN_BURN_FACTOR = 0.01  # the default policy's smallest factor is 0.23 (7d period, 3d window)


@dataclass(frozen=True)
class PolicyStep:
    """A default burn-rate window pair, as a share of the period's budget."""

    severity: Severity
    long_ms: int
    short_ms: int
    budget_share: float
    for_ms: int


# The SRE Workbook / kubernetes-mixin policy; the factor follows from the period:
# share x period / long window (14.4, 6, 3 and 1 for 30 days).
DEFAULT_POLICY: tuple[PolicyStep, ...] = (
    PolicyStep("page", HOUR, 5 * MINUTE, 0.02, 2 * MINUTE),
    PolicyStep("page", 6 * HOUR, 30 * MINUTE, 0.05, 15 * MINUTE),
    PolicyStep("ticket", DAY, 2 * HOUR, 0.10, HOUR),
    PolicyStep("ticket", 3 * DAY, 6 * HOUR, 0.10, 3 * HOUR),
)


def parse_percent(value: Any) -> float | None:
    """'99.5%' or 99.5 -> 99.5 (percent); None when not a number."""
    if isinstance(value, bool):
        return None
    if isinstance(value, int | float):
        return float(value)
    if isinstance(value, str):
        match = re.fullmatch(r"\s*([0-9]+(?:\.[0-9]+)?)\s*%\s*", value)
        if match:
            return float(match.group(1))
    return None


def camel(name: str) -> str:
    return "".join(part[:1].upper() + part[1:] for part in name.split("-") if part)


class _SpecBuilder:
    """Builds one SLO from one schema-valid document, reporting every semantic problem."""

    def __init__(self, document: Document, teams: dict[str, Team], diagnostics: Diagnostics) -> None:
        self.doc = document
        self.data: dict[str, Any] = document.data
        self.teams = teams
        self.diagnostics = diagnostics
        self.failed = False

    def error(self, key: PathKey, message: str, *, at_key: bool = False) -> None:
        position = self.doc.key_position(key) if at_key else self.doc.position(key)
        self.diagnostics.error(position, message)
        self.failed = True

    # -- small parsers ---------------------------------------------------------------

    def duration(self, key: PathKey, default: int | None = None) -> int:
        value = self._get(key)
        if value is None:
            return default if default is not None else 0
        parsed = promql.parse_duration(str(value))
        if parsed is None:
            self.error(key, f"{_dotted(key)} is not a Prometheus duration: {value!r} (write e.g. 5m, 1h, 30d)")
            return default or 0
        return parsed

    def _get(self, key: PathKey) -> Any:
        node: Any = self.data
        for part in key:
            if isinstance(node, dict) and isinstance(part, str):
                node = node.get(part)
            elif isinstance(node, list) and isinstance(part, int) and part < len(node):
                node = node[part]
            else:
                return None
        return node

    def label_names(self, key: PathKey, names: list[str]) -> tuple[str, ...]:
        for index, name in enumerate(names):
            if not promql.is_valid_label_name(name):
                self.error((*key, index), f"invalid Prometheus label name '{name}'")
        return tuple(names)

    def matchers(self, key: PathKey, text: str | None) -> tuple[Matcher, ...]:
        """Parse a bare matcher set such as '{job="apiserver"}'."""
        if text is None or not text.strip():
            return ()
        bare = text.strip().startswith("{")
        try:
            # A bare matcher set may match the empty string ({scope=~"resource|"}), which PromQL
            # only allows next to a metric name, so parse it with a placeholder name.
            name, matchers = promql.parse_selector(f"slo_placeholder{text.strip()}" if bare else text)
        except PromQLError as exc:
            self.error(key, f"invalid PromQL selector in {_dotted(key)}: {exc}")
            return ()
        if bare:
            name = None
        if name is not None:
            matchers = (Matcher("__name__", "=", name), *matchers)
        return self._checked_matchers(key, matchers)

    def _checked_matchers(self, key: PathKey, matchers: tuple[Matcher, ...]) -> tuple[Matcher, ...]:
        for matcher in matchers:
            if matcher.name != "__name__" and not promql.is_valid_label_name(matcher.name):
                self.error(key, f"invalid Prometheus label name '{matcher.name}' in {_dotted(key)}")
        return matchers

    def selectors(self, key: PathKey, slice_matchers: tuple[Matcher, ...]) -> tuple[Selector, ...]:
        value = self._get(key)
        if value is None:
            return ()
        texts = [value] if isinstance(value, str) else list(value)
        result = []
        for index, text in enumerate(texts):
            where = key if isinstance(value, str) else (*key, index)
            try:
                name, matchers = promql.parse_selector(text)
            except PromQLError as exc:
                self.error(where, f"invalid PromQL selector in {_dotted(key)}: {exc}")
                continue
            if name is None:
                self.error(where, f"{_dotted(key)}: the selector must name a metric: {text!r}")
                continue
            if not promql.is_valid_metric_name(name):
                self.error(where, f"invalid metric name '{name}' in {_dotted(key)}")
            result.append(Selector(name, (*self._checked_matchers(where, matchers), *slice_matchers)))
        return tuple(result)

    def expression(self, key: PathKey, slice_matchers: tuple[Matcher, ...], keep: tuple[str, ...]) -> str:
        """A user-written PromQL expression: parse it, bound its raw ranges, keep the slice labels."""
        text = str(self._get(key))
        try:
            analysis = promql.analyse(text)
        except PromQLError as exc:
            self.error(key, f"invalid PromQL in {_dotted(key)}: {exc}")
            return text
        for selector_name, matchers in analysis.selectors:
            for matcher in matchers:
                if not promql.is_valid_label_name(matcher.name):
                    self.error(key, f"invalid Prometheus label name '{matcher.name}' in {_dotted(key)}")
            if selector_name is not None and not promql.is_valid_metric_name(selector_name):
                self.error(key, f"invalid metric name '{selector_name}' in {_dotted(key)}")
        for range_ms in analysis.ranges_ms:
            if range_ms > RAW_RANGE_LIMIT_MS:
                self.error(
                    key,
                    f"{_dotted(key)} reads raw series over {promql.format_duration(range_ms)}; rules that read "
                    "raw series may use at most 5m (longer windows are built from the SLO's recorded series)",
                )
        if analysis.pinned_ms:
            self.error(
                key,
                f"{_dotted(key)} pins a selector to a fixed time (@ {analysis.pinned_ms[0] / 1000:g}): its value "
                "would never change, so its alerts could never follow the signal; drop the @ modifier",
            )
        lost = promql.labels_lost(text, keep)
        if lost:
            self.error(
                key,
                f"{_dotted(key)} drops slice label(s) {', '.join(lost)} in an aggregation; "
                "keep them in every 'by (...)' so each alert fires per slice",
            )
        return promql.inject_matchers(text, slice_matchers) if slice_matchers else text

    # -- sections ---------------------------------------------------------------------

    def build(self) -> SLO | None:
        data = self.data
        name: str = data["name"]
        owner_name: str = data["owner"]
        team = self.teams.get(owner_name)
        if team is None:
            hint = _suggest(owner_name, sorted(self.teams))
            known = ", ".join(sorted(self.teams)) or "none registered"
            self.error(("owner",), f"unknown owner '{owner_name}' (teams: {known}){hint}")
        slice_ = self.slice()
        sli = self.sli(slice_)
        self._check_sli_selects(sli, slice_)
        objective = self.objective(sli) if "objective" in data else None
        persistence_for = self.duration(("persistence", "for"))
        persistence_keep = self.duration(("persistence", "keep_firing_for"))
        normal = self.range_("normal_range", sli, "ticket", persistence_for, persistence_keep)
        critical = self.range_("critical_range", sli, "page", persistence_for, persistence_keep)
        self._check_critical_wider(normal, critical)
        if not any(section in data for section in ("objective", "normal_range", "critical_range")):
            self.error((), "spec has nothing to alert on: give it an objective, a normal_range or both")
        if critical is not None and normal is None:
            self.error(("critical_range",), "critical_range needs a normal_range (the narrower band) too")
        no_data = self.no_data()
        self.check_wait_limits()
        unit = self.unit(sli)
        scenarios = self.scenarios(
            sli, slice_, data.get("alert_name") or camel(name), normal, critical, objective, no_data
        )
        mitigation = data["mitigation"]
        if self.failed or team is None or sli is None:
            return None
        return SLO(
            name=name,
            alert_name=data.get("alert_name") or camel(name),
            family=data["family"],
            owner=team,
            description=data["description"].strip(),
            k8s_versions=data.get("k8s_versions", ""),
            unit=unit,
            slice=slice_,
            sli=sli,
            objective=objective,
            normal_range=normal,
            critical_range=critical,
            no_data=no_data,
            mitigation=Mitigation(
                summary=mitigation["summary"].strip(),
                steps=tuple(step.strip() for step in mitigation["steps"]),
                stop_conditions=tuple(step.strip() for step in mitigation["stop_conditions"]),
                escalation=mitigation["escalation"].strip(),
                automation=mitigation.get("automation"),
            ),
            see_also=tuple(data.get("see_also", [])),
            scenarios=scenarios,
            mode=data.get("mode", "live"),
            series_budget=data.get("series_budget"),
            explains=tuple(
                Explains(item["slo"], tuple(item["equal"]), item.get("severity", "page"))
                for item in data.get("explains", [])
            ),
            source=self.doc.path,
            position=self.doc.key_position(("sli",)),
            spec_hash=self.doc.content_hash[:16],
        )

    def slice(self) -> Slice:
        raw = self.data["slice"]
        by = self.label_names(("slice", "by"), raw["by"])
        for index, label in enumerate(by):
            self._check_not_reserved(("slice", "by", index), label)
        matchers = self.matchers(("slice", "selector"), raw.get("selector"))
        for matcher in matchers:
            if matcher.name == "__name__":
                self.error(("slice", "selector"), "slice.selector must not name a metric; give only label matchers")
        raw_joins = raw.get("join", [])
        joins = []
        for index, join_raw in enumerate(raw_joins if isinstance(raw_joins, list) else [raw_joins]):
            key: PathKey = ("slice", "join", index) if isinstance(raw_joins, list) else ("slice", "join")
            try:
                info_name, info_matchers = promql.parse_selector(join_raw["metric"])
            except PromQLError as exc:
                self.error((*key, "metric"), f"invalid PromQL selector in slice.join metric: {exc}")
                info_name, info_matchers = None, ()
            on = self.label_names((*key, "on"), join_raw["on"])
            labels = self.label_names((*key, "labels"), join_raw["labels"])
            joins.append(Join(Selector(info_name, info_matchers), on, labels))
        cardinality = raw.get("cardinality", {})
        for label in cardinality:
            if label not in by:
                self.error(("slice", "cardinality"), f"slice.cardinality names '{label}', which is not in slice.by")
        return Slice(
            by=by,
            matchers=tuple(m for m in matchers if m.name != "__name__"),
            joins=tuple(joins),
            cardinality=tuple(sorted((str(k), int(v)) for k, v in cardinality.items())),
        )

    def _check_not_reserved(self, key: PathKey, label: str) -> None:
        """A slice label the rules or routes also set would be overwritten, forking or hijacking alerts."""
        why = reserved_because(label)
        if why is not None:
            self.error(
                key,
                f"slice label '{label}' is reserved ({why}): as a slice label it would be overwritten, "
                "collapsing slices into duplicate series, or would misroute alerts; slice by another label, "
                "or rename it at the source (metric_relabel_configs, or label_replace in the expression)",
            )

    def sli(self, slice_: Slice) -> SLI | None:
        raw = self.data["sli"]
        kind = next(iter(raw))
        body = raw[kind]
        base: PathKey = ("sli", kind)
        # An expression must keep the slice labels it provides itself, and the labels the joins match on.
        selectors_keep = slice_.source_labels
        if kind == "ratio":
            if ("bad" in body) == ("good" in body):
                self.error(base, "sli.ratio needs exactly one of 'bad' or 'good' (and 'total')", at_key=True)
            return RatioSLI(
                bad=self.selectors((*base, "bad"), slice_.matchers),
                good=self.selectors((*base, "good"), slice_.matchers),
                total=self.selectors((*base, "total"), slice_.matchers),
            )
        if kind == "latency":
            buckets = self.buckets(base, body)
            thresholds = self.thresholds(base, body, buckets)
            matchers = self.matchers((*base, "selector"), body.get("selector"))
            return LatencySLI(
                histogram=body["histogram"],
                matchers=(*matchers, *slice_.matchers),
                thresholds=thresholds,
                buckets=buckets,
                errors=self.selectors((*base, "errors"), slice_.matchers),
                total=self.selectors((*base, "total"), slice_.matchers),
            )
        if kind == "quantile":
            buckets = self.buckets(base, body)
            matchers = self.matchers((*base, "selector"), body.get("selector"))
            return QuantileSLI(body["histogram"], (*matchers, *slice_.matchers), float(body["quantile"]), buckets)
        expr = self.expression((*base, "expr"), slice_.matchers, selectors_keep)
        if kind == "state":
            return StateSLI(expr)
        return GaugeSLI(expr, body.get("aggregate", "sum"))

    def buckets(self, base: PathKey, body: dict[str, Any]) -> tuple[float, ...]:
        if "buckets" in body:
            edges = tuple(float(edge) for edge in body["buckets"])
            self._check_finite_buckets((*base, "buckets"), edges)
            if list(edges) != sorted(set(edges)):
                self.error((*base, "buckets"), "buckets must be strictly increasing")
            return edges
        known = KNOWN_BUCKETS.get(body["histogram"])
        if known is None:
            self.error(
                (*base, "histogram"),
                f"unknown histogram '{body['histogram']}': declare its finite bucket edges in 'buckets' "
                "so thresholds can be checked",
            )
            return ()
        return known

    def thresholds(
        self, base: PathKey, body: dict[str, Any], buckets: tuple[float, ...]
    ) -> tuple[LatencyThreshold, ...]:
        raw = body["threshold"]
        entries = (
            [((*base, "threshold"), raw, None)]
            if not isinstance(raw, list)
            else [((*base, "threshold", i, "le"), item["le"], item.get("when")) for i, item in enumerate(raw)]
        )
        result = []
        for key, le, when in entries:
            le = float(le)
            if not math.isfinite(le):
                self.error(
                    key,
                    f"latency threshold {go_float(le)} is not a finite bucket edge: no bucket is written "
                    f'le="{go_float(le)}", so every request would read as slow; give a finite edge',
                )
            elif buckets and le not in buckets:
                lower = max((edge for edge in buckets if edge < le), default=None)
                upper = min((edge for edge in buckets if edge > le), default=None)
                near = " or ".join(go_float(edge) for edge in (lower, upper) if edge is not None)
                self.error(
                    key,
                    f"latency threshold {go_float(le)} is not a bucket edge of {body['histogram']}"
                    + (f"; nearest edges: {near}" if near else ""),
                )
            when_matchers = self.matchers((*key[:-1], "when"), when) if when is not None else ()
            result.append(LatencyThreshold(le, when_matchers))
        return tuple(result)

    def objective(self, sli: SLI | None) -> Objective | None:
        raw = self.data["objective"]
        if sli is not None and not isinstance(sli, RatioSLI | LatencySLI | StateSLI):
            self.error(
                ("objective",),
                "an objective needs a ratio, latency or state SLI (events to budget)",
                at_key=True,
            )
            return None
        percent = parse_percent(raw["target"])
        if percent is None:
            self.error(
                ("objective", "target"),
                f"objective.target must be a percentage like '99.5%', got {raw['target']!r}",
            )
            return None
        if not 0 < percent < 100:
            self.error(
                ("objective", "target"),
                f"objective {go_float(percent)}% is out of range: it must be above 0% and below 100%",
            )
            return None
        target = clean_number(percent / 100)
        period = self.duration(("objective", "period"))
        if period == 0 and promql.parse_duration(str(raw["period"])) == 0:
            self.error(
                ("objective", "period"),
                f"objective.period {raw['period']} is empty: a budget needs a period of at least 1d (e.g. 28d, 30d)",
            )
            return None
        if period < DAY or period % HOUR:
            self.error(
                ("objective", "period"),
                "objective.period must be whole hours and at least 1d (e.g. 7d, 28d, 30d)",
            )
            return None  # every burn factor follows from the period: checking them now is noise
        alerts = self.burn_alerts(target, period)
        return Objective(target=target, period_ms=period, burn_alerts=alerts)

    def burn_alerts(self, target: float, period: int) -> tuple[BurnAlert, ...]:
        budget = 1 - target
        raw = self._get(("objective", "burn_alerts"))
        steps: list[tuple[PathKey, BurnAlert]] = []
        if raw is None:
            for step in DEFAULT_POLICY:
                factor = clean_number(step.budget_share * period / step.long_ms) if period else 0.0
                steps.append(
                    (
                        ("objective", "period"),
                        BurnAlert(step.severity, step.long_ms, step.short_ms, factor, step.for_ms, 0),
                    )
                )
        else:
            for index, item in enumerate(raw):
                key: PathKey = ("objective", "burn_alerts", index)
                long_ms = self.duration((*key, "long"))
                short_ms = self.duration((*key, "short"))
                if ("factor" in item) == ("budget_share" in item):
                    self.error(key, "a burn alert needs exactly one of 'factor' or 'budget_share'")
                    continue
                if not self._positive_windows(key, long_ms, short_ms):
                    continue
                if "factor" in item:
                    factor = clean_number(float(item["factor"]))
                else:
                    share = parse_percent(item["budget_share"])
                    if share is None or not 0 < share <= 100:
                        self.error((*key, "budget_share"), "budget_share must be a percentage in (0%, 100%]")
                        continue
                    factor = clean_number(share / 100 * period / long_ms)
                if not self._factor_in_reach(key, item, factor):
                    continue
                if short_ms >= long_ms:
                    self.error((*key, "short"), "the short window must be shorter than the long window")
                steps.append(
                    (
                        key,
                        BurnAlert(
                            item["severity"],
                            long_ms,
                            short_ms,
                            factor,
                            self.duration((*key, "for"), 0),
                            self.duration((*key, "keep_firing_for"), 0),
                        ),
                    )
                )
        for key, alert in steps:
            for window in (alert.long_ms, alert.short_ms):
                if window % (5 * MINUTE):
                    self.error(key, f"burn window {promql.format_duration(window)} must be a multiple of 5m")
                if period and window > period:
                    self.error(key, f"burn window {promql.format_duration(window)} is longer than the period")
            if alert.factor * budget >= 1:
                self.error(
                    key,
                    f"burn threshold {go_float(alert.factor)}x the {go_float(clean_number(budget * 100))}% budget is "
                    f"{go_float(clean_number(alert.factor * budget * 100))}% errors, which can never be exceeded; "
                    "lower the factor or the target",
                )
        self._check_burn_pairs(steps)
        return tuple(alert for _, alert in steps)

    def check_wait_limits(self) -> None:
        """Every ``for`` and ``keep_firing_for`` is at most a day: the generated tests simulate each
        minute of the wait (a 100y ``for`` would exhaust memory), and a day-long wait is a report."""
        keys: list[PathKey] = [("no_data", "for")]
        for section in ("persistence", "normal_range", "critical_range"):
            keys += [(section, "for"), (section, "keep_firing_for")]
        burn_alerts = self._get(("objective", "burn_alerts"))
        for index in range(len(burn_alerts) if isinstance(burn_alerts, list) else 0):
            keys += [("objective", "burn_alerts", index, "for"), ("objective", "burn_alerts", index, "keep_firing_for")]
        for key in keys:
            value = self._get(key)
            parsed = promql.parse_duration(value) if isinstance(value, str) else None
            if parsed is not None and parsed > MAX_WAIT_MS:
                self.error(
                    key,
                    f"{_dotted(key)} is {promql.format_duration(parsed)}, longer than "
                    f"{promql.format_duration(MAX_WAIT_MS)}: an alert that waits longer is a report, and the "
                    "generated tests simulate every minute of the wait",
                )

    def _positive_windows(self, key: PathKey, long_ms: int, short_ms: int) -> bool:
        """A 0s window would be the PromQL range [0s], which Prometheus rejects."""
        ok = True
        for field, window in (("long", long_ms), ("short", short_ms)):
            if window <= 0:
                self.error((*key, field), f"the {field} window must be a positive multiple of 5m, not 0s")
                ok = False
        return ok

    def _factor_in_reach(self, key: PathKey, item: dict[str, Any], factor: float) -> bool:
        """A burn factor under MIN_BURN_FACTOR alerts while the objective is met a hundred times over,
        and the time to exhaust the budget at that rate overflows every duration."""
        if factor >= MIN_BURN_FACTOR:
            return True
        field = "factor" if "factor" in item else "budget_share"
        given = "" if field == "factor" else " (from this budget_share)"
        self.error(
            (*key, field),
            f"burn factor {go_float(factor)}{given} is below {go_float(MIN_BURN_FACTOR)}: it would fire while the "
            "budget burns at under 1% of the rate the objective allows; raise it or drop this window pair",
        )
        return False

    def _relative_offset(self, section: str, band_for_ms: int) -> int:
        """How far back a relative bound looks: whole minutes, at most a week, and longer than the
        band's ``for`` (a jump past the factor lasts only ``offset``, so a shorter one never fires)."""
        key: PathKey = (section, "relative", "offset")
        offset = self.duration(key)
        text = promql.format_duration(offset)
        if offset <= 0 or offset % MINUTE:
            self.error(
                key,
                f"relative.offset must be a whole, positive number of minutes (e.g. 1h), not {text}: the value "
                "is compared with itself that long ago, and the generated tests step by minutes",
            )
        elif offset > MAX_OFFSET_MS:
            self.error(
                key,
                f"relative.offset {text} is longer than 7d (the same time last week): the generated tests "
                "simulate every minute of it",
            )
        elif offset <= band_for_ms:
            self.error(
                key,
                f"relative.offset {text} must be longer than the {section}'s for "
                f"({promql.format_duration(band_for_ms)}): a jump past the factor stays past its value {text} "
                "ago for only that long, so the alert could never wait out its for",
            )
        return offset

    def range_(self, section: str, sli: SLI | None, severity: Severity, for_ms: int, keep_ms: int) -> Range | None:
        raw = self.data.get(section)
        if raw is None:
            return None
        self._check_range_numbers(section, raw)
        self._check_reachable_bounds(section, raw, sli)
        minimum = raw.get("min")
        maximum = raw.get("max")
        relative = None
        if "relative" in raw:
            rel = raw["relative"]
            if "max_factor" not in rel and "min_factor" not in rel:
                self.error((section, "relative"), f"{section}.relative needs max_factor, min_factor or both")
            if (
                rel.get("max_factor") is not None
                and rel.get("min_factor") is not None
                and rel["min_factor"] >= rel["max_factor"]
            ):
                self.error((section, "relative", "min_factor"), "min_factor must be below max_factor")
            offset = self._relative_offset(section, self.duration((section, "for"), for_ms))
            relative = Relative(offset, rel.get("max_factor"), rel.get("min_factor"), float(rel.get("floor", 0)))
        if minimum is None and maximum is None and relative is None:
            self.error((section,), f"{section} needs at least one of min, max or relative", at_key=True)
            return None
        if minimum is not None and maximum is not None and minimum >= maximum:
            self.error((section, "min"), f"{section}.min ({minimum}) must be below max ({maximum})")
        if isinstance(sli, QuantileSLI) and sli.buckets:
            top = max(sli.buckets)
            if maximum is not None and maximum >= top:
                self.error(
                    (section, "max"),
                    f"{section}.max {go_float(maximum)} can never be exceeded: the quantile of {sli.histogram} "
                    f"is at most its top finite bucket edge {go_float(top)}",
                )
        ratio_value = sli is not None and isinstance(sli, RatioSLI | LatencySLI | StateSLI)
        for bound in ("min", "max"):
            value = raw.get(bound)
            if ratio_value and value is not None and not 0 <= value <= 1:
                self.error(
                    (section, bound),
                    f"{section}.{bound} is an error ratio for this SLI and must be within 0..1",
                )
        return Range(
            minimum=None if minimum is None else float(minimum),
            maximum=None if maximum is None else float(maximum),
            relative=relative,
            severity=raw.get("severity", severity),
            for_ms=self.duration((section, "for"), for_ms),
            keep_firing_for_ms=self.duration((section, "keep_firing_for"), keep_ms),
            reason=str(raw.get("reason", "")).strip(),
        )

    def no_data(self) -> NoData:
        raw = self.data.get("no_data", {})
        for_ms = self.duration(("no_data", "for"), 15 * MINUTE)
        enabled = bool(raw.get("enabled", True))
        if enabled and for_ms <= 0:
            self.error(
                ("no_data", "for"),
                "no_data.for must be positive (default 15m): with 0s the no-data alert fires whenever the "
                "recorded series is briefly absent, such as before the first rate after every restart",
            )
        return NoData(enabled=enabled, for_ms=for_ms, severity=raw.get("severity", "ticket"))

    def scenarios(
        self,
        sli: SLI | None,
        slice_: Slice,
        alert_name: str,
        normal: Range | None,
        critical: Range | None,
        objective: Objective | None,
        no_data: NoData,
    ) -> tuple[Scenario, ...]:
        """Declared scenarios: check their shapes fit the SLI and their alerts exist."""
        raw = self.data.get("scenarios", [])
        alerts = set(alert_names_for(alert_name, objective is not None, normal, critical, no_data.enabled))
        events = isinstance(sli, RatioSLI | LatencySLI | StateSLI)
        result = []
        seen: set[str] = set()
        for index, item in enumerate(raw):
            base: PathKey = ("scenarios", index)
            if item["name"] in seen:
                self.error((*base, "name"), f"duplicate scenario name '{item['name']}'")
            seen.add(item["name"])
            slice_values = []
            for label, value in sorted(item.get("slice", {}).items()):
                if label not in slice_.by:
                    self.error(
                        (*base, "slice"),
                        f"'{label}' is not a slice label of this spec ({', '.join(slice_.by) or 'none'})",
                    )
                slice_values.append((label, value))
            segments: list[Segment] = []
            for seg_index, seg in enumerate(item["shape"]):
                key: PathKey = (*base, "shape", seg_index)
                minutes_ms = self.duration((*key, "for"))
                if minutes_ms <= 0 or minutes_ms % MINUTE:
                    self.error((*key, "for"), "a segment lasts a whole, positive number of minutes")
                given = [field for field in ("value", "error_ratio", "ramp_to", "gap") if field in seg]
                if len(given) != 1:
                    self.error(key, "a segment needs exactly one of value, error_ratio, ramp_to or gap")
                    continue
                if events and "value" in seg:
                    self.error(
                        (*key, "value"), "this is an event SLI: give the segment an error_ratio (and optionally a rate)"
                    )
                if not events and "error_ratio" in seg:
                    self.error((*key, "error_ratio"), "this SLI is a gauge: give the segment a value")
                if "rate" in seg and not isinstance(sli, RatioSLI | LatencySLI):
                    self.error((*key, "rate"), "rate applies to ratio and latency SLIs only")
                if "ramp_to" in seg and not segments:
                    self.error((*key, "ramp_to"), "a scenario cannot start with a ramp: give the first segment a value")
                if "ramp_to" in seg and events and not 0 <= seg["ramp_to"] <= 1:
                    self.error((*key, "ramp_to"), "an error ratio ramps to a value within 0..1")
                value = seg.get("value", seg.get("error_ratio", seg.get("ramp_to")))
                segments.append(
                    Segment(
                        minutes=minutes_ms // MINUTE,
                        value=None if value is None else float(value),
                        rate=float(seg["rate"]) if "rate" in seg else None,
                        ramp="ramp_to" in seg,
                        gap="gap" in seg,
                    )
                )
            total_ms = sum(segment.minutes for segment in segments) * MINUTE
            self._check_scenario_length(base, item, normal, critical)
            expectations = []
            for exp_index, exp in enumerate(item["expect"]):
                key = (*base, "expect", exp_index)
                kinds = [field for field in ("fires_by", "silent_until", "nothing_fires_until") if field in exp]
                if len(kinds) != 1:
                    self.error(key, "an expectation needs exactly one of fires_by, silent_until or nothing_fires_until")
                    continue
                kind = kinds[0]
                at_ms = self.duration((*key, kind))
                if at_ms <= 0 or at_ms % MINUTE or at_ms > total_ms:
                    self.error(
                        (*key, kind),
                        f"{kind} must be a whole minute within the scenario's {promql.format_duration(total_ms)}",
                    )
                name = None
                if kind == "nothing_fires_until":
                    if "alert" in exp:
                        self.error(
                            (*key, "alert"), "nothing_fires_until applies to every alert of the spec; drop 'alert'"
                        )
                else:
                    given_name = exp.get("alert")
                    if given_name is None:
                        self.error(key, f"{kind} needs the alert it is about")
                        continue
                    name = given_name if given_name in alerts else alert_name + given_name
                    if name not in alerts:
                        hint = _suggest(name, sorted(alerts))
                        self.error(
                            (*key, "alert"),
                            f"'{given_name}' is not an alert of this spec ({', '.join(sorted(alerts))}){hint}",
                        )
                expectations.append(Expectation(EXPECTATION_KINDS[kind], name, at_ms))
            result.append(
                Scenario(
                    name=item["name"],
                    description=str(item.get("description", "")).strip(),
                    slice_values=tuple(slice_values),
                    segments=tuple(segments),
                    expectations=tuple(expectations),
                )
            )
        return tuple(result)

    # -- specs whose alerts would be wrong by construction ---------------------------

    def _check_sli_selects(self, sli: SLI | None, slice_: Slice) -> None:
        """Selectors that cannot mean what they say: a matcher on le, uncovered thresholds, bad beyond total."""
        if any(matcher.name == "le" for matcher in slice_.matchers):
            self.error(("slice", "selector"), f"slice.selector {_LE_PROBLEM}")
        if isinstance(sli, LatencySLI | QuantileSLI):
            kind = "latency" if isinstance(sli, LatencySLI) else "quantile"
            if any(matcher.name == "le" for matcher in sli.matchers if matcher not in slice_.matchers):
                self.error(("sli", kind, "selector"), f"sli.{kind}.selector {_LE_PROBLEM}")
        if isinstance(sli, LatencySLI):
            for index, threshold in enumerate(sli.thresholds):
                if any(matcher.name == "le" for matcher in threshold.when):
                    self.error(("sli", "latency", "threshold", index, "when"), f"a threshold's 'when' {_LE_PROBLEM}")
            self._check_threshold_coverage(sli)
        if isinstance(sli, RatioSLI):
            self._check_subset_of_total("bad", sli.bad, sli.total)
            self._check_subset_of_total("good", sli.good, sli.total)

    def _check_threshold_coverage(self, sli: LatencySLI) -> None:
        """Every histogram series under exactly one ``when``: uncovered ones read 100% slow, shared ones count twice."""
        thresholds = sli.thresholds
        if len(thresholds) < 2 and not (thresholds and thresholds[0].when):
            return
        base: PathKey = ("sli", "latency", "threshold")
        raw = self._get(base)
        written = [str(item.get("when") or "").strip() for item in raw] if isinstance(raw, list) else []
        if any(text not in ("", "{}") and not t.when for text, t in zip(written, thresholds, strict=False)):
            return  # a 'when' that did not parse is reported already
        scope = sli.matchers
        whens = [threshold.when for threshold in thresholds]
        when_labels = {matcher.name for when in whens for matcher in when}

        def shown(labels: dict[str, str]) -> str:
            return matchsets.describe({k: v for k, v in labels.items() if k in when_labels}, whens)

        gap = matchsets.find([scope, *whens], functools.partial(_only_in_first, scope, whens))
        if gap is not None:
            self.error(
                base,
                f"the latency thresholds leave series with {shown(gap)} uncovered: no 'when' matches them, so "
                "every request among them would count as slow (100% bad); add a threshold for them, make the "
                "last 'when' a catch-all with != or !~, or exclude them in sli.latency.selector",
            )
        for later in range(1, len(whens)):
            for earlier in range(later):
                pair = (scope, whens[earlier], whens[later])
                both = matchsets.find(pair, functools.partial(_selected_by_all, pair))
                if both is not None:
                    self.error(
                        (*base, later, "when") if whens[later] else (*base, later),
                        f"threshold[{later}].when overlaps threshold[{earlier}].when on series with {shown(both)}: "
                        "their fast requests would be counted by both thresholds (good events twice); make the "
                        "'when' matchers exclusive",
                    )
                    break

    def _check_subset_of_total(self, side: str, selectors: tuple[Selector, ...], total: tuple[Selector, ...]) -> None:
        """Bad (or good) events of a metric the total also reads must be among the total's series."""
        raw = self._get(("sli", "ratio", side))
        listed = isinstance(raw, list) and len(raw) == len(selectors)
        for index, events in enumerate(selectors):
            same = [selector.matchers for selector in total if selector.metric == events.metric]
            if events.metric is None or not same:
                continue  # another metric (errors_total over requests_total): nothing to compare
            outside = matchsets.find([events.matchers, *same], functools.partial(_only_in_first, events.matchers, same))
            if outside is not None:
                self.error(
                    ("sli", "ratio", side, index) if listed else ("sli", "ratio", side),
                    f"sli.ratio.{side} selects {events.metric} series ({matchsets.describe(outside)}) that "
                    f"sli.ratio.total does not count: {side} events must be a subset of the total (its matchers "
                    "implied by the total's), or the error ratio means nothing (it can pass 100%)",
                )

    def _check_range_numbers(self, section: str, raw: dict[str, Any]) -> None:
        """Bounds that are not finite can never be crossed; relative factors on the wrong side of 1 always are."""
        rel = raw.get("relative") or {}
        numbers: list[tuple[PathKey, Any]] = [((section, name), raw.get(name)) for name in ("min", "max")]
        numbers += [((section, "relative", name), rel.get(name)) for name in ("max_factor", "min_factor", "floor")]
        for key, value in numbers:
            if isinstance(value, float) and not math.isfinite(value):
                self.error(
                    key,
                    f"{_dotted(key)} is {go_float(value)}: a bound that is not a finite number can never be "
                    "crossed, so its alert could never fire (and could not be tested); give a finite number or drop it",
                )
        high, low = rel.get("max_factor"), rel.get("min_factor")
        if isinstance(high, int | float) and math.isfinite(high) and high <= 1:
            why = "is above its own past whenever it is steady" if high < 1 else "breaches on any rise, however small"
            self.error(
                (section, "relative", "max_factor"),
                f"max_factor {go_float(high)} must be above 1: at {go_float(high)}x the value {why}, so the alert "
                "fires all the time; a rise is a factor above 1 (e.g. 1.5)",
            )
        if isinstance(low, int | float) and math.isfinite(low) and low >= 1:
            why = "is below its own past whenever it is steady" if low > 1 else "breaches on any fall, however small"
            self.error(
                (section, "relative", "min_factor"),
                f"min_factor {go_float(low)} must be below 1: at {go_float(low)}x the value {why}, so the alert "
                "fires all the time; a drop is a factor below 1 (e.g. 0.5)",
            )

    def _check_reachable_bounds(self, section: str, raw: dict[str, Any], sli: SLI | None) -> None:
        """An error ratio lies within 0..1: a max of 1 is never exceeded, a min of 0 never undercut.

        A quantile is at least its first bucket edge times the quantile (histogram_quantile
        interpolates from 0 within the first bucket), so a min at or under that is never undercut.
        """
        if isinstance(sli, QuantileSLI) and sli.buckets and sli.buckets[0] > 0:
            lowest = clean_number(sli.buckets[0] * sli.quantile)
            minimum = raw.get("min")
            if isinstance(minimum, int | float) and not isinstance(minimum, bool) and minimum <= lowest:
                self.error(
                    (section, "min"),
                    f"{section}.min {go_float(minimum)} can never be undercut: the {go_float(sli.quantile)} quantile "
                    f"of {sli.histogram} is at least {go_float(lowest)} (its first bucket edge "
                    f"{go_float(sli.buckets[0])} x {go_float(sli.quantile)}), so its alert could never fire",
                )
        if not isinstance(sli, RatioSLI | LatencySLI | StateSLI):
            return
        rel = raw.get("relative") or {}
        floor = rel.get("floor")
        if rel.get("max_factor") is not None and isinstance(floor, int | float) and floor >= 1:
            self.error(
                (section, "relative", "floor"),
                f"{section}.relative.floor {go_float(floor)} can never be exceeded: this SLI's value is an error "
                "ratio, within 0..1, so the rise alert could never fire; give a floor below 1",
            )
        for bound, edge, word in (("max", 1, "exceeded"), ("min", 0, "undercut")):
            if raw.get(bound) == edge and not isinstance(raw.get(bound), bool):
                self.error(
                    (section, bound),
                    f"{section}.{bound} {edge} can never be {word}: this SLI's value is an error ratio, within 0..1, "
                    "so its alert could never fire; give a bound inside 0..1 or drop it",
                )

    def _check_critical_wider(self, normal: Range | None, critical: Range | None) -> None:
        """The critical band pages, so it must lie outside the normal band that tickets."""
        if normal is None or critical is None:
            return
        if critical.maximum is not None and normal.maximum is not None and critical.maximum <= normal.maximum:
            self.error(
                ("critical_range", "max"),
                f"critical_range.max {go_float(critical.maximum)} is not above normal_range.max "
                f"{go_float(normal.maximum)}: the critical band must be wider than the normal one, or the page "
                "fires before (or with) the ticket",
            )
        if critical.minimum is not None and normal.minimum is not None and critical.minimum >= normal.minimum:
            self.error(
                ("critical_range", "min"),
                f"critical_range.min {go_float(critical.minimum)} is not below normal_range.min "
                f"{go_float(normal.minimum)}: the critical band must be wider than the normal one, or the page "
                "fires before (or with) the ticket",
            )

    def _check_finite_buckets(self, key: PathKey, edges: tuple[float, ...]) -> None:
        if any(not math.isfinite(edge) for edge in edges):
            self.error(key, "buckets lists the finite bucket edges only: the +Inf bucket is always there")

    def _check_burn_pairs(self, steps: list[tuple[PathKey, BurnAlert]]) -> None:
        """Custom pairs: positive windows, ``for`` within the long window, no pair twice."""
        seen: dict[tuple[str, int, int, float], PathKey] = {}
        for key, alert in steps:
            if key == ("objective", "period"):
                continue  # the default policy
            for name in ("long", "short"):
                if promql.parse_duration(str(self._get((*key, name)))) == 0:
                    self.error((*key, name), f"the {name} window must be positive")
            identity = (alert.severity, alert.long_ms, alert.short_ms, alert.factor)
            if identity in seen:
                self.error(
                    key,
                    f"this burn alert repeats {_dotted(seen[identity])} (same severity, windows and factor): it "
                    "would be the same rule twice, which promtool rejects as a duplicate; remove one",
                )
            else:
                seen[identity] = key
            if alert.for_ms > alert.long_ms:
                self.error(
                    (*key, "for"),
                    f"for {promql.format_duration(alert.for_ms)} is longer than the long window "
                    f"{promql.format_duration(alert.long_ms)}: the pair would alert only on burns that outlast the "
                    "window it measures, so shorter incidents that spend the same budget never do; keep it well "
                    "under the long window (the default policy uses about 1/30 of it)",
                )

    def _check_scenario_length(
        self, base: PathKey, item: dict[str, Any], normal: Range | None, critical: Range | None
    ) -> None:
        """promtool evaluates every rule at every minute of a scenario: keep it to what tests in seconds.

        A relative bound needs history as old as its offset, so the offset is allowed on top.
        """
        offset = max((band.relative.offset_ms for band in (normal, critical) if band and band.relative), default=0)
        limit = SCENARIO_LIMIT_MS + offset
        allowance = promql.format_duration(SCENARIO_LIMIT_MS) + (
            f" plus the relative offset {promql.format_duration(offset)}" if offset else ""
        )
        elapsed = 0
        for index, segment in enumerate(item["shape"]):
            elapsed += promql.parse_duration(str(segment.get("for"))) or 0
            if elapsed > limit:
                self.error(
                    (*base, "shape", index, "for"),
                    f"scenario '{item['name']}' runs past {promql.format_duration(limit)} here: promtool evaluates "
                    "every rule at every minute of it, so a longer scenario takes minutes to test; keep scenarios "
                    f"within {allowance}",
                )
                return

    def unit(self, sli: SLI | None) -> Unit:
        explicit = self.data.get("unit")
        if explicit is not None:
            if isinstance(sli, RatioSLI | LatencySLI | StateSLI) and explicit != "ratio":
                self.error(
                    ("unit",),
                    "the value of a ratio, latency or state SLI is an error ratio: unit must be 'ratio'",
                )
            unit: Unit = explicit
            return unit
        if isinstance(sli, GaugeSLI):
            return "count"
        if isinstance(sli, QuantileSLI):
            return "seconds"
        return "ratio"


def _selected_by_all(selectors: Sequence[Sequence[Matcher]], labels: Mapping[str, str]) -> bool:
    return all(matchsets.selects(labels, selector) for selector in selectors)


def _only_in_first(first: Sequence[Matcher], others: Sequence[Sequence[Matcher]], labels: Mapping[str, str]) -> bool:
    return matchsets.selects(labels, first) and not any(matchsets.selects(labels, other) for other in others)


_LE_PROBLEM = (
    "must not match on 'le': the compiler selects the buckets itself, so a matcher on le leaves the SLI reading "
    "the wrong buckets or none at all (_count and plain counters have no le label); drop it"
)


def _check_rate_windows(documents: list[Document], project: Project, diagnostics: Diagnostics) -> None:
    """rate() and its kin need two samples in their window: at least twice the evaluation interval."""
    interval = project.evaluation_interval_ms
    for document in documents:
        sli = document.data.get("sli")
        kind = next((k for k in ("gauge", "state") if isinstance(sli, dict) and k in sli), None)
        if kind is None or not isinstance(sli[kind], dict) or not isinstance(sli[kind].get("expr"), str):
            continue
        try:
            calls = promql.range_calls(sli[kind]["expr"])
        except PromQLError:
            continue  # reported where the expression is parsed
        for function, range_ms in calls:
            if function in promql.TWO_SAMPLE_FUNCTIONS and range_ms < 2 * interval:
                diagnostics.error(
                    document.position(("sli", kind, "expr")),
                    f"{function}() over {promql.format_duration(range_ms)} is shorter than twice the evaluation "
                    f"interval ({promql.format_duration(interval)}): it needs two samples in its window, so it "
                    f"reads nothing most of the time; use at least {promql.format_duration(2 * interval)} "
                    "(4x the scrape interval is the usual advice)",
                )


def alert_names_for(
    prefix: str, has_objective: bool, normal: Range | None, critical: Range | None, no_data: bool
) -> list[str]:
    """Every alert name a spec produces, in rule order (the Prometheus target emits exactly these)."""
    names: list[str] = []
    if has_objective:
        names.append(f"{prefix}ErrorBudgetBurn")
    for label, band in (("Normal", normal), ("Critical", critical)):
        if band is None:
            continue
        if band.maximum is not None or (band.relative and band.relative.max_factor is not None):
            names.append(f"{prefix}Above{label}Range")
        if band.minimum is not None or (band.relative and band.relative.min_factor is not None):
            names.append(f"{prefix}Below{label}Range")
    if no_data:
        names.append(f"{prefix}NoData")
    return names


def _dotted(key: PathKey) -> str:
    out = ""
    for part in key:
        out += f"[{part}]" if isinstance(part, int) else (f".{part}" if out else str(part))
    return out


def build_model(documents: list[Document], diagnostics: Diagnostics) -> Model | None:
    """Validate every document and build the model; None when any problem was found."""
    by_kind: dict[str, list[Document]] = {"SLO": [], "Owners": [], "Project": []}
    for document in documents:
        kind = validate_document(document, diagnostics)
        if kind is not None:
            by_kind[kind].append(document)

    project = build_project(documents, diagnostics)
    teams = build_teams(documents, project, diagnostics)
    check_templated_fields(documents, diagnostics)
    check_receiver_names(documents, teams, diagnostics)

    slos: dict[str, SLO] = {}
    seen: dict[str, str] = {}
    for document in by_kind["SLO"]:
        name = document.data["name"]
        if name in seen:
            diagnostics.error(
                document.position(("name",)), f"duplicate spec name '{name}' (first defined at {seen[name]})"
            )
            continue
        seen[name] = str(document.position(("name",)))
        slo = _build_spec(document, teams, diagnostics)
        if slo is not None:
            slos[name] = slo
    _check_links(by_kind["SLO"], slos, project, diagnostics)
    _check_explains_scope(by_kind["SLO"], slos, diagnostics)
    _check_explains_cycles(by_kind["SLO"], slos, diagnostics)
    _check_rate_windows(by_kind["SLO"], project, diagnostics)
    _check_budgets(by_kind["SLO"], slos, project, diagnostics)
    alert_owners: dict[str, str] = {}
    for slo in slos.values():
        if slo.alert_name in alert_owners:
            diagnostics.error(
                _position_of(by_kind["SLO"], slo.name),
                f"alert name prefix '{slo.alert_name}' is also used by spec '{alert_owners[slo.alert_name]}'",
            )
        alert_owners[slo.alert_name] = slo.name
    if diagnostics:
        return None
    return Model(
        project=project,
        teams=tuple(sorted(teams.values(), key=lambda t: t.name)),
        slos=tuple(slos[name] for name in sorted(slos)),
    )


def _build_spec(document: Document, teams: dict[str, Team], diagnostics: Diagnostics) -> SLO | None:
    """One spec's model; a check that trips over the spec is reported at it, never a crash of the run."""
    try:
        return _SpecBuilder(document, teams, diagnostics).build()
    except Exception as exc:
        diagnostics.error(
            document.key_position(("sli",)),
            f"cannot check this spec ({type(exc).__name__}: {exc}); please also report it as a compiler bug",
        )
        return None


def _check_links(documents: list[Document], slos: dict[str, SLO], project: Project, diagnostics: Diagnostics) -> None:
    """Cross-spec references: what a spec explains, and the automation it names."""
    automations = {a.name for a in project.automations}
    for document in documents:
        slo = slos.get(document.data["name"])
        if slo is None:
            continue
        if slo.mitigation.automation is not None and slo.mitigation.automation not in automations:
            hint = _suggest(slo.mitigation.automation, sorted(automations))
            known = ", ".join(sorted(automations)) or "none in the project"
            diagnostics.error(
                document.position(("mitigation", "automation")),
                f"unknown automation '{slo.mitigation.automation}' ({known}){hint}",
            )
        for index, explains in enumerate(slo.explains):
            key: PathKey = ("explains", index)
            target = slos.get(explains.slo)
            if explains.slo == slo.name:
                diagnostics.error(document.position((*key, "slo")), "a spec cannot explain itself")
                continue
            if target is None:
                hint = _suggest(explains.slo, sorted(slos))
                diagnostics.error(document.position((*key, "slo")), f"explains unknown spec '{explains.slo}'{hint}")
                continue
            for position, label in enumerate(explains.equal):
                missing = [s.name for s in (slo, target) if label not in s.slice.by]
                if missing:
                    diagnostics.error(
                        document.position((*key, "equal", position)),
                        f"'{label}' is not a slice label of {' and '.join(missing)}, so alerts cannot be matched on it",
                    )


def _alert_severities(slo: SLO) -> set[str]:
    """The severities of a spec's alerts: what the source matcher of its explains entries can match."""
    found: set[str] = set()
    if slo.objective is not None:
        found.update(burn.severity for burn in slo.objective.burn_alerts)
    found.update(band.severity for band in (slo.normal_range, slo.critical_range) if band is not None)
    if slo.no_data.enabled:
        found.add(slo.no_data.severity)
    return found


def _check_explains_scope(documents: list[Document], slos: dict[str, SLO], diagnostics: Diagnostics) -> None:
    """An explains entry must be able to fire, and only for the slice it explains.

    With ``equal: []`` Alertmanager inhibits regardless of labels, so one cluster's page
    silences every cluster's alerts of the explained spec; an entry whose severity the spec
    never alerts with is never a source, so the explained alerts are never held back.
    """
    for document in documents:
        slo = slos.get(document.data["name"])
        if slo is None:
            continue
        severities = _alert_severities(slo)
        for index, explains in enumerate(slo.explains):
            key: PathKey = ("explains", index)
            target = slos.get(explains.slo)
            if target is None or target.name == slo.name:
                continue  # reported by _check_links
            if not explains.equal:
                shared = [label for label in slo.slice.by if label in target.slice.by]
                fix = (
                    f"list the slice labels both share ({', '.join(shared)})"
                    if shared
                    else f"{slo.name} and {target.name} share no slice label, so drop the entry or slice both by one"
                )
                diagnostics.error(
                    document.position((*key, "equal")),
                    f"explains {target.name} with equal: [] would let an alert of {slo.name} in one slice (one "
                    f"cluster) silence {target.name} in every slice; {fix}",
                )
            if explains.severity != "any" and explains.severity not in severities:
                own = ", ".join(sorted(severities)) or "none"
                diagnostics.error(
                    document.position((*key, "severity")),
                    f"explains {target.name} can never inhibit: only {slo.name}'s {explains.severity} alerts would "
                    f"silence it, and it has none (its alerts are {own}); set severity: any (or {own}) on this "
                    f"entry, or give the spec a {explains.severity} alert",
                )


def _explains_path(start: str, goal: str, slos: dict[str, SLO]) -> list[str] | None:
    """The shortest chain of explains from ``start`` to ``goal`` (both included), or None."""
    previous: dict[str, str] = {}
    queue = [start]
    while queue:
        current = queue.pop(0)
        if current == goal:
            path = [goal]
            while path[-1] != start:
                path.append(previous[path[-1]])
            return path[::-1]
        source = slos.get(current)
        for explains in source.explains if source is not None else ():
            if explains.slo not in previous and explains.slo != start and explains.slo in slos:
                previous[explains.slo] = current
                queue.append(explains.slo)
    return None


def _check_explains_cycles(documents: list[Document], slos: dict[str, SLO], diagnostics: Diagnostics) -> None:
    """Explains must not loop: Alertmanager lets each alert of a loop inhibit the next, so all stay silent."""
    for document in documents:
        slo = slos.get(document.data["name"])
        if slo is None:
            continue
        for index, explains in enumerate(slo.explains):
            if explains.slo == slo.name or explains.slo not in slos:
                continue  # reported by _check_links
            back = _explains_path(explains.slo, slo.name, slos)
            if back is None:
                continue
            cycle = " -> ".join([slo.name, *back])
            diagnostics.error(
                document.position(("explains", index, "slo")),
                f"explains cycle {cycle}: when these fire together each inhibits the next in Alertmanager and "
                "none of them reaches anyone; decide which one is the cause and drop the explains entry of the other",
            )


def _check_budgets(documents: list[Document], slos: dict[str, SLO], project: Project, diagnostics: Diagnostics) -> None:
    """Series each spec records on the profiled cluster: per-node slicing needs an explicit budget."""
    profile = project.cluster_profile
    for document in documents:
        slo = slos.get(document.data["name"])
        if slo is None:
            continue
        found = estimate(slo, profile)
        if found.high_cardinality and slo.series_budget is None:
            labels = ", ".join(found.high_cardinality)
            diagnostics.error(
                document.key_position(("slice", "by")),
                f"slicing by {labels} records about {found.series:,} series on the {profile.name}; "
                "aggregate to a pool or zone, or opt in with an explicit series_budget",
            )
        elif found.over:
            diagnostics.error(
                document.key_position(("series_budget",))
                if slo.series_budget
                else document.key_position(("slice", "by")),
                f"records about {found.series:,} series ({found.slices:,} slices x {found.series_per_slice} recorded "
                f"series) on the {profile.name}, over its budget of {found.budget:,}",
            )


def _position_of(documents: list[Document], name: str) -> Any:
    for document in documents:
        if document.data.get("name") == name:
            return document.position(("name",))
    raise KeyError(name)  # pragma: no cover
