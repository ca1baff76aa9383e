"""How much of a backtest's window the server holds data for, and firings clipped to that data.

A young Prometheus (or one that was down for a while) holds nothing for part of the window asked.
A replay over that part would report what the rules do on no data at all: a no-data alert firing
from the first step of the warm-up (a month before the data began), "firing for" the whole window,
firings per week for weeks with no data. Backtest measures, per spec, when the server holds samples
of the spec's raw series (``Coverage.data``), and when it holds anything this replay can see of the
server itself (``Coverage.server``: the spec's series or ``up``, which every scrape writes); the
report then clips each firing to the window and to the data, and a no-data alert over a span the
server never covered is "no history", not a firing.

Spans are closed ``(from_ms, to_ms)`` pairs of evaluation timestamps, sorted and disjoint. The
measurement gives the evaluation steps whose bucket ``[t - step, t]`` holds a sample; steps closer
than Prometheus's 5m lookback are one span (an instant selector reads across such a gap), and a
span's end is carried on by the usual spacing of the samples (the last sample is read until the next
scrape is due), never past the next span or the replay's end.
"""

from __future__ import annotations

import bisect
import itertools
import statistics
from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from datetime import UTC, datetime, timedelta

from compiler.model import SLO
from compiler.model.queries import source_selectors
from compiler.promql import render_selector
from compiler.text import human

LOOKBACK_MS = 5 * 60_000  # an instant selector reads a sample this long: shorter gaps are not gaps
WEEK_MS = 7 * 86_400_000
Span = tuple[int, int]


def spans_of(times: Sequence[int], step_ms: int, last_ms: int, end_ms: int | None = None) -> tuple[Span, ...]:
    """The covered spans from the sorted evaluation times whose bucket holds a sample (``last_ms``: the grid's
    last time): times at most the 5m lookback apart are one span; each span's end is carried on by the
    usual spacing of such times (the median: the scrape interval, at the step's resolution), at most to the
    next span; a span reaching the grid's last time reaches ``end_ms`` (the window's end, between steps)."""
    runs: list[list[int]] = []
    for t in times:
        if runs and t - runs[-1][-1] <= LOOKBACK_MS:
            runs[-1].append(t)
        else:
            runs.append([t])
    spacing = statistics.median_low([b - a for run in runs for a, b in itertools.pairwise(run)] or [step_ms])
    spans: list[Span] = []
    for index, run in enumerate(runs):
        limit = runs[index + 1][0] - step_ms if index + 1 < len(runs) else last_ms
        stop = max(run[-1], min(run[-1] + spacing - step_ms, limit))
        spans.append((run[0], max(stop, end_ms or stop) if stop >= last_ms else stop))
    return tuple(spans)


def data_query(slo: SLO, step_ms: int) -> str | None:
    """Per evaluation step, whether the SLI's raw series (not the joins' info metrics) have a sample in
    ``[t - step, t]``: each sample is read about once, a fraction of what the raw rules read (5m per step).
    None when the SLI reads no selector."""
    infos = {join.info for join in slo.slice.joins}
    selectors = [render_selector(s.metric, s.matchers) for s in source_selectors(slo) if s not in infos]
    if not selectors:
        return None
    return "count(" + " or ".join(f"count_over_time({s}[{step_ms}ms])" for s in selectors) + ")"


# The server's own coverage: any ``up`` sample (every scrape writes one) within the 5m lookback, read every
# 5m: one instant read per target and step, a young server's start and an outage seen to within 5m.
SERVER_QUERY = "count(up)"
SERVER_STEP_MS = LOOKBACK_MS


def union(*groups: Iterable[Span]) -> tuple[Span, ...]:
    """The spans of all groups, merged where they touch or overlap."""
    merged: list[Span] = []
    for lo, hi in sorted(span for group in groups for span in group):
        if merged and lo <= merged[-1][1]:
            merged[-1] = (merged[-1][0], max(merged[-1][1], hi))
        else:
            merged.append((lo, hi))
    return tuple(merged)


def within(spans: Iterable[Span], lo: int, hi: int) -> tuple[Span, ...]:
    """The parts of ``spans`` inside ``[lo, hi]`` (empty pieces dropped)."""
    return tuple((max(a, lo), min(b, hi)) for a, b in spans if max(a, lo) < min(b, hi))


def measure(spans: Iterable[Span]) -> int:
    return sum(hi - lo for lo, hi in spans)


def covers(spans: Sequence[Span], t: int) -> bool:
    """Whether ``t`` lies in one of the sorted, disjoint spans."""
    index = bisect.bisect_right(spans, (t, 2**63)) - 1
    return index >= 0 and spans[index][0] <= t <= spans[index][1]


@dataclass(frozen=True)
class Clipped:
    """A firing as the report shows it: within the window and the data only."""

    fired_ms: int  # the first covered instant it was firing
    resolved_ms: int | None  # when it resolved, if that was inside the data; None: still firing where the data ends
    firing_ms: int  # time firing inside the data
    before_data: bool  # it was firing before the data or the window began: shown from where they begin
    data_ended: bool  # the data (not the window) ended while it fired


