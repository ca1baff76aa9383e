"""What one imported SLO becomes, before it is written: the spec's facts and the notes on what was not carried."""

from __future__ import annotations

import hashlib
import re
import unicodedata
from dataclasses import dataclass, field
from typing import Any

from compiler.diagnostics import Position
from compiler.importers.queries import Latency, State


@dataclass(frozen=True)
class Shape:
    """An SLI to write: a ratio (field, selector, total), a latency or a state, summed by ``by``."""

    by: tuple[str, ...]
    ratio_field: str = "bad"
    ratio_selector: str = ""
    total_selector: str = ""
    latency: Latency | None = None
    state: State | None = None
    buckets: tuple[float, ...] = ()  # a latency histogram's declared edges (one the catalogue does not know)
    next_kept_above: bool = False  # a latency threshold on an edge a built-in stack drops
    notes: tuple[str, ...] = ()


@dataclass
class Draft:
    """One spec to write, from one SLO of the source file."""

    name: str
    origin: str  # e.g. "Sloth prometheus/v1, service myservice, SLO requests-availability"
    where: Position
    description: str | None
    by: tuple[str, ...] | None  # None: unknown, a placeholder is written
    ratio_field: str  # "bad" or "good"
    ratio_selector: str
    total_selector: str
    target_percent: float
    period: str
    period_note: str
    alert_name: str | None = None
    severities: tuple[str, ...] = ("page", "ticket")  # which of Sloth's alerts are enabled
    labels: dict[str, str] = field(default_factory=dict)
    annotations: dict[str, str] = field(default_factory=dict)
    notes: list[str] = field(default_factory=list)  # written as comments and printed
    # How the SLI was read; its latency or state when it is not a ratio (the ratio fields are then empty).
    shape: Shape | None = None
    tool: str = "Sloth"  # whose rules ran the SLO: Sloth (burn_policy sloth) or OpenSLO (the default policy)


@dataclass(frozen=True)
class Refusal:
    """An SLO that does not map onto this spec language, and why."""

    where: Position
    slo: str
    reason: str
    skipped: bool = False  # not an SLO at all (an OpenSLO Service, a Sloth window catalogue): no failure


NAME_OK = re.compile(r"^[a-z0-9]([a-z0-9-]{0,61}[a-z0-9])?$")
ALERT_NAME_OK = re.compile(r"^[A-Z][A-Za-z0-9]{0,127}$")
LABEL_NAME_OK = re.compile(r"^[a-zA-Z_][a-zA-Z0-9_]*$")
# Labels and annotations the compiler sets itself (docs/project.md "Team conventions").
OWN_LABELS = frozenset(
    {
        "severity",
        "team",
        "slo",
        "family",
        "slo_compiler",
        "shadow",
        "automation",
        "alertname",
        "alertstate",
        "long_window",
        "short_window",
        "burn_factor",
        "spec_hash",
        "objective",
        "period",
    }
)
OWN_ANNOTATIONS = frozenset({"summary", "description", "runbook_url", "mitigation", "mitigation_steps"})


# What cannot stand raw in a YAML comment or a terminal line: control characters, YAML's line
# breaks (NEL, LS, PS) and what PyYAML refuses to read (its NON_PRINTABLE, plus the BOM).
_UNSAFE = re.compile("[^\x20-\x7e\xa0-\u2027\u202a-\ud7ff\ue000-\ufefe\uff00-\ufffd\U00010000-\U0010ffff]")


def unsafe(text: str) -> bool:
    """Whether ``text`` holds a character that a plain line of the spec cannot carry (newline, control, ...)."""
    return _UNSAFE.search(text) is not None


def _escape(char: str) -> str:
    """One character as YAML's double-quoted escape (``\\uXXXX``, or ``\\UXXXXXXXX`` beyond the BMP)."""
    code = ord(char)
    return f"\\u{code:04x}" if code < 0x10000 else f"\\U{code:08x}"


def escaped(text: str) -> str:
    """``text`` with every unsafe character as a ``\\uXXXX`` escape: safe in a comment and on a terminal.

    Format characters (Unicode category Cf: bidi overrides such as U+202E, zero-width spaces) are
    escaped too: printed raw they reorder or hide what a terminal or an editor shows."""
    text = _UNSAFE.sub(lambda found: _escape(found[0]), text)
    if text.isascii():
        return text
    return "".join(_escape(char) if unicodedata.category(char) == "Cf" else char for char in text)


def spec_name(*parts: str) -> str:
    """The full name from the source's identifiers: lower case, runs of other characters as one '-'.

    It names the file whatever its length; the spec's own name is a DNS label of at most 63
    characters, so a longer one is shortened there by ``short_name``.
    """
    text = "-".join(part for part in parts if part).lower()
    text = re.sub(r"[^a-z0-9-]+", "-", text)
    text = re.sub(r"-+", "-", text).strip("-")
    return text or "imported-slo"


NAME_LIMIT = 63


FILE_NAME_LIMIT = 250  # characters before ".yaml": file systems hold 255 bytes per name


def file_name(full: str) -> str:
    """The spec file's name: the full name, shortened (with a hash) only past what a file system holds."""
    return full if len(full) <= FILE_NAME_LIMIT else _hashed(full, FILE_NAME_LIMIT)


def short_name(full: str) -> str:
    """``full`` as a spec name (at most 63 characters): a longer one keeps its start and ends with a
    hash of the whole, so two long names that share their first 54 characters stay apart."""
    return full if len(full) <= NAME_LIMIT else _hashed(full, NAME_LIMIT)


def _hashed(full: str, limit: int) -> str:
    digest = hashlib.sha256(full.encode("utf-8")).hexdigest()[:8]
    return f"{full[: limit - 9].rstrip('-')}-{digest}"


def add_labels(draft: Draft, labels: object, what: str) -> None:
    """Carry extra labels, leaving out (with a note) those the compiler owns or cannot hold."""
    if not isinstance(labels, dict):
        return
    for key, value in labels.items():
        text = str(value)
        if key in OWN_LABELS or str(key).startswith("__"):
            draft.notes.append(f"{what} label {key}={text} not imported: the compiler sets '{key}' itself")
        elif not LABEL_NAME_OK.match(str(key)):
            draft.notes.append(f"{what} label {key}={text} not imported: not a Prometheus label name")
        elif not text or "{{" in text or "}}" in text:
            draft.notes.append(f"{what} label {key}={text!r} not imported: empty or a template")
        else:
            draft.labels[str(key)] = text


def add_annotations(draft: Draft, annotations: object, what: str) -> None:
    """Carry annotations as literal text; the compiler's own (summary, ...) are noted instead."""
    if not isinstance(annotations, dict):
        return
    for key, value in annotations.items():
        text = str(value)
        if key in OWN_ANNOTATIONS:
            draft.notes.append(f"{what} annotation {key}: {text!r} not imported: the compiler writes '{key}' itself")
            continue
        if "{{" in text:
            draft.notes.append(f"{what} annotation {key} is a Sloth template; here it is literal text")
        draft.annotations[str(key)] = text


def mapping(value: object) -> dict[str, Any]:
    """``value`` when it is a mapping, else empty: other tools' files are read leniently, field by field."""
    return value if isinstance(value, dict) else {}


def sequence(value: object) -> list[Any]:
    """``value`` when it is a list, else empty."""
    return value if isinstance(value, list) else []
