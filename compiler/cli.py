"""Command line: ``slo-compiler init|validate|generate|check|test|explain|diff|schemas|preflight|backtest|tune|import``.

Exit codes: 0 success; 1 problems in the specs (every one printed as
``path:line:col: message``) or, for ``check``, a stale ``generated/``, for ``preflight`` a spec
blind or wrong on the server, for ``backtest`` a rule it could not replay; 2 usage errors,
including an output directory ``generate`` refuses to replace and a server that cannot be
reached or is not a Prometheus; 128 + N after signal N.
"""

from __future__ import annotations

import argparse
import contextlib
import json
import math
import os
import re
import sys
import tempfile
import time
import traceback
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from datetime import UTC, datetime
from pathlib import Path
from typing import TYPE_CHECKING, Any

from compiler import __version__
from compiler.live import CONCURRENCY
from compiler.text.terminal import printable
from compiler.write import InterruptedBySignalError, OutputRefusedError, stale_files, write_tree

if TYPE_CHECKING:
    from compiler.live.client import Client
    from compiler.model import SLO, Model
    from compiler.plan import Plan, SpecPlan
    from compiler.source.load import Document

# Every command imports the stages it runs when it runs: every process pays for what it uses. The
# commands that compile the specs import the pipeline (source, model, plan and every target: about
# 0.7 s of CPU); `--help`, a usage error, `init`, `schemas` and `import` never do, and the commands that
# read a live server, review a change or import other tools' files import their own stage besides.

EXIT_OK, EXIT_PROBLEMS, EXIT_USAGE, EXIT_INTERNAL = 0, 1, 2, 70


def _parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(
        prog="slo-compiler",
        description="Compile SLO and alert specs into Prometheus rules and the rest of generated/.",
    )
    parser.add_argument("--version", action="version", version=f"slo-compiler {__version__}")
    common = argparse.ArgumentParser(add_help=False)
    common.add_argument("--specs", type=Path, default=Path("slo_specs"), help="spec directory (default: slo_specs)")
    commands = parser.add_subparsers(dest="command", required=True, metavar="COMMAND")
    validate = commands.add_parser(
        "validate",
        parents=[common],
        help="report every problem in the specs; write nothing",
        description="Check every spec and report all problems as path:line:col: message. Writes nothing.",
    )
    validate.add_argument(
        "paths",
        nargs="*",
        type=Path,
        metavar="PATH",
        help="files or directories inside --specs: report only their problems (the whole tree is still compiled)",
    )
    explain = commands.add_parser(
        "explain",
        parents=[common],
        help="show one spec's rules, windows, thresholds, estimated series and routing",
        description="Show one spec's rules, windows, thresholds, estimated series and routing in one view.",
    )
    explain.add_argument("spec", help="the spec's name")
    _output_parsers(commands, common)
    diff = commands.add_parser(
        "diff",
        parents=[common],
        help="review a spec change by its behaviour: what changed, whom it pages, when alerts now fire",
        description=(
            "Compare the compiled specs of a base revision with --specs: specs and alerts added, removed or "
            "renamed; each changed fact (threshold, windows, for, severity, labels, receivers, inhibitions, "
            "links, series); and, with promtool, when each alert first fires and resolves on each generated "
            "test case before and after."
        ),
    )
    where = diff.add_mutually_exclusive_group()
    where.add_argument("--base", metavar="REF", help="git revision to compare with (default: merge base with main)")
    where.add_argument("--base-dir", type=Path, metavar="DIR", help="a spec directory to compare with, instead of git")
    diff.add_argument("--format", choices=("markdown", "text"), default="text", help="output format (default: text)")
    diff.add_argument("--no-behaviour", action="store_true", help="skip the promtool timings (structure only)")
    schemas = commands.add_parser(
        "schemas",
        help="write the spec language's JSON Schemas into a directory, for editors in another repository",
        description="Write byte copies of the packaged JSON Schemas (slo, owners, project) into --out.",
    )
    schemas.add_argument("--out", type=Path, required=True, help="directory to write the schema files into")
    _live_parsers(commands, common)
    _import_parser(commands)
    _init_parser(commands)
    return parser


def _output_parsers(commands: Any, common: argparse.ArgumentParser) -> None:
    """The commands that read or write ``--out``: generate, check, test."""
    for name, text in (
        ("generate", "compile the specs into the output directory, atomically"),
        ("check", "exit 1 when the output directory is not what the specs generate"),
        ("test", "run the output's promtool tests and Alertmanager routing tests (promtool and amtool on PATH)"),
    ):
        sub = commands.add_parser(name, parents=[common], help=text, description=text[0].upper() + text[1:] + ".")
        sub.add_argument("--out", type=Path, default=Path("generated"), help="output directory (default: generated)")
        if name == "test":
            sub.add_argument("--timeout", default="30m", help="bound on the whole run, a duration (default: 30m)")
            sub.add_argument(
                "--promtool-timeout", default="10m", help="bound on each promtool process (one test file; default: 10m)"
            )


def _init_parser(commands: Any) -> None:
    """``init [DIR] [--force]``: a starter repository that validates, generates and tests at once."""
    sub = commands.add_parser(
        "init",
        help="write a working starter: owners, project, one spec per family, a CI job and a pre-commit hook",
        description=(
            "Write into DIR a starter that validates and generates at once: slo_specs/owners.yaml (one team), "
            "slo_specs/project.yaml, one small spec per family, .github/workflows/slo.yaml and "
            ".pre-commit-config.yaml, and a .gitignore line. Existing files are not overwritten (exit 1, "
            "each named) unless --force; symbolic links are refused and nothing is written outside DIR."
        ),
    )
    sub.add_argument("dir", nargs="?", type=Path, default=Path(), metavar="DIR", help="where (default: .)")
    sub.add_argument("--force", action="store_true", help="replace starter files that already exist")


