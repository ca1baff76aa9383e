"""Counter selectors, histogram latencies and unit states out of Sloth's and OpenSLO's event queries.

This spec language names the series (a ratio SLI's ``bad``/``good`` and ``total`` counters, a
latency SLI's histogram and threshold, a state SLI's per-unit expression) and writes every
rate and window itself. So an event query maps only when it is one of these shapes, with the
window Sloth fills in (``[{{.window}}]``) or, for OpenSLO, a fixed one (``[5m]``), dropped here:

* a sum of the rate of one counter selector (``sum(rate(x{...}[{{.window}}]))``, optionally
  ``by``), or for OpenSLO a counter selector summed or not: a ratio SLI;
* a histogram's count less its bucket at one ``le`` (``count - bucket``), the bucket over the
  count (``bucket / count``, as an error ratio ``1 - bucket / count``), or the bucket's rate as
  the good events over the count as the total: a latency SLI;
* the number of a gauge's series beyond a bound over the number of its series
  (``sum_over_time(count(x < 0.75)[{{.window}}:])``), or the mean of a 0..1 gauge: a state SLI.

Anything else is refused with the reason.
"""

from __future__ import annotations

import re
from dataclasses import dataclass

from compiler.promql import Matcher, PromQLError, parse_selector, render_selector

_SELECTOR = r"(?P<sel>[a-zA-Z_:][a-zA-Z0-9_:]*\s*(\{[^{}]*\})?|\{[^{}]*\})"
_BY = r"(?:\s*(?:by|BY)\s*\((?P<{0}>[^()]*)\))?"
_SLOTH_WINDOW = r"\{\{\s*\.window\s*\}\}"
_FIXED_WINDOW = r"[0-9]+(?:ms|[smhdwy])(?:[0-9]+(?:ms|[smhdwy]))*"
_RANGE = r"\[\s*(?:" + _SLOTH_WINDOW + r"|(?P<fixed>" + _FIXED_WINDOW + r"))\s*\]"


def _rate(window: str) -> re.Pattern[str]:
    return re.compile(
        r"^\s*sum"
        + _BY.format("by1")
        + r"\s*\(\s*(?:rate|increase)\s*\(\s*"
        + _SELECTOR
        + r"\s*"
        + window
        + r"\s*\)\s*\)"
        + _BY.format("by2")
        + r"\s*$",
        re.DOTALL,
    )


_RATE = _rate(r"\[\s*" + _SLOTH_WINDOW + r"\s*\]")
_RATE_ANY_WINDOW = _rate(_RANGE)
_SUMMED = re.compile(
    r"^\s*sum" + _BY.format("by1") + r"\s*\(\s*" + _SELECTOR + r"\s*\)" + _BY.format("by2") + r"\s*$", re.DOTALL
)
_BARE = re.compile(r"^\s*" + _SELECTOR + r"\s*$", re.DOTALL)
# sum_over_time((count [by (...)] (<expr>))[{{.window}}:]), optionally `or on() vector(0)`.
_COUNTED = re.compile(
    r"^\s*sum_over_time\s*\(\s*\(\s*count"
    + _BY.format("by1")
    + r"\s*\((?P<expr>[^()]*)\)"
    + _BY.format("by2")
    + r"\s*\)\s*\[\s*"
    + _SLOTH_WINDOW
    + r"\s*:\s*\]\s*\)(?P<zero>\s*(?:or|OR)\s+on\s*\(\s*\)\s*vector\s*\(\s*0\s*\))?\s*$",
    re.DOTALL,
)
_COMPARED = re.compile(
    r"^\s*" + _SELECTOR + r"\s*(?P<op><=|>=|==|!=|<|>)\s*(?P<bound>[-+]?[0-9.]+(?:[eE][-+]?[0-9]+)?)\s*$"
)
_OVER_TIME = re.compile(
    r"^\s*sum"
    + _BY.format("by1")
    + r"\s*\(\s*(?P<fn>sum|count)_over_time\s*\(\s*"
    + _SELECTOR
    + r"\s*"
    + _RANGE
    + r"\s*\)\s*\)"
    + _BY.format("by2")
    + r"\s*$",
    re.DOTALL,
)
# VictoriaMetrics' MetricsQL: 1 - histogram_share(<le>, sum by (vmrange|le) (rate(<x>_bucket{...}[{{.window}}]))).
_SHARE = re.compile(
    r"^\s*1\s*-\s*histogram_share\s*\(\s*(?P<le>[0-9.]+(?:[eE][-+]?[0-9]+)?)\s*,\s*sum\s*(?:by|BY)\s*\(\s*"
    r"(?P<bucket_label>vmrange|le)\s*\)\s*\(\s*rate\s*\(\s*" + _SELECTOR + r"\s*" + _RANGE + r"\s*\)\s*\)\s*\)\s*$",
    re.DOTALL,
)
_ONE = re.compile(r"^\s*vector\s*\(\s*1\s*\)\s*(?:" + _RANGE + r")?\s*$")
_NEGATED = {"<": ">=", "<=": ">", ">": "<=", ">=": "<", "==": "!=", "!=": "=="}

