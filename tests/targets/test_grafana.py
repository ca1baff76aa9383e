"""Grafana dashboards: SDK round-trip, PromQL that parses and reads only recorded series, stable layout.

Built from the library specs (slo_specs/) and the fixture specs, without a Grafana server:
the SDK's own decoder is the structural validator, ``compiler.promql`` the query checker.
"""

from __future__ import annotations

import dataclasses
import json
import re
import typing
import warnings
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from compiler import promql
from compiler.model import SLO, Model, Unit, links, series
from compiler.plan import plan, plan_spec
from compiler.plan import watch as plan_watch
from compiler.targets import grafana, prometheus

with warnings.catch_warnings():
    warnings.simplefilter("ignore", DeprecationWarning)  # the SDK prefers its v2 dashboard schema
    from grafana_foundation_sdk.cog.encoder import JSONEncoder
    from grafana_foundation_sdk.cog.plugins import register_default_plugins
    from grafana_foundation_sdk.models import dashboard as sdk_dashboard
    from grafana_foundation_sdk.models import prometheus as sdk_prometheus

from tests.support import compile_tree

REPO_ROOT = Path(__file__).resolve().parents[2]
SPEC_DIRS = {"library": REPO_ROOT / "slo_specs", "fixtures": REPO_ROOT / "tests" / "fixtures" / "specs"}

Json = dict[str, Any]


MODELS = {key: compile_tree(path) for key, path in SPEC_DIRS.items()}
RENDERED = {key: grafana.render(plan(model)) for key, model in MODELS.items()}
CASES = [(key, name) for key in sorted(RENDERED) for name in sorted(RENDERED[key])]
IDS = [f"{key}/{Path(name).stem}" for key, name in CASES]


def load(key: str, name: str) -> Json:
    data: Json = json.loads(RENDERED[key][name])
    return data


def panels(data: Json) -> Iterator[Json]:
    """Every panel, rows included, and panels nested in collapsed rows."""
    for panel in data.get("panels", []):
        yield panel
        yield from panel.get("panels", [])


def queries(data: Json) -> Iterator[tuple[str, str]]:
    """(where, PromQL) for every panel target and every annotation query."""
    for panel in panels(data):
        for target in panel.get("targets", []):
            yield f"panel {panel['id']} {panel['title']!r} {target['refId']}", target["expr"]
    for annotation in data["annotations"]["list"]:
        yield f"annotation {annotation['name']!r}", annotation["target"]["expr"]


LABEL_VALUES = re.compile(r"^label_values\((?P<selector>.+), (?P<label>[a-zA-Z_][a-zA-Z0-9_]*)\)$")


def variable_selectors(data: Json) -> Iterator[tuple[str, str, str]]:
    """(variable name, series selector, label) of every label_values() query variable."""
    for variable in data["templating"]["list"]:
        if variable["type"] == "query":
            match = LABEL_VALUES.fullmatch(variable["query"])
            assert match, f"variable {variable['name']}: not a label_values() query: {variable['query']}"
            yield variable["name"], match["selector"], match["label"]


GRAFANA_VARIABLE = re.compile(r"\$\{(?P<braced>\w+)(?::\w+)?\}|\$(?P<plain>\w+)")


def substitute(expr: str) -> str:
    """What Prometheus would receive: Grafana's interval macros filled in, variables set to a literal."""
    expr = expr.replace("$__rate_interval", "5m").replace("$__interval", "1m")

    def value(match: re.Match[str]) -> str:
        name = match["braced"] or match["plain"]
        return "" if name == links.DATASOURCE_VARIABLE else "some-value"

    return GRAFANA_VARIABLE.sub(value, expr)


def slo_values(matchers: tuple[promql.Matcher, ...]) -> set[str]:
    found: set[str] = set()
    for matcher in matchers:
        if matcher.name == "slo" and matcher.op == "=":
            found.add(matcher.value)
        elif matcher.name == "slo" and matcher.op == "=~":
            found.update(matcher.value.split("|"))
    return found


def metric_names(name: str | None, matchers: tuple[promql.Matcher, ...]) -> list[str]:
    if name is not None:
        return [name]
    regexes = [m.value for m in matchers if m.name == "__name__" and m.op == "=~"]
    assert regexes, "a selector without a metric name or __name__ regex"
    return regexes[0].split("|")


def recorded_series(model: Model) -> set[tuple[str, str]]:
    """(series name, slo) of every recording rule the Prometheus target writes."""
    return {(rule["record"], rule["labels"]["slo"]) for slo in model.slos for rule in prometheus.recording_rules(slo)}


