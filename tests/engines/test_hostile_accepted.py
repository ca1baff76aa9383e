"""Careless specs the compiler used to accept (issue 17): every one is now refused at the value at fault, or
compiles to rules that promtool and the real Prometheus accept and whose generated tests pass.

Two classes:

- accepted specs whose output Prometheus rejected or whose generated tests failed (a 0d period, a 0s no-data
  wait, a rate over 1s, an offset or a partial rate window in a gauge, nested subqueries, keep_firing_for on a
  burn pair, a scenario waiting for NoData, duplicate burn pairs, a year-long scenario, a state expression
  with no label telling its units apart);
- alerts that were wrong by construction (a +Inf latency threshold, `when` thresholds that leave series out
  or share them, bad events outside the total, relative factors on the wrong side of 1, bounds that can never
  be crossed, a burn `for` longer than its window, a critical band inside the normal one, a matcher on `le`).

Errors are asserted with their exact line and column, in-process through the CLI's ``main`` (exit code and
stderr). The specs that compile are generated once, then checked together: one ``promtool check rules
--lint=all --lint-fatal``, one ``promtool test rules`` over every generated test file (and extra calm-case
checks), and one real Prometheus that must load and evaluate every rule file.
"""

from __future__ import annotations

import contextlib
import io
import os
import re
import subprocess
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest
import yaml

from compiler.cli import main
from compiler.promql import parse_duration
from tests import servers
from tests.conftest import SLO_RELATIVE, VALID_SLO, make_spec_tree

SPEC = f"specs/{SLO_RELATIVE.as_posix()}"

# -- spec texts: variants of the valid spec (tests/conftest.py), whose layout fixes the line numbers -------

RATIO = """\
  ratio:
    bad: 'coredns_dns_responses_total{rcode="SERVFAIL"}'
    total: coredns_dns_responses_total
"""
ONE_PAGE_PAIR = "    - {severity: page, long: 1h, short: 5m, factor: 10, for: 2m}\n"


def _replace(old: str, new: str, text: str = VALID_SLO) -> str:
    assert old in text, old
    return text.replace(old, new, 1)


def burn_alerts(lines: str, period: str = "30d", text: str = VALID_SLO) -> str:
    """The valid spec with its own burn policy; the first pair is on line 18."""
    return _replace("  period: 30d\n", f"  period: {period}\n  burn_alerts:\n{lines}", text)


def gauge(expr: str, range_line: str) -> str:
    """A gauge spec: expr on line 12, the normal range's first entry on line 14."""
    head = VALID_SLO.split("sli:\n")[0]
    tail = "mitigation:" + VALID_SLO.split("mitigation:")[1]
    return f"{head}sli:\n  gauge:\n    expr: '{expr}'\nnormal_range:\n  {range_line}\npersistence:\n  for: 10m\n{tail}"


def latency(threshold: str, extra: str = "") -> str:
    """A latency spec: the threshold on line 13, ``extra`` from line 14."""
    body = f"  latency:\n    histogram: apiserver_request_sli_duration_seconds\n    threshold: {threshold}\n{extra}"
    return _replace(RATIO, body)


def state(expr: str) -> str:
    return burn_alerts(ONE_PAGE_PAIR, text=_replace(RATIO, f"  state:\n    expr: '{expr}'\n"))


# -- running the CLI in-process --------------------------------------------------------------------------


def _cli(args: list[str], cwd: Path) -> tuple[int, str]:
    """``main(args)`` run in ``cwd``: (exit code, stderr)."""
    previous = Path.cwd()
    err, out = io.StringIO(), io.StringIO()
    os.chdir(cwd)
    try:
        with contextlib.redirect_stderr(err), contextlib.redirect_stdout(out):
            code = main(args)
    finally:
        os.chdir(previous)
    return code, err.getvalue()


def _tree(root: Path, spec: str) -> Path:
    make_spec_tree(root / "specs")
    (root / "specs" / SLO_RELATIVE).write_text(spec, encoding="utf-8")
    return root


