"""Grafana dashboards: one per owner team, and an overview across teams and families.

A pure function of the model, built with grafana-foundation-sdk's typed builders and
serialised with its JSON encoder, then normalised (sorted keys, two-space indent) so the
output is byte-stable. Every query reads only the series the Prometheus target records
(``slo:*`` and ``slo_info``, see ``compiler.model.series``) and ``ALERTS``: no dashboard
recomputes a window from raw series. Each query is scoped to the dashboard's slice
variables with ``label=~"$label"``; an "All" selection is ``.*`` so series without the
label (a no-data alert) still match.

A spec sliced by a per-unit label (``instance``, ``node``, ``pod``, ``device``: the labels
``plan.watch`` warns about) has thousands of slices on a large fleet, so every panel that plots
one series per slice draws only the WORST of them (``topk`` where high is bad, ``bottomk``
where low is), and that label's variable says so: "All" is then the worst ten, not 15,000 lines.
"""

from __future__ import annotations

import warnings
from collections.abc import Iterable, Sequence

from compiler.model import SLO, BurnAlert, Model, Range, Team, series, windows
from compiler.model.links import (
    DATASOURCE_VARIABLE,
    OVERVIEW_DASHBOARD_UID,
    dashboard_url,
    dashboard_variable,
    runbook_url,
    team_dashboard_uid,
)
from compiler.plan import AlertSpec, Plan, SpecPlan
from compiler.plan.watch import PER_UNIT_LABELS, per_unit_labels
from compiler.promql import Matcher, inject_matchers, quote
from compiler.text import human, jsonout
from compiler.text.human import percent
from compiler.text.numbers import clean_number, go_float

with warnings.catch_warnings():
    # The SDK's dashboard modules warn at import time that the v2 schema is preferred; we emit v1
    # (schemaVersion 42), which file provisioning reads.
    warnings.simplefilter("ignore", DeprecationWarning)
    from grafana_foundation_sdk.builders import common as common_builders
    from grafana_foundation_sdk.builders import dashboard as db
    from grafana_foundation_sdk.builders import prometheus as prom
    from grafana_foundation_sdk.builders import stat, statetimeline, timeseries
    from grafana_foundation_sdk.cog import builder as cogbuilder
    from grafana_foundation_sdk.cog.encoder import JSONEncoder
    from grafana_foundation_sdk.models import common
    from grafana_foundation_sdk.models import dashboard as dm

DASHBOARDS_DIR = "grafana/dashboards"
DATASOURCE = common.DataSourceRef(type_val="prometheus", uid=f"${{{DATASOURCE_VARIABLE}}}")
TIME_FROM = "now-7d"
REFRESH = "1m"
GRID_WIDTH = 24
PER_LINE = 4  # panels of one kind side by side before wrapping
WORST = 10  # per-unit slices a panel plots: the worst ten at each step

UNITS: dict[str, str] = {
    "ratio": "percentunit",
    "seconds": "s",
    "bytes": "bytes",
    "bytes_per_second": "Bps",
    "per_second": "ops",
    "count": "none",
}
BURN_UNIT = "suffix:x"

GREEN, ORANGE, RED = "green", "orange", "red"

Panel = cogbuilder.Builder[dm.Panel]


def team_dashboard_path(team: Team) -> str:
    return f"{DASHBOARDS_DIR}/{team.name}.json"


OVERVIEW_PATH = f"{DASHBOARDS_DIR}/overview.json"


# -- ids, layout and shared pieces ----------------------------------------------------------


class _Ids:
    """Sequential panel ids, rows included: stable across runs because panels are added in model order."""

    def __init__(self) -> None:
        self._last = 0

    def next(self) -> int:
        self._last += 1
        return self._last


def _spans(count: int) -> list[int]:
    """Widths of ``count`` panels laid out at most PER_LINE to a line, each line filling the grid."""
    widths: list[int] = []
    for start in range(0, count, PER_LINE):
        n = min(PER_LINE, count - start)
        base, extra = divmod(GRID_WIDTH, n)
        widths.extend(base + (1 if index < extra else 0) for index in range(n))
    return widths


def _slice_matchers(slo: SLO) -> tuple[Matcher, ...]:
    return tuple(Matcher(label, "=~", f"${dashboard_variable(label)}") for label in slo.slice.by)


