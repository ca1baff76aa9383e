"""No traps (issue 11, item 6): each reproduction of the issue now fails safe, at its line, or works.

- a share of sums that share an input (``hits / (hits + misses)``) is derivable, and an
  expression that is not says why and what to write instead;
- a bound a gauge's unit can never cross (a ratio above 1, a non-negative value below 0) is
  an error at the bound, and no generated input is one a real series cannot have (more hits
  than requests, a counter running backwards);
- ``target: 0.999`` gets "did you mean 99.9%?" at the target;
- the output is the same whatever the working directory and the form of ``--specs``;
- declared buckets that contradict the catalogue are an error unless ``buckets_override``;
- ``persistence`` is needed only by a band without its own ``for``;
- the quick start (docs/getting-started.md) runs as written, the spec reference's annotated
  example is a valid spec with its required fields marked, and its SLI table lists only fields
  of each kind.

Specs are run through the CLI in-process (``compiler.cli.main``) with cwd at a temp tree;
the generated tests run in the real promtool.
"""

from __future__ import annotations

import contextlib
import io
import json
import os
import re
import shutil
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest
import yaml

from compiler.cli import main
from compiler.source.schema import SCHEMA_DIR
from tests.conftest import REPO_ROOT, SLO_RELATIVE, VALID_SLO, make_spec_tree
from tests.docs import page, section

SPEC = f"specs/{SLO_RELATIVE.as_posix()}"

SHARE = (
    "sum by (cluster) (rate(cache_hits_total[5m])) / (sum by (cluster) (rate(cache_hits_total[5m])) "
    "+ sum by (cluster) (rate(cache_misses_total[5m])))"
)
REST = (
    "(sum by (cluster) (rate(requests_total[5m])) - sum by (cluster) (rate(errors_total[5m]))) "
    "/ sum by (cluster) (rate(requests_total[5m]))"
)
HIT_RATIO = "sum by (cluster) (rate(hits_total[5m])) / sum by (cluster) (rate(requests_total[5m]))"


def gauge(expr: str, band: str, unit: str | None = "ratio", extra: str = "") -> str:
    """The valid spec of conftest as a gauge: sli on line 10, unit on 13, the band's first entry on 15."""
    head = VALID_SLO.split("sli:\n")[0]
    tail = "mitigation:" + VALID_SLO.split("mitigation:")[1]
    unit_line = f"unit: {unit}\n" if unit else "# no unit\n"
    return (
        f"{head}sli:\n  gauge:\n    expr: '{expr}'\n{unit_line}normal_range:\n  {band}\n"
        f"persistence:\n  for: 10m\n{tail}{extra}"
    )


def cli(args: list[str], cwd: Path) -> tuple[int, str, str]:
    """``main(args)`` run in ``cwd``: (exit code, stdout, stderr)."""
    previous = Path.cwd()
    err, out = io.StringIO(), io.StringIO()
    os.chdir(cwd)
    try:
        with contextlib.redirect_stderr(err), contextlib.redirect_stdout(out):
            code = main(args)
    finally:
        os.chdir(previous)
    assert "Traceback" not in err.getvalue() and "internal error" not in err.getvalue(), err.getvalue()
    return code, out.getvalue(), err.getvalue()


def tree(root: Path, spec: str) -> Path:
    make_spec_tree(root / "specs")
    (root / "specs" / SLO_RELATIVE).write_text(spec, encoding="utf-8")
    return root


def problems(root: Path, spec: str) -> list[str]:
    """The problems ``validate`` reports for ``spec`` (it must fail)."""
    code, _, stderr = cli(["validate", "--specs", "specs"], tree(root, spec))
    assert code == 1, stderr
    return [line for line in stderr.splitlines() if not line.startswith("slo-compiler: ")]


def generate(root: Path, spec: str) -> Path:
    """Generate ``spec`` into ``root/out``; the tests of the spec's alerts."""
    code, _, stderr = cli(["generate", "--specs", "specs", "--out", "out"], tree(root, spec))
    assert code == 0, stderr
    return root / "out" / "prometheus" / "tests" / "dns-errors.test.yaml"


def promtool_passes(test_file: Path) -> None:
    result = subprocess.run(
        ["promtool", "test", "rules", test_file.name],
        cwd=test_file.parent,
        capture_output=True,
        text=True,
        timeout=120,
        check=False,
    )
    assert result.returncode == 0, result.stdout + result.stderr