WANTED = "sum(rate(<counter selector>[{{.window}}])), optionally with by (...)"
SHAPES = (
    "a ratio of counters (sum(rate(<counter>[{{.window}}]))), a histogram latency (count - bucket{le=...}, "
    "bucket{le=...} / count) or a count of a gauge's series beyond a bound (sum_over_time(count(<gauge> < "
    "<bound>)[{{.window}}:]))"
)


@dataclass(frozen=True)
class Latency:
    """A latency SLI read out of a query: the histogram (without ``_bucket``), its ``le`` and other matchers."""

    histogram: str
    threshold: float
    matchers: tuple[Matcher, ...]
    by: tuple[str, ...]
    vmrange: bool = False  # read from VictoriaMetrics vmrange buckets with histogram_share

    @property
    def selector(self) -> str | None:
        """The matchers as a spec's ``sli.latency.selector`` (``{verb!="WATCH"}``), or None without any."""
        return render_selector(None, self.matchers) if self.matchers else None


@dataclass(frozen=True)
class State:
    """A state SLI read out of a query: the per-unit expression (1 = good) and the labels it was summed by."""

    expr: str
    by: tuple[str, ...]
    gauge_mean: bool = False  # the gauge itself, read as each unit's good share (Sloth's raw mean)


def rate_of_counter(query: str) -> tuple[str, tuple[str, ...]] | None:
    """(selector, by labels) of ``sum [by (...)] (rate(<selector>[{{.window}}]))``, else None."""
    return _match(_RATE, query)


def counter(query: str) -> tuple[str, tuple[str, ...]] | None:
    """(selector, by labels) of a counter selector, bare or summed, or of the rate form (any window)."""
    return _match(_RATE_ANY_WINDOW, query) or _match(_SUMMED, query) or _match(_BARE, query)


def fixed_window(query: str) -> str | None:
    """The literal window of a rate query (``5m`` of ``[5m]``), or None (none, or Sloth's ``{{.window}}``)."""
    found = _RATE_ANY_WINDOW.match(query)
    return found.group("fixed") if found is not None else None


def _match(pattern: re.Pattern[str], query: str) -> tuple[str, tuple[str, ...]] | None:
    found = pattern.match(query)
    if found is None:
        return None
    return found.group("sel").strip(), _by(found)


def _by(found: re.Match[str]) -> tuple[str, ...]:
    groups = found.groupdict()
    by_text = groups.get("by1") or groups.get("by2") or ""
    return tuple(sorted(label.strip() for label in by_text.split(",") if label.strip()))


def _selector(text: str) -> tuple[str, tuple[Matcher, ...]] | None:
    """(metric, matchers) of a selector with a metric name, or None."""
    try:
        name, matchers = parse_selector(text)
    except (PromQLError, ValueError):
        return None
    return (name, matchers) if name is not None else None


def _unwrap(text: str) -> str:
    """``text`` without parentheses around the whole of it."""
    text = text.strip()
    while text.startswith("(") and _closing(text, 0) == len(text) - 1:
        text = text[1:-1].strip()
    return text


def _closing(text: str, start: int) -> int:
    """Where the bracket opened at ``start`` closes (quotes skipped), or -1."""
    depth, quote, index = 0, "", start
    while index < len(text):
        char = text[index]
        if quote:
            index += 2 if char == "\\" else 1
            quote = "" if char == quote else quote
            continue
        if char in "\"'`":
            quote = char
        elif char in "([{":
            depth += 1
        elif char in ")]}":
            depth -= 1
            if depth == 0:
                return index
        index += 1
    return -1


def _split(text: str, op: str) -> tuple[str, str] | None:
    """``text`` as ``lhs op rhs`` at its one top-level ``op`` (outside brackets and quotes), or None."""
    depth, quote, found, index = 0, "", [], 0
    while index < len(text):
        char = text[index]
        if quote:
            index += 2 if char == "\\" else 1
            quote = "" if char == quote else quote
            continue
        if char in "\"'`":
            quote = char
        elif char in "([{":
            depth += 1
        elif char in ")]}":
            depth -= 1
        elif char == op and depth == 0:
            found.append(index)
        index += 1
    if len(found) != 1:
        return None
    return text[: found[0]], text[found[0] + 1 :]


def _histogram_part(
    query: str, suffix: str, windows: re.Pattern[str]
) -> tuple[str, tuple[Matcher, ...], tuple[str, ...]] | None:
    """(histogram, matchers, by) of ``sum(rate(<histogram><suffix>{...}[w]))``."""
    found = windows.match(_unwrap(query))
    parsed = _selector(found.group("sel")) if found else None
    if found is None or parsed is None or not parsed[0].endswith(suffix):
        return None
    return parsed[0].removesuffix(suffix), parsed[1], _by(found)