def _scoped(expr: str, slo: SLO) -> str:
    """``expr`` with every selector filtered on the spec's slice variables."""
    return inject_matchers(expr, _slice_matchers(slo))


def _worst(slo: SLO, expr: str, *, high_is_bad: bool) -> str:
    """``expr`` (scoped) limited to the WORST slices when the spec is sliced per unit, else as it is."""
    if not per_unit_labels(slo):
        return expr
    return f"{'topk' if high_is_bad else 'bottomk'}({WORST}, {expr})"


def _worst_text(slo: SLO, *, high_is_bad: bool) -> str:
    """What the panel leaves out when ``_worst`` limits it ('' when it does not)."""
    units = per_unit_labels(slo)
    if not units:
        return ""
    return (
        f" Sliced per {units[0]}: only the {WORST} {'highest' if high_is_bad else 'lowest'} at each step "
        f"(`{'topk' if high_is_bad else 'bottomk'}`); pick {PER_UNIT_LABELS[units[0]]} in the {units[0]} variable "
        "to see others."
    )


def _legend(slo: SLO, suffix: str = "") -> str:
    names = " ".join(f"{{{{{label}}}}}" for label in slo.slice.by) or "{{slo}}"
    return f"{names} {suffix}".strip()


def _query(expr: str, legend: str, ref_id: str, *, instant: bool = False) -> prom.Dataquery:
    query = prom.Dataquery().expr(expr).legend_format(legend).ref_id(ref_id).datasource(DATASOURCE)
    return query.instant() if instant else query.range()


def _thresholds(steps: Sequence[tuple[float | None, str]]) -> db.ThresholdsConfig:
    return db.ThresholdsConfig().mode(dm.ThresholdsMode.ABSOLUTE).steps([dm.Threshold(v, c) for v, c in steps])


def _legend_options() -> common_builders.VizLegendOptions:
    return (
        common_builders.VizLegendOptions()
        .show_legend(True)
        .display_mode(common.LegendDisplayMode.LIST)
        .placement(common.LegendPlacement.BOTTOM)
    )


def _timeseries(ids: _Ids, title: str, description: str, unit: str, span: int, height: int) -> timeseries.Panel:
    return (
        timeseries.Panel()
        .id(ids.next())
        .title(title)
        .description(description)
        .datasource(DATASOURCE)
        .unit(unit)
        .span(span)
        .height(height)
        .legend(_legend_options())
    )


def _stat(ids: _Ids, title: str, description: str, unit: str, span: int, height: int) -> stat.Panel:
    return (
        stat.Panel()
        .id(ids.next())
        .title(title)
        .description(description)
        .datasource(DATASOURCE)
        .unit(unit)
        .span(span)
        .height(height)
        .color_mode(common.BigValueColorMode.BACKGROUND)
        .graph_mode(common.BigValueGraphMode.NONE)
        .reduce_options(common_builders.ReduceDataOptions().calcs(["lastNotNull"]).values(False))
    )


def _runbook_root(model: Model, slo: SLO) -> str:
    """The spec's runbook page itself (``runbook_url`` without the alert's anchor)."""
    return f"{model.project.runbook_base_url}/{slo.name}.md"


def _runbook_links(model: Model, slo: SLO, names: Iterable[str] = ()) -> str:
    unique = list(dict.fromkeys(names))
    if not unique:
        return f"Runbook: [{slo.name}]({_runbook_root(model, slo)})"
    return "Runbook: " + ", ".join(f"[{name}]({runbook_url(model, slo, name)})" for name in unique)


def _description(model: Model, slo: SLO, what: str, alerts: Iterable[str] = ()) -> str:
    parts = [slo.description.strip(), what]
    if slo.mode == "shadow":
        parts.append("Shadow spec: its alerts reach no paging receiver.")
    parts.append(_runbook_links(model, slo, alerts))
    return "\n\n".join(part for part in parts if part)


def _names(slo_names: Iterable[str]) -> str:
    """A regex alternation of spec names (DNS labels: no regex metacharacters)."""
    return "|".join(sorted(slo_names))


# -- template variables and annotations -------------------------------------------------------


