"""Stage 5, the targets: each is a pure function ``render(plan) -> {relative path: bytes}``.

A target reads the model and the plan (``compiler.plan``), never another target, to learn
which alerts exist. Adding an output means adding a module here and listing it in
``TARGETS``; no other stage changes. The generated tests and the engine profiles live
inside the Prometheus target because they are about its rules.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence

from compiler.diagnostics import Diagnostics
from compiler.model import SLO, Model
from compiler.plan import Plan, SpecPlan, plan

Target = Callable[[Plan], dict[str, bytes]]


class TargetError(Exception):
    """A spec that passed every check but that a target still cannot compile; reported at the spec."""

    def __init__(self, problems: list[tuple[SLO, str]]) -> None:
        super().__init__("; ".join(message for _, message in problems))
        self.problems = problems

    def diagnostics(self) -> Diagnostics:
        found = Diagnostics()
        for slo, message in self.problems:
            found.error(slo.position, message)
        return found


from compiler.targets import (  # noqa: E402  (they import TargetError)
    alertmanager,
    catalog,
    fanout,
    grafana,
    prometheus,
    runbooks,
)
from compiler.targets.prometheus import heartbeat  # noqa: E402
from compiler.targets.prometheus import profiles as rule_profiles  # noqa: E402
from compiler.targets.prometheus import proof as promtool_tests  # noqa: E402

TARGETS: tuple[tuple[str, Target], ...] = (
    ("prometheus", prometheus.render),
    ("promtool-tests", promtool_tests.render),
    ("rule-profiles", rule_profiles.render),
    ("heartbeat", heartbeat.render),
    ("alertmanager", alertmanager.render),
    ("grafana", grafana.render),
    ("runbooks", runbooks.render),
    ("catalog", catalog.render),
)

PerSpec = Callable[[Plan, Sequence[SpecPlan]], dict[str, bytes]]
# The targets that write one file per spec, each ``render(plan) == {**per_spec(plan, plan.specs), **shared(plan)}``:
# a large plan's specs are rendered in blocks, shared between two processes (``compiler.targets.fanout``).
PER_SPEC: dict[str, tuple[PerSpec, Target | None]] = {
    "promtool-tests": (promtool_tests.render_specs, None),
    "runbooks": (runbooks.render_specs, runbooks.render_shared),
}
BLOCK_SPECS = 50  # specs per block: small enough that the two processes finish within a block of each other
MAX_BLOCKS = 100  # per target: a larger plan has larger blocks (the queue holds at most 255 items)


def render_all(model: Model) -> dict[str, bytes]:
    """Every generated file, keyed by its path relative to the output directory."""
    return render_plan(plan(model))


def render_plan(alert_plan: Plan) -> dict[str, bytes]:
    """Every generated file of an already planned model (on two cores when the plan is large: the same bytes)."""
    if fanout.worth_it(len(alert_plan.specs)):
        items, order = _work(alert_plan)
        outcomes = fanout.run_shared(items, order, {slo.name: slo for slo in alert_plan.model.slos})
    else:
        outcomes = fanout.run_here([_item(render, alert_plan) for _, render in TARGETS])
    files: dict[str, bytes] = {}
    problems: list[tuple[SLO, str]] = []
    for outcome in outcomes:
        problems.extend(outcome.problems)
        for path, content in outcome.files.items():
            if path in files:
                raise ValueError(f"a target writes {path}, which another target already wrote")
            files[path] = content
    if problems:
        raise TargetError(problems)
    return files


def _work(alert_plan: Plan) -> tuple[list[fanout.Item], list[int]]:
    """The items of a large plan, in the targets' order (so their files merge as one process writes them), and
    the order to take them in: the whole targets first, the blocks of specs after them."""
    items: list[fanout.Item] = []
    whole: list[int] = []
    blocks: list[int] = []
    specs = alert_plan.specs
    size = max(BLOCK_SPECS, -(-len(specs) // MAX_BLOCKS))
    for name, render in TARGETS:
        if name not in PER_SPEC:
            whole.append(len(items))
            items.append(_item(render, alert_plan))
            continue
        per_spec, shared = PER_SPEC[name]
        for start in range(0, len(specs), size):
            blocks.append(len(items))
            items.append(_item(per_spec, alert_plan, specs[start : start + size]))
        if shared is not None:
            whole.append(len(items))
            items.append(_item(shared, alert_plan))
    return items, whole + blocks


def _item(render: Callable[..., dict[str, bytes]], *args: object) -> fanout.Item:
    def rendered() -> fanout.Outcome:
        try:
            return fanout.Outcome(render(*args))
        except TargetError as exc:
            return fanout.Outcome({}, tuple(exc.problems))

    return rendered
