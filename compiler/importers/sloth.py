"""Sloth's ``prometheus/v1`` specs and ``sloth.slok.dev/v1`` ``PrometheusServiceLevel`` objects, per SLO."""

from __future__ import annotations

from typing import Any

from compiler.diagnostics import Diagnostics
from compiler.importers import shapes
from compiler.importers.draft import (
    ALERT_NAME_OK,
    Draft,
    Refusal,
    add_annotations,
    add_labels,
    escaped,
    mapping,
    sequence,
    spec_name,
    unsafe,
)
from compiler.source.load import Document, PathKey

SLOTH_PERIOD_NOTE = (
    "Sloth's default period (sloth generate --default-slo-period, 30d unless set); change it if yours differs"
)
NAME_UNSAFE = "the name '{}' holds a line break or control character, which a spec cannot carry: rename it"
# The CRD writes the same fields in camelCase.
_CAMEL = {
    "error_query": "errorQuery",
    "total_query": "totalQuery",
    "error_ratio_query": "errorRatioQuery",
    "page_alert": "pageAlert",
    "ticket_alert": "ticketAlert",
}


def read(document: Document, diagnostics: Diagnostics) -> list[Draft | Refusal]:
    """Every SLO of one Sloth document (``prometheus/v1`` or the CRD)."""
    data = document.data
    crd = data.get("apiVersion") == "sloth.slok.dev/v1"
    base: PathKey = ("spec",) if crd else ()
    spec = data.get("spec") if crd else data
    if not isinstance(spec, dict) or not isinstance(spec.get("slos"), list) or not spec["slos"]:
        diagnostics.error(document.position(base), "a Sloth spec needs 'slos:', a list of at least one SLO")
        return []
    results: list[Draft | Refusal] = []
    for index, slo in enumerate(spec["slos"]):
        key: PathKey = (*base, "slos", index)
        if not isinstance(slo, dict):
            diagnostics.error(
                document.position(key), "each entry of 'slos' must be a mapping with name, objective, sli"
            )
            continue
        results.append(_slo(document, spec, slo, key, crd))
    return results


def _get(mapping: Any, name: str, crd: bool) -> Any:
    if not isinstance(mapping, dict):
        return None
    return mapping.get(_CAMEL.get(name, name) if crd else name)


def _slo(document: Document, spec: dict[str, Any], slo: dict[str, Any], key: PathKey, crd: bool) -> Draft | Refusal:
    service, name = str(spec.get("service", "")), str(slo.get("name", ""))
    where = document.position((*key, "name"))
    for text, at in ((service, (*key[:-2], "service")), (name, (*key, "name"))):
        if unsafe(text):
            return Refusal(document.position(at), f"{service}-{name}", NAME_UNSAFE.format(escaped(text)))
    sli = mapping(slo.get("sli"))
    refused = _sli_refusal(sli, crd)
    if refused:
        return Refusal(document.position((*key, "sli")), f"{service}-{name}", refused)
    if "raw" in sli:
        query = _get(mapping(sli["raw"]), "error_ratio_query", crd)
        shape = (
            shapes.from_error_ratio(str(query)) if isinstance(query, str) else "the raw SLI has no error_ratio_query"
        )
        sli_key: PathKey = (*key, "sli", "raw")
    else:
        events = sli["events"]
        shape = shapes.from_events(str(_get(events, "error_query", crd)), str(_get(events, "total_query", crd)))
        sli_key = (*key, "sli", "events")
    if isinstance(shape, str):
        return Refusal(document.position(sli_key), f"{service}-{name}", shape)
    objective = slo.get("objective")
    if isinstance(objective, bool) or not isinstance(objective, int | float) or not 0 < objective < 100:
        return Refusal(document.position((*key, "objective")), f"{service}-{name}", "objective must be in (0, 100)")
    draft = Draft(
        name=spec_name(service, name),
        origin=f"Sloth {'sloth.slok.dev/v1 PrometheusServiceLevel' if crd else 'prometheus/v1'}, service {service}, "
        f"SLO {name}",
        where=where,
        description=str(slo["description"]) if slo.get("description") else None,
        by=shape.by or None,
        ratio_field=shape.ratio_field,
        ratio_selector=shape.ratio_selector,
        total_selector=shape.total_selector,
        target_percent=float(objective),
        period="30d",
        period_note=SLOTH_PERIOD_NOTE,
        notes=list(shape.notes),
        shape=shape,
    )
    add_labels(draft, spec.get("labels"), "service")
    add_labels(draft, slo.get("labels"), "SLO")
    _alerting(draft, slo.get("alerting"), crd)
    _plugins(draft, spec, slo, crd)
    return draft


