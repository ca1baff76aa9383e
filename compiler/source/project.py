"""The cross-spec stage: build the model from every document, with the checks that span files
(explains links and cycles, automations, series budgets, alert-prefix and alert-name collisions,
families and project-wide labels, rate windows against the evaluation interval).
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import replace
from typing import Any

from compiler import forked, promql
from compiler.diagnostics import Diagnostics, Position
from compiler.model import (
    SLO,
    Explains,
    Model,
    Project,
    Team,
)
from compiler.model.budget import estimate
from compiler.model.stacks import ScrapeProfile
from compiler.promql import PromQLError
from compiler.source.conventions import check_alert_name_collisions, check_families, check_project_labels
from compiler.source.load import Document, PathKey
from compiler.source.reader import SpecReader
from compiler.source.registry import (
    build_project,
    build_teams,
    check_foreign_alerts,
    check_receiver_names,
    check_templated_fields,
)
from compiler.source.schema import Checked, check_document, suggest
from compiler.source.spec import build_slo
from compiler.source.vanished import MAX_SAMPLES_PER_EVALUATION

SHARED_MIN_SPECS = 200  # a tree of fewer specs is checked in one process: the fork costs about what it saves
SHARED_BLOCK = 25  # specs per item: the two processes finish within a block of each other
SHARED_MAX_BLOCKS = 100  # a larger tree has larger blocks (the queue holds at most forked.MAX_ITEMS items)
SHARED_GRACE_S = 60.0  # how long the child may still take once this process has checked its share


def _check_rate_windows(documents: list[Document], project: Project, diagnostics: Diagnostics) -> None:
    """rate() and its kin need two samples in their window: at least twice the evaluation interval. A gauge's
    presence expression too: with too short a window it reads nothing, and absence is read as no data."""
    interval = project.evaluation_interval_ms
    for document in documents:
        for key, text in _sli_expressions(document):
            try:
                promql.check_bounds(text)
                calls = promql.range_calls(text)
            except PromQLError:
                continue  # reported where the expression is parsed
            _check_calls_against_interval(document.position(key), calls, interval, diagnostics)


def _sli_expressions(document: Document) -> list[tuple[PathKey, str]]:
    """The free PromQL of a gauge or state SLI: its ``expr``, and a gauge's presence expression."""
    sli = document.data.get("sli")
    kind = next((k for k in ("gauge", "state") if isinstance(sli, dict) and k in sli), None)
    if kind is None or not isinstance(sli[kind], dict):
        return []
    fields = ("expr", "absent_as_zero_while") if kind == "gauge" else ("expr",)
    return [(("sli", kind, name), sli[kind][name]) for name in fields if isinstance(sli[kind].get(name), str)]


def _check_calls_against_interval(
    position: Position, calls: tuple[tuple[str, int], ...], interval: int, diagnostics: Diagnostics
) -> None:
    """rate() and its kin need two samples in their window: at least twice the evaluation interval."""
    for function, range_ms in calls:
        if function in promql.TWO_SAMPLE_FUNCTIONS and range_ms < 2 * interval:
            diagnostics.error(
                position,
                f"{function}() over {promql.format_duration(range_ms)} is shorter than twice the evaluation "
                f"interval ({promql.format_duration(interval)}): it needs two samples in its window, so it "
                f"reads nothing most of the time; use at least {promql.format_duration(2 * interval)} "
                "(4x the scrape interval is the usual advice)",
            )


def build_model(documents: list[Document], diagnostics: Diagnostics) -> Model | None:
    """Validate every document and build the model; None when any problem was found."""
    model = check_model(documents, diagnostics)
    return None if diagnostics else model


def check_model(documents: list[Document], diagnostics: Diagnostics) -> Model:
    """Validate every document; the model of the specs that built (all of them when no problem was found).

    Every document is checked as far as its schema-valid parts allow, so one run reports
    schema, owner, bucket, aggregation and cross-spec problems together.
    """
    specs, project, teams, slos, built, drafts = _clean_tree_in_two(documents) or _specs_here(documents, diagnostics)
    known = {c.readable.data["name"] for c in specs if "name" in c.readable.data and "name" not in c.broken}
    _check_links(built, slos, known, project, diagnostics)
    _check_explains_scope(built, slos, diagnostics)
    _check_explains_cycles(built, slos, diagnostics)
    slos = expand_component_explains(built, slos, diagnostics)
    _check_rate_windows([checked.readable for checked in specs], project, diagnostics)
    # Specs with problems of their own still get the checks that need only their slice and SLI.
    drafted = [document for document, _ in drafts]
    partial = {**{slo.name: slo for _, slo in drafts}, **slos}
    _check_budgets([*built, *drafted], partial, project, diagnostics)
    _check_vanished_cost([*built, *drafted], partial, project, diagnostics)
    check_families(built, project, diagnostics)
    check_project_labels(built, slos, project, diagnostics)
    check_alert_name_collisions(built, slos, diagnostics)
    alert_owners: dict[str, str] = {}
    for slo in slos.values():
        if slo.alert_name in alert_owners:
            diagnostics.error(
                _position_of(built, slo.name),
                f"alert name prefix '{slo.alert_name}' is also used by spec '{alert_owners[slo.alert_name]}'",
            )
        alert_owners[slo.alert_name] = slo.name
    return Model(
        project=project,
        teams=tuple(sorted(teams.values(), key=lambda t: t.name)),
        slos=tuple(slos[name] for name in sorted(slos)),
    )


