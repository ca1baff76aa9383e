"""Runbooks: one Markdown page per spec, for the person an alert just reached, and an index.

A pure function of the model, rendered from the Jinja2 templates in ``compiler/templates``.
Every alert's ``runbook_url`` points at ``runbooks/<spec>.md#<alert name in lower case>``
(``compiler.links``), so each page has one heading per alert name, spelled exactly as the
alert. Pairs of burn windows that share an alert name share that heading.

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
import posixpath
import re
from collections.abc import Iterable
from dataclasses import dataclass, field
from pathlib import Path

import jinja2

from compiler import links, numbers, series
from compiler.model import (
    FAMILY_TITLES,
    SLO,
    Automation,
    BurnAlert,
    GaugeSLI,
    LatencySLI,
    Model,
    QuantileSLI,
    Range,
    RatioSLI,
    Selector,
    StateSLI,
    Team,
)
from compiler.numbers import clean_number, go_float
from compiler.promql import PromQLError, analyse, format_duration, render_selector
from compiler.targets import prometheus

TEMPLATES = Path(__file__).resolve().parent.parent / "templates"
INDEX_PATH = f"{links.RUNBOOKS_DIR}/README.md"

MINUTE = 60_000
HOUR = 60 * MINUTE
DAY = 24 * HOUR
BEFORE_MS = HOUR  # default `offset` of the before/after comparisons; the reader adjusts it
RANGE_LOOKBACK_MS = DAY  # how far back the earliest-bad query looks for range signals
TOP = 5


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


# -- numbers and bounds -----------------------------------------------------------------


def format_value(slo: SLO, number: float) -> str:
    """A value in the spec's unit, as the alert annotations write it."""
    return numbers.format_value(slo.unit, number)


def _directions(band: Range) -> list[str]:
    found = []
    rel = band.relative
    if band.maximum is not None or (rel is not None and rel.max_factor is not None):
        found.append("Above")
    if band.minimum is not None or (rel is not None and rel.min_factor is not None):
        found.append("Below")
    return found


def bounds(slo: SLO, band: Range, direction: str) -> list[str]:
    """What leaving ``band`` in ``direction`` means, in words (as the alert description says)."""
    found = []
    static = band.maximum if direction == "Above" else band.minimum
    if static is not None:
        found.append(f"{'above max' if direction == 'Above' else 'below min'} {format_value(slo, static)}")
    rel = band.relative
    factor = None if rel is None else (rel.max_factor if direction == "Above" else rel.min_factor)
    if rel is not None and factor is not None:
        word = "above" if direction == "Above" else "below"
        text = f"{word} {go_float(factor)}x its value {format_duration(rel.offset_ms)} ago"
        if rel.floor:
            floor = format_value(slo, rel.floor)
            text += f" once above {floor}" if direction == "Above" else f" when that was above {floor}"
        found.append(text)
    return found


# -- PromQL -----------------------------------------------------------------------------


@dataclass(frozen=True)
class Query:
    title: str  # Markdown written by this module (never spec text)
    expr: str


def _on(slo: SLO) -> str:
    return f"on ({', '.join(('slo', *slo.slice.by))})"


def _band_condition(slo: SLO, band: Range, offset_ms: int = 0) -> str:
    """The series of the slices outside ``band``, as the range alerts test it."""
    now = series.value(slo, offset_ms)
    parts = []
    rel = band.relative
    for direction in _directions(band):
        above = direction == "Above"
        op = ">" if above else "<"
        static = band.maximum if above else band.minimum
        if static is not None:
            parts.append(f"{now} {op} {go_float(static)}")
        factor = None if rel is None else (rel.max_factor if above else rel.min_factor)
        if rel is not None and factor is not None:
            past = series.value(slo, offset_ms + rel.offset_ms)
            condition = f"{now} {op} {go_float(factor)} * {past}"
            if rel.floor:
                condition += f" and {now if above else past} > {go_float(rel.floor)}"
            parts.append(condition)
    return parts[0] if len(parts) == 1 else " or ".join(f"({part})" for part in parts)


