"""A team's conventions: the emitted severity values, extra labels and annotations, full alert
names and the families specs may name.

Read from ``project.yaml`` (``alerts``, ``families``) and from each spec (``labels``,
``annotations``, ``alert_names``). The plan applies them once, so every target follows; this
module only refuses what would make the output wrong: a label or annotation the compiler
itself writes (routes, templates and runbook links read those), a label value Prometheus would
execute as a template, an extra label that is also a slice label (every slice would get the same
value and collapse into duplicate series), two severities with one value (routes could not tell
a page from a ticket), and two alerts with one name (grouped together, silenced together).
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from dataclasses import dataclass
from typing import Any

from compiler import promql
from compiler.diagnostics import Diagnostics
from compiler.model import (
    ALERT_KEYS,
    DEFAULT_FAMILIES,
    SEVERITIES,
    SLO,
    AlertKey,
    Family,
    Labels,
    NoData,
    Objective,
    Project,
    Range,
    Severity,
)
from compiler.model import labels as lbl
from compiler.model.naming import alert_keys_for, alert_name_table, spec_alert_names
from compiler.source.load import Document, PathKey
from compiler.source.reader import SpecReader
from compiler.source.schema import suggest

TEMPLATE_DELIMITERS = ("{{", "}}")
Report = Callable[[PathKey, str, bool], None]  # key, message, at the key (not its value)


@dataclass(frozen=True)
class ProjectConventions:
    """The project's conventions, as the ``Project`` fields they fill."""

    severity_labels: tuple[tuple[Severity, str], ...]
    alert_labels: Labels
    alert_annotations: Labels
    families: tuple[Family, ...]


# -- labels and annotations, project-wide or per spec ------------------------------------------


def _mapping(value: Any) -> dict[str, Any]:
    return value if isinstance(value, dict) else {}


def read_labels(base: PathKey, raw: Any, report: Report) -> Labels:
    """Extra alert labels: any name but the compiler's own, any value Prometheus keeps as text."""
    found = []
    for name, value in _mapping(raw).items():
        if not (isinstance(name, str) and promql.is_valid_label_name(name) and isinstance(value, str) and value):
            continue  # the schema reports it
        why = lbl.reserved_because(name)
        if why is not None:
            hint = "; set the emitted values with alerts.severity in project.yaml" if name == lbl.SEVERITY else ""
            report(
                (*base, name),
                f"cannot override the compiler's label '{name}' ({why}): routes, inhibitions and the generated "
                f"tests depend on its value; choose another label name{hint}",
                True,
            )
            continue
        if any(delimiter in value for delimiter in TEMPLATE_DELIMITERS):
            report(
                (*base, name),
                f"label {name} {value!r} contains a Go template delimiter ('{{{{' or '}}}}'): Prometheus expands "
                "alert label values as templates, so the alert would carry whatever the template prints; "
                "remove the braces",
                False,
            )
            continue
        found.append((name, value))
    return tuple(found)


def read_annotations(base: PathKey, raw: Any, report: Report) -> Labels:
    """Extra annotations: literal text under any name but the ones the compiler writes."""
    found = []
    for name, value in _mapping(raw).items():
        if not (isinstance(name, str) and promql.is_valid_label_name(name) and isinstance(value, str) and value):
            continue  # the schema reports it
        if name in lbl.COMPILER_ANNOTATIONS:
            report(
                (*base, name),
                f"cannot override the compiler's annotation '{name}': the notification templates, runbook links "
                "and automation webhooks read it; choose another annotation name",
                True,
            )
            continue
        found.append((name, value))
    return tuple(found)


# -- project.yaml --------------------------------------------------------------------------------


def read_project_conventions(document: Document, diagnostics: Diagnostics) -> ProjectConventions:
    """``alerts`` and ``families`` of a Project document (read even when it fails its schema)."""

    def report(key: PathKey, message: str, at_key: bool) -> None:
        diagnostics.error(document.key_position(key) if at_key else document.position(key), message)

    alerts = _mapping(document.data.get("alerts"))
    return ProjectConventions(
        severity_labels=_severity_labels(_mapping(alerts.get("severity")), report),
        alert_labels=read_labels(("alerts", "labels"), alerts.get("labels"), report),
        alert_annotations=read_annotations(("alerts", "annotations"), alerts.get("annotations"), report),
        families=_families(document.data.get("families"), report),
    )


def _severity_labels(raw: dict[str, Any], report: Report) -> tuple[tuple[Severity, str], ...]:
    """Each severity's emitted value (default the severity's own name), all distinct."""
    values: list[tuple[Severity, str]] = []
    owner: dict[str, Severity] = {}
    for severity in SEVERITIES:
        given = raw.get(severity)
        value = given if isinstance(given, str) and given else severity
        if value in owner:
            report(
                ("alerts", "severity", severity) if severity in raw else ("alerts", "severity"),
                f"{severity} alerts would carry severity={value!r} like {owner[value]} alerts: routes and inhibit "
                f"rules could not tell them apart; give {severity} its own value",
                False,
            )
        owner.setdefault(value, severity)
        values.append((severity, value))
    return tuple(values)


def _families(raw: Any, report: Report) -> tuple[Family, ...]:
    if not isinstance(raw, list):
        return DEFAULT_FAMILIES
    found: list[Family] = []
    for index, item in enumerate(raw):
        name, title = (item.get(key) if isinstance(item, dict) else None for key in ("name", "title"))
        if not isinstance(name, str) or not isinstance(title, str):
            continue  # the schema reports it
        if any(family.name == name for family in found):
            report(("families", index, "name"), f"duplicate family '{name}'", False)
            continue
        found.append(Family(name, title))
    return tuple(found) or DEFAULT_FAMILIES


# -- one spec ------------------------------------------------------------------------------------