def _live_parsers(commands: Any, common: argparse.ArgumentParser) -> None:
    """``preflight`` and ``backtest``: read-only commands against a live Prometheus."""
    live = argparse.ArgumentParser(add_help=False)
    live.add_argument("--prometheus", required=True, metavar="URL", help="base URL of the Prometheus to read")
    live.add_argument("--bearer-token-file", type=Path, metavar="FILE", help="file holding a bearer token")
    live.add_argument(
        "--basic-auth-user", metavar="USER", help="basic-auth user name (password from --basic-auth-password-file)"
    )
    live.add_argument("--basic-auth-password-file", type=Path, metavar="FILE", help="file holding the password")
    live.add_argument("--ca-file", type=Path, metavar="FILE", help="CA certificate to verify the server's TLS")
    live.add_argument(
        "--timeout", type=_timeout, default=30.0, metavar="SECONDS", help="total per HTTP request (default: 30)"
    )
    _tune_parser(commands, common, live)
    live.add_argument("spec_names", nargs="*", metavar="SPEC", help="spec names (default: every spec)")
    preflight = commands.add_parser(
        "preflight",
        parents=[common, live],
        help="check against a live Prometheus that each spec sees its data, and what would fire now",
        description="Check against a live Prometheus that each spec sees its data: selectors, bucket edges, "
        "slice labels, joins, first-event counters, series counts, and what would fire now. Read-only.",
    )
    preflight.add_argument("--format", choices=("table", "json"), default="table", help="output format")
    _backtest_parser(commands, common, live)


def _backtest_parser(commands: Any, common: argparse.ArgumentParser, live: argparse.ArgumentParser) -> None:
    """``backtest``: when each alert would have fired over a live Prometheus's history."""
    backtest = commands.add_parser(
        "backtest",
        parents=[common, live],
        help="replay the compiled rules over a live Prometheus's history: when would each alert have fired?",
        description="Replay the compiled recording and alerting rules over the history a Prometheus holds, with "
        "Prometheus 2.42's for, keep_firing_for and evaluation-interval semantics. Read-only.",
    )
    span = backtest.add_mutually_exclusive_group(required=True)
    span.add_argument("--last", metavar="DURATION", help="replay the last DURATION up to now (e.g. 14d)")
    span.add_argument("--from", dest="start", metavar="TIME", help="start: RFC 3339 or unix seconds (with --to)")
    backtest.add_argument("--to", dest="end", metavar="TIME", help="end: RFC 3339 or unix seconds (with --from)")
    backtest.add_argument(
        "--warmup",
        default="auto",
        metavar="DURATION",
        help="history evaluated before the start so windows are full (default: the longest window the alerts read)",
    )
    backtest.add_argument(
        "--concurrency",
        type=_positive_int,
        default=CONCURRENCY,
        metavar="N",
        help=f"range queries asked of the server at once with --engine server (default {CONCURRENCY})",
    )
    backtest.add_argument(
        "--engine",
        choices=("local", "server"),
        default="local",
        help="local (default): each raw series' samples read once through the remote-read API and every rule "
        "evaluated here; server: the server evaluates the raw-reading rules at every step (range queries), "
        "for a server without remote read (such as Thanos Query)",
    )
    backtest.add_argument(
        "--jobs",
        type=_positive_int,
        default=1,
        metavar="N",
        help="specs replayed at once with --engine local, each in a process of its own (default 1; memory is about "
        "N times one spec's replay)",
    )
    backtest.add_argument("--format", choices=("table", "json", "markdown"), default="table", help="output format")


def _tune_parser(commands: Any, common: argparse.ArgumentParser, live: argparse.ArgumentParser) -> None:
    """``tune``: a spec's ranges and persistence proposed from a live Prometheus's history."""
    tune = commands.add_parser(
        "tune",
        parents=[common, live],
        help="propose a spec's normal range, critical range and for from a live Prometheus's history",
        description="Propose values for a spec's normal range, critical range and persistence from the history a "
        "Prometheus holds (its quantiles, with headroom), each replayed with the backtest engine: how often and how "
        "long its alert would have fired. Read-only on the server; --write edits only the chosen values in the spec.",
    )
    tune.add_argument("spec", metavar="SPEC", help="the spec to tune")
    span = tune.add_mutually_exclusive_group(required=True)
    span.add_argument("--last", metavar="DURATION", help="the last DURATION up to now (e.g. 14d)")
    span.add_argument("--from", dest="start", metavar="TIME", help="start: RFC 3339 or unix seconds (with --to)")
    tune.add_argument("--to", dest="end", metavar="TIME", help="end: RFC 3339 or unix seconds (with --from)")
    tune.add_argument("--warmup", default="auto", metavar="DURATION", help="as for backtest (default: auto)")
    tune.add_argument("--concurrency", type=_positive_int, default=CONCURRENCY, metavar="N", help="as for backtest")
    tune.add_argument("--engine", choices=("local", "server"), default="local", help="as for backtest")
    tune.add_argument(
        "--format",
        choices=("table", "json", "patch"),
        default="table",
        help="output: a table, JSON, or a unified diff of the spec with the picked values",
    )
    tune.add_argument(
        "--pick",
        action="append",
        default=[],
        metavar="[KEY=]NAME",
        help="the candidate to write or show in the patch, e.g. p99 or normal_range.max=max (repeatable; "
        "without --pick: p99.9 for the normal range, max for the critical range, the current for; with picks, "
        "what they do not name stays)",
    )
    tune.add_argument("--write", action="store_true", help="edit the spec file in place with the picked values")


def _positive_int(text: str) -> int:
    """An argparse type: a whole number of at least 1 (anything else is a usage error)."""
    try:
        value = int(text)
    except ValueError:
        value = 0
    if value < 1:
        raise argparse.ArgumentTypeError(f"expected a whole number of at least 1, got {text!r}")
    return value


def _timeout(text: str) -> float:
    """An argparse type: seconds above 0 and at most a day (``inf``, ``nan``, ``0`` are usage errors)."""
    from compiler.live.client import check_timeout

    try:
        value = float(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"expected a number of seconds, got {text!r}") from None
    refused = check_timeout(value)
    if refused:
        raise argparse.ArgumentTypeError(refused.removeprefix("--timeout "))
    return value