def assert_problems(tmp_path: Path, spec: str, *expected: tuple[int, int, str]) -> None:
    """validate exits 1 with exactly these problems: (line, column, text the message contains)."""
    code, stderr = _cli(["validate", "--specs", "specs"], _tree(tmp_path, spec))
    assert code == 1, stderr
    assert "Traceback" not in stderr and "internal error" not in stderr
    problems = [line for line in stderr.splitlines() if line.startswith(f"{SPEC}:")]
    assert len(problems) == len(expected), stderr
    for (line, column, text), problem in zip(sorted(expected), problems, strict=True):
        assert problem.startswith(f"{SPEC}:{line}:{column}: "), stderr
        assert text in problem, problem


# -- class 1: accepted specs whose output was rejected, now refused -----------------------------------------


def test_accepted_period_0d_with_custom_burn_alerts_is_error(tmp_path: Path) -> None:
    spec = burn_alerts(ONE_PAGE_PAIR, period="0d")
    assert_problems(tmp_path, spec, (16, 11, "objective.period 0d is empty: a budget needs a period of at least 1d"))


def test_accepted_no_data_for_0s_is_error(tmp_path: Path) -> None:
    assert_problems(tmp_path, VALID_SLO + "no_data: {for: 0s}\n", (26, 16, "no_data.for must be positive"))


def test_accepted_rate_over_1s_at_1m_interval_is_error(tmp_path: Path) -> None:
    spec = gauge("sum by (cluster) (rate(x_total[1s]))", "max: 100")
    assert_problems(tmp_path, spec, (12, 11, "rate() over 1s is shorter than twice the evaluation interval (1m)"))


def test_accepted_two_identical_burn_pairs_is_error_naming_the_first(tmp_path: Path) -> None:
    spec = burn_alerts(ONE_PAGE_PAIR + ONE_PAGE_PAIR)
    assert_problems(tmp_path, spec, (19, 7, "this burn alert repeats objective.burn_alerts[0]"))


def test_accepted_burn_window_of_0_is_error(tmp_path: Path) -> None:
    spec = burn_alerts("    - {severity: page, long: 1h, short: 0m, factor: 10, for: 2m}\n")
    assert_problems(tmp_path, spec, (18, 41, "the short window must be a positive multiple of 5m, not 0s"))


def test_accepted_365d_scenario_is_error(tmp_path: Path) -> None:
    spec = VALID_SLO + (
        "scenarios:\n  - name: year\n    shape:\n      - {for: 365d, error_ratio: 0}\n"
        "    expect:\n      - {nothing_fires_until: 365d}\n"
    )
    assert_problems(tmp_path, spec, (29, 15, "scenario 'year' runs past 1d here"))


# -- class 2: alerts wrong by construction, now refused ------------------------------------------------------


def test_wrong_latency_threshold_inf_is_error(tmp_path: Path) -> None:
    spec = latency(".inf", "    buckets: [0.1, 1, .inf]\n")
    assert_problems(
        tmp_path,
        spec,
        (13, 16, "sli.latency.threshold: .inf is not a finite number"),
        (14, 23, "sli.latency.buckets[2]: .inf is not a finite number"),
    )


def test_wrong_latency_when_thresholds_leaving_series_uncovered_is_error(tmp_path: Path) -> None:
    # Cluster-scope LISTs are forgotten: they would read 100% slow.
    spec = latency("""
      - {when: '{scope=~"resource|"}', le: 1}
      - {when: '{scope="namespace"}', le: 30}""")
    assert_problems(
        tmp_path,
        spec,
        (14, 7, 'leave series with scope other than "resource", "namespace" uncovered'),
    )


def test_wrong_latency_when_thresholds_overlapping_is_error(tmp_path: Path) -> None:
    spec = latency("""
      - {when: '{scope=~"resource|namespace|"}', le: 1}
      - {when: '{scope!~"resource|"}', le: 30}""")
    assert_problems(
        tmp_path, spec, (15, 16, 'threshold[1].when overlaps threshold[0].when on series with scope="namespace"')
    )


def test_wrong_ratio_bad_outside_total_is_error(tmp_path: Path) -> None:
    spec = _replace("total: coredns_dns_responses_total", "total: 'coredns_dns_responses_total{rcode=\"NOERROR\"}'")
    assert_problems(
        tmp_path,
        spec,
        (12, 10, 'sli.ratio.bad selects coredns_dns_responses_total series (job="kube-dns", rcode="SERVFAIL") that'),
    )


