"""PromQL helpers for the SLO compiler, built on ``promql_parser``.

The compiler has to accept user-written PromQL fragments (selectors and
expressions), check them, and emit new PromQL.  Everything PromQL-specific
lives here so that the rest of the package never has to deal with the
``promql_parser`` AST or with string escaping rules.

Design notes (why things are the way they are):

* ``promql_parser``'s own ``str()`` rendering is *not* safe to emit: it does
  not escape quotes/backslashes inside string literals and matcher values,
  drops the ``:`` of a step-less subquery (``x[1h:]`` becomes the matrix
  selector ``x[1h]``) and truncates sub-second durations.  We therefore render
  the AST ourselves (:func:`inject_matchers`).
* Assigning attributes on ``promql_parser`` nodes does not reliably change
  the underlying Rust AST, so we never mutate nodes; injection happens while
  rendering.
* The parser reports errors without positions; :class:`PromQLError` keeps
  the parser's message and prefixes it so users know which language failed.
"""

from __future__ import annotations

import functools
import math
import re
from collections.abc import Callable, Iterable, Iterator, Sequence
from dataclasses import dataclass
from datetime import UTC, datetime, timedelta

import promql_parser as pp

from compiler.promql import bounds
from compiler.promql.regex import problem as _regex_problem

# Parsed trees are shared: the compiler reads the same few hundred expressions tens of thousands
# of times (every test case re-analyses its spec's SLI), and nodes are never mutated (see above).
# Errors are not cached, so a bad expression is parsed again each time it is reported.
_CACHE_SIZE = 4096

__all__ = [
    "Analysis",
    "Matcher",
    "PromQLError",
    "analyse",
    "check_bounds",
    "format_duration",
    "inject_matchers",
    "is_valid_label_name",
    "is_valid_metric_name",
    "labels_lost",
    "outer_aggregation",
    "parse_duration",
    "parse_expr",
    "parse_selector",
    "prometheus_name",
    "quote",
    "render_expr",
    "render_selector",
    "selector_reads",
]

MATCH_OPS: frozenset[str] = frozenset({"=", "!=", "=~", "!~"})

_LABEL_NAME_RE = re.compile(r"^[a-zA-Z_][a-zA-Z0-9_]*$")
_METRIC_NAME_RE = re.compile(r"^[a-zA-Z_:][a-zA-Z0-9_:]*$")
# Same grammar as Prometheus' model.ParseDuration: every unit at most once,
# in decreasing order, integers only.
_DURATION_RE = re.compile(r"^(?:(\d+)y)?(?:(\d+)w)?(?:(\d+)d)?(?:(\d+)h)?(?:(\d+)m)?(?:(\d+)s)?(?:(\d+)ms)?$")
_DURATION_UNITS_MS: tuple[int, ...] = (
    365 * 24 * 3600 * 1000,
    7 * 24 * 3600 * 1000,
    24 * 3600 * 1000,
    3600 * 1000,
    60 * 1000,
    1000,
    1,
)
# Units used for output.  Weeks and years are deliberately not used so that
# windows written in days (the SLO convention: 7d, 28d, 30d) stay in days.
_FORMAT_UNITS: tuple[tuple[str, int], ...] = (
    ("d", 24 * 3600 * 1000),
    ("h", 3600 * 1000),
    ("m", 60 * 1000),
    ("s", 1000),
    ("ms", 1),
)
# Prometheus stores durations as int64 nanoseconds.
_MAX_DURATION_MS = (2**63 - 1) // 1_000_000

_NAME_LABEL = "__name__"
_EPOCH = datetime(1970, 1, 1, tzinfo=UTC)
_ONE_MS = timedelta(milliseconds=1)

_SIMPLE_ESCAPES: dict[str, str] = {
    "\\": "\\\\",
    '"': '\\"',
    "\n": "\\n",
    "\t": "\\t",
    "\r": "\\r",
    "\a": "\\a",
    "\b": "\\b",
    "\f": "\\f",
    "\v": "\\v",
}


class PromQLError(ValueError):
    """Raised for PromQL the compiler cannot accept.

    Subclasses ``ValueError`` so callers that validate generic input can catch
    it without knowing about this module; the message is meant for end users.
    """


@dataclass(frozen=True)
class Matcher:
    """One label matcher, independent of the ``promql_parser`` types.

    The compiler stores and compares matchers (e.g. in its own config model),
    so this is a plain hashable value object rather than a parser node.
    """

    name: str
    op: str
    value: str

    def __post_init__(self) -> None:
        """Reject matchers that could never render to valid PromQL."""
        if self.op not in MATCH_OPS:
            raise ValueError(f"invalid matcher operator {self.op!r}; expected one of = != =~ !~")
        if not is_valid_label_name(self.name):
            raise ValueError(f"invalid label name {self.name!r}")

    def render(self) -> str:
        """Render as PromQL, e.g. ``job="apiserver"``, escaping the value."""
        return f"{self.name}{self.op}{quote(self.value)}"


@dataclass(frozen=True)
class Analysis:
    """Facts extracted from an expression, used for validation.

    Every field lists occurrences in source order (duplicates included) so
    callers can both check "all selectors …" and report counts.
    """

    selectors: tuple[tuple[str | None, tuple[Matcher, ...]], ...]
    ranges_ms: tuple[int, ...]
    functions: tuple[str, ...]
    offsets_ms: tuple[int, ...]
    pinned_ms: tuple[int, ...] = ()  # timestamps of ``@ <time>`` modifiers


# --------------------------------------------------------------------------
# Names, strings and durations
# --------------------------------------------------------------------------


def is_valid_label_name(name: str) -> bool:
    """Return whether ``name`` is a legal label name (Prometheus 2.x charset).

    Prometheus 3 allows quoted UTF-8 names, but our output must also work on
    2.x servers and the parser we use only understands the legacy charset.
    """
    return _LABEL_NAME_RE.fullmatch(name) is not None


def is_valid_metric_name(name: str) -> bool:
    """Return whether ``name`` is a legal metric name (Prometheus 2.x charset).

    Unlike label names, metric (and recording rule) names may contain ``:``.
    """
    return _METRIC_NAME_RE.fullmatch(name) is not None