def _import_parser(commands: Any) -> None:
    """``import sloth FILE... | import openslo FILE...``: specs of ours from another tool's SLOs."""
    sub = commands.add_parser(
        "import",
        help="write specs from Sloth or OpenSLO SLOs, one per SLO, with placeholders for what they lack",
        description=(
            "Write one spec per Sloth or OpenSLO SLO into --out. What the source lacks (owner, family, "
            "slice, mitigation) is written as PLACEHOLDER values that fail validation until filled in; "
            "the Sloth burn policy is selected, so the SLO pages when Sloth's rules did."
        ),
    )
    sub.add_argument("format", choices=("sloth", "openslo"), help="the format of the files")
    sub.add_argument("files", nargs="+", metavar="FILE", help="Sloth or OpenSLO YAML files")
    sub.add_argument(
        "--out", type=Path, default=Path("slo_specs/imported"), help="where to write the specs (slo_specs/imported)"
    )
    sub.add_argument("--force", action="store_true", help="replace spec files that already exist")
    sub.add_argument(
        "--prefix",
        type=_name_prefix,
        default=None,
        metavar="NAME-",
        help="start every imported spec's name with NAME- (for SLOs whose names collide with others')",
    )


def _name_prefix(value: str) -> str:
    """``--prefix``: lower-case letters, digits and '-', starting with a letter or digit, at most 62 characters."""
    if not re.fullmatch(r"[a-z0-9][a-z0-9-]{0,61}", value):
        raise argparse.ArgumentTypeError(
            f"{printable(value)!r} is not a name prefix: lower-case letters, digits and '-', starting with a letter "
            "or digit, at most 62 characters (a spec name is a DNS label of at most 63)"
        )
    return value


def _bad_paths(spec_dir: Path, paths: Sequence[Path]) -> list[str]:
    """Why each PATH cannot be validated: missing, or outside the spec tree its problems are reported against."""
    root = spec_dir.resolve()
    reasons = []
    for path in paths:
        if not path.exists():
            reasons.append(f"no such file or directory: {path}")
        elif not path.resolve().is_relative_to(root):
            reasons.append(f"{path} is outside the spec directory {spec_dir}; pass --specs DIR for the tree it is in")
    return reasons


def validate_paths(spec_dir: Path, paths: Sequence[Path]) -> int:
    """``validate PATH...``: report only the problems positioned in ``paths``.

    pre-commit passes the changed files; the whole tree is still compiled, because cross-spec
    checks (duplicate names, owners, explains) need every spec.
    """
    from compiler.diagnostics import Diagnostics
    from compiler.pipeline import tree_problems

    reasons = _bad_paths(spec_dir, paths)
    for reason in reasons:
        print(f"slo-compiler: {printable(reason)}", file=sys.stderr)
    if reasons:
        return EXIT_USAGE
    chosen = [path.resolve() for path in paths]
    mine, elsewhere = Diagnostics(), 0
    for item in tree_problems(spec_dir).items:
        where = Path(item.position.path).resolve()
        if any(where.is_relative_to(path) for path in chosen):
            mine.error(item.position, item.message)
        else:
            elsewhere += 1
    others = f"{elsewhere} problem(s) elsewhere in {spec_dir} (`slo-compiler validate` lists them)"
    if mine:
        sys.stderr.write(mine.render())
        more = f"; {others}" if elsewhere else ""
        print(f"slo-compiler: {len(mine)} problem(s) in the given path(s){more}", file=sys.stderr)
        return EXIT_PROBLEMS
    print(f"slo-compiler: no problems in {len(paths)} given path(s)")
    if elsewhere:
        print(f"slo-compiler: note: {others}", file=sys.stderr)
    return EXIT_OK


def _is_ours(path: Path, schema: bytes) -> bool:
    """Whether ``path`` is a copy of one of our schemas (same ``$id``), perhaps from an older version."""
    try:
        found = json.loads(path.read_bytes())
    except (OSError, ValueError):
        return False
    return isinstance(found, dict) and found.get("$id") == json.loads(schema)["$id"]


def write_schemas(out: Path) -> int:
    """``schemas --out DIR``: byte copies of the packaged schemas, for a repository that vendors them.

    A file already there is replaced only when it is a copy of the same schema (an upgrade);
    anything else is someone else's file, and then nothing is written.
    """
    from compiler.source.schema import packaged_schemas

    schemas = packaged_schemas()
    if out.exists() and not out.is_dir():
        print(f"slo-compiler: --out {out} is not a directory", file=sys.stderr)
        return EXIT_USAGE
    foreign = [out / name for name in schemas if (out / name).exists() and not _is_ours(out / name, schemas[name])]
    for path in foreign:
        print(f"slo-compiler: {path} exists and is not slo-compiler's schema; not overwritten", file=sys.stderr)
    if foreign:
        print("slo-compiler: nothing written; choose another --out or move those files away", file=sys.stderr)
        return EXIT_USAGE
    out.mkdir(parents=True, exist_ok=True)
    stale = [name for name in schemas if not (out / name).exists() or (out / name).read_bytes() != schemas[name]]
    for name in stale:
        staging = out / f".{name}.{os.getpid()}.tmp"
        staging.write_bytes(schemas[name])
        staging.replace(out / name)  # atomic: an editor never reads half a schema
    print(f"slo-compiler: wrote {len(stale)} schema(s) to {out} ({len(schemas) - len(stale)} already current)")
    return EXIT_OK


def _compiled(args: argparse.Namespace, *, warnings: bool = True) -> tuple[Model, dict[str, bytes]] | int:
    """The model and files of ``--specs``, or the exit code after printing every problem.

    ``warnings``: the plan's warnings about the generated configuration (no heartbeat, foreign
    alerts dropped) are for the commands that write or check it, not for explain, backtest or diff.
    """
    from compiler.pipeline import compile_specs, render
    from compiler.plan import plan

    spec_dir: Path = args.specs
    model, diagnostics = compile_specs(spec_dir)
    files: dict[str, bytes] = {}
    if model is not None and not diagnostics:
        files = render(model, diagnostics)
    if model is None or diagnostics:
        sys.stderr.write(diagnostics.render())
        print(f"slo-compiler: {len(diagnostics)} problem(s); nothing written", file=sys.stderr)
        return EXIT_PROBLEMS
    print_notes(plan(model), warnings=warnings)
    return model, files


def print_notes(compiled: Plan, *, warnings: bool = True) -> None:
    """What the user should know about this compilation without it being a problem (exit stays 0)."""
    for note in compiled.notes:
        print(f"{note.position}: note: {printable(note.message)}", file=sys.stderr)
    for warning in compiled.warnings if warnings else ():
        print(printable(warning), file=sys.stderr)


