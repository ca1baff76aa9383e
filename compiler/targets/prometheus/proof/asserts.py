"""The checks a test group makes, encoded as promtool expects them.

promtool shows only firing alerts to ``alert_rule_test``, so pending states and the
absence of alerts are asserted through the ``ALERTS`` series with ``promql_expr_test``.
"""

from __future__ import annotations

import functools
import re
from collections.abc import Mapping, Sequence
from typing import Any

from compiler.promql import Matcher, render_selector
from compiler.targets.prometheus import AlertRule
from compiler.targets.prometheus.proof import gotemplate
from compiler.targets.prometheus.proof.context import SpecContext
from compiler.targets.prometheus.proof.group import Group, duration_text, label_text, selector


def expect(group: Group, expr: str, minute: int, samples: list[dict[str, Any]]) -> None:
    """promql_expr_test: ``expr`` evaluated at ``minute`` gives exactly ``samples``."""
    group.promql.append({"expr": expr, "eval_time_m": minute, "exp_samples": samples})


def one_series() -> list[dict[str, Any]]:
    """The result of a ``count(...)`` or ``max(...)`` that found something: one unlabelled 1."""
    return [{"labels": "{}", "value": 1}]


def alert_labels(rule: AlertRule, slice_labels: Mapping[str, str]) -> dict[str, str]:
    """The labels an alert of ``rule`` carries; the spec-wide no-data alert has no slice labels."""
    labels = dict(rule.labels)
    if rule.kind != "no_data":
        labels.update(slice_labels)
    return labels


def alerts_sample(rule: AlertRule, state: str, slice_labels: Mapping[str, str]) -> dict[str, Any]:
    """The ``ALERTS`` sample of ``rule`` in ``state`` (pending or firing) for a slice (a new dict each time:
    one object twice in a test file would be a YAML anchor)."""
    sliced = () if rule.kind == "no_data" else tuple(slice_labels.items())
    return {"labels": _alerts_text(rule.name, state, tuple(rule.labels.items()), sliced), "value": 1}


@functools.lru_cache(maxsize=16_384)  # the cases assert the same few samples again and again
def _alerts_text(
    name: str, state: str, labels: tuple[tuple[str, str], ...], slice_labels: tuple[tuple[str, str], ...]
) -> str:
    merged = {"__name__": "ALERTS", "alertname": name, "alertstate": state, **dict(labels), **dict(slice_labels)}
    metric = merged.pop("__name__")
    return metric + label_text(merged)


def states_at(
    ctx: SpecContext, group: Group, minute: int, rules: Sequence[AlertRule], states: Sequence[str | None]
) -> None:
    """Assert through ALERTS the exact state of ``rules`` (for slice a) at ``minute``."""
    matchers = {"alertname": rules[0].name}
    for key in ("long_window", "short_window", *ctx.pair_keys):
        if len(rules) == 1 and key in rules[0].labels:
            matchers[key] = rules[0].labels[key]
    samples = [alerts_sample(r, s, ctx.slice_a) for r, s in zip(rules, states, strict=True) if s]
    expect(group, selector("ALERTS", matchers), minute, sorted(samples, key=str))


def firing_exactly(
    ctx: SpecContext,
    group: Group,
    minute: int,
    rules: Sequence[AlertRule],
    value: float | None,
    slice_labels: Mapping[str, str],
) -> None:
    """alert_rule_test: exactly these alerts fire, with these labels and annotations."""
    expected = []
    for rule in rules:
        labels = alert_labels(rule, slice_labels)
        expr_labels = {"slo": ctx.slo.name, **({} if rule.kind == "no_data" else slice_labels)}
        annotations = {key: gotemplate.render(text, expr_labels, value) for key, text in rule.annotations.items()}
        expected.append({"exp_labels": labels, "exp_annotations": annotations})
    group.alerts.append({"eval_time_m": minute, "alertname": rules[0].name, "exp_alerts": sorted(expected, key=str)})


def nothing_until(
    group: Group,
    minute: int,
    selector_labels: Mapping[str, str],
    since: int = 0,
    excluding: Sequence[str] = (),
) -> None:
    """No ALERTS sample matching ``selector_labels`` (pending or firing unless it says) from ``since`` to ``minute``.

    ``excluding`` leaves out alert names (by regex alternation) that the check must not see.
    """
    matchers = [Matcher(key, "=", value) for key, value in sorted(selector_labels.items())]
    if excluding:
        matchers.append(Matcher("alertname", "!~", "|".join(re.escape(name) for name in excluding)))
    expect(group, f"max_over_time({render_selector('ALERTS', matchers)}[{duration_text(minute - since)}])", minute, [])