def test_wrong_relative_max_factor_below_1_is_error(tmp_path: Path) -> None:
    spec = gauge("sum by (cluster) (x)", "relative: {offset: 1h, max_factor: 0.5}")
    assert_problems(tmp_path, spec, (14, 38, "max_factor 0.5 must be above 1"))


def test_wrong_relative_min_factor_above_1_is_error(tmp_path: Path) -> None:
    spec = gauge("sum by (cluster) (x)", "relative: {offset: 1h, min_factor: 2}")
    assert_problems(tmp_path, spec, (14, 38, "min_factor 2 must be below 1"))


@pytest.mark.parametrize(
    ("range_line", "column", "text"),
    [
        ("max: .inf", 8, "normal_range.max: .inf is not a finite number"),
        ("relative: {offset: 1h, max_factor: .nan}", 38, "relative.max_factor: .nan is not a finite number"),
        ("relative: {offset: 1h, max_factor: 2, floor: .inf}", 48, "normal_range.relative.floor: .inf is not a finite"),
    ],
)
def test_wrong_alert_that_can_never_fire_is_error(tmp_path: Path, range_line: str, column: int, text: str) -> None:
    assert_problems(tmp_path, gauge("sum by (cluster) (x)", range_line), (14, column, text))


def with_range(range_flow: str, text: str = VALID_SLO) -> str:
    """The valid spec with ``normal_range: <range_flow>`` on line 17."""
    return _replace("persistence:", f"normal_range: {range_flow}\npersistence:", text)


@pytest.mark.parametrize(
    ("range_flow", "column", "text"),
    [
        ("{max: 1}", 21, "normal_range.max 1 can never be exceeded: this SLI's value is an error ratio"),
        ("{min: 0}", 21, "normal_range.min 0 can never be undercut"),
        ("{relative: {offset: 1h, max_factor: 2, floor: 1}}", 61, "normal_range.relative.floor 1 can never be"),
    ],
)
def test_wrong_error_ratio_bound_that_can_never_be_crossed_is_error(
    tmp_path: Path, range_flow: str, column: int, text: str
) -> None:
    assert_problems(tmp_path, with_range(range_flow), (17, column, text))


def test_wrong_quantile_min_under_the_lowest_quantile_is_error(tmp_path: Path) -> None:
    body = "  quantile:\n    histogram: apiserver_request_sli_duration_seconds\n    quantile: 0.99\n"
    spec = _replace("objective:\n  target: 99.9%\n  period: 30d\n", "", _replace(RATIO, body))
    assert_problems(
        tmp_path,
        with_range("{min: 0.0001, max: 1}", spec),
        (14, 21, "normal_range.min 0.0001 can never be undercut: the 0.99 quantile of "),
    )


def test_wrong_alert_without_a_provable_firing_test_is_not_shipped(tmp_path: Path) -> None:
    # One state per slice reads 0% or 100% bad: "twice the value an hour ago" is only ever crossed from 0, which
    # no input proves as a relative move. Before, the alert shipped with its firing test silently dropped.
    expr = 'min by (cluster) (kube_node_status_condition{condition="Ready",status="true"})'
    spec = with_range("{relative: {offset: 1h, max_factor: 2}}", state(expr))
    assert_problems(
        tmp_path,
        spec,
        (
            10,
            1,
            "cannot generate the promtool tests that prove its alerts: no reachable values move past the "
            "relative bound of DnsErrorsAboveNormalRange",
        ),
    )


def test_wrong_burn_for_longer_than_long_window_is_error(tmp_path: Path) -> None:
    spec = burn_alerts("    - {severity: page, long: 1h, short: 5m, factor: 10, for: 2h}\n")
    assert_problems(tmp_path, spec, (18, 62, "for 2h is longer than the long window 1h"))


def test_wrong_critical_range_narrower_than_normal_is_error(tmp_path: Path) -> None:
    spec = gauge("sum by (cluster) (x)", "max: 100\ncritical_range:\n  max: 50")
    assert_problems(tmp_path, spec, (16, 8, "critical_range.max 50 is not above normal_range.max 100"))