def cmd_validate(args: argparse.Namespace) -> int:
    from compiler.explain import budget_report, reads_report
    from compiler.plan import plan

    if args.paths:
        return validate_paths(args.specs, args.paths)
    compiled = _compiled(args)
    if isinstance(compiled, int):
        return compiled
    model, files = compiled
    planned = plan(model)
    sys.stdout.write(budget_report(planned.model))
    sys.stdout.write(reads_report(planned.model, files))
    left_out = f" ({len(planned.left_out)} left out by the scrape profile, see the notes)" if planned.left_out else ""
    print(f"slo-compiler: {len(model.slos)} spec(s) valid{left_out}")
    return EXIT_OK


def cmd_explain(args: argparse.Namespace) -> int:
    from compiler.explain import explain
    from compiler.plan import plan

    compiled = _compiled(args, warnings=False)
    if isinstance(compiled, int):
        return compiled
    model, files = compiled
    planned = plan(model)
    left = next((item for item in planned.left_out if item.slo.name == args.spec), None)
    if left is not None:
        print(f"{left.slo.name}  ({left.slo.family}, owner {left.slo.owner.name}; {left.slo.source})")
        print(f"  not compiled: {left.reason}")
        return EXIT_OK
    chosen = next((slo for slo in model.slos if slo.name == args.spec), None)
    if chosen is None:
        names = ", ".join(slo.name for slo in model.slos)
        print(f"slo-compiler: no spec named {args.spec!r} (specs: {names})", file=sys.stderr)
        return EXIT_USAGE
    sys.stdout.write(explain(planned.model, planned.of(chosen), files))
    return EXIT_OK


def cmd_generate(args: argparse.Namespace) -> int:
    from compiler.plan import plan

    compiled = _compiled(args)
    if isinstance(compiled, int):
        return compiled
    model, files = compiled
    return _generate(files, args.out, args.specs, len(plan(model).specs))


def cmd_check(args: argparse.Namespace) -> int:
    compiled = _compiled(args)
    if isinstance(compiled, int):
        return compiled
    _, files = compiled
    problems = stale_files(files, args.out)
    if problems:
        for problem in problems:
            print(f"{printable(args.out)}: {printable(problem)}", file=sys.stderr)
        print(
            "slo-compiler: generated output is stale; run "
            f"`slo-compiler generate --specs {printable(str(args.specs))} --out {printable(str(args.out))}` "
            "and commit the result",
            file=sys.stderr,
        )
        return EXIT_PROBLEMS
    print(f"slo-compiler: {args.out} is up to date ({len(files)} file(s))")
    return EXIT_OK


MAX_TEST_TIMEOUT_MS = 24 * 3_600_000


def _test_bounds(args: argparse.Namespace) -> tuple[int, int] | int:
    """``--timeout`` and ``--promtool-timeout`` in milliseconds, or the usage error's exit code."""
    from compiler.promql import parse_duration

    bounds: list[int] = []
    for flag, text in (("--timeout", args.timeout), ("--promtool-timeout", args.promtool_timeout)):
        value = parse_duration(text)
        if value is None or not 0 < value <= MAX_TEST_TIMEOUT_MS:
            said = printable(repr(text))
            print(f"slo-compiler: {flag} {said} must be a duration from 1ms to 1d, such as 10m", file=sys.stderr)
            return EXIT_USAGE
        bounds.append(value)
    return bounds[0], bounds[1]


def cmd_test(args: argparse.Namespace) -> int:
    """The generated proof: promtool tests and routing tests; a stale output is said first, and fails the run."""
    from compiler import testrun

    bounds_ms = _test_bounds(args)
    if isinstance(bounds_ms, int):
        return bounds_ms
    compiled = _compiled(args)
    if isinstance(compiled, int):
        return compiled
    _, files = compiled
    stale = stale_files(files, args.out)
    if stale:
        for problem in stale:
            print(f"{printable(args.out)}: {printable(problem)}", file=sys.stderr)
        print(
            f"slo-compiler: {printable(args.out)} is stale (not what the specs generate); testing it as it is. Run "
            f"`slo-compiler generate --specs {printable(str(args.specs))} --out {printable(str(args.out))}`",
            file=sys.stderr,
        )
    try:
        outcome = testrun.run(args.out, testrun.Limits.starting_now(*bounds_ms))
    except testrun.ToolMissingError as exc:
        print(f"slo-compiler: {printable(exc)}", file=sys.stderr)
        return EXIT_USAGE
    for failure in testrun.report(outcome):
        print(failure, file=sys.stderr)
    print(f"slo-compiler: {testrun.summary(outcome)}" + ("; the output is stale" if stale else ""))
    if outcome.timeouts:
        return EXIT_USAGE
    return EXIT_PROBLEMS if outcome.failures or stale else EXIT_OK


def cmd_schemas(args: argparse.Namespace) -> int:
    return write_schemas(args.out)


def _chosen_specs(model: Model, names: Sequence[str]) -> list[SpecPlan] | None:
    """The plans of the named specs (every spec when none is named), or None after saying which is unknown."""
    from compiler.plan import plan

    planned = plan(model)
    unknown = [name for name in names if name not in {slo.name for slo in model.slos}]
    if unknown:
        known = ", ".join(slo.name for slo in model.slos)
        print(f"slo-compiler: no spec named {', '.join(map(repr, unknown))} (specs: {known})", file=sys.stderr)
        return None
    return [spec for spec in planned if not names or spec.slo.name in names]


def _client(args: argparse.Namespace, kind: type[Client] | None = None) -> Client:
    from compiler.live.client import Access, Client

    access = Access(
        url=args.prometheus,
        bearer_token_file=args.bearer_token_file,
        basic_auth_user=args.basic_auth_user,
        basic_auth_password_file=args.basic_auth_password_file,
        ca_file=args.ca_file,
        timeout_s=args.timeout,
    )
    return (kind or Client)(access)


