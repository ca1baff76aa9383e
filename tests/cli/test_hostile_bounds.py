"""Unbounded work in spec PromQL (issue 26): every expression is measured before it is parsed.

The parser's memory grows with the square of an expression's nesting and terms, and it and the
compiler's tree walks recurse once per level: 3,000 nested parentheses were a RecursionError
(exit 70) after 635 MB, 1,000 ``+`` terms exit 70, 5,000 terms an abort at 1.9 GB, 3,000
selectors in a ratio's list 80 s and 7.7 GB. Each hostile spec is now one positioned error, in
a CLI process whose address space is capped at 1 GiB; the specs at the bounds still compile.
"""

from __future__ import annotations

import os
import resource
import subprocess
import sys
from pathlib import Path

import pytest

from compiler.promql import bounds
from tests.conftest import RATIO_SLI_AND_OBJECTIVE, VALID_SLO, RunCli, make_spec_tree

REPO_ROOT = Path(__file__).resolve().parents[2]
MEMORY_LIMIT = 1024 * 1024 * 1024


def _limited() -> None:
    resource.setrlimit(resource.RLIMIT_AS, (MEMORY_LIMIT, MEMORY_LIMIT))


def gauge_spec(name: str, expr: str, extra: str = "") -> str:
    """The valid spec with a gauge SLI reading ``expr`` (single-quoted YAML: no quote in it)."""
    gauge = (
        f"sli:\n  gauge:\n    expr: '{expr}'\n    aggregate: max\n{extra}"
        "unit: count\nnormal_range:\n  max: 500\n  reason: a backlog\n  for: 10m\n"
    )
    return VALID_SLO.replace("name: dns-errors", f"name: {name}").replace(RATIO_SLI_AND_OBJECTIVE, gauge)


HOSTILE = {
    "nested": "(" * 3_000 + "up" + ")" * 3_000,
    "terms-1000": " + ".join(["up"] * 1_000),
    "terms-5000": " + ".join(["up"] * 5_000),
    "one-megabyte": "up" + " " * (1024 * 1024),
}
EXPR_AT = "specs/network/{name}.yaml:12:11"  # line 12 of the spec: the gauge's expr


@pytest.fixture(scope="module")
def hostile_run(tmp_path_factory: pytest.TempPathFactory) -> tuple[int, str]:
    """validate over one tree holding every hostile spec, in a process capped at 1 GiB."""
    root = tmp_path_factory.mktemp("bounds")
    specs = make_spec_tree(root / "specs")
    for name, expr in HOSTILE.items():
        (specs / "network" / f"{name}.yaml").write_text(gauge_spec(name, expr), encoding="utf-8")
    selectors = "".join(f"      - 'coredns_dns_responses_total{{rcode=\"R{i}\"}}'\n" for i in range(3_000))
    ratio = RATIO_SLI_AND_OBJECTIVE.replace(
        "    bad: 'coredns_dns_responses_total{rcode=\"SERVFAIL\"}'\n", f"    bad:\n{selectors}"
    )
    listed = VALID_SLO.replace("name: dns-errors", "name: many-selectors").replace(RATIO_SLI_AND_OBJECTIVE, ratio)
    (specs / "network" / "many-selectors.yaml").write_text(listed, encoding="utf-8")
    return run(["validate", "--specs", "specs"], root)


def run(args: list[str], cwd: Path) -> tuple[int, str]:
    """The CLI in a process capped at 1 GiB, killed after 120 s; (exit code, stderr)."""
    result = subprocess.run(
        [sys.executable, "-m", "compiler", *args],
        cwd=cwd,
        env={**os.environ, "PYTHONPATH": str(REPO_ROOT)},
        capture_output=True,
        text=True,
        timeout=120,
        preexec_fn=_limited,
        check=False,
    )
    assert "Traceback" not in result.stderr and "internal error" not in result.stderr, result.stderr
    assert "compiler bug" not in result.stderr, result.stderr
    return result.returncode, result.stderr


