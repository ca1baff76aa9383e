"""Output targets: each module is a pure function ``render(model) -> {relative path: bytes}``.

Adding an output means adding a module here and listing it in ``TARGETS``; no other
stage changes.
"""

from __future__ import annotations

from collections.abc import Callable

from compiler.model import Model
from compiler.targets import prometheus

Target = Callable[[Model], dict[str, bytes]]

TARGETS: tuple[tuple[str, Target], ...] = (("prometheus", prometheus.render),)


def render_all(model: Model) -> dict[str, bytes]:
    """Every generated file, keyed by its path relative to the output directory."""
    files: dict[str, bytes] = {}
    for name, render in TARGETS:
        for path, content in render(model).items():
            if path in files:
                raise ValueError(f"target {name} writes {path}, which another target already wrote")
            files[path] = content
    return files