@pytest.mark.parametrize("kind", ["latency", "quantile"])
def test_wrong_selector_on_le_is_error(tmp_path: Path, kind: str) -> None:
    if kind == "latency":
        spec = latency("1", "    selector: '{le=\"1\"}'\n")
    else:
        body = "  quantile:\n    histogram: apiserver_request_sli_duration_seconds\n    quantile: 0.99\n"
        spec = _replace(RATIO, body + "    selector: '{le=\"1\"}'\n")
        spec = _replace("objective:\n  target: 99.9%\n  period: 30d\n", "normal_range: {max: 1}\n", spec)
    assert_problems(tmp_path, spec, (14, 15, f"sli.{kind}.selector must not match on 'le'"))


# -- class 1: accepted specs whose tests failed, now correct output ------------------------------------------

# case -> (spec, minute from which the calm case must show nothing pending or firing, or None)
OUTPUT_CASES: dict[str, tuple[str, int | None]] = {
    "keep-firing-for-on-burn-pair": (
        burn_alerts("    - {severity: page, long: 1h, short: 5m, factor: 10, for: 2m, keep_firing_for: 1h}\n"),
        None,
    ),
    # The value exists from 1h (inputs start at 0): before, NoData fired in the calm case.
    "gauge-offset-1h": (gauge("sum by (cluster) (x offset 1h)", "max: 100"), 60),
    # rate() over 5m builds up over its first window: before, the lower bound pended in "just inside".
    "gauge-rate-min-1": (gauge("sum by (cluster) (rate(x_total[5m]))", "min: 1"), 5),
    "nested-max-over-time-subqueries": (
        gauge("max_over_time(max_over_time(sum by (cluster) (x)[5m:1m])[5m:1m])", "max: 100"),
        None,
    ),
    "scenario-expecting-no-data": (
        burn_alerts(ONE_PAGE_PAIR)
        + "scenarios:\n  - name: scrape-breaks\n    shape:\n      - {for: 10m, error_ratio: 0}\n"
        "      - {for: 30m, gap: true}\n    expect:\n      - {alert: NoData, fires_by: 40m}\n",
        None,
    ),
    "burn-pairs-sharing-windows": (
        burn_alerts(
            "    - {severity: page, long: 1h, short: 5m, factor: 14.4, for: 2m}\n"
            "    - {severity: ticket, long: 1h, short: 5m, factor: 6, for: 5m}\n"
        ),
        None,
    ),
    # Nothing in the spec names the label that tells nodes apart: the 100 test units were identical series.
    "state-without-unit-label": (state('kube_node_status_condition{condition="Ready",status="true"}'), None),
    # An offset delays every change of the state: the recovery checks waited too little.
    "state-offset-10m": (
        state('kube_node_status_condition{condition="Ready",status="true"} offset 10m'),
        None,
    ),
    # Little room between the floor and 100% errors: the firing test was dropped, now a smaller move proves it.
    "ratio-relative-bound-near-100-percent": (
        burn_alerts(ONE_PAGE_PAIR, text=with_range("{relative: {offset: 1h, max_factor: 2, floor: 0.9}}")),
        None,
    ),
    "state-aggregated-per-slice": (
        state('min by (cluster) (kube_node_status_condition{condition="Ready",status="true"})'),
        None,
    ),
}


def _calm_group(test_file: Path) -> tuple[dict[str, Any], dict[str, Any], int]:
    """(the test file's data, its generated calm case, the last minute that case checks)."""
    data: dict[str, Any] = yaml.safe_load(test_file.read_text(encoding="utf-8"))
    calm = next(group for group in data["tests"] if group["name"].startswith("calm baseline"))
    horizon = max(parse_duration(check["eval_time"]) or 0 for check in calm["promql_expr_test"]) // 60_000
    return data, calm, horizon