def message_at(stderr: str, where: str) -> str:
    lines = [line[len(where) + 2 :] for line in stderr.splitlines() if line.startswith(where + ": ")]
    assert len(lines) == 1, f"not one diagnostic at {where}:\n{stderr[:3000]}"
    return lines[0]


def test_unbounded_work_expression_nesting(hostile_run: tuple[int, str]) -> None:
    code, stderr = hostile_run
    assert code == 1
    assert message_at(stderr, EXPR_AT.format(name="nested")) == (
        "PromQL in sli.gauge.expr is too large to parse: the expression nests parentheses, brackets and "
        "braces 3,000 levels deep, deeper than the limit of 64"
    )


def test_unbounded_work_expression_terms(hostile_run: tuple[int, str]) -> None:
    code, stderr = hostile_run
    assert code == 1
    assert message_at(stderr, EXPR_AT.format(name="terms-1000")) == (
        "PromQL in sli.gauge.expr is too large to parse: the expression joins 1,000 terms with operators "
        "(unary signs included), more than the limit of 256"
    )
    # 5,000 terms are past the length bound first: the cheapest check answers.
    assert message_at(stderr, EXPR_AT.format(name="terms-5000")) == (
        "PromQL in sli.gauge.expr is too large to parse: the expression is 24,997 characters long, longer "
        "than the 16,384-character limit"
    )


def test_unbounded_work_expression_length(hostile_run: tuple[int, str]) -> None:
    code, stderr = hostile_run
    assert code == 1
    assert message_at(stderr, EXPR_AT.format(name="one-megabyte")) == (
        "PromQL in sli.gauge.expr is too large to parse: the expression is 1,048,578 characters long, longer "
        "than the 16,384-character limit"
    )


def test_unbounded_work_selector_list(hostile_run: tuple[int, str]) -> None:
    code, stderr = hostile_run
    assert code == 1
    assert message_at(stderr, "specs/network/many-selectors.yaml:13:7") == (
        "sli.ratio.bad lists 3,000 selectors, more than the limit of 64: they are summed in one expression; "
        "select the series with a regex matcher instead"
    )
    assert stderr.endswith("slo-compiler: 5 problem(s); nothing written\n"), stderr[-500:]


AT_THE_BOUNDS = {
    # 64 levels: 62 parentheses, rate( and [5m]; 256 terms.
    "deep-sum": "(" * 62 + " + ".join(["rate(coredns_x_total[5m])"] * 256) + ")" * 62,
    # 255 unary signs inside 61 nested calls: each call used to double the label-flow walk (2^61).
    "deep-calls": "abs(" * 61 + "- " * 255 + "sum by (cluster) (rate(coredns_x_total[5m]))" + ")" * 61,
    "wide-or": " or ".join(f"sum by (cluster) (rate(coredns_x{i}_total[5m]))" for i in range(256)),
}


def test_unbounded_work_expressions_at_the_bounds_compile(tmp_path: Path) -> None:
    """What passes the bounds goes through every stage (model, proof synthesis, the evaluator) and renders."""
    for name, expr in AT_THE_BOUNDS.items():
        assert bounds.problem(expr) is None, name
    specs = make_spec_tree(tmp_path / "specs")
    (specs / "network" / "dns-errors.yaml").unlink()
    for name, expr in AT_THE_BOUNDS.items():
        (specs / "network" / f"{name}.yaml").write_text(gauge_spec(name, expr), encoding="utf-8")
    assert bounds.measure(AT_THE_BOUNDS["deep-sum"]) == (64, 256)
    code, stderr = run(["generate", "--specs", "specs", "--out", "out"], tmp_path)
    assert code == 0, stderr
    assert (tmp_path / "out" / "prometheus" / "rules" / "deep-calls.rules.yaml").is_file()


# -- backtest: the span, the warm-up and the evaluations, checked before any server contact --------

