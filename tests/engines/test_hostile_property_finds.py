"""What the property test (tests/engines/test_property.py) found (issue 17), each reduced to the smallest spec.

Every case was accepted and its generated promtool tests failed. Each now either compiles to tests that
pass (checked with the real promtool: the cases are generated once and tested in one run) or is refused
with a positioned error.

- a burn threshold near 100% errors (95% target, factor 14.4): the full-outage test claimed the long
  window still read over the threshold when the short one cleared; both clear together;
- two burn pairs on the same windows with different ``for``: the full-outage test kept one pair's timing
  for both;
- an event SLI whose normal range has a lower bound (1% bad): the calm slice ran at 0% in the burn-rate,
  outage and zero-traffic tests, and breached it; a state SLI's calm slice had four units, so even the
  calm baseline's 1% rounded to 0;
- a burn pair of a state SLI with ``keep_firing_for``: its 5m window reads the units directly, so it clears
  (and the alert resolves) up to 4 minutes before the simulated averaged window, which the test assumed;
- a join that attaches a label it also matches on: PromQL refuses the rules (refused);
- error ratios under 1e-9 (a bound of 1e-300, a target of 99.9999999999%) on a latency SLI: bad events are
  total minus good, which floating point rounds to 0 (refused; 1e-9 and 99.99999% work);
- a gauge that scales its input by 5e-324: the inputs the tests needed overflowed to +Inf, written as
  ``infx8``, which promtool cannot parse (refused: no test can drive it);
- a bound of 1e300 seconds: Prometheus shows durations in int64 seconds, which overflow (differently on
  amd64 and arm64), so the expected alert text could not match (refused from 1e15 s);
- relative bounds: an offset no longer than ``for`` plus the time a change takes to show cannot be shown
  to fire (refused); a move that shows at once (``max_over_time``, a quantile) fired at the minute the test
  expected it pending; a gauge whose ``rate()`` builds up over its first window tripped its relative upper
  bound ``offset`` later;
- ``absent_as_zero_while`` (after the port to the new layout): ``rate(up[1s])`` was accepted, though the
  rate check refuses it in ``expr``, and read nothing, so no-data fired where the test expected a 0
  (refused); an offset in it delays the 0, and no-data pended in the test's first minutes (the test now
  judges from the presence's first value); one that reads 0 while targets are up (``changes(up[1m])``)
  can never tell up from down (refused); one over a counter was fed a flat gauge, whose rate is 0 (the
  test now feeds a counter);
- the traffic-guard trickle sized by the fastest pair's guard: another pair of the same alert name with a
  budget share under 1x burn (a smaller guard) pended on it (the trickle is now sized by the smallest).
"""

from __future__ import annotations

import contextlib
import io
import os
import re
import subprocess
from pathlib import Path

import pytest

from compiler.cli import main
from tests.conftest import RATIO_SLI_AND_OBJECTIVE, SLO_RELATIVE, VALID_SLO, make_spec_tree

SPEC = f"specs/{SLO_RELATIVE.as_posix()}"
PERIOD = "  target: 99.9%\n  period: 30d\n"


def burn_alerts(target: str, lines: str) -> str:
    """The valid spec with another target and its own burn policy."""
    return VALID_SLO.replace(PERIOD, f"  target: {target}\n  period: 28d\n  burn_alerts:\n{lines}")


def ranged(sli: str, band: str, persistence_for: str = "5m") -> str:
    """A spec of ``sli`` (lines from 10) judged against ``band``, the normal range's first line (line 14)."""
    spec = VALID_SLO.replace(RATIO_SLI_AND_OBJECTIVE, f"sli:\n{sli}normal_range:\n  {band}\n")
    return spec.replace("  for: 10m\n", f"  for: {persistence_for}\n")


def gauge(expr: str, band: str) -> str:
    return ranged(f"  gauge:\n    expr: '{expr}'\n", band)


QUANTILE = "  quantile:\n    histogram: etcd_disk_wal_fsync_duration_seconds\n    quantile: 0.99\n"


def quantile(band: str) -> str:
    """A quantile spec: ``max: 1`` on line 15, then ``band``."""
    return ranged(QUANTILE, f"max: 1\n  {band}")


LATENCY = "  latency:\n    histogram: apiserver_request_sli_duration_seconds\n    threshold: 1\n"


def latency_spec(target: str, band: str = "") -> str:
    """The valid spec as a latency SLI (bad events = total - good): target on line 15, ``band`` on line 20."""
    spec = burn_alerts(target, "    - {severity: page, long: 1h, short: 5m, factor: 10, for: 2m}\n")
    spec = spec.replace(RATIO_SLI_AND_OBJECTIVE.split("objective:")[0], f"sli:\n{LATENCY}")
    return spec.replace("persistence:", f"normal_range:\n  {band}\npersistence:") if band else spec


