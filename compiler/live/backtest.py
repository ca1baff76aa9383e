"""Backtest: replay a spec's compiled rules over the history a Prometheus holds.

Two engines. The local one (the default) reads each raw series' samples once through remote read
(``remote_read``; the server's external labels taken off, as its rules never see them) and
evaluates every rule of the group here, over a whole segment at once (``columns``), measuring the
history the spec's data covers from those same samples; a spec too wide for it (``local_cells``)
goes to the server engine. The server engine is described below: its raw-reading rules are the
server's range queries.

The rules are the rendered rule files (the only target output live reads). Per rule group, at
the group's interval on timestamps aligned to it: the recording rules that read raw series are
range queries on the server (their samples are exactly what the rule would have recorded, a
reference to the spec's own 5m series inlined); every rule downstream and every alert is
evaluated in memory (``steps``), in the group's order; the alerts then go through Prometheus
2.42's alert state machine (``for``, ``keep_firing_for``, pending alerts dropped when their
condition clears, a firing alert resolved at the first evaluation without it).

Windows need history before the first reported minute: the warm-up (by default the longest
chain of ranges and offsets the alerts read) is evaluated too, and only what fires inside the
reported range is reported. Before a spec is replayed, the history the server holds for it is
measured (``coverage``): a no-data alert is judged only where the server held data, and the
report clips every firing to the window and to the spec's data.

Bounds, so that 14 days of a 7,500-node cluster stay affordable: a range query asks for at most
10,000 steps and at most ``max_samples`` points (series x steps, sized from the series the
previous chunk returned), and one the server refuses for its size (``--query.max-samples``) or
gives up on (``--query.timeout``) is asked again over half the steps; a raw rule returning more
series than the spec's budget stops at the first chunk that does. In memory, a spec whose
recorded values (series x steps) would pass ``segment_cells`` is replayed in consecutive time
segments, each evaluated with the replay's warm-up of history before it (the longest window
chain by default, so the cut changes nothing) and fed to the same alert state machines, so
memory follows the segment, not the length of the replay.

Wide per-unit series (a fleet's value per node or NIC, a spec sliced per node) are never held in
memory when only instant reads use them: such a recorded rule (at least ``wide_series`` series at
the ends of the replay, probed with ``count()``) is inlined into each rule that reads it, and
those rules run on the server too. A unit alert (``unit_value > 0.05``) then returns only its
firing points, and a fleet count returns one series per slice, so memory and the work done here
follow the slices and the firings, not the nodes; the server reads the raw series once per
reader instead of once. A recorded series read with a range or an offset is always held.
"""

from __future__ import annotations

import math
import threading
from collections.abc import Iterator, Mapping, Sequence
from concurrent.futures import Future, ThreadPoolExecutor
from dataclasses import dataclass, field
from typing import Any

import numpy as np
import numpy.typing as npt
import promql_parser as pp

from compiler.live import CONCURRENCY, xor_chunks
from compiler.live.client import (
    MAX_POINTS_PER_QUERY,
    MAX_SAMPLES_PER_QUERY,
    Client,
    Labels,
    LiveError,
    QueryError,
    too_large,
)
from compiler.live.columns import ColumnEvaluator, Columns, Fetch, identities
from compiler.live.columns import warm as columns_warm
from compiler.live.coverage import SERVER_QUERY, SERVER_STEP_MS, Coverage, Span, covers, data_query, spans_of, union
from compiler.live.memory import collector_paused
from compiler.live.remote_read import RawLike, RawSeries
from compiler.live.remote_read import selector as selector_text
from compiler.live.segment_reads import SegmentReads
from compiler.live.steps import LOOKBACK_MS, Grid, StepError, StepEvaluator, Store, Vector, _absent_labels
from compiler.model import SLO, series
from compiler.plan import AlertSpec, SpecPlan
from compiler.promql import Matcher, _children, _iter_nodes, lookback_ms, parse_duration, parse_expr, quote
from compiler.promql.evaluate import _set_op, _signature
from compiler.text.yamlin import load_own

Signal = Mapping[tuple[tuple[str, str], ...], list[float | None]]  # the spec's value per slice and step
RESOLVED_RETENTION_MS = 15 * 60_000  # Prometheus keeps a resolved alert this long (resolvedRetention)
# Recorded values (series x steps, all of a spec's recorded rules) one replay segment holds: about 1 GB.
SEGMENT_CELLS = 30_000_000
# A recorded rule this wide that only instant reads use is evaluated inside its readers on the server.
WIDE_SERIES = 50
# Alerts about data that is not there: judged only where the server holds data (``Coverage.server``).
NO_DATA_KINDS = frozenset({"no_data", "vanished"})
# The local engine's floor is a segment of twice the warm-up: raw values (series x steps) past this in one segment,
# about 1 GB an array, and the spec is left to the server engine (its wide rules stay on the server).
LOCAL_CELLS = 4 * SEGMENT_CELLS
# CONCURRENCY (compiler.live): range queries of one spec asked at once; the server, not this process, is the
# bottleneck of a large replay.


@dataclass
class Interval:
    """One alert instance firing: from ``fired_ms`` to ``resolved_ms`` (None: still firing at the end)."""

    spec: str
    alert: str
    labels: dict[str, str]
    active_ms: int  # pending since
    fired_ms: int
    resolved_ms: int | None = None
    condition_ms: int | None = None  # when the condition (the 5m value beyond the alert's threshold) began
    no_data: bool = (
        False  # a no-data or vanished-series alert: judged only where the server holds data (``Coverage.server``)
    )

    @property
    def time_to_fire_ms(self) -> int:
        return self.fired_ms - (self.condition_ms if self.condition_ms is not None else self.active_ms)


@dataclass
class Result:
    start_ms: int
    end_ms: int
    warmup_ms: int
    intervals: list[Interval] = field(default_factory=list)
    alerts: list[tuple[str, AlertSpec]] = field(default_factory=list)  # every (spec, alert) replayed
    problems: list[str] = field(default_factory=list)  # rules the server or backtest could not evaluate
    samples_read: int = 0
    queries: int = 0
    split_queries: int = 0  # range queries the server refused for their size or time, asked again over half the steps
    segments: int = 0  # time segments the specs were replayed in (one per spec when it fits in memory at once)
    inlined_rules: int = 0  # wide recorded rules not held: inlined into their readers, which ran on the server
    server_specs: list[str] = field(default_factory=list)  # too wide for the local engine: replayed by the server
    coverage: dict[str, Coverage] = field(default_factory=dict)  # per spec: when the server holds its data


@dataclass
class _Alert:
    labels: dict[str, str]
    active_ms: int
    state: str = "pending"
    keep_since: int | None = None
    resolved_ms: int | None = None
    interval: Interval | None = None


@dataclass(frozen=True)
class Rule:
    kind: str  # record | alert
    name: str
    expr: str
    labels: dict[str, str]
    for_ms: int = 0
    keep_firing_for_ms: int = 0


