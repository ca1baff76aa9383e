"""OpenSLO ``openslo/v1alpha`` and ``openslo/v1`` SLO documents, one spec per objective."""

from __future__ import annotations

from typing import Any

from compiler.diagnostics import Diagnostics
from compiler.importers import queries
from compiler.importers.draft import (
    LABEL_NAME_OK,
    Draft,
    Refusal,
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


def read(document: Document, data: dict[str, Any], base: PathKey, diagnostics: Diagnostics) -> list[Draft | Refusal]:
    """One OpenSLO object (``data`` at ``base`` in the document): a spec per objective of an SLO."""
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
    ratio, why = _ratio(spec, data["apiVersion"] == "openslo/v1")
    window = _period(spec)
    method = spec.get("budgetingMethod", "Occurrences")
    objectives = sequence(spec.get("objectives"))
    where = document.position((*base, "metadata", "name"))
    refusal = why or window[1] or _method_refusal(method) or ("" if objectives else "the SLO has no objectives")
    if refusal:
        return [Refusal(where, name, refusal)]
    assert ratio is not None
    results: list[Draft | Refusal] = []
    for index, objective in enumerate(objectives):
        results.append(_draft(document, base, data, spec, ratio, window[0], index, len(objectives), objective))
    return results


def _draft(
    document: Document,
    base: PathKey,
    data: dict[str, Any],
    spec: dict[str, Any],
    ratio: tuple[str, str, str, tuple[str, ...]],
    period: str,
    index: int,
    count: int,
    objective: Any,
) -> Draft | Refusal:
    name = str(data["metadata"].get("name", ""))
    key: PathKey = (*base, "spec", "objectives", index)
    target = objective.get("target") if isinstance(objective, dict) else None
    if isinstance(target, bool) or not isinstance(target, int | float) or not 0 < target < 1:
        return Refusal(document.position((*key, "target")), name, "the objective's target must be in (0, 1)")
    field, selector, total, by = ratio
    draft = Draft(
        name=spec_name(str(spec.get("service", "")), name, str(index) if count > 1 else ""),
        origin=f"OpenSLO {data['apiVersion']}, service {spec.get('service', '?')}, SLO {name}",
        where=document.position((*base, "metadata", "name")),
        description=str(spec["description"]) if spec.get("description") else None,
        by=by or None,
        ratio_field=field,
        ratio_selector=selector,
        total_selector=total,
        target_percent=float(target) * 100,
        period=period,
        period_note="the SLO's rolling time window",
    )
    labels = data["metadata"].get("labels")
    if isinstance(labels, dict):  # v1 label values are lists; a label here has one value
        add_labels(draft, {k: ",".join(map(str, v)) if isinstance(v, list) else v for k, v in labels.items()}, "SLO")
    if spec.get("alertPolicies"):
        draft.notes.append("alertPolicies not imported: burn_policy sloth sets the alerts")
    return draft


def _ratio(spec: dict[str, Any], v1: bool) -> tuple[tuple[str, str, str, tuple[str, ...]] | None, str]:
    """(field, counter selector, total selector, by) of a ratio SLI, or the reason it has none."""
    if v1:
        indicator = mapping(spec.get("indicator"))
        if "indicatorRef" in spec:
            return None, "the SLI is a reference (indicatorRef); import the SLO with its SLI inline"
        metric = mapping(indicator.get("spec")).get("ratioMetric")
    else:
        objectives = sequence(spec.get("objectives"))
        metric = objectives[0].get("ratioMetrics") if objectives and isinstance(objectives[0], dict) else None
    if not isinstance(metric, dict):
        return None, "the SLI is not a ratio metric (a threshold metric judges a value, not events)"
    field = "good" if "good" in metric else "bad"
    good, total = _query(metric.get(field), v1), _query(metric.get("total"), v1)
    if isinstance(good, str) or isinstance(total, str):
        return None, good if isinstance(good, str) else str(total)
    if good[1] != total[1]:
        return None, "the good and total queries aggregate by different labels"
    wrong = [label for label in good[1] if not LABEL_NAME_OK.match(label)]
    if wrong:
        return None, f"the query aggregates by '{escaped(wrong[0])}', which is not a Prometheus label name"
    return (field, good[0], total[0], good[1]), ""


def _query(source: Any, v1: bool) -> tuple[str, tuple[str, ...]] | str:
    """A counter selector of one metric source, or why not."""
    if not isinstance(source, dict):
        return "the ratio metric lacks a good (or bad) or total source"
    if v1:
        metric = mapping(source.get("metricSource"))
        kind, query = str(metric.get("type", "")), mapping(metric.get("spec")).get("query")
    else:
        kind, query = str(source.get("source", "")), source.get("query")
    if kind.lower() not in ("prometheus", "sloth"):
        return f"the metric source is {kind or 'not named'}, not Prometheus"
    if not isinstance(query, str):
        return "the metric source has no query (spec.query, a string)"
    found = queries.counter(query)
    if found is None:
        return f"the query {query!r} is not a counter selector or {queries.WANTED}"
    return found


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
