"""Cases the spec declares itself: a scenario's segments, and what must (not) fire by when."""

from __future__ import annotations

from compiler.model import Scenario
from compiler.model.windows import MINUTE
from compiler.targets.prometheus.proof.asserts import expect, nothing_until, one_series
from compiler.targets.prometheus.proof.context import SpecContext
from compiler.targets.prometheus.proof.group import Group, duration_text, selector
from compiler.targets.prometheus.proof.inputs import Inputs
from compiler.targets.prometheus.proof.timeline import Timeline


def scenario(ctx: SpecContext, declared: Scenario) -> Group:
    """Slice a follows the scenario's segments (slice b stays calm, missing where a is); each expectation checked."""
    inputs = Inputs(ctx.slo, dict(declared.slice_values))
    active = Timeline.from_segments(declared.segments)
    calm = ctx.calm_value()
    timelines = {"a": active}
    if "b" in inputs.slices:
        # Missing scrapes miss every slice, so the spec-wide no-data alert can see them.
        values = tuple(None if value is None else calm for value in active.values)
        timelines["b"] = Timeline(values, (Timeline.constant(calm, active.minutes).rates))
    title = f"scenario {declared.name}" + (f": {declared.description}" if declared.description else "")
    group = Group(title, timelines, inputs)
    slice_a = inputs.alert_labels("a")
    spec_wide = {rule.name for rule in ctx.rules if rule.kind == "no_data"}
    for expectation in declared.expectations:
        minute = expectation.at_ms // MINUTE
        if expectation.kind == "nothing":
            nothing_until(group, minute, {"slo": ctx.slo.name, "alertstate": "firing"})
            continue
        labels = {} if expectation.alert in spec_wide else slice_a
        alert = selector("ALERTS", {"alertname": expectation.alert or "", "alertstate": "firing", **labels})
        samples = one_series() if expectation.kind == "firing" else []
        expect(group, f"max(max_over_time({alert}[{duration_text(minute)}]))", minute, samples)
    return group
