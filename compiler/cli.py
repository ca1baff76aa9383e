"""Command line: ``slo-compiler validate|generate|check``.

Exit codes: 0 success; 1 problems in the specs (every one printed as
``path:line:col: message``) or, for ``check``, a stale ``generated/``; 2 usage errors.
"""

from __future__ import annotations

import argparse
import dataclasses
import os
import sys
import traceback
from collections.abc import Sequence
from pathlib import Path

from compiler import __version__
from compiler.build import build_model
from compiler.diagnostics import Diagnostics, Position
from compiler.explain import budget_report, explain
from compiler.load import load_tree
from compiler.model import SLO, Model
from compiler.targets import TargetError, render_all
from compiler.write import stale_files, write_tree

EXIT_OK, EXIT_PROBLEMS, EXIT_USAGE, EXIT_INTERNAL = 0, 1, 2, 70


def compile_specs(spec_dir: Path) -> tuple[Model | None, Diagnostics]:
    """Load, check and model every spec under ``spec_dir``."""
    diagnostics = Diagnostics()
    documents = load_tree(spec_dir, Path.cwd(), diagnostics)
    if not diagnostics and not any(isinstance(doc.data, dict) and doc.data.get("kind") == "SLO" for doc in documents):
        diagnostics.error(Position(spec_dir.as_posix(), 1, 1), "no SLO specs found (documents with kind: SLO)")
    model = build_model(documents, diagnostics)
    return model, diagnostics


def _render(model: Model, diagnostics: Diagnostics) -> dict[str, bytes]:
    """Every output file; a spec that no check caught but no target can compile is reported at the spec."""
    try:
        return render_all(model)
    except TargetError as exc:
        diagnostics.extend(exc.diagnostics())
    except Exception as exc:
        culprit = _failing_spec(model)
        if culprit is None:
            raise  # not one spec's doing: a compiler bug, reported as an internal error
        diagnostics.error(
            culprit.position,
            f"cannot compile this spec ({type(exc).__name__}: {exc}); no check caught the problem, "
            "so please also report it as a compiler bug",
        )
    return {}


def _failing_spec(model: Model) -> SLO | None:
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


def _parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(
        prog="slo-compiler",
        description="Compile SLO and alert specs into Prometheus rules and the rest of generated/.",
    )
    parser.add_argument("--version", action="version", version=f"slo-compiler {__version__}")
    common = argparse.ArgumentParser(add_help=False)
    common.add_argument("--specs", type=Path, default=Path("slo_specs"), help="spec directory (default: slo_specs)")
    commands = parser.add_subparsers(dest="command", required=True, metavar="COMMAND")
    commands.add_parser(
        "validate",
        parents=[common],
        help="report every problem in the specs; write nothing",
        description="Check every spec and report all problems as path:line:col: message. Writes nothing.",
    )
    explain = commands.add_parser(
        "explain",
        parents=[common],
        help="show one spec's rules, windows, thresholds, estimated series and routing",
        description="Show one spec's rules, windows, thresholds, estimated series and routing in one view.",
    )
    explain.add_argument("spec", help="the spec's name")
    for name, text in (
        ("generate", "compile the specs into the output directory, atomically"),
        ("check", "exit 1 when the output directory is not what the specs generate"),
    ):
        sub = commands.add_parser(name, parents=[common], help=text, description=text[0].upper() + text[1:] + ".")
        sub.add_argument("--out", type=Path, default=Path("generated"), help="output directory (default: generated)")
    return parser


def _run(args: argparse.Namespace) -> int:
    spec_dir: Path = args.specs
    if not spec_dir.is_dir():
        print(f"slo-compiler: spec directory not found: {spec_dir}", file=sys.stderr)
        return EXIT_USAGE
    model, diagnostics = compile_specs(spec_dir)
    files: dict[str, bytes] = {}
    if model is not None and not diagnostics:
        files = _render(model, diagnostics)
    if model is None or diagnostics:
        sys.stderr.write(diagnostics.render())
        print(f"slo-compiler: {len(diagnostics)} problem(s); nothing written", file=sys.stderr)
        return EXIT_PROBLEMS
    if args.command == "validate":
        sys.stdout.write(budget_report(model))
        print(f"slo-compiler: {len(model.slos)} spec(s) valid")
        return EXIT_OK
    if args.command == "explain":
        chosen = next((slo for slo in model.slos if slo.name == args.spec), None)
        if chosen is None:
            names = ", ".join(slo.name for slo in model.slos)
            print(f"slo-compiler: no spec named {args.spec!r} (specs: {names})", file=sys.stderr)
            return EXIT_USAGE
        sys.stdout.write(explain(model, chosen))
        return EXIT_OK
    if args.command == "generate":
        write_tree(files, args.out)
        print(f"slo-compiler: wrote {len(files)} file(s) for {len(model.slos)} spec(s) to {args.out}")
        return EXIT_OK
    problems = stale_files(files, args.out)
    if problems:
        for problem in problems:
            print(f"{args.out}: {problem}", file=sys.stderr)
        print(
            "slo-compiler: generated output is stale; run `make generate` and commit the result",
            file=sys.stderr,
        )
        return EXIT_PROBLEMS
    print(f"slo-compiler: {args.out} is up to date ({len(files)} file(s))")
    return EXIT_OK


def main(argv: Sequence[str] | None = None) -> int:
    args = _parser().parse_args(argv)
    try:
        return _run(args)
    except KeyboardInterrupt:
        print("slo-compiler: interrupted; output left as it was", file=sys.stderr)
        return 130
    except Exception as exc:  # a bug in the compiler, never a problem in the specs
        if os.environ.get("SLO_COMPILER_DEBUG"):
            traceback.print_exc()
        print(
            f"slo-compiler: internal error: {type(exc).__name__}: {exc} (set SLO_COMPILER_DEBUG=1 for details)",
            file=sys.stderr,
        )
        return EXIT_INTERNAL