def absent_as_zero(presence: str) -> str:
    """A "must be zero" gauge over a counter created on its first event: ``presence`` on line 13, column 27."""
    expr = "    expr: 'sum by (cluster) (rate(x_total[5m]))'\n"
    spec = gauge("sum by (cluster) (rate(x_total[5m]))", "max: 0")
    return spec.replace(expr, f"{expr}    absent_as_zero_while: '{presence}'\n")


def _cli(args: list[str], cwd: Path) -> tuple[int, str]:
    previous = Path.cwd()
    err = io.StringIO()
    os.chdir(cwd)
    try:
        with contextlib.redirect_stderr(err), contextlib.redirect_stdout(io.StringIO()):
            code = main(args)
    finally:
        os.chdir(previous)
    return code, err.getvalue()


def _tree(root: Path, spec: str) -> Path:
    make_spec_tree(root / "specs")
    (root / "specs" / SLO_RELATIVE).write_text(spec, encoding="utf-8")
    return root


# case -> the spec, accepted before, whose generated tests failed
OUTPUT_CASES: dict[str, str] = {
    "burn-threshold-near-100-percent": burn_alerts(
        "95%", "    - {severity: page, long: 30m, short: 5m, factor: 14.4, for: 1m}\n"
    ),
    "burn-pairs-sharing-windows-with-other-for": burn_alerts(
        "95%",
        "    - {severity: ticket, long: 1h, short: 5m, factor: 3}\n"
        "    - {severity: page, long: 1h, short: 5m, factor: 10, for: 2m}\n",
    ),
    "relative-max-over-time-shows-at-once": gauge(
        "max_over_time(sum by (cluster) (x)[5m:1m])", "relative: {offset: 30m, max_factor: 2}"
    ),
    "relative-quantile-shows-at-once": quantile("relative: {offset: 11m, max_factor: 1.5}"),
    "relative-rate-warm-up": gauge("sum by (cluster) (rate(x_total[5m]))", "relative: {offset: 1h, max_factor: 2}"),
    "ratio-with-a-lower-bound-on-the-bad-share": burn_alerts(
        "95%", "    - {severity: page, long: 1h, short: 5m, factor: 10, for: 2m}\n"
    ).replace("persistence:", "normal_range:\n  min: 0.01\npersistence:"),
    "state-with-a-lower-bound-on-the-bad-share": ranged(
        '  state:\n    expr: \'kube_node_status_condition{condition="Ready",status="true"}\'\n'
        "objective:\n  target: 99.5%\n  period: 7d\n  burn_alerts:\n"
        "    - {severity: ticket, long: 1h, short: 5m, budget_share: 2%}\n",
        "min: 0.01",
        persistence_for="1m",
    ),
    "state-burn-pair-held-by-keep-firing-for": burn_alerts(
        "99%", "    - {severity: page, long: 1h, short: 5m, factor: 1, for: 2m, keep_firing_for: 10m}\n"
    ).replace(RATIO_SLI_AND_OBJECTIVE.split("objective:")[0], "sli:\n  state:\n    expr: 'up{instance=~\".+\"}'\n"),
    "latency-bound-and-target-at-the-smallest-error-ratio": latency_spec("99.99999%", "max: 1e-9"),
    "absent-as-zero-presence-with-an-offset": absent_as_zero("up offset 5m"),
    "absent-as-zero-presence-with-a-long-offset": absent_as_zero("up offset 1h"),
    "absent-as-zero-presence-reading-a-counter": absent_as_zero("rate(process_cpu_seconds_total[5m]) > 0"),
    # The trickle case was sized by the fastest pair's traffic guard; a pair of the same name whose budget
    # share is under 1x burn has a smaller guard, and pended on the trickle.
    "trickle-under-a-pair-with-a-smaller-guard": burn_alerts(
        "99.9%",
        "    - {severity: ticket, long: 1h, short: 5m, factor: 3, keep_firing_for: 1m}\n"
        "    - {severity: ticket, long: 1h, short: 10m, budget_share: 1%, for: 5m}\n"
        "    - {severity: info, long: 1h, short: 5m, factor: 2, keep_firing_for: 1m}\n",
    ).replace("period: 28d", "period: 1d"),
    "duration-bound-just-under-the-limit": gauge("sum by (cluster) (x)", "max: 9e14").replace(
        "normal_range:", "unit: seconds\nnormal_range:"
    ),
}