def cmd_preflight(args: argparse.Namespace) -> int:
    from compiler.live import preflight
    from compiler.live.client import LiveError
    from compiler.pipeline import compile_specs

    model, diagnostics = compile_specs(args.specs)
    if model is None or diagnostics:
        sys.stderr.write(diagnostics.render())
        print(f"slo-compiler: {len(diagnostics)} problem(s) in the specs; fix them before a preflight", file=sys.stderr)
        return EXIT_PROBLEMS
    specs = _chosen_specs(model, args.spec_names)
    if specs is None:
        return EXIT_USAGE
    try:
        client = _client(args)
        server = f"{client.base} (Prometheus {client.buildinfo()['version']})"
        reports = preflight.run(client, model, specs)
    except LiveError as exc:
        print(f"slo-compiler: {printable(exc)}", file=sys.stderr)
        return EXIT_USAGE
    if args.format == "json":
        print(json.dumps(preflight.render_json(reports, server), indent=2, sort_keys=True))
    else:
        sys.stdout.write(preflight.render_table(reports, server))
    return EXIT_PROBLEMS if any(report.problems for report in reports) else EXIT_OK


# What a backtest may replay: its span (--last, or --from to --to) and --warmup at most
# MAX_SPAN_MS each, no earlier than EARLIEST_MS and no later than a day from now, and at most
# MAX_EVALUATIONS evaluations of a spec's group (span and warm-up over its interval).
# `--from 0 --to 4102444800` replayed 130 years; `--from 1e300` took 2.9 GB before a traceback.
DAY_MS = 24 * 3600 * 1000
MAX_SPAN_MS = 400 * DAY_MS
EARLIEST_MS = 946_684_800_000  # 2000-01-01T00:00:00Z
MAX_EVALUATIONS = 1_000_000


def _instant_ms(text: str) -> int | None:
    """RFC 3339 (``2026-11-17T00:00:00Z``) or unix seconds, in milliseconds; None when neither,
    or when not finite (``inf``, ``nan``, ``1e400``) or beyond what a datetime holds."""
    try:
        seconds = float(text)
    except ValueError:
        try:
            moment = datetime.fromisoformat(text)
        except ValueError:
            return None
        seconds = (moment if moment.tzinfo else moment.replace(tzinfo=UTC)).timestamp()
    return round(seconds * 1000) if math.isfinite(seconds) else None


def _span_duration(flag: str, text: str) -> int | str:
    """A positive duration of at most MAX_SPAN_MS, or the usage error naming the flag and the bound."""
    from compiler.promql import format_duration, parse_duration

    length = parse_duration(text)
    if not length:
        return f"{flag} {text!r} must be a positive duration such as 14d"
    if length > MAX_SPAN_MS:
        return f"{flag} {text} is longer than the {format_duration(MAX_SPAN_MS)} limit"
    return length


def _backtest_span(args: argparse.Namespace) -> tuple[int, int, int | None] | str:
    """(start, end, warm-up) in ms from the arguments, or the usage error (naming the flag and its bound)."""
    from compiler.promql import format_duration

    warmup: int | None = None if args.warmup == "auto" else 0
    if args.warmup not in ("auto", "0"):
        given = _span_duration("--warmup", args.warmup)
        if isinstance(given, str):
            return f"{given} (or auto, or 0)"
        warmup = given
    now = int(time.time() * 1000)
    latest = now + DAY_MS
    if args.last is not None:
        if args.end is not None:
            return "--last replays up to now: give it without --to"
        length = _span_duration("--last", args.last)
        if isinstance(length, str):
            return length
        return now - length, now, warmup
    if args.end is None:
        return "--from needs --to"
    start, stop = _instant_ms(args.start), _instant_ms(args.end)
    for flag, text, moment in (("--from", args.start, start), ("--to", args.end, stop)):
        if moment is None:
            return f"{flag} {text!r} is not a time: write RFC 3339 (2026-01-31T00:00:00Z) or finite unix seconds"
        if not EARLIEST_MS <= moment <= latest:
            return f"{flag} {text} is not between 2000-01-01 and a day from now ({_rfc3339(latest)})"
    assert start is not None and stop is not None
    if stop <= start:
        return "--to must be after --from"
    if stop - start > MAX_SPAN_MS:
        return (
            f"--from to --to spans {format_duration(stop - start)}, longer than the "
            f"{format_duration(MAX_SPAN_MS)} limit; replay it in parts"
        )
    return start, stop, warmup


def _rfc3339(ms: int) -> str:
    return datetime.fromtimestamp(ms / 1000, UTC).strftime("%Y-%m-%dT%H:%M:%SZ")


def _too_many_evaluations(
    specs: Sequence[SpecPlan], files: dict[str, bytes], span: tuple[int, int, int | None], interval_ms: int
) -> str:
    """The usage error when a spec's group would be evaluated more than MAX_EVALUATIONS times, else ''."""
    from compiler.live.backtest import needed, rules_of, warmup_ms
    from compiler.model.links import rules_path
    from compiler.promql import format_duration

    start, end, warmup = span
    for spec in specs:
        interval, rules = rules_of(files[rules_path(spec.slo)])
        step = interval or interval_ms
        warm = warmup if warmup is not None else warmup_ms(needed(rules))
        evaluations = (end - start + warm) // step
        if evaluations > MAX_EVALUATIONS:
            return (
                f"{spec.slo.name}: the span and warm-up come to {evaluations:,} evaluations every "
                f"{format_duration(step)}, more than the limit of {MAX_EVALUATIONS:,} per spec; replay a shorter span"
            )
    return ""


def cmd_backtest(args: argparse.Namespace) -> int:
    from compiler.live.backtest import Backtest
    from compiler.live.client import LiveError
    from compiler.live.summary import render_markdown, render_table, summarise
    from compiler.live.workers import Job, run_jobs
    from compiler.model.budget import estimate
    from compiler.model.links import rules_path

    span = _backtest_span(args)
    if isinstance(span, str):
        print(f"slo-compiler: {printable(span)}", file=sys.stderr)
        return EXIT_USAGE
    compiled = _compiled(args, warnings=False)
    if isinstance(compiled, int):
        return compiled
    model, files = compiled
    specs = _chosen_specs(model, args.spec_names)
    if specs is None:
        return EXIT_USAGE
    too_many = _too_many_evaluations(specs, files, span, model.project.evaluation_interval_ms)
    if too_many:
        print(f"slo-compiler: {too_many}", file=sys.stderr)
        return EXIT_USAGE
    start, end, warmup = span
    try:
        client = _client(args)
        client.buildinfo()
        replay = Backtest(client, start, end, warmup, concurrency=args.concurrency, engine=args.engine)
        jobs = []
        for spec in specs:
            expected = estimate(spec.slo, model.project.cluster_profile)
            interval_ms = model.project.evaluation_interval_ms
            jobs.append(Job(spec, files[rules_path(spec.slo)], interval_ms, expected.budget, expected.series))
        run_jobs(replay, jobs, args.jobs if args.engine == "local" else 1)
    except LiveError as exc:
        print(f"slo-compiler: {printable(exc)}", file=sys.stderr)
        return EXIT_USAGE
    found = summarise(replay.result)
    if args.format == "json":
        print(json.dumps(found, indent=2, sort_keys=True))
    else:
        sys.stdout.write((render_markdown if args.format == "markdown" else render_table)(found))
    return EXIT_PROBLEMS if replay.result.problems else EXIT_OK


