"""SLI-level timelines for generated tests, and what the recorded windows make of them.

A timeline holds, for each minute of a synthetic test, the SLI's value (a gauge value,
or the share of bad events) and, for event SLIs, the event rate. ``compiler.targets.prometheus.proof.inputs``
turns it into raw promtool input series; this module also simulates the recorded 5m
series and the window sums built on them, so the generator can say when a short window
clears after an incident (the only timing that is not exact by construction).
"""

from __future__ import annotations

import functools
import itertools
import math
import operator
from collections.abc import Sequence
from dataclasses import dataclass, field
from functools import cached_property
from typing import cast

from compiler.model import Segment
from compiler.model.windows import MINUTE, RAW_RANGE_MS, SECOND, minutes
from compiler.text.numbers import clean_number

DEFAULT_RATE = 10.0  # events per second in synthetic ratio and latency inputs
SAMPLE_SECONDS = MINUTE / SECOND  # inputs are sampled once a minute; a float, as rate() computes in seconds
RATE_WINDOW_MIN = minutes(RAW_RANGE_MS)  # the recorded rate's window, in one-minute samples
RATE_WINDOW_SECONDS = RAW_RANGE_MS / SECOND  # what rate() divides the window's increase by
EXTRAPOLATION_THRESHOLD = 1.1  # Prometheus extrapolates to a window edge only across a gap under 1.1x the average


@dataclass(frozen=True)
class Timeline:
    """``values[m]`` holds during the minute ending at ``m`` (and is the sample at ``m``).

    For counters, minute ``m``'s increment is ``60 * rate * share``; ``values[0]`` is the
    first sample. ``None`` is a missing scrape.
    """

    values: tuple[float | None, ...]
    rates: tuple[float, ...]
    # The runs of ``runs``, when the constructor knows them (constant and then do): not compared.
    known_runs: tuple[tuple[int, int, float | None, float], ...] | None = field(default=None, compare=False, repr=False)

    @property
    def minutes(self) -> int:
        return len(self.values) - 1

    @staticmethod
    def constant(value: float | None, minutes: int, rate: float = DEFAULT_RATE) -> Timeline:
        return Timeline((value,) * (minutes + 1), (rate,) * (minutes + 1), ((0, minutes + 1, value, rate),))

    def then(self, value: float | None, minutes: int, rate: float | None = None) -> Timeline:
        """Continue with ``value`` held for ``minutes`` more minutes."""
        held = self.rates[-1] if rate is None else rate
        runs = self.runs
        if minutes:
            start, count, last_value, last_rate = runs[-1]
            if (last_value, last_rate) == (value, held):
                runs = (*runs[:-1], (start, count + minutes, value, held))
            else:
                runs = (*runs, (len(self.values), minutes, value, held))
        return Timeline(self.values + (value,) * minutes, self.rates + (held,) * minutes, runs)

    @cached_property
    def runs(self) -> tuple[tuple[int, int, float | None, float], ...]:
        """(first minute, minutes, value, rate) of each run of equal minutes: inputs are computed
        once per run, not once per minute (most cases hold a value for hours)."""
        if self.known_runs is not None:
            return self.known_runs
        found: list[tuple[int, int, float | None, float]] = []
        start = 0
        for (value, rate), run in itertools.groupby(zip(self.values, self.rates, strict=True)):
            count = len(list(run))
            found.append((start, count, value, rate))
            start += count
        return tuple(found)

    @cached_property
    def counter_events(self) -> EventSeries:
        """``EventSeries.from_counters(self)``, computed once per distinct timeline (``_counter_events``)."""
        return _counter_events(self)

    def state_events(self, units: int) -> EventSeries:
        """``EventSeries.from_states(self, units)``, computed once per distinct timeline and unit count."""
        return _state_events(self, units)

    def until(self, minute: int) -> Timeline:
        """The timeline up to and including ``minute``."""
        return Timeline(self.values[: minute + 1], self.rates[: minute + 1])

    @staticmethod
    def from_segments(segments: Sequence[Segment], rate: float = DEFAULT_RATE) -> Timeline:
        values: list[float | None] = []
        rates: list[float] = []
        previous: float | None = None
        for index, segment in enumerate(segments):
            count = segment.minutes + (1 if index == 0 else 0)
            seg_rate = segment.rate if segment.rate is not None else (rates[-1] if rates else rate)
            for step in range(1, count + 1):
                if segment.gap:
                    values.append(None)
                elif segment.ramp and previous is not None and segment.value is not None:
                    values.append(previous + (segment.value - previous) * step / segment.minutes)
                else:
                    values.append(segment.value)
                rates.append(seg_rate)
            if not segment.gap:
                previous = segment.value
        return Timeline(tuple(values), tuple(rates))