DEAD = "http://127.0.0.1:9"  # nothing listens: a check that let the run through would say so instead


@pytest.mark.parametrize(
    ("span", "message"),
    [
        (["--from", "0", "--to", "4102444800"], "--from 0 is not between 2000-01-01 and a day from now"),
        (["--from", "1e300", "--to", "1e301"], "--from 1e300 is not between 2000-01-01 and a day from now"),
        (["--from", "inf", "--to", "5"], "--from 'inf' is not a time: write RFC 3339"),
        (["--from", "2024-01-01", "--to", "nan"], "--to 'nan' is not a time: write RFC 3339"),
        (["--from", "1700000000", "--to", "4102444800"], "--to 4102444800 is not between 2000-01-01"),
        (["--from", "2024-01-01", "--to", "2025-06-01"], "--from to --to spans 517d, longer than the 400d limit"),
        (["--from", "2024-02-01", "--to", "2024-01-01"], "--to must be after --from"),
        (["--last", "500d"], "--last 500d is longer than the 400d limit"),
        (["--last", "14d", "--warmup", "200y"], "--warmup 200y is longer than the 400d limit (or auto, or 0)"),
        (["--last", "14d", "--warmup", "1e9"], "--warmup '1e9' must be a positive duration such as 14d"),
        (
            ["--from", "2024-01-01", "--to", "2025-01-20", "--warmup", "399d"],
            "dns-errors: the span and warm-up come to 1,128,960 evaluations every 1m, more than the limit of "
            "1,000,000 per spec",
        ),
    ],
)
def test_unbounded_work_backtest_span(tmp_path: Path, run_cli: RunCli, span: list[str], message: str) -> None:
    make_spec_tree(tmp_path / "specs")
    code, stdout, stderr = run_cli(["backtest", "--specs", "specs", "--prometheus", DEAD, *span], tmp_path)
    assert code == 2, stderr
    assert stderr.startswith(f"slo-compiler: {message}"), stderr
    assert "cannot reach" not in stderr and stdout == ""


# -- diff: the base revision is history anyone could have committed to ------------------------------


def test_unbounded_work_diff_base_blob(tmp_path: Path, run_cli: RunCli) -> None:
    """A 3 MB file under the base's spec directory is refused from its size in git, before the archive is read
    (a 300 MB blob used to be held whole, twice: 633 MB); without it the base is read as before."""
    repo = tmp_path / "repo"
    specs = make_spec_tree(repo / "specs")

    def git(*args: str) -> str:
        done = subprocess.run(
            ["git", "-c", "user.name=t", "-c", "user.email=t@e", *args], cwd=repo, check=True, capture_output=True
        )
        return done.stdout.decode().strip()

    git("init", "-q", "-b", "main")
    (specs / "network" / "huge.yaml").write_bytes(b"# padding\n" * 300_000)
    git("add", "specs")
    git("commit", "-q", "-m", "base with a 3 MB file")
    with_blob = git("rev-parse", "HEAD")
    git("rm", "-q", "specs/network/huge.yaml")
    git("commit", "-q", "-m", "without it")
    code, out, err = run_cli(["diff", "--specs", "specs", "--base", with_blob, "--no-behaviour"], repo)
    assert (code, out) == (2, ""), err
    assert err == (
        f"slo-compiler: {with_blob}:specs/network/huge.yaml is 3,000,000 bytes, over the 2,097,152-byte limit of a "
        "spec file; the base cannot be read (pass --base-dir DIR with the base specs instead)\n"
    )
    code, out, err = run_cli(["diff", "--specs", "specs", "--base", "HEAD", "--no-behaviour"], repo)
    assert code == 0 and err == "", err
    assert "no spec changed; 1 unchanged" in out, out


def test_the_base_limit_matches_the_spec_file_limit() -> None:
    from compiler.review import base
    from compiler.source import load

    assert base.MAX_FILE_BYTES == load.MAX_FILE_BYTES
