"""promtool unit tests that prove every alert a spec emits: it fires, it stays silent, it resolves.

A pure function of the model, like every target. For each alert the generator builds
synthetic raw input series (``compiler.targets.prometheus.proof.inputs``) from an SLI-level timeline and states
what promtool must see:

- a calm baseline in which nothing fires (also the slice every other test leaves alone);
- just under each threshold (0.9x a burn factor, just inside a range): silent;
- just over it, and a full outage: pending before ``for``, firing after it, with the
  exact labels and annotations;
- recovery: resolved once the short window clears (plus ``keep_firing_for``);
- zero traffic (no alert, no NaN poisoning) and missing data (the no-data alert);
- a trickle of failing traffic after normal traffic: the traffic guard keeps every pair silent;
- for ranges: above the maximum, below the minimum, a relative spike or drop against the
  value ``offset`` ago, and a move that the floor keeps quiet;
- every scenario declared in the spec.

Inputs hold constant from minute 0, so every window of the SLI equals the input and the
first minute a window has data is known exactly: the test times follow from the rule's
``for`` and the recorded series, not from guesses. promtool 2.42 needs ``interval`` on
every group, compares floats exactly and shows only firing alerts to ``alert_rule_test``;
pending alerts are asserted through the ``ALERTS`` series.

The package, in the order a case is built:

- ``context``: one spec's rules, synthetic inputs, slices and calm value (``SpecContext``);
- ``inputs`` and ``timeline``: raw input series for an SLI-level timeline, and what the
  recorded windows make of it;
- ``timing``: when windows first have points, when a pair fires, when its short window
  clears, and the warm-up (read from ``compiler.model.windows``, as the rules are);
- ``group`` and ``asserts``: a promtool test group and the checks written into it;
- ``cases_baseline`` (calm, no input at all), ``cases_burn`` (under, over, outage, zero
  traffic, trickle), ``cases_range`` (static and relative bounds), ``cases_scenario`` (declared),
  ``cases_first_event`` (counters created on their first event: targets up, targets down),
  ``cases_staleness`` (a timestamp gauge that stops advancing), ``cases_fleet`` (per-unit
  tickets and the slice's page when enough units are out), ``cases_herd`` (a relative bound
  crossed at exactly its edge from the documented normal level), ``cases_storm`` (a crossing that
  outlasts the offset, a step that becomes the new normal, slow growth), ``cases_vanished`` (a
  slice whose series disappear, every slice gone, a rename), ``cases_conditions`` (a page case
  replayed with an assumption or confirmation broken and absent: no page; a broken assumption's
  ticket), with ``conditions`` the values that make a condition hold or break;
- ``gotemplate`` and ``humanize``: the annotation text promtool expects.

Every margin a case adds to an exact time or value is a named constant in its module.
"""

from __future__ import annotations

from collections.abc import Sequence

from compiler.model import SLO, LatencySLI, RatioSLI
from compiler.model.links import rules_path
from compiler.plan import Plan, SpecPlan
from compiler.targets import TargetError
from compiler.targets.prometheus.proof import (
    cases_baseline,
    cases_burn,
    cases_conditions,
    cases_first_event,
    cases_fleet,
    cases_herd,
    cases_range,
    cases_scenario,
    cases_staleness,
    cases_storm,
    cases_vanished,
)
from compiler.targets.prometheus.proof.context import SpecContext
from compiler.targets.prometheus.proof.group import INTERVAL, Group
from compiler.targets.prometheus.proof.inputs import InputError
from compiler.text.yamlout import dump

TESTS_DIR = "prometheus/tests"


def tests_path(slo: SLO) -> str:
    return f"{TESTS_DIR}/{slo.name}.test.yaml"


def groups(ctx: SpecContext) -> list[Group]:
    """Every test group of one spec, in the order the file lists them."""
    found = [cases_baseline.calm(ctx)]
    burns = ctx.burns
    for rule in burns:
        found.append(cases_burn.burn_under(ctx, rule))
        found.append(cases_burn.burn_over(ctx, rule, burns))
    if burns:
        found.append(cases_burn.outage(ctx, burns))
        if isinstance(ctx.slo.sli, RatioSLI | LatencySLI):
            found.append(cases_burn.zero_traffic(ctx, burns))
            guarded = cases_burn.trickle(ctx, burns)
            if guarded is not None:
                found.append(guarded)
    for rule in ctx.rules:
        if rule.spec.fleet is not None:
            continue  # judged per unit: the fleet cases below
        if rule.kind == "range":
            found.extend(cases_range.range_groups(ctx, rule))
            if cases_herd.applies(rule):
                found.append(cases_herd.herd(ctx, rule))
            if cases_storm.applies(rule):
                found.extend(cases_storm.groups(ctx, rule))
            if cases_staleness.applies(ctx, rule):
                frozen = cases_staleness.frozen(ctx, rule)
                found.append(frozen)
                idle = cases_staleness.idle(ctx, rule, frozen)
                if idle is not None:
                    found.append(idle)
        elif rule.kind == "no_data":
            found.append(cases_baseline.missing(ctx, rule))
            if cases_first_event.applies(ctx):
                found.append(cases_first_event.targets_down(ctx, rule))
        elif rule.kind == "vanished":
            found.extend(cases_vanished.groups(ctx, rule))
    if cases_first_event.applies(ctx):
        found.append(cases_first_event.not_created_yet(ctx))
    found.extend(cases_fleet.fleet_groups(ctx))
    for scenario in ctx.slo.scenarios:
        found.append(cases_scenario.scenario(ctx, scenario))
    found.extend(cases_conditions.groups(ctx, found))
    return found


def render(alert_plan: Plan) -> dict[str, bytes]:
    return render_specs(alert_plan, alert_plan.specs)


def render_specs(alert_plan: Plan, specs: Sequence[SpecPlan]) -> dict[str, bytes]:
    """The test files of ``specs`` (one each): a large plan's are rendered in blocks (``compiler.targets.fanout``)."""
    files: dict[str, bytes] = {}
    problems: list[tuple[SLO, str]] = []
    for spec in specs:
        slo = spec.slo
        try:
            tests = [group.to_test() for group in groups(SpecContext.of(alert_plan.model, spec))]
        except InputError as exc:
            problems.append((slo, f"cannot generate the promtool tests that prove its alerts: {exc}"))
            continue
        document = {
            "rule_files": [f"../rules/{rules_path(slo).rsplit('/', 1)[1]}"],
            "evaluation_interval": INTERVAL,
            "tests": tests,
        }
        header = (
            f"# promtool unit tests generated by slo-compiler from {slo.source} (spec {slo.name}, "
            f"sha256 {slo.spec_hash}).\n# Run: promtool test rules {tests_path(slo).rsplit('/', 1)[1]}\n"
        )
        files[tests_path(slo)] = (header + dump(document)).encode("utf-8")
    if problems:
        raise TargetError(problems)
    return files