# The cases of every spec with the same objective and policy build equal timelines (a timeline is
# equal by its values and rates), and what the recorded series make of them is pure arithmetic on those.
@functools.lru_cache(maxsize=1024)
def _counter_events(timeline: Timeline) -> EventSeries:
    return EventSeries.from_counters(timeline)


@functools.lru_cache(maxsize=1024)
def _state_events(timeline: Timeline, units: int) -> EventSeries:
    return EventSeries.from_states(timeline, units)


def _counter(increments: Sequence[float | None]) -> list[float | None]:
    """Cumulative counter samples for per-minute increments (None: no sample that minute)."""
    if increments and None not in increments:  # the first sample is 0; each later one adds its increment
        return list(itertools.accumulate(cast(Sequence[float], increments)[1:], initial=0.0))
    total = 0.0
    started = False
    samples: list[float | None] = []
    for increment in increments:
        if increment is None:
            samples.append(None)
            continue
        if started:
            total += increment
        started = True
        samples.append(total)
    return samples


def _rate5m(samples: Sequence[float | None], minute: int) -> float | None:
    """Prometheus 2 ``rate(x[5m])`` at ``minute`` for a counter sampled every minute from 0.

    Range selection includes both ends; a counter starting at 0 is not extrapolated before
    its first sample, and with samples at both ends there is nothing to extrapolate.
    """
    window = [
        (m, samples[m])
        for m in range(max(0, minute - RATE_WINDOW_MIN), minute + 1)
        if m < len(samples) and samples[m] is not None
    ]
    if len(window) < 2:
        return None
    (first_m, first), (last_m, last) = window[0], window[-1]
    assert first is not None and last is not None
    sampled = (last_m - first_m) * SAMPLE_SECONDS
    start_gap = (first_m - (minute - RATE_WINDOW_MIN)) * SAMPLE_SECONDS
    end_gap = (minute - last_m) * SAMPLE_SECONDS
    average = sampled / (len(window) - 1)
    zero = sampled * (first / (last - first)) if last > first and first >= 0 else math.inf
    start_gap = min(start_gap, zero)
    interval = sampled
    # Across a longer gap Prometheus extrapolates half an average interval.
    interval += start_gap if start_gap < average * EXTRAPOLATION_THRESHOLD else average / 2
    interval += end_gap if end_gap < average * EXTRAPOLATION_THRESHOLD else average / 2
    return (last - first) * (interval / sampled) / RATE_WINDOW_SECONDS


def _rates5m(samples: Sequence[float | None]) -> tuple[float | None, ...]:
    """``rate(x[5m])`` at every minute; the common case (no gap in the window) is a plain difference."""
    if None not in samples:  # no gap anywhere: the first minutes read partial windows, the rest a difference
        head = [_rate5m(samples, minute) for minute in range(min(RATE_WINDOW_MIN, len(samples)))]
        present = cast(Sequence[float], samples)
        later = present[RATE_WINDOW_MIN:]
        tail = [(last - first) / RATE_WINDOW_SECONDS for first, last in zip(present[: len(later)], later, strict=True)]
        return (*head, *tail)
    missing = [0]
    for sample in samples:
        missing.append(missing[-1] + (sample is None))
    rates: list[float | None] = []
    for minute, last in enumerate(samples):
        back = minute - RATE_WINDOW_MIN
        first = samples[back] if back >= 0 else None
        if last is not None and first is not None and missing[minute + 1] == missing[back]:
            rates.append((last - first) / RATE_WINDOW_SECONDS)
        else:
            rates.append(_rate5m(samples, minute))
    return tuple(rates)


