"""Markdown-safe text: what the runbooks (and any Markdown output) do with text people wrote.

Spec text (descriptions, reasons, mitigation, owners) is written by people and may hold
Markdown, raw HTML, template braces, backticks, pipes and newlines. It reaches the page only
through the filters below, which keep it on its line, in its list item or table cell, and
out of HTML:

* Balanced backtick code spans (CommonMark's pairing of equal-length runs) are kept as the
  author wrote them; a backtick run without a partner is backslash-escaped.
* Commands and PromQL written as plain text (``kubectl cordon <node>``, ``systemctl restart
  containerd && systemctl restart kubelet``, ``sum by (le) (rate(x{job="<job>"}[5m]))``) become
  code spans (``md`` and ``cell``; see ``command_spans``), so they read exactly as written both
  in the Markdown source and on the rendered page: nothing inside a code span is escaped.
* Elsewhere ``<`` and an ``&`` that would start an entity are backslash-escaped, so no HTML tag,
  comment, autolink or entity can form, and the page holds no HTML entities; ``\\`` is
  doubled; ``|`` is escaped; ``![`` cannot start an image.
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
_CHAR_ESCAPES = str.maketrans({"\\": "\\\\", "<": "\\<", "|": "\\|", "`": "\\`"})
_ENTITY = re.compile(r"&(?=#[0-9]{1,7};|#[xX][0-9a-fA-F]{1,6};|[A-Za-z][A-Za-z0-9]{0,31};)")
# What may open a block at the start of a line (CommonMark + GFM), once `<`, pipes and stray
# backticks are already escaped. `-`, `+`, `=`, `#`, `>` are always escaped (no
# inline meaning to lose); `*`, `_`, `~`, `[` and `:` only where they would open a block, so
# emphasis, strikethrough and links written at the start of a line keep working.
_ALWAYS = re.compile(r"[-+=#>]")
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


# -- commands and PromQL in plain text ----------------------------------------------------


def _words(text: str) -> tuple[str, ...]:
    return tuple(text.split())


# Programs whose name starts a command wherever it stands as a word; the ones that are also
# English words (or too short to tell) only when an option or a quoted argument follows.
_PROGRAMS = _words(
    """
    kubectl etcdctl crictl journalctl systemctl kubeadm nslookup openssl ethtool chronyc
    timedatectl iptables iptables-save ip6tables nft ipvsadm promtool amtool curl wget mtr dmesg
    """
)
_SHORT_PROGRAMS = _words("conntrack ip nc dig ping ps ss df du tc cat awk grep jq helm tail sort date")
_COMMAND_START = re.compile(
    r"(?:[A-Z][A-Z0-9_]*=\S+ )?(?:(?:" + "|".join(map(re.escape, _PROGRAMS)) + r")(?= )"
    r"|(?:" + "|".join(_SHORT_PROGRAMS) + r") (?=[-@'\"/]))"
)
# Words that end a command written inside a sentence ("... --replicas=0 and raise its limit").
_PROSE = frozenset(
    _words(
        """
        a an the and or then with to for if after before until unless while when which that
        so as on in into from of at by is are was be been does do did not no can cannot must
        should would will also only each every shows lists names means returns prints fails
        breaks stays gives reads hangs removes frees restores reverts works applies keeps
        lets see too within across between answers answer resets rewrites mapped held lock
        driver default
        """
    )
)
_PROMQL_CALL = re.compile(
    r"(?:sum|avg|max|min|count|topk|bottomk|quantile|stddev|group|rate|irate|increase|delta|idelta|deriv|"
    r"changes|resets|absent|absent_over_time|time|timestamp|histogram_quantile|label_replace|label_join|"
    r"clamp|clamp_min|clamp_max|abs|ceil|floor|round|vector|scalar|sort|sort_desc|"
    r"(?:avg|min|max|sum|count|last|quantile|stddev|present)_over_time)(?![\w:])"
    r"(?: (?:by|without) ?\()?(?=\()?"
)
_PROMQL_NAME = re.compile(r"[A-Za-z_:][A-Za-z0-9_:]*")
_PROMQL_NUMBER = re.compile(r"[0-9]+(?:\.[0-9]+)?(?!\w|\.[0-9])")
_PROMQL_OPERATOR = re.compile(
    r" ?(?:==|!=|>=|<=|>|<|\+|-|\*|/|and|or|unless)(?: bool)?"
    r"(?: (?:on|ignoring) ?\([\w, ]*\)(?: group_(?:left|right)(?: ?\([\w, ]*\))?)?)? ?"
)
_PLACEHOLDER = re.compile(r"<[^<>\n`]{1,80}>")
# Where a command or PromQL can start: after no word character (nor one of these) and at a program, a function or a
# selector with braces. ``command_spans`` jumps from one to the next instead of trying every character.
_SPAN_START = re.compile(
    r"(?<![\w\-./$=:{\\])(?="
    + "|".join((_COMMAND_START.pattern, _PROMQL_CALL.pattern, _PROMQL_NAME.pattern + r"\{"))
    + ")"
)
_CLOSING = {"(": ")", "[": "]", "{": "}"}


def _balanced(text: str, start: int) -> int | None:
    """The end of the bracketed group opening at ``start`` (quotes respected), or None."""
    stack: list[str] = []
    quote = ""
    for index in range(start, len(text)):
        char = text[index]
        if char in "\n`":
            return None
        if quote:
            quote = "" if char == quote else quote
        elif char in "'\"":
            quote = char
        elif char in _CLOSING:
            stack.append(_CLOSING[char])
        elif char in ")]}":
            if not stack or stack.pop() != char:
                return None
            if not stack:
                return index + 1
    return None


def _promql_term(text: str, start: int, first: bool = False) -> int | None:
    """The end of one PromQL operand at ``start``: a call or a selector with braces; after an
    operator also a group, a number or a metric name with an underscore."""
    number = _PROMQL_NUMBER.match(text, start)
    if number and not first:
        return number.end()
    call = _PROMQL_CALL.match(text, start)
    if call and call.group().endswith("("):  # an aggregation's `by (...)` comes first
        grouping = _balanced(text, call.end() - 1)
        if grouping is None or not text.startswith(" (", grouping):
            return None
        return _balanced(text, grouping + 1)
    if call and text.startswith("(", call.end()):
        end = _balanced(text, call.end())
        if end is not None and re.match(r" (?:by|without) \(", text[end:]):
            end = _balanced(text, text.index("(", end))
        return end
    if text.startswith("(", start):
        return None if first else _balanced(text, start)
    name = _PROMQL_NAME.match(text, start)
    if name and not first and not text.startswith("{", name.end()) and re.search("[_:]", name.group()):
        return name.end()
    if not name or not text.startswith("{", name.end()):
        return None
    end = _balanced(text, name.end())
    if end is not None and text.startswith("[", end):
        end = _balanced(text, end)
    return end


def _promql_end(text: str, start: int) -> int | None:
    """The end of a PromQL expression written in a sentence: operands joined by operators."""
    end = _promql_term(text, start, first=True)
    while end is not None:
        operator = _PROMQL_OPERATOR.match(text, end)
        if not operator or not operator.group().strip():
            break
        # after and/or/unless only a call or a selector: "x(...) and kubelet_y" is two things in prose
        following = _promql_term(text, operator.end(), first=operator.group().strip() in ("and", "or", "unless"))
        if following is None:
            break
        end = following
    return end


def _command_end(text: str, start: int) -> int:
    """The end of a shell command that starts at ``start`` and runs until the sentence goes on."""
    stack: list[str] = []
    quote, quote_at, outer_at = "", 0, 0
    index = start
    while index < len(text):
        char = text[index]
        if char in "\n`":
            break
        if quote:
            quote = "" if char == quote else quote
        elif char in "'\"":
            quote, quote_at = char, index
        elif char in _CLOSING:
            outer_at = outer_at if stack else index
            stack.append(_CLOSING[char])
        elif char in ")]}":
            if not stack or stack.pop() != char:
                break
        elif char == "<" and not stack and _PLACEHOLDER.match(text, index):
            index = _PLACEHOLDER.match(text, index).end()  # type: ignore[union-attr]
            continue
        elif not stack:
            after = text[index + 1 : index + 2]
            if char in ",;.:" and after in ("", " "):
                break
            if char == " " and after == "(":
                break
            if char == " ":
                word = re.match(r"[A-Za-z]+(?![\w/.=-])", text[index + 1 :])
                if word and word.group().lower() in _PROSE:
                    break
        index += 1
    if quote:  # an apostrophe in the sentence, not a quoted argument
        index = quote_at
    elif stack:
        index = outer_at
    return len(text[:index].rstrip(" ")) if index > start else start


def command_spans(text: str) -> list[tuple[str, bool]]:
    """Split plain text into (chunk, is_command): shell commands and PromQL become code spans.

    A command starts at a known program (``kubectl``, ``systemctl``, ``etcdctl``, ...) and
    runs over its arguments, quotes, brackets, pipes and ``<placeholders>`` until a comma,
    semicolon, full stop or colon followed by a space, a bracket it did not open, " (", or a
    word of prose ("and", "then", "shows", ...). PromQL starts at a function call or a
    selector with braces and runs over the operands its operators join. A command of one word
    ("the kubectl client") stays prose.
    """
    chunks: list[tuple[str, bool]] = []
    plain_from = index = 0
    while (start := _SPAN_START.search(text, index)) is not None:
        index = start.start()
        command = _COMMAND_START.match(text, index)
        end = _command_end(text, index) if command else _promql_end(text, index)
        if index == plain_from and chunks:  # right after a span: the two would share backticks
            end = None
        if end is not None and end > index and (not command or " " in text[index:end]):
            chunks.append((text[plain_from:index], False))
            chunks.append((text[index:end], True))
            plain_from = index = end
            continue
        index += 1
    chunks.append((text[plain_from:], False))
    return [(chunk, code) for chunk, code in chunks if chunk]


def _escape_chars(text: str) -> str:
    escaped = text.translate(_CHAR_ESCAPES)
    return _ENTITY.sub("\\\\&", escaped).replace("![", "\\![")


def _escape_line_start(line: str) -> str:
    for pattern in (_ALWAYS, _LIST_STAR, _THEMATIC, _TILDE_FENCE, _LINK_DEFINITION, _TABLE_DELIMITER):
        if pattern.match(line):
            return "\\" + line
    ordered = _ORDERED_MARK.match(line)
    if ordered:
        return f"{ordered.group(1)}\\{ordered.group(2)}{line[ordered.end() :]}"
    return line


@functools.lru_cache(maxsize=16_384)  # the same step or summary text lands in the runbook, catalog and alerts
def _safe(text: str, newline: str, *, table: bool = False, commands: bool = False) -> str:
    """Spec text as inline Markdown that cannot leave its block; lines joined by ``newline``."""
    text = text.replace("\r\n", "\n").replace("\r", "\n")
    lines: list[list[tuple[str, bool]]] = [[]]
    spans = _code_spans(text)
    for at, (chunk, code) in enumerate(spans):
        if code:
            lines[-1].append((chunk.replace("\n", " "), True))
            continue
        pieces = command_spans(chunk) if commands else [(chunk, False)]
        for index, (piece, command) in enumerate(pieces):
            # Right next to the author's code span, its backticks and ours would make one run.
            touches = (index == 0 and at > 0) or (index == len(pieces) - 1 and at < len(spans) - 1)
            if command and not touches:  # no backtick or line break inside: one backtick either side
                lines[-1].append((f"`{piece}`", True))
                continue
            first, *rest = piece.split("\n")
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
    return _safe(text, "\\\n" + " " * indent, commands=True)


def cell(text: str) -> str:
    """Spec text in a table cell: one line, pipes escaped even inside code spans."""
    return _safe(text, "<br>", table=True, commands=True) or "—"


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