def _sli_refusal(sli: dict[str, Any], crd: bool) -> str | None:
    """Why an SLI cannot be imported, or None for an events or raw SLI (their queries are read next)."""
    if "raw" in sli:
        return None if isinstance(sli["raw"], dict) else "the raw SLI must be a mapping with error_ratio_query"
    if "plugin" in sli:
        plugin = mapping(sli["plugin"])
        return (
            f"SLI plugin {plugin.get('id', '?')!s} is Go code that Sloth runs to build the query; its query is not "
            "in the file: write the SLI by hand from the plugin's output"
        )
    if not isinstance(sli.get("events"), dict):
        return "the SLI has none of events, raw or plugin"
    return None


def _alerting(draft: Draft, alerting: Any, crd: bool) -> None:
    """Alert name, labels, annotations and which of the page and ticket alerts Sloth has."""
    if not isinstance(alerting, dict):
        draft.severities = ()
        draft.notes.append("Sloth had no alerting section, so no alerts: this spec is imported in shadow mode")
        return
    name = alerting.get("name")
    if isinstance(name, str) and ALERT_NAME_OK.match(name):
        draft.alert_name = name
    elif name:
        draft.notes.append(f"alert name {name!r} is not CamelCase letters and digits; the default name is used")
    add_labels(draft, alerting.get("labels"), "alerting")
    add_annotations(draft, alerting.get("annotations"), "alerting")
    enabled = []
    for severity in ("page", "ticket"):
        one = _get(alerting, f"{severity}_alert", crd)
        one = mapping(one)
        if one.get("disable") is True:
            continue
        enabled.append(severity)
        _per_severity(draft, severity, one)
    draft.severities = tuple(enabled)
    if not enabled:
        draft.notes.append("Sloth had both alerts disabled: this spec is imported in shadow mode (it never pages)")


def _per_severity(draft: Draft, severity: str, alert: dict[str, Any]) -> None:
    """Labels and annotations of one of Sloth's two alerts: noted, since a spec's labels are for all its alerts."""
    labels = mapping(alert.get("labels"))
    for key, value in sorted(labels.items()):
        if key == "severity":
            draft.notes.append(
                f"{severity} alert severity={value}: set alerts.severity.{severity}: {value} in project.yaml to emit it"
            )
        else:
            draft.notes.append(
                f"{severity} alert label {key}={value} not imported: labels here apply to every alert of the spec; "
                "route on the team's receivers in owners.yaml instead"
            )
    annotations = mapping(alert.get("annotations"))
    for key, value in sorted(annotations.items()):
        draft.notes.append(
            f"{severity} alert annotation {key}: {value!r} not imported (annotations apply to every alert)"
        )


def _plugins(draft: Draft, spec: dict[str, Any], slo: dict[str, Any], crd: bool) -> None:
    """SLO plugins are Go code run by Sloth: their rules are not imported."""
    for where, holder in (("service", spec.get("sloPlugins" if crd else "slo_plugins")), ("SLO", slo.get("plugins"))):
        chain = holder.get("chain") if isinstance(holder, dict) else None
        for plugin in sequence(chain):
            plugin_id = plugin.get("id", "?") if isinstance(plugin, dict) else "?"
            draft.notes.append(
                f"{where} SLO plugin {plugin_id} not imported: it is Go code Sloth runs; check its rules"
            )