@dataclass(frozen=True)
class EventSeries:
    """The recorded per-minute bad and total series an event SLI produces for a timeline.

    ``stride`` is how many minutes one recorded block covers: a counter's 5m rate covers
    five, so a window sums every fifth sample back from now; a state's unit count covers one.
    """

    bad: tuple[float | None, ...]
    total: tuple[float | None, ...]
    stride: int = RATE_WINDOW_MIN

    @staticmethod
    def from_counters(timeline: Timeline) -> EventSeries:
        pairs = list(zip(timeline.values, timeline.rates, strict=True))
        bad_inc = [None if v is None else SAMPLE_SECONDS * r * v for v, r in pairs]
        total_inc = [None if v is None else SAMPLE_SECONDS * r for v, r in pairs]
        return EventSeries(_rates5m(_counter(bad_inc)), _rates5m(_counter(total_inc)))

    @staticmethod
    def from_states(timeline: Timeline, units: int) -> EventSeries:
        """A state SLI: bad units and all units, sampled each minute.

        The rules record the counts each minute and build every window from 5-minute blocks,
        ``avg_over_time(counts[4m59s])`` at offsets 0, 5m, 10m, ..., summed (a block with no sample as no
        events). Where every block is full that is the minutes' own average; in a test's first minutes
        the oldest block holds fewer samples and weighs as much as a full one, so the window clears later
        than the minutes' average says (a 4-minute outage in a 2h window at minute 16: 1.4 bad units in
        400, not 4 in 1,700).
        """
        bad = tuple(None if v is None else float(round(v * units)) for v in timeline.values)
        total = tuple(None if v is None else float(units) for v in timeline.values)
        return EventSeries(_blocks(bad), _blocks(total), stride=RATE_WINDOW_MIN)

    def window_ratio(self, window_minutes: int, minute: int) -> float | None:
        """The window's bad over total events at ``minute``: its blocks summed, a missing one as no events."""
        if self.bad[minute] is None or self.total[minute] is None:
            return None  # the rules' blocks are anchored on the current sample
        bad_sums, total_sums = self._prefix
        back = minute - window_minutes
        total = total_sums[minute] - (total_sums[back] if back >= 0 else 0.0)
        return None if total == 0 else (bad_sums[minute] - (bad_sums[back] if back >= 0 else 0.0)) / total

    @cached_property
    def _prefix(self) -> tuple[list[float], list[float]]:
        """Running sums of every ``stride``-th sample, so each window costs O(1) instead of O(window).

        A minute with either sample missing counts as no events.
        """
        pairs = list(zip(self.bad, self.total, strict=True))
        bad = [b if b is not None and t is not None else 0.0 for b, t in pairs]
        total = [t if b is not None and t is not None else 0.0 for b, t in pairs]
        return self._chained(bad), self._chained(total)

    def _chained(self, values: Sequence[float]) -> list[float]:
        """Running sums of every ``stride``-th value: ``sums[m] = values[m] + sums[m - stride]``."""
        sums = [0.0] * len(values)
        for start in range(min(self.stride, len(values))):
            sums[start :: self.stride] = list(itertools.accumulate(values[start :: self.stride], initial=0.0))[1:]
        return sums

    def clears_at(self, window_minutes: int, threshold: float, after: int) -> int | None:
        """The first minute after ``after`` from which the window ratio stays at or under ``threshold``.

        Usually the ratio only falls once the errors stop, but a state SLI's blocks in a test's first
        minutes are not all full: as the minutes pass, the oldest block loses and regains weight, and
        the ratio can dip under the threshold and rise over it again (without ``for``, the alert resolves
        and fires again). The alert is resolved for good only after the last minute it reads over, so the
        minutes are read from the end back (``window_ratio`` inlined: a case asks this for every pair).
        """
        key = (window_minutes, threshold, after)
        if key not in self._cleared:
            self._cleared[key] = self._clears_at(window_minutes, threshold, after)
        return self._cleared[key]

    def _clears_at(self, window_minutes: int, threshold: float, after: int) -> int | None:
        bad, total = self.bad, self.total
        bad_sums, total_sums = self._prefix
        last_over = after
        for minute in range(len(bad) - 1, after, -1):
            if bad[minute] is None or total[minute] is None:
                continue
            back = minute - window_minutes
            window_total = total_sums[minute] - (total_sums[back] if back >= 0 else 0.0)
            if window_total == 0:
                continue
            if (bad_sums[minute] - (bad_sums[back] if back >= 0 else 0.0)) / window_total > threshold:
                last_over = minute
                break
        return last_over + 1 if last_over + 1 < len(bad) else None

    @cached_property
    def _cleared(self) -> dict[tuple[int, float, int], int | None]:
        """``clears_at`` by its arguments: the series are shared between equal timelines."""
        return {}


def _blocks(samples: Sequence[float | None]) -> tuple[float | None, ...]:
    """``avg_over_time(samples[4m59s])`` at each minute: the samples of the last 5 minutes present, averaged;
    None where the minute's own sample is missing (the rules' blocks are anchored on the current sample)."""
    out: list[float | None] = []
    for minute, sample in enumerate(samples):
        present = [s for s in samples[max(0, minute - RATE_WINDOW_MIN + 1) : minute + 1] if s is not None]
        out.append(None if sample is None else sum(present) / len(present))
    return tuple(out)


def _format(value: float, exact: bool = False) -> str:
    """A value as promtool reads it, without binary noise (8907.6, not 8907.599999999999).

    Reviewers read these vectors in diffs; 12 significant digits are far finer than any
    margin of a generated case. ``exact`` keeps every digit, for the rare counter start
    that rounding would move below the previous sample (promtool would see a reset).
    """
    text = repr(float(value) if exact else clean_number(value))
    return text[:-2] if text.endswith(".0") else text


