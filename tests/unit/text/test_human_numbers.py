"""Numbers for people (``compiler.text.human``), and the backtest's durations: every observation of issue 28
item 4 as the formatter writes it now, with what the JSON keeps beside the text."""

from __future__ import annotations

import json
import math
from datetime import UTC, datetime
from decimal import Decimal

import pytest
from hypothesis import given
from hypothesis import strategies as st

from compiler.live.backtest import Interval, Result
from compiler.live.summary import render_markdown, render_table, summarise
from compiler.model import BurnAlert, Objective
from compiler.review.behaviour import Timing
from compiler.text import human
from compiler.text.numbers import go_float

SECOND, MINUTE, HOUR, DAY = 1000, 60_000, 3_600_000, 86_400_000


@pytest.mark.parametrize(
    ("value", "text"),
    [(0.9333333333333334, "0.93x"), (14.4, "14.4x"), (13.44, "13.44x"), (3.36, "3.36x"), (1, "1x"), (1000, "1,000x")],
)
def test_factor_is_written_to_the_digits_that_matter(value: float, text: str) -> None:
    """A factor a person wrote (at most two decimals) stays as written; a derived one (0.9333...) is 0.93x."""
    assert human.factor(value) == text


@pytest.mark.parametrize(
    ("ratio", "text"),
    [(0.004666666666666667, "0.47%"), (0.144, "14.4%"), (0.0336, "3.36%"), (0.000144, "0.0144%"), (1 / 7, "14.3%")],
)
def test_a_derived_ratio_is_a_percent_to_the_digits_that_matter(ratio: float, text: str) -> None:
    assert human.share(ratio) == text


@pytest.mark.parametrize(
    ("ratio", "text"), [(0.99999, "99.999%"), (0.995, "99.5%"), (0.0001, "0.01%"), (1e-05, "0.001%"), (0.8, "80%")]
)
def test_a_written_ratio_is_exact_and_never_in_exponent_notation(ratio: float, text: str) -> None:
    assert human.percent(ratio) == text


@pytest.mark.parametrize(
    ("ms", "text"),
    [
        (14 * DAY, "14d"),
        (3 * DAY + 6 * HOUR, "3d 6h"),
        (56 * MINUTE + 18 * SECOND + 17, "56m 18s"),  # was 56m18s17ms
        (57 * MINUTE + 3 * SECOND + 224, "57m 3s"),  # was 57m3s224ms
        (2 * DAY + 2 * HOUR, "2d 2h"),
        (HOUR + 4 * SECOND, "1h 4s"),
        (250, "250ms"),  # under a second the milliseconds are the figure
        (0, "0s"),
    ],
)
def test_durations_are_spaced_units_without_sub_second_noise(ms: int, text: str) -> None:
    assert human.duration(ms) == text


@pytest.mark.parametrize(
    ("unit", "value", "text"),
    [
        ("seconds", 1209600, "14d"),  # was 1.2096e+06
        ("seconds", 0.25, "250ms"),
        ("seconds", 1.5, "1.5s"),
        ("count", 2e7, "20,000,000"),  # was 2e+07, with no unit
        ("count", 1209600, "1,209,600"),
        ("bytes", 16 * 2**20, "16 MiB"),
        ("bytes", 7.2e10, "72 GB"),  # was 7.2e+10B
        ("bytes_per_second", 1e8, "100 MB/s"),  # was 1e+08B/s
        ("per_second", 100000, "100,000/s"),
        ("ratio", 0.8, "80%"),
    ],
)
def test_a_value_is_written_in_the_specs_unit(unit: str, value: float, text: str) -> None:
    assert human.value(unit, value) == text


def test_a_range_end_names_its_unit() -> None:
    assert human.bound("seconds", "max", 0.25) == "under 250ms"
    assert human.bound("ratio", "min", 0.8) == "over 80%"


def test_a_measured_value_is_rounded_for_people() -> None:
    assert human.reading("ratio", 0.123456789) == "12.3%"
    assert human.reading("seconds", 0.2468) == "247ms"
    assert human.reading("count", 12345678.9) == "12,345,679"


@given(st.floats(min_value=1e-9, max_value=1e15, allow_nan=False))
def test_approx_is_within_one_percent_and_never_an_exponent(value: float) -> None:
    text = human.approx(value)
    assert "e" not in text.lower()
    assert abs(float(text.replace(",", "")) - value) <= 0.01 * value + 0.5 * (value >= 100)


