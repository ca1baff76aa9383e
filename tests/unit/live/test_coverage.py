"""Backtest honest on short or gappy history (issue 29 item 3), the pure part: the covered spans measured
from the steps that hold samples, firings clipped to the window and the data, "firing for" from the
clipped parts, weekly counts only for weeks with data, no-data alerts judged only where the server held
data (the alert state machine fed nothing elsewhere), and the report's words for all of it."""

from __future__ import annotations

from datetime import UTC, datetime

from compiler.live.backtest import AlertMachine, Interval, Result, Rule
from compiler.live.coverage import Coverage, clip, spans_of, week_data, week_text
from compiler.live.steps import Vector
from compiler.live.summary import render_markdown, render_table, summarise
from compiler.plan import AlertSpec

MIN = 60_000
HOUR = 60 * MIN
# Wednesday 2026-12-02 12:00 UTC: the window asked is its last hour before 13:00
END = int(datetime(2026, 12, 2, 13, tzinfo=UTC).timestamp() * 1000)
START = END - HOUR
BEGINS = END - 4 * MIN  # a young server: the data begins 4 minutes before the end


def test_spans_bridge_gaps_shorter_than_the_lookback_and_reach_the_window_end() -> None:
    step = 10_000
    # a 10s grid whose last time is 5s before the window's end; samples every 30s, seen at every third step:
    # ten minutes of them, a 30-minute hole, then from the data's start to two steps before the grid's end
    last_step = END - 5_000
    first = list(range(BEGINS + 5_000 - 40 * MIN, BEGINS - 30 * MIN, 30_000))
    second = list(range(BEGINS + 5_000, last_step - 20_000 + 1, 30_000))
    spans = spans_of([*first, *second], step, last_step, END)
    # each span carried on by the sample spacing (30s, seen as 20s more than the step's own 10s)
    assert spans[0] == (first[0], first[-1] + 20_000)
    assert spans[1] == (BEGINS + 5_000, END)  # carried on to the grid's end: covered to the window's end
    # a short hole is no hole (an instant selector reads across it); the end stops short of a later span
    # (carried on by the usual spacing, 1m, not by the hole's 3m)
    assert spans_of([0, MIN, 4 * MIN, 20 * MIN], step, 30 * MIN) == (
        (0, 4 * MIN + 50_000),
        (20 * MIN, 20 * MIN + 50_000),
    )
    assert spans_of([], step, last_step, END) == ()


def test_firing_outside_the_data_is_clipped() -> None:
    data = ((BEGINS, END),)
    # fired in the warm-up a week before anything: only what lies in the data is a firing, from its start
    early = clip(START - 7 * 24 * HOUR, None, data, START, END)
    assert early is not None
    assert (early.fired_ms, early.resolved_ms, early.firing_ms) == (BEGINS, None, 4 * MIN)
    assert early.before_data and not early.data_ended
    # over no data at all: not history
    assert clip(START - HOUR, BEGINS - MIN, data, START, END) is None
    # resolved inside the data: as it was
    inside = clip(BEGINS + MIN, BEGINS + 2 * MIN, data, START, END)
    assert inside is not None and (inside.fired_ms, inside.resolved_ms, inside.firing_ms) == (
        BEGINS + MIN,
        BEGINS + 2 * MIN,
        MIN,
    )
    # the data ends while it fires: cut where the data ends, and said so
    ended = clip(BEGINS + MIN, None, ((BEGINS, BEGINS + 2 * MIN),), START, END)
    assert ended is not None and ended.data_ended and ended.resolved_ms is None and ended.firing_ms == MIN
    # across a gap: "firing for" counts the data only
    gappy = clip(START, END, ((START, START + 10 * MIN), (END - 10 * MIN, END)), START, END)
    assert gappy is not None and gappy.firing_ms == 20 * MIN and gappy.resolved_ms == END
    # fired at the window's last evaluation, inside the data: kept
    last = clip(END, None, data, START, END)
    assert last is not None and last.firing_ms == 0 and not last.data_ended


def test_the_report_says_how_much_of_the_window_has_data() -> None:
    young = Coverage(START, END, ((BEGINS, END),), ((BEGINS, END),))
    assert young.text() == "data from 2026-12-02 12:56:00 (4m of the 1h asked; 56m without data)"
    facts = young.as_json("queue-depth")
    assert (facts["covered_ms"], facts["missing_ms"], facts["first_ms"]) == (4 * MIN, 56 * MIN, BEGINS)
    assert (facts["covered"], facts["missing"], facts["asked"]) == ("4m", "56m", "1h")
    gappy = Coverage(START, END, ((START - HOUR, START + 10 * MIN), (END - 20 * MIN, END - 5 * MIN)), ())
    assert gappy.text() == "data to 2026-12-02 12:55:00 (25m of the 1h asked in 2 spans; 35m without data)"
    assert Coverage(START, END, ((START - HOUR, END),), ()).text() == "data for the whole 1h asked"
    assert Coverage(START, END, (), ()).text() == "no data in the 1h asked"