def expand(values: str) -> list[float | None]:
    """promtool's expanding notation (``0+60x3 12``, ``_x2``) as one value per minute."""
    found: list[float | None] = []
    for token in values.split():
        match = re.fullmatch(r"(_|[-+]?[0-9.e+-]+?)(?:([-+])([0-9.e+-]+))?(?:x([0-9]+))?", token)
        assert match, token
        start, sign, step, count = match.groups()
        if start == "_":
            found += [None] * int(count or 1)
            continue
        delta = float(step or 0) * (-1 if sign == "-" else 1)
        found += [float(start) + delta * i for i in range(int(count or 0) + 1)]
    return found


# -- shares of sums that share an input ---------------------------------------------------------------------


@pytest.mark.parametrize("expr", [SHARE, REST], ids=["hits-over-hits-plus-misses", "total-minus-errors-over-total"])
def test_share_of_sums_sharing_an_input_is_derivable(tmp_path: Path, expr: str) -> None:
    """``hits / (hits + misses)`` was refused ("cannot derive test inputs"); its tests now pass in promtool."""
    promtool_passes(generate(tmp_path, gauge(expr, "min: 0.8")))


def test_underivable_expression_says_why_and_what_to_write(tmp_path: Path) -> None:
    found = problems(tmp_path, gauge("sqrt(sum by (cluster) (workqueue_depth))", "max: 30", unit=None))
    assert len(found) == 1, found
    assert found[0].startswith(f"{SPEC}:10:1: cannot generate the promtool tests that prove its alerts: ")
    assert 'moves in proportion to none of its inputs (workqueue_depth{cluster="cluster-a",job="kube-dns"})' in found[0]
    assert "nor as a share of two of them (a / (a + b))" in found[0]
    assert "Write it so one input scales it" in found[0]


# -- bounds that can never be crossed, inputs no real series has ------------------------------------------


@pytest.mark.parametrize("bound", ["1", "1.5"])
def test_ratio_gauge_max_of_1_or_more_can_never_fire(tmp_path: Path, bound: str) -> None:
    """``max: 1`` on a ratio was accepted, and its test "proved" it by feeding more hits than requests."""
    found = problems(tmp_path, gauge(HIT_RATIO, f"max: {bound}"))
    assert found == [
        f"{SPEC}:15:8: normal_range.max {bound} can never be exceeded, so its alert can never fire: with unit: "
        "ratio the value is a share within 0..1; give a max below 1 (0.9 is 90%), or drop unit: ratio if the value "
        "is not a share"
    ]


@pytest.mark.parametrize("unit", ["per_second", "seconds", "bytes", "count", "ratio"])
def test_non_negative_gauge_min_of_0_can_never_fire(tmp_path: Path, unit: str) -> None:
    found = problems(tmp_path, gauge("sum by (cluster) (rate(requests_total[5m]))", "min: 0", unit=unit))
    assert found == [
        f"{SPEC}:15:8: normal_range.min 0 can never be undercut, so its alert can never fire: a value in unit "
        f"{unit} is never below 0; give a min above 0, or drop unit if the value can be negative"
    ]


def test_ratio_gauge_tests_never_feed_more_hits_than_requests(tmp_path: Path) -> None:
    """Just beyond max 0.95 used to be 1.045: 104.5 hits per 100 requests. Now at most 1, and every
    generated input has hits <= requests at every minute."""
    test_file = generate(tmp_path, gauge(HIT_RATIO, "max: 0.95"))
    document = yaml.safe_load(test_file.read_text(encoding="utf-8"))
    beyond = [re.search(r": ([0-9.]+) beyond the max", test["name"]) for test in document["tests"]]
    assert [float(match.group(1)) for match in beyond if match] == [1.0]
    compared = 0
    for test in document["tests"]:
        series = {item["series"]: expand(item["values"]) for item in test["input_series"]}
        for name, hits in series.items():
            if name.startswith("hits_total"):
                requests = series[name.replace("hits_total", "requests_total")]
                assert all(h is None or (r is not None and h <= r) for h, r in zip(hits, requests, strict=True)), test
                compared += 1
    assert compared >= 4
    promtool_passes(test_file)