def _calm_check(test_file: Path, since: int) -> Path:
    """A test file holding the generated calm case, asserting that nothing is pending or firing after ``since``."""
    data, calm, horizon = _calm_group(test_file)
    calm["name"] = f"calm, after the first {since}m: nothing pending or firing"
    calm["promql_expr_test"] = [
        {
            "expr": f'max_over_time(ALERTS{{slo="dns-errors"}}[{max(horizon - since, 1)}m])',
            "eval_time": f"{horizon}m",
            "exp_samples": [],
        }
    ]
    data["tests"] = [calm]
    path = test_file.with_name("calm-quiet.test.yaml")
    path.write_text(yaml.safe_dump(data, sort_keys=False), encoding="utf-8")
    return path


@pytest.fixture(scope="module")
def generated(tmp_path_factory: pytest.TempPathFactory) -> dict[str, tuple[Path, str]]:
    """Each output case generated into its own tree: case -> (its output directory, problems reported)."""
    result = {}
    for case, (spec, _) in OUTPUT_CASES.items():
        root = _tree(tmp_path_factory.mktemp(case), spec)
        code, stderr = _cli(["generate", "--specs", "specs", "--out", "out"], root)
        result[case] = (root / "out", "" if code == 0 else f"exit {code}: {stderr}")
    return result


@pytest.fixture(scope="module")
def outputs(generated: dict[str, tuple[Path, str]]) -> dict[str, Path]:
    """The output directories of the cases that generated."""
    return {case: out for case, (out, problems) in generated.items() if not problems}


def _sections(output: str) -> dict[str, str]:
    """promtool test rules output (stdout and stderr merged) split per test file."""
    parts = re.split(r"^Unit Testing:\s+(\S+)$", output, flags=re.MULTILINE)
    return {parts[i]: parts[i + 1] for i in range(1, len(parts) - 1, 2)}


@dataclass
class Checked:
    """What promtool said about one case: ``check rules`` (exit code, output) and each test file's section."""

    check_code: int
    check_output: str
    tests: dict[Path, str]


@pytest.fixture(scope="module")
def promtool_results(outputs: dict[str, Path]) -> dict[str, Checked]:
    """Every case checked with ``promtool check rules`` in one run, and tested with ``promtool test rules`` in one."""
    rule_files = {case: next((out / "prometheus" / "rules").glob("*.rules.yaml")) for case, out in outputs.items()}
    test_files: dict[str, list[Path]] = {}
    for case, out in outputs.items():
        generated = next((out / "prometheus" / "tests").glob("*.test.yaml"))
        since = OUTPUT_CASES[case][1]
        test_files[case] = [generated] + ([_calm_check(generated, since)] if since is not None else [])
    every_test = [path for paths in test_files.values() for path in paths]
    tested = subprocess.run(
        ["promtool", "test", "rules", *map(str, every_test)],
        stdout=subprocess.PIPE,
        stderr=subprocess.STDOUT,
        text=True,
        timeout=300,
        check=False,
    )
    sections = _sections(tested.stdout)
    results = {}
    for case, path in rule_files.items():
        check = subprocess.run(
            ["promtool", "check", "rules", "--lint=all", "--lint-fatal", str(path)],
            capture_output=True,
            text=True,
            timeout=60,
            check=False,
        )
        found = {test: sections.get(str(test), "missing from promtool's output") for test in test_files[case]}
        results[case] = Checked(check.returncode, check.stdout + check.stderr, found)
    return results


@pytest.fixture(scope="module")
def passes(generated: dict[str, tuple[Path, str]], promtool_results: dict[str, Checked]) -> Callable[[str], None]:
    """Assert that a case generated, its rules pass the lint and its tests (and calm checks) pass promtool."""

    def check(case: str) -> None:
        assert generated[case][1] == ""
        result = promtool_results[case]
        assert result.check_code == 0 and "SUCCESS" in result.check_output, result.check_output
        since = OUTPUT_CASES[case][1]
        assert len(result.tests) == (1 if since is None else 2)
        if since is not None:  # the calm case runs well past the first, partial minutes
            assert _calm_group(next(iter(result.tests)))[2] > since + 5
        for path, section in result.tests.items():
            assert "SUCCESS" in section and "FAILED" not in section, f"{path.name}: {section[-4000:]}"

    return check


def _read(outputs: dict[str, Path], case: str, kind: str) -> Any:
    """The case's generated rules or tests, parsed."""
    return yaml.safe_load(next((outputs[case] / "prometheus" / kind).glob("*.yaml")).read_text(encoding="utf-8"))