def spec_panels(data: Json) -> Iterator[tuple[str, Json]]:
    """(spec name, panel) for the panels under each spec's row of a team dashboard."""
    current = None
    for panel in data["panels"]:
        if panel["type"] == "row":
            current = panel["title"]
        else:
            assert current is not None, f"panel {panel['title']!r} before any row"
            yield current, panel


def by_name(model: Model) -> dict[str, SLO]:
    return {slo.name: slo for slo in model.slos}


# -- files, uids, ids ---------------------------------------------------------------------


@pytest.mark.parametrize("key", sorted(MODELS))
def test_one_dashboard_per_owner_team_with_specs_and_one_overview(key: str) -> None:
    model = MODELS[key]
    owners = {slo.owner.name for slo in model.slos}
    expected = {f"grafana/dashboards/{team}.json" for team in owners} | {"grafana/dashboards/overview.json"}
    assert set(RENDERED[key]) == expected
    for team in model.teams:
        if team.name not in owners:
            assert f"grafana/dashboards/{team.name}.json" not in RENDERED[key]


@pytest.mark.parametrize("key", sorted(MODELS))
def test_uids_are_the_links_uids_and_unique(key: str) -> None:
    model = MODELS[key]
    uids = {name: load(key, name)["uid"] for name in RENDERED[key]}
    assert uids.pop("grafana/dashboards/overview.json") == links.OVERVIEW_DASHBOARD_UID
    for team in model.teams:
        path = f"grafana/dashboards/{team.name}.json"
        if path in uids:
            assert uids[path] == links.team_dashboard_uid(team)
    everything = [*uids.values(), links.OVERVIEW_DASHBOARD_UID]
    assert len(set(everything)) == len(everything)
    assert all(len(uid) <= links.MAX_UID for uid in everything)


@pytest.mark.parametrize(("key", "name"), CASES, ids=IDS)
def test_panel_ids_are_unique_and_non_zero(key: str, name: str) -> None:
    ids = [panel.get("id") for panel in panels(load(key, name))]
    assert ids, "a dashboard without panels"
    assert all(isinstance(i, int) and i > 0 for i in ids), ids
    assert len(set(ids)) == len(ids), ids


@pytest.mark.parametrize(("key", "name"), CASES, ids=IDS)
def test_panels_fit_the_grid_and_rows_are_expanded(key: str, name: str) -> None:
    for panel in panels(load(key, name)):
        pos = panel["gridPos"]
        assert pos["x"] + pos["w"] <= 24, panel["title"]
        if panel["type"] == "row":
            assert panel["collapsed"] is False and panel["panels"] == [], panel["title"]


# -- serialisation ------------------------------------------------------------------------


@pytest.mark.parametrize(("key", "name"), CASES, ids=IDS)
def test_dashboard_round_trips_through_the_sdk(key: str, name: str) -> None:
    register_default_plugins()
    content = RENDERED[key][name]
    decoded = sdk_dashboard.Dashboard.from_json(json.loads(content))
    for panel in decoded.panels or []:
        if isinstance(panel, sdk_dashboard.Panel):
            # Typed decoding (not a dict passed through) shows the panel and query plugins were recognised.
            assert not isinstance(panel.options, dict), f"{panel.type_val} options were not decoded"
            assert all(isinstance(t, sdk_prometheus.Dataquery) for t in panel.targets or []), panel.title
    again = json.dumps(json.loads(json.dumps(decoded, cls=JSONEncoder)), sort_keys=True, indent=2, ensure_ascii=False)
    assert (again + "\n").encode("utf-8") == content


@pytest.mark.parametrize(("key", "name"), CASES, ids=IDS)
def test_json_is_normalised_and_on_the_current_schema(key: str, name: str) -> None:
    content = RENDERED[key][name]
    data = json.loads(content)
    normalised = json.dumps(data, sort_keys=True, indent=2, ensure_ascii=False) + "\n"
    assert content.decode("utf-8") == normalised
    assert data["schemaVersion"] == 42


@pytest.mark.parametrize("key", sorted(MODELS))
def test_rendering_twice_gives_identical_bytes(key: str) -> None:
    assert grafana.render(plan(compile_tree(SPEC_DIRS[key]))) == RENDERED[key]


# -- queries ------------------------------------------------------------------------------