def test_scenario_value_outside_a_ratio_gauge_is_an_error(tmp_path: Path) -> None:
    scenario = (
        "scenarios:\n  - name: overflow\n    shape:\n      - {for: 20m, value: 1.2}\n"
        "    expect:\n      - {alert: AboveNormalRange, fires_by: 20m}\n"
    )
    found = problems(tmp_path, gauge(HIT_RATIO, "max: 0.9", extra=scenario))
    assert found == [
        f"{SPEC}:28:27: value 1.2 is outside 0..1, which a gauge with unit: ratio never leaves (a share: no input "
        "has more hits than requests); give a value within 0..1"
    ]


def test_counter_is_never_fed_backwards_to_prove_a_bound(tmp_path: Path) -> None:
    """Without a unit the source cannot tell a rate is never negative; the proof refuses a counter run backwards."""
    found = problems(tmp_path, gauge("sum by (cluster) (rate(requests_total[5m]))", "min: 0", unit=None))
    assert len(found) == 1, found
    assert found[0].startswith(f"{SPEC}:10:1: cannot generate the promtool tests that prove its alerts: ")
    assert "no reachable value lies beyond the min 0 of DnsErrorsBelowNormalRange" in found[0]


# -- objectives written as a fraction -----------------------------------------------------------------------


def test_target_written_as_a_fraction_gets_did_you_mean(tmp_path: Path) -> None:
    """``target: 0.999`` was read as 0.999% and answered with "lower the factor or the target" at ``period:``."""
    found = problems(tmp_path, VALID_SLO.replace("target: 99.9%", "target: 0.999"))
    assert found == [
        f"{SPEC}:15:11: objective 0.999% is a budget of 99.001% errors: a bare number is read as a percentage; "
        "did you mean 99.9%? Write target: 99.9%"
    ]


def test_bare_percentage_of_1_or_more_is_still_a_percentage(tmp_path: Path) -> None:
    code, _, stderr = cli(["validate", "--specs", "specs"], tree(tmp_path, VALID_SLO.replace("99.9%", "99.9")))
    assert code == 0, stderr


# -- output independent of where it is run from ------------------------------------------------------------


def test_output_is_the_same_whatever_the_cwd_and_the_form_of_specs(tmp_path: Path) -> None:
    """Headers embedded ``--specs`` as given, so the output depended on where the specs lived."""
    make_spec_tree(tmp_path / "repo" / "slo_specs")
    elsewhere = tmp_path / "elsewhere"
    elsewhere.mkdir()
    specs = tmp_path / "repo" / "slo_specs"
    runs = [
        (tmp_path / "repo", ["--specs", "slo_specs"]),
        (tmp_path / "repo", ["--specs", "./slo_specs/"]),
        (tmp_path / "repo" / "slo_specs", ["--specs", "."]),
        (elsewhere, ["--specs", str(specs)]),
        (elsewhere, ["--specs", "../repo/slo_specs"]),
    ]
    trees = []
    for index, (cwd, specs_args) in enumerate(runs):
        out = tmp_path / f"out{index}"
        code, _, stderr = cli(["generate", *specs_args, "--out", str(out)], cwd)
        assert code == 0, stderr
        trees.append({p.relative_to(out).as_posix(): p.read_bytes() for p in sorted(out.rglob("*")) if p.is_file()})
    assert all(files == trees[0] for files in trees[1:])
    rules = trees[0]["prometheus/rules/dns-errors.rules.yaml"].decode()
    assert rules.startswith("# Generated by slo-compiler from slo_specs/network/dns-errors.yaml (spec dns-errors,")


def test_diagnostics_still_show_the_path_as_the_user_can_open_it(tmp_path: Path) -> None:
    make_spec_tree(tmp_path / "repo" / "slo_specs")
    spec = tmp_path / "repo" / "slo_specs" / SLO_RELATIVE
    spec.write_text(VALID_SLO.replace("30d", "30 days"), encoding="utf-8")
    (tmp_path / "elsewhere").mkdir()
    code, _, stderr = cli(["validate", "--specs", "../repo/slo_specs"], tmp_path / "elsewhere")
    assert code == 1
    assert stderr.startswith(f"../repo/slo_specs/{SLO_RELATIVE.as_posix()}:16:11: objective.period")


# -- declared buckets against the catalogue -----------------------------------------------------------------

LATENCY = VALID_SLO.replace(
    """  ratio:
    bad: 'coredns_dns_responses_total{rcode="SERVFAIL"}'
    total: coredns_dns_responses_total
""",
    "  latency:\n    histogram: coredns_dns_request_duration_seconds\n    threshold: 0.3\n    buckets: [0.1, 0.3, 1]\n",
)