def test_accepted_keep_firing_for_on_a_burn_pair_works(passes: Callable[[str], None], outputs: dict[str, Path]) -> None:
    passes("keep-firing-for-on-burn-pair")
    rules = _read(outputs, "keep-firing-for-on-burn-pair", "rules")["groups"][0]["rules"]
    burn = [rule for rule in rules if rule.get("alert", "").endswith("ErrorBudgetBurn")]
    assert [rule.get("keep_firing_for") for rule in burn] == ["1h"]


def test_accepted_gauge_using_offset_1h_works_and_is_calm(passes: Callable[[str], None]) -> None:
    passes("gauge-offset-1h")


def test_accepted_gauge_rate_with_min_works_and_is_calm(passes: Callable[[str], None]) -> None:
    passes("gauge-rate-min-1")


def test_accepted_nested_max_over_time_subqueries_work(passes: Callable[[str], None]) -> None:
    passes("nested-max-over-time-subqueries")


def test_accepted_scenario_expecting_no_data_fires_by_works(
    passes: Callable[[str], None], outputs: dict[str, Path]
) -> None:
    passes("scenario-expecting-no-data")
    scenario = _read(outputs, "scenario-expecting-no-data", "tests")["tests"][-1]
    exprs = [check["expr"] for check in scenario["promql_expr_test"]]
    assert 'max(max_over_time(ALERTS{alertname="DnsErrorsNoData",alertstate="firing"}[40m]))' in exprs


def test_accepted_burn_pairs_sharing_windows_work(passes: Callable[[str], None]) -> None:
    passes("burn-pairs-sharing-windows")


def test_accepted_state_without_per_unit_label_works(passes: Callable[[str], None], outputs: dict[str, Path]) -> None:
    passes("state-without-unit-label")
    calm = _read(outputs, "state-without-unit-label", "tests")["tests"][0]
    units = [item["series"] for item in calm["input_series"] if 'cluster="cluster-a"' in item["series"]]
    assert len(units) == 100 and len(set(units)) == 100


def test_accepted_state_aggregated_per_slice_works(passes: Callable[[str], None]) -> None:
    passes("state-aggregated-per-slice")


def test_accepted_state_using_offset_works(passes: Callable[[str], None]) -> None:
    passes("state-offset-10m")


def test_accepted_relative_bound_near_100_percent_errors_is_proven_firing(
    passes: Callable[[str], None], outputs: dict[str, Path]
) -> None:
    passes("ratio-relative-bound-near-100-percent")
    names = [group["name"] for group in _read(outputs, "ratio-relative-bound-near-100-percent", "tests")["tests"]]
    assert any(name.startswith("DnsErrorsAboveNormalRange: the value rises from") for name in names), names


def _fast_rules(outputs: dict[str, Path], workdir: Path) -> list[Path]:
    """The cases' rule files evaluated every second, so a real Prometheus evaluates each group at once."""
    copies = []
    for case, out in outputs.items():
        data = yaml.safe_load(next((out / "prometheus" / "rules").glob("*.yaml")).read_text(encoding="utf-8"))
        for group in data["groups"]:
            group["interval"] = "1s"
        copy = workdir / f"{case}.rules.yaml"
        copy.write_text(yaml.safe_dump(data, sort_keys=False), encoding="utf-8")
        copies.append(copy)
    return copies


def test_accepted_specs_load_and_evaluate_in_the_real_prometheus(outputs: dict[str, Path], tmp_path: Path) -> None:
    blocks = tmp_path / "tsdb"
    blocks.mkdir()
    rule_files = _fast_rules(outputs, tmp_path)
    with servers.prometheus(tmp_path, rule_files, None, blocks) as prom:

        def evaluated() -> bool:
            groups = prom.rule_groups()
            rules = [rule for group in groups for rule in group["rules"]]
            return len(groups) == len(OUTPUT_CASES) and all(r["lastEvaluation"] > "2000" for r in rules)

        assert servers.wait_until(evaluated, 30)
        for group in prom.rule_groups():
            for rule in group["rules"]:
                assert rule["health"] == "ok", (group["file"], rule["name"], rule.get("lastError"))