@dataclass(frozen=True)
class BadCondition:
    words: str  # Markdown written by this module
    expr_at: dict[int, str]  # offset in ms -> expression
    lookback_ms: int


def _bad_condition(slo: SLO) -> BadCondition | None:
    """What "bad" means for the investigation: burning budget, else leaving the normal range."""
    offsets = (0, BEFORE_MS)
    if slo.objective is not None:
        budget = go_float(clean_number(slo.objective.budget))
        lookback = max((burn.long_ms for burn in slo.objective.burn_alerts), default=DAY)
        return BadCondition(
            words=f"the 5m error ratio is above the budget rate {budget} (burn rate above 1)",
            expr_at={offset: f"{series.value(slo, offset)} > {budget}" for offset in offsets},
            lookback_ms=lookback,
        )
    for band, label in ((slo.normal_range, "normal"), (slo.critical_range, "critical")):
        if band is not None and _directions(band):
            words = "; or ".join(bound for d in _directions(band) for bound in bounds(slo, band, d))
            return BadCondition(
                words=f"the value is outside the {label} range ({words})",
                expr_at={offset: _band_condition(slo, band, offset) for offset in offsets},
                lookback_ms=RANGE_LOOKBACK_MS,
            )
    return None


def _raw_selector(slo: SLO) -> str | None:
    """One selector of the raw series behind the SLI, to diff exact identities over time."""
    sli = slo.sli
    selector: Selector | None = None
    if isinstance(sli, RatioSLI):
        selector = sli.total[0] if sli.total else None
    elif isinstance(sli, LatencySLI | QuantileSLI):
        selector = Selector(f"{sli.histogram}_count", sli.matchers)
    elif isinstance(sli, StateSLI | GaugeSLI):
        try:
            found = analyse(sli.expr).selectors
        except PromQLError:  # pragma: no cover - the builder already parsed it
            found = ()
        if found:
            selector = Selector(*found[0])
    if selector is None or (selector.metric is None and not selector.matchers):
        return None
    return render_selector(selector.metric, selector.matchers)


def _windows(slo: SLO) -> list[int]:
    assert slo.objective is not None
    return sorted({w for burn in slo.objective.burn_alerts for w in (burn.long_ms, burn.short_ms)})


def paste_queries(slo: SLO) -> dict[str, list[Query]]:
    """The "PromQL to paste" blocks, by sub-heading."""
    value = series.value(slo)
    sli: list[Query] = []
    if slo.counts_events:
        sli.append(Query("Error ratio over 5m, per slice (bad over total events):", value))
    else:
        sli.append(Query("Value per slice (recorded):", value))
    raw = (series.TOTAL_5M, series.BAD_5M, series.VALUE)
    for rule in prometheus.recording_rules(slo):
        if rule["record"] in raw:
            sli.append(Query(f"Raw expression recorded as {code(rule['record'])}:", rule["expr"]))
    sections: dict[str, list[Query]] = {"SLI per slice": sli}
    if slo.objective is not None:
        budget = go_float(clean_number(slo.objective.budget))
        sections["Burn rate per window"] = [
            Query(
                f"Burn rate over {format_duration(window)} (error ratio over the {budget} budget; 1 spends it "
                f"exactly over {format_duration(slo.objective.period_ms)}):",
                f"(\n  {series.window_ratio(slo, window)}\n) / {budget}",
            )
            for window in _windows(slo)
        ]
        sections["Error budget remaining"] = [
            Query(
                "Share of the period's error budget left (1 = untouched, 0 = spent, negative = overspent):",
                series.recorded(series.BUDGET_REMAINING, slo),
            )
        ]
    top: list[Query] = []
    if slo.counts_events:
        top.append(Query(f"The {TOP} slices with the highest 5m error ratio:", f"topk({TOP}, {value})"))
        if slo.objective is not None:
            budget = go_float(clean_number(slo.objective.budget))
            top.append(
                Query(
                    f"The {TOP} slices burning budget fastest over 1h:",
                    f"topk({TOP}, (\n  {series.window_ratio(slo, HOUR)}\n) / {budget})",
                )
            )
    else:
        bands = [band for band in (slo.normal_range, slo.critical_range) if band is not None]
        directions = {d for band in bands for d in _directions(band)}
        if "Above" in directions or not directions:
            top.append(Query(f"The {TOP} highest slices:", f"topk({TOP}, {value})"))
        if "Below" in directions:
            top.append(Query(f"The {TOP} lowest slices:", f"bottomk({TOP}, {value})"))
        offsets = sorted({band.relative.offset_ms for band in bands if band.relative is not None})
        for offset in offsets:
            ago = format_duration(offset)
            top.append(
                Query(
                    f"The {TOP} slices that grew most against {ago} ago:",
                    f"topk({TOP}, {value} / {series.value(slo, offset)})",
                )
            )
    sections["Top offending slices"] = top
    return sections


