"""One SLO document to one ``SLO``: the sections read in order, then assembled."""

from __future__ import annotations

from typing import Any

from compiler.model import (
    SLI,
    SLO,
    AlertKey,
    Explains,
    ExplainsComponent,
    Mitigation,
    NoData,
    Range,
    Scenario,
    Slice,
    Team,
)
from compiler.model.naming import camel
from compiler.source.conditions import read_conditions
from compiler.source.conventions import read_alert_names, read_spec_annotations, read_spec_labels
from compiler.source.disruptive import check_disruptive_steps
from compiler.source.fleet import read_fleet
from compiler.source.objective import (
    read_objective,
)
from compiler.source.ranges import (
    check_critical_wider,
    check_wait_limits,
    read_no_data,
    read_range,
)
from compiler.source.reader import SpecReader
from compiler.source.scenarios import read_scenarios
from compiler.source.schema import suggest
from compiler.source.sli import (
    check_sli_selects,
    read_sli,
    read_unit,
)
from compiler.source.slice import check_sli_leaves_component_labels, read_slice
from compiler.source.spec_types import SLOMitigation, SLOSpecExplainsComponent, SLOSpecExplainsItem
from compiler.source.staleness import check_staleness_bounds
from compiler.source.vanished import check_vanished_slice


def build_slo(r: SpecReader) -> SLO | None:
    """The spec's model, or None when any section had a problem (each one reported).

    A spec with problems whose slice, SLI, no-data and unit sections read is still assembled,
    with a placeholder owner and only its readable sections, into ``r.draft``: the project checks
    that need only those (series budgets) report on it in the same run.
    """
    data = r.data
    team = _owner(r) if r.readable("owner") else None
    alert_name = data.get("alert_name") or camel(data.get("name", ""))
    slice_ = read_slice(r) if r.readable("slice") else None
    sli = read_sli(r, slice_) if slice_ is not None and r.readable("sli") else None
    if slice_ is not None and sli is not None:
        check_sli_selects(r, sli, slice_)
        check_sli_leaves_component_labels(r)
    objective = read_objective(r, sli) if "objective" in data and r.readable("objective") else None
    normal, critical = _ranges(r, sli)
    fleet = read_fleet(r, sli, slice_, critical)
    no_data = read_no_data(r) if r.readable("no_data") else None
    _check_sections(r, slice_, sli, no_data)
    unit = read_unit(r, sli) if r.readable("unit") else None
    assumes, confirmed_by = read_conditions(r, slice_, sli) if slice_ is not None else ((), ())
    alert_names: tuple[tuple[AlertKey, str], ...] = ()
    if no_data is not None and r.readable("alert_names", *_ALERTS_READ):
        alert_names = read_alert_names(r, alert_name, objective, normal, critical, no_data)
    labels = read_spec_labels(r, slice_.by) if slice_ is not None and r.readable("labels") else ()
    annotations = read_spec_annotations(r) if r.readable("annotations") else ()
    scenarios: tuple[Scenario, ...] = ()
    if slice_ is not None and sli is not None and no_data is not None and r.readable(*_SCENARIOS_READ):
        scenarios = read_scenarios(r, sli, slice_, alert_name, normal, critical, objective, no_data, alert_names)
    if sli is None or slice_ is None or no_data is None or unit is None or not isinstance(data.get("name"), str):
        return None
    read = dict(alert_name=alert_name, unit=unit, slice=slice_, sli=sli, objective=objective, normal_range=normal)
    read.update(critical_range=critical, no_data=no_data, scenarios=scenarios, labels=labels, annotations=annotations)
    slo = _assemble(r, team, read, alert_names=alert_names, fleet=fleet, assumes=assumes, confirmed_by=confirmed_by)
    if r.failed or team is None:
        r.draft = slo if r.readable("series_budget") else None  # a broken budget is its own problem
        return None
    return slo