@given(st.floats(min_value=1e-9, max_value=1e12, allow_nan=False))
def test_decimal_is_the_number_as_written_without_exponent(value: float) -> None:
    text = human.decimal(value)
    assert "e" not in text.lower()
    assert float(text.replace(",", "")) == float(f"{value:.12g}")


def test_the_99_999_objective_threshold_is_the_decimal_product() -> None:
    """14.4 x 0.00001 is 0.000144 as written (the float product prints 0.00014400000000000001), and a derived
    factor's threshold is the decimal product itself, not a 12-digit rounding (0.00466666666667)."""
    objective = Objective(target=0.99999, period_ms=30 * DAY, burn_alerts=())
    page = BurnAlert(
        severity="page", long_ms=HOUR, short_ms=5 * MINUTE, factor=14.4, for_ms=2 * MINUTE, keep_firing_for_ms=0
    )
    assert go_float(objective.threshold(page)) == "0.000144"
    derived = BurnAlert(
        severity="ticket",
        long_ms=36 * HOUR,
        short_ms=3 * HOUR,
        factor=0.933333333333,
        for_ms=HOUR,
        keep_firing_for_ms=0,
    )
    half = Objective(target=0.995, period_ms=28 * DAY, burn_alerts=())
    threshold = go_float(half.threshold(derived))
    assert Decimal(threshold) == Decimal("0.933333333333") * Decimal("0.005")
    assert threshold != "0.00466666666667"


END = int(datetime(2026, 12, 2, 13, tzinfo=UTC).timestamp() * 1000)


def _result() -> Result:
    """One page that fired 2m 7.5s after its condition began and fired for 56m 18s 17ms."""
    result = Result(END - DAY, END, 7 * DAY)
    labels = {"alertname": "QueueDepthAboveCriticalRange", "severity": "page", "team": "team-a"}
    fired = END - 2 * HOUR
    condition = fired - (2 * MINUTE + 7_500)
    resolved = fired + 56 * MINUTE + 18 * SECOND + 17
    result.intervals = [
        Interval("queue-depth", "QueueDepthAboveCriticalRange", labels, condition, fired, resolved, condition)
    ]
    return result


def test_backtest_json_keeps_raw_milliseconds_beside_each_duration() -> None:
    summary = json.loads(json.dumps(summarise(_result())))
    [shown] = summary["intervals"]
    assert (shown["firing_for"], shown["firing_for_ms"]) == ("56m 18s", 56 * MINUTE + 18 * SECOND + 17)
    assert (shown["time_to_fire"], shown["time_to_fire_ms"]) == ("2m 8s", 2 * MINUTE + 7_500)
    [noisy] = summary["noisiest"]
    assert (noisy["firing_for"], noisy["firing_for_ms"]) == ("56m 18s", 56 * MINUTE + 18 * SECOND + 17)
    assert (summary["warmup"], summary["warmup_ms"]) == ("7d", 7 * DAY)


def test_backtest_table_and_markdown_write_durations_for_people() -> None:
    summary = summarise(_result())
    for text in (render_table(summary), render_markdown(summary)):
        assert "56m 18s" in text and "2m 8s" in text and "(warm-up 7d)" in text
        assert "56m18s" not in text and "ms" not in text.replace("items", "")


@pytest.mark.parametrize(
    ("value", "text"), [(1e300, "1e+300"), (1e-300, "1e-300"), (math.inf, "+Inf"), (math.nan, "NaN")]
)
def test_an_absurd_number_keeps_prometheus_form_instead_of_a_wall_of_digits(value: float, text: str) -> None:
    """A hostile bound (accepted where its unit allows it) is not written as 300 digits, nor does it crash."""
    assert human.decimal(value) == text and human.count(value) == text
    assert human.reading("count", value) == text
    assert human.value("seconds", value) == f"{text}s" and human.value("bytes", value) == f"{text} B"
    assert human.factor(value) == f"{text}x" and human.value("ratio", value).endswith("%")


def test_diff_behaviour_timings_are_durations_for_people() -> None:
    """`diff`'s measured alert timings (minutes into a generated case) read as durations: 125 minutes is 2h 5m."""
    assert str(Timing(first=125, last=189, end=300)) == "fires 2h 5m, resolves 3h 10m"
    assert str(Timing(first=6, last=300, end=300)) == "fires 6m, still firing"
