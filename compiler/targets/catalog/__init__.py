"""The catalog: a static site of every SLO, who it pages and how fast, under ``catalog/``.

An on-call engineer, a reviewer or a manager wants to look, not read YAML: which signals
the platform watches, who owns each, what pages and what only opens a ticket, how fast
each alert detects a burn, and where the runbook is. The pages are plain HTML and one
stylesheet, with no external asset, so they open from disk or from any static host; the
charts are SVG drawn here. The index carries its own search and sort: a small inline script
over an index embedded as JSON in the page (no file is fetched, so it works from
``file://``); without the script the page is the whole table. Every text from a spec goes
through Jinja2's autoescaping, the embedded index through ``jsonout.for_script``, and the
output is byte-identical across runs.
"""

from __future__ import annotations

import functools
from collections import defaultdict
from typing import Any

import jinja2
from markupsafe import Markup

from compiler.model import ASSUMPTION_MEMORY_MS, SLO, Channel, Condition, Model, Range, links
from compiler.model.queries import source_selectors
from compiler.plan import AlertSpec, Plan, SpecPlan
from compiler.plan.quality import Quality, figure_text, quality
from compiler.targets.catalog.chart import burn_chart
from compiler.text import human
from compiler.text.jsonout import for_script
from compiler.text.templates import PrecompiledLoader

ROOT = "catalog"
STYLE = "style.css"


@functools.cache
def _env() -> jinja2.Environment:
    """One environment per process: jinja2 keeps its compiled templates, which cost more than a render."""
    env = jinja2.Environment(
        loader=PrecompiledLoader(),
        auto_reload=False,  # the package's templates do not change under a process: no stat per render
        undefined=jinja2.StrictUndefined,
        autoescape=True,
        keep_trailing_newline=True,
        trim_blocks=True,
        lstrip_blocks=True,
    )
    return env


_ms = figure_text


def describe_range(band: Range | None, unit: str = "") -> str:
    """A range in words, each bound in the spec's unit: ``at least 14d``, ``at most 20,000,000``."""
    if band is None:
        return "—"
    parts = []
    if band.minimum is not None:
        parts.append(f"at least {human.value(unit, band.minimum)}")
    if band.maximum is not None:
        parts.append(f"at most {human.value(unit, band.maximum)}")
    if band.relative is not None:
        rel = band.relative
        if rel.max_factor is not None:
            parts.append(f"under {human.factor(rel.max_factor)} its value {human.duration(rel.offset_ms)} ago")
        if rel.min_factor is not None:
            parts.append(f"over {human.factor(rel.min_factor)} its value {human.duration(rel.offset_ms)} ago")
    return ", ".join(parts) or "—"


def _objective(slo: SLO) -> str:
    if slo.objective is None:
        return "—"
    return f"{human.percent(slo.objective.target)} over {human.duration(slo.objective.period_ms)}"


def _threshold(slo: SLO, alert: AlertSpec) -> str:
    if alert.burn is not None and slo.objective is not None:
        ratio = human.share(alert.burn.factor * slo.objective.budget)
        return f"error ratio over {ratio} ({human.factor(alert.burn.factor)} burn)"
    if alert.band is not None:
        side = "above" if alert.side == "Above" else "below"
        return f"{side} the {(alert.level or '').lower()} range ({describe_range(alert.band, slo.unit)})"
    if alert.condition is not None:
        return f"assumption {alert.condition.name} not held in the last {human.duration(ASSUMPTION_MEMORY_MS)}"
    return "no recorded series"


def _percent(share: float | None) -> str:
    return "—" if share is None else human.share(share)


def _alert_view(model: Model, slo: SLO, alert: AlertSpec, index: int) -> dict[str, Any]:
    figures: Quality | None = quality(slo, alert)
    windows = f"{human.duration(alert.burn.long_ms)} / {human.duration(alert.burn.short_ms)}" if alert.burn else "—"
    return {
        "name": alert.name,
        "anchor": f"alert-{index}",
        "severity": alert.severity_text,
        "channel": alert.severity,
        "windows": windows,
        "threshold": _threshold(slo, alert),
        "for": _ms(alert.for_ms),
        "keep_firing_for": _ms(alert.keep_firing_for_ms),
        "full_outage": _ms(figures.full_outage_ms) if figures else "—",
        "twice": _ms(figures.twice_threshold_ms) if figures else "—",
        "budget_spent": _percent(figures.budget_spent_full) if figures else "—",
        "resolve": _ms(figures.resolve_ms) if figures else "—",
        "chart": burn_chart(figures.burn_rates, f"{alert.name} {windows}: minutes to fire by burn rate")
        if figures and figures.burn_rates
        else "",
        "runbook": links.runbook_url(model, slo, alert.name),
    }