@dataclass
class Investigation:
    condition: BadCondition | None
    before: str  # the default offset of before/after comparisons
    earliest: list[Query] = field(default_factory=list)
    identities: list[Query] = field(default_factory=list)
    smallest: list[Query] = field(default_factory=list)
    counterexample: list[Query] = field(default_factory=list)


def investigation(slo: SLO) -> Investigation:
    condition = _bad_condition(slo)
    before = format_duration(BEFORE_MS)
    on = _on(slo)
    presence = series.recorded(series.presence_series(slo), slo)
    result = Investigation(condition=condition, before=before)
    if condition is not None:
        lookback = format_duration(condition.lookback_ms)
        result.earliest.append(
            Query(
                f"First time each slice was bad in the last {lookback} (Unix seconds, earliest first):",
                f"sort(\n  min_over_time(\n    timestamp(\n      {condition.expr_at[0]}\n    )[{lookback}:1m]\n  )\n)",
            )
        )
    if slo.no_data.enabled:
        result.earliest.append(
            Query(
                f"Last time the SLI had data, if the no-data alert fired (look-back {format_duration(DAY)}):",
                f"max_over_time(timestamp({presence})[{format_duration(DAY)}:1m])",
            )
        )
    if condition is not None:
        result.identities.append(
            Query(
                f"Slices bad now that were not bad {before} earlier:",
                f"({condition.expr_at[0]})\nunless {on}\n({condition.expr_at[BEFORE_MS]})",
            )
        )
    result.identities.append(
        Query(f"Slices that exist now but not {before} earlier:", f"{presence}\nunless\n{presence} offset {before}")
    )
    result.identities.append(
        Query(
            f"Slices that existed {before} earlier but are gone now:", f"{presence} offset {before}\nunless\n{presence}"
        )
    )
    raw = _raw_selector(slo)
    if raw is not None:
        result.identities.append(
            Query(
                f"Raw series whose exact label set is new since {before} earlier (new pods, instances, versions):",
                f"{raw}\nunless\n{raw} offset {before}",
            )
        )
        result.identities.append(
            Query(f"Raw series that vanished since {before} earlier:", f"{raw} offset {before}\nunless\n{raw}")
        )
    if condition is None:
        return result
    bad = condition.expr_at[0]
    for label in slo.slice.by:
        result.smallest.append(Query(f"Bad slices per {code(label)}:", f"count by ({label}) (\n  {bad}\n)"))
    if slo.counts_events and slo.slice.by:
        result.smallest.append(
            Query(
                "The bad slice with the least traffic (the smallest reproduction):",
                f"bottomk(1, {series.recorded(series.TOTAL_5M, slo)} and {on} ({bad}))",
            )
        )
    value = series.value(slo)
    by = slo.slice.by
    if len(by) >= 2:
        result.counterexample.append(
            Query(
                f"Healthy slices that share {code(by[0])} with a bad one:",
                f"({value} unless {on} ({bad}))\nand on (slo, {by[0]})\n({bad})",
            )
        )
    elif by:
        result.counterexample.append(Query("Healthy slices right now:", f"{value}\nunless {on}\n({bad})"))
    else:
        result.counterexample.append(
            Query(
                f"The same signal {before} earlier (set the offset to before the bad time):",
                series.value(slo, BEFORE_MS),
            )
        )
    return result


# -- alerts -----------------------------------------------------------------------------


