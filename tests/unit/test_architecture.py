"""The package tree is the pipeline: each stage imports only the stages before it.

ARCHITECTURE.md states the rules; this test keeps them true. It reads the imports of every
module under ``compiler/`` (absolute, ``from compiler import x`` and relative) and fails on
an import against the stated direction, such as a target importing another target, the
source stage importing a target or anything Prometheus-specific, or the PromQL toolkit
knowing about SLOs.
"""

from __future__ import annotations

import ast
from pathlib import Path

import pytest

REPO_ROOT = Path(__file__).resolve().parents[2]
PACKAGE = REPO_ROOT / "compiler"
MAX_FUNCTION_LINES = 60

# The stage a module belongs to, by the longest matching prefix of its dotted name.
STAGES = {
    "compiler": "root",
    "compiler.__main__": "cli",
    "compiler.cli": "cli",
    "compiler.pipeline": "cli",
    "compiler.diagnostics": "diagnostics",
    "compiler.forked": "forked",
    "compiler.text": "text",
    "compiler.promql": "promql",
    "compiler.source": "source",
    "compiler.model": "model",
    "compiler.plan": "plan",
    "compiler.targets": "targets",
    "compiler.explain": "views",
    "compiler.review": "views",
    "compiler.live": "live",
    "compiler.write": "write",
    "compiler.importers": "importers",
    "compiler.starter": "starter",
    "compiler.testrun": "testrun",
}

# What each stage may import (besides itself and the standard library / third parties).
ALLOWED: dict[str, set[str]] = {
    "root": set(),
    "diagnostics": {"text"},
    "forked": set(),
    "text": set(),
    "promql": {"text"},
    "model": {"diagnostics", "promql", "text"},
    "source": {"diagnostics", "forked", "promql", "text", "model"},
    "plan": {"diagnostics", "promql", "text", "model"},
    "targets": {"diagnostics", "forked", "promql", "text", "model", "plan"},
    "views": {"diagnostics", "promql", "text", "model", "plan"},
    "live": {"diagnostics", "promql", "text", "model", "plan"},
    "write": {"diagnostics"},
    "importers": {"diagnostics", "promql", "text", "model", "source"},
    "starter": {"text"},
    "testrun": {"promql", "text", "targets"},
    "cli": {
        "root",
        "diagnostics",
        "promql",
        "text",
        "model",
        "source",
        "plan",
        "targets",
        "views",
        "live",
        "write",
        "importers",
        "starter",
        "testrun",
    },
}


def module_name(path: Path) -> str:
    parts = list(path.relative_to(REPO_ROOT).with_suffix("").parts)
    if parts[-1] == "__init__":
        parts.pop()
    return ".".join(parts)


def stage_of(module: str) -> str:
    best = max((prefix for prefix in STAGES if module == prefix or module.startswith(prefix + ".")), key=len)
    return STAGES[best]


def target_of(module: str) -> str | None:
    """``compiler.targets.prometheus.proof`` -> ``prometheus``; the targets package itself -> None."""
    parts = module.split(".")
    return parts[2] if len(parts) > 2 and parts[1] == "targets" else None


def imports_of(path: Path) -> list[tuple[int, str]]:
    """(line, imported compiler module) for every import of a compiler module in ``path``."""
    module = module_name(path)
    package = module if path.name == "__init__.py" else module.rpartition(".")[0]
    found: list[tuple[int, str]] = []
    for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
        if isinstance(node, ast.Import):
            found += [(node.lineno, alias.name) for alias in node.names if alias.name.startswith("compiler")]
        elif isinstance(node, ast.ImportFrom):
            base = node.module or ""
            if node.level:
                anchor = package.split(".")[: len(package.split(".")) - node.level + 1]
                base = ".".join([*anchor, *([base] if base else [])])
            if not base.startswith("compiler"):
                continue
            for alias in node.names:
                # ``from compiler.model import series`` imports the submodule compiler.model.series
                submodule = f"{base}.{alias.name}"
                found.append((node.lineno, submodule if _is_module(submodule) else base))
    return found


def _is_module(dotted: str) -> bool:
    path = REPO_ROOT.joinpath(*dotted.split("."))
    return path.with_suffix(".py").is_file() or (path / "__init__.py").is_file()


MODULES = sorted(PACKAGE.rglob("*.py"))


def violations(path: Path) -> list[str]:
    module = module_name(path)
    stage = stage_of(module)
    problems = []
    for line, imported in imports_of(path):
        other = stage_of(imported)
        where = f"{path.relative_to(REPO_ROOT)}:{line}: {module} ({stage}) imports {imported} ({other})"
        if other != stage and other not in ALLOWED[stage]:
            problems.append(f"{where}: {stage} may import only {sorted(ALLOWED[stage])}")
        mine, theirs = target_of(module), target_of(imported)
        if stage == "targets" and mine is not None and theirs is not None and mine != theirs:
            problems.append(f"{where}: a target must learn what exists from the plan, not from another target")
    return problems


def test_every_module_belongs_to_a_stage() -> None:
    for path in MODULES:
        assert stage_of(module_name(path)) in ALLOWED, path


@pytest.mark.parametrize("path", MODULES, ids=lambda p: str(p.relative_to(REPO_ROOT)))
def test_imports_follow_the_pipeline_direction(path: Path) -> None:
    assert violations(path) == []


def test_no_module_outside_the_prometheus_target_imports_it() -> None:
    offenders = [
        f"{path.relative_to(REPO_ROOT)}:{line}"
        for path in MODULES
        for line, imported in imports_of(path)
        if imported.startswith("compiler.targets.prometheus")
        and not module_name(path).startswith("compiler.targets.prometheus")
        and module_name(path) != "compiler.targets"  # the registry of targets lists it
    ]
    assert offenders == []


def test_the_source_stage_knows_nothing_prometheus_specific() -> None:
    for path in (PACKAGE / "source").rglob("*.py"):
        for line, imported in imports_of(path):
            assert not imported.startswith(("compiler.targets", "compiler.plan")), f"{path}:{line}: {imported}"


def test_the_checker_catches_a_target_importing_another_target(tmp_path: Path) -> None:
    """The rule has teeth: a runbooks module importing the Prometheus target is reported."""
    fake = PACKAGE / "targets" / "runbooks" / "_probe_for_architecture_test.py"
    fake.write_text("from compiler.targets.prometheus import alert_rules\n", encoding="utf-8")
    try:
        found = violations(fake)
    finally:
        fake.unlink()
    assert any("another target" in problem for problem in found), found


def test_no_function_is_longer_than_sixty_lines() -> None:
    long = []
    for path in MODULES:
        for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
            if isinstance(node, ast.FunctionDef | ast.AsyncFunctionDef):
                length = (node.end_lineno or node.lineno) - node.lineno + 1
                if length > MAX_FUNCTION_LINES:
                    long.append(f"{path.relative_to(REPO_ROOT)}:{node.lineno}: {node.name} is {length} lines")
    assert long == []
