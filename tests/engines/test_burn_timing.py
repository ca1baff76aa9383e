"""Burn pairs fire within one evaluation of the SRE-workbook time plus ``for``, and a trickle pages nobody.

Measured with the real promtool through ``bench/burn_timing.py``: 100 req/s of good traffic
for longer than the longest window, then a step to an error ratio. The workbook time is
``threshold x long / error_ratio`` (the long window's share of the step's events reaching the
threshold); a pair evaluated every minute can fire no sooner than the first evaluation past
it plus ``for``, and every case below fires exactly then. Before the windows were sums of
non-overlapping blocks, pages fired 2-4 minutes and tickets up to an hour later (the table in
docs/rules.md "How the rules are built").

Each run evaluates every rule each minute for the whole input, so the outage run (three days
of history, for the 3d window) is the slow one, about half a minute on an idle machine; the
others take a few seconds each.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from pathlib import Path

import pytest

from bench.burn_timing import (
    RATE_PER_MIN,
    InputSeries,
    by_pair,
    compile_spec,
    first_fire_minutes,
    pairs_of,
    step_inputs,
    workbook_minutes,
)
from tests.conftest import RATIO_SLI_AND_OBJECTIVE, SLO_RELATIVE, VALID_SLO
from tests.promtool_runs import promtool_test

RunCli = Callable[[Sequence[str | Path], Path], tuple[int, str, str]]


@pytest.fixture(scope="module")
def rules(tmp_path_factory: pytest.TempPathFactory) -> Path:
    return compile_spec(tmp_path_factory.mktemp("guarded"))


@pytest.fixture(scope="module")
def unguarded(tmp_path_factory: pytest.TempPathFactory) -> Path:
    return compile_spec(tmp_path_factory.mktemp("unguarded"), ", traffic_guard: false")


def fires_after_step(rules: Path, history_min: int, error_ratio: float, end_min: int) -> dict[str, int]:
    found = by_pair(first_fire_minutes([rules], step_inputs(history_min, error_ratio, end_min), end_min, promtool_test))
    return {name: minute - history_min for name, minute in found.items()}


def assert_on_workbook_time(rules: Path, fired: dict[str, int], error_ratio: float) -> None:
    """Each pair that fired did so at the first evaluation past the workbook time, plus its ``for``."""
    for pair in pairs_of(rules):
        if pair.name not in fired:
            continue
        workbook = workbook_minutes(pair.threshold, pair.long_min, pair.short_min, error_ratio) + pair.for_min
        assert workbook - 1 < fired[pair.name] <= workbook + 1, (pair.name, workbook, fired[pair.name])


# (error ratio as a multiple of the 1h/5m threshold 1.44%, minute the 1h/5m page fires after the step);
# 100% errors is the outage case below, which times every pair in one run.
FAST_PAGE = [(1.1, 57), (2, 32), (10, 9)]


@pytest.mark.parametrize(("level", "expected"), FAST_PAGE, ids=[f"{level:g}x" for level, _ in FAST_PAGE])
def test_the_1h_page_fires_on_the_workbook_minute(rules: Path, level: float, expected: int) -> None:
    ratio = level * 0.0144
    fired = fires_after_step(rules, 120, ratio, 120 + expected + 3)
    assert fired["1h/5m"] == expected
    assert_on_workbook_time(rules, fired, ratio)


def test_the_6h_page_fires_on_the_workbook_minute(rules: Path) -> None:
    """6% errors (10x the 0.6% threshold): 36 minutes for the 6h window, 15m of `for`, one evaluation past."""
    fired = fires_after_step(rules, 420, 0.06, 420 + 55)
    assert fired["6h/30m"] == 52
    assert_on_workbook_time(rules, fired, 0.06)


def test_an_outage_fires_every_pair_on_its_workbook_minute_tickets_included(rules: Path) -> None:
    """100% errors after three days and an hour of good traffic: 3, 18, 65 and 185 minutes.

    The workbook times are 0.86, 2.16, 4.32 and 4.32 minutes plus 2m, 15m, 1h and 3h. The
    tickets once read hourly points and fired up to an hour later (at 120 and 240).
    """
    history = 3 * 1440 + 60
    fired = fires_after_step(rules, history, 1.0, history + 186)
    assert fired == {"1h/5m": 3, "6h/30m": 18, "1d/2h": 65, "3d/6h": 185}
    assert_on_workbook_time(rules, fired, 1.0)


# -- the traffic guard --------------------------------------------------------------------------------------

DROP_MIN = 120  # two hours at 10,000 req/s, then 1 req/s at 10% errors
END_MIN = 600


def trickle_inputs() -> list[InputSeries]:
    """The issue's trickle: 1 req/s at 10% errors after normal traffic, far above every threshold."""
    busy = RATE_PER_MIN * 100  # 10,000 req/s
    trickle, bad = 60.0, 6.0  # per minute
    after = END_MIN - DROP_MIN
    resumed = busy * DROP_MIN + trickle
    return [
        InputSeries('requests_total{cluster="a"}', f"0+{busy:g}x{DROP_MIN} {resumed:g}+{trickle:g}x{after - 1}"),
        InputSeries('errors_total{cluster="a"}', f"0x{DROP_MIN} {bad:g}+{bad:g}x{after - 1}"),
    ]