@dataclass(frozen=True)
class Row:
    """One row of the thresholds table; every field is plain text for the ``cell`` filter."""

    alert: str
    severity: str
    kind: str
    long: str
    short: str
    factor: str
    ratio: str
    bound: str
    for_: str
    keep_firing_for: str
    why: str


@dataclass(frozen=True)
class Pair:
    burn: BurnAlert
    threshold: str  # error ratio, as a percentage
    exhaustion: str  # time to spend the whole budget at this rate


@dataclass(frozen=True)
class AlertView:
    """Everything one alert heading says; burn pairs that share a name share one view."""

    name: str
    kind: str
    rules: tuple[prometheus.AlertRule, ...]
    pairs: tuple[Pair, ...] = ()
    band: Range | None = None
    band_label: str = ""
    direction: str = ""
    bounds: tuple[str, ...] = ()

    @property
    def severities(self) -> str:
        return ", ".join(dict.fromkeys(rule.labels.get("severity", "") for rule in self.rules))


def _pair(slo: SLO, burn: BurnAlert) -> Pair:
    assert slo.objective is not None
    exhaustion = int(slo.objective.period_ms / burn.factor) // MINUTE * MINUTE
    return Pair(burn, numbers.percent(burn.factor * slo.objective.budget), format_duration(exhaustion))


def alert_views(model: Model, slo: SLO) -> list[AlertView]:
    grouped: dict[str, list[prometheus.AlertRule]] = {}
    for rule in prometheus.alert_rules(model, slo):
        grouped.setdefault(rule.name, []).append(rule)
    views = []
    for name, rules in grouped.items():
        first = rules[0]
        if first.kind == "burn":
            pairs = tuple(_pair(slo, rule.burn) for rule in rules if rule.burn is not None)
            views.append(AlertView(name, "burn", tuple(rules), pairs=pairs))
        elif first.kind == "range" and first.band is not None:
            found = tuple(bounds(slo, first.band, first.direction))
            views.append(
                AlertView(
                    name,
                    "range",
                    tuple(rules),
                    band=first.band,
                    band_label=first.band_label,
                    direction=first.direction,
                    bounds=found,
                )
            )
        else:
            views.append(AlertView(name, first.kind, tuple(rules)))
    return views


def _ms(value: int) -> str:
    return format_duration(value) if value else "—"


def threshold_rows(slo: SLO, views: Iterable[AlertView]) -> list[Row]:
    rows = []
    for view in views:
        for rule in view.rules:
            severity = rule.labels.get("severity", "")
            common = {"alert": view.name, "severity": severity, "for_": _ms(rule.for_ms)}
            common["keep_firing_for"] = _ms(rule.keep_firing_for_ms)
            if rule.kind == "burn" and rule.burn is not None and slo.objective is not None:
                pair = _pair(slo, rule.burn)
                rows.append(
                    Row(
                        **common,
                        kind="error budget burn",
                        long=format_duration(rule.burn.long_ms),
                        short=format_duration(rule.burn.short_ms),
                        factor=f"{go_float(rule.burn.factor)}x",
                        ratio=pair.threshold,
                        bound="—",
                        why=f"the {format_duration(slo.objective.period_ms)} budget is gone in {pair.exhaustion}",
                    )
                )
            elif rule.kind == "range":
                rows.append(
                    Row(
                        **common,
                        kind=f"{rule.band_label.lower()} range",
                        long="—",
                        short="—",
                        factor="—",
                        ratio="—",
                        bound="; ".join(view.bounds),
                        why=rule.band.reason if rule.band is not None and rule.band.reason else "—",
                    )
                )
            else:
                rows.append(
                    Row(
                        **common,
                        kind="no data",
                        long="—",
                        short="—",
                        factor="—",
                        ratio="—",
                        bound=f"no {series.presence_series(slo)} series for {_ms(rule.for_ms)}",
                        why="every other alert of this spec is blind",
                    )
                )
    return rows


# -- rendering --------------------------------------------------------------------------


