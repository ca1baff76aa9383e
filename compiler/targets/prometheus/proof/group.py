"""One promtool test group and how it is written: its inputs, its checks, and their order.

Every case builds a ``Group``; ``asserts`` adds the checks and ``to_test`` writes the
promtool form. Times are whole minutes from the start of the group's input.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any

from compiler.model.windows import MINUTE
from compiler.promql import Matcher, format_duration, quote, render_selector
from compiler.targets.prometheus.proof.conditions import State
from compiler.targets.prometheus.proof.inputs import Inputs
from compiler.targets.prometheus.proof.timeline import Timeline
from compiler.targets.prometheus.proof.timing import STEP_MIN

INTERVAL = format_duration(STEP_MIN * MINUTE)  # the inputs' sample interval and the rules' evaluation interval


def duration_text(count: int) -> str:
    """``count`` minutes as a Prometheus duration (``90`` -> ``1h30m``), for test times and titles."""
    return format_duration(count * MINUTE)


def selector(name: str, labels: Mapping[str, str]) -> str:
    """``name{k="v", ...}`` with the labels sorted, as the checks query ALERTS and recorded series."""
    return render_selector(name, [Matcher(key, "=", value) for key, value in sorted(labels.items())])


def label_text(labels: Mapping[str, str]) -> str:
    """``{k="v", ...}``: a sample's labels as promtool expects them after the metric name."""
    return "{" + ", ".join(f"{key}={quote(value)}" for key, value in sorted(labels.items())) + "}"


@dataclass
class Group:
    """One promtool test group: its own inputs, evaluated from minute 0."""

    name: str
    timelines: dict[str, Timeline]
    inputs: Inputs | None
    promql: list[dict[str, Any]] = field(default_factory=list)
    alerts: list[dict[str, Any]] = field(default_factory=list)
    extra_series: list[dict[str, str]] = field(default_factory=list)  # input beyond the timelines
    states: dict[str, State] = field(default_factory=dict)  # conditions not holding in this case, by name

    def to_test(self) -> dict[str, Any]:
        test: dict[str, Any] = {"name": self.name, "interval": INTERVAL}
        test["input_series"] = [
            *(self.inputs.input_series(self.timelines, self.states) if self.inputs else []),
            *self.extra_series,
        ]
        if self.promql:
            test["promql_expr_test"] = sorted(self.promql, key=lambda p: (p["eval_time_m"], p["expr"]))
        if self.alerts:
            test["alert_rule_test"] = sorted(self.alerts, key=lambda a: (a["eval_time_m"], a["alertname"]))
        for key in ("promql_expr_test", "alert_rule_test"):
            if key in test:
                test[key] = [_with_eval_time(check) for check in test[key]]
        return test


def _with_eval_time(check: dict[str, Any]) -> dict[str, Any]:
    """Put ``eval_time`` right after the expression or alert name, as people write these tests."""
    ordered: dict[str, Any] = {}
    for key, value in check.items():
        if key == "eval_time_m":
            continue
        ordered[key] = value
        if key in ("expr", "alertname"):
            ordered["eval_time"] = duration_text(check["eval_time_m"])
    return ordered
