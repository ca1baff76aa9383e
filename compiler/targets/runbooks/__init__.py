"""Runbooks: one Markdown page per spec, for the person an alert just reached, and an index.

A pure function of the plan, rendered from the Jinja2 templates in ``compiler/templates``;
every alert's ``runbook_url`` points at ``runbooks/<spec>.md#<alert name in lower case>``
(``compiler.model.links``), so each page has one heading per alert name, spelled exactly as the
alert. Pairs of burn windows that share an alert name share that heading.

Spec text reaches the page only through the Markdown filters of ``compiler.text.markdown``,
which keep it on its line, in its list item or table cell, and out of HTML.
"""

from __future__ import annotations

import functools
import posixpath
import re
from collections.abc import Sequence

import jinja2

from compiler.model import ASSUMPTION_MEMORY_MS, SLO, Automation, Model, Team, links, series, windows
from compiler.model import heartbeat as hb
from compiler.model.naming import band_sides, spec_alert_names
from compiler.model.queries import no_data_steps
from compiler.plan import Plan, SpecPlan
from compiler.plan.coverage import edge_fallbacks, fallback_text
from compiler.promql import render_selector
from compiler.targets.runbooks.alerts import alert_views, dash_duration, threshold_rows
from compiler.targets.runbooks.detection import detection_rows
from compiler.targets.runbooks.heartbeat import runbook as heartbeat_runbook
from compiler.targets.runbooks.queries import bounds, format_value, investigation, paste_queries
from compiler.text import human
from compiler.text.markdown import cell, code, fence, inline, md, url
from compiler.text.numbers import clean_number
from compiler.text.templates import PrecompiledLoader

INDEX_PATH = f"{links.RUNBOOKS_DIR}/README.md"


# -- rendering --------------------------------------------------------------------------


@functools.cache
def environment() -> jinja2.Environment:
    env = jinja2.Environment(
        loader=PrecompiledLoader(),  # package data, compiled ahead of time: works from an installed wheel
        auto_reload=False,  # the package's templates do not change under a process: no stat per render
        undefined=jinja2.StrictUndefined,
        keep_trailing_newline=True,
        autoescape=False,
        trim_blocks=True,
        lstrip_blocks=True,
    )
    env.filters.update(md=md, cell=cell, inline=inline, code=code, fence=fence, url=url)
    env.filters.update(duration=dash_duration, factor=human.factor)
    return env


def _automation(model: Model, slo: SLO) -> Automation | None:
    name = slo.mitigation.automation
    return next((found for found in model.project.automations if found.name == name), None)


def dashboard(model: Model, team: Team) -> str:
    return links.dashboard_url(model, links.team_dashboard_uid(team))


def dashboard_hint(model: Model, slo: SLO) -> str:
    """The team dashboard narrowed to one slice; the reader fills in the alert's label values."""
    base = dashboard(model, slo.owner)
    if not slo.slice.by:
        return base
    return base + "?" + "&".join(f"var-{links.dashboard_variable(label)}=<{label}>" for label in slo.slice.by)


def _relative(path: str) -> str:
    return posixpath.relpath(path, links.RUNBOOKS_DIR)


def runbook(model: Model, spec: SpecPlan) -> str:
    slo = spec.slo
    views = alert_views(spec)
    context = {
        "model": model,
        "slo": slo,
        "family_title": model.project.family_title(slo.family),
        "views": views,
        "rows": threshold_rows(slo, views),
        "edge_notes": [fallback_text(fallback, threshold) for fallback, threshold in edge_fallbacks(slo)],
        "detection": detection_rows(spec),
        "queries": paste_queries(slo),
        "investigation": investigation(slo),
        "automation": _automation(model, slo),
        "dashboard": dashboard(model, slo.owner),
        "dashboard_hint": dashboard_hint(model, slo),
        "budget_percent": human.percent(slo.objective.budget) if slo.objective else "",
        "budget_time": (
            human.duration(windows.budget_duration_ms(clean_number(slo.objective.budget), slo.objective.period_ms))
            if slo.objective
            else ""
        ),
        "target_percent": human.percent(slo.objective.target) if slo.objective else "",
        "bands": [
            (label, band) for label, band in (("Normal", slo.normal_range), ("Critical", slo.critical_range)) if band
        ],
        "band_bounds": lambda band: [b for d in band_sides(band) for b in bounds(slo, band, d)],
        "format_value": lambda number: format_value(slo, number),
        "selector": render_selector(None, slo.slice.matchers) if slo.slice.matchers else "",
        "join_info": [render_selector(join.info.metric, join.info.matchers) for join in slo.slice.joins],
        "presence_series": series.recorded(series.presence_series(slo), slo),
        "see_also": [(item, _see_also_target(model, item)) for item in slo.see_also],
        "assumption_memory": human.duration(ASSUMPTION_MEMORY_MS),
        "assumption_alert": spec_alert_names(slo).get("assumption", ""),
        "anchor": links.runbook_anchor,
        "no_data": no_data_steps(slo, query=code, text=inline),
    }
    return environment().get_template("runbook.md.j2").render(context)


def _see_also_target(model: Model, item: str) -> str | None:
    """A spec name links to its runbook; a URL links to itself; anything else is plain text."""
    for other in model.slos:
        if other.name == item:
            return _relative(links.runbook_path(other))
    if re.fullmatch(r"https?://[^\s<>]+", item):
        return item
    return None


def index(alert_plan: Plan) -> str:
    model = alert_plan.model
    families: dict[str, list[SLO]] = {family.name: [] for family in model.project.families}
    for slo in model.slos:
        families.setdefault(slo.family, []).append(slo)
    teams: list[tuple[Team, list[SLO]]] = []
    for team in model.teams:
        owned = [slo for slo in model.slos if slo.owner.name == team.name]
        if owned:
            teams.append((team, owned))
    context = {
        "families": [(model.project.family_title(name), name, slos) for name, slos in families.items() if slos],
        "teams": teams,
        "link": lambda slo: _relative(links.runbook_path(slo)),
        "alerts": lambda slo: list(alert_plan.of(slo).alert_names),
        "dashboard": lambda team: dashboard(model, team),
        "left_out": alert_plan.left_out,
        "heartbeat": _relative(hb.RUNBOOK_PATH) if model.project.heartbeat is not None else None,
    }
    return environment().get_template("index.md.j2").render(context)


def _finish(text: str) -> bytes:
    return (text.rstrip("\n") + "\n").encode("utf-8")


def render(alert_plan: Plan) -> dict[str, bytes]:
    return {**render_specs(alert_plan, alert_plan.specs), **render_shared(alert_plan)}


def render_specs(alert_plan: Plan, specs: Sequence[SpecPlan]) -> dict[str, bytes]:
    """The pages of ``specs`` (one each): a large plan's are rendered in blocks (``compiler.targets.fanout``)."""
    return {links.runbook_path(spec.slo): _finish(runbook(alert_plan.model, spec)) for spec in specs}


def render_shared(alert_plan: Plan) -> dict[str, bytes]:
    """The pages about the whole plan: the index, and the heartbeat's runbook when there is one."""
    files = {INDEX_PATH: _finish(index(alert_plan))}
    if alert_plan.model.project.heartbeat is not None:
        files[hb.RUNBOOK_PATH] = _finish(heartbeat_runbook(alert_plan.model, environment()))
    return files