def _variables(slos: Sequence[SLO]) -> list[cogbuilder.Builder[dm.VariableModel]]:
    variables: list[cogbuilder.Builder[dm.VariableModel]] = [
        db.DatasourceVariable(DATASOURCE_VARIABLE).label("Data source").type("prometheus")
    ]
    labels = list(dict.fromkeys(label for slo in slos for label in slo.slice.by))
    for label in labels:
        users = [slo for slo in slos if label in slo.slice.by]
        metrics = sorted({series.presence_series(slo) for slo in users})
        slo_matcher = f"slo=~{quote(_names(slo.name for slo in users))}"
        if len(metrics) == 1:
            selector = f"{metrics[0]}{{{slo_matcher}}}"
        else:
            selector = f"{{__name__=~{quote('|'.join(metrics))},{slo_matcher}}}"
        query = f"label_values({selector}, {label})"
        per_unit = any(label in per_unit_labels(slo) for slo in users)
        variables.append(
            db.QueryVariable(dashboard_variable(label))
            .label(f"{label} (All: the {WORST} worst)" if per_unit else label)
            .datasource(DATASOURCE)
            .query(query)
            .definition(query)
            .multi(True)
            .include_all(True)
            .all_value(".*")
            .current(dm.VariableOption(selected=True, text=["All"], value=["$__all"]))
            .refresh(dm.VariableRefresh.ON_TIME_RANGE_CHANGED)
            .sort(dm.VariableSort.ALPHABETICAL_ASC)
        )
    return variables


def _annotations(slos: Sequence[SLO], team: Team | None) -> list[cogbuilder.Builder[dm.AnnotationQuery]]:
    names = quote(_names(slo.name for slo in slos))
    scope = f"team={quote(team.name)},slo=~{names}" if team else f"slo=~{names}"
    firing = f'ALERTS{{alertstate="firing",{scope}}}'
    info = f"{series.INFO}{{{scope}}}"
    return [
        db.AnnotationQuery()
        .name("Alerts firing")
        .datasource(DATASOURCE)
        .enable(True)
        .icon_color(RED)
        .target(prom.Dataquery().expr(firing).ref_id("Alerts").datasource(DATASOURCE))
        .step("1m")
        .title_format("{{alertname}}")
        .text_format("{{slo}} ({{severity}})")
        .tag_keys("slo,severity"),
        # A (slo, spec_hash) pair absent 5m earlier marks a spec version taking effect.
        db.AnnotationQuery()
        .name("Spec version changes")
        .datasource(DATASOURCE)
        .enable(True)
        .icon_color("blue")
        .target(
            prom.Dataquery()
            .expr(f"count by (slo, spec_hash) ({info} unless {info} offset 5m)")
            .ref_id("Versions")
            .datasource(DATASOURCE)
        )
        .step("1m")
        .title_format("{{slo}}: spec {{spec_hash}}")
        .text_format("Spec {{slo}} changed to version {{spec_hash}}")
        .tag_keys("slo"),
    ]


# -- per-spec panels ------------------------------------------------------------------------


def _budget_steps() -> list[tuple[float | None, str]]:
    return [(None, RED), (0.0, ORANGE), (0.25, GREEN)]


