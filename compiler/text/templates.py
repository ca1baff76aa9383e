"""Jinja templates loaded compiled ahead of time, so a process does not parse and compile them again.

Compiling a template is most of its first render: jinja's parser and code generator took about
0.1 s of every ``generate`` (``runbook.md.j2`` alone 42 ms, against 8 ms for Python to compile what
jinja generates from it). ``compiler/templates/compiled/<template>.py.txt`` holds the Python module
jinja compiles each template to, under a header that names what it was compiled from: jinja2's
version, the template's SHA-256 and the environment's options. ``PrecompiledLoader`` uses the file
only when that header is exactly what the template and environment at hand give, and otherwise
compiles the template as jinja always does: a stale or missing file costs time, never a wrong
output. ``tests/targets/test_precompiled_templates.py`` fails when a file is stale and rewrites them
all with ``UPDATE_GOLDEN=1``.
"""

from __future__ import annotations

import hashlib
from collections.abc import Callable, MutableMapping
from importlib import resources
from typing import Any

import jinja2

PACKAGE = "compiler"
TEMPLATES = "templates"
COMPILED = "compiled"
SUFFIX = ".py.txt"

# What changes the code jinja generates for a template: its syntax, whitespace control, escaping,
# the optimiser, async and extensions. Filters and tests are looked up when a template runs.
_OPTIONS = (
    "block_start_string",
    "block_end_string",
    "variable_start_string",
    "variable_end_string",
    "comment_start_string",
    "comment_end_string",
    "line_statement_prefix",
    "line_comment_prefix",
    "trim_blocks",
    "lstrip_blocks",
    "newline_sequence",
    "keep_trailing_newline",
    "autoescape",
    "optimized",
    "is_async",
)


def compiled_name(template: str) -> str:
    """The compiled file of ``template``, relative to the templates folder."""
    return f"{COMPILED}/{template}{SUFFIX}"


def header(environment: jinja2.Environment, source: str) -> str:
    """The first line of the compiled file of ``source`` in ``environment``."""
    options = ", ".join(f"{name}={getattr(environment, name)!r}" for name in _OPTIONS)
    extensions = ", ".join(sorted(environment.extensions))
    digest = hashlib.sha256(source.encode("utf-8")).hexdigest()
    return f"# jinja2 {jinja2.__version__}; template sha256 {digest}; {options}; extensions [{extensions}]\n"


def compiled_text(environment: jinja2.Environment, template: str) -> str:
    """What the compiled file of ``template`` holds: its header, then the module jinja generates."""
    loader = environment.loader
    assert loader is not None
    source, _, _ = loader.get_source(environment, template)
    return header(environment, source) + environment.compile(source, template, raw=True)


class PrecompiledLoader(jinja2.PackageLoader):
    """The package's templates, each taken from its compiled file when that file is current."""

    def __init__(self) -> None:
        super().__init__(PACKAGE, TEMPLATES)

    def load(
        self, environment: jinja2.Environment, name: str, globals: MutableMapping[str, Any] | None = None
    ) -> jinja2.Template:
        source, filename, uptodate = self.get_source(environment, name)
        text = _read(compiled_name(name))
        if text is None or not text.startswith(header(environment, source)):
            return super().load(environment, name, globals)
        code = compile(text, filename, "exec")  # the template's own path in tracebacks, as jinja names it
        checked: Callable[[], bool] | None = uptodate
        return environment.template_class.from_code(environment, code, globals or {}, checked)


def _read(relative: str) -> str | None:
    try:
        return resources.files(PACKAGE).joinpath(TEMPLATES, *relative.split("/")).read_text(encoding="utf-8")
    except (OSError, UnicodeDecodeError):
        return None
