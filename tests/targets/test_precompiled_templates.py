"""The templates' compiled files (``compiler.text.templates``) are current, and used.

A stale compiled file is never used, only compiled again, so no golden file would notice one: this
test does. Run ``UPDATE_GOLDEN=1 pytest tests/targets/test_precompiled_templates.py`` after editing
a template, and commit ``compiler/templates/compiled/`` with it.
"""

from __future__ import annotations

import os
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import jinja2
import pytest

from compiler.plan import plan
from compiler.targets import catalog, runbooks
from compiler.text import templates
from tests.support import compile_tree

REPO_ROOT = Path(__file__).resolve().parents[2]
TEMPLATE_DIR = REPO_ROOT / "compiler" / "templates"
COMPILED_DIR = TEMPLATE_DIR / templates.COMPILED
FIXTURE_SPECS = REPO_ROOT / "tests" / "fixtures" / "specs"


def _environments() -> dict[str, jinja2.Environment]:
    """Each jinja template of the package, with the environment of the target that renders it."""
    found: dict[str, jinja2.Environment] = {}
    for path in sorted(TEMPLATE_DIR.glob("*.j2")):
        found[path.name] = runbooks.environment() if path.name.endswith(".md.j2") else catalog._env()
    found["catalog.css"] = catalog._env()  # no jinja syntax, but loaded through the catalog's environment
    return found


EXPECTED = {
    templates.compiled_name(name): templates.compiled_text(environment, name)
    for name, environment in _environments().items()
}

if os.environ.get("UPDATE_GOLDEN"):
    for stale in COMPILED_DIR.glob(f"*{templates.SUFFIX}"):
        stale.unlink()
    COMPILED_DIR.mkdir(exist_ok=True)
    for relative, text in EXPECTED.items():
        (TEMPLATE_DIR / relative).write_text(text, encoding="utf-8")


@pytest.mark.parametrize("relative", sorted(EXPECTED))
def test_each_compiled_file_is_what_its_template_compiles_to(relative: str) -> None:
    committed = TEMPLATE_DIR / relative
    hint = f"run UPDATE_GOLDEN=1 pytest {__file__}"
    assert committed.is_file(), f"{relative} is missing; {hint}"
    assert committed.read_text(encoding="utf-8") == EXPECTED[relative], f"{relative} is stale; {hint}"


def test_no_compiled_file_is_left_without_its_template() -> None:
    committed = {path.relative_to(TEMPLATE_DIR).as_posix() for path in COMPILED_DIR.iterdir()}
    assert committed == set(EXPECTED)


@pytest.fixture
def nothing_compiled(monkeypatch: pytest.MonkeyPatch) -> Iterator[list[str]]:
    """Fresh target environments in which every template jinja compiles is recorded."""
    compiled: list[str] = []
    original = jinja2.Environment.compile

    def recording(self: jinja2.Environment, source: str, name: str | None = None, *args: Any, **kw: Any) -> Any:
        compiled.append(str(name))
        return original(self, source, name, *args, **kw)

    monkeypatch.setattr(jinja2.Environment, "compile", recording)
    runbooks.environment.cache_clear()
    catalog._env.cache_clear()
    yield compiled
    runbooks.environment.cache_clear()
    catalog._env.cache_clear()


def test_the_runbooks_and_the_catalog_compile_no_template_while_they_render(nothing_compiled: list[str]) -> None:
    planned = plan(compile_tree(FIXTURE_SPECS))
    files = {**runbooks.render(planned), **catalog.render(planned)}
    assert any(path.endswith(".md") for path in files) and any(path.endswith(".html") for path in files)
    assert nothing_compiled == []


def test_a_compiled_file_from_other_options_is_not_used(nothing_compiled: list[str]) -> None:
    """An environment whose options differ from the compiled file's compiles the template itself, and
    renders what jinja renders from the template (block tags keep their newlines: ``trim_blocks`` off)."""
    ours = runbooks.environment().overlay(trim_blocks=False, loader=templates.PrecompiledLoader())
    plain = runbooks.environment().overlay(trim_blocks=False, loader=jinja2.PackageLoader("compiler", "templates"))
    context: dict[str, Any] = {"heartbeat": None, "families": [], "teams": [], "left_out": []}
    rendered = ours.get_template("index.md.j2").render(context)
    assert "index.md.j2" in nothing_compiled
    assert rendered == plain.get_template("index.md.j2").render(context)
    assert rendered != runbooks.environment().get_template("index.md.j2").render(context)