Built = tuple[list[Checked], Project, dict[str, Team], dict[str, SLO], list[Document], list[tuple[Document, SLO]]]


def _specs_here(documents: list[Document], diagnostics: Diagnostics) -> Built:
    """Every document checked and every spec built in this process, each problem reported: (the SLO
    documents' checks, the project, the teams, the specs that built by name, their documents, the drafts)."""
    specs = [checked for checked in (check_document(d, diagnostics) for d in documents) if checked is not None]
    specs = [checked for checked in specs if checked.kind == "SLO"]

    project = build_project(documents, diagnostics)
    teams = build_teams(documents, project, diagnostics)
    check_templated_fields(documents, diagnostics)
    check_receiver_names(documents, teams, diagnostics)
    check_foreign_alerts(documents, teams, diagnostics)

    slos, built, drafts = _build_specs(specs, teams, diagnostics, project.scrape_profile)
    return specs, project, teams, slos, built, drafts


def _clean_tree_in_two(documents: list[Document]) -> Built | None:
    """What ``_specs_here`` answers for a large tree without a problem, its specs checked and built in two
    processes (``compiler.forked``, blocks of ``SHARED_BLOCK`` specs or more, at most ``SHARED_MAX_BLOCKS``
    of them: the same specs, in the same order).

    None when the tree has fewer than ``SHARED_MIN_SPECS`` specs, a fork is not safe here, or anything
    finds a problem (a schema error, a spec that does not build, a name used twice): ``_specs_here`` then
    does it all again in this process, so problems are reported exactly as they always are. Only a
    clean tree is worth sharing: its schema checks and models are most of its compile before rendering
    (1,000 specs: 1.1 s of 1.4 s), and a tree with problems is not rendered.
    """
    is_spec = [isinstance(d.data, dict) and d.data.get("kind") == "SLO" for d in documents]
    spec_documents = [document for document, spec in zip(documents, is_spec, strict=True) if spec]
    if len(spec_documents) < SHARED_MIN_SPECS or not forked.available():
        return None
    found = Diagnostics()
    for document, spec in zip(documents, is_spec, strict=True):
        if not spec:
            check_document(document, found)
    project = build_project(documents, found)
    teams = build_teams(documents, project, found)
    check_templated_fields(documents, found)
    check_receiver_names(documents, teams, found)
    check_foreign_alerts(documents, teams, found)
    if found:
        return None
    size = max(SHARED_BLOCK, -(-len(spec_documents) // SHARED_MAX_BLOCKS))
    blocks = [spec_documents[start : start + size] for start in range(0, len(spec_documents), size)]
    items = [_checked_and_built(block, teams, project.scrape_profile) for block in blocks]
    built = forked.run_shared(items, range(len(items)), SHARED_GRACE_S)
    if any(block is None for block in built):
        return None
    slos = {slo.name: slo for block in built for slo in block or ()}
    if len(slos) != len(spec_documents):
        return None  # a name used twice: reported by the specs' own check
    specs = [Checked("SLO", document, frozenset(), True) for document in spec_documents]
    return specs, project, teams, slos, spec_documents, []


def _checked_and_built(
    documents: list[Document], teams: dict[str, Team], profile: ScrapeProfile | None
) -> Callable[[], list[SLO] | None]:
    """The models of a block of spec documents, or None at the first problem any of them has."""

    def block() -> list[SLO] | None:
        found = Diagnostics()
        slos: list[SLO] = []
        for document in documents:
            checked = check_document(document, found)
            if found or checked is None or not checked.valid:
                return None
            slo, _ = _build_spec(document, teams, found, frozenset(), profile)
            if found or slo is None or slo.name != document.data.get("name"):
                return None
            slos.append(slo)
        return slos

    return block


def _build_specs(
    specs: list[Checked], teams: dict[str, Team], diagnostics: Diagnostics, profile: ScrapeProfile | None = None
) -> tuple[dict[str, SLO], list[Document], list[tuple[Document, SLO]]]:
    """Every spec checked, schema-valid or not; (the specs that built, by name, their documents, and
    the drafts of the specs that did not build but whose slice and SLI read, see ``build_slo``).

    A spec with a schema error still gets every check of its sections that passed the
    schema, so one run reports everything; it never builds.
    """
    slos: dict[str, SLO] = {}
    built: list[Document] = []
    drafts: list[tuple[Document, SLO]] = []
    seen: dict[str, str] = {}
    for checked in specs:
        document = checked.readable
        name = document.data.get("name") if "name" not in checked.broken else None
        if isinstance(name, str) and name in seen:
            diagnostics.error(
                document.position(("name",)), f"duplicate spec name '{name}' (first defined at {seen[name]})"
            )
            continue
        if isinstance(name, str):
            seen[name] = str(document.position(("name",)))
        slo, draft = _build_spec(document, teams, diagnostics, checked.broken, profile)
        if slo is not None:
            slos[slo.name] = slo
            built.append(document)
        elif draft is not None:
            drafts.append((document, draft))
    return slos, built, drafts


def _build_spec(
    document: Document,
    teams: dict[str, Team],
    diagnostics: Diagnostics,
    broken: frozenset[str] = frozenset(),
    profile: ScrapeProfile | None = None,
) -> tuple[SLO | None, SLO | None]:
    """One spec's model (or its draft); a check that trips over the spec is reported at it, never a crash."""
    reader = SpecReader(document, teams, diagnostics, broken, profile)
    try:
        return build_slo(reader), reader.draft
    except Exception as exc:
        diagnostics.error(
            document.key_position(("sli",)),
            f"cannot check this spec ({type(exc).__name__}: {exc}); please also report it as a compiler bug",
        )
        return None, None


def _check_links(
    documents: list[Document], slos: dict[str, SLO], known: set[str], project: Project, diagnostics: Diagnostics
) -> None:
    """Cross-spec references: what a spec explains, and the automation it names.

    ``known`` holds every spec name, built or not: explaining a spec that has problems of its
    own is not an unknown spec (its problems are reported at it).
    """
    automations = {a.name for a in project.automations}
    for document in documents:
        slo = slos.get(document.data["name"])
        if slo is None:
            continue
        if slo.mitigation.automation is not None and slo.mitigation.automation not in automations:
            hint = suggest(slo.mitigation.automation, sorted(automations))
            listed = ", ".join(sorted(automations)) or "none in the project"
            diagnostics.error(
                document.position(("mitigation", "automation")),
                f"unknown automation '{slo.mitigation.automation}' ({listed}){hint}",
            )
        for index, explains in enumerate(slo.explains):
            key: PathKey = ("explains", index)
            target = slos.get(explains.slo)
            if explains.slo == slo.name:
                diagnostics.error(document.position((*key, "slo")), "a spec cannot explain itself")
                continue
            if target is None and explains.slo in known:
                continue
            if target is None:
                hint = suggest(explains.slo, sorted(known))
                diagnostics.error(document.position((*key, "slo")), f"explains unknown spec '{explains.slo}'{hint}")
                continue
            for position, label in enumerate(explains.equal):
                missing = [s.name for s in (slo, target) if label not in s.slice.by]
                if missing:
                    diagnostics.error(
                        document.position((*key, "equal", position)),
                        f"'{label}' is not a slice label of {' and '.join(missing)}, so alerts cannot be matched on it",
                    )


def _alert_severities(slo: SLO) -> set[str]:
    """The severities of a spec's alerts: what the source matcher of its explains entries can match."""
    found: set[str] = set()
    if slo.objective is not None:
        found.update(burn.severity for burn in slo.objective.burn_alerts)
    found.update(band.severity for band in (slo.normal_range, slo.critical_range) if band is not None)
    if slo.no_data.enabled:
        found.add(slo.no_data.severity)
    if slo.no_data.vanished is not None:
        found.add(slo.no_data.vanished.severity)
    return found


def _check_explains_scope(documents: list[Document], slos: dict[str, SLO], diagnostics: Diagnostics) -> None:
    """An explains entry must be able to fire, and only for the slice it explains.

    With ``equal: []`` Alertmanager inhibits regardless of labels, so one cluster's page
    silences every cluster's alerts of the explained spec; an entry whose severity the spec
    never alerts with is never a source, so the explained alerts are never held back.
    """
    for document in documents:
        slo = slos.get(document.data["name"])
        if slo is None:
            continue
        severities = _alert_severities(slo)
        for index, explains in enumerate(slo.explains):
            key: PathKey = ("explains", index)
            target = slos.get(explains.slo)
            if target is None or target.name == slo.name:
                continue  # reported by _check_links
            if not explains.equal:
                shared = [label for label in slo.slice.by if label in target.slice.by]
                fix = (
                    f"list the slice labels both share ({', '.join(shared)})"
                    if shared
                    else f"{slo.name} and {target.name} share no slice label, so drop the entry or slice both by one"
                )
                diagnostics.error(
                    document.position((*key, "equal")),
                    f"explains {target.name} with equal: [] would let an alert of {slo.name} in one slice (one "
                    f"cluster) silence {target.name} in every slice; {fix}",
                )
            if explains.severity != "any" and explains.severity not in severities:
                own = ", ".join(sorted(severities)) or "none"
                diagnostics.error(
                    document.position((*key, "severity")),
                    f"explains {target.name} can never inhibit: only {slo.name}'s {explains.severity} alerts would "
                    f"silence it, and it has none (its alerts are {own}); set severity: any (or {own}) on this "
                    f"entry, or give the spec a {explains.severity} alert",
                )


def _explains_path(start: str, goal: str, slos: dict[str, SLO]) -> list[str] | None:
    """The shortest chain of explains from ``start`` to ``goal`` (both included), or None."""
    previous: dict[str, str] = {}
    queue = [start]
    while queue:
        current = queue.pop(0)
        if current == goal:
            path = [goal]
            while path[-1] != start:
                path.append(previous[path[-1]])
            return path[::-1]
        source = slos.get(current)
        for explains in source.explains if source is not None else ():
            if explains.slo not in previous and explains.slo != start and explains.slo in slos:
                previous[explains.slo] = current
                queue.append(explains.slo)
    return None


def _check_explains_cycles(documents: list[Document], slos: dict[str, SLO], diagnostics: Diagnostics) -> None:
    """Explains must not loop: Alertmanager lets each alert of a loop inhibit the next, so all stay silent."""
    for document in documents:
        slo = slos.get(document.data["name"])
        if slo is None:
            continue
        for index, explains in enumerate(slo.explains):
            if explains.slo == slo.name or explains.slo not in slos:
                continue  # reported by _check_links
            back = _explains_path(explains.slo, slo.name, slos)
            if back is None:
                continue
            cycle = " -> ".join([slo.name, *back])
            diagnostics.error(
                document.position(("explains", index, "slo")),
                f"explains cycle {cycle}: when these fire together each inhibits the next in Alertmanager and "
                "none of them reaches anyone; decide which one is the cause and drop the explains entry of the other",
            )


def _component_readers(slo: SLO, slos: dict[str, SLO]) -> list[SLO]:
    """The other specs reading ``slo``'s component; availability specs of the same component are its peers."""
    return [
        other
        for name, other in sorted(slos.items())
        if name != slo.name and other.slice.component == slo.slice.component and other.explains_component is None
    ]


def _check_component_explains(document: Document, slo: SLO, readers: list[SLO], diagnostics: Diagnostics) -> bool:
    """The checks of one ``explains_component``: those of an explains entry, for every reader at once."""
    assert slo.explains_component is not None
    entry = slo.explains_component
    key: PathKey = ("explains_component",)
    if slo.slice.component is None:
        diagnostics.error(
            document.position(key),
            "explains_component needs slice.component: the specs it silences are those reading the same "
            "component; name the component whose targets this spec watches (e.g. slice.component: apiserver)",
        )
        return False
    ok = True
    if not entry.equal:
        ok = False
        diagnostics.error(
            document.position((*key, "equal")),
            f"explains_component with equal: [] would let {slo.name} in one slice (one cluster) silence every "
            f"{slo.slice.component} reader in every slice; list the slice labels they share (e.g. [cluster])",
        )
    for index, label in enumerate(entry.equal):
        missing = [s.name for s in (slo, *readers) if label not in s.slice.by]
        if missing:
            ok = False
            diagnostics.error(
                document.position((*key, "equal", index)),
                f"'{label}' is not a slice label of {', '.join(missing)}, so alerts cannot be matched on it; "
                f"list only labels every spec reading component {slo.slice.component} slices by",
            )
    severities = _alert_severities(slo)
    if entry.severity != "any" and entry.severity not in severities:
        ok = False
        own = ", ".join(sorted(severities)) or "none"
        diagnostics.error(
            document.position((*key, "severity")),
            f"explains_component can never inhibit: only {slo.name}'s {entry.severity} alerts would, and it has "
            f"none (its alerts are {own}); set severity: any (or {own}), or give the spec a {entry.severity} alert",
        )
    return ok


def expand_component_explains(
    documents: list[Document], slos: dict[str, SLO], diagnostics: Diagnostics
) -> dict[str, SLO]:
    """Each availability spec explains every spec reading its component: explains entries, checked for cycles.

    A dead apiserver or kube-state-metrics otherwise opens one no-data ticket per reader next
    to its own page; the expanded entries go through the same Alertmanager inhibit rules.
    """
    expanded = dict(slos)
    for document in documents:
        slo = slos.get(document.data["name"])
        if slo is None or slo.explains_component is None:
            continue
        readers = _component_readers(slo, slos)
        if not _check_component_explains(document, slo, readers, diagnostics):
            continue
        listed = {explains.slo for explains in slo.explains}
        entry = slo.explains_component
        added = tuple(Explains(r.name, entry.equal, entry.severity) for r in readers if r.name not in listed)
        expanded[slo.name] = replace(slo, explains=(*slo.explains, *added))
    _check_component_cycles(documents, slos, expanded, diagnostics)
    return expanded


def _check_component_cycles(
    documents: list[Document], written: dict[str, SLO], expanded: dict[str, SLO], diagnostics: Diagnostics
) -> None:
    """A reader that explains its component's availability spec back would make a loop (none of them pages).

    Only the entries explains_component added are checked here; _check_explains_cycles has the written ones.
    """
    for document in documents:
        slo = expanded.get(document.data["name"])
        if slo is None or slo.explains_component is None:
            continue
        for explains in slo.explains[len(written[slo.name].explains) :]:
            back = _explains_path(explains.slo, slo.name, expanded)
            if back is not None:
                diagnostics.error(
                    document.position(("explains_component",)),
                    f"explains cycle {' -> '.join([slo.name, *back])} (explains_component makes {slo.name} explain "
                    f"{explains.slo}): drop the explains entry that leads back to {slo.name}",
                )


def _check_budgets(documents: list[Document], slos: dict[str, SLO], project: Project, diagnostics: Diagnostics) -> None:
    """Series each spec records on the profiled cluster: per-node slicing needs an explicit budget."""
    profile = project.cluster_profile
    for document in documents:
        slo = slos.get(document.data["name"])
        if slo is None:
            continue
        found = estimate(slo, profile)
        if found.high_cardinality and slo.series_budget is None:
            labels = ", ".join(found.high_cardinality)
            per_unit = f" ({found.unit_series:,} of them per fleet unit)" if found.unit_series else ""
            diagnostics.error(
                document.key_position(("slice", "by")),
                f"slicing by {labels} records about {found.series:,} series{per_unit} on the {profile.name}; "
                "aggregate to a pool or zone, or opt in with an explicit series_budget",
            )
        elif found.over:
            diagnostics.error(
                document.key_position(("series_budget",))
                if slo.series_budget
                else document.key_position(("slice", "by")),
                f"records about {found.series:,} series ({found.slices:,} slices x {found.series_per_slice} recorded "
                f"series{f' + {found.unit_series:,} per-unit series' if found.unit_series else ''}"
                f"{f' + {found.parts_series:,} parts series' if found.parts_series else ''}) on the "
                f"{profile.name}, over its budget of {found.budget:,}",
            )


def _check_vanished_cost(
    documents: list[Document], slos: dict[str, SLO], project: Project, diagnostics: Diagnostics
) -> None:
    """A vanished-slice alert reads ``window`` of every slice's samples at each evaluation: refuse it
    where that is large (per-node slices), which is also where slices come and go by design."""
    profile = project.cluster_profile
    for document in documents:
        slo = slos.get(document.data["name"])
        if slo is None or slo.no_data.vanished is None:
            continue
        slices = estimate(slo, profile).slices
        samples = slices * (slo.no_data.vanished.window_ms // project.evaluation_interval_ms)
        if samples > MAX_SAMPLES_PER_EVALUATION:
            diagnostics.error(
                document.key_position(("no_data", "vanished")),
                f"no_data.vanished on about {slices:,} slices reads {samples:,} samples per evaluation on the "
                f"{profile.name}, and slices that many come and go by design (node churn from autoscaling); "
                "enable it on a spec sliced by pool or zone instead, or shorten no_data.vanished.window",
            )


def _position_of(documents: list[Document], name: str) -> Any:
    for document in documents:
        if document.data.get("name") == name:
            return document.position(("name",))
    raise KeyError(name)  # pragma: no cover