def _objective_panels(model: Model, slo: SLO, rules: Sequence[AlertSpec], ids: _Ids) -> list[Panel]:
    objective = slo.objective
    assert objective is not None
    period = human.duration(objective.period_ms)
    target = percent(objective.target)
    slice_legend = _legend(slo)
    sli = (
        _timeseries(
            ids,
            f"SLI (1h) vs {target} objective",
            _description(
                model,
                slo,
                f"Good-event ratio per slice over the last hour, from the recorded `{series.BAD_1H}` and "
                f"`{series.TOTAL_1H}`. The dashed line is the {target} objective over {period}."
                + _worst_text(slo, high_is_bad=False),
            ),
            UNITS["ratio"],
            12,
            8,
        )
        .with_target(
            _query(
                _worst(slo, _scoped(f"1 - ({series.window_ratio(slo, windows.HOUR)})", slo), high_is_bad=False),
                slice_legend,
                "A",
            )
        )
        .thresholds(_thresholds([(None, RED), (clean_number(objective.target), GREEN)]))
        .thresholds_style(common_builders.GraphThresholdsStyleConfig().mode(common.GraphThresholdsStyleMode.DASHED))
    )
    budget_what = (
        f"Share of the {period} error budget ({percent(objective.budget)} of events) still unspent, per slice, "
        f"from `{series.BUDGET_REMAINING}`; below 0 the objective is missed."
    ) + _worst_text(slo, high_is_bad=False)
    budget = _worst(slo, _scoped(series.recorded(series.BUDGET_REMAINING, slo), slo), high_is_bad=False)
    budget_stat = (
        _stat(ids, f"Error budget remaining ({period})", _description(model, slo, budget_what), UNITS["ratio"], 4, 8)
        .with_target(_query(budget, slice_legend, "A", instant=True))
        .thresholds(_thresholds(_budget_steps()))
    )
    budget_series = (
        _timeseries(
            ids,
            f"Error budget remaining over time ({period})",
            _description(model, slo, budget_what),
            "percentunit",
            8,
            8,
        )
        .with_target(_query(budget, slice_legend, "A"))
        .thresholds(_thresholds(_budget_steps()))
        .thresholds_style(common_builders.GraphThresholdsStyleConfig().mode(common.GraphThresholdsStyleMode.DASHED))
    )
    panels: list[Panel] = [sli, budget_stat, budget_series]
    for burn, span in zip(objective.burn_alerts, _spans(len(objective.burn_alerts)), strict=True):
        names = [rule.name for rule in rules if rule.kind == "burn" and rule.burn == burn]
        panels.append(_burn_panel(model, slo, burn, names, ids, span))
    return panels


def _burn_panel(model: Model, slo: SLO, burn: BurnAlert, names: Sequence[str], ids: _Ids, span: int) -> Panel:
    """One window pair's burn rates against its factor (the dashed line)."""
    objective = slo.objective
    assert objective is not None
    period = human.duration(objective.period_ms)
    budget_text = go_float(clean_number(objective.budget))
    long_w, short_w = human.duration(burn.long_ms), human.duration(burn.short_ms)
    factor = human.factor(burn.factor)  # display only; the threshold below is exact
    what = (
        f"Burn rate (error ratio / budget {budget_text}) over the {long_w} and {short_w} windows, per slice. "
        f"The {model.project.severity_text(burn.severity)} alert fires when both stay above {factor} (the dashed "
        "line) for "
        f"{human.duration(burn.for_ms)}: at {factor} the {period} budget lasts "
        f"{human.duration(windows.exhaustion_ms(objective.period_ms, burn.factor))}."
        + _worst_text(slo, high_is_bad=True)
    )
    panel = (
        _timeseries(
            ids,
            f"Burn rate {long_w}/{short_w} ({model.project.severity_label(burn.severity)}, {factor})",
            "",
            BURN_UNIT,
            span,
            8,
        )
        .description(_description(model, slo, what, names))
        .with_target(
            _query(
                _worst(
                    slo, _scoped(f"({series.window_ratio(slo, burn.long_ms)}) / {budget_text}", slo), high_is_bad=True
                ),
                _legend(slo, long_w),
                "A",
            )
        )
        .with_target(
            _query(
                _worst(
                    slo, _scoped(f"({series.window_ratio(slo, burn.short_ms)}) / {budget_text}", slo), high_is_bad=True
                ),
                _legend(slo, short_w),
                "B",
            )
        )
        .thresholds(_thresholds([(None, GREEN), (clean_number(burn.factor), RED)]))
        .thresholds_style(common_builders.GraphThresholdsStyleConfig().mode(common.GraphThresholdsStyleMode.DASHED))
    )
    return panel


def _band_colour(value: float, normal: Range | None, critical: Range | None) -> str:
    def outside(band: Range | None) -> bool:
        if band is None:
            return False
        return (band.minimum is not None and value < band.minimum) or (
            band.maximum is not None and value > band.maximum
        )

    if outside(critical):
        return RED
    return ORANGE if outside(normal) else GREEN