@dataclass(frozen=True)
class _TuneSource:
    """The file a spec is written in, as tune read it: its bytes, its data, its document (with positions) and
    its name."""

    file: Path
    display: str
    raw: bytes
    data: dict[str, Any]
    document: Document | None  # None: a jsonnet spec (shown, never edited: its output has no positions)

    @property
    def positions(self) -> dict[tuple[str | int, ...], tuple[int, int]]:
        found = self.document.value_positions.items() if self.document is not None else ()
        return {key: (where.line, where.col) for key, where in found}


def _tune_source(spec_dir: Path, slo: SLO) -> _TuneSource:
    from compiler.diagnostics import Diagnostics
    from compiler.source.load import load_jsonnet, load_text

    root = spec_dir.resolve().name
    inside = slo.source[len(root) + 1 :] if root and slo.source.startswith(root + "/") else slo.source
    file, display = spec_dir / inside, slo.position.path
    raw = file.read_bytes()
    ignored = Diagnostics()
    if file.suffix == ".jsonnet":
        found = load_jsonnet(file, display, spec_dir, ignored)
        data = next((d.data for d in found if isinstance(d.data, dict) and d.data.get("name") == slo.name), {})
        return _TuneSource(file, display, raw, data, None)
    documents = load_text(raw.decode("utf-8"), display, ignored)
    document = next(d for d in documents if isinstance(d.data, dict) and d.data.get("name") == slo.name)
    return _TuneSource(file, display, raw, document.data, document)


def _tune_spec(model: Model, name: str) -> SpecPlan | int:
    """The plan of the spec to tune, or the exit code after saying why there is none."""
    import difflib

    from compiler.plan import plan

    names = [slo.name for slo in model.slos]
    if name not in names:
        near = difflib.get_close_matches(name, names, n=5, cutoff=0.5) or sorted(names)[:10]
        shown = printable(name)
        print(f"slo-compiler: no spec named {shown!r}; did you mean: {', '.join(near)}?", file=sys.stderr)
        return EXIT_USAGE
    planned = plan(model)
    if name not in {spec.slo.name for spec in planned}:
        print(f"slo-compiler: {name} is left out by the project's scrape profile: nothing to tune", file=sys.stderr)
        return EXIT_USAGE
    spec = planned.of(name)
    if spec.slo.normal_range is None:
        print(
            f"{spec.slo.position}: {name} has no normal_range: tune proposes a normal range's bounds and wait from "
            "history; give the spec a first guess (with mode: shadow) and tune it",
            file=sys.stderr,
        )
        return EXIT_PROBLEMS
    return spec


def _spec_compiler(model: Model) -> Callable[[SLO], tuple[SpecPlan, bytes]]:
    """A spec's model (a candidate's) to its plan and its rule file, rendered by the Prometheus target as
    generate renders it."""
    from compiler.model.links import rules_path
    from compiler.plan import Conventions, Plan, plan_spec
    from compiler.targets import TARGETS

    conventions = Conventions.of(model.project)
    prometheus = dict(TARGETS)["prometheus"]

    def compile_spec(slo: SLO) -> tuple[SpecPlan, bytes]:
        spec = plan_spec(slo, conventions)
        return spec, prometheus(Plan(model=model, specs=(spec,)))[rules_path(slo)]

    return compile_spec


def _tune_model(args: argparse.Namespace) -> Model | int:
    """The specs' model (only the tuned spec's rules are rendered, by tune), or the exit code after its problems."""
    from compiler.pipeline import compile_specs
    from compiler.plan import plan

    model, diagnostics = compile_specs(args.specs)
    if model is None or diagnostics:
        sys.stderr.write(diagnostics.render())
        print(f"slo-compiler: {len(diagnostics)} problem(s) in the specs; fix them before tuning", file=sys.stderr)
        return EXIT_PROBLEMS
    print_notes(plan(model), warnings=False)
    return model


def cmd_tune(args: argparse.Namespace) -> int:
    from compiler.live import tune
    from compiler.live.client import LiveError
    from compiler.model.budget import estimate
    from compiler.model.links import rules_path
    from compiler.plan import plan
    from compiler.targets import TargetError

    span = _backtest_span(args)
    if isinstance(span, str):
        print(f"slo-compiler: {printable(span)}", file=sys.stderr)
        return EXIT_USAGE
    model = _tune_model(args)
    if isinstance(model, int):
        return model
    spec = _tune_spec(model, args.spec)
    if isinstance(spec, int):
        return spec
    compile_spec = _spec_compiler(plan(model).model)
    try:
        files = {rules_path(spec.slo): compile_spec(spec.slo)[1]}
    except TargetError as exc:
        sys.stderr.write(exc.diagnostics().render())
        return EXIT_PROBLEMS
    too_many = _too_many_evaluations([spec], files, span, model.project.evaluation_interval_ms)
    if too_many:
        print(f"slo-compiler: {too_many}", file=sys.stderr)
        return EXIT_USAGE
    source = _tune_source(args.specs, spec.slo)
    if source.document is None and (args.write or args.format == "patch"):
        print(
            f"{source.display}:1:1: {spec.slo.name} is written in jsonnet: tune shows its candidates "
            "(--format table or json) but cannot edit its source; change the values by hand",
            file=sys.stderr,
        )
        return EXIT_PROBLEMS
    expected = estimate(spec.slo, model.project.cluster_profile)
    start, end, warmup = span
    window = tune.Window(
        start,
        end,
        warmup,
        model.project.evaluation_interval_ms,
        expected.budget,
        expected.series,
        args.concurrency,
        args.engine,
    )
    try:
        client = _client(args, tune.Remembering)
        client.buildinfo()
        report = tune.tune(client, spec, source.data, compile_spec, window, source.positions)
    except LiveError as exc:
        print(f"slo-compiler: {printable(exc)}", file=sys.stderr)
        return EXIT_USAGE
    except TargetError as exc:  # a candidate's value the Prometheus target cannot compile
        sys.stderr.write(exc.diagnostics().render())
        return EXIT_PROBLEMS
    return _tune_output(args, report, source)


