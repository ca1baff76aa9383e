"""The difference between two revisions' facts: specs and alerts added, removed, renamed or changed.

A rename is recognised where a reviewer would see one: a spec that left and a spec that
arrived from the same file, or, inside a spec, an alert that left and one of the same
kind that arrived with the same threshold and windows. Everything else is a change of
one fact, shown as ``before -> after``.
"""

from __future__ import annotations

from dataclasses import dataclass, field

from compiler.review.facts import AlertFacts, Facts, SpecFacts

FactChange = tuple[str, str, str]  # (fact, before, after)


@dataclass(frozen=True)
class AlertChange:
    key: str
    status: str  # added | removed | renamed | changed
    facts: tuple[FactChange, ...] = ()
    old_key: str = ""


@dataclass(frozen=True)
class SpecChange:
    name: str
    status: str  # added | removed | renamed | changed
    facts: tuple[FactChange, ...] = ()
    alerts: tuple[AlertChange, ...] = ()
    series_before: int = 0
    series_after: int = 0
    old_name: str = ""


@dataclass(frozen=True)
class Review:
    specs: tuple[SpecChange, ...]
    series_before: int
    series_after: int
    unchanged: int = 0
    notes: tuple[str, ...] = field(default=())

    @property
    def changed(self) -> bool:
        return bool(self.specs)


def _fact_changes(before: Facts, after: Facts) -> tuple[FactChange, ...]:
    old, new = dict(before), dict(after)
    names = list(dict.fromkeys([*old, *new]))
    return tuple(
        (name, old.get(name, "(none)"), new.get(name, "(none)")) for name in names if old.get(name) != new.get(name)
    )


def _identity(alert: AlertFacts) -> tuple[str, str, str]:
    """What makes two differently named alerts the same rule: kind, threshold and windows."""
    facts = dict(alert.facts)
    return alert.kind, facts.get("threshold", ""), facts.get("windows", "")


def _alert_changes(before: tuple[AlertFacts, ...], after: tuple[AlertFacts, ...]) -> tuple[AlertChange, ...]:
    old = {alert.key: alert for alert in before}
    new = {alert.key: alert for alert in after}
    changes: list[AlertChange] = []
    gone = [key for key in old if key not in new]
    arrived = [key for key in new if key not in old]
    for key in list(arrived):
        match = next((g for g in gone if _identity(old[g]) == _identity(new[key])), None)
        if match is not None:
            gone.remove(match)
            arrived.remove(key)
            changes.append(AlertChange(key, "renamed", _fact_changes(old[match].facts, new[key].facts), match))
    for key in new:
        if key in old:
            facts = _fact_changes(old[key].facts, new[key].facts)
            if facts:
                changes.append(AlertChange(key, "changed", facts))
    changes += [AlertChange(key, "added", _fact_changes((), new[key].facts)) for key in arrived]
    changes += [AlertChange(key, "removed") for key in gone]
    return tuple(changes)


def _spec_change(name: str, status: str, before: SpecFacts | None, after: SpecFacts | None) -> SpecChange:
    return SpecChange(
        name=name,
        status=status,
        facts=_fact_changes(before.facts if before else (), after.facts if after else ()),
        alerts=_alert_changes(before.alerts if before else (), after.alerts if after else ()),
        series_before=before.series if before else 0,
        series_after=after.series if after else 0,
        old_name=before.name if before and status == "renamed" else "",
    )


def compare(before: dict[str, SpecFacts], after: dict[str, SpecFacts]) -> Review:
    """The review of going from ``before`` to ``after`` (both by spec name)."""
    specs: list[SpecChange] = []
    gone = [name for name in before if name not in after]
    arrived = [name for name in after if name not in before]
    for name in list(arrived):
        match = next((g for g in gone if before[g].source == after[name].source), None)
        if match is not None:
            gone.remove(match)
            arrived.remove(name)
            specs.append(_spec_change(name, "renamed", before[match], after[name]))
    unchanged = 0
    for name in sorted(after):
        if name in before:
            change = _spec_change(name, "changed", before[name], after[name])
            if change.facts or change.alerts:
                specs.append(change)
            else:
                unchanged += 1
    specs += [_spec_change(name, "added", None, after[name]) for name in sorted(arrived)]
    specs += [_spec_change(name, "removed", before[name], None) for name in sorted(gone)]
    return Review(
        specs=tuple(specs),
        series_before=sum(spec.series for spec in before.values()),
        series_after=sum(spec.series for spec in after.values()),
        unchanged=unchanged,
    )