def _band_steps(slo: SLO) -> list[tuple[float | None, str]]:
    """Threshold steps colouring values inside the normal range green, outside it orange, outside critical red.

    A step applies from its value upwards, so each step takes the colour just above its bound.
    """
    normal, critical = slo.normal_range, slo.critical_range
    bounds = sorted({b for band in (normal, critical) if band for b in (band.minimum, band.maximum) if b is not None})
    if not bounds:
        return [(None, GREEN)]
    steps: list[tuple[float | None, str]] = [(None, _band_colour(bounds[0] - 1 - abs(bounds[0]), normal, critical))]
    for index, bound in enumerate(bounds):
        above = (bound + bounds[index + 1]) / 2 if index + 1 < len(bounds) else bound + 1 + abs(bound)
        steps.append((bound, _band_colour(above, normal, critical)))
    return steps


def _bands(slo: SLO) -> list[tuple[Range, str]]:
    return [(band, label) for band, label in ((slo.normal_range, "Normal"), (slo.critical_range, "Critical")) if band]


def _band_text(model: Model, slo: SLO, band: Range, label: str) -> str:
    bounds = []
    if band.minimum is not None:
        bounds.append(f"min {human.value(slo.unit, band.minimum)}")
    if band.maximum is not None:
        bounds.append(f"max {human.value(slo.unit, band.maximum)}")
    rel = band.relative
    if rel is not None:
        offset = human.duration(rel.offset_ms)
        floor = f" (only from {human.value(slo.unit, rel.floor)})" if rel.floor else ""
        held = f"its baseline (its value {offset} earlier, held up to {human.duration(rel.hold_ms)} while it fires)"
        if rel.max_factor is not None:
            bounds.append(f"at least {human.factor(rel.max_factor)} {held}{floor}")
        if rel.min_factor is not None:
            bounds.append(f"at most {human.factor(rel.min_factor)} {held}{floor}")
    keep = f", keeps firing {human.duration(band.keep_firing_for_ms)} after" if band.keep_firing_for_ms else ""
    reason = f" {band.reason.strip()}" if band.reason.strip() else ""
    return (
        f"{label} range ({model.project.severity_text(band.severity)}): {'; '.join(bounds)}. Alerts once outside for "
        f"{human.duration(band.for_ms)}{keep}.{reason}{_fleet_text(slo) if label == 'Critical' else ''}"
    )


def _fleet_text(slo: SLO) -> str:
    """A fleet judges the critical range per unit, which the per-slice value on this panel does not show."""
    if slo.fleet is None:
        return ""
    return (
        f" Judged per unit ({', '.join(slo.fleet.units)}; `{series.UNIT_VALUE}`): one unit out is a ticket naming it, "
        f"and the slice pages when {slo.fleet.describe()} are out (`{series.FLEET_UNITS_OUT}` of "
        f"`{series.FLEET_UNITS}`)."
    )


def _high_is_bad(slo: SLO) -> bool:
    """Whether the spec's ranges bound its value from above (or not from below): its worst slices are its highest."""
    bands = [band for band, _ in _bands(slo)]
    upper = any(b.maximum is not None or (b.relative and b.relative.max_factor is not None) for b in bands)
    lower = any(b.minimum is not None or (b.relative and b.relative.min_factor is not None) for b in bands)
    return upper or not lower


def _range_panel(model: Model, slo: SLO, rules: Sequence[AlertSpec], ids: _Ids, span: int) -> Panel:
    bands = _bands(slo)
    high_is_bad = _high_is_bad(slo)
    value = _worst(slo, _scoped(series.value(slo), slo), high_is_bad=high_is_bad)
    what = "\n\n".join(
        [
            "The signal's current value per slice"
            + (" (5m error ratio from the recorded rates)" if slo.counts_events else f" (`{series.VALUE}`)")
            + "; shaded areas are outside the static bounds, dashed series are the relative bounds."
            + _worst_text(slo, high_is_bad=high_is_bad),
            *(_band_text(model, slo, band, label) for band, label in bands),
        ]
    )
    names = [rule.name for rule in rules if rule.kind == "range"]
    title = (
        "Value vs " + " and ".join(label.lower() for _, label in bands) + (" ranges" if len(bands) > 1 else " range")
    )
    panel = (
        _timeseries(ids, title, _description(model, slo, what, names), UNITS[slo.unit], span, 8)
        .with_target(_query(value, _legend(slo), "A"))
        .thresholds(_thresholds(_band_steps(slo)))
    )
    if len(_band_steps(slo)) > 1:
        panel = panel.thresholds_style(
            common_builders.GraphThresholdsStyleConfig().mode(common.GraphThresholdsStyleMode.LINE_AND_AREA)
        )
    ref = ord("B")
    for band, label in bands:
        rel = band.relative
        if rel is None:
            continue
        offset = human.duration(rel.offset_ms)
        for side, factor in (("max", rel.max_factor), ("min", rel.min_factor)):
            if factor is None:
                continue
            ref_id = chr(ref)
            ref += 1
            expr = _scoped(f"{go_float(factor)} * {series.baseline(slo, series.band_level(slo, band))}", slo)
            if per_unit_labels(slo):  # the bounds of the slices the value series shows, no others
                expr = f"({expr}) and on ({', '.join(slo.slice.by)}) {value}"
            legend = _legend(slo, f"{label.lower()} {side} ({human.factor(factor)} the baseline, {offset} ago or held)")
            panel = panel.with_target(_query(expr, legend, ref_id)).override_by_query(
                ref_id, [dm.DynamicConfigValue("custom.lineStyle", {"fill": "dash", "dash": [10, 10]})]
            )
    return panel