def runs_of(samples: Sequence[float | None]) -> list[tuple[float | None, int]]:
    """(sample, minutes) for each run of equal samples (gaps, None, are runs too)."""
    runs: list[tuple[float | None, int]] = []
    for sample in samples:
        if runs and runs[-1][0] == sample:
            runs[-1] = (runs[-1][0], runs[-1][1] + 1)
        else:
            runs.append((sample, 1))
    return runs


def render_counter(increments: Sequence[float | None]) -> str:
    """promtool expanding notation for a counter: ``start+step x count`` runs; ``_`` for gaps."""
    return render_counter_runs(runs_of(increments))


Runs = tuple[tuple[float | None, int], ...]
# The input series of many cases and specs hold the same runs (the calm slice, an outage at the same
# rate), and a counter's text costs an addition per minute: texts are kept per distinct runs.
_RUNS_CACHE_SIZE = 8192


def _negative_zero(runs: Runs) -> bool:
    """Whether a sample is -0.0: a key equal to 0.0 that is written apart (``-0``), so never looked up."""
    return any(sample == 0 and math.copysign(1.0, sample) < 0 for sample, _ in runs if sample is not None)


def render_counter_runs(runs: Sequence[tuple[float | None, int]]) -> str:
    """``render_counter`` of increments given as (increment, minutes) runs, adjacent runs differing."""
    key = tuple(runs)
    return _counter_text.__wrapped__(key) if _negative_zero(key) else _counter_text(key)


@functools.lru_cache(maxsize=_RUNS_CACHE_SIZE)
def _counter_text(runs: Runs) -> str:
    """``render_counter_runs`` proper.

    promtool expands ``a+bxn`` by repeated addition, so the running total here is kept the
    same way: a run that restarts from a rounded total would look like a counter reset.
    """
    parts: list[str] = []
    total = 0.0
    first = True
    for increment, minutes_held in runs:
        if increment is None:
            parts.append(f"_x{minutes_held}")
            continue
        count = minutes_held - 1
        start, exact = (0.0, False) if first else _counter_start(total, total + increment)
        step = clean_number(increment) if count else 0.0
        total = functools.reduce(operator.add, itertools.repeat(step, count), start)  # promtool's repeated addition
        parts.append(_run(start, step, count, exact))
        first = False
    return " ".join(parts)


def _counter_start(previous: float, start: float) -> tuple[float, bool]:
    """The start of a counter run as written: rounded, unless rounding would fall below ``previous``."""
    rounded = clean_number(start)
    return (rounded, False) if rounded >= previous else (start, True)


def _run(start: float, step: float, count: int, exact: bool = False) -> str:
    if count == 0:
        return _format(start, exact)
    if step == 0:
        return f"{_format(start, exact)}x{count}"
    sign = "+" if step > 0 else "-"
    return f"{_format(start, exact)}{sign}{_format(abs(step))}x{count}"


def render_gauge(values: Sequence[float | None]) -> str:
    """promtool expanding notation for a gauge: ``value x count`` runs; ``_`` for gaps."""
    return render_gauge_runs(runs_of(values))


def render_gauge_runs(runs: Sequence[tuple[float | None, int]]) -> str:
    """``render_gauge`` of values given as (value, minutes) runs, adjacent runs differing."""
    key = tuple(runs)
    return _gauge_text.__wrapped__(key) if _negative_zero(key) else _gauge_text(key)


@functools.lru_cache(maxsize=_RUNS_CACHE_SIZE)
def _gauge_text(runs: Runs) -> str:
    """``render_gauge_runs`` proper."""
    return " ".join(f"_x{count}" if value is None else _run(value, 0.0, count - 1) for value, count in runs)


def render_steps(values: Sequence[float | None]) -> str:
    """promtool expanding notation for a gauge that moves in even steps: ``start+step x count`` runs.

    A timestamp gauge that advances with the clock (``0+60x30``) stays one run instead of
    thirty values; ``_`` for gaps.
    """
    parts: list[str] = []
    index = 0
    while index < len(values):
        value = values[index]
        if value is None:
            end = index
            while end < len(values) and values[end] is None:
                end += 1
            parts.append(f"_x{end - index}")
            index = end
            continue
        end, current = index, value
        following = values[index + 1] if index + 1 < len(values) else None
        step = following - value if following is not None else 0.0
        while end + 1 < len(values) and (after := values[end + 1]) is not None and after - current == step:
            end, current = end + 1, after
        parts.append(_run(value, step, end - index))
        index = end + 1
    return " ".join(parts)