def clip(fired_ms: int, resolved_ms: int | None, spans: Sequence[Span], start_ms: int, end_ms: int) -> Clipped | None:
    """A firing ``[fired, resolved)`` (resolved None: still firing at the end) clipped to the window and to the
    covered spans; None when no part of it is inside both (it is not history)."""
    lo, hi = max(fired_ms, start_ms), end_ms if resolved_ms is None else min(resolved_ms, end_ms)
    pieces = within(spans, lo, hi)
    if not pieces and lo == fired_ms and lo <= hi and covers(spans, lo) and (resolved_ms is None or resolved_ms > lo):
        pieces = ((lo, lo),)  # fired at the window's last evaluation
    if not pieces:
        return None
    last = pieces[-1][1]
    resolved_inside = resolved_ms is not None and last == resolved_ms
    still_at_end = (resolved_ms is None or resolved_ms > end_ms) and last == end_ms
    return Clipped(
        fired_ms=pieces[0][0],
        resolved_ms=resolved_ms if resolved_inside else None,
        firing_ms=measure(pieces),
        before_data=pieces[0][0] > fired_ms,
        data_ended=not resolved_inside and not still_at_end,
    )


def duration(ms: int) -> str:
    """A duration for people, in whole seconds (``56m 18s``, ``1h 4s``), ``0s`` for none."""
    return human.duration(max(0, round(ms / 1000)) * 1000)


def when(ms: int) -> str:
    return datetime.fromtimestamp(ms / 1000, UTC).strftime("%Y-%m-%d %H:%M:%S")


@dataclass(frozen=True)
class Coverage:
    """When the server holds data for one spec within the replay (warm-up included); the window asked
    is ``[start_ms, end_ms]``."""

    start_ms: int
    end_ms: int
    data: tuple[Span, ...]  # the spec's raw series
    server: tuple[Span, ...]  # anything of the server this replay sees: the spec's series or ``up``

    @property
    def asked_ms(self) -> int:
        return self.end_ms - self.start_ms

    @property
    def in_window(self) -> tuple[Span, ...]:
        return within(self.data, self.start_ms, self.end_ms)

    @property
    def covered_ms(self) -> int:
        return measure(within(self.data, self.start_ms, self.end_ms))

    @property
    def missing_ms(self) -> int:
        return self.asked_ms - self.covered_ms

    @property
    def unserved_ms(self) -> int:
        """Time of the window the server never covered (no-data alerts are not judged there)."""
        return self.asked_ms - measure(within(self.server, self.start_ms, self.end_ms))

    def text(self) -> str:
        """``data from 2026-12-02 10:04:00 (4m of the 1h asked; 56m without data)``, or the whole window."""
        spans = self.in_window
        if not spans:
            return f"no data in the {duration(self.asked_ms)} asked"
        if not self.missing_ms:
            return f"data for the whole {duration(self.asked_ms)} asked"
        first, last = spans[0][0], spans[-1][1]
        where = f"data from {when(first)}" if first > self.start_ms else "data"
        where += f" to {when(last)}" if last < self.end_ms else ""
        gaps = f" in {len(spans)} spans" if len(spans) > 1 else ""
        covered, asked = duration(self.covered_ms), duration(self.asked_ms)
        return f"{where} ({covered} of the {asked} asked{gaps}; {duration(self.missing_ms)} without data)"

    def as_json(self, spec: str) -> dict[str, object]:
        spans = self.in_window
        return {
            "spec": spec,
            "text": self.text(),
            "first": when(spans[0][0]) if spans else "-",
            "last": when(spans[-1][1]) if spans else "-",
            "first_ms": spans[0][0] if spans else None,
            "last_ms": spans[-1][1] if spans else None,
            "spans": len(spans),
            "asked": duration(self.asked_ms),
            "asked_ms": self.asked_ms,
            "covered": duration(self.covered_ms),
            "covered_ms": self.covered_ms,
            "missing": duration(self.missing_ms),
            "missing_ms": self.missing_ms,
        }


def iso_week(ms: int) -> str:
    year, week, _ = datetime.fromtimestamp(ms / 1000, UTC).isocalendar()
    return f"{year}-W{week:02d}"


def week_start(ms: int) -> int:
    """The Monday 00:00 UTC that begins the ISO week of ``ms``."""
    moment = datetime.fromtimestamp(ms / 1000, UTC)
    monday = (moment - timedelta(days=moment.weekday())).replace(hour=0, minute=0, second=0, microsecond=0)
    return int(monday.timestamp() * 1000)


def week_data(spans: Sequence[Span], start_ms: int, end_ms: int) -> dict[str, tuple[int, int]]:
    """Per ISO week the window touches: (data ms in it, window ms asked in it)."""
    found: dict[str, tuple[int, int]] = {}
    begin = week_start(start_ms)
    while begin <= end_ms:
        lo, hi = max(begin, start_ms), min(begin + WEEK_MS, end_ms)
        if lo < hi or lo == start_ms:
            found[iso_week(begin)] = (measure(within(spans, lo, hi)), hi - lo)
        begin += WEEK_MS
    return found


def week_text(data_ms: int, asked_ms: int) -> str:
    """How much of a week the firings counted in it are out of: ``7d``, ``4m of 7d (1h asked)``."""
    if data_ms >= WEEK_MS:
        return "7d"
    asked = f" ({duration(asked_ms)} asked)" if asked_ms < WEEK_MS else ""
    return f"{duration(data_ms)} of 7d{asked}"
