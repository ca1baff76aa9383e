"""Reading the files, telling the formats apart, writing one spec per SLO and saying what happened."""

from __future__ import annotations

import sys
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from compiler.diagnostics import Diagnostics, Position
from compiler.importers import emit, openslo, sloth
from compiler.importers.draft import Draft, Refusal
from compiler.source.load import Document, PathKey, load_text
from compiler.source.placeholders import MARKER

SLOTH_VERSIONS = "prometheus/v1, sloth.slok.dev/v1 PrometheusServiceLevel or openslo/v1alpha"


@dataclass
class Outcome:
    """What one run did: the specs written, the SLOs refused, the problems in the input."""

    written: list[tuple[Path, Draft]] = field(default_factory=list)
    refused: list[Refusal] = field(default_factory=list)
    skipped: list[Refusal] = field(default_factory=list)
    diagnostics: Diagnostics = field(default_factory=Diagnostics)


def import_files(fmt: str, files: list[str], out: Path, force: bool) -> tuple[Outcome, int]:
    """Import every SLO of ``files`` (``fmt`` is sloth or openslo) into ``out``; returns the exit code."""
    outcome = Outcome()
    for name in files:
        for result in _read_file(fmt, name, outcome.diagnostics):
            if isinstance(result, Refusal):
                (outcome.skipped if result.skipped else outcome.refused).append(result)
            else:
                _write(result, name, out, force, outcome)
    _report(outcome)
    failed = bool(len(outcome.diagnostics) or outcome.refused)
    return outcome, 1 if failed else 0


def _read_file(fmt: str, name: str, diagnostics: Diagnostics) -> list[Draft | Refusal]:
    try:
        text = Path(name).read_text(encoding="utf-8")
    except (OSError, UnicodeDecodeError) as exc:
        diagnostics.error(Position(name, 1, 1), f"cannot read the file: {getattr(exc, 'strerror', None) or exc}")
        return []
    results: list[Draft | Refusal] = []
    for document in load_text(text, name, diagnostics):
        items = document.data if isinstance(document.data, list) else [document.data]
        for index, item in enumerate(items):
            base: PathKey = (index,) if isinstance(document.data, list) else ()
            results += _read_document(fmt, document, item, base, diagnostics)
    return results


def _read_document(
    fmt: str, document: Document, data: Any, base: PathKey, diagnostics: Diagnostics
) -> list[Draft | Refusal]:
    """One document (or one entry of a top-level list), by its version fields."""
    if not isinstance(data, dict):
        diagnostics.error(document.position(base), f"not a {_title(fmt)} document: expected a mapping")
        return []
    api, version = data.get("apiVersion"), data.get("version")
    if fmt == "sloth" and base == () and version is not None:
        if version == "prometheus/v1":
            return sloth.read(document, diagnostics)
        diagnostics.error(document.position(("version",)), f"unknown Sloth version {version!r}: {_sloth_reads()}")
        return []
    if fmt == "sloth" and api == "sloth.slok.dev/v1" and base == ():
        return _sloth_object(document, data, diagnostics)
    if api in openslo.VERSIONS and (fmt == "openslo" or api == "openslo/v1alpha"):
        return openslo.read(document, data, base, diagnostics)
    where = document.position((*base, "apiVersion")) if api is not None else document.position(base)
    if fmt == "sloth":
        diagnostics.error(where, f"not a Sloth spec (version {version or api!r}): {_sloth_reads()}")
    elif isinstance(api, str) and "openslo" in api.lower():
        diagnostics.error(where, f"unsupported OpenSLO version {api!r}: import reads {' and '.join(openslo.VERSIONS)}")
    else:
        diagnostics.error(where, f"not an OpenSLO document (apiVersion {api!r}): expected one of {openslo.VERSIONS}")
    return []


def _sloth_object(document: Document, data: dict[str, Any], diagnostics: Diagnostics) -> list[Draft | Refusal]:
    kind = data.get("kind")
    if kind == "PrometheusServiceLevel":
        return sloth.read(document, diagnostics)
    if kind == "AlertWindows":
        reason = "nothing to import: a window catalogue, not an SLO (burn_policy sloth has Sloth's default windows)"
        return [Refusal(document.position(("kind",)), "", reason, skipped=True)]
    diagnostics.error(document.position(("kind",)), f"unknown Sloth kind {kind!r}: {_sloth_reads()}")
    return []


def _sloth_reads() -> str:
    return f"`import sloth` reads {SLOTH_VERSIONS}"


def _title(fmt: str) -> str:
    return "Sloth" if fmt == "sloth" else "OpenSLO"


def _write(draft: Draft, source: str, out: Path, force: bool, outcome: Outcome) -> None:
    """Write one spec, never over an existing file unless ``force``, nor twice in one run."""
    target = out / f"{draft.name}.yaml"
    if any(path == target for path, _ in outcome.written):
        outcome.diagnostics.error(draft.where, f"a second SLO imports as {draft.name}; not written: rename one")
        return
    if target.exists() and not force:
        outcome.diagnostics.error(
            draft.where, f"{target} exists; not overwritten (run again with --force to replace it)"
        )
        return
    if draft.alert_name and any(d.alert_name == draft.alert_name for _, d in outcome.written):
        draft.notes.append(
            f"alert name {draft.alert_name} is already used by another imported SLO (Sloth allows that; here one "
            "silence would hit both): the default name is used"
        )
        draft.alert_name = None
    try:
        out.mkdir(parents=True, exist_ok=True)
        target.write_text(emit.render(draft, source), encoding="utf-8")
    except OSError as exc:
        outcome.diagnostics.error(draft.where, f"cannot write {target}: {exc.strerror or exc}")
        return
    outcome.written.append((target, draft))


def _report(outcome: Outcome) -> None:
    """Specs written and notes on stdout; refusals and problems on stderr."""
    for path, draft in outcome.written:
        count = path.read_text(encoding="utf-8").count(f"{MARKER}:")
        policy = (
            "burn_policy sloth (Sloth's window pairs, no `for`: it pages when Sloth did)"
            if set(draft.severities) in ({"page", "ticket"}, set())
            else f"Sloth's {draft.severities[0]} window pairs only, no `for`"
        )
        print(f"wrote {path} ({draft.origin}): {policy}; {count} placeholder(s) to fill in")
        for note in draft.notes:
            print(f"  note: {note}")
    for item in outcome.skipped:
        print(f"{item.where}: {item.reason}")
    for item in outcome.refused:
        print(f"{item.where}: not imported: SLO {item.slo}: {item.reason}", file=sys.stderr)
    if outcome.diagnostics:
        print(outcome.diagnostics.render(), file=sys.stderr)
