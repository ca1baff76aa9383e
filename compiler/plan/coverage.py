"""What the scrape profile lets the plan compile: specs of unscraped components left out, with notes.

A stack may not scrape a component by default (kube-prometheus scrapes no etcd). A spec whose
SLI reads only that component (its ``slice.component``) would have no series there, so its
no-data alert would fire on a healthy cluster from day one, and its rules would judge nothing.
The plan leaves such a spec out on that profile and says so (a note, not an error: the rest
of the library compiles and ``generate`` exits 0); the runbook index and the catalog list it,
so nobody believes it is watched. Naming the component in ``scrape_profile.components`` says
the project scrapes it, and the spec compiles again.

A latency threshold that reads the nearest kept edge above the one it declares (the stack
drops the declared edge, and the spec allows it with ``on_dropped_edge``) is a note too.
"""

from __future__ import annotations

import dataclasses
from dataclasses import dataclass

from compiler.diagnostics import Diagnostic
from compiler.model import SLO, EdgeFallback, LatencySLI, LatencyThreshold, Model
from compiler.promql import render_selector
from compiler.text.numbers import go_float


@dataclass(frozen=True)
class LeftOut:
    """A spec the profile's stack cannot feed: not compiled, listed with why and how to compile it."""

    slo: SLO
    component: str
    note: Diagnostic

    @property
    def reason(self) -> str:
        return self.note.message


def left_out_note(slo: SLO, stack: str, component: str, how: str) -> Diagnostic:
    """The note at the spec's ``slice.component``: what is missing and the two steps that compile it."""
    message = (
        f"{stack} scrapes no {component} by default: this spec is left out; add {component} scraping "
        f"({how}) and set scrape_profile.components.{component} in project.yaml to compile it"
    )
    return Diagnostic(slo.slice.component_at or slo.position, message)


def unscraped(model: Model) -> tuple[LeftOut, ...]:
    """The specs whose component the profile's stack does not scrape, in spec order."""
    profile = model.project.scrape_profile
    found = []
    for slo in model.slos:
        component = slo.slice.component
        how = profile.how_to_scrape(component) if profile is not None and component is not None else None
        if profile is not None and component is not None and how is not None:
            found.append(LeftOut(slo, component, left_out_note(slo, profile.stack, component, how)))
    return tuple(found)


def without(model: Model, left_out: tuple[LeftOut, ...]) -> Model:
    """The model the targets compile: the left-out specs removed, and the inhibitions that pointed at them."""
    if not left_out:
        return model
    gone = {item.slo.name for item in left_out}
    kept = tuple(
        dataclasses.replace(slo, explains=tuple(e for e in slo.explains if e.slo not in gone))
        for slo in model.slos
        if slo.name not in gone
    )
    return dataclasses.replace(model, slos=kept)


def edge_fallbacks(slo: SLO) -> tuple[tuple[EdgeFallback, LatencyThreshold], ...]:
    """Each threshold of the spec that reads a kept edge instead of its dropped one, with the threshold read."""
    if not isinstance(slo.sli, LatencySLI):
        return ()
    return tuple((t.fallback, t) for t in slo.sli.thresholds if t.fallback is not None)


def fallback_text(fallback: EdgeFallback, threshold: LatencyThreshold) -> str:
    """Why the threshold reads another edge, in the words of the note, the runbook and ``explain``."""
    declared = go_float(fallback.declared)
    which = f"the threshold for {render_selector(None, threshold.when)}" if threshold.when else "this threshold"
    return (
        f'on {fallback.stack} {which} reads le="{go_float(threshold.le)}" because the stack drops le="{declared}" '
        f"of {fallback.histogram}_bucket ({fallback.relabeling}); on_dropped_edge: next_kept_above chose the "
        "nearest kept edge above, so requests up to that edge count as fast"
    )


def fallback_notes(model: Model) -> tuple[Diagnostic, ...]:
    return tuple(
        Diagnostic(fallback.position, fallback_text(fallback, threshold))
        for slo in model.slos
        for fallback, threshold in edge_fallbacks(slo)
    )
