"""The PromQL a live check sends: the spec's raw SLI expressions, made to run on a server
that does not hold the spec's recorded series yet.

A raw expression may read one of the spec's own recorded 5m series (a bad rate that falls back
to ``0 * slo:sli_total:rate5m{slo=...}``); on a server where the spec is not live that series does
not exist, so its recording expression is inlined in its place, carrying the ``slo`` label the
rule would have added. Longer windows of an event SLI are the same expressions with the 5m range
widened, which is the mean rate over the window, as the recorded windows compute it.
"""

from __future__ import annotations

from compiler.model import SLO, StateSLI, queries, series
from compiler.promql import format_duration, quote


def inline_recorded(expr: str, slo: SLO, raw: dict[str, str] | None = None) -> str:
    """``expr`` with every reference to the spec's raw recorded series replaced by its expression."""
    raw = queries.raw_expressions(slo, same_evaluation=False) if raw is None else raw
    for _ in raw:  # an inlined body may read an earlier recorded series (the per-unit value)
        before = expr
        for name, body in raw.items():
            reference = series.recorded(name, slo)
            if reference in expr:
                inlined = f'label_replace(({body}), "slo", {quote(slo.name)}, "", "")'
                expr = expr.replace(reference, inlined)
        if expr == before:
            break
    return expr


def raw_queries(slo: SLO) -> dict[str, str]:
    """Each raw recorded series of the spec as a query a server without the spec's rules can run.

    The raw forms (``same_evaluation=False``): a series the rules compute from the per-unit value or
    a ratio's parts, with matchers on them, reads the raw series here instead.
    """
    raw = queries.raw_expressions(slo, same_evaluation=False)
    return {name: inline_recorded(body, slo, raw) for name, body in raw.items()}


def window_queries(slo: SLO, window_ms: int) -> tuple[str, str]:
    """(total, bad) mean event rates of an event SLI over ``window_ms``, from raw series."""
    raw = raw_queries(slo)
    total, bad = raw[series.TOTAL_5M], raw[series.BAD_5M]
    window = format_duration(window_ms)
    if isinstance(slo.sli, StateSLI):
        step = "1m"
        return f"avg_over_time(({total})[{window}:{step}])", f"avg_over_time(({bad})[{window}:{step}])"
    wide = f"[{window}]"
    return total.replace(f"[{queries.RAW_RANGE}]", wide), bad.replace(f"[{queries.RAW_RANGE}]", wide)