def test_substitution_handles_every_variable_form() -> None:
    expr = 'rate(x{a=~"$a",b=~"${b}",c=~"${c:regex}"}[$__rate_interval]) + 0 * y[$__interval] ${datasource}'
    assert substitute(expr) == 'rate(x{a=~"some-value",b=~"some-value",c=~"some-value"}[5m]) + 0 * y[1m] '
    with pytest.raises(promql.PromQLError):
        promql.parse_expr('rate(x{a=~"$a"}[$__rate_interval])')


@pytest.mark.parametrize(("key", "name"), CASES, ids=IDS)
def test_every_query_parses_as_promql(key: str, name: str) -> None:
    data = load(key, name)
    found = list(queries(data))
    assert found
    for where, expr in found:
        try:
            promql.parse_expr(substitute(expr))
        except promql.PromQLError as exc:
            pytest.fail(f"{where}: {exc}\n{expr}")
    for variable, selector, _ in variable_selectors(data):
        node = promql.parse_expr(substitute(selector))
        assert type(node).__name__ == "VectorSelector", f"variable {variable}: {selector}"


@pytest.mark.parametrize(("key", "name"), CASES, ids=IDS)
def test_queries_read_only_recorded_series_of_known_specs_and_alerts(key: str, name: str) -> None:
    """No dashboard recomputes a window from raw series: every selector is a recording rule's output or ALERTS."""
    model = MODELS[key]
    recorded = recorded_series(model)
    data = load(key, name)
    texts = [(where, expr) for where, expr in queries(data)]
    texts += [(f"variable {variable}", selector) for variable, selector, _ in variable_selectors(data)]
    for where, expr in texts:
        selectors = promql.analyse(substitute(expr)).selectors
        assert selectors, f"{where}: no selector"
        for metric, matchers in selectors:
            slos = slo_values(matchers)
            assert slos, f"{where}: {metric} is not scoped to an slo"
            names = metric_names(metric, matchers)
            if names == ["ALERTS"]:
                assert slos <= set(by_name(model)), f"{where}: ALERTS of unknown specs {slos}"
                continue
            for name_ in names:
                assert name_.startswith("slo:") or name_ == series.INFO, f"{where} reads raw series {name_}"
                # {__name__=~"a|b",slo=~"x|y"} is a union: each name must be some listed spec's series ...
                assert any((name_, slo) in recorded for slo in slos), f"{where}: nothing records {name_}"
            for slo in slos:
                # ... and each spec must have one of them (so a plain metric name, every spec).
                assert any((name_, slo) in recorded for name_ in names), (
                    f"{where}: no recording rule writes {'|'.join(names)}{{slo={slo!r}}}"
                )


@pytest.mark.parametrize(("key", "name"), CASES, ids=IDS)
def test_every_panel_query_filters_on_its_specs_slice_variables(key: str, name: str) -> None:
    model = MODELS[key]
    specs = by_name(model)
    data = load(key, name)
    defined = {variable["name"] for variable in data["templating"]["list"]}
    for panel in panels(data):
        for target in panel.get("targets", []):
            for metric, matchers in promql.analyse(target["expr"]).selectors:
                (slo,) = slo_values(matchers)
                for label in specs[slo].slice.by:
                    assert promql.Matcher(label, "=~", f"${label}") in matchers, (
                        f"panel {panel['title']!r}: {metric} is not filtered on ${label}"
                    )
                    assert label in defined, f"no variable {label}"


@pytest.mark.parametrize(("key", "name"), CASES, ids=IDS)
def test_variables_are_a_prometheus_datasource_and_one_multi_all_query_per_slice_label(key: str, name: str) -> None:
    model = MODELS[key]
    data = load(key, name)
    shown = [slo for slo in model.slos if name.endswith("overview.json") or name.endswith(f"/{slo.owner.name}.json")]
    variables = data["templating"]["list"]
    assert variables[0]["type"] == "datasource" and variables[0]["query"] == "prometheus"
    assert variables[0]["name"] == links.DATASOURCE_VARIABLE
    labels = {label for slo in shown for label in slo.slice.by}
    query_variables = {v["name"]: v for v in variables[1:]}
    assert set(query_variables) == labels
    for variable, _selector, label in variable_selectors(data):
        settings = query_variables[variable]
        assert label == variable
        assert settings["multi"] is True and settings["includeAll"] is True and settings["allValue"] == ".*"
        assert settings["datasource"] == {"type": "prometheus", "uid": "${datasource}"}
    for panel in panels(data):
        if panel["type"] != "row":
            assert panel["datasource"] == {"type": "prometheus", "uid": "${datasource}"}, panel["title"]


