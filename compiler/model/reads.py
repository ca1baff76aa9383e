"""The raw series a rule group reads per evaluation: the cost that remains once windows are recorded.

Every longer window reads the SLO's own recorded series; what is left is the raw reads of the
first rules (``compiler.model.queries``), mostly over 5m. A raw series read twice in one
evaluation doubles that cost for nothing when an earlier rule of the group already recorded
what the second read computes, so ``explain`` and ``validate`` list each raw selector with how
many times the group reads it. Computed from the generated expressions with the PromQL parser,
so it counts what the engine will read, whatever built the text.
"""

from __future__ import annotations

from collections.abc import Collection, Iterable
from dataclasses import dataclass

from compiler.promql import Matcher, format_duration, render_selector, selector_reads


@dataclass(frozen=True)
class RawRead:
    """One raw selector of a rule group: how often each evaluation reads it, over which ranges, in which rules."""

    metric: str | None
    matchers: tuple[Matcher, ...]
    times: int
    ranges_ms: tuple[int, ...]  # each read's range, 0 for an instant read
    rules: tuple[str, ...]  # the recorded series or alert of each read

    @property
    def selector(self) -> str:
        return render_selector(self.metric, self.matchers)

    def text(self) -> str:
        """``1x over 5m: metric{...}``; an instant read says ``instant``."""
        over = ", ".join(sorted({format_duration(r) if r else "instant" for r in self.ranges_ms}))
        where = ", ".join(dict.fromkeys(self.rules))
        return f"{self.times}x ({over}; {where}): {self.selector}"


def raw_reads(rules: Iterable[tuple[str, str]], recorded: Collection[str]) -> tuple[RawRead, ...]:
    """The raw selectors of ``rules`` ((name, expr) in group order), deduplicated, in first-read order.

    A selector of a series in ``recorded`` (the group's own recording rules) is not raw: the
    engine reads it back from the group's own output, one sample per series.
    """
    found: dict[tuple[str | None, tuple[Matcher, ...]], list[tuple[int, str]]] = {}
    for name, expr in rules:
        for metric, matchers, range_ms in selector_reads(expr):
            if metric in recorded:
                continue
            found.setdefault((metric, matchers), []).append((range_ms, name))
    return tuple(
        RawRead(metric, matchers, len(reads), tuple(r for r, _ in reads), tuple(n for _, n in reads))
        for (metric, matchers), reads in found.items()
    )


def repeated(reads: Iterable[RawRead]) -> tuple[RawRead, ...]:
    """The raw selectors read more than once per evaluation."""
    return tuple(read for read in reads if read.times > 1)