def spec_report(r: SpecReader) -> Report:
    def report(key: PathKey, message: str, at_key: bool) -> None:
        r.error(key, message, at_key=at_key)

    return report


def read_spec_labels(r: SpecReader, slice_by: tuple[str, ...]) -> Labels:
    """The spec's extra labels; a slice label cannot be one (every slice would get the same value)."""
    found = read_labels(("labels",), r.data.get("labels"), spec_report(r))
    for name, value in found:
        if name in slice_by:
            r.error(
                ("labels", name),
                f"'{name}' is a slice label of this spec: labels.{name}: {value!r} would give every slice the same "
                f"{name}, collapsing them into duplicate series; drop it or slice by another label",
                at_key=True,
            )
    return tuple((name, value) for name, value in found if name not in slice_by)


def read_spec_annotations(r: SpecReader) -> Labels:
    return read_annotations(("annotations",), r.data.get("annotations"), spec_report(r))


def read_alert_names(
    r: SpecReader,
    prefix: str,
    objective: Objective | None,
    normal: Range | None,
    critical: Range | None,
    no_data: NoData,
) -> tuple[tuple[AlertKey, str], ...]:
    """Full alert names per kind: each for an alert the spec has, and no two alerts with one name.

    Two kinds with one name would share a runbook heading and a generated test's alert name,
    and Alertmanager would group and silence them together.
    """
    raw: dict[str, Any] = dict(r.data.get("alert_names", {}))
    given: dict[AlertKey, str] = {key: str(raw[key]) for key in ALERT_KEYS if key in raw}  # the schema's keys
    parsed = {"objective": objective, "normal_range": normal, "critical_range": critical}
    if any(r.data.get(section) is not None and band is None for section, band in parsed.items()):
        return tuple(given.items())  # a section failed to read: which alerts it has is unknown
    vanished = no_data.vanished is not None
    kinds = alert_keys_for(objective is not None, normal, critical, no_data.enabled, vanished=vanished)
    for key in given:
        if key not in kinds:
            r.error(
                ("alert_names", key),
                f"alert_names.{key}: this spec has no {key} alert ({_missing_reason(key, normal, critical)}); "
                f"its alerts are {', '.join(kinds) or 'none'}",
                at_key=True,
            )
    table = alert_name_table(prefix, objective is not None, normal, critical, no_data.enabled, given, vanished=vanished)
    seen: dict[str, AlertKey] = {}
    for key, name in table.items():
        if name in seen:
            where = key if key in given else seen[name]
            r.error(
                ("alert_names", where),
                f"alert name '{name}' is already the name of this spec's {seen[name] if where == key else key} alert; "
                "two kinds of alert with one name would be grouped and silenced together; give each its own",
            )
        seen.setdefault(name, key)
    return tuple((key, name) for key, name in given.items() if key in kinds)


def _missing_reason(key: AlertKey, normal: Range | None, critical: Range | None) -> str:
    if key == "burn":
        return "it has no objective"
    if key == "no_data":
        return "no_data is disabled"
    if key == "vanished":
        return "no_data.vanished is not enabled"
    side, level = key.split("_")
    if (normal if level == "normal" else critical) is None:
        return f"it has no {level}_range"
    return f"its {level}_range has no {'max or max_factor' if side == 'above' else 'min or min_factor'}"


# -- across specs --------------------------------------------------------------------------------


def check_families(documents: list[Document], project: Project, diagnostics: Diagnostics) -> None:
    """A spec's family must be one the project declares (dashboards and runbooks group by them)."""
    known = [family.name for family in project.families]
    for document in documents:
        family = document.data.get("family")
        if family in known:
            continue
        diagnostics.error(
            document.position(("family",)),
            f"unknown family '{family}' (families: {', '.join(known)}){suggest(str(family), known)}; "
            "declare it under families in project.yaml",
        )


def check_project_labels(
    documents: list[Document], slos: Mapping[str, SLO], project: Project, diagnostics: Diagnostics
) -> None:
    """A project-wide extra label cannot be a spec's slice label: every slice would get one value."""
    extra = dict(project.alert_labels)
    for document in documents:
        slo = slos.get(document.data.get("name", ""))
        if slo is None:
            continue
        for index, label in enumerate(slo.slice.by):
            if label in extra:
                diagnostics.error(
                    document.position(("slice", "by", index)),
                    f"slice label '{label}' is also a label project.yaml puts on every alert (alerts.labels.{label}: "
                    f"{extra[label]!r}): every slice would get that value, collapsing them into duplicate series; "
                    "rename one of them",
                )


def check_alert_name_collisions(documents: list[Document], slos: Mapping[str, SLO], diagnostics: Diagnostics) -> None:
    """Two specs may not emit one alert name: Alertmanager would group them and a silence would hit both.

    Default names collide only when prefixes do, which the prefix check reports; here at least
    one side is a full name from ``alert_names``, and the error is at that entry.
    """
    owners: dict[str, tuple[SLO, AlertKey, Document]] = {}
    for document in documents:
        slo = slos.get(document.data.get("name", ""))
        if slo is None:
            continue
        overrides = dict(slo.alert_names)
        for key, name in spec_alert_names(slo).items():
            first = owners.get(name)
            if first is None:
                owners[name] = (slo, key, document)
                continue
            other, other_key, other_document = first
            if other.alert_name == slo.alert_name or not (key in overrides or other_key in dict(other.alert_names)):
                continue
            at, against = (document, other) if key in overrides else (other_document, slo)
            at_key = key if key in overrides else other_key
            diagnostics.error(
                at.position(("alert_names", at_key)),
                f"alert name '{name}' is also an alert of spec '{against.name}': Alertmanager would group both "
                "specs' alerts together and one silence would hit both; give this alert another name",
            )
