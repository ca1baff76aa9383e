"""Reading the files, telling the formats apart, writing one spec per SLO and saying what happened."""

from __future__ import annotations

import errno
import os
import stat
import sys
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from compiler.diagnostics import Diagnostics, Position
from compiler.importers import emit, openslo, sloth
from compiler.importers.draft import (
    ALERT_NAME_OK,
    NAME_LIMIT,
    Draft,
    Refusal,
    escaped,
    file_name,
    short_name,
    spec_name,
)
from compiler.source.load import MAX_FILE_BYTES, Document, PathKey, load_text
from compiler.source.placeholders import MARKER

SLOTH_VERSIONS = "prometheus/v1, sloth.slok.dev/v1 PrometheusServiceLevel or openslo/v1alpha"


@dataclass
class Outcome:
    """What one run did: the specs written, the SLOs refused, the problems in the input."""

    written: list[tuple[Path, Draft]] = field(default_factory=list)
    refused: list[Refusal] = field(default_factory=list)
    skipped: list[Refusal] = field(default_factory=list)
    diagnostics: Diagnostics = field(default_factory=Diagnostics)


def import_files(fmt: str, files: list[str], out: Path, force: bool, prefix: str = "") -> tuple[Outcome, int]:
    """Import every SLO of ``files`` (``fmt`` is sloth or openslo) into ``out``; returns the exit code.

    ``prefix`` starts every spec's name (and file name), for SLOs whose names collide with others'.
    """
    outcome = Outcome()
    for name in files:
        for result in _read_file(fmt, name, outcome.diagnostics):
            if isinstance(result, Refusal):
                (outcome.skipped if result.skipped else outcome.refused).append(result)
            else:
                _prefixed(result, prefix)
                _write(result, name, out, force, outcome)
    _report(outcome)
    failed = bool(len(outcome.diagnostics) or outcome.refused)
    return outcome, 1 if failed else 0


def _prefixed(draft: Draft, prefix: str) -> None:
    """``draft`` named with ``prefix`` first: its spec name, and its alert name as CamelCase (``ex1-`` is ``Ex1``)."""
    if not prefix:
        return
    draft.name = spec_name(prefix + draft.name)
    if draft.alert_name:
        camel = "".join(part[:1].upper() + part[1:] for part in prefix.split("-"))
        if ALERT_NAME_OK.match(camel + draft.alert_name):
            draft.alert_name = camel + draft.alert_name


def _read_file(fmt: str, name: str, diagnostics: Diagnostics) -> list[Draft | Refusal]:
    text = _read_text(name, diagnostics)
    if text is None:
        return []
    before = len(diagnostics)
    results: list[Draft | Refusal] = []
    for document in load_text(text, name, diagnostics):
        if document.data is None:  # an empty document (`---` and comments): nothing to import
            continue
        items = document.data if isinstance(document.data, list) else [document.data]
        for index, item in enumerate(items):
            base: PathKey = (index,) if isinstance(document.data, list) else ()
            results += _read_document(fmt, document, item, base, diagnostics)
    if not results and len(diagnostics) == before:
        diagnostics.error(Position(name, 1, 1), f"no SLOs in {name}: the file is empty or holds only comments")
    return results


def _read_text(name: str, diagnostics: Diagnostics) -> str | None:
    """The text of one input file (a pipe too), read up to the size limit of a spec file."""
    where = Position(name, 1, 1)
    try:
        with open(name, "rb") as handle:  # noqa: PTH123 - a pipe is read in chunks, bounded
            raw = handle.read(MAX_FILE_BYTES + 1)
    except OSError as exc:
        diagnostics.error(where, f"cannot read the file: {exc.strerror or exc}")
        return None
    if len(raw) > MAX_FILE_BYTES:
        diagnostics.error(where, f"file is larger than {MAX_FILE_BYTES} bytes, the limit for spec files")
        return None
    try:
        return raw.decode("utf-8")
    except UnicodeDecodeError as exc:
        line = raw[: exc.start].count(b"\n") + 1
        col = exc.start - (raw.rfind(b"\n", 0, exc.start) + 1) + 1
        diagnostics.error(Position(name, line, col), "cannot read the file: not valid UTF-8")
        return None


def _read_document(
    fmt: str, document: Document, data: Any, base: PathKey, diagnostics: Diagnostics
) -> list[Draft | Refusal]:
    """One document (or one entry of a top-level list), by its version fields."""
    if not isinstance(data, dict):
        article = "an" if fmt == "openslo" else "a"
        diagnostics.error(document.position(base), f"not {article} {_title(fmt)} document: expected a mapping")
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
        return openslo.read(document, data, base, diagnostics, by_sloth=fmt == "sloth")
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
    target = out / f"{file_name(draft.name)}.yaml"
    if any(path == target or short_name(other.name) == short_name(draft.name) for path, other in outcome.written):
        outcome.diagnostics.error(
            draft.where,
            f"a second SLO imports as {short_name(draft.name)}; not written: rename one, or import its file on its "
            "own with --prefix NAME- to start its specs' names with NAME-",
        )
        return
    if short_name(draft.name) != draft.name:
        draft.notes.append(
            f"the spec's name is {short_name(draft.name)}: a name is at most {NAME_LIMIT} characters (a DNS label), "
            f"so the full {draft.name} is shortened, with a hash of it at the end"
        )
    if target.is_symlink():
        outcome.diagnostics.error(
            draft.where, f"{target} is a symbolic link; not written (import writes only regular files in --out)"
        )
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
        _write_regular(target, emit.render(draft, source).encode("utf-8"), force)
    except OSError as exc:
        outcome.diagnostics.error(draft.where, f"cannot write {target}: {exc.strerror or exc}")
        return
    outcome.written.append((target, draft))


def _write_regular(target: Path, data: bytes, force: bool) -> None:
    """Write ``target`` without following a symbolic link, nor writing through a hard link to another file."""
    flags = os.O_WRONLY | os.O_CREAT | os.O_NOFOLLOW | os.O_CLOEXEC | (0 if force else os.O_EXCL)
    try:
        fd = os.open(target, flags, 0o644)
    except OSError as exc:
        if exc.errno == errno.ELOOP:
            raise OSError(exc.errno, "it is a symbolic link") from exc
        raise
    with os.fdopen(fd, "wb") as handle:
        info = os.fstat(fd)
        if not stat.S_ISREG(info.st_mode) or info.st_nlink > 1:
            raise OSError(errno.EPERM, "it is not a regular file of its own (a hard link?); not replaced")
        handle.truncate(0)
        handle.write(data)


def _report(outcome: Outcome) -> None:
    """Specs written and notes on stdout; refusals and problems on stderr."""
    for path, draft in outcome.written:
        count = path.read_text(encoding="utf-8").count(f"{MARKER}:")
        policy = emit.summary(draft)
        print(escaped(f"wrote {path} ({draft.origin}): {policy}; {count} placeholder(s) to fill in"))
        for note in draft.notes:
            print(escaped(f"  note: {note}"))
    for item in outcome.skipped:
        print(escaped(f"{item.where}: {item.reason}"))
    for item in outcome.refused:
        print(escaped(f"{item.where}: not imported: SLO {item.slo}: {item.reason}"), file=sys.stderr)
    if outcome.diagnostics:
        sys.stderr.write(outcome.diagnostics.render())