def _alert_state_panel(model: Model, slo: SLO, rules: Sequence[AlertSpec], ids: _Ids, span: int) -> Panel:
    alerts = f"ALERTS{{slo={quote(slo.name)}"
    expr = f'max by (alertname) ((2 * {alerts},alertstate="firing"}}) or {alerts},alertstate="pending"}})'
    what = "Each alert of the spec over time, across the selected slices: pending, then firing."
    return (
        statetimeline.Panel()
        .id(ids.next())
        .title("Alert state")
        .description(_description(model, slo, what, (rule.name for rule in rules)))
        .datasource(DATASOURCE)
        .span(span)
        .height(8)
        .with_target(_query(_scoped(expr, slo), "{{alertname}}", "A"))
        .mappings(
            [
                dm.ValueMap(
                    {
                        "1": dm.ValueMappingResult(text="pending", color=ORANGE, index=0),
                        "2": dm.ValueMappingResult(text="firing", color=RED, index=1),
                    }
                )
            ]
        )
        .thresholds(_thresholds([(None, GREEN)]))
        .show_value(common.VisibilityMode.NEVER)
        .merge_values(True)
        .legend(_legend_options())
    )


def _spec_panels(model: Model, spec: SpecPlan, ids: _Ids) -> list[Panel]:
    slo, rules = spec.slo, spec.alerts
    panels: list[Panel] = []
    if slo.objective is not None:
        panels.extend(_objective_panels(model, slo, rules, ids))
    if slo.normal_range or slo.critical_range:
        panels.append(_range_panel(model, slo, rules, ids, 16))
        panels.append(_alert_state_panel(model, slo, rules, ids, 8))
    else:
        panels.append(_alert_state_panel(model, slo, rules, ids, GRID_WIDTH))
    return panels


# -- dashboards ------------------------------------------------------------------------------


def _dashboard(
    title: str, uid: str, description: str, tags: list[str], slos: Sequence[SLO], team: Team | None
) -> db.Dashboard:
    builder = (
        db.Dashboard(title)
        .uid(uid)
        .description(description)
        .tags(tags)
        .timezone("browser")
        .time(TIME_FROM, "now")
        .refresh(REFRESH)
        .tooltip(dm.DashboardCursorSync.CROSSHAIR)
        .variables(_variables(slos))
        .annotations(_annotations(slos, team))
    )
    return builder


def _team_dashboard(model: Model, team: Team, specs: Sequence[SpecPlan]) -> db.Dashboard:
    ids = _Ids()
    slos = [spec.slo for spec in specs]
    builder = _dashboard(
        f"SLOs: {team.name}",
        team_dashboard_uid(team),
        f"Generated by slo-compiler: the {len(slos)} specs owned by {team.name} ({team.contact}).",
        ["slo", "slo-compiler", team.name],
        slos,
        team,
    ).link(
        db.DashboardLink("SLO overview")
        .type(dm.DashboardLinkType.LINK)
        .url(dashboard_url(model, OVERVIEW_DASHBOARD_UID))
        .icon("dashboard")
        .keep_time(True)
        .include_vars(False)
        .target_blank(False)
    )
    for spec in specs:
        builder = builder.with_row(db.Row(spec.slo.name).id(ids.next()).collapsed(False))
        for panel in _spec_panels(model, spec, ids):
            builder = builder.with_panel(panel)
    return builder