def _assemble(r: SpecReader, team: Team | None, read: dict[str, Any], **more: Any) -> SLO:
    """The SLO of the sections read; the rest from the data, only where its section is readable."""
    data = r.data
    return SLO(
        **read,
        **more,
        name=data["name"],
        family=str(data.get("family", "")),
        owner=team or _NO_OWNER,
        description=str(data.get("description", "")).strip(),
        k8s_versions=data.get("k8s_versions", ""),
        mitigation=_mitigation(data["mitigation"]) if r.readable("mitigation") else _NO_MITIGATION,
        see_also=tuple(data.get("see_also", [])) if r.readable("see_also") else (),
        mode=data.get("mode", "live"),
        series_budget=data.get("series_budget") if r.readable("series_budget") else None,
        explains=_explains(data.get("explains", [])) if r.readable("explains") else (),
        source=r.doc.source or r.doc.path,
        position=r.doc.key_position(("sli",)),
        spec_hash=r.doc.content_hash[:16],
        explains_component=_explains_component(data.get("explains_component"))
        if r.readable("explains_component")
        else None,
    )


# A draft's owner and mitigation when those sections have problems (a draft never compiles).
_NO_OWNER = Team(name="", contact="", escalation=())
_NO_MITIGATION = Mitigation(summary="", steps=(), stop_conditions=(), escalation="")


def _check_sections(r: SpecReader, slice_: Slice | None, sli: SLI | None, no_data: NoData | None) -> None:
    """The checks that add nothing to the model: staleness bounds, a vanished slice, waits, disruptive steps."""
    check_staleness_bounds(r, sli)
    check_vanished_slice(r, slice_, None if no_data is None else no_data.vanished)
    check_wait_limits(r)
    if r.readable("mitigation"):
        check_disruptive_steps(r)


def _explains(raw: list[SLOSpecExplainsItem]) -> tuple[Explains, ...]:
    return tuple(Explains(item["slo"], tuple(item["equal"]), item.get("severity", "page")) for item in raw)


def _explains_component(raw: SLOSpecExplainsComponent | None) -> ExplainsComponent | None:
    """An availability spec's link to every spec reading its component (checked across files)."""
    if raw is None:
        return None
    return ExplainsComponent(tuple(raw["equal"]), raw.get("severity", "page"))


# What the scenarios are checked against: the alerts the spec has and the names they take.
# The sections alert names follow from, and the ones scenarios are checked against.
_ALERTS_READ = ("name", "alert_name", "objective", "normal_range", "critical_range", "no_data")
_SCENARIOS_READ = ("scenarios", "alert_names", *_ALERTS_READ)


def _owner(r: SpecReader) -> Team | None:
    owner_name = r.data["owner"]
    team = r.teams.get(owner_name)
    if team is None and not r.teams:
        r.error(
            ("owner",),
            f"unknown owner '{owner_name}': no owners.yaml (no Owners document with teams) in the spec directory, "
            "so every owner is unknown; create owners.yaml with apiVersion: slo-compiler/v1, kind: Owners and "
            f"teams: [{{name: {owner_name}, contact: ..., receivers: {{page: [...], ticket: [...]}}}}] "
            '(docs/getting-started.md: "Quick start")',
        )
    elif team is None:
        hint = suggest(owner_name, sorted(r.teams))
        r.error(("owner",), f"unknown owner '{owner_name}' (teams: {', '.join(sorted(r.teams))}){hint}")
    return team


def _ranges(r: SpecReader, sli: SLI | None) -> tuple[Range | None, Range | None]:
    """The normal and critical bands; both default their ``for`` to the spec's persistence."""
    data = r.data
    persistence_for = r.duration(("persistence", "for")) if r.readable("persistence") else 0
    persistence_keep = r.duration(("persistence", "keep_firing_for")) if r.readable("persistence") else 0
    normal = read_range(r, "normal_range", sli, "ticket", persistence_for, persistence_keep)
    critical = read_range(r, "critical_range", sli, "page", persistence_for, persistence_keep)
    check_critical_wider(r, normal, critical)
    if not any(section in data for section in ("objective", "normal_range", "critical_range")):
        r.error((), "spec has nothing to alert on: give it an objective, a normal_range or both")
    if critical is not None and "normal_range" not in data:
        r.error(("critical_range",), "critical_range needs a normal_range (the narrower band) too")
    return normal, critical


def _mitigation(raw: SLOMitigation) -> Mitigation:
    return Mitigation(
        summary=raw["summary"].strip(),
        steps=tuple(step.strip() for step in raw["steps"]),
        stop_conditions=tuple(step.strip() for step in raw["stop_conditions"]),
        escalation=raw["escalation"].strip(),
        automation=raw.get("automation"),
    )