@functools.lru_cache(maxsize=_CACHE_SIZE * 4)
def quote(value: str) -> str:
    """Return ``value`` as a double-quoted PromQL string literal.

    Values come from user config (and may contain templating such as
    ``{{ $labels.x }}`` or regexes), so everything the PromQL lexer treats
    specially is escaped.  ASCII control characters use ``\\xNN`` and C1
    controls use ``\\u00NN`` because those forms mean the same code point in
    both Go (Prometheus) and ``promql_parser``; printable non-ASCII text is
    kept verbatim so rules stay readable.
    """
    out: list[str] = ['"']
    for ch in value:
        simple = _SIMPLE_ESCAPES.get(ch)
        if simple is not None:
            out.append(simple)
            continue
        code = ord(ch)
        if code < 0x20 or code == 0x7F:
            out.append(f"\\x{code:02x}")
        elif 0x80 <= code <= 0x9F:
            out.append(f"\\u{code:04x}")
        else:
            out.append(ch)
    out.append('"')
    return "".join(out)


def parse_duration(text: str) -> int | None:
    """Parse a Prometheus duration (``5m``, ``1h30m``, ``500ms``) to milliseconds.

    Returns ``None`` instead of raising because callers validate many fields
    and want to produce their own, context-specific error message.  A bare
    number (including ``"0"``) is rejected: in an SLO spec it is almost
    always a forgotten unit.
    """
    match = _DURATION_RE.fullmatch(text)
    if match is None or not text:
        return None
    total = 0
    for group, unit_ms in zip(match.groups(), _DURATION_UNITS_MS, strict=True):
        if group is not None:
            total += int(group) * unit_ms
    if total > _MAX_DURATION_MS:
        return None
    return total


@functools.lru_cache(maxsize=_CACHE_SIZE)
def format_duration(ms: int) -> str:
    """Format milliseconds as a canonical Prometheus duration.

    Uses the largest units first (``5400000`` -> ``1h30m``) but never weeks or
    years, so SLO windows keep their conventional day form (``7d``, ``30d``).
    Negative values raise because Prometheus duration literals are unsigned;
    signed offsets are rendered by the caller.
    """
    if ms < 0:
        raise ValueError(f"duration must not be negative: {ms}")
    if ms == 0:
        return "0s"
    parts: list[str] = []
    remaining = ms
    for unit, unit_ms in _FORMAT_UNITS:
        count, remaining = divmod(remaining, unit_ms)
        if count:
            parts.append(f"{count}{unit}")
    return "".join(parts)


# --------------------------------------------------------------------------
# Parsing and selectors
# --------------------------------------------------------------------------


# The parser speaks Prometheus 3, the rules run on Prometheus 2.42: Prometheus 3 renamed holt_winters to
# double_exponential_smoothing. Expressions are written and rendered with the 2.42 name (the parser is
# handed the 3.x one), and the 3.x name is refused, since Prometheus 2.42 would not load the rule.
RENAMED_IN_PROMETHEUS_3 = {"holt_winters": "double_exponential_smoothing"}
_PROMETHEUS_2_NAME = {new: old for old, new in RENAMED_IN_PROMETHEUS_3.items()}
_TOKENS = re.compile(
    r"(?P<string>\"(?:[^\"\\\n]|\\.)*\"?|'(?:[^'\\\n]|\\.)*'?|`[^`]*`?)|(?P<comment>#[^\n]*)"
    r"|(?P<name>[a-zA-Z_:][a-zA-Z0-9_:]*)(?=\s*\()"
)


def prometheus_name(function: str) -> str:
    """A function's name as Prometheus 2.42 spells it (the parser's name for renamed ones)."""
    return _PROMETHEUS_2_NAME.get(function, function)


def _in_parser_dialect(text: str) -> str:
    """``text`` with holt_winters( as the parser's double_exponential_smoothing(; strings and comments kept."""

    def swap(match: re.Match[str]) -> str:
        name = match["name"]
        if name in _PROMETHEUS_2_NAME:
            raise ValueError(
                f"{name}() is Prometheus 3's name; Prometheus 2.42, which runs these rules, calls it "
                f"{_PROMETHEUS_2_NAME[name]}()"
            )
        return RENAMED_IN_PROMETHEUS_3.get(name, name) if name else match.group()

    if not any(name in text for name in (*RENAMED_IN_PROMETHEUS_3, *_PROMETHEUS_2_NAME)):
        return text
    return _TOKENS.sub(swap, text)


def check_bounds(text: str) -> None:
    """Refuse spec PromQL over the length, nesting or term bound (``bounds``), before it is parsed."""
    problem = bounds.problem(text)
    if problem is not None:
        raise PromQLError(problem)


@functools.lru_cache(maxsize=_CACHE_SIZE)
def _parse_cached(text: str) -> pp.Expr:
    problem = bounds.problem(text, bounds.BACKSTOP)  # measured once per text: a hit skips it
    if problem is not None:
        raise PromQLError(problem)
    return pp.parse(_in_parser_dialect(text))


def parse_expr(text: str) -> pp.Expr:
    """Parse ``text`` as PromQL, raising :class:`PromQLError` on failure.

    Wraps the parser so callers depend on one error type and get a message
    that says which language was invalid. Text past the parser's backstop
    (``bounds.BACKSTOP``: four times the bounds of spec text, room for what the
    compiler builds around it) is refused unparsed.
    """
    try:
        return _parse_cached(text)
    except PromQLError:
        raise
    except BaseException as exc:
        # The extension raises ValueError for syntax errors, but some inputs
        # (e.g. the duration ``x[1e999]``) trigger a Rust panic that surfaces
        # as pyo3's PanicException, a BaseException subclass.  Convert those
        # too, but let KeyboardInterrupt and friends propagate.
        if not isinstance(exc, Exception) and type(exc).__name__ != "PanicException":
            raise
        message = str(exc).strip() or type(exc).__name__
        raise PromQLError(f"invalid PromQL: {message}") from exc


def _match_op(op: pp.MatchOp) -> str:
    """Map the parser's match operator to its PromQL spelling.

    ``pp.MatchOp`` members are not hashable, so a dict lookup is impossible.
    """
    if op == pp.MatchOp.Equal:
        return "="
    if op == pp.MatchOp.NotEqual:
        return "!="
    if op == pp.MatchOp.Re:
        return "=~"
    if op == pp.MatchOp.NotRe:
        return "!~"
    raise PromQLError(f"unsupported PromQL match operator: {op!r}")