def rules_of(text: bytes) -> tuple[int | None, list[Rule]]:
    """The first group's interval and rules of a rendered rule file (one group per spec)."""
    document = load_own(text)
    group = document["groups"][0]
    interval = parse_duration(str(group["interval"])) if "interval" in group else None
    rules = []
    for raw in group["rules"]:
        kind = "record" if "record" in raw else "alert"
        rules.append(
            Rule(
                kind=kind,
                name=str(raw[kind]),
                expr=str(raw["expr"]),
                labels={str(k): str(v) for k, v in (raw.get("labels") or {}).items()},
                for_ms=parse_duration(str(raw.get("for", "0s"))) or 0,
                keep_firing_for_ms=parse_duration(str(raw.get("keep_firing_for", "0s"))) or 0,
            )
        )
    return interval, rules


def _names(expr: str) -> set[str]:
    return {node.name for node in _iter_nodes(parse_expr(expr)) if isinstance(node, pp.VectorSelector) and node.name}


def plain_reads(expr: str) -> dict[str, bool]:
    """Each metric name the expression reads, and whether every read of it is a plain instant selector
    (no range, offset, ``@`` or subquery): only those reads can be replaced by the rule's expression."""
    found: dict[str, bool] = {}

    def walk(node: pp.Expr, plain: bool) -> None:
        if isinstance(node, pp.VectorSelector):
            if node.name:
                found[node.name] = found.get(node.name, True) and plain and node.offset is None and node.at is None
        elif isinstance(node, pp.MatrixSelector):
            walk(node.vector_selector, False)
        elif isinstance(node, pp.SubqueryExpr):
            walk(node.expr, False)
        else:
            for child in _children(node):
                walk(child, plain)

    walk(parse_expr(expr), True)
    return found


def inlinable(rules: Sequence[Rule]) -> set[str]:
    """Recorded rules the server can evaluate inside a reader: every recorded series they read (if any)
    is read plainly and is itself inlinable."""
    producers = {rule.name: rule for rule in rules if rule.kind == "record"}
    known: dict[str, bool] = {}

    def able(name: str, depth: int = 0) -> bool:
        if name not in known:
            reads = plain_reads(producers[name].expr)
            known[name] = depth < 8 and all(
                plain and able(read, depth + 1) for read, plain in reads.items() if read in producers
            )
        return known[name]

    return {name for name in producers if able(name)}


@dataclass(frozen=True)
class Split:
    """``server unless on (...) memory``: an alert whose left side the server evaluates and whose right side
    reads only recorded series (a fleet's unit ticket held back while its slice pages), joined per step here."""

    server: str
    memory: str
    modifier: pp.BinModifier | None


def split_of(expr: str, recorded: set[str]) -> Split | None:
    """The expression as a ``Split`` when its top is ``unless`` whose right side reads only ``recorded``."""
    node = parse_expr(expr)
    while isinstance(node, pp.ParenExpr):
        node = node.expr
    if not isinstance(node, pp.BinaryExpr) or str(node.op) != "unless":
        return None
    right = {part.name for part in _iter_nodes(node.rhs) if isinstance(part, pp.VectorSelector) and part.name}
    if not right or not right <= recorded:
        return None
    return Split(str(node.lhs), str(node.rhs), node.modifier)


def droppable(rules: Sequence[Rule]) -> list[Rule]:
    """Recorded rules that need not be held: inlinable, and every rule reading them reads them plainly, in
    the part of it the server evaluates (all of it, or a ``Split``'s left side), and that part can run on the
    server (its own recorded inputs inlinable)."""
    able = inlinable(rules)
    recorded = {rule.name for rule in rules if rule.kind == "record"}
    server_parts, memory_reads = {}, {}
    for index, rule in enumerate(rules):
        split = split_of(rule.expr, recorded)
        server_parts[index] = split.server if split is not None else rule.expr
        memory_reads[index] = _names(split.memory) if split is not None else set()
    reads = {index: plain_reads(part) for index, part in server_parts.items()}
    server_ok = {
        index: all(plain and read in able for read, plain in found.items() if read in recorded)
        for index, found in reads.items()
    }
    found = []
    for rule in rules:
        if rule.kind != "record" or rule.name not in able or rule.expr.startswith("vector("):
            continue
        readers = [index for index, other in enumerate(rules) if rule.name in _names(other.expr) and other is not rule]
        if readers and all(
            server_ok[index] and reads[index].get(rule.name) and rule.name not in memory_reads[index]
            for index in readers
        ):
            found.append(rule)
    return found


def needed(rules: Sequence[Rule]) -> list[Rule]:
    """The alerts and the recording rules they read, transitively, in group order."""
    producers = {rule.name: rule for rule in rules if rule.kind == "record"}
    wanted: set[str] = set()
    todo = [name for rule in rules if rule.kind == "alert" for name in _names(rule.expr)]
    while todo:
        name = todo.pop()
        if name in producers and name not in wanted:
            wanted.add(name)
            todo += list(_names(producers[name].expr))
    return [rule for rule in rules if rule.kind == "alert" or rule.name in wanted]


def warmup_ms(rules: Sequence[Rule]) -> int:
    """The longest chain of ranges and offsets an alert reads through the recorded series, plus 5m of raw range."""
    producers = {rule.name: rule for rule in rules if rule.kind == "record"}

    def chain(expr: str, depth: int = 0) -> int:
        own = lookback_ms(expr)
        below = [chain(producers[name].expr, depth + 1) for name in _names(expr) if name in producers and depth < 8]
        return own + max(below, default=0)

    return max((chain(rule.expr) for rule in rules if rule.kind == "alert"), default=0)


def inline_for_server(rule: Rule, rules: Sequence[Rule], slo: SLO, expr: str | None = None) -> str:
    """A raw-reading rule's expression (or ``expr``, a part of it) with the spec's recorded series it reads
    inlined (the server lacks them)."""
    expr = rule.expr if expr is None else expr
    for other in rules:
        reference = series.recorded(other.name, slo)
        if other.kind == "record" and other is not rule and reference in expr:
            body = inline_for_server(other, rules, slo)
            for label, value in other.labels.items():
                body = f'label_replace({body}, "{label}", {quote(value)}, "", "")'
            expr = expr.replace(reference, f"({body})")
    left = _names(expr) & {other.name for other in rules if other.kind == "record"}
    if left:
        raise StepError(f"{rule.name} reads raw series and recorded series {', '.join(sorted(left))} together")
    return expr