# -- content ------------------------------------------------------------------------------


@pytest.mark.parametrize(("key", "name"), CASES, ids=IDS)
def test_timeseries_and_state_timelines_show_their_legend(key: str, name: str) -> None:
    graphs = [p for p in panels(load(key, name)) if p["type"] in ("timeseries", "state-timeline")]
    if not name.endswith("overview.json"):
        assert graphs
    for panel in graphs:
        assert panel["options"]["legend"]["showLegend"] is True, panel["title"]
        assert panel["options"]["legend"]["displayMode"] != "hidden", panel["title"]


@pytest.mark.parametrize(("key", "name"), CASES, ids=IDS)
def test_annotations_mark_alert_firings_and_spec_version_changes(key: str, name: str) -> None:
    annotations = {a["name"]: a for a in load(key, name)["annotations"]["list"]}
    assert set(annotations) == {"Alerts firing", "Spec version changes"}
    firing = promql.analyse(annotations["Alerts firing"]["target"]["expr"]).selectors
    assert [metric for metric, _ in firing] == ["ALERTS"]
    assert promql.Matcher("alertstate", "=", "firing") in firing[0][1]
    versions = annotations["Spec version changes"]
    assert {metric for metric, _ in promql.analyse(versions["target"]["expr"]).selectors} == {series.INFO}
    assert "{{spec_hash}}" in versions["titleFormat"]
    if not name.endswith("overview.json"):
        team = Path(name).stem
        assert promql.Matcher("team", "=", team) in firing[0][1]


MARKDOWN_LINK = re.compile(r"\[[^\]]+\]\((?P<url>[^)]+)\)")


@pytest.mark.parametrize(("key", "name"), CASES, ids=IDS)
def test_panel_descriptions_carry_the_spec_description_and_runbook_links(key: str, name: str) -> None:
    model = MODELS[key]
    specs = by_name(model)
    data = load(key, name)
    if name.endswith("overview.json"):
        pairs = [(p["title"], p) for p in data["panels"] if p["type"] != "row"]
    else:
        pairs = list(spec_panels(data))
    assert pairs
    for spec, panel in pairs:
        slo = specs[spec]
        allowed = {f"{model.project.runbook_base_url}/{slo.name}.md"} | {
            links.runbook_url(model, slo, alert) for alert in plan_spec(slo).alert_names
        }
        description = panel["description"]
        assert slo.description.strip() in description, panel["title"]
        urls = [m["url"] for m in MARKDOWN_LINK.finditer(description)]
        assert urls, f"{spec} {panel['title']!r}: no runbook link"
        assert set(urls) <= allowed, f"{spec} {panel['title']!r}: unknown links {set(urls) - allowed}"


@pytest.mark.parametrize("key", sorted(MODELS))
def test_team_dashboards_have_a_row_per_spec_with_its_panels(key: str) -> None:
    model = MODELS[key]
    for team in {slo.owner.name for slo in model.slos}:
        data = load(key, f"grafana/dashboards/{team}.json")
        rows = [p["title"] for p in data["panels"] if p["type"] == "row"]
        assert rows == [slo.name for slo in model.slos if slo.owner.name == team]
        grouped: dict[str, list[Json]] = {}
        for spec, panel in spec_panels(data):
            grouped.setdefault(spec, []).append(panel)
        for spec, found in grouped.items():
            slo = by_name(model)[spec]
            titles = [p["title"] for p in found]
            assert titles[-1] == "Alert state" and found[-1]["type"] == "state-timeline"
            assert "ALERTS" in found[-1]["targets"][0]["expr"]
            burns = [p for p in found if p["title"].startswith("Burn rate")]
            if slo.objective is None:
                assert burns == [] and not any("budget" in t for t in titles)
            else:
                assert len(burns) == len(slo.objective.burn_alerts)
                for panel, burn in zip(burns, slo.objective.burn_alerts, strict=True):
                    steps = [s["value"] for s in panel["fieldConfig"]["defaults"]["thresholds"]["steps"]]
                    assert steps[1] == pytest.approx(burn.factor)
                    exprs = [t["expr"] for t in panel["targets"]]
                    assert len(exprs) == 2
                sli = found[0]
                steps = sli["fieldConfig"]["defaults"]["thresholds"]["steps"]
                assert steps[1]["value"] == pytest.approx(slo.objective.target)
                budget = [p for p in found if p["title"].startswith("Error budget remaining")]
                assert {p["type"] for p in budget} == {"stat", "timeseries"}
                assert all(p["fieldConfig"]["defaults"]["unit"] == "percentunit" for p in budget)
                assert all(series.BUDGET_REMAINING in p["targets"][0]["expr"] for p in budget)
            values = [p for p in found if p["title"].startswith("Value vs")]
            if slo.normal_range is None and slo.critical_range is None:
                assert values == []
                continue
            (value,) = values
            assert value["fieldConfig"]["defaults"]["unit"] == grafana.UNITS[slo.unit]
            bounds = [
                b
                for band in (slo.normal_range, slo.critical_range)
                if band
                for b in (band.minimum, band.maximum)
                if b is not None
            ]
            steps = [s["value"] for s in value["fieldConfig"]["defaults"]["thresholds"]["steps"][1:]]
            assert steps == pytest.approx(sorted(set(bounds)))
            relative = [band.relative for band in (slo.normal_range, slo.critical_range) if band and band.relative]
            dashed = {o["matcher"]["options"] for o in value["fieldConfig"]["overrides"]}
            offsets = [t for t in value["targets"] if "slo:sli_baseline_" in t["expr"]]  # factor x held baseline
            assert {t["refId"] for t in offsets} == dashed
            expected = sum((r.max_factor is not None) + (r.min_factor is not None) for r in relative)
            assert len(offsets) == expected
            persistence = {
                promql.format_duration(band.for_ms) for band in (slo.normal_range, slo.critical_range) if band
            }
            assert all(f"outside for {p}" in value["description"] for p in persistence)