def _check_label_name(name: str) -> None:
    """The parser accepts Prometheus 3's quoted UTF-8 names ({"a.b"="x"}); rules for 2.x cannot carry them."""
    if not is_valid_label_name(name):
        raise PromQLError(
            f"label name {name!r} is not a Prometheus 2.x label name ([a-zA-Z_][a-zA-Z0-9_]*); "
            "quoted UTF-8 label names need Prometheus 3"
        )


def _convert_matcher(matcher: pp.Matcher) -> Matcher:
    """Convert a parser matcher into our value type; a regex Prometheus would refuse is a PromQLError.

    The parser checks regexes with Rust's syntax, which is not Prometheus's: it accepts ``(?x)``,
    ``a**`` and ``[[:foo:]]``, which Go's RE2 refuses (promtool fails to load the rule).
    """
    _check_label_name(matcher.name)
    converted = Matcher(matcher.name, _match_op(matcher.op), matcher.value)
    if converted.op in ("=~", "!~"):
        reason = _regex_problem(converted.value)
        if reason is not None:
            raise PromQLError(
                f"invalid regex in {converted.render()}: {reason} (Prometheus reads label regexes in RE2 syntax)"
            )
    return converted


def _named_labels(node: pp.Expr) -> list[str]:
    """Label names an expression node writes outside matchers: by/without, on/ignoring, group_x,
    label_replace/label_join destinations and count_values' label."""
    if isinstance(node, pp.AggregateExpr):
        names = list(node.modifier.labels) if node.modifier is not None else []
        if str(node.op) == "count_values" and isinstance(node.param, pp.StringLiteral):
            names.append(node.param.val)
        return names
    if isinstance(node, pp.BinaryExpr) and node.modifier is not None:
        matching = node.modifier.matching
        return [*(matching.labels if matching is not None else []), *(node.modifier.group_labels or [])]
    if isinstance(node, pp.Call) and node.func.name in _LABEL_WRITING_FUNCTIONS and len(node.args) > 1:
        destination = _unwrap(node.args[1])
        return [destination.val] if isinstance(destination, pp.StringLiteral) else []
    return []