def _tune_output(args: argparse.Namespace, report: dict[str, Any], source: _TuneSource) -> int:
    """Print the report; for a patch or --write, the picked values edited into the spec's text."""
    from compiler.live import tune
    from compiler.source.edit import EditError, replace_values

    if args.format == "json":
        print(json.dumps(report, indent=2, sort_keys=True))
    elif args.format == "table":
        sys.stdout.write(tune.render_table(report, source.display))
    for problem in report["problems"]:
        print(f"slo-compiler: {printable(problem)}", file=sys.stderr)
    if not (args.write or args.format == "patch" or args.pick):
        return EXIT_PROBLEMS if report["problems"] else EXIT_OK
    chosen = tune.choose(report, args.pick)
    if isinstance(chosen, str):
        print(f"slo-compiler: {printable(chosen)}", file=sys.stderr)
        return EXIT_USAGE
    current = {row["key"]: row["current_text"] for row in report["knobs"]}
    edits: dict[tuple[str | int, ...], str] = {
        tuple(key.split(".")): c["text"] for key, c in chosen.items() if c["text"] != current[key]
    }
    if source.document is None:
        return EXIT_PROBLEMS if report["problems"] else EXIT_OK
    try:
        text = replace_values(source.raw.decode("utf-8"), source.document, edits)
    except EditError as exc:
        print(f"{exc.position}: {printable(exc.message)}", file=sys.stderr)
        return EXIT_PROBLEMS
    if args.format == "patch":
        sys.stdout.write(_unified(source, text))
    if args.write:
        return _tune_write(args, source, text, len(edits))
    return EXIT_PROBLEMS if report["problems"] else EXIT_OK


def _unified(source: _TuneSource, text: str) -> str:
    import difflib

    before = source.raw.decode("utf-8").splitlines(keepends=True)
    a, b = ("", "") if source.display.startswith("/") else ("a/", "b/")
    lines = difflib.unified_diff(before, text.splitlines(keepends=True), a + source.display, b + source.display)
    return "".join(printable(line.rstrip("\n")) + "\n" for line in lines)


def _tune_write(args: argparse.Namespace, source: _TuneSource, text: str, edits: int) -> int:
    """Write the edited spec in place, unless the file changed since tune read it or the edit does not compile."""
    import shutil

    from compiler.pipeline import compile_specs

    if not edits:
        print(
            f"slo-compiler: {printable(source.display)}: the picked values are the current ones; nothing written",
            file=sys.stderr,
        )
        return EXIT_OK
    try:
        now = source.file.read_bytes()
    except OSError as exc:
        now = str(exc).encode()
    if now != source.raw:
        shown = printable(source.display)
        print(f"{shown}:1:1: changed since tune read it; nothing written (run tune again)", file=sys.stderr)
        return EXIT_PROBLEMS
    spec_dir: Path = args.specs
    with tempfile.TemporaryDirectory(prefix="slo-compiler-tune-") as tmp:
        copy = Path(tmp) / (spec_dir.resolve().name or "specs")
        shutil.copytree(spec_dir, copy, symlinks=True)
        (copy / source.file.relative_to(spec_dir)).write_bytes(text.encode("utf-8"))
        _, diagnostics = compile_specs(copy)
        shown = diagnostics.render()
        for copied, real in ((copy, spec_dir), (copy.absolute(), spec_dir.absolute())):
            with contextlib.suppress(ValueError):  # problems name files relative to the working directory
                shown = shown.replace(copied.relative_to(Path.cwd()).as_posix(), real.as_posix())
            shown = shown.replace(copied.as_posix(), real.as_posix())
    if diagnostics:
        sys.stderr.write(shown)
        shown = printable(source.display)
        print(f"slo-compiler: the picked values do not compile; {shown} left as it was", file=sys.stderr)
        return EXIT_PROBLEMS
    staging = source.file.with_name(f".{source.file.name}.{os.getpid()}.tune")
    try:
        staging.write_bytes(text.encode("utf-8"))
        shutil.copymode(source.file, staging)
        staging.replace(source.file)
    except OSError as exc:
        with contextlib.suppress(OSError):
            staging.unlink(missing_ok=True)
        shown = printable(source.display)
        print(f"slo-compiler: cannot write {shown}: {printable(exc.strerror)}; left as it was", file=sys.stderr)
        return EXIT_USAGE
    print(f"slo-compiler: wrote {edits} value(s) to {printable(source.display)}", file=sys.stderr)
    return EXIT_OK


# One function per command; each takes the parsed arguments and returns the exit code.
def _unreadable(spec_dir: Path) -> str | None:
    """Why the spec tree cannot be read whole (a broken link, an unreadable directory), or None."""
    from compiler.source.load import discover

    unread: list[tuple[Path, str]] = []
    discover(spec_dir, unread)
    if not unread:
        return None
    more = f" (and {len(unread) - 1} more)" if len(unread) > 1 else ""
    return f"{printable(unread[0][0])}: {printable(unread[0][1])}{more}"