def test_declared_buckets_that_contradict_the_catalogue_are_an_error(tmp_path: Path) -> None:
    """They silently replaced the built-in edges, so a threshold passed on edges the cluster does not have."""
    found = problems(tmp_path, LATENCY)
    assert len(found) == 1, found
    assert found[0].startswith(
        f"{SPEC}:14:14: buckets differ from the built-in catalogue's edges of coredns_dns_request_duration_seconds "
        "(not declared: 0.00025, 0.0005, 0.001,"
    )
    assert "; not in the catalogue: 0.1, 0.3, 1). Drop buckets to use the catalogue, or if" in found[0]
    assert found[0].endswith("set buckets_override: true next to them")


def test_buckets_override_makes_a_deliberate_difference_valid(tmp_path: Path) -> None:
    spec = LATENCY.replace("    buckets: [0.1, 0.3, 1]\n", "    buckets: [0.1, 0.3, 1]\n    buckets_override: true\n")
    code, _, stderr = cli(["validate", "--specs", "specs"], tree(tmp_path, spec))
    assert code == 0, stderr


def test_declared_buckets_equal_to_the_catalogue_need_no_override(tmp_path: Path) -> None:
    from compiler.model.buckets import KNOWN_BUCKETS

    edges = ", ".join(repr(edge) for edge in KNOWN_BUCKETS["coredns_dns_request_duration_seconds"])
    spec = LATENCY.replace("threshold: 0.3", "threshold: 0.256").replace("[0.1, 0.3, 1]", f"[{edges}]")
    code, _, stderr = cli(["validate", "--specs", "specs"], tree(tmp_path, spec))
    assert code == 0, stderr


def test_buckets_override_without_buckets_is_an_error(tmp_path: Path) -> None:
    spec = LATENCY.replace("    buckets: [0.1, 0.3, 1]\n", "    buckets_override: true\n").replace("0.3", "0.256")
    assert problems(tmp_path, spec) == [
        f"{SPEC}:14:5: buckets_override has no effect without buckets: declare the edges it overrides, or drop it"
    ]


# -- persistence only where it has an effect ----------------------------------------------------------------


def test_persistence_is_not_required_when_no_band_uses_it(tmp_path: Path) -> None:
    spec = VALID_SLO.replace("persistence:\n  for: 10m\n", "")
    code, _, stderr = cli(["validate", "--specs", "specs"], tree(tmp_path, spec))
    assert code == 0, stderr


def test_band_without_a_for_and_no_persistence_is_an_error_at_the_band(tmp_path: Path) -> None:
    spec = VALID_SLO.replace("persistence:\n  for: 10m\n", "normal_range:\n  max: 0.01\n")
    assert problems(tmp_path, spec) == [
        f"{SPEC}:17:1: normal_range has no for: how long the value may be out of range before its alert fires; add "
        "persistence: {for: 10m} (for every band) or normal_range.for"
    ]


def test_band_with_its_own_for_needs_no_persistence(tmp_path: Path) -> None:
    spec = VALID_SLO.replace("persistence:\n  for: 10m\n", "normal_range:\n  max: 0.01\n  for: 5m\n")
    code, _, stderr = cli(["validate", "--specs", "specs"], tree(tmp_path, spec))
    assert code == 0, stderr


# -- the manual (docs/) ------------------------------------------------------------------------------------


def test_quick_start_runs_as_written(tmp_path: Path) -> None:
    """From an empty directory its commands run as written (init, generate, test: the real promtool and amtool).

    ``pip install`` is the one line not run (the package is the checkout's, through a shim); every
    file the section shows is one ``init`` wrote, and every path its prose names is written.
    """
    blocks, prose = section("getting-started.md", "Quick start: a first team and spec")
    (commands,) = [text for info, text in blocks if info == "sh"]
    assert commands.startswith("pip install slo-compiler")
    commands = "\n".join(line for line in commands.splitlines() if not line.startswith("pip install"))
    shim = tmp_path / "bin" / "slo-compiler"
    shim.parent.mkdir()
    shim.write_text(f'#!/bin/sh\nexec {sys.executable} -m compiler "$@"\n', encoding="utf-8")
    shim.chmod(0o755)
    repo = tmp_path / "repo"
    repo.mkdir()
    env = {**os.environ, "PATH": f"{shim.parent}{os.pathsep}{os.environ['PATH']}", "PYTHONPATH": str(REPO_ROOT)}
    result = subprocess.run(
        ["bash", "-euo", "pipefail", "-c", commands], cwd=repo, env=env, capture_output=True, text=True, timeout=300
    )
    assert result.returncode == 0, result.stdout + result.stderr
    assert "slo-compiler: 4 promtool test file(s) passed, 14 routing case(s) passed" in result.stdout
    for info, text in blocks:
        if info == "yaml":
            shown = repo / text.splitlines()[0].removeprefix("# ").strip()
            assert shown.is_file(), shown
    written = re.findall(r"`(generated/[^`*<]+)`", prose)
    assert len(written) >= 6
    for path in written:
        assert (repo / path).is_file(), path
    rules = (repo / "generated/prometheus/rules/coredns-servfail.rules.yaml").read_text(encoding="utf-8")
    assert rules.count("alert: CorednsServfailErrorBudgetBurn") == 4 and "alert: CorednsServfailNoData" in rules