def test_weekly_counts_only_for_weeks_with_data() -> None:
    # two weeks asked (Wednesday to Wednesday), data only in the second: the first week has none
    start = END - 7 * 24 * HOUR
    weeks = week_data(((BEGINS, END),), start, END)
    assert weeks == {"2026-W48": (0, 4 * 24 * HOUR + 11 * HOUR), "2026-W49": (4 * MIN, 2 * 24 * HOUR + 13 * HOUR)}
    assert week_text(4 * MIN, HOUR) == "4m of 7d (1h asked)"
    assert week_text(7 * 24 * HOUR, 7 * 24 * HOUR) == "7d"


def _no_data_alert() -> AlertSpec:
    return AlertSpec(
        name="QueueDepthNoData",
        kind="no_data",
        severity="ticket",
        for_ms=2 * MIN,
        keep_firing_for_ms=0,
        labels=(),
    )


def test_no_data_over_no_history_is_not_a_firing() -> None:
    """The no-data alert's condition holds at every step (nothing to read): fed only where the server held
    data, it becomes pending when the data begins and, the condition clearing then, never fires before it."""
    rule = Rule("alert", "QueueDepthNoData", "absent(x)", {"severity": "ticket", "team": "team-a"}, for_ms=2 * MIN)
    served = ((BEGINS + MIN, END),)  # a server that began a minute after the spec's data
    machine, blind = AlertMachine("queue-depth", rule, served), AlertMachine("queue-depth", rule)
    step = MIN
    for t in range(START - 7 * 24 * HOUR, END + 1, step):
        held = t >= BEGINS + MIN
        vector: Vector = [] if held else [({}, 1.0)]  # absent() answers while there is nothing
        machine.feed(t, vector)
        blind.feed(t, vector)
    assert machine.done == []
    assert blind.done[0].fired_ms == START - 7 * 24 * HOUR + 2 * MIN  # what the replay reported before
    result = Result(START, END, 0)
    result.coverage["queue-depth"] = Coverage(START, END, ((BEGINS, END),), served)
    result.intervals = [blind.done[0]]
    blind.done[0].no_data = True  # as a replay marks a no-data alert's firing
    result.alerts = [("queue-depth", _no_data_alert())]
    summary = summarise(result)
    assert summary["intervals"] == [] and summary["per_week"] == []
    assert summary["never_fired"] == [{"spec": "queue-depth", "alert": "QueueDepthNoData"}]
    assert summary["no_history"] == [
        {"spec": "queue-depth", "alert": "QueueDepthNoData", "without_history": "57m", "without_history_ms": 57 * MIN}
    ]
    for text in (render_table(summary), render_markdown(summary)):
        assert "QueueDepthNoData" in text and "57m" in text and "(4m of the 1h asked; 56m without data)" in text


def test_a_firing_from_before_the_data_is_shown_from_the_data() -> None:
    """A page replayed as firing since the warm-up (a week before the data) is shown from where the data
    begins, "firing for" the 4 minutes of data, counted in the week of the data, its delay unknown."""
    result = Result(START, END, 0)
    result.coverage["queue-depth"] = Coverage(START, END, ((BEGINS, END),), ((BEGINS, END),))
    labels = {"alertname": "QueueDepthAboveCriticalRange", "severity": "page", "team": "team-a"}
    old = START - 7 * 24 * HOUR
    result.intervals = [Interval("queue-depth", "QueueDepthAboveCriticalRange", labels, old, old, None, old)]
    summary = summarise(result)
    [shown] = summary["intervals"]
    assert (shown["fired_ms"], shown["firing_for"], shown["resolved"]) == (BEGINS, "4m", "-")
    assert (shown["replayed_fired_ms"], shown["time_to_fire"], shown["pending_since"]) == (old, "-", "-")
    assert shown["notes"] == ["already firing where the window or the data begins"]
    assert summary["per_week"] == [
        {
            "week": "2026-W49",
            "team": "team-a",
            "severity": "page",
            "firings": 1,
            "data": "4m of 7d (1h asked)",
            "data_ms": 4 * MIN,
            "asked_ms": HOUR,
        }
    ]
    assert summary["noisiest"][0]["firing_for"] == "4m"