@functools.cache
def environment() -> jinja2.Environment:
    env = jinja2.Environment(
        loader=jinja2.FileSystemLoader(TEMPLATES),
        undefined=jinja2.StrictUndefined,
        keep_trailing_newline=True,
        autoescape=False,
        trim_blocks=True,
        lstrip_blocks=True,
    )
    env.filters.update(md=md, cell=cell, inline=inline, code=code, fence=fence, url=url, duration=_ms, gofloat=go_float)
    return env


def _automation(model: Model, slo: SLO) -> Automation | None:
    name = slo.mitigation.automation
    return next((found for found in model.project.automations if found.name == name), None)


def dashboard(model: Model, team: Team) -> str:
    return links.dashboard_url(model, links.team_dashboard_uid(team))


def dashboard_hint(model: Model, slo: SLO) -> str:
    """The team dashboard narrowed to one slice; the reader fills in the alert's label values."""
    base = dashboard(model, slo.owner)
    if not slo.slice.by:
        return base
    return base + "?" + "&".join(f"var-{links.dashboard_variable(label)}=<{label}>" for label in slo.slice.by)


def _relative(path: str) -> str:
    return posixpath.relpath(path, links.RUNBOOKS_DIR)


def runbook(model: Model, slo: SLO) -> str:
    views = alert_views(model, slo)
    context = {
        "model": model,
        "slo": slo,
        "family_title": FAMILY_TITLES.get(slo.family, slo.family),
        "views": views,
        "rows": threshold_rows(slo, views),
        "queries": paste_queries(slo),
        "investigation": investigation(slo),
        "automation": _automation(model, slo),
        "dashboard": dashboard(model, slo.owner),
        "dashboard_hint": dashboard_hint(model, slo),
        "budget_percent": numbers.percent(slo.objective.budget) if slo.objective else "",
        "budget_time": (
            format_duration(round(clean_number(slo.objective.budget) * slo.objective.period_ms / 1000) * 1000)
            if slo.objective
            else ""
        ),
        "target_percent": numbers.percent(slo.objective.target) if slo.objective else "",
        "bands": [
            (label, band) for label, band in (("Normal", slo.normal_range), ("Critical", slo.critical_range)) if band
        ],
        "band_bounds": lambda band: [b for d in _directions(band) for b in bounds(slo, band, d)],
        "format_value": lambda number: format_value(slo, number),
        "selector": render_selector(None, slo.slice.matchers) if slo.slice.matchers else "",
        "join_info": [render_selector(join.info.metric, join.info.matchers) for join in slo.slice.joins],
        "presence_series": series.recorded(series.presence_series(slo), slo),
        "see_also": [(item, _see_also_target(model, item)) for item in slo.see_also],
    }
    return environment().get_template("runbook.md.j2").render(context)


def _see_also_target(model: Model, item: str) -> str | None:
    """A spec name links to its runbook; a URL links to itself; anything else is plain text."""
    for other in model.slos:
        if other.name == item:
            return _relative(links.runbook_path(other))
    if re.fullmatch(r"https?://[^\s<>]+", item):
        return item
    return None


def index(model: Model) -> str:
    families: dict[str, list[SLO]] = {family: [] for family in FAMILY_TITLES}
    for slo in model.slos:
        families.setdefault(slo.family, []).append(slo)
    teams: list[tuple[Team, list[SLO]]] = []
    for team in model.teams:
        owned = [slo for slo in model.slos if slo.owner.name == team.name]
        if owned:
            teams.append((team, owned))
    context = {
        "families": [(FAMILY_TITLES.get(name, name), name, slos) for name, slos in families.items() if slos],
        "teams": teams,
        "link": lambda slo: _relative(links.runbook_path(slo)),
        "alerts": lambda slo: list(dict.fromkeys(prometheus.alert_names(slo))),
        "dashboard": lambda team: dashboard(model, team),
    }
    return environment().get_template("index.md.j2").render(context)


def _finish(text: str) -> bytes:
    return (text.rstrip("\n") + "\n").encode("utf-8")


def render(model: Model) -> dict[str, bytes]:
    files = {links.runbook_path(slo): _finish(runbook(model, slo)) for slo in model.slos}
    files[INDEX_PATH] = _finish(index(model))
    return files