def _pinned_ms(at: pp.AtModifier | None) -> list[int]:
    """The timestamp of an ``@ <time>`` modifier (``@ start()`` and ``@ end()`` follow the evaluation)."""
    if at is None or at.type in (pp.AtModifierType.Start, pp.AtModifierType.End) or at.at is None:
        return []
    return [(at.at - _EPOCH) // _ONE_MS]


def _selector_parts(node: pp.VectorSelector) -> tuple[str | None, tuple[Matcher, ...]]:
    """Return ``(metric name, matchers)`` for a selector, normalising ``__name__``.

    A metric name may be written as ``metric`` or ``{__name__="metric"}``; both
    yield the name separately and no ``__name__`` equality matcher, so callers
    compare selectors regardless of spelling.  Other ``__name__`` matchers
    (``=~`` etc.) are genuine filters and are kept.

    For Prometheus 3 "or" selectors (``{a="1" or b="2"}``) only the matchers
    shared by every alternative are returned: those are the ones guaranteed
    to apply to every selected series.
    """
    name: str | None = node.name
    converted = [_convert_matcher(m) for m in node.matchers.matchers]
    groups = [[_convert_matcher(m) for m in g] for g in node.matchers.or_matchers]
    if groups:
        first, rest = groups[0], groups[1:]
        converted += [m for m in first if all(m in other for other in rest)]

    name_eq = [m for m in converted if m.name == _NAME_LABEL and m.op == "="]
    if name is None and len(name_eq) == 1:
        name = name_eq[0].value
    if name is not None:
        converted = [m for m in converted if not (m.name == _NAME_LABEL and m.op == "=" and m.value == name)]
    return name, tuple(converted)


@functools.lru_cache(maxsize=_CACHE_SIZE)
def parse_selector(text: str) -> tuple[str | None, tuple[Matcher, ...]]:
    """Parse a plain instant-vector selector such as ``metric{a="b"}``.

    Specs use selectors as building blocks that the compiler combines with
    its own ranges, offsets and functions, so anything beyond a bare selector
    is rejected rather than silently mangled.
    """
    node = parse_expr(text)
    if not isinstance(node, pp.VectorSelector):
        raise PromQLError(f'a plain vector selector such as metric{{label="value"}} is expected, got {text!r}')
    if node.offset is not None or node.at is not None:
        raise PromQLError(f"a plain vector selector is expected, without offset or @ modifiers, got {text!r}")
    return _selector_parts(node)


def render_series(name: str | None, labels: Sequence[tuple[str, str]]) -> str:
    """``render_selector`` with one ``=`` matcher per label, in the given order, without building the
    matchers: the generated tests write tens of thousands of input series this way."""
    for label, _ in labels:
        if not is_valid_label_name(label):
            raise ValueError(f"invalid label name {label!r}")
    if name is not None and not is_valid_metric_name(name):
        raise ValueError(f"invalid metric name {name!r}")
    if name is None and not labels:
        raise ValueError("a selector needs a metric name or at least one matcher")
    body = ",".join(f"{label}={quote(value)}" for label, value in labels)
    if name is None:
        return "{" + body + "}"
    return name if not labels else f"{name}{{{body}}}"


def render_selector(name: str | None, matchers: Sequence[Matcher]) -> str:
    """Render ``name{m1,m2}`` deterministically, in the given matcher order.

    Deterministic output keeps generated rule files diff-friendly.  An empty
    selector is refused because PromQL rejects ``{}``.
    """
    if name is not None and not is_valid_metric_name(name):
        raise ValueError(f"invalid metric name {name!r}")
    if name is None and not matchers:
        raise ValueError("a selector needs a metric name or at least one matcher")
    body = ",".join(m.render() for m in matchers)
    if name is None:
        return "{" + body + "}"
    return name if not matchers else f"{name}{{{body}}}"


# --------------------------------------------------------------------------
# AST traversal
# --------------------------------------------------------------------------


def _children(node: pp.Expr) -> list[pp.Expr]:
    """Direct sub-expressions of ``node`` in source order."""
    if isinstance(node, pp.AggregateExpr):
        kids: list[pp.Expr] = []
        if node.param is not None:
            kids.append(node.param)
        kids.append(node.expr)
        return kids
    if isinstance(node, pp.BinaryExpr):
        return [node.lhs, node.rhs]
    if isinstance(node, pp.Call):
        return list(node.args)
    if isinstance(node, pp.MatrixSelector):
        return [node.vector_selector]
    if isinstance(node, (pp.ParenExpr, pp.UnaryExpr, pp.SubqueryExpr)):
        return [node.expr]
    return []


@functools.lru_cache(maxsize=_CACHE_SIZE)
def calls_time(text: str) -> bool:
    """Whether the expression reads ``time()`` (asked once per evaluation when test inputs are solved)."""
    return any(isinstance(node, pp.Call) and node.func.name == "time" for node in _iter_nodes(_parse_cached(text)))


@functools.lru_cache(maxsize=_CACHE_SIZE)
def number_literals(text: str) -> tuple[float, ...]:
    """The finite numbers an expression states, in source order, each once (``x > 16`` -> ``(16.0,)``)."""
    found = [
        float(node.val)
        for node in _iter_nodes(_parse_cached(text))
        if isinstance(node, pp.NumberLiteral) and math.isfinite(node.val)
    ]
    return tuple(dict.fromkeys(found))


def _iter_nodes(node: pp.Expr) -> Iterator[pp.Expr]:
    """Pre-order traversal; used instead of ``pp.walk`` to guarantee order."""
    yield node
    for child in _children(node):
        yield from _iter_nodes(child)


def _td_ms(delta: timedelta) -> int:
    """Convert a parser duration to whole milliseconds (PromQL's resolution)."""
    return delta // _ONE_MS


def _check_label_replace_regex(node: pp.Call) -> None:
    """label_replace's regex is compiled only when the rule runs, so promtool's check passes a bad one."""
    if node.func.name != "label_replace" or len(node.args) < 5:
        return
    pattern = _unwrap(node.args[4])
    if isinstance(pattern, pp.StringLiteral):
        reason = _regex_problem(pattern.val)
        if reason is not None:
            raise PromQLError(
                f"invalid regex {quote(pattern.val)} in label_replace(): {reason} (Prometheus reads it in RE2 "
                "syntax, and only when the rule runs: every evaluation would fail)"
            )


@functools.lru_cache(maxsize=_CACHE_SIZE)
def analyse(text: str) -> Analysis:
    """Parse ``text`` and collect selectors, ranges, functions and offsets.

    The compiler uses this to validate user expressions (e.g. every selector
    must carry the SLO's matchers, ranges must fit the window).
    """
    root = parse_expr(text)
    selectors: list[tuple[str | None, tuple[Matcher, ...]]] = []
    ranges: list[int] = []
    functions: list[str] = []
    offsets: list[int] = []
    pinned: list[int] = []
    for node in _iter_nodes(root):
        for label in _named_labels(node):
            _check_label_name(label)
        if isinstance(node, pp.VectorSelector):
            selectors.append(_selector_parts(node))
            if node.offset is not None:
                offsets.append(_td_ms(node.offset))
            pinned.extend(_pinned_ms(node.at))
        elif isinstance(node, pp.MatrixSelector):
            ranges.append(_td_ms(node.range))
        elif isinstance(node, pp.SubqueryExpr):
            if node.range is not None:
                ranges.append(_td_ms(node.range))
            if node.offset is not None:
                offsets.append(_td_ms(node.offset))
            pinned.extend(_pinned_ms(node.at))
        elif isinstance(node, pp.Call):
            functions.append(prometheus_name(node.func.name))
            _check_label_replace_regex(node)
    return Analysis(tuple(selectors), tuple(ranges), tuple(functions), tuple(offsets), tuple(pinned))


_COUNTER_FUNCTIONS = frozenset({"rate", "irate", "increase", "resets"})


@functools.lru_cache(maxsize=_CACHE_SIZE)
def counter_selectors(text: str) -> tuple[tuple[str | None, tuple[Matcher, ...]], ...]:
    """Selectors read through a counter function (rate, irate, increase, resets), in source order.

    Synthetic test inputs must make these monotonic counters, and the others gauges.
    """
    found: list[tuple[str | None, tuple[Matcher, ...]]] = []
    for node in _iter_nodes(parse_expr(text)):
        if isinstance(node, pp.Call) and node.func.name in _COUNTER_FUNCTIONS:
            for inner in node.args:
                for sub in _iter_nodes(inner):
                    if isinstance(sub, pp.VectorSelector):
                        found.append(_selector_parts(sub))
    return tuple(found)


@functools.lru_cache(maxsize=_CACHE_SIZE)
def selector_reads(text: str) -> tuple[tuple[str | None, tuple[Matcher, ...], int], ...]:
    """(metric, matchers, range in ms) of every selector the expression reads, in source order.

    The range is that of the matrix selector or subquery the selector is read through (0 for an
    instant read): what a cost report needs to tell a 5m raw read from a one-sample read.
    """
    found: list[tuple[str | None, tuple[Matcher, ...], int]] = []

    def walk(node: pp.Expr, range_ms: int) -> None:
        if isinstance(node, pp.VectorSelector):
            found.append((*_selector_parts(node), range_ms))
            return
        if isinstance(node, pp.MatrixSelector | pp.SubqueryExpr) and node.range is not None:
            range_ms = _td_ms(node.range)
        for child in _children(node):
            walk(child, range_ms)

    walk(parse_expr(text), 0)
    return tuple(found)


# Functions that need two samples in their window (they compute a difference or a slope).
TWO_SAMPLE_FUNCTIONS = frozenset({"rate", "irate", "increase", "delta", "idelta", "deriv", "predict_linear"})


@functools.lru_cache(maxsize=_CACHE_SIZE)
def range_calls(text: str) -> tuple[tuple[str, int], ...]:
    """(function, range in ms) for every range selector passed straight to a function, in source order.

    Lets the compiler check that a two-sample function such as ``rate`` gets a window
    long enough to hold two samples at the evaluation interval.
    """
    found: list[tuple[str, int]] = []
    for node in _iter_nodes(parse_expr(text)):
        if isinstance(node, pp.Call):
            for arg in node.args:
                if isinstance(arg, pp.MatrixSelector):
                    found.append((node.func.name, _td_ms(arg.range)))
    return tuple(found)


@functools.lru_cache(maxsize=_CACHE_SIZE)
def lookback_ms(text: str) -> int:
    """How far back the expression reads raw samples: ranges and offsets summed along nesting.

    ``max_over_time(max_over_time(x[5m])[10m:1m])`` reads 15m back, ``x offset 1h`` 1h:
    a change of the input shows fully only after this long.
    """

    def walk(node: pp.Expr, above: int) -> int:
        here = above
        if isinstance(node, pp.MatrixSelector | pp.SubqueryExpr) and node.range is not None:
            here += _td_ms(node.range)
        if isinstance(node, pp.VectorSelector | pp.SubqueryExpr) and node.offset is not None:
            here += max(0, _td_ms(node.offset))
        return max([here, *(walk(child, here) for child in _children(node))])

    return walk(parse_expr(text), 0)


@functools.lru_cache(maxsize=_CACHE_SIZE)
def offsets_ms(text: str) -> int:
    """The longest chain of offsets along nesting: the first minute a value exists, for input from minute 0."""

    def walk(node: pp.Expr, above: int) -> int:
        here = above
        if isinstance(node, pp.VectorSelector | pp.SubqueryExpr) and node.offset is not None:
            here += max(0, _td_ms(node.offset))
        return max([here, *(walk(child, here) for child in _children(node))])

    return walk(parse_expr(text), 0)


@functools.lru_cache(maxsize=_CACHE_SIZE)
def matching_labels(text: str) -> tuple[str, ...]:
    """Labels named in ``on (...)`` clauses: synthetic series must agree on them to join."""
    found: dict[str, None] = {}
    for node in _iter_nodes(parse_expr(text)):
        matching = node.modifier.matching if isinstance(node, pp.BinaryExpr) and node.modifier is not None else None
        if matching is not None and matching.type == pp.LabelModifierType.Include:
            found.update(dict.fromkeys(matching.labels))
    return tuple(found)


# --------------------------------------------------------------------------
# Rendering / matcher injection
# --------------------------------------------------------------------------

# Binding strength, loosest first.  Unary minus binds tighter than `*` but
# looser than `^` (so `-a ^ 2` is `-(a ^ 2)`), matching Prometheus.
_PREC_OR = 1
_PREC_AND = 2
_PREC_CMP = 3
_PREC_ADD = 4
_PREC_MUL = 5
_PREC_UNARY = 6
_PREC_POW = 7
_PREC_ATOM = 8

_BINARY_PREC: dict[str, int] = {
    "or": _PREC_OR,
    "and": _PREC_AND,
    "unless": _PREC_AND,
    "==": _PREC_CMP,
    "!=": _PREC_CMP,
    "<": _PREC_CMP,
    "<=": _PREC_CMP,
    ">": _PREC_CMP,
    ">=": _PREC_CMP,
    "+": _PREC_ADD,
    "-": _PREC_ADD,
    "*": _PREC_MUL,
    "/": _PREC_MUL,
    "%": _PREC_MUL,
    "atan2": _PREC_MUL,
    "^": _PREC_POW,
}
_SET_OPS = frozenset({"and", "or", "unless"})


def _render_number(value: float) -> str:
    """Render a float so that it parses back to exactly the same value."""
    if math.isnan(value):
        return "NaN"
    if math.isinf(value):
        return "Inf" if value > 0 else "-Inf"
    if value.is_integer() and abs(value) < 1e15:
        return str(int(value))
    return repr(value)


def _render_duration(delta: timedelta) -> str:
    """Render a (possibly negative, for offsets) parser duration."""
    ms = _td_ms(delta)
    return "-" + format_duration(-ms) if ms < 0 else format_duration(ms)


def _render_modifiers(offset: timedelta | None, at: pp.AtModifier | None) -> str:
    """Render trailing ``@`` and ``offset`` modifiers (in that order)."""
    parts: list[str] = []
    if at is not None:
        if at.type == pp.AtModifierType.Start:
            parts.append(" @ start()")
        elif at.type == pp.AtModifierType.End:
            parts.append(" @ end()")
        else:
            if at.at is None:
                raise PromQLError("invalid PromQL: @ modifier without a timestamp")
            ms = (at.at - _EPOCH) // _ONE_MS
            sign = "-" if ms < 0 else ""
            secs, frac = divmod(abs(ms), 1000)
            parts.append(f" @ {sign}{secs}.{frac:03d}")
    if offset is not None:
        parts.append(f" offset {_render_duration(offset)}")
    return "".join(parts)


def _render_label_list(labels: Iterable[str]) -> str:
    """Render ``(a, b)`` for by/without/on/ignoring/group_x clauses."""
    return "(" + ", ".join(labels) + ")"


class _Renderer:
    """Re-renders a parsed expression, appending ``extra`` matchers to selectors.

    Parentheses present in the source are kept (the parser keeps ParenExpr
    nodes); additional ones are only emitted where precedence requires them,
    so a round trip of a parsed expression reproduces the same AST.
    """

    def __init__(self, extra: Sequence[Matcher]) -> None:
        self._extra = tuple(extra)

    def render(self, node: pp.Expr) -> str:
        """Render ``node`` as a complete expression."""
        return self._render(node)[0]

    def _wrap(self, node: pp.Expr, min_prec: int) -> str:
        """Render ``node``, parenthesised if it binds looser than ``min_prec``."""
        text, prec = self._render(node)
        return text if prec >= min_prec else f"({text})"

    def _render(self, node: pp.Expr) -> tuple[str, int]:
        """Return the rendering of ``node`` and how tightly it binds."""
        if isinstance(node, pp.NumberLiteral):
            text = _render_number(node.val)
            return text, (_PREC_UNARY if text.startswith("-") else _PREC_ATOM)
        if isinstance(node, pp.StringLiteral):
            return quote(node.val), _PREC_ATOM
        if isinstance(node, pp.VectorSelector):
            return self._selector(node) + _render_modifiers(node.offset, node.at), _PREC_ATOM
        if isinstance(node, pp.MatrixSelector):
            vs = node.vector_selector
            text = f"{self._selector(vs)}[{_render_duration(node.range)}]{_render_modifiers(vs.offset, vs.at)}"
            return text, _PREC_ATOM
        if isinstance(node, pp.SubqueryExpr):
            return self._subquery(node), _PREC_ATOM
        if isinstance(node, pp.ParenExpr):
            return f"({self.render(node.expr)})", _PREC_ATOM
        if isinstance(node, pp.UnaryExpr):
            # Operand must bind at least as tightly as unary minus itself.
            return "-" + self._wrap(node.expr, _PREC_UNARY), _PREC_UNARY
        if isinstance(node, pp.Call):
            args = ", ".join(self.render(a) for a in node.args)
            return f"{prometheus_name(node.func.name)}({args})", _PREC_ATOM
        if isinstance(node, pp.AggregateExpr):
            return self._aggregate(node), _PREC_ATOM
        if isinstance(node, pp.BinaryExpr):
            return self._binary(node)
        raise PromQLError(f"unsupported PromQL construct: {type(node).__name__}")

    def _selector(self, node: pp.VectorSelector) -> str:
        """Render a selector's name and matchers (without modifiers)."""
        name = node.name

        def keep(m: pp.Matcher) -> bool:
            # Drop a synthesised __name__ matcher that merely repeats the name.
            return not (name is not None and m.name == _NAME_LABEL and m.op == pp.MatchOp.Equal and m.value == name)

        def render_group(group: Iterable[pp.Matcher]) -> list[str]:
            own = [f"{m.name}{_match_op(m.op)}{quote(m.value)}" for m in group if keep(m)]
            return own + [m.render() for m in self._extra]

        or_groups = list(node.matchers.or_matchers)
        if or_groups:
            plain = [m for m in node.matchers.matchers if keep(m)]
            body = " or ".join(",".join(render_group(plain + list(g))) for g in or_groups)
        else:
            body = ",".join(render_group(node.matchers.matchers))
        if name is None:
            return "{" + body + "}"
        return name if not body else f"{name}{{{body}}}"

    def _subquery(self, node: pp.SubqueryExpr) -> str:
        """Render ``expr[range:step]`` plus modifiers."""
        inner = self._wrap(node.expr, _PREC_ATOM)
        rng = _render_duration(node.range) if node.range is not None else ""
        step = _render_duration(node.step) if node.step is not None else ""
        return f"{inner}[{rng}:{step}]{_render_modifiers(node.offset, node.at)}"

    def _aggregate(self, node: pp.AggregateExpr) -> str:
        """Render ``op by (…) (param, expr)``."""
        head = str(node.op)
        if node.modifier is not None:
            word = "by" if node.modifier.type == pp.AggModifierType.By else "without"
            head += f" {word} {_render_label_list(node.modifier.labels)} "
        args = ([self.render(node.param)] if node.param is not None else []) + [self.render(node.expr)]
        return f"{head}({', '.join(args)})"

    def _binary(self, node: pp.BinaryExpr) -> tuple[str, int]:
        """Render a binary expression with its matching modifiers."""
        op = str(node.op)
        prec = _BINARY_PREC.get(op)
        if prec is None:
            raise PromQLError(f"unsupported PromQL binary operator: {op}")
        right_assoc = op == "^"
        lhs = self._wrap(node.lhs, prec + 1 if right_assoc else prec)
        if isinstance(node.rhs, pp.UnaryExpr):
            # A prefix operator on the right never needs parentheses.
            rhs = self.render(node.rhs)
        else:
            rhs = self._wrap(node.rhs, prec if right_assoc else prec + 1)
        return f"{lhs} {op}{self._bin_modifier(node.modifier, op)} {rhs}", prec

    @staticmethod
    def _bin_modifier(mod: pp.BinModifier | None, op: str) -> str:
        """Render ``bool``, ``on``/``ignoring``, ``group_x`` and ``fill`` modifiers."""
        if mod is None:
            return ""
        parts: list[str] = []
        if mod.return_bool:
            parts.append("bool")
        if mod.matching is not None:
            word = "on" if mod.matching.type == pp.LabelModifierType.Include else "ignoring"
            parts.append(f"{word} {_render_label_list(mod.matching.labels)}")
        if op not in _SET_OPS:
            if mod.card == pp.VectorMatchCardinality.ManyToOne:
                parts.append(f"group_left {_render_label_list(mod.group_labels or [])}")
            elif mod.card == pp.VectorMatchCardinality.OneToMany:
                parts.append(f"group_right {_render_label_list(mod.group_labels or [])}")
        fill = mod.fill_values
        if fill is not None:
            left, right = fill.lhs, fill.rhs
            if left is not None and right is not None and _same_float(left, right):
                parts.append(f"fill ({_render_number(left)})")
            else:
                if left is not None:
                    parts.append(f"fill_left ({_render_number(left)})")
                if right is not None:
                    parts.append(f"fill_right ({_render_number(right)})")
        return "".join(" " + p for p in parts)


class _KeepingRenderer(_Renderer):
    """Re-renders an expression so every aggregation keeps ``labels`` (``by`` gains them, ``without`` loses them)."""

    def __init__(self, labels: Sequence[str]) -> None:
        super().__init__(())
        self._keep = tuple(labels)

    def _aggregate(self, node: pp.AggregateExpr) -> str:
        if node.modifier is None:
            return super()._aggregate(node)
        given = list(node.modifier.labels)
        if node.modifier.type == pp.AggModifierType.By:
            kept = [*given, *(label for label in self._keep if label not in given)]
            word = "by"
        else:
            kept = [label for label in given if label not in self._keep]
            word = "without"
        args = ([self.render(node.param)] if node.param is not None else []) + [self.render(node.expr)]
        return f"{node.op} {word} {_render_label_list(kept)} ({', '.join(args)})"


def keep_in_aggregations(text: str, labels: Sequence[str]) -> str:
    """``text`` with ``labels`` kept through every aggregation that names its labels.

    ``max by (cluster) (x)`` becomes ``max by (cluster, instance) (x)``: the per-unit form of
    a per-slice expression, for signals judged per unit (node, NIC) as well as per slice.
    An aggregation without ``by`` or ``without`` still drops them (``labels_lost`` says so).
    """
    return _KeepingRenderer(labels).render(parse_expr(text))


def outer_aggregation(text: str) -> tuple[str, tuple[str, ...], str] | None:
    """``(op, labels, body)`` when ``text`` is one ``op by (labels) (body)`` (parentheses aside), else None.

    None too for an aggregation with a parameter (``topk``, ``quantile``), ``without`` or no modifier.
    """
    node = _unwrap(parse_expr(text))
    if not isinstance(node, pp.AggregateExpr) or node.param is not None or node.modifier is None:
        return None
    if node.modifier.type != pp.AggModifierType.By:
        return None
    return str(node.op), tuple(node.modifier.labels), render_expr(node.expr)


def _same_float(a: float, b: float) -> bool:
    """Float equality that treats NaN as equal to NaN."""
    return a == b or (math.isnan(a) and math.isnan(b))


def inject_matchers(text: str, matchers: Sequence[Matcher]) -> str:
    """Return ``text`` re-rendered with ``matchers`` added to every selector.

    Used to scope user-written SLI queries to one SLO (e.g. add
    ``service="x"``) everywhere, including inside range selectors, subqueries
    and offset selectors.  Existing matchers on the same label are kept:
    both apply, which can only narrow the selection.  Output is the
    compiler's canonical rendering, safe to emit even when the input
    contains strings that ``promql_parser`` itself would render wrongly.
    """
    return render_expr(parse_expr(text), matchers)


def render_expr(expr: pp.Expr, matchers: Sequence[Matcher] = ()) -> str:
    """Render a ``promql_parser`` AST as PromQL, adding ``matchers`` to every selector.

    Use this instead of ``str(expr)``, which mis-escapes strings and drops the
    colon of step-less subqueries.  Parentheses are added wherever precedence
    needs them, so ASTs built or rewritten with ``promql_parser.transform``
    (which may lack ParenExpr nodes) still render with their meaning intact.
    """
    return _Renderer(matchers).render(expr)


# --------------------------------------------------------------------------
# Static label flow
# --------------------------------------------------------------------------


@dataclass(frozen=True)
class _LabelSet:
    """Upper bound of the labels an expression's output series can carry.

    ``universal=True`` means "any label except ``names``" (a raw selector can
    carry anything); ``universal=False`` means "at most ``names``".
    """

    universal: bool
    names: frozenset[str]

    def has(self, label: str) -> bool:
        """Whether ``label`` may still be present."""
        return (label not in self.names) if self.universal else (label in self.names)

    def keep(self, labels: Iterable[str]) -> _LabelSet:
        """Restrict to ``labels`` (``by``, ``on``)."""
        wanted = frozenset(labels)
        if self.universal:
            return _LabelSet(False, wanted - self.names)
        return _LabelSet(False, self.names & wanted)

    def drop(self, labels: Iterable[str]) -> _LabelSet:
        """Remove ``labels`` (``without``, ``ignoring``)."""
        gone = frozenset(labels)
        if self.universal:
            return _LabelSet(True, self.names | gone)
        return _LabelSet(False, self.names - gone)

    def add(self, labels: Iterable[str]) -> _LabelSet:
        """Add ``labels`` (``label_replace`` destination, ``count_values``)."""
        new = frozenset(labels)
        if self.universal:
            return _LabelSet(True, self.names - new)
        return _LabelSet(False, self.names | new)

    def intersect(self, other: _LabelSet) -> _LabelSet:
        """Labels that may be present on both (for results mixing two sources)."""
        if self.universal and other.universal:
            return _LabelSet(True, self.names | other.names)
        if self.universal:
            return _LabelSet(False, other.names - self.names)
        if other.universal:
            return _LabelSet(False, self.names - other.names)
        return _LabelSet(False, self.names & other.names)


_ALL = _LabelSet(True, frozenset())
_NONE = _LabelSet(False, frozenset())

# Aggregations that return input series unchanged (selection, not reduction),
# so by/without only affects grouping, not the output labels.
_SELECTING_AGGREGATIONS = frozenset({"topk", "bottomk", "limitk", "limit_ratio"})
# Functions whose output series carry no labels at all.
_LABELLESS_FUNCTIONS = frozenset({"vector", "time", "scalar", "pi"})
_ABSENT_FUNCTIONS = frozenset({"absent", "absent_over_time"})
_LABEL_WRITING_FUNCTIONS = frozenset({"label_replace", "label_join"})


def _unwrap(node: pp.Expr) -> pp.Expr:
    """Strip redundant parentheses."""
    while isinstance(node, pp.ParenExpr):
        node = node.expr
    return node


def _flow(node: pp.Expr) -> tuple[_LabelSet, bool]:
    """Return (labels that can reach the output, whether the value is a scalar)."""
    if isinstance(node, (pp.NumberLiteral, pp.StringLiteral)):
        return _NONE, True
    if isinstance(node, (pp.VectorSelector, pp.MatrixSelector)):
        return _ALL, False
    if isinstance(node, (pp.ParenExpr, pp.UnaryExpr)):
        return _flow(node.expr)
    if isinstance(node, pp.SubqueryExpr):
        return _flow(node.expr)[0], False
    if isinstance(node, pp.AggregateExpr):
        return _flow_aggregate(node), False
    if isinstance(node, pp.Call):
        return _flow_call(node)
    if isinstance(node, pp.BinaryExpr):
        return _flow_binary(node)
    # Unknown construct: assume the worst.
    return _NONE, False


def _flow_aggregate(node: pp.AggregateExpr) -> _LabelSet:
    """Labels surviving an aggregation (by/without rules)."""
    inner, _ = _flow(node.expr)
    op = str(node.op)
    if op in _SELECTING_AGGREGATIONS:
        return inner
    mod = node.modifier
    if mod is None:
        result = _NONE
    elif mod.type == pp.AggModifierType.By:
        result = inner.keep(mod.labels)
    else:
        result = inner.drop(mod.labels)
    if op == "count_values" and isinstance(node.param, pp.StringLiteral):
        result = result.add([node.param.val])
    return result


def _flow_call(node: pp.Call) -> tuple[_LabelSet, bool]:
    """Labels surviving a function call."""
    name = node.func.name
    if node.func.return_type == pp.ValueType.Scalar:
        return _NONE, True
    if name in _LABELLESS_FUNCTIONS:
        return _NONE, False
    if name in _ABSENT_FUNCTIONS:
        # absent() only carries labels from equality matchers of a selector.
        arg = _unwrap(node.args[0]) if node.args else None
        if isinstance(arg, pp.MatrixSelector):
            arg = arg.vector_selector
        if isinstance(arg, pp.VectorSelector):
            _, matchers = _selector_parts(arg)
            return _LabelSet(False, frozenset(m.name for m in matchers if m.op == "=")), False
        return _NONE, False
    # Each argument's flow once: walking the first vector argument again doubled the work per
    # nested call, 2^61 walks for 61 calls deep.
    vector_flows = [flow for flow, scalar in map(_flow, node.args) if not scalar]
    if not vector_flows:
        return _NONE, False
    labels = vector_flows[0]
    if name in _LABEL_WRITING_FUNCTIONS and len(node.args) > 1:
        dst = _unwrap(node.args[1])
        if isinstance(dst, pp.StringLiteral):
            labels = labels.add([dst.val])
    elif name == "histogram_quantile":
        labels = labels.drop(["le"])
    return labels, False


def _flow_binary(node: pp.BinaryExpr) -> tuple[_LabelSet, bool]:
    """Labels surviving a binary operation, following Prometheus' resultMetric."""
    lhs, lhs_scalar = _flow(node.lhs)
    rhs, rhs_scalar = _flow(node.rhs)
    if lhs_scalar and rhs_scalar:
        return _NONE, True
    if lhs_scalar:
        return rhs, False
    if rhs_scalar:
        return lhs, False
    op = str(node.op)
    mod = node.modifier
    if op in ("and", "unless"):
        return lhs, False
    if op == "or":
        # Output mixes series from both sides; only shared labels are certain.
        return lhs.intersect(rhs), False
    card = mod.card if mod is not None else pp.VectorMatchCardinality.OneToOne
    matching = mod.matching if mod is not None else None
    include = list(mod.group_labels or []) if mod is not None else []
    if card == pp.VectorMatchCardinality.OneToMany:
        many, one = rhs, lhs
    else:
        many, one = lhs, rhs
    result = many
    if card == pp.VectorMatchCardinality.OneToOne and matching is not None:
        if matching.type == pp.LabelModifierType.Include:
            result = result.keep(matching.labels)
        else:
            result = result.drop(matching.labels)
    for label in include:
        result = result.add([label]) if one.has(label) else result.drop([label])
    fill = mod.fill_values if mod is not None else None
    if fill is not None and (fill.lhs is not None or fill.rhs is not None):
        # With fill modifiers unmatched series from the other side appear too.
        result = result.intersect(one)
    return result, False


def labels_lost(text: str, labels: Sequence[str]) -> tuple[str, ...]:
    """Return the members of ``labels`` that cannot reach the expression's output.

    A static, conservative check that catches the common mistake of
    aggregating away a label the SLO needs (``sum(x)``,
    ``sum by (cluster) (x)`` when ``resource`` must be kept).  Returned in
    input order, without duplicates.
    """
    surviving, is_scalar = _flow(parse_expr(text))
    lost: list[str] = []
    for label in labels:
        if label in lost:
            continue
        if is_scalar or not surviving.has(label):
            lost.append(label)
    return tuple(lost)


# --------------------------------------------------------------------------
# Sums of one selector's rates
# --------------------------------------------------------------------------

_SUMMED_FUNCTIONS = frozenset({"rate", "increase"})


@dataclass(frozen=True)
class SumRead:
    """A ``sum by (labels) (function(selector[range]))``: how an expression reads one raw selector."""

    labels: tuple[str, ...]
    function: str
    range_ms: int
    metric: str | None
    matchers: tuple[Matcher, ...]


def _sum_read(node: pp.Expr) -> SumRead | None:
    """``node`` as a ``SumRead`` (parentheses aside), or None for any other shape (offset and @ included)."""
    node = _unwrap(node)
    if not isinstance(node, pp.AggregateExpr) or str(node.op) != "sum" or node.param is not None:
        return None
    if node.modifier is None or node.modifier.type != pp.AggModifierType.By:
        return None
    call = _unwrap(node.expr)
    if not isinstance(call, pp.Call) or call.func.name not in _SUMMED_FUNCTIONS or len(call.args) != 1:
        return None
    matrix = _unwrap(call.args[0])
    if not isinstance(matrix, pp.MatrixSelector):
        return None
    selector = matrix.vector_selector
    if selector.offset is not None or selector.at is not None:
        return None
    metric, matchers = _selector_parts(selector)
    return SumRead(tuple(node.modifier.labels), call.func.name, _td_ms(matrix.range), metric, matchers)


def sum_reads(text: str) -> tuple[SumRead, ...] | None:
    """Every read of a raw selector in ``text`` when each is a ``SumRead``, in source order; else None.

    Such an expression can take its sums from a recording of the selector's rates by a finer
    grouping (a sum of sums is the sum), so the selector need be read only once.
    """
    root = parse_expr(text)
    found: list[SumRead] = []
    covered = 0

    def walk(node: pp.Expr) -> None:
        nonlocal covered
        read = _sum_read(node)
        if read is not None:
            found.append(read)
            covered += 1
            return
        for child in _children(node):
            walk(child)

    walk(root)
    selectors = sum(1 for node in _iter_nodes(root) if isinstance(node, pp.VectorSelector))
    return tuple(found) if selectors == covered else None


class _SumReplacingRenderer(_Renderer):
    """Re-renders an expression with each ``SumRead`` replaced by what ``replace`` gives for it."""

    def __init__(self, replace: Callable[[SumRead], str]) -> None:
        super().__init__(())
        self._replace = replace

    def _aggregate(self, node: pp.AggregateExpr) -> str:
        read = _sum_read(node)
        return super()._aggregate(node) if read is None else self._replace(read)


def replace_sum_reads(text: str, replace: Callable[[SumRead], str]) -> str:
    """``text`` with every ``SumRead`` replaced by ``replace(read)`` (an expression that binds as an atom)."""
    return _SumReplacingRenderer(replace).render(parse_expr(text))


_GO_REGEX_META = frozenset("\\.+*?()|[]{}^$")


def regex_quote(value: str) -> str:
    """``value`` as an RE2 regex matching exactly it (Go's ``regexp.QuoteMeta``)."""
    return "".join(f"\\{char}" if char in _GO_REGEX_META else char for char in value)
