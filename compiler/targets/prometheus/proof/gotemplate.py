"""Render the small subset of Go templates that generated annotations use, as Prometheus would.

Generated promtool tests assert annotations exactly, so the test generator renders each
annotation template with the labels and value it expects. Only the actions the Prometheus
target emits are understood; anything else raises, so a new construct cannot slip into
the rules without the tests learning to expect it.
"""

from __future__ import annotations

import re
from collections.abc import Callable, Mapping

from compiler.targets.prometheus.proof.humanize import humanize, humanize1024, humanize_duration, humanize_percentage

_ACTION = re.compile(r"\{\{(.*?)\}\}", re.DOTALL)
_FUNCTIONS: dict[str, Callable[[float], str]] = {
    "humanize": humanize,
    "humanize1024": humanize1024,
    "humanizeDuration": humanize_duration,
    "humanizePercentage": humanize_percentage,
}


class TemplateError(ValueError):
    pass


def render(template: str, labels: Mapping[str, str], value: float | None) -> str:
    """Expand ``{{ $labels.x }}``, ``{{ $value | humanize* }}`` and ``{{ "{{" }}``."""

    def action(match: re.Match[str]) -> str:
        body = match.group(1).strip()
        if body == '"{{"':
            return "{{"
        if body.startswith("$labels."):
            return labels.get(body.removeprefix("$labels."), "")
        pipeline = [part.strip() for part in body.split("|")]
        if pipeline[0] == "$value" and len(pipeline) == 2 and pipeline[1] in _FUNCTIONS:
            if value is None:
                raise TemplateError(f"template uses $value but no value is known: {body}")
            return _FUNCTIONS[pipeline[1]](value)
        raise TemplateError(f"unsupported template action: {{{{ {body} }}}}")

    return _ACTION.sub(action, template)
