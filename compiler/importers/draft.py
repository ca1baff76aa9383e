"""What one imported SLO becomes, before it is written: the spec's facts and the notes on what was not carried."""

from __future__ import annotations

import re
import unicodedata
from dataclasses import dataclass, field
from typing import Any

from compiler.diagnostics import Position


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
# Labels and annotations the compiler sets itself (README "Team conventions").
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
    """A spec name (a lower-case DNS label) from the source's identifiers."""
    text = "-".join(part for part in parts if part).lower()
    text = re.sub(r"[^a-z0-9-]+", "-", text)
    text = re.sub(r"-+", "-", text).strip("-")
    return text[:63].rstrip("-") or "imported-slo"


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