def test_library_team_dashboard_layout() -> None:
    data = load("library", "grafana/dashboards/platform-network.json")
    layout = [(p["type"], p["title"]) for p in data["panels"]]

    def row(spec: str, size: int) -> list[tuple[str, str]]:
        start = layout.index(("row", spec))
        return layout[start : start + size]

    assert row("cluster-dns-servfail", 11) == [
        ("row", "cluster-dns-servfail"),
        ("timeseries", "SLI (1h) vs 99.9% objective"),
        ("stat", "Error budget remaining (30d)"),
        ("timeseries", "Error budget remaining over time (30d)"),
        ("timeseries", "Burn rate 1h/5m (page, 30x)"),
        ("timeseries", "Burn rate 6h/30m (ticket, 10x)"),
        ("timeseries", "Burn rate 1d/2h (ticket, 3x)"),
        ("timeseries", "Burn rate 3d/6h (ticket, 1x)"),
        ("timeseries", "Value vs normal and critical ranges"),
        ("state-timeline", "Alert state"),
        ("row", "conntrack-exhaustion"),
    ]
    assert row("conntrack-exhaustion", 3) == [
        ("row", "conntrack-exhaustion"),
        ("timeseries", "Value vs normal and critical ranges"),
        ("state-timeline", "Alert state"),
    ]
    rows = [title for kind, title in layout if kind == "row"]
    assert rows == sorted(rows)
    # zone: the CoreDNS specs slice by server block (kube-proxy-rules-staleness is a fleet per cluster: no instance)
    assert [v["name"] for v in data["templating"]["list"]] == ["datasource", "cluster", "zone"]
    assert data["title"] == "SLOs: platform-network"


@pytest.mark.parametrize("key", sorted(MODELS))
def test_overview_has_a_row_per_family_and_a_stat_per_spec_linking_to_its_team(key: str) -> None:
    model = MODELS[key]
    data = load(key, "grafana/dashboards/overview.json")
    titles = {family.name: family.title for family in model.project.families}
    families = [family for family in titles if any(slo.family == family for slo in model.slos)]
    rows = [p["title"] for p in data["panels"] if p["type"] == "row"]
    assert rows == [titles[family] for family in families]
    current = None
    seen = []
    for panel in data["panels"]:
        if panel["type"] == "row":
            current = next(f for f in families if titles[f] == panel["title"])
            continue
        slo = by_name(model)[panel["title"]]
        seen.append(slo.name)
        assert panel["type"] == "stat"
        assert slo.family == current
        urls = {link["url"].split("?")[0] for link in panel["links"]}
        assert links.dashboard_url(model, links.team_dashboard_uid(slo.owner)) in urls
        unit = panel["fieldConfig"]["defaults"]["unit"]
        exprs = " ".join(t["expr"] for t in panel["targets"])
        if slo.objective is not None:
            assert series.BUDGET_REMAINING in exprs and unit == "percentunit"
        else:
            assert series.BUDGET_REMAINING not in exprs and unit == grafana.UNITS[slo.unit]
    assert sorted(seen) == [slo.name for slo in model.slos]