@pytest.fixture(scope="module")
def tested(tmp_path_factory: pytest.TempPathFactory) -> dict[str, str]:
    """Each case generated, then all their tests run in one promtool call: case -> its section of the output
    (or why it did not generate)."""
    test_files = {}
    results = {}
    for case, spec in OUTPUT_CASES.items():
        root = _tree(tmp_path_factory.mktemp(case), spec)
        code, stderr = _cli(["generate", "--specs", "specs", "--out", "out"], root)
        if code:
            results[case] = f"exit {code}: {stderr}"
        else:
            test_files[case] = root / "out" / "prometheus" / "tests" / "dns-errors.test.yaml"
    run = subprocess.run(
        ["promtool", "test", "rules", *map(str, test_files.values())],
        stdout=subprocess.PIPE,
        stderr=subprocess.STDOUT,
        text=True,
        timeout=300,
        check=False,
    )
    parts = re.split(r"^Unit Testing:\s+(\S+)$", run.stdout, flags=re.MULTILINE)
    sections = {parts[i]: parts[i + 1] for i in range(1, len(parts) - 1, 2)}
    for case, path in test_files.items():
        results[case] = sections.get(str(path), f"missing from promtool's output:\n{run.stdout[-2000:]}")
    return results


@pytest.mark.parametrize("case", sorted(OUTPUT_CASES))
def test_found_spec_compiles_to_tests_that_pass(tested: dict[str, str], case: str) -> None:
    section = tested[case]
    assert "SUCCESS" in section and "FAILED" not in section, section[-4000:]


def test_found_outage_test_skips_the_long_window_claim_only_when_it_is_false(tmp_path: Path) -> None:
    """The claim stays where it holds: a low threshold (99.9%, the default policy) keeps it for every pair."""
    code, _ = _cli(["generate", "--specs", "specs", "--out", "out"], _tree(tmp_path, VALID_SLO))
    assert code == 0
    tests = (tmp_path / "out" / "prometheus" / "tests" / "dns-errors.test.yaml").read_text(encoding="utf-8")
    outage = tests[tests.index("full outage") :].split("- name:")[0]
    assert len(re.findall(r"count\(\(", outage)) == 4  # one per pair (block scalars too)


@pytest.mark.parametrize(
    ("spec", "line", "column", "shown"),
    [
        (gauge("max_over_time(sum by (cluster) (x)[5m:1m])", "relative: {offset: 6m, max_factor: 2}"), 14, 22, "5m"),
        (quantile("relative: {offset: 10m, max_factor: 1.5}"), 16, 22, "5m"),
        (gauge("sum by (cluster) (rate(x_total[5m]))", "relative: {offset: 10m, max_factor: 2}"), 14, 22, "5m"),
    ],
    ids=["max-over-time", "quantile", "rate"],
)
def test_found_relative_offset_within_for_plus_the_time_a_change_shows_is_error(
    tmp_path: Path, spec: str, line: int, column: int, shown: str
) -> None:
    code, stderr = _cli(["validate", "--specs", "specs"], _tree(tmp_path, spec))
    assert code == 1, stderr
    problems = [problem for problem in stderr.splitlines() if problem.startswith(f"{SPEC}:")]
    assert len(problems) == 1, stderr
    assert problems[0].startswith(f"{SPEC}:{line}:{column}: relative.offset "), problems[0]
    assert f"must be longer than the normal_range's for (5m) plus the {shown} a change takes to show" in problems[0]


def test_found_relative_offset_of_a_plain_gauge_needs_only_to_outlast_for(tmp_path: Path) -> None:
    """A gauge read at an instant shows a change at once: offset 6m with for 5m stays valid."""
    spec = gauge("sum by (cluster) (x)", "relative: {offset: 6m, max_factor: 2}")
    code, stderr = _cli(["validate", "--specs", "specs"], _tree(tmp_path, spec))
    assert code == 0, stderr


def test_found_join_label_also_matched_on_is_error(tmp_path: Path) -> None:
    """on(cluster, node) group_left(cluster) is a PromQL parse error: the rules failed promtool."""
    join = "  join: {metric: 'kube_node_labels{job=\"ksm\"}', on: [cluster, node], labels: [label_pool, cluster]}\n"
    spec = VALID_SLO.replace("  by: [cluster]\n", "  by: [cluster, label_pool]\n").replace(
        "  selector: '{job=\"kube-dns\"}'\n", "  selector: '{job=\"kube-dns\"}'\n" + join
    )
    code, stderr = _cli(["validate", "--specs", "specs"], _tree(tmp_path, spec))
    assert code == 1, stderr
    problems = [problem for problem in stderr.splitlines() if problem.startswith(f"{SPEC}:")]
    column = join.rindex("cluster") + 1
    assert problems == [
        f"{SPEC}:10:{column}: slice.join.labels[1] 'cluster' is also in on: the join matches on it, so it cannot "
        "also attach it (Prometheus rejects a label in both on(...) and group_left(...)); remove it from labels"
    ], stderr