def _bucket_and_count(bucket: str, count: str, windows: re.Pattern[str]) -> Latency | None:
    """A latency SLI of a bucket rate at one ``le`` and the same histogram's count rate, same matchers and by."""
    slow = _histogram_part(bucket, "_bucket", windows)
    every = _histogram_part(count, "_count", windows)
    if slow is None or every is None or slow[0] != every[0] or slow[2] != every[2]:
        return None
    le = [m for m in slow[1] if m.name == "le"]
    rest = tuple(m for m in slow[1] if m.name != "le")
    if len(le) != 1 or le[0].op != "=" or set(rest) != set(every[1]):
        return None
    try:
        threshold = float(le[0].value)
    except ValueError:
        return None
    return Latency(slow[0], threshold, every[1], slow[2])


def latency_events(error: str, total: str, fixed: bool = False) -> Latency | None:
    """Sloth's ``count - bucket{le=...}`` over ``count``: the slow requests of a histogram."""
    windows = _RATE_ANY_WINDOW if fixed else _RATE
    parts = _split(_unwrap(error), "-")
    if parts is None or _histogram_part(total, "_count", windows) != _histogram_part(parts[0], "_count", windows):
        return None
    return _bucket_and_count(parts[1], parts[0], windows)


def latency_good(good: str, total: str, fixed: bool = False) -> Latency | None:
    """OpenSLO's ``bucket{le=...}`` as the good events over ``count`` as the total."""
    return _bucket_and_count(good, total, _RATE_ANY_WINDOW if fixed else _RATE)


def latency_error_ratio(query: str) -> Latency | None:
    """An error-ratio query ``1 - (bucket{le=...} / count)`` or ``(count - bucket{le=...}) / count``."""
    parts = _split(_unwrap(query), "-")
    if parts is not None and parts[0].strip() == "1":
        ratio = _split(_unwrap(parts[1]), "/")
        return _bucket_and_count(ratio[0], ratio[1], _RATE) if ratio else None
    ratio = _split(_unwrap(query), "/")
    return latency_events(ratio[0], ratio[1]) if ratio else None


def latency_share(error: str, total: str) -> Latency | None:
    """MetricsQL's ``1 - histogram_share(le, sum by (vmrange) (rate(x_bucket[...])))`` over ``vector(1)``."""
    found = _SHARE.match(error)
    parsed = _selector(found.group("sel")) if found else None
    if found is None or parsed is None or not parsed[0].endswith("_bucket") or not _ONE.match(total):
        return None
    if any(m.name in ("le", "vmrange") for m in parsed[1]):
        return None
    vmrange = found.group("bucket_label") == "vmrange"
    return Latency(parsed[0].removesuffix("_bucket"), float(found.group("le")), parsed[1], (), vmrange)


def state_events(error: str, total: str) -> State | None:
    """``sum_over_time(count(x OP bound)[w:])`` over ``sum_over_time(count(x)[w:])``: units of x in a bad state."""
    bad, every = _COUNTED.match(error), _COUNTED.match(total)
    if bad is None or every is None or every.group("zero") or _by(bad) != _by(every):
        return None
    compared = _COMPARED.match(bad.group("expr"))
    gauge = _selector(every.group("expr"))
    if compared is None or gauge is None or _selector(compared.group("sel")) != gauge:
        return None
    good = _NEGATED[compared.group("op")]
    return State(f"{compared.group('sel').strip()} {good} bool {compared.group('bound')}", _by(bad))


def state_error_ratio(query: str) -> State | None:
    """``1 - (sum(sum_over_time(x[w])) / sum(count_over_time(x[w])))``: one minus the mean of a 0..1 gauge."""
    parts = _split(_unwrap(query), "-")
    ratio = _split(_unwrap(parts[1]), "/") if parts is not None and parts[0].strip() == "1" else None
    if ratio is None:
        return None
    summed, counted = _OVER_TIME.match(_unwrap(ratio[0])), _OVER_TIME.match(_unwrap(ratio[1]))
    if summed is None or counted is None or (summed.group("fn"), counted.group("fn")) != ("sum", "count"):
        return None
    gauge = _selector(summed.group("sel"))
    if gauge is None or gauge != _selector(counted.group("sel")) or _by(summed) != _by(counted):
        return None
    return State(summed.group("sel").strip(), _by(summed), gauge_mean=True)


def bad_of_good(good: str, total: str) -> str | None:
    """``total`` with the one negative matcher ``good`` adds turned positive: the same bad events as
    total less good (each series matches exactly one of ``=~R`` and ``!~R``), in a form the generated
    tests can build. None unless ``good`` is ``total`` plus one ``!=`` or ``!~`` matcher."""
    good_parts, total_parts = _selector(good), _selector(total)
    if good_parts is None or total_parts is None or good_parts[0] != total_parts[0]:
        return None
    extra = [m for m in good_parts[1] if m not in total_parts[1]]
    if len(extra) != 1 or extra[0].op not in ("!=", "!~") or set(good_parts[1]) - {extra[0]} != set(total_parts[1]):
        return None
    if any(m.name == extra[0].name for m in total_parts[1]):
        return None
    flipped = Matcher(extra[0].name, "=" if extra[0].op == "!=" else "=~", extra[0].value)
    return render_selector(total_parts[0], (*total_parts[1], flipped))