def _schema() -> dict[str, Any]:
    schema: dict[str, Any] = json.loads(SCHEMA_DIR.joinpath("slo.schema.json").read_text(encoding="utf-8"))
    return schema


def _node(schema: dict[str, Any], root: dict[str, Any], path: tuple[str, ...]) -> dict[str, Any]:
    """The schema of the mapping at ``path``, following $refs."""
    node = schema
    for part in ("", *path):
        if part:
            node = node["properties"][part]
        while "$ref" in node:
            node = root["$defs"][node["$ref"].rsplit("/", 1)[1]]
    return node


def _marked_required(text: str) -> dict[tuple[str, ...], set[str]]:
    """Per mapping path of the example, the keys whose comment says ``# required``."""
    marked: dict[tuple[str, ...], set[str]] = {}
    stack: list[tuple[int, str]] = []
    for line in text.splitlines():
        match = re.match(r"^( *)([a-z_A-Z]+):", line)
        if not match:
            continue
        indent, key = len(match.group(1)), match.group(2)
        while stack and stack[-1][0] >= indent:
            stack.pop()
        parent = tuple(name for _, name in stack)
        marked.setdefault(parent, set())
        if re.search(r"#\s*required\b", line):
            marked[parent].add(key)
        stack.append((indent, key))
    return marked


def _mappings(data: Any, path: tuple[str, ...] = ()) -> list[tuple[str, ...]]:
    found = [path] if isinstance(data, dict) else []
    for key, value in data.items() if isinstance(data, dict) else ():
        found += _mappings(value, (*path, key))
    return found


def test_annotated_example_is_valid_and_marks_exactly_the_required_fields(tmp_path: Path) -> None:
    blocks, _ = section("spec-reference.md", "The spec language")
    (example,) = [text for info, text in blocks if info == "yaml" and "kind: SLO" in text and "# required" in text]
    specs = tmp_path / "slo_specs"
    (specs / "api").mkdir(parents=True)
    for name in ("owners.yaml", "project.yaml"):
        shutil.copy(REPO_ROOT / "slo_specs" / name, specs / name)
    (specs / "api" / "example.yaml").write_text(example, encoding="utf-8")
    code, _, stderr = cli(["validate", "--specs", "slo_specs"], tmp_path)
    assert code == 0, stderr
    schema = _schema()
    marked = _marked_required(example)
    for path in _mappings(yaml.safe_load(example)):
        required = set(_node(schema, schema, path).get("required", []))
        assert marked.get(path, set()) == required, (path, marked.get(path), required)


def test_spec_reference_sli_table_lists_only_fields_of_each_kind() -> None:
    """It listed ``unit`` under gauge fields; unit is top-level, and ``sli.gauge.unit`` is a schema error."""
    schema = _schema()
    kinds = _node(schema, schema, ("sli",))["properties"]
    fields_anywhere = set(schema["properties"]) | {key for kind in kinds.values() for key in kind["properties"]}
    pattern = r"^\| `(" + "|".join(map(re.escape, kinds)) + r")` \| (.*?) \|"  # every kind the schema has
    rows = re.findall(pattern, page("spec-reference.md"), re.M)
    assert {kind for kind, _ in rows} == set(kinds)
    for kind, cell in rows:
        named = set(re.findall(r"`([a-z_]+)`", cell)) & fields_anywhere
        assert named <= set(kinds[kind]["properties"]), (kind, named - set(kinds[kind]["properties"]))
