"""A latency threshold read out of a query, checked against the histogram's edges and what the stacks keep.

Sloth's and OpenSLO's latency queries read one bucket (``le="0.4"``). On a histogram of the
built-in catalogue that edge must be one of its edges (else the query matched no bucket and
the spec would not compile); on an edge a built-in stack drops at scrape time the spec gets
``on_dropped_edge: next_kept_above``, the handling ``generate`` gives such a threshold when a
spec asks for it: there the nearest kept edge above is read (more lenient), with a note on
``generate``. A histogram the catalogue does not know gets the one edge the query shows as its
``buckets``.
"""

from __future__ import annotations

from dataclasses import dataclass

from compiler.importers.queries import Latency
from compiler.model.buckets import KNOWN_BUCKETS
from compiler.model.stacks import BUILT_IN_STACKS
from compiler.text.numbers import go_float


@dataclass(frozen=True)
class Checked:
    """How the threshold is written: the declared buckets (unknown histograms), the fallback, the notes."""

    buckets: tuple[float, ...] = ()
    next_kept_above: bool = False
    notes: tuple[str, ...] = ()


def check(latency: Latency) -> Checked | str:
    """The way to write ``latency``'s threshold, or why it cannot be imported."""
    le = go_float(latency.threshold)
    edges = KNOWN_BUCKETS.get(latency.histogram)
    if edges is None:
        return Checked(
            buckets=(latency.threshold,),
            notes=(
                f"{latency.histogram} is not in the built-in bucket catalogue: buckets lists le={le}, the edge the "
                "query read; add the histogram's other finite edges",
            ),
        )
    if latency.threshold not in edges:
        lower = max((edge for edge in edges if edge < latency.threshold), default=None)
        upper = min((edge for edge in edges if edge > latency.threshold), default=None)
        near = " or ".join(go_float(edge) for edge in (lower, upper) if edge is not None)
        return (
            f'le="{le}" is not a bucket edge of {latency.histogram} (Kubernetes 1.28-1.31 edges; nearest: {near}), '
            "so the query matched no bucket series: write the SLI by hand with an edge the histogram has "
            "(with buckets and buckets_override if yours is instrumented differently)"
        )
    notes = []
    for stack in sorted(BUILT_IN_STACKS.values(), key=lambda profile: profile.stack):
        dropped = stack.dropped(latency.histogram)
        if latency.threshold not in dropped:
            continue
        kept = [edge for edge in edges if edge > latency.threshold and edge not in dropped]
        there = f'le="{go_float(kept[0])}"' if kept else "no kept edge (generate refuses it there)"
        notes.append(
            f'{stack.stack} drops le="{le}" of {latency.histogram}_bucket ({stack.relabeling}): on_dropped_edge: '
            f"next_kept_above reads {there} on that stack instead, more lenient, and generate notes it; if your "
            f"stack keeps le={le}, set scrape_profile.dropped_buckets.{latency.histogram} in project.yaml"
        )
    return Checked(next_kept_above=bool(notes), notes=tuple(notes))