def test_units_cover_every_spec_unit() -> None:
    assert set(grafana.UNITS) == set(typing.get_args(Unit))
    assert grafana.UNITS == {
        "ratio": "percentunit",
        "seconds": "s",
        "bytes": "bytes",
        "bytes_per_second": "Bps",
        "per_second": "ops",
        "count": "none",
    }


# -- per-unit slices (issue 28 items 3 and 4) -------------------------------------------------

WORST_WRAPPED = re.compile(r"^(topk|bottomk)\(10, .*\)$", re.DOTALL)


@pytest.mark.parametrize("key", sorted(MODELS))
def test_panels_of_a_per_unit_spec_plot_only_its_ten_worst_slices(key: str) -> None:
    """A spec sliced by node, instance, pod or device draws at most ten series per query, not one per unit."""
    model, specs = MODELS[key], by_name(MODELS[key])
    wrapped = 0
    for team in model.teams:
        name = grafana.team_dashboard_path(team)
        if name not in RENDERED[key]:
            continue
        for spec, panel in spec_panels(load(key, name)):
            per_unit = bool(plan_watch.per_unit_labels(specs[spec]))
            for target in panel.get("targets", []):
                if panel["type"] == "state-timeline":  # max by (alertname): one series per alert already
                    assert not WORST_WRAPPED.match(target["expr"])
                    continue
                assert bool(WORST_WRAPPED.match(target["expr"])) is per_unit, (spec, panel["title"], target["expr"])
                wrapped += per_unit
    assert wrapped > 0, f"no per-unit spec among the {key} specs"


def test_the_library_per_node_spec_shows_its_highest_values_and_says_so() -> None:
    data = load("library", "grafana/dashboards/platform-nodes.json")
    (panel,) = [p for spec, p in spec_panels(data) if spec == "node-readiness-flapping" and p["type"] == "timeseries"]
    (target,) = panel["targets"]
    assert target["expr"] == (
        'topk(10, slo:sli_value:gauge{slo="node-readiness-flapping",cluster=~"$cluster",node=~"$node"})'
    )
    assert (
        "Sliced per node: only the 10 highest at each step (`topk`); pick nodes in the node variable"
        in (panel["description"])
    )
    node = next(v for v in data["templating"]["list"] if v["name"] == "node")
    assert node["label"] == "node (All: the 10 worst)"
    cluster = next(v for v in data["templating"]["list"] if v["name"] == "cluster")
    assert cluster["label"] == "cluster"  # not a unit: every cluster is drawn


def test_budget_and_sli_panels_keep_the_lowest_and_burn_panels_the_highest() -> None:
    data = load("fixtures", "grafana/dashboards/team-a.json")
    exprs = {
        panel["title"]: [target["expr"] for target in panel["targets"]]
        for spec, panel in spec_panels(data)
        if spec == "fixture-ratio-good"
    }
    assert exprs["SLI (1h) vs 99.9% objective"][0].startswith("bottomk(10, 1 - (slo:sli_bad:rate1h{")
    assert exprs["Error budget remaining (28d)"][0].startswith("bottomk(10, slo:error_budget_remaining:ratio{")
    burns = [expr for title, found in exprs.items() if title.startswith("Burn rate") for expr in found]
    assert burns and all(expr.startswith("topk(10, (") for expr in burns)


def test_relative_bounds_of_a_per_unit_spec_follow_the_slices_the_value_shows() -> None:
    """A per-unit spec with relative bounds: each bound series is kept only for the slices drawn."""
    relative = next(
        slo
        for slo in MODELS["library"].slos
        if any(band and band.relative for band in (slo.normal_range, slo.critical_range))
        and not plan_watch.per_unit_labels(slo)
    )
    slo = dataclasses.replace(relative, slice=dataclasses.replace(relative.slice, by=(*relative.slice.by, "pod")))
    built = grafana._range_panel(MODELS["library"], slo, (), grafana._Ids(), 16).build()
    panel = json.loads(json.dumps(built, default=JSONEncoder().default))
    value, *bounds = [target["expr"] for target in panel["targets"]]
    assert WORST_WRAPPED.match(value) and bounds
    on = ", ".join(slo.slice.by)
    for expr in bounds:
        assert expr.endswith(f") and on ({on}) {value}"), expr
        promql.parse_expr(substitute(expr))
