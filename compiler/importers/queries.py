"""Counter selectors out of Sloth's and OpenSLO's event queries.

This spec language's ratio SLI names the counters (``bad``/``good`` and ``total``) and
writes every rate and window itself, so an event query maps only when it is a sum of the
rate of one counter selector (``sum(rate(x{...}[{{.window}}]))``, optionally ``by``), or for
OpenSLO a counter selector summed or not. Anything else is refused with the reason.
"""

from __future__ import annotations

import re

_SELECTOR = r"(?P<sel>[a-zA-Z_:][a-zA-Z0-9_:]*\s*(\{[^{}]*\})?|\{[^{}]*\})"
_BY = r"(?:\s*(?:by|BY)\s*\((?P<{0}>[^()]*)\))?"
_WINDOW = r"\[\s*\{\{\s*\.window\s*\}\}\s*\]"
_RATE = re.compile(
    r"^\s*sum"
    + _BY.format("by1")
    + r"\s*\(\s*(?:rate|increase)\s*\(\s*"
    + _SELECTOR
    + r"\s*"
    + _WINDOW
    + r"\s*\)\s*\)"
    + _BY.format("by2")
    + r"\s*$",
    re.DOTALL,
)
_SUMMED = re.compile(
    r"^\s*sum" + _BY.format("by1") + r"\s*\(\s*" + _SELECTOR + r"\s*\)" + _BY.format("by2") + r"\s*$", re.DOTALL
)
_BARE = re.compile(r"^\s*" + _SELECTOR + r"\s*$", re.DOTALL)

WANTED = "sum(rate(<counter selector>[{{.window}}])), optionally with by (...)"


def rate_of_counter(query: str) -> tuple[str, tuple[str, ...]] | None:
    """(selector, by labels) of ``sum [by (...)] (rate(<selector>[{{.window}}]))``, else None."""
    return _match(_RATE, query)


def counter(query: str) -> tuple[str, tuple[str, ...]] | None:
    """(selector, by labels) of a counter selector, bare or summed, or of the rate form."""
    return _match(_RATE, query) or _match(_SUMMED, query) or _match(_BARE, query)


def _match(pattern: re.Pattern[str], query: str) -> tuple[str, tuple[str, ...]] | None:
    found = pattern.match(query)
    if found is None:
        return None
    groups = found.groupdict()
    by_text = groups.get("by1") or groups.get("by2") or ""
    by = tuple(sorted(label.strip() for label in by_text.split(",") if label.strip()))
    return found.group("sel").strip(), by
