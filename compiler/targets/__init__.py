"""Stage 5, the targets: each is a pure function ``render(plan) -> {relative path: bytes}``.

A target reads the model and the plan (``compiler.plan``), never another target, to learn
which alerts exist. Adding an output means adding a module here and listing it in
``TARGETS``; no other stage changes. The generated tests and the engine profiles live
inside the Prometheus target because they are about its rules.
"""

from __future__ import annotations

from collections.abc import Callable

from compiler.diagnostics import Diagnostics
from compiler.model import SLO, Model
from compiler.plan import Plan, plan

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


def render_all(model: Model) -> dict[str, bytes]:
    """Every generated file, keyed by its path relative to the output directory."""
    return render_plan(plan(model))


def render_plan(alert_plan: Plan) -> dict[str, bytes]:
    """Every generated file of an already planned model."""
    files: dict[str, bytes] = {}
    problems: list[tuple[SLO, str]] = []
    for name, render in TARGETS:
        try:
            rendered = render(alert_plan)
        except TargetError as exc:
            problems.extend(exc.problems)
            continue
        for path, content in rendered.items():
            if path in files:
                raise ValueError(f"target {name} writes {path}, which another target already wrote")
            files[path] = content
    if problems:
        raise TargetError(problems)
    return files
