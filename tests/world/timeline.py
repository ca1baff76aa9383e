"""Sample lists and their promtool ``input_series`` notation.

A series is one value per scrape (``STEP_S`` apart from time 0) or ``None`` where it was not
scraped. Prometheus writes a stale marker when a series it scraped disappears (target gone,
scrape failed, the exporter stopped exporting it), so the notation writes ``stale`` at each
present-to-absent transition; a series that does not exist yet is just blank (``_``).
"""

from __future__ import annotations

import functools
from collections.abc import Callable, Sequence
from dataclasses import dataclass

STEP_S = 30  # both stacks scrape every 30 s by default
Samples = list[float | None]


@dataclass(frozen=True)
class Series:
    """One raw series: metric name, labels and samples from time 0."""

    name: str
    labels: tuple[tuple[str, str], ...]
    samples: tuple[float | None, ...]

    def selector(self) -> str:
        inner = ",".join(f'{key}="{value}"' for key, value in sorted(self.labels) if value != "")
        return f"{self.name}{{{inner}}}"

    @functools.cached_property
    def text(self) -> str:
        """The samples in promtool's notation, worked out once per series: a data set in the world data cache
        keeps them (the instance's ``__dict__`` is pickled with it), so a test writing the data set reads them.
        A series with other samples is another instance (``dataclasses.replace``), with a notation of its own."""
        return notation(self.samples)


def series(name: str, labels: dict[str, str], samples: Sequence[float | None]) -> Series:
    return Series(name, tuple(sorted(labels.items())), tuple(samples))


def number(value: float) -> str:
    """Shortest exact text: integers without a point, other values to 12 significant digits."""
    if float(value).is_integer() and abs(value) < 1e15:
        return str(int(value))
    return format(value, ".12g")


def _run(samples: Sequence[float | None], start: int) -> tuple[int, str]:
    """The longest arithmetic run from ``start``: its end and its notation."""
    first = samples[start]
    assert first is not None
    end, delta, previous = start + 1, 0.0, first
    following = samples[end] if end < len(samples) else None
    if following is not None:
        delta = following - first
    tolerance, size = 1e-9 * max(1.0, abs(delta)), len(samples)
    while end < size:  # the hot loop of writing a data set: one pass per sample, no call on the usual path
        value = samples[end]
        if value is None:
            break
        gap = abs(value - previous - delta)
        if gap > tolerance and gap > 1e-12 * abs(value):
            break
        previous = value
        end += 1
    count = end - start
    if count == 1:
        return end, number(first)
    step = f"+{number(delta)}" if delta >= 0 else f"-{number(-delta)}"
    return end, f"{number(first)}{step}x{count - 1}"


def notation(samples: Sequence[float | None]) -> str:
    """promtool's expanding notation: ``a+bxn`` is n+1 values, ``_xn`` n blanks."""
    parts: list[str] = []
    index, seen = 0, False
    while index < len(samples):
        if samples[index] is None:
            end = index
            while end < len(samples) and samples[end] is None:
                end += 1
            blanks = end - index
            if seen:
                parts.append("stale")
                blanks -= 1
            if blanks:
                parts.append("_" if blanks == 1 else f"_x{blanks}")
            index = end
            continue
        index, text = _run(samples, index)
        parts.append(text)
        seen = True
    return " ".join(parts)


Rates = Callable[[int], float | None] | Sequence[float | None]


def counter(rate: Rates, count: int, start: float = 0.0, factor: float = 1.0) -> Samples:
    """A counter whose per-second rate at sample ``i`` is ``factor * rate[i]`` (None: not scraped).

    After a gap the process has restarted (a reboot), so the counter starts again from 0.
    """
    rates = rate if isinstance(rate, Sequence) else [rate(index) for index in range(count)]
    out: Samples = []
    value, previous_present = start, False
    for per_second in rates[:count]:
        if per_second is None:
            out.append(None)
            value, previous_present = 0.0, False
            continue
        if previous_present:
            value += per_second * factor * STEP_S
        out.append(value)
        previous_present = True
    return out


def steps(every: int, count: int, present: Callable[[int], bool], offset: int = 0) -> Samples:
    """A counter of rare events: +1 every ``every`` samples (integer values, as scraped)."""
    return [float((index + offset) // every) if present(index) else None for index in range(count)]


def const(value: float) -> Callable[[int], float | None]:
    """A rate or value that holds for every sample."""
    return lambda _index: value


def gauge(value: Callable[[int], float | None], count: int) -> Samples:
    return [value(index) for index in range(count)]
