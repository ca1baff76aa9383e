"""OpenSLO ``openslo/v1alpha`` and ``openslo/v1`` SLO documents, one spec per objective."""

from __future__ import annotations

from dataclasses import replace
from typing import Any

from compiler.diagnostics import Diagnostics
from compiler.importers import queries, shapes
from compiler.importers.draft import (
    Draft,
    Refusal,
    Shape,
    add_labels,
    escaped,
    mapping,
    sequence,
    spec_name,
    unsafe,
)
from compiler.promql import parse_duration
from compiler.source.load import Document, PathKey

VERSIONS = ("openslo/v1alpha", "openslo/v1")
NOT_SLO = "nothing to import: an OpenSLO {kind} holds no SLO"


def read(
    document: Document, data: dict[str, Any], base: PathKey, diagnostics: Diagnostics, by_sloth: bool = False
) -> list[Draft | Refusal]:
    """One OpenSLO object (``data`` at ``base`` in the document): a spec per objective of an SLO.

    ``by_sloth``: the file is imported as Sloth's (``import sloth``), whose rules ran it, so the spec
    keeps Sloth's burn policy; an OpenSLO import gets the default policy and OpenSLO's wording.
    """
    kind = data.get("kind")
    metadata = data.get("metadata")
    name = str(metadata.get("name", "")) if isinstance(metadata, dict) else ""
    if kind != "SLO":
        return [Refusal(document.position((*base, "kind")), name, NOT_SLO.format(kind=kind), skipped=True)]
    if not isinstance(metadata, dict) or not isinstance(metadata.get("name"), str) or not metadata["name"]:
        at = (*base, "metadata") if isinstance(metadata, dict) or "metadata" in data else base
        diagnostics.error(document.position(at), "an OpenSLO SLO needs 'metadata:', a mapping with a 'name'")
        return []
    spec_value = data.get("spec")
    if not isinstance(spec_value, dict):
        at = (*base, "spec") if "spec" in data else base
        diagnostics.error(document.position(at), "an OpenSLO SLO needs 'spec:', a mapping")
        return []
    service = str(spec_value.get("service", ""))
    for text, at in ((service, (*base, "spec", "service")), (name, (*base, "metadata", "name"))):
        if unsafe(text):
            reason = f"the name '{escaped(text)}' holds a line break or control character, which a spec cannot carry"
            return [Refusal(document.position(at), name, reason + ": rename it")]
    spec = mapping(data.get("spec"))
    window = _period(spec)
    method = spec.get("budgetingMethod", "Occurrences")
    objectives = sequence(spec.get("objectives"))
    where = document.position((*base, "metadata", "name"))
    refusal = window[1] or _method_refusal(method) or ("" if objectives else "the SLO has no objectives")
    if refusal:
        return [Refusal(where, name, refusal)]
    results: list[Draft | Refusal] = []
    for index, objective in enumerate(objectives):
        # v1 has one indicator for every objective; v1alpha a ratio metric per objective.
        v1 = data["apiVersion"] == "openslo/v1"
        shape, why = _ratio(spec, v1, objective)
        if shape is None:
            results.append(Refusal(where, name, why))
            continue
        draft = _draft(document, base, data, spec, shape, window[0], (index, len(objectives)), objective)
        if isinstance(draft, Draft):
            draft.tool = "Sloth" if by_sloth else "OpenSLO"
            if spec.get("alertPolicies"):
                policy = "burn_policy sloth" if by_sloth else "the default burn policy"
                draft.notes.append(f"alertPolicies not imported: {policy} sets the alerts")
        results.append(draft)
    return results


def _draft(
    document: Document,
    base: PathKey,
    data: dict[str, Any],
    spec: dict[str, Any],
    shape: Shape,
    period: str,
    position: tuple[int, int],
    objective: Any,
) -> Draft | Refusal:
    name = str(data["metadata"].get("name", ""))
    index, count = position
    key: PathKey = (*base, "spec", "objectives", index)
    target = objective.get("target") if isinstance(objective, dict) else None
    if isinstance(target, bool) or not isinstance(target, int | float) or not 0 < target < 1:
        return Refusal(document.position((*key, "target")), name, "the objective's target must be in (0, 1)")
    draft = Draft(
        name=spec_name(str(spec.get("service", "")), name, str(index) if count > 1 else ""),
        origin=f"OpenSLO {data['apiVersion']}, service {spec.get('service', '?')}, SLO {name}",
        where=document.position((*base, "metadata", "name")),
        description=str(spec["description"]) if spec.get("description") else None,
        by=shape.by or None,
        ratio_field=shape.ratio_field,
        ratio_selector=shape.ratio_selector,
        total_selector=shape.total_selector,
        target_percent=float(target) * 100,
        period=period,
        period_note="the SLO's rolling time window",
        notes=list(shape.notes),
        shape=shape,
    )
    labels = data["metadata"].get("labels")
    if isinstance(labels, dict):  # v1 label values are lists; a label here has one value
        add_labels(draft, {k: ",".join(map(str, v)) if isinstance(v, list) else v for k, v in labels.items()}, "SLO")
    return draft