def test_without_the_guard_a_trickle_pages_for_hours(unguarded: Path) -> None:
    """Once the windows hold only the trickle, its 10% errors are 7x the 1h threshold: both pages fire."""
    fired = by_pair(first_fire_minutes([unguarded], trickle_inputs(), END_MIN, promtool_test))
    assert fired == {"1h/5m": DROP_MIN + 60 + 2, "6h/30m": DROP_MIN + 360 + 15}


def test_the_guard_keeps_a_trickle_from_paging(rules: Path) -> None:
    """Seven hours of the trickle spend 2,520 bad requests, under every pair's share of the 72M-request period."""
    assert by_pair(first_fire_minutes([rules], trickle_inputs(), END_MIN, promtool_test)) == {}


def test_the_guard_holds_under_steady_traffic(rules: Path) -> None:
    """With traffic as steady as over the period, the guard is the ratio condition: the outage times above."""
    fired = fires_after_step(rules, 120, 1.0, 126)
    assert fired == {"1h/5m": 3}


# -- spelling the guard -------------------------------------------------------------------------------------


def spec_with(tmp_path: Path, line: str) -> Path:
    from tests.conftest import make_spec_tree

    spec_dir = make_spec_tree(tmp_path / "specs")
    objective = RATIO_SLI_AND_OBJECTIVE
    (spec_dir / SLO_RELATIVE).write_text(VALID_SLO.replace(objective, objective + line), encoding="utf-8")
    return spec_dir


def position_of(text: str, needle: str) -> str:
    for number, line in enumerate(text.splitlines(), 1):
        if needle in line:
            return f"{number}:{line.index(needle) + 1}"
    raise AssertionError(needle)


@pytest.mark.parametrize(
    ("value", "message"),
    [
        ("150%", "traffic_guard '150%' must be true, false or a share in (0%, 100%] such as 50%"),
        ("0%", "traffic_guard '0%' must be true, false or a share in (0%, 100%] such as 50%"),
        ("often", "traffic_guard 'often' must be true, false or a share in (0%, 100%] such as 50%"),
        ("0.5", "traffic_guard 0.5 is read as 0.5%; write it with a % sign (did you mean 50%?)"),
    ],
)
def test_a_bad_guard_is_an_error_at_its_value(run_cli: RunCli, tmp_path: Path, value: str, message: str) -> None:
    spec_dir = spec_with(tmp_path, f"  traffic_guard: {value}\n")
    code, _, stderr = run_cli(["validate", "--specs", "specs"], tmp_path)
    text = (spec_dir / SLO_RELATIVE).read_text(encoding="utf-8")
    assert code == 1, stderr
    assert f"specs/{SLO_RELATIVE.as_posix()}:{position_of(text, value)}: {message}" in stderr, stderr
    assert "Traceback" not in stderr


def generated_rules(run_cli: RunCli, tmp_path: Path) -> str:
    code, _, stderr = run_cli(["generate", "--specs", "specs", "--out", "out"], tmp_path)
    assert code == 0, stderr
    return (tmp_path / "out" / "prometheus" / "rules" / "dns-errors.rules.yaml").read_text(encoding="utf-8")


def test_the_guard_can_be_turned_off(run_cli: RunCli, tmp_path: Path) -> None:
    spec_with(tmp_path, "  traffic_guard: false\n")
    text = generated_rules(run_cli, tmp_path)
    assert "period_events" not in text
    assert text.count("alert: DnsErrorsErrorBudgetBurn") == 4


def test_the_guard_share_can_be_lowered(run_cli: RunCli, tmp_path: Path) -> None:
    """50% asks the 1h window for half the pair's 2% share: 1% of the 0.1% budget, 1e-05 of the period's events."""
    spec_with(tmp_path, "  traffic_guard: 50%\n")
    text = generated_rules(run_cli, tmp_path)
    assert '> 1e-05 * slo:sli_total:period_events{slo="dns-errors"}' in text
    assert '> 2e-05 * slo:sli_total:period_events{slo="dns-errors"}' not in text
