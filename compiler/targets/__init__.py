"""Output targets: each module is a pure function ``render(model) -> {relative path: bytes}``.

Adding an output means adding a module here and listing it in ``TARGETS``; no other
stage changes.
"""

from __future__ import annotations

from collections.abc import Callable

from compiler.model import SLO, Model
from compiler.source.diagnostics import Diagnostics

Target = Callable[[Model], dict[str, bytes]]


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
    grafana,
    prometheus,
    runbooks,
)
from compiler.targets.prometheus import profiles as rule_profiles  # noqa: E402
from compiler.targets.prometheus import proof as promtool_tests  # noqa: E402

TARGETS: tuple[tuple[str, Target], ...] = (
    ("prometheus", prometheus.render),
    ("promtool-tests", promtool_tests.render),
    ("rule-profiles", rule_profiles.render),
    ("alertmanager", alertmanager.render),
    ("grafana", grafana.render),
    ("runbooks", runbooks.render),
)


def render_all(model: Model) -> dict[str, bytes]:
    """Every generated file, keyed by its path relative to the output directory."""
    files: dict[str, bytes] = {}
    problems: list[tuple[SLO, str]] = []
    for name, render in TARGETS:
        try:
            rendered = render(model)
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
