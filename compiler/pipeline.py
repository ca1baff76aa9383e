"""The stages wired together: spec directory in, model and files (or every problem) out.

``cli`` calls these for every command; the tests and the benchmark call them directly. The
order is the package tree's: ``source`` (load, check, build the model), ``plan`` and the
``targets`` (inside ``render_all``); ``write`` is left to the command that writes.
"""

from __future__ import annotations

import contextlib
import dataclasses
import gc
from collections.abc import Iterator
from pathlib import Path

from compiler.diagnostics import Diagnostics, Position
from compiler.model import SLO, Model
from compiler.plan import plan
from compiler.source.load import load_tree
from compiler.source.project import check_model
from compiler.targets import TARGETS, TargetError, render_all


@contextlib.contextmanager
def collector_paused() -> Iterator[None]:
    """Python's cycle collector off while a stage runs, as it was after.

    The stages build many objects and leave little cyclic garbage: compiling 1,000 specs
    (bench/bench_compile.py) peaks at the same memory with the collector off, and 4% sooner,
    since its passes over every live object found nothing to free.
    """
    was = gc.isenabled()
    gc.disable()
    try:
        yield
    finally:
        if was:
            gc.enable()


def compile_specs(spec_dir: Path) -> tuple[Model | None, Diagnostics]:
    """Load, check and model every spec under ``spec_dir``."""
    with collector_paused():
        return _compiled(spec_dir)


def _compiled(spec_dir: Path) -> tuple[Model | None, Diagnostics]:
    diagnostics = Diagnostics()
    documents = load_tree(spec_dir, Path.cwd(), diagnostics)
    if not diagnostics and not any(isinstance(doc.data, dict) and doc.data.get("kind") == "SLO" for doc in documents):
        diagnostics.error(Position(spec_dir.as_posix(), 1, 1), "no SLO specs found (documents with kind: SLO)")
    model = check_model(documents, diagnostics)
    if diagnostics:
        prove_each(model, diagnostics)
        return None, diagnostics
    return model, diagnostics


def prove_each(partial: Model, diagnostics: Diagnostics) -> None:
    """Report the specs that built but whose alerts cannot be proven, while other specs have problems.

    Test derivability is judged on the rendered tests, which need a model; when the run has
    problems already, each spec that built is rendered alone (without its cross-spec links,
    which may point at a spec that did not build), so its own problems come in the same run.
    """
    render_tests = dict(TARGETS)["promtool-tests"]
    for slo in partial.slos:
        alone = dataclasses.replace(partial, slos=(dataclasses.replace(slo, explains=()),))
        try:
            render_tests(plan(alone))
        except TargetError as exc:
            for _, message in exc.problems:
                diagnostics.error(slo.position, message)
        except Exception:
            continue  # not a derivation problem: the full render reports it once the run is clean


def render(model: Model, diagnostics: Diagnostics) -> dict[str, bytes]:
    """Every output file; a spec that no check caught but no target can compile is reported at the spec."""
    try:
        with collector_paused():
            return render_all(model)
    except TargetError as exc:
        diagnostics.extend(exc.diagnostics())
    except Exception as exc:
        culprit = failing_spec(model)
        if culprit is None:
            raise  # not one spec's doing: a compiler bug, reported as an internal error
        diagnostics.error(
            culprit.position,
            f"cannot compile this spec ({type(exc).__name__}: {exc}); no check caught the problem, "
            "so please also report it as a compiler bug",
        )
    return {}


def failing_spec(model: Model) -> SLO | None:
    """The first spec that fails to render on its own, unless every spec of several does (then no spec
    is to blame). Rendering each spec alone is costly, but only after a failure."""
    failing = []
    for slo in model.slos:
        try:
            render_all(dataclasses.replace(model, slos=(slo,)))
        except TargetError:
            continue
        except Exception:
            failing.append(slo)
    if not failing or (len(model.slos) > 1 and len(failing) == len(model.slos)):
        return None
    return failing[0]


def tree_problems(spec_dir: Path) -> Diagnostics:
    """Every problem ``generate`` would report for the tree, rendering included."""
    model, diagnostics = compile_specs(spec_dir)
    if model is not None and not diagnostics:
        render(model, diagnostics)
    return diagnostics