@pytest.mark.parametrize(
    ("spec", "location", "text"),
    [
        (
            latency_spec("95%", "min: 1e-300"),
            "20:8",
            "normal_range.min 1e-300 is an error ratio under 1e-09 (one bad event in a billion), which Prometheus "
            "cannot tell from 0",
        ),
        (latency_spec("95%", "max: 1e-12"), "20:8", "normal_range.max 1e-12 is an error ratio under 1e-09"),
        (
            latency_spec("99.9999999999%"),
            "15:11",
            "objective 99.9999999999% leaves an error budget of 1e-12: burn thresholds (down to 0.01x the budget) "
            "would be error ratios under 1e-09",
        ),
    ],
    ids=["min-1e-300", "max-1e-12", "target-twelve-nines"],
)
def test_found_error_ratio_too_small_for_float_counters_is_error(
    tmp_path: Path, spec: str, location: str, text: str
) -> None:
    """total - good lost such ratios to rounding: the bound's alert fired on an input inside it."""
    code, stderr = _cli(["validate", "--specs", "specs"], _tree(tmp_path, spec))
    assert code == 1, stderr
    problems = [problem for problem in stderr.splitlines() if problem.startswith(f"{SPEC}:")]
    assert len(problems) == 1 and problems[0].startswith(f"{SPEC}:{location}: {text}"), stderr


@pytest.mark.parametrize("bound", ["max: 0", "max: 1e-320"])
def test_found_gauge_scaled_past_float_range_is_error_not_infinite_input(tmp_path: Path, bound: str) -> None:
    """x * 5e-324 needs inputs of 1/5e-324 = +Inf: the generated input series read 'infx8', which promtool
    cannot parse. No test can drive such an expression, so the spec is refused at its SLI."""
    spec = gauge("sum by (cluster) (x) * 5e-324", bound)
    code, stderr = _cli(["validate", "--specs", "specs"], _tree(tmp_path, spec))
    assert code == 1, stderr
    problems = [problem for problem in stderr.splitlines() if problem.startswith(f"{SPEC}:")]
    assert len(problems) == 1, stderr
    assert problems[0].startswith(
        f"{SPEC}:10:1: cannot generate the promtool tests that prove its alerts: cannot derive test inputs: no "
        "finite value of x gives the values the tests need (it would have to be "
    ), problems[0]


def test_found_duration_bound_past_int64_seconds_is_error(tmp_path: Path) -> None:
    """humanizeDuration converts to int64 seconds: 1.1e300 s read -106751991167300d -15h -30m -8s on amd64
    (and otherwise on arm64), where the generated test expected the exact number of days."""
    spec = gauge("sum by (cluster) (x)", "max: 1e+300").replace("normal_range:", "unit: seconds\nnormal_range:")
    code, stderr = _cli(["validate", "--specs", "specs"], _tree(tmp_path, spec))
    assert code == 1, stderr
    problems = [problem for problem in stderr.splitlines() if problem.startswith(f"{SPEC}:")]
    assert problems == [
        f"{SPEC}:15:8: normal_range.max 1e+300 is 1e+15 seconds (30 million years) or more: Prometheus shows "
        "durations in whole int64 seconds, which overflow, and the alert text would differ between platforms; "
        "give a smaller bound (or a unit other than seconds)"
    ], stderr


def test_found_presence_rate_shorter_than_two_evaluations_is_error(tmp_path: Path) -> None:
    """rate(...[1s]) reads nothing: every slice was absent, and no-data fired where the test expected 0."""
    spec = absent_as_zero("rate(process_cpu_seconds_total[1s])")
    code, stderr = _cli(["validate", "--specs", "specs"], _tree(tmp_path, spec))
    assert code == 1, stderr
    problems = [problem for problem in stderr.splitlines() if problem.startswith(f"{SPEC}:")]
    assert problems == [
        f"{SPEC}:13:27: rate() over 1s is shorter than twice the evaluation interval (1m): it needs two samples "
        "in its window, so it reads nothing most of the time; use at least 2m (4x the scrape interval is the "
        "usual advice)"
    ], stderr


@pytest.mark.parametrize("presence", ["changes(up[1m])", "1 - up"])
def test_found_presence_that_cannot_tell_up_from_down_is_error(tmp_path: Path, presence: str) -> None:
    """A presence expression at 0 while its series hold 1 never yields the 0 it stands for."""
    code, stderr = _cli(["validate", "--specs", "specs"], _tree(tmp_path, absent_as_zero(presence)))
    assert code == 1, stderr
    problems = [problem for problem in stderr.splitlines() if problem.startswith(f"{SPEC}:")]
    assert len(problems) == 1, stderr
    assert problems[0].startswith(
        f"{SPEC}:10:1: cannot generate the promtool tests that prove its alerts: cannot derive test inputs: "
        "absent_as_zero_while "
    ), problems[0]
    assert "reads nothing above 0 with its series at 1 (targets up)" in problems[0], problems[0]