def _base_plan(args: argparse.Namespace, workdir: Path) -> tuple[Plan | None, dict[str, bytes], str] | int:
    """The base revision compiled: its plan (None when it had no specs), files and a name for it."""
    from compiler.pipeline import compile_specs, render
    from compiler.plan import plan
    from compiler.review.base import BaseError, default_base, extract

    try:
        if args.base_dir is not None:
            base_dir, name = args.base_dir, str(args.base_dir)
            if not base_dir.is_dir():
                what = "is not a directory" if base_dir.exists() else "does not exist"
                raise BaseError(f"--base-dir {base_dir} {what}; give the directory that holds the base specs")
        else:
            ref = args.base or default_base(args.specs)
            base_dir, name = extract(args.specs, ref, workdir), args.base or f"merge base {ref[:12]}"
    except BaseError as exc:
        print(f"slo-compiler: {printable(exc)}", file=sys.stderr)
        return EXIT_USAGE
    if not base_dir.is_dir():
        return None, {}, name
    unread = _unreadable(base_dir)
    if unread:
        print(f"slo-compiler: cannot read the base ({printable(name)}): {unread}", file=sys.stderr)
        return EXIT_USAGE
    model, diagnostics = compile_specs(base_dir)
    if model is None or diagnostics:
        print(
            f"slo-compiler: the base ({name}) does not compile ({len(diagnostics)} problem(s)); "
            "comparing with an empty base",
            file=sys.stderr,
        )
        return None, {}, name
    return plan(model), render(model, diagnostics), name


def cmd_diff(args: argparse.Namespace) -> int:
    from compiler.plan import plan
    from compiler.review import behaviour_of, review
    from compiler.review import render as render_review
    from compiler.review.behaviour import BehaviourError

    compiled = _compiled(args, warnings=False)
    if isinstance(compiled, int):
        return compiled
    model, files = compiled
    with tempfile.TemporaryDirectory(prefix="slo-compiler-base-") as tmp:
        base = _base_plan(args, Path(tmp))
        if isinstance(base, int):
            return base
        base_plan, base_files, name = base
        head = plan(model)
        result = review(base_plan, head)
        behaviour = {}
        if not args.no_behaviour:
            try:
                behaviour = behaviour_of(result, base_plan, head, base_files, files)
            except (BehaviourError, OSError) as exc:
                print(f"slo-compiler: behaviour not measured: {printable(exc)}", file=sys.stderr)
    sys.stdout.write(render_review(result, name, behaviour, md=args.format == "markdown"))
    return EXIT_OK


def cmd_init(args: argparse.Namespace) -> int:
    from compiler.starter import StarterError, init, next_steps

    try:
        written = init(args.dir, args.force)
    except StarterError as exc:
        for problem in exc.problems:
            print(f"slo-compiler: {printable(problem)}", file=sys.stderr)
        print(f"slo-compiler: init wrote nothing into {printable(str(args.dir))}", file=sys.stderr)
        return EXIT_USAGE if exc.usage else EXIT_PROBLEMS
    for done, path in written:
        print(f"{done} {printable(str(args.dir / path))}")
    print(f"slo-compiler: wrote the starter ({len(written)} file(s)) into {printable(str(args.dir))}")
    print(next_steps(args.dir))
    return EXIT_OK


def cmd_import(args: argparse.Namespace) -> int:
    from compiler.importers import import_files

    _, code = import_files(args.format, list(args.files), args.out, args.force, args.prefix or "")
    return code


COMMANDS: dict[str, Callable[[argparse.Namespace], int]] = {
    "validate": cmd_validate,
    "explain": cmd_explain,
    "generate": cmd_generate,
    "check": cmd_check,
    "diff": cmd_diff,
    "schemas": cmd_schemas,
    "preflight": cmd_preflight,
    "backtest": cmd_backtest,
    "tune": cmd_tune,
    "import": cmd_import,
    "init": cmd_init,
    "test": cmd_test,
}
NEEDS_SPECS = frozenset({"validate", "explain", "generate", "check", "test", "diff", "preflight", "backtest", "tune"})


def _run(args: argparse.Namespace) -> int:
    if args.command in NEEDS_SPECS and not args.specs.is_dir():
        print(f"slo-compiler: spec directory not found: {args.specs}", file=sys.stderr)
        return EXIT_USAGE
    return COMMANDS[args.command](args)


def _generate(files: dict[str, bytes], out: Path, spec_dir: Path, specs: int) -> int:
    """Write the output, or say why the directory was refused (exit 2, nothing touched)."""
    try:
        edited = write_tree(files, out, spec_dir)
    except OutputRefusedError as exc:
        print(f"slo-compiler: refusing to write to {printable(out)}: {printable(exc)}", file=sys.stderr)
        return EXIT_USAGE
    except OSError as exc:
        where, shown = printable(exc.filename or out), printable(out)
        message = f"cannot write to {shown}: {where}: {exc.strerror}; {shown} left as it was"
        print(f"slo-compiler: {message}", file=sys.stderr)
        return EXIT_USAGE
    _WRITTEN.append(out)
    print(f"slo-compiler: wrote {len(files)} file(s) for {specs} spec(s) to {out}")
    if edited:
        print(f"slo-compiler: replaced {len(edited)} hand-edited file(s): {printable(', '.join(edited))}")
    sys.stdout.flush()  # here, not at exit: an interrupt while the summary waits on the terminal is reported below
    return EXIT_OK


# The output directory this run has replaced, once it has: an interrupt after that must not say
# the output was left as it was.
_WRITTEN: list[Path] = []


def _interrupted() -> str:
    if _WRITTEN:
        return f"slo-compiler: interrupted after the new output was written to {printable(_WRITTEN[-1])}"
    return "slo-compiler: interrupted; output left as it was"


def main(argv: Sequence[str] | None = None) -> int:
    args = _parser().parse_args(argv)  # --help and usage errors exit here, before any stage is imported
    from compiler.promql import bounds

    _WRITTEN.clear()
    sys.setrecursionlimit(max(sys.getrecursionlimit(), bounds.RECURSION_LIMIT))
    try:
        return _run(args)
    except KeyboardInterrupt:
        print(_interrupted(), file=sys.stderr)
        return 130
    except InterruptedBySignalError as exc:
        out = getattr(args, "out", "the output")
        if exc.committed:
            print(f"slo-compiler: {exc} received after the new output was written to {out}", file=sys.stderr)
        else:
            print(f"slo-compiler: interrupted by {exc}; {out} left as it was", file=sys.stderr)
        return 128 + exc.signum
    except Exception as exc:  # a bug in the compiler, never a problem in the specs
        if os.environ.get("SLO_COMPILER_DEBUG"):
            traceback.print_exc()
        print(
            f"slo-compiler: internal error: {type(exc).__name__}: {exc} (set SLO_COMPILER_DEBUG=1 for details)",
            file=sys.stderr,
        )
        return EXIT_INTERNAL