def _receivers(slo: SLO) -> list[dict[str, str]]:
    channels: tuple[Channel, ...] = ("shadow",) if slo.mode == "shadow" else ("page", "ticket", "info")
    found = []
    for channel in channels:
        integrations = ", ".join(
            f"{r.kind} {r.get('channel') or r.get('to') or ''}".strip() for r in slo.owner.receivers_for(channel)
        )
        found.append(
            {"channel": channel, "receiver": links.team_receiver(slo.owner, channel), "via": integrations or "—"}
        )
    if slo.mitigation.automation and slo.mode != "shadow":
        found.append(
            {
                "channel": "automation",
                "receiver": links.automation_receiver(slo.mitigation.automation),
                "via": "webhook",
            }
        )
    return found


def _condition_view(condition: Condition) -> dict[str, str]:
    return {"name": condition.name, "expr": condition.expr, "why": condition.why, "otherwise": condition.otherwise}


def _spec_view(model: Model, spec: SpecPlan) -> dict[str, Any]:
    slo = spec.slo
    explained_by = sorted({other.name for other in model.slos for e in other.explains if e.slo == slo.name})
    return {
        "name": slo.name,
        "page": f"specs/{slo.name}.html",
        "family": slo.family,
        "team": slo.owner.name,
        "contact": slo.owner.contact,
        "state": slo.mode,
        "description": slo.description,
        "objective": _objective(slo),
        "objective_sort": "" if slo.objective is None else f"{slo.objective.target:.9f}",
        "normal": describe_range(slo.normal_range, slo.unit),
        "critical": describe_range(slo.critical_range, slo.unit),
        "metrics": list(dict.fromkeys(s.metric for s in source_selectors(slo) if s.metric)),
        "slice": ", ".join(slo.slice.by),
        "alerts": [_alert_view(model, slo, alert, i) for i, alert in enumerate(spec.alerts, start=1)],
        "receivers": _receivers(slo),
        "inhibits": sorted({e.slo for e in slo.explains}),
        "inhibited_by": explained_by,
        "assumes": [_condition_view(condition) for condition in slo.assumes],
        "confirmed_by": [_condition_view(condition) for condition in slo.confirmed_by],
        "mitigation": slo.mitigation.summary,
        "escalation": slo.mitigation.escalation,
        "runbook_local": f"../../runbooks/{slo.name}.md",
        "runbook_url": f"{model.project.runbook_base_url}/{slo.name}.md",
        "dashboard_url": links.dashboard_url(model, links.team_dashboard_uid(slo.owner)),
        "source": slo.source,
    }


def _grouped(views: list[dict[str, Any]], key: str) -> list[tuple[str, list[dict[str, Any]]]]:
    groups: dict[str, list[dict[str, Any]]] = defaultdict(list)
    for view in views:
        groups[view[key]].append(view)
    return sorted(groups.items())


def _search_index(views: list[dict[str, Any]]) -> Markup:
    """What the index page's search reads per spec, as JSON safe inside its ``<script>`` element."""
    index = [
        {
            "name": view["name"],
            "owner": view["team"],
            "family": view["family"],
            "description": view["description"],
            "alerts": list(dict.fromkeys(alert["name"] for alert in view["alerts"])),
            "metrics": view["metrics"],
        }
        for view in views
    ]
    return Markup(for_script(index))  # escaped for a script element by for_script, not for HTML text


def _finish(text: str) -> bytes:
    return text.rstrip("\n").encode("utf-8") + b"\n"


def render(alert_plan: Plan) -> dict[str, bytes]:
    """``catalog/index.html``, one page per spec under ``catalog/specs/`` and the stylesheet."""
    env = _env()
    views = [_spec_view(alert_plan.model, spec) for spec in alert_plan]
    counts = {
        "specs": len(views),
        "live": sum(1 for v in views if v["state"] == "live"),
        "pages": sum(1 for v in views for a in v["alerts"] if a["channel"] == "page"),
        "tickets": sum(1 for v in views for a in v["alerts"] if a["channel"] == "ticket"),
    }
    left_out = [
        {"name": item.slo.name, "team": item.slo.owner.name, "reason": item.reason} for item in alert_plan.left_out
    ]
    index = env.get_template("catalog_index.html.j2").render(
        specs=views,
        families=_grouped(views, "family"),
        teams=_grouped(views, "team"),
        counts=counts,
        style=STYLE,
        left_out=left_out,
        search_index=_search_index(views),
    )
    files = {f"{ROOT}/index.html": _finish(index), f"{ROOT}/{STYLE}": _finish(env.get_template("catalog.css").render())}
    page = env.get_template("catalog_spec.html.j2")
    for view in views:
        files[f"{ROOT}/{view['page']}"] = _finish(page.render(spec=view, style=f"../{STYLE}"))
    return files