class Backtest:
    """Replays the rule groups of some specs over one time range of one server."""

    def __init__(
        self,
        client: Client,
        start_ms: int,
        end_ms: int,
        warmup: int | None,
        align_ms: int = 0,
        max_samples: int = MAX_SAMPLES_PER_QUERY,
        segment_cells: int = SEGMENT_CELLS,
        wide_series: int = WIDE_SERIES,
        concurrency: int = CONCURRENCY,
        engine: str = "local",
        fetch: Fetch | None = None,
        local_cells: int = LOCAL_CELLS,
    ) -> None:
        """``engine``: "local" fetches each raw series' samples once (remote read) and evaluates every rule
        here (``columns``); "server" asks the server to evaluate the raw-reading rules at every step (for a
        server without remote read). ``fetch`` replaces the remote-read call (tests, other sources)."""
        self.client = client
        self.start_ms, self.end_ms = start_ms, end_ms
        self.warmup = warmup
        self.align_ms = align_ms
        self.max_samples, self.segment_cells = max_samples, segment_cells
        self.wide_series, self.concurrency = wide_series, max(1, concurrency)
        self._splitting = threading.Lock()
        self.result = Result(start_ms, end_ms, warmup or 0)
        self.series_limit: int | None = None
        self.recorded_series: int | None = None
        self.widths: dict[str, int] = {}  # probed series of the spec's recorded rules, by name
        self._served: dict[tuple[int, int], tuple[Span, ...]] = {}  # the server's own coverage, by range
        if engine not in ("local", "server"):
            raise ValueError(f"unknown backtest engine {engine!r}")
        self.engine = engine
        self.local_cells = local_cells
        self.fetch: Fetch = fetch if fetch is not None else self._remote_read

    def grid(self, interval_ms: int, warm_ms: int) -> Grid:
        """Timestamps at the group's interval, aligned to it (plus ``align_ms``), from the warm-up to the end."""
        first = self.start_ms - warm_ms
        start = (first - self.align_ms) // interval_ms * interval_ms + self.align_ms
        if start < first:
            start += interval_ms
        return Grid(start, interval_ms, max(0, (self.end_ms - start) // interval_ms + 1))

    def spec_grid(self, rule_file: bytes, default_interval_ms: int) -> tuple[list[Rule], Grid, int]:
        """A spec's rules to replay, its grid (warm-up included) and its warm-up."""
        interval, rules = rules_of(rule_file)
        rules = needed(rules)
        warm = self.warmup if self.warmup is not None else warmup_ms(rules)
        return rules, self.grid(interval or default_interval_ms, warm), warm

    def ask_shared(self, rule_files: Sequence[tuple[bytes, int]]) -> None:
        """What specs replayed in other processes would each ask again, asked once here: the server's external
        labels (for remote read) and when it held ``up`` over each spec's grid (``server_spans``); the remote
        read's compiled decoder is loaded here too, so the forked workers inherit it."""
        if self.engine != "local":
            return
        if self.fetch == self._remote_read:
            self.client.external_labels()
            xor_chunks.warm()
        columns_warm()
        for rule_file, default_interval_ms in rule_files:
            _, full, _ = self.spec_grid(rule_file, default_interval_ms)
            try:
                self.server_spans(full.start_ms, full.time(full.n - 1) if full.n else self.end_ms)
            except QueryError:  # the spec's replay asks again, and says so
                continue
        self._count_requests()

    def run_spec(
        self,
        spec: SpecPlan,
        rule_file: bytes,
        default_interval_ms: int,
        series_limit: int | None = None,
        recorded_series: int | None = None,
    ) -> None:
        """Replay one spec's group; ``series_limit`` bounds the series one raw rule may return (the budget),
        ``recorded_series`` (the spec's estimate) sizes its time segments."""
        with collector_paused():
            self._run_spec(spec, rule_file, default_interval_ms, series_limit, recorded_series)

    def _run_spec(
        self,
        spec: SpecPlan,
        rule_file: bytes,
        default_interval_ms: int,
        series_limit: int | None,
        recorded_series: int | None,
    ) -> None:
        self.series_limit, self.recorded_series = series_limit, recorded_series
        rules, full, warm = self.spec_grid(rule_file, default_interval_ms)
        self.result.warmup_ms = max(self.result.warmup_ms, warm)
        self.widths = {}
        width = self._raw_width_or_none(rules) if self.engine == "local" else None
        local = self.engine == "local" and self._local_fits(width, full, warm)
        if not local:
            self.result.server_specs += [spec.slo.name] if self.engine == "local" else []
        if local:
            dropped: set[str] = set()
        else:
            try:
                dropped = self.wide_rules(rules, spec.slo, full)
            except (StepError, QueryError):  # the probed rule fails the same way in the replay, which says so
                dropped = set()
        self.result.inlined_rules += len(dropped)
        held = {rule.name for rule in rules if rule.kind == "record"} - dropped
        self.result.alerts += [(spec.slo.name, alert) for alert in spec.alerts]
        if local:
            self._run_local(spec, rules, full, warm, width)
            return
        served = self.coverage(spec.slo, full).server
        no_data = {alert.name for alert in spec.alerts if alert.kind in NO_DATA_KINDS}
        # one machine per alerting rule (burn pairs share their alert's name), by the rule's place in the group;
        # a no-data or vanished-series alert is judged only where the server holds data
        machines = {
            index: AlertMachine(spec.slo.name, rule, served if rule.name in no_data else None)
            for index, rule in enumerate(rules)
            if rule.kind == "alert"
        }
        try:
            per_step = (width or 1) if local else self.cells_per_step(rules, held, spec.slo, full)
            cut = segments(full, _overlap_steps(warm, full.step_ms), per_step, self.segment_cells)
        except (StepError, QueryError):  # the probed rule fails the same way in the replay, which says so
            cut = [(full, 0)]
        for grid, fed in cut:
            self.result.segments += 1
            replay = self.replay_local if local else self.replay_segment
            if not replay(spec, rules, held, grid, fed, machines):
                break
        for machine in machines.values():
            self.result.intervals += [i for i in machine.done if (i.resolved_ms or self.end_ms + 1) > self.start_ms]

    def replay_segment(
        self,
        spec: SpecPlan,
        rules: Sequence[Rule],
        held: set[str],
        grid: Grid,
        fed: int,
        machines: dict[int, AlertMachine],
    ) -> bool:
        """Evaluate the rules over one segment's grid and feed its steps from ``fed`` on to the alerts' state
        machines; False when a recording rule failed (the spec is not replayed past it). Recorded rules
        outside ``held`` are not evaluated: their readers inline them."""
        store = Store(grid)
        signal_held = held >= _signal_names(spec.slo)
        wanted = [rule.kind == "alert" or rule.name in held for rule in rules]
        pool = ThreadPoolExecutor(max_workers=self.concurrency)
        try:  # the rules the server evaluates read nothing held here: asked all at once, used in order
            asked = {
                place: pool.submit(self.evaluate, rule, rules, held, spec.slo, store)
                for place, rule in enumerate(rules)
                if wanted[place] and self.on_server(rule, held)
            }
            return self._replay_in_order(spec, rules, held, store, fed, machines, asked, wanted, signal_held)
        finally:
            pool.shutdown(cancel_futures=True)
            self._count_requests()

    def _count_requests(self) -> None:
        """The client's request and sample counts into the result: here, once no query is in flight, so a
        slower thread cannot write back an older count."""
        self.result.samples_read, self.result.queries = self.client.samples_read, self.client.requests

    def _replay_in_order(
        self,
        spec: SpecPlan,
        rules: Sequence[Rule],
        held: set[str],
        store: Store,
        fed: int,
        machines: dict[int, AlertMachine],
        asked: dict[int, Future[list[Vector]]],
        wanted: list[bool],
        signal_held: bool,
    ) -> bool:
        grid = store.grid
        for place, rule in enumerate(rules):
            if not wanted[place]:
                continue
            try:
                steps = asked[place].result() if place in asked else self.evaluate(rule, rules, held, spec.slo, store)
            except (StepError, QueryError) as exc:
                self.result.problems.append(f"{spec.slo.name}: rule {rule.name}: {exc}")
                if rule.kind == "record":  # everything after it would read a hole, not history
                    self.result.problems.append(f"{spec.slo.name}: not replayed past {rule.name}")
                    return False
                continue
            if rule.kind == "record":
                store.put_vectors(rule.name, rule.labels, steps)
                continue
            machine = machines[place]
            known = len(machine.done)
            for index in range(fed, grid.n):
                machine.feed(grid.time(index), steps[index])
            for episode in machine.done[known:]:  # the condition walks back within this segment's history
                # a signal not held (a wide one) leaves the condition's start at the alert's own start
                episode.condition_ms = condition_start(spec, episode, store) if signal_held else None
        return True

    def _run_local(self, spec: SpecPlan, rules: Sequence[Rule], full: Grid, warm: int, width: int | None) -> None:
        """The local engine over the whole grid, segment after segment. The history the spec's data covers is
        measured from the raw series read for the rules (no query of its own: at 7,500 nodes that query cost
        the server more than the replay), so the no-data alerts, judged only where there was data, are fed
        once every segment is done."""
        no_data = {alert.name for alert in spec.alerts if alert.kind in NO_DATA_KINDS}
        machines = {
            index: AlertMachine(spec.slo.name, rule) for index, rule in enumerate(rules) if rule.kind == "alert"
        }
        watch = _Watch(full, data_query(spec.slo, full.step_ms), {i for i, r in enumerate(rules) if r.name in no_data})
        cut = segments(full, _overlap_steps(warm, full.step_ms), width or 1, self.segment_cells)
        reads = SegmentReads(self.fetch, full.time(full.n - 1)) if len(cut) > 1 else self.fetch
        self.client.label_memo = {} if len(cut) > 1 else None  # each segment reads the same series again
        try:
            for grid, fed in cut:
                self.result.segments += 1
                if not self.replay_local(spec, rules, grid, fed, machines, watch, reads):
                    break
        finally:
            self.client.label_memo = None
        served = self.coverage(spec.slo, full, watch.times()).server
        for index in sorted(watch.deferred):
            machine = machines[index]
            machine.judged = served
            for ts, vector in watch.held.get(index, []):
                machine.feed(ts, vector)
            for episode in machine.done:
                episode.condition_ms = watch.no_data_start(spec, episode)
        for machine in machines.values():
            self.result.intervals += [i for i in machine.done if (i.resolved_ms or self.end_ms + 1) > self.start_ms]

    def replay_local(
        self,
        spec: SpecPlan,
        rules: Sequence[Rule],
        grid: Grid,
        fed: int,
        machines: dict[int, AlertMachine],
        watch: _Watch,
        reads: Fetch | None = None,
    ) -> bool:
        """Every rule of the group evaluated here over one segment's grid, in the group's order: the raw series
        fetched once each (``reads``, by default ``fetch``), a rule the columnar engine does not take evaluated
        by the step evaluator on the recorded series; False when a recording rule failed."""
        recorded = {rule.name: Columns.empty(grid.n) for rule in rules if rule.kind == "record"}
        columns = ColumnEvaluator(grid, reads or self.fetch, recorded)
        pool = ThreadPoolExecutor(max_workers=self.concurrency)
        try:
            columns.plan([rule.expr for rule in rules] + ([watch.expr] if watch.expr else []))
            columns.prefetch(pool)
            watch.mark(columns, grid, fed)
            return self._replay_columns(spec, rules, grid, fed, machines, columns, watch)
        except (StepError, QueryError) as exc:
            self.result.problems.append(f"{spec.slo.name}: {exc}")
            return False
        finally:
            pool.shutdown(cancel_futures=True)
            self._count_requests()

    def _replay_columns(
        self,
        spec: SpecPlan,
        rules: Sequence[Rule],
        grid: Grid,
        fed: int,
        machines: dict[int, AlertMachine],
        columns: ColumnEvaluator,
        watch: _Watch,
    ) -> bool:
        recorded, written = columns.recorded, set[str]()
        store: Store | None = None
        signal: Signal = {}
        for place, rule in enumerate(rules):
            try:
                found = self._local_rule(spec, rule, columns, grid)
            except (StepError, QueryError) as exc:
                self.result.problems.append(f"{spec.slo.name}: rule {rule.name}: {exc}")
                if rule.kind == "record":  # everything after it would read a hole, not history
                    self.result.problems.append(f"{spec.slo.name}: not replayed past {rule.name}")
                    return False
                continue
            if rule.kind == "record":
                record(recorded, written, rule, found)
                continue
            machine = machines[place]
            known = len(machine.done)
            if place in watch.deferred:  # judged once the history is known, after the last segment
                if store is None:
                    store, signal = Store(grid), column_signal(spec.slo, grid, recorded)
                watch.hold(place, grid, fed, found.vectors(), signal)
                continue
            machine.feed_columns(columns.times, found, fed)
            if len(machine.done) > known:
                if store is None:  # the spec's value per slice: built once a segment, a slice when read
                    store, signal = Store(grid), column_signal(spec.slo, grid, recorded)
                signal_held = _signal_names(spec.slo) <= set(recorded)
                for episode in machine.done[known:]:
                    episode.condition_ms = condition_start(spec, episode, store, signal) if signal_held else None
        self._count_requests()
        return True

    def local_history(self, spec: SpecPlan, rules: Sequence[Rule], grid: Grid, names: set[str]) -> Store:
        """The recorded series ``names`` over ``grid``, by the local engine (the rules up to the last that
        records one of them, each raw series fetched as the replay fetches it)."""
        recorded = {rule.name: Columns.empty(grid.n) for rule in rules if rule.kind == "record"}
        columns = ColumnEvaluator(grid, self.fetch, recorded)
        columns.plan(rule.expr for rule in rules)
        written: set[str] = set()
        last = max((place for place, rule in enumerate(rules) if rule.name in names), default=-1)
        for rule in rules[: last + 1]:
            if rule.kind == "record":
                record(recorded, written, rule, self._local_rule(spec, rule, columns, grid))
        self._count_requests()
        return _store_of(grid, recorded, names)

    def _local_rule(self, spec: SpecPlan, rule: Rule, columns: ColumnEvaluator, grid: Grid) -> Columns:
        """One rule over the grid: columnar, else (a shape it does not take) by the step evaluator."""
        try:
            found = columns.run(rule.expr)
        except StepError:
            reads = _names(rule.expr) & set(columns.recorded)
            if _names(rule.expr) - reads:
                raise
        else:
            if _names(rule.expr) - set(columns.recorded):  # a raw-reading rule: its series within the budget
                self._within_budget(len(set(identities(found.labels)[1])))
            failed = columns.first_error()
            if failed is not None and rule.kind == "record":  # as the server engine: no replay past the hole
                raise StepError(failed[1])
            if failed is not None:
                count = int(columns.errors.sum())
                self.result.problems.append(
                    f"{spec.slo.name}: rule {rule.name} failed at {count} evaluation(s), first: {failed[1]}"
                )
            return found
        store = _store_of(grid, columns.recorded, reads)
        steps = self._in_memory(rule, rule.expr, spec.slo, store)
        return _columns_of(steps, grid.n)

    def _remote_read(self, matchers: tuple[Matcher, ...], start_ms: int, end_ms: int) -> Sequence[RawLike]:
        """The selected series' samples with the labels the server's rules see. Remote read adds the server's
        external labels to every series and reads a matcher equal to one as "the label is absent"; then such
        matchers are applied here instead, and each series gets back its own labels (the series API's)."""
        try:
            return self._read_as_rules_see(matchers, start_ms, end_ms)
        except QueryError:
            raise
        except LiveError as exc:
            if "/api/v1/read" not in str(exc) and "remote read" not in str(exc):
                raise
            raise LiveError(
                f"{exc}; the local engine reads raw series through remote read: for a server without it (Thanos "
                "Query, a proxy that passes only the query API) use --engine server"
            ) from exc

    def _read_as_rules_see(self, matchers: tuple[Matcher, ...], start_ms: int, end_ms: int) -> Sequence[RawLike]:
        external = self.client.external_labels()
        if not external:
            return self.client.read_raw(matchers, start_ms, end_ms)
        rewritten = {m for m in matchers if m.op == "=" and external.get(m.name) == m.value}
        found = self.client.read_raw([m for m in matchers if m not in rewritten], start_ms, end_ms)
        own: dict[frozenset[tuple[str, str]], Labels] = {}
        for labels in self.client.series(selector_text(matchers), start_ms / 1000, end_ms / 1000):
            merged = frozenset({**external, **labels}.items())
            if merged in own:
                raise StepError(
                    f"two series of {selector_text(matchers)} differ only by the server's external labels "
                    f"({', '.join(sorted(external))}); remote read cannot tell them apart (use --engine server)"
                )
            own[merged] = labels
        return [
            RawSeries(own[key], series.timestamps, series.values)
            for series in found
            if (key := frozenset(series.labels.items())) in own
        ]

    def _local_fits(self, width: int | None, grid: Grid, warm_ms: int) -> bool:
        """Whether the local engine keeps the spec within memory: a segment holds its raw series over at least
        twice the warm-up (each segment evaluates it again), so a very wide spec with a long warm-up (thousands
        of per-node series under a 3d burn window) is left to the server engine, which keeps wide rules there."""
        least = 2 * _overlap_steps(warm_ms, grid.step_ms)
        return width is None or width * min(least, grid.n) <= self.local_cells

    def _raw_width_or_none(self, rules: Sequence[Rule]) -> int | None:
        try:
            return self.raw_width(rules)
        except (StepError, QueryError):
            return None  # the replay meets the same refusal and says so

    def raw_width(self, rules: Sequence[Rule]) -> int:
        """Series per step the local engine holds at most: the spec's budget, or the widest raw selector the
        server counts at the end of the replay (a histogram's buckets are several series per unit)."""
        recorded = {rule.name for rule in rules if rule.kind == "record"}
        widest = 1
        selectors = {
            str(node)
            for rule in rules
            for node in _iter_nodes(parse_expr(rule.expr))
            if isinstance(node, pp.VectorSelector) and node.name not in recorded
        }
        for selector in sorted(selectors):
            counts = [value for _, value in self.client.query(f"count({selector})", at=self.end_ms / 1000)]
            widest = max([widest] + [int(value) for value in counts if math.isfinite(value)])
        self._count_requests()
        return widest

    def coverage(self, slo: SLO, grid: Grid, times: list[int] | None = None) -> Coverage:
        """When the server holds the spec's raw series over the replay's grid (warm-up included), at the
        group's interval, and when it holds anything at all: the spec's series or ``up`` (every scrape
        writes it), read every 5m; a server without ``up`` (backfilled, or fed by remote write only) is
        taken to hold data from the spec's first sample to the end (it answers now: only its start is
        known). A measurement the server refuses is a problem, and the whole replay then counts as
        covered (nothing is clipped). ``times``: the grid's times with data, when already measured."""
        last = grid.time(grid.n - 1) if grid.n else self.end_ms
        whole: tuple[Span, ...] = ((grid.start_ms, max(last, self.end_ms)),)
        expr = data_query(slo, grid.step_ms)
        try:
            if times is None:
                times = self.times_with_data(expr, grid) if expr is not None else []
            data = whole if expr is None else spans_of(times, grid.step_ms, last, self.end_ms)
            scraped = self.server_spans(grid.start_ms, last)
            server = union(data, scraped) if scraped else tuple((lo, whole[0][1]) for lo, _ in data[:1])
        except QueryError as exc:
            self.result.problems.append(f"{slo.name}: could not measure the history the server holds: {exc}")
            data = server = whole
        found = Coverage(self.start_ms, self.end_ms, data, server)
        self.result.coverage[slo.name] = found
        self._count_requests()
        return found

    def times_with_data(self, expr: str, grid: Grid) -> list[int]:
        """The grid's timestamps at which an aggregation (one series at most) has a value."""
        return [grid.time(index) for index, vector in enumerate(self.from_server(expr, grid, series=1)) if vector]

    def server_spans(self, first_ms: int, last_ms: int) -> tuple[Span, ...]:
        """When the server holds any ``up`` sample between two times, read every 5m; asked once per range."""
        if (first_ms, last_ms) not in self._served:
            grid = Grid(first_ms, SERVER_STEP_MS, (last_ms - first_ms) // SERVER_STEP_MS + 1)
            times = self.times_with_data(SERVER_QUERY, grid)
            self._served[first_ms, last_ms] = spans_of(times, SERVER_STEP_MS, grid.time(grid.n - 1), self.end_ms)
        return self._served[first_ms, last_ms]

    def wide_rules(self, rules: Sequence[Rule], slo: SLO, grid: Grid) -> set[str]:
        """The recorded rules not to hold: droppable ones at least ``wide_series`` wide. Probed only when
        the spec's series budget allows that many."""
        if self.series_limit is not None and self.series_limit < self.wide_series:
            return set()
        return {rule.name for rule in droppable(rules) if self.width(rule, rules, slo, grid) >= self.wide_series}

    def width(self, rule: Rule, rules: Sequence[Rule], slo: SLO, grid: Grid) -> int:
        """Series a recorded rule gives at the first and the last step of the replay, the larger."""
        if rule.name not in self.widths:
            expr = f"count({inline_for_server(rule, rules, slo)})"
            counts = [
                int(value)
                for at in (grid.time(0), self.end_ms)
                for _, value in self.client.query(expr, at=at / 1000)
                if math.isfinite(value)
            ]
            self.widths[rule.name] = max(counts, default=0)
            self._count_requests()
        return self.widths[rule.name]

    def cells_per_step(self, rules: Sequence[Rule], held: set[str], slo: SLO, grid: Grid) -> int:
        """Recorded values per step of the held rules: at most the series the largest raw rule returns at
        the ends times the rules, at most the spec's own estimate when that is larger than the largest
        rule (a fleet records its units once and its windows per slice)."""
        raw = [rule for rule in rules if rule.name in held and _names(rule.expr) - held]
        if len(held) * (self.series_limit or 1) * 20_000 <= self.segment_cells or not raw:
            return len(held) * (self.series_limit or 1)  # fits over two weeks at 1m even at the budget: no probe
        widest = max([1] + [self.width(rule, rules, slo, grid) for rule in raw])
        return min(len(held) * widest, max(widest, self.recorded_series or len(held) * widest))

    @staticmethod
    def on_server(rule: Rule, held: set[str]) -> bool:
        """Whether the server evaluates the rule: it reads raw series or a recorded rule not held (inlined)."""
        return bool(_names(rule.expr) - held) or rule.expr.startswith("vector(")

    def evaluate(self, rule: Rule, rules: Sequence[Rule], held: set[str], slo: SLO, store: Store) -> list[Vector]:
        """A rule's vector at every step: on the server when it reads raw series or a rule not held (inlined),
        else in memory from the held ones."""
        if self.on_server(rule, held):
            split = split_of(rule.expr, held)
            part = split.server if split is not None else rule.expr
            steps = self.from_server(inline_for_server(rule, rules, slo, part), store.grid)
            found = len({frozenset(labels.items()) for vector in steps for labels, _ in vector})
            self._within_budget(found)
            if split is None:
                return _with_absent_labels(rule.expr, steps)
            memory = self._in_memory(rule, split.memory, slo, store)
            signature = _signature(split.modifier)
            return [_set_op("unless", left, right, signature) for left, right in zip(steps, memory, strict=True)]
        return self._in_memory(rule, rule.expr, slo, store)

    def _in_memory(self, rule: Rule, expr: str, slo: SLO, store: Store) -> list[Vector]:
        evaluator = StepEvaluator(store)
        steps = evaluator.run(expr)
        if evaluator.errors:
            _step, message = evaluator.errors[0]
            failed = len(evaluator.errors)
            self.result.problems.append(
                f"{slo.name}: rule {rule.name} failed at {failed} evaluation(s), first: {message}"
            )
        return steps

    def _within_budget(self, found: int) -> None:
        if self.series_limit is not None and found > self.series_limit:
            raise StepError(
                f"returned {found} series, more than the spec's series_budget of {self.series_limit}: "
                "a selector reads more than the spec expects (preflight shows which); the spec was not replayed"
            )

    def chunk_steps(self, series: int | None) -> int:
        """Steps per range query so that ``series`` series answer at most ``max_samples`` points."""
        return max(1, min(MAX_POINTS_PER_QUERY, self.max_samples // max(1, series or 1)))

    def from_server(self, expr: str, grid: Grid, series: int | None = None) -> list[Vector]:
        """A raw-reading expression at every grid step, as range queries bounded in steps and points; a
        chunk the server refuses for its size or its time is asked again over half the steps. ``series``:
        how many series the expression gives at most (an aggregation), instead of the spec's budget."""
        steps: list[Vector] = [[] for _ in range(grid.n)]
        ceiling = MAX_POINTS_PER_QUERY  # lowered for good when the server refuses a chunk for its size
        width = self.chunk_steps(series or self.series_limit)
        first = 0
        while first < grid.n:
            last = min(grid.n, first + width) - 1
            try:
                answer = self.client.query_range(
                    expr, grid.time(first) / 1000, grid.time(last) / 1000, grid.step_ms / 1000
                )
            except QueryError as exc:
                if not too_large(exc) or width == 1:
                    raise
                width = ceiling = max(1, width // 2)
                with self._splitting:
                    self.result.split_queries += 1
                continue
            if series is None:
                self._within_budget(len(answer))
            _place(answer, grid, steps)
            width = min(ceiling, self.chunk_steps(len(answer)))
            first = last + 1
        return steps


def _place(answer: list[tuple[Labels, list[tuple[float, float]]]], grid: Grid, steps: list[Vector]) -> None:
    for labels, points in answer:
        for t, value in points:
            index = round((t * 1000 - grid.start_ms) / grid.step_ms)
            if 0 <= index < grid.n:
                steps[index].append((labels, value))


def _overlap_steps(warm_ms: int, step_ms: int) -> int:
    """Steps of history a later segment evaluates before its first own step: the replay's warm-up (by
    default the longest window chain, so the cut changes nothing), as its first step has."""
    return -(-(warm_ms + LOOKBACK_MS) // step_ms) + 1


def segments(full: Grid, overlap: int, cells_per_step: int, budget: int) -> list[tuple[Grid, int]]:
    """The full grid cut into consecutive segments of at most ``budget`` cells where it can be: each as
    (the grid evaluated, how many of its first steps an earlier segment already fed to the alerts)."""
    if cells_per_step * full.n <= budget:
        return [(full, 0)]
    own = max(overlap, budget // max(1, cells_per_step) - overlap, 1)  # new steps per segment
    cut = []
    for begin in range(0, full.n, own):
        first = max(0, begin - overlap)
        cut.append((Grid(full.time(first), full.step_ms, min(full.n, begin + own) - first), begin - first))
    return cut


class AlertMachine:
    """Prometheus 2.42's alerting-rule state machine for one rule, fed one evaluation at a time."""

    def __init__(self, spec: str, rule: Rule, judged: Sequence[Span] | None = None) -> None:
        """``judged``: for a no-data alert, the spans the server holds data in; elsewhere the rule is fed no
        result, as a server that held nothing then would not have evaluated it (no state carried over)."""
        self.spec, self.rule, self.judged = spec, rule, judged
        self.active: dict[frozenset[tuple[str, str]], _Alert] = {}
        self.done: list[Interval] = []

    def feed(self, ts: int, vector: Vector) -> None:
        rule, active = self.rule, self.active
        if self.judged is not None and not covers(self.judged, ts):
            vector = []
        seen = set()
        for sample, _value in vector:
            labels = {k: v for k, v in sample.items() if k != "__name__"} | rule.labels | {"alertname": rule.name}
            key = frozenset(labels.items())
            seen.add(key)
            if key in active and active[key].state != "inactive":
                continue
            active[key] = _Alert(labels, ts)
        for key, alert in list(active.items()):
            if not _still_active(key in seen, alert, ts, rule.keep_firing_for_ms, active, key):
                continue
            if alert.state == "pending" and ts - alert.active_ms >= rule.for_ms:
                alert.state = "firing"
                alert.interval = Interval(self.spec, rule.name, alert.labels, alert.active_ms, ts)
                alert.interval.no_data = self.judged is not None
                self.done.append(alert.interval)

    def feed_columns(self, times: npt.NDArray[np.int64], found: Columns, start: int) -> None:
        """``feed`` at every step from ``start`` on, one pass per series instead of one per step: each run of
        steps a series is present in is one pending alert, firing once ``for`` has passed, resolved at the
        first step without it. The per-step machine takes what this does not (a no-data alert's judged spans,
        ``keep_firing_for``, two rows giving one alert's labels)."""
        rule = self.rule
        if start >= len(times):  # no step to feed
            return
        present = found.present[:, start:]
        rows = np.flatnonzero(present.any(axis=1)).tolist()
        labels = [self._alert_labels(found.labels[row]) for row in rows]
        keys = [frozenset(item.items()) for item in labels]
        if self.judged is not None or rule.keep_firing_for_ms > 0 or len(set(keys)) < len(keys):
            steps = found.vectors()
            for index in range(start, len(times)):
                self.feed(int(times[index]), steps[index])
            return
        stamps = times[start:].tolist()
        carried = {key: alert for key, alert in self.active.items() if alert.state != "inactive"}
        self.active = {}
        first_present = {keys[place] for place, row in enumerate(rows) if present[row, 0]}
        for key, alert in carried.items():  # gone at the first step: resolved (firing) or dropped (pending)
            if key not in first_present and alert.interval is not None and alert.state == "firing":
                alert.interval.resolved_ms = stamps[0]
        runs = _runs(present[rows]) if rows else []
        fired: list[tuple[int, int, Interval]] = []
        for place, begin, end in runs:
            key = keys[place]
            kept = carried.get(key) if begin == 0 else None
            alert = kept if kept is not None else _Alert(labels[place], stamps[begin])
            if alert.state == "pending":
                at = max(begin, int(np.searchsorted(times[start:], alert.active_ms + rule.for_ms)))
                if at <= end:
                    alert.state = "firing"
                    alert.interval = Interval(self.spec, rule.name, alert.labels, alert.active_ms, stamps[at])
                    fired.append((stamps[at], rows[place], alert.interval))
            if end + 1 < len(stamps):
                if alert.state == "firing" and alert.interval is not None:
                    alert.interval.resolved_ms = stamps[end + 1]
            else:
                self.active[key] = alert
        self.done += [interval for _, _, interval in sorted(fired, key=lambda item: item[:2])]

    def _alert_labels(self, labels: Labels) -> dict[str, str]:
        return {k: v for k, v in labels.items() if k != "__name__"} | self.rule.labels | {"alertname": self.rule.name}


def alert_intervals(spec: str, rule: Rule, grid: Grid, steps: list[Vector]) -> list[Interval]:
    """Prometheus 2.42's alerting-rule state machine over the rule's results at each step."""
    machine = AlertMachine(spec, rule)
    for index, vector in enumerate(steps):
        machine.feed(grid.time(index), vector)
    return machine.done


def _runs(present: npt.NDArray[np.bool_]) -> list[tuple[int, int, int]]:
    """Each run of consecutive present steps, row by row: (row, first step, last step)."""
    padded = np.zeros((present.shape[0], present.shape[1] + 2), dtype=np.int8)
    padded[:, 1:-1] = present
    edges = np.diff(padded, axis=1)
    rows, begins = np.nonzero(edges == 1)
    _, ends = np.nonzero(edges == -1)  # row-major, as the begins: the n-th end closes the n-th run
    return list(zip(rows.tolist(), begins.tolist(), (ends - 1).tolist(), strict=True))


def _still_active(
    present: bool, alert: _Alert, ts: int, keep_ms: int, active: dict[frozenset[tuple[str, str]], _Alert], key: Any
) -> bool:
    """One alert without (or with) a result this evaluation: kept firing, resolved, or dropped."""
    if present:
        alert.keep_since = None
        return True
    keep = False
    if alert.state == "firing" and keep_ms > 0:
        alert.keep_since = ts if alert.keep_since is None else alert.keep_since
        keep = ts - alert.keep_since < keep_ms
    if alert.state == "pending" or (alert.resolved_ms is not None and ts - alert.resolved_ms > RESOLVED_RETENTION_MS):
        del active[key]
    if alert.state != "inactive" and not keep:
        if alert.state == "firing" and alert.interval is not None:
            alert.interval.resolved_ms = ts
        alert.state, alert.resolved_ms = "inactive", ts
    return keep


def _with_absent_labels(expr: str, steps: list[Vector]) -> list[Vector]:
    """``absent(selector)`` gives the selector's equality matchers as labels; inlined, the selector is an
    expression and absent() gives none, so they are put back."""
    node = parse_expr(expr)
    if not (isinstance(node, pp.Call) and node.func.name == "absent" and isinstance(node.args[0], pp.VectorSelector)):
        return steps
    extra = _absent_labels(node.args[0])
    return [[({**labels, **extra}, value) for labels, value in vector] for vector in steps]


def _signal_names(slo: SLO) -> set[str]:
    """The recorded series ``condition_start`` reads."""
    return {series.BAD_5M, series.TOTAL_5M} if slo.counts_events else {series.VALUE}


def _signal(slo: SLO, store: Store) -> dict[tuple[tuple[str, str], ...], list[float | None]]:
    """The spec's current value per slice and step: the 5m error ratio, or the recorded gauge."""

    def by_slice(name: str) -> dict[tuple[tuple[str, str], ...], list[float | None]]:
        return {
            tuple((label, labels.get(label, "")) for label in slo.slice.by): values
            for labels, values in store.series.get(name, {}).values()
        }

    if not slo.counts_events:
        return by_slice(series.VALUE)
    bad, total = by_slice(series.BAD_5M), by_slice(series.TOTAL_5M)
    return {
        key: [
            None if b is None or t is None or not t else b / t
            for b, t in zip(bad.get(key, values), values, strict=True)
        ]
        for key, values in total.items()
    }


SliceKey = tuple[tuple[str, str], ...]


class ColumnSignal(Mapping[SliceKey, list[float | None]]):
    """``_signal`` of the store ``_store_of`` would build from the recorded columns, a slice's list made only
    when it is read: an episode's condition start reads one slice, where the store held every series of a
    segment as Python lists (7,500 nodes times 240 steps for each per-node spec that fires, every segment).
    Keys, their order and every value are ``_signal``'s: a slice's values are its last series' in the
    columns' order, a ratio's bad side defaults to its total."""

    def __init__(self, slo: SLO, recorded: dict[str, Columns]) -> None:
        self.slo = slo
        self.recorded = recorded
        names = (series.BAD_5M, series.TOTAL_5M) if slo.counts_events else (series.VALUE,)
        self._rows = {name: self._last_rows(recorded.get(name)) for name in names}
        self._made: dict[SliceKey, list[float | None]] = {}

    def _last_rows(self, held: Columns | None) -> dict[SliceKey, int]:
        if held is None:
            return {}
        rows: dict[SliceKey, int] = {}
        for row, labels in enumerate(held.labels):
            rows[tuple((label, labels.get(label, "")) for label in self.slo.slice.by)] = row
        return rows

    def _values(self, name: str, row: int) -> list[float | None]:
        held = self.recorded[name]
        values, present = held.values[row].tolist(), held.present[row].tolist()
        return [value if here else None for value, here in zip(values, present, strict=True)]

    def __getitem__(self, key: SliceKey) -> list[float | None]:
        made = self._made.get(key)
        if made is not None:
            return made
        if not self.slo.counts_events:
            made = self._values(series.VALUE, self._rows[series.VALUE][key])
        else:
            total = self._values(series.TOTAL_5M, self._rows[series.TOTAL_5M][key])
            bad_row = self._rows[series.BAD_5M].get(key)
            bad = total if bad_row is None else self._values(series.BAD_5M, bad_row)
            made = [None if b is None or t is None or not t else b / t for b, t in zip(bad, total, strict=True)]
        self._made[key] = made
        return made

    def __iter__(self) -> Iterator[SliceKey]:
        return iter(self._rows[series.TOTAL_5M if self.slo.counts_events else series.VALUE])

    def __len__(self) -> int:
        return len(self._rows[series.TOTAL_5M if self.slo.counts_events else series.VALUE])


def column_signal(slo: SLO, grid: Grid, recorded: dict[str, Columns]) -> Signal:
    """The spec's value per slice and step from the recorded columns: lazily (``ColumnSignal``) when every row of
    each series it reads has labels of its own, else through the store, which merges rows that share labels."""
    for name in _signal_names(slo):
        held = recorded.get(name)
        if held is not None and len({frozenset(labels.items()) for labels in held.labels}) < len(held.labels):
            return _signal(slo, _store_of(grid, recorded, _signal_names(slo)))
    return ColumnSignal(slo, recorded)


def _beyond(spec: SpecPlan, alert: AlertSpec, value: float | None) -> bool:
    if alert.kind == "no_data":
        return value is None
    if value is None or math.isnan(value):
        return False
    if alert.burn is not None and spec.slo.objective is not None:
        return value > spec.slo.objective.threshold(alert.burn)
    band = alert.band
    if band is None:
        return False
    if alert.side == "Above":
        return band.maximum is not None and value > band.maximum
    return band.minimum is not None and value < band.minimum


def condition_start(
    spec: SpecPlan,
    found: Interval,
    store: Store,
    signal: Signal | None = None,
) -> int | None:
    """When the condition behind a firing began: the first step of the run of steps before it became
    pending in which the spec's 5m value was already beyond this alert's threshold."""
    alert = next((a for a in spec.alerts if a.name == found.alert and _labels_match(a, found.labels)), None)
    if alert is None:
        return None
    key = tuple((label, found.labels.get(label, "")) for label in spec.slo.slice.by)
    signal = _signal(spec.slo, store) if signal is None else signal
    values = signal.get(key)
    grid = store.grid
    index = grid.at_or_before(found.active_ms)
    if alert.kind == "no_data":  # about the whole spec, not a slice: a value while any slice has one
        values = [next((v for v in step if v is not None), None) for step in zip(*signal.values(), strict=True)]
        values = values or [None] * grid.n
    if values is None or not 0 <= index < grid.n or not _beyond(spec, alert, values[index]):
        return None
    while index > 0 and _beyond(spec, alert, values[index - 1]):
        index -= 1
    return grid.time(index)


def _labels_match(alert: AlertSpec, labels: dict[str, str]) -> bool:
    return all(labels.get(k) == v for k, v in alert.labels)


def _store_of(grid: Grid, recorded: dict[str, Columns], names: set[str]) -> Store:
    """The step evaluator's store holding the named recorded series."""
    store = Store(grid)
    for name in sorted(names):
        held = recorded.get(name)
        if held is None:
            continue
        for labels, values, present in zip(held.labels, held.values.tolist(), held.present.tolist(), strict=True):
            store.put(labels, [value if here else None for value, here in zip(values, present, strict=True)])
    return store


def _columns_of(steps: list[Vector], n: int) -> Columns:
    """The step evaluator's vectors per step as columns, one row per label set."""
    rows: dict[frozenset[tuple[str, str]], int] = {}
    labels: list[Labels] = []
    cells: list[tuple[int, int, float]] = []
    for index, vector in enumerate(steps):
        for sample, value in vector:
            key = frozenset(sample.items())
            if key not in rows:
                rows[key] = len(labels)
                labels.append(sample)
            cells.append((rows[key], index, value))
    out = Columns(labels, np.zeros((len(labels), n)), np.zeros((len(labels), n), dtype=bool))
    for row, index, value in cells:
        out.values[row, index] = value
        out.present[row, index] = True
    return out


def record(recorded: dict[str, Columns], written: set[str], rule: Rule, found: Columns) -> None:
    """A recording rule's result kept under its name with the rule's labels; several rules may record one name
    (one per condition): their rows together."""
    labels = [{**labels, **rule.labels, "__name__": rule.name} for labels in found.labels]
    values, present = found.values, found.present
    if rule.name in written:
        before = recorded[rule.name]
        labels = before.labels + labels
        values, present = np.vstack([before.values, values]), np.vstack([before.present, present])
    written.add(rule.name)
    recorded[rule.name] = Columns(labels, values, present)


@dataclass
class _Watch:
    """What the local engine keeps across segments for the coverage and the no-data alerts: the grid's steps
    at which the spec's raw series had a sample (``expr``: the coverage query, evaluated here), the no-data
    alerts' results per step, and whether the spec had a value at each step."""

    full: Grid
    expr: str | None
    deferred: set[int]
    marks: npt.NDArray[np.bool_] = field(init=False)
    valued: npt.NDArray[np.bool_] = field(init=False)
    held: dict[int, list[tuple[int, Vector]]] = field(default_factory=dict)

    def __post_init__(self) -> None:
        self.marks = np.zeros(self.full.n, dtype=bool)
        self.valued = np.zeros(self.full.n, dtype=bool)

    def _offset(self, grid: Grid) -> int:
        return (grid.start_ms - self.full.start_ms) // self.full.step_ms

    def mark(self, columns: ColumnEvaluator, grid: Grid, fed: int) -> None:
        if self.expr is None or not grid.n:
            return
        found = columns.run(self.expr)
        there = np.asarray(found.present.any(axis=0), dtype=bool) if found.labels else np.zeros(grid.n, dtype=bool)
        offset = self._offset(grid)
        self.marks[offset + fed : offset + grid.n] |= there[fed:]

    def times(self) -> list[int]:
        return [self.full.time(index) for index in np.nonzero(self.marks)[0].tolist()]

    def hold(self, place: int, grid: Grid, fed: int, steps: list[Vector], signal: Signal) -> None:
        self.held.setdefault(place, []).extend((grid.time(index), steps[index]) for index in range(fed, grid.n))
        offset = self._offset(grid)
        for index in range(fed, grid.n):
            self.valued[offset + index] = any(values[index] is not None for values in signal.values())

    def no_data_start(self, spec: SpecPlan, found: Interval) -> int | None:
        """When the spec last had no value before a no-data alert became pending (``condition_start``'s walk)."""
        alert = next((a for a in spec.alerts if a.name == found.alert and _labels_match(a, found.labels)), None)
        index = self.full.at_or_before(found.active_ms)
        if alert is None or alert.kind != "no_data" or not 0 <= index < self.full.n or self.valued[index]:
            return None
        while index > 0 and not self.valued[index - 1]:
            index -= 1
        return self.full.time(index)