def _ratio(spec: dict[str, Any], v1: bool, objective: Any) -> tuple[Shape | None, str]:
    """The SLI of a ratio metric (counters, or a histogram's bucket over its count), or the reason it has none."""
    if v1:
        indicator = mapping(spec.get("indicator"))
        if "indicatorRef" in spec:
            return None, "the SLI is a reference (indicatorRef); import the SLO with its SLI inline"
        metric = mapping(indicator.get("spec")).get("ratioMetric")
    else:
        metric = objective.get("ratioMetrics") if isinstance(objective, dict) else None
    if not isinstance(metric, dict):
        return None, "the SLI is not a ratio metric (a threshold metric judges a value, not events)"
    field = "good" if "good" in metric else "bad"
    good_text, total_text = _query(metric.get(field), v1), _query(metric.get("total"), v1)
    if good_text[1] or total_text[1]:
        return None, good_text[1] or total_text[1]
    fixed = sorted({window for window in map(queries.fixed_window, (good_text[0], total_text[0])) if window})
    latency = shapes.latency_of_good(good_text[0], total_text[0]) if field == "good" else None
    if latency is not None:
        return _windows_noted(latency, fixed), ""
    good, total = queries.counter(good_text[0]), queries.counter(total_text[0])
    if good is None or total is None:
        query = good_text[0] if good is None else total_text[0]
        return None, f"the query {query!r} is not a counter selector, {queries.WANTED} or a histogram latency"
    if good[1] != total[1]:
        return None, "the good and total queries aggregate by different labels"
    shape = shapes.checked(shapes.from_good(field, good, total))
    if isinstance(shape, str):
        return None, shape
    return _windows_noted(shape, fixed), ""


def _windows_noted(shape: Shape, fixed: list[str]) -> Shape:
    """``shape`` with a note on the fixed windows its queries had (``[5m]``): the spec's rules write their own."""
    if not fixed:
        return shape
    note = (
        f"the queries' fixed window ({', '.join(f'[{window}]' for window in fixed)}) is dropped: the rules here "
        "read every window of the burn-rate pairs themselves"
    )
    return replace(shape, notes=(*shape.notes, note))


def _query(source: Any, v1: bool) -> tuple[str, str]:
    """(query, "") of one Prometheus metric source, or ("", why not)."""
    if not isinstance(source, dict):
        return "", "the ratio metric lacks a good (or bad) or total source"
    if v1:
        metric = mapping(source.get("metricSource"))
        kind, query = str(metric.get("type", "")), mapping(metric.get("spec")).get("query")
    else:
        kind, query = str(source.get("source", "")), source.get("query")
    if kind.lower() not in ("prometheus", "sloth"):
        return "", f"the metric source is {kind or 'not named'}, not Prometheus"
    if not isinstance(query, str):
        return "", "the metric source has no query (spec.query, a string)"
    return query, ""


def _period(spec: dict[str, Any]) -> tuple[str, str]:
    """(period, refusal): one rolling window of whole days."""
    windows = spec.get("timeWindows", spec.get("timeWindow"))
    windows = windows if isinstance(windows, list) else [windows] if isinstance(windows, dict) else []
    if len(windows) != 1:
        return "", "the SLO needs exactly one time window"
    window = windows[0]
    if not isinstance(window, dict):
        return "", "the time window is not a mapping (duration, isRolling)"
    if "calendar" in window or window.get("isRolling") is False:
        return "", "a calendar time window resets the budget on a date; periods here are rolling windows"
    if "duration" in window:
        text = str(window["duration"])
        if text[-1:] not in ("d", "w") or parse_duration(text) is None:
            return "", f"time window duration {text} is not whole days or weeks"
        return text, ""
    if str(window.get("unit", "")).lower() == "day" and isinstance(window.get("count"), int):
        return f"{window['count']}d", ""
    return "", "the time window is not a count of days"


def _method_refusal(method: Any) -> str:
    if method == "Occurrences":
        return ""
    return f"budgetingMethod {method} counts bad time slices, not bad events; the budgets here are events (Occurrences)"
