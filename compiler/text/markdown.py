"""Markdown-safe text: what the runbooks (and any Markdown output) do with text people wrote.

Spec text (descriptions, reasons, mitigation, owners) is written by people and may hold
Markdown, raw HTML, template braces, backticks, pipes and newlines. It reaches the page only
through the filters below, which keep it on its line, in its list item or table cell, and
out of HTML:

* ``&``, ``<`` and ``>`` become entities; ``\\`` is doubled; ``|`` is escaped; ``![`` cannot
  start an image.
* Balanced backtick code spans (CommonMark's pairing of equal-length runs) are kept as the
  author wrote them; a backtick run without a partner becomes ``&#96;`` entities.
* Every line loses its indentation, and a first character that could open a block (heading,
  list, quote, thematic break, setext underline, fence, link definition) is backslash-escaped.
  Blank lines are dropped; line breaks become hard breaks indented into the enclosing list
  item, ``<br>`` in table cells, or spaces where the context is one line.

Everything else (emphasis, links, ``{{ }}``) is left verbatim.
"""

from __future__ import annotations

import functools
import re

# -- Markdown-safe text -----------------------------------------------------------------

_BACKTICK_RUN = re.compile(r"`+")
_CHAR_ESCAPES = {"\\": "\\\\", "&": "&amp;", "<": "&lt;", ">": "&gt;", "|": "\\|", "`": "&#96;"}
# What may open a block at the start of a line (CommonMark + GFM), once HTML characters,
# pipes and stray backticks are already escaped. `-`, `+`, `=`, `#` are always escaped (no
# inline meaning to lose); `*`, `_`, `~`, `[` and `:` only where they would open a block, so
# emphasis, strikethrough and links written at the start of a line keep working.
_ALWAYS = re.compile(r"[-+=#]")
_LIST_STAR = re.compile(r"\*(?=[ \t]|$)")
_THEMATIC = re.compile(r"([*_])[ \t]*(?:\1[ \t]*){2,}$")
_TILDE_FENCE = re.compile(r"~~~")
_LINK_DEFINITION = re.compile(r"\[.*\]:")
_TABLE_DELIMITER = re.compile(r":-")
_ORDERED_MARK = re.compile(r"(\d{1,9})([.)])(?=[ \t]|$)")


def _code_spans(text: str) -> list[tuple[str, bool]]:
    """Split ``text`` into (chunk, is_code_span) as CommonMark pairs backtick runs.

    A run of n backticks opens a span that the next run of exactly n backticks closes; a
    run with no such partner is literal text (and is escaped by the caller).
    """
    runs = list(_BACKTICK_RUN.finditer(text))
    chunks: list[tuple[str, bool]] = []
    plain_from = 0
    index = 0
    while index < len(runs):
        opener = runs[index]
        width = len(opener.group())
        closer = next((j for j in range(index + 1, len(runs)) if len(runs[j].group()) == width), None)
        if closer is None:
            index += 1
            continue
        chunks.append((text[plain_from : opener.start()], False))
        chunks.append((text[opener.start() : runs[closer].end()], True))
        plain_from = runs[closer].end()
        index = closer + 1
    chunks.append((text[plain_from:], False))
    return [(chunk, code) for chunk, code in chunks if chunk]


def _escape_chars(text: str) -> str:
    return "".join(_CHAR_ESCAPES.get(char, char) for char in text).replace("![", "\\![")


def _escape_line_start(line: str) -> str:
    for pattern in (_ALWAYS, _LIST_STAR, _THEMATIC, _TILDE_FENCE, _LINK_DEFINITION, _TABLE_DELIMITER):
        if pattern.match(line):
            return "\\" + line
    ordered = _ORDERED_MARK.match(line)
    if ordered:
        return f"{ordered.group(1)}\\{ordered.group(2)}{line[ordered.end() :]}"
    return line


@functools.lru_cache(maxsize=16_384)  # the same step or summary text lands in the runbook, catalog and alerts
def _safe(text: str, newline: str, *, table: bool = False) -> str:
    """Spec text as inline Markdown that cannot leave its block; lines joined by ``newline``."""
    text = text.replace("\r\n", "\n").replace("\r", "\n")
    lines: list[list[tuple[str, bool]]] = [[]]
    for chunk, code in _code_spans(text):
        if code:
            lines[-1].append((chunk.replace("\n", " "), True))
            continue
        first, *rest = chunk.split("\n")
        lines[-1].append((first, False))
        lines.extend([(part, False)] for part in rest)
    rendered = []
    for pieces in lines:
        out = []
        for chunk, code in pieces:
            if code:
                out.append(chunk.replace("|", "\\|") if table else chunk)
            else:
                out.append(_escape_chars(chunk if out else chunk.lstrip(" \t")))
        line = _escape_line_start("".join(out).rstrip(" \t"))
        if line:
            rendered.append(line)
    return newline.join(rendered)


def md(text: str, indent: int = 0) -> str:
    """Spec text in a paragraph or list item whose continuation lines are indented by ``indent``."""
    return _safe(text, "\\\n" + " " * indent)


def cell(text: str) -> str:
    """Spec text in a table cell: one line, pipes escaped even inside code spans."""
    return _safe(text, "<br>", table=True) or "—"


def inline(text: str) -> str:
    """Spec text on one line (index entries)."""
    return _safe(text, " ")


def _longest_backtick_run(text: str) -> int:
    return max((len(run) for run in _BACKTICK_RUN.findall(text)), default=0)


def code(text: str, table: bool = False) -> str:
    """``text`` as one inline code span, whatever backticks it holds."""
    text = text.replace("\r", " ").replace("\n", " ")
    if not text.strip():
        return "—"
    ticks = "`" * (_longest_backtick_run(text) + 1)
    pad = " " if text[0] in "` " or text[-1] in "` " else ""
    span = f"{ticks}{pad}{text}{pad}{ticks}"
    return span.replace("|", "\\|") if table else span


def fence(text: str, info: str = "promql") -> str:
    """A fenced code block longer than any backtick run inside, so no line can close it."""
    ticks = "`" * max(3, _longest_backtick_run(text) + 1)
    body = text.replace("\r\n", "\n").replace("\r", "\n").strip("\n")
    return f"{ticks}{info}\n{body}\n{ticks}"


def url(text: str) -> str:
    """A link destination that cannot end the link early."""
    for char, encoded in ((" ", "%20"), ("(", "%28"), (")", "%29"), ("<", "%3C"), (">", "%3E")):
        text = text.replace(char, encoded)
    return text
