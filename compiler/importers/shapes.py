"""Which SLI kind an imported query becomes: a ratio of counters, a histogram latency or a unit state.

``queries`` reads the shapes; this module picks the kind, checks what each kind needs (label
names to slice by, the latency threshold against the histogram's edges and the stacks' kept
edges) and words the notes. A query that fits no kind is refused with the shapes that do.
"""

from __future__ import annotations

from compiler.importers import histograms, queries
from compiler.importers.draft import LABEL_NAME_OK, Shape, escaped
from compiler.importers.queries import Latency, State
from compiler.text.numbers import go_float

BY_WRONG = "the query aggregates by '{}', which is not a Prometheus label name"
NOT_A_SHAPE = "the {which} query is not {shapes}: write this SLI by hand"
RAW_NOT_A_SHAPE = (
    "a raw SLI is one error-ratio query, and this one is not 1 - (bucket{{le=...}} / count) of a histogram nor "
    "1 - (sum(sum_over_time(g[{{{{.window}}}}])) / sum(count_over_time(g[{{{{.window}}}}]))) of a 0..1 gauge g: "
    "the ratio SLI here names the bad and total counters and writes the windows itself, so the query's events "
    "cannot be recovered; write the SLI by hand"
)


def from_events(error: str, total: str) -> Shape | str:
    """Sloth's ``events``: bad and total queries."""
    bad, every = queries.rate_of_counter(error), queries.rate_of_counter(total)
    if bad is not None and every is not None:
        if bad[1] != every[1]:
            return "the error and total queries aggregate by different labels"
        return checked(Shape(bad[1], "bad", bad[0], every[0]))
    latency = queries.latency_events(error, total) or queries.latency_share(error, total)
    if latency is not None:
        return _latency(latency)
    state = queries.state_events(error, total)
    if state is not None:
        return checked(Shape(state.by, state=state, notes=(_state_note(state),)))
    which = "error" if bad is None else "total"
    return NOT_A_SHAPE.format(which=which, shapes=queries.SHAPES)


def from_error_ratio(query: str) -> Shape | str:
    """Sloth's ``raw``: one error-ratio query."""
    latency = queries.latency_error_ratio(query)
    if latency is not None:
        return _latency(latency)
    state = queries.state_error_ratio(query)
    if state is not None:
        return checked(Shape(state.by, state=state, notes=(_state_note(state),)))
    return RAW_NOT_A_SHAPE


def from_good(field: str, selector: tuple[str, tuple[str, ...]], total: tuple[str, tuple[str, ...]]) -> Shape:
    """An OpenSLO ratio of counter selectors; ``good`` with one negative matcher becomes ``bad``."""
    if field == "good":
        bad = queries.bad_of_good(selector[0], total[0])
        if bad is not None:
            note = (
                f"good {selector[0]} is written as bad {bad}: the same events (every series matches exactly one of "
                "the two matchers), in a form the generated tests can build"
            )
            return Shape(selector[1], "bad", bad, total[0], notes=(note,))
    return Shape(selector[1], field, selector[0], total[0])


def latency_of_good(good: str, total: str) -> Shape | None:
    """OpenSLO's bucket-over-count ratio as a latency SLI (a refusal reason is a note here: the ratio stays)."""
    latency = queries.latency_good(good, total, fixed=True)
    if latency is None:
        return None
    shape = _latency(latency)
    return shape if isinstance(shape, Shape) else None


def _latency(latency: Latency) -> Shape | str:
    edges = histograms.check(latency)
    if isinstance(edges, str):
        return edges
    notes = list(edges.notes)
    if latency.vmrange:
        bucket = f'{latency.histogram}_bucket{{le="{go_float(latency.threshold)}"}}'
        notes.insert(
            0,
            "the query was MetricsQL (histogram_share over VictoriaMetrics vmrange buckets); this spec reads "
            f"Prometheus buckets: {bucket} and {latency.histogram}_count must exist (a histogram with that edge), "
            "as histogram_share interpolated inside a vmrange bucket",
        )
    shape = Shape(
        latency.by,
        latency=latency,
        buckets=edges.buckets,
        next_kept_above=edges.next_kept_above,
        notes=tuple(notes),
    )
    return checked(shape)


def _state_note(state: State) -> str:
    if state.gauge_mean:
        return (
            f"the error ratio was 1 - the mean of {state.expr}: a state SLI whose per-unit state is the gauge itself "
            "(its good share), so the gauge must stay between 0 and 1, as Sloth's query assumed"
        )
    return (
        "the error query counted the series beyond a bound over all series at each evaluation: a state SLI, "
        f"each series one unit, good while {state.expr} is 1"
    )


def checked(shape: Shape) -> Shape | str:
    """``shape``, or why not: its labels to slice by must be Prometheus label names."""
    wrong = [label for label in shape.by if not LABEL_NAME_OK.match(label)]
    return BY_WRONG.format(escaped(wrong[0])) if wrong else shape
