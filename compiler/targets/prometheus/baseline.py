"""The PromQL of relative bounds: the held baseline each band records, and the crossing itself.

A relative bound compared with the value ``offset`` ago forgets a storm that outlasts the
offset: the storm becomes its own baseline and the alert resolves while it still runs. So
each band with a relative bound records a baseline that is the value ``offset`` ago except
while the bound is crossed against the baseline's own previous sample: then it holds that
pre-storm level (a recording rule may read its own output of the previous evaluation).

The hold ends when the crossing ends (the baseline returns to the value ``offset`` ago and
the alert resolves on the next evaluation), or once the crossing has lasted ``hold``: when
the value is no longer a crossing against its own level ``hold`` ago, it is the new normal.
Slow organic growth never crosses against the value ``offset`` ago, so it never holds.

Factors and the floor are crossed at equality: ``max_factor: 10`` means 10x or more.
All operands carry exactly ``slo`` and the slice labels, so no ``on (...)`` is needed.
"""

from __future__ import annotations

from compiler.model import SLO, Range, series
from compiler.model.naming import Level
from compiler.model.warmup import change_shows_ms
from compiler.text.numbers import go_float


def baseline(slo: SLO, level: Level) -> str:
    """The selector of a band's recorded baseline."""
    return series.baseline(slo, level)


def crossing(slo: SLO, band: Range, above: bool, past: str) -> str | None:
    """The value where it crosses the band's relative bound on one side against ``past``; None without one."""
    rel = band.relative
    factor = None if rel is None else (rel.max_factor if above else rel.min_factor)
    if rel is None or factor is None:
        return None
    now = series.value(slo)
    cond = f"{now} {'>=' if above else '<='} {go_float(factor)} * {past}"
    # Crossed at equality, so a flat zero would cross (0 >= 3 * 0): without a floor the level must be above 0.
    floor = f">= {go_float(rel.floor)}" if rel.floor else "> 0"
    return cond + f"\n  and {now if above else past} {floor}"


def _crossings(slo: SLO, band: Range, past: str) -> str:
    """The crossing on either side that the band has, as one expression."""
    found = [c for above in (True, False) if (c := crossing(slo, band, above, past)) is not None]
    return found[0] if len(found) == 1 else "(" + ")\nor\n(".join(found) + ")"


def _indent(text: str, spaces: int = 2) -> str:
    return "\n".join(" " * spaces + line for line in text.splitlines())


def baseline_expr(slo: SLO, band: Range, level: Level) -> str:
    """The held baseline: its previous value while that is still crossed (for at most ``hold``), else the
    value ``offset`` ago."""
    rel = band.relative
    assert rel is not None
    held = baseline(slo, level)
    long_ago = series.value(slo, rel.hold_ms)
    still_crossed = _indent(_crossings(slo, band, held), 4)
    new_normal = _indent(_crossings(slo, band, long_ago), 6)
    return (
        f"(\n  {held}\n  and\n  (\n{still_crossed}\n  )\n"
        f"  unless\n  (\n    {long_ago}\n    unless\n    (\n{new_normal}\n    )\n  )\n)\n"
        f"or\n{_warm_past(slo, rel.offset_ms)}"
    )


def _warm_past(slo: SLO, offset_ms: int) -> str:
    """The value ``offset`` ago, only where it had already warmed up then (its series existed a warm-up
    earlier): a new slice's first, partial-window values are no baseline to judge a jump against."""
    past = series.value(slo, offset_ms)
    warmup = change_shows_ms(slo.sli)
    if not warmup:
        return past
    return f"(\n  {past}\n  and\n  {series.value(slo, offset_ms + warmup)}\n)"