def _overview_panel(model: Model, slo: SLO, ids: _Ids, span: int) -> Panel:
    team_url = dashboard_url(model, team_dashboard_uid(slo.owner))
    links: list[cogbuilder.Builder[dm.DashboardLink]] = [
        db.DashboardLink(f"{slo.owner.name} dashboard").url(f"{team_url}?${{__url_time_range}}"),
        db.DashboardLink("Runbook").url(_runbook_root(model, slo)).target_blank(True),
    ]
    if slo.objective is not None:
        period = human.duration(slo.objective.period_ms)
        what = (
            f"Owner {slo.owner.name}. Error budget left of the {percent(slo.objective.target)} objective over "
            f"{period}, worst selected slice (`{series.BUDGET_REMAINING}`)."
        )
        return (
            _stat(ids, slo.name, _description(model, slo, what), UNITS["ratio"], span, 5)
            .links(links)
            .with_target(
                _query(
                    _scoped(f"min({series.recorded(series.BUDGET_REMAINING, slo)})", slo),
                    "budget left",
                    "A",
                    instant=True,
                )
            )
            .thresholds(_thresholds(_budget_steps()))
        )
    bands = [band for band, _ in _bands(slo)]
    upper = any(b.maximum is not None or (b.relative and b.relative.max_factor is not None) for b in bands)
    lower = any(b.minimum is not None or (b.relative and b.relative.min_factor is not None) for b in bands)
    what = "\n\n".join(
        [
            f"Owner {slo.owner.name}. Current value, extremes over the selected slices, coloured by the static bounds.",
            *(_band_text(model, slo, band, label) for band, label in _bands(slo)),
        ]
    )
    panel = (
        _stat(ids, slo.name, _description(model, slo, what), UNITS[slo.unit], span, 5)
        .links(links)
        .thresholds(_thresholds(_band_steps(slo)))
    )
    if upper or not lower:
        panel = panel.with_target(_query(_scoped(f"max({series.value(slo)})", slo), "max", "A", instant=True))
    if lower:
        panel = panel.with_target(_query(_scoped(f"min({series.value(slo)})", slo), "min", "B", instant=True))
    return panel


def _overview(model: Model) -> db.Dashboard:
    ids = _Ids()
    teams = sorted({slo.owner.name for slo in model.slos})
    builder = _dashboard(
        "SLOs: overview",
        OVERVIEW_DASHBOARD_UID,
        "Generated by slo-compiler: every spec by family; each panel links to its owner's dashboard.",
        ["slo", "slo-compiler"],
        model.slos,
        None,
    )
    for team in model.teams:
        if team.name in teams:
            builder = builder.link(
                db.DashboardLink(f"{team.name} dashboard")
                .type(dm.DashboardLinkType.LINK)
                .url(dashboard_url(model, team_dashboard_uid(team)))
                .icon("dashboard")
                .keep_time(True)
                .include_vars(False)
                .target_blank(False)
            )
    for family in model.project.family_order({slo.family for slo in model.slos}):
        slos = [slo for slo in model.slos if slo.family == family]
        if not slos:
            continue
        builder = builder.with_row(db.Row(model.project.family_title(family)).id(ids.next()).collapsed(False))
        for slo, span in zip(slos, _spans(len(slos)), strict=True):
            builder = builder.with_panel(_overview_panel(model, slo, ids, span))
    return builder


def to_json(builder: db.Dashboard) -> bytes:
    """The SDK's JSON, normalised: sorted keys, two-space indent, trailing newline."""
    return (jsonout.dumps(builder.build(), JSONEncoder().default) + "\n").encode("utf-8")


def render(alert_plan: Plan) -> dict[str, bytes]:
    model = alert_plan.model
    files: dict[str, bytes] = {}
    for team in model.teams:
        specs = [spec for spec in alert_plan if spec.slo.owner.name == team.name]
        if specs:
            files[team_dashboard_path(team)] = to_json(_team_dashboard(model, team, specs))
    if model.slos:
        files[OVERVIEW_PATH] = to_json(_overview(model))
    return files
