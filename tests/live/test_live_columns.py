"""Backtest's local engine (``compiler.live.columns``) against the real Prometheus 2.42, value for value.

Every spec of the library gets its generated tests' own inputs as history (slice a calm, then a
two-hour incident, then calm again; slice b calm), backfilled into a real Prometheus together with
hand-made series for the edges the library's data never reaches: a counter that resets inside a
window, a series with a gap longer than the lookback, histogram buckets of which one is missing for
a while, NaN and Inf values, and two series that clash in a one-to-one match. Then every rule of
every spec is evaluated by the local engine over the last hours at the group's interval, its raw
series read once through remote read, the recorded ones it wrote itself, and compared with what
Prometheus answers for the same rule (its recorded inputs inlined) at every step: the same series,
bit for bit the same values (NaN as NaN). A rule Prometheus cannot be asked in that form (it reads a
recorded series with an offset or over a range, which inlining cannot express) is compared with the
step evaluator, itself proven against Prometheus in ``test_live_steps``.
"""

from __future__ import annotations

import math
import shutil
import time
from collections.abc import Iterator
from pathlib import Path

import pytest

from compiler.live.backtest import Backtest, inline_for_server, needed, record, rules_of
from compiler.live.client import Access, Client, QueryError
from compiler.live.columns import ColumnEvaluator, Columns
from compiler.live.remote_read import read_raw
from compiler.live.steps import Grid, StepError, StepEvaluator, Store, Vector
from compiler.model.links import rules_path
from compiler.pipeline import compile_specs, render
from compiler.promql import Matcher, PromQLError
from compiler.targets.prometheus.proof.inputs import Inputs
from compiler.targets.prometheus.proof.timeline import Timeline
from tests import servers
from tests.support import REPO_ROOT

MINUTE_MS = 60_000
HISTORY_MIN = 6 * 60
STEPS = 4 * 60  # the last four hours are compared: calm, the incident, its end
Key = frozenset[tuple[str, str]]


def library_history(start_s: int) -> str:
    """The library's series over the history, every spec's clusters renamed to be its own."""
    model, diagnostics = compile_specs(REPO_ROOT / "slo_specs")
    assert model is not None, diagnostics.render()
    wave = Timeline.constant(0.0, 120).then(0.2, 120).then(0.0, HISTORY_MIN - 240)
    lines: dict[str, None] = {}
    for index, slo in enumerate(model.slos):
        inputs = Inputs(slo)
        timelines = {"a": wave, **({"b": Timeline.constant(0.0, HISTORY_MIN)} if "b" in inputs.slices else {})}
        text = inputs.openmetrics(timelines, start_s).replace('cluster="cluster-', f'cluster="s{index}-cluster-')
        lines.update((line, None) for line in text.splitlines() if line and not line.startswith("#"))
    return "\n".join(lines) + "\n"


def edge_history(start_s: int) -> str:
    """Hand-made series for the edges: resets, a gap, a missing bucket, NaN and Inf, a clash."""
    out = []
    for minute in range(HISTORY_MIN + 1):
        stamp = start_s + minute * 60
        resets = (minute % 37) * 10.0  # a counter that resets every 37 minutes
        out.append(f'edge_requests_total{{job="edge",code="200"}} {resets} {stamp}')
        out.append(f'edge_requests_total{{job="edge",code="500"}} {float(minute // 3)} {stamp}')
        if not 200 <= minute < 215:  # a gap longer than the 5m lookback
            out.append(f'edge_gauge{{job="edge",node="n1"}} {math.sin(minute / 7) * 100!r} {stamp}')
        out.append(f'edge_gauge{{job="edge",node="n2"}} {"NaN" if minute % 11 == 0 else float(minute % 13)} {stamp}')
        out.append(f'edge_gauge{{job="edge",node="n3"}} {"+Inf" if minute % 17 == 0 else -1.5} {stamp}')
        for le, share in (("0.1", 0.3), ("0.5", 0.7), ("1", 0.9), ("+Inf", 1.0)):
            if le == "0.5" and 150 <= minute < 180:
                continue  # a bucket missing for half an hour
            count = round(share * minute * (3 if 240 <= minute < 300 else 1), 3)
            out.append(f'edge_seconds_bucket{{job="edge",le="{le}"}} {count} {stamp}')
        # More groups: one with the same bounds (computed with the first), NaN at times; one with other bounds
        # and one bound written twice ("1" and "1.0": Prometheus adds them up).
        for le, share in (("0.1", 0.2), ("0.5", 0.5), ("1", 0.95), ("+Inf", 1.0)):
            nan = le == "1" and minute % 29 == 0
            out.append(f'edge_seconds_bucket{{job="edge-b",le="{le}"}} {"NaN" if nan else share * minute * 2} {stamp}')
        for le, share in (("0.25", 0.4), ("1", 0.6), ("1.0", 0.2), ("+Inf", 1.0)):
            out.append(f'edge_seconds_bucket{{job="edge-c",le="{le}"}} {share * minute} {stamp}')
        out.append(f'edge_clustered{{job="edge",node="n1",cluster="edge-x"}} {float(minute)} {stamp}')
        out.append(f'edge_clustered{{job="edge",node="n2"}} {float(minute * 2)} {stamp}')
        out.append(f'edge_info{{job="edge",node="n1",pool="p1"}} 1 {stamp}')
        out.append(f'edge_info{{job="edge",node="n2",pool="p2"}} 1 {stamp}')
        if 250 <= minute < 260:  # a second info series for n2: the one-to-one join clashes there
            out.append(f'edge_info{{job="edge",node="n2",pool="p3"}} 1 {stamp}')
            out.append(f'edge_twin{{job="edge",node="n2"}} 1 {stamp}')  # edge_gauge's labels, another name
    return "\n".join(out) + "\n"


EDGE_EXPRESSIONS = (
    "rate(edge_requests_total[5m])",
    "sum by (job) (rate(edge_requests_total[2m]))",
    'rate(edge_requests_total{code="500"}[5m]) / ignoring (code) rate(edge_requests_total{code="200"}[5m])',
    "edge_gauge",
    "edge_gauge > 10",
    "-edge_gauge",
    'edge_gauge * on (node) group_left (pool) edge_info{pool!="p3"}',
    'edge_gauge * on (node) edge_info{pool!="p3"}',
    'edge_info{pool!="p3"} * on (node) group_right edge_gauge',
    "avg(edge_gauge)",
    "avg by (node) (edge_gauge)",
    "sum(edge_gauge)",
    "max(edge_gauge)",
    "min(edge_gauge)",
    "count(edge_gauge)",
    "avg_over_time(edge_gauge[5m])",
    "max_over_time(edge_gauge[5m])",
    "min_over_time(edge_gauge[5m])",
    "last_over_time(edge_gauge[5m])",
    "clamp_min(edge_gauge, 0)",
    "abs(edge_gauge)",
    '{__name__=~"edge_gauge|edge_clustered",node="n1"} * 2',  # two names: the rows stay apart without them
    'absent(edge_gauge{node="n1"})',
    'edge_gauge{node="n1"} or edge_gauge{node="n2"} * 2',
    'edge_gauge and on (job) edge_info{pool="p3"}',
    'edge_gauge unless on (node) edge_info{pool="p1"}',
    "histogram_quantile(0.9, rate(edge_seconds_bucket[5m]))",
    "histogram_quantile(0.5, sum by (le) (rate(edge_seconds_bucket[5m])))",
    "histogram_quantile(0.99, rate(edge_seconds_bucket[5m]))",
    "histogram_quantile(1.5, rate(edge_seconds_bucket[5m]))",
    "histogram_quantile(0, rate(edge_seconds_bucket[5m]))",
    'label_replace(edge_gauge, "host", "h-$1", "node", "n(.*)")',
    "vector(1) * time() > 0",
    "edge_gauge >= bool 0",
    # keys over label names only some series have: ignoring one (absent on n2), on one (absent on the left)
    "edge_gauge * ignoring (cluster) edge_clustered",
    "edge_gauge - on (node, cluster) edge_clustered",
    "edge_clustered or ignoring (cluster) edge_gauge",
    "edge_gauge unless ignoring (pool) edge_info",
    "sum without (code) (rate(edge_requests_total[5m]))",
    "count without (pool, job) (edge_info)",
)


@pytest.fixture(scope="module")
def blocks(tmp_path_factory: pytest.TempPathFactory) -> tuple[Path, int]:
    workdir = tmp_path_factory.mktemp("columns")
    end_s = int(time.time()) // 3600 * 3600 - 3600
    start_s = end_s - HISTORY_MIN * 60
    return servers.backfill(library_history(start_s) + edge_history(start_s) + "# EOF\n", workdir), end_s


@pytest.fixture(scope="module")
def server(blocks: tuple[Path, int]) -> Iterator[tuple[Client, Grid]]:
    tsdb, end_s = blocks
    with servers.prometheus(tsdb.parent, [], None, tsdb) as prom:
        yield Client(Access(prom.url, timeout_s=120)), Grid((end_s - (STEPS - 1) * 60) * 1000, MINUTE_MS, STEPS)


def fetch_with(client: Client) -> object:
    def fetch(matchers: tuple[Matcher, ...], start_ms: int, end_ms: int) -> list[object]:
        return list(read_raw(client, matchers, start_ms, end_ms))

    return fetch


def by_step(steps: list[Vector]) -> list[dict[Key, float]]:
    """Each step's samples by labels (``__name__`` aside: an inlined rule's result has none)."""
    return [
        {frozenset((k, v) for k, v in labels.items() if k != "__name__"): value for labels, value in vector}
        for vector in steps
    ]


def from_server(client: Client, expr: str, grid: Grid) -> list[dict[Key, float]]:
    answer = client.query_range(expr, grid.start_ms / 1000, grid.time(grid.n - 1) / 1000, grid.step_ms / 1000)
    steps: list[Vector] = [[] for _ in range(grid.n)]
    for labels, points in answer:
        for t, value in points:
            steps[round((t * 1000 - grid.start_ms) / grid.step_ms)].append((labels, value))
    return by_step(steps)


def differences(mine: list[dict[Key, float]], theirs: list[dict[Key, float]]) -> list[str]:
    found = []
    for index, (got, want) in enumerate(zip(mine, theirs, strict=True)):
        if got.keys() != want.keys():
            found.append(f"step {index}: series {sorted(map(sorted, got))[:2]} != {sorted(map(sorted, want))[:2]}")
        else:
            found += [
                f"step {index}: {dict(key)} {got[key]!r} != {want[key]!r}"
                for key in want
                if not (got[key] == want[key] or (math.isnan(got[key]) and math.isnan(want[key])))
            ]
    return found


def test_every_rule_of_the_library_matches_prometheus(server: tuple[Client, Grid]) -> None:
    client, grid = server
    model, diagnostics = compile_specs(REPO_ROOT / "slo_specs")
    assert model is not None, diagnostics.render()
    files = render(model, diagnostics)
    against_server = against_steps = 0
    problems: list[str] = []
    unasked: list[str] = []
    for slo in model.slos:
        _, rules = rules_of(files[rules_path(slo)])
        rules = needed(rules)
        recorded = {rule.name: Columns.empty(grid.n) for rule in rules if rule.kind == "record"}
        evaluator = ColumnEvaluator(grid, fetch_with(client), recorded)  # type: ignore[arg-type]
        evaluator.plan(rule.expr for rule in rules)
        written: set[str] = set()
        for rule in rules:
            found = evaluator.run(rule.expr)
            assert evaluator.first_error() is None, (slo.name, rule.name, evaluator.first_error())
            mine = by_step(found.vectors())
            try:
                theirs = from_server(client, inline_for_server(rule, rules, slo), grid)
                against_server += 1
            except (PromQLError, StepError, QueryError):
                store = Store(grid)
                for held in recorded.values():
                    for labels, values, here in zip(
                        held.labels, held.values.tolist(), held.present.tolist(), strict=True
                    ):
                        store.put(labels, [v if p else None for v, p in zip(values, here, strict=True)])
                try:
                    theirs = by_step(StepEvaluator(store).run(rule.expr))
                except StepError:  # raw and recorded series in one rule: neither the server nor the steps take it
                    unasked.append(f"{slo.name} {rule.name}")
                    continue
                against_steps += 1
            problems += [f"{slo.name} {rule.name}: {line}" for line in differences(mine, theirs)[:3]]
            if rule.kind == "record":
                record(recorded, written, rule, found)
    assert not problems, "\n".join(problems[:20])
    # most rules are asked of the server as they are; the rest read recorded series with offsets or ranges
    assert against_server > 350 and against_steps > 200, (against_server, against_steps)
    # the latency specs' bad rate reads its raw buckets and its recorded parts: no one query asks it of the server
    assert unasked == ["apiserver-read-latency slo:sli_bad:rate5m", "apiserver-write-latency slo:sli_bad:rate5m"]


@pytest.mark.parametrize("expr", EDGE_EXPRESSIONS)
def test_the_edges_match_prometheus(server: tuple[Client, Grid], expr: str) -> None:
    client, grid = server
    evaluator = ColumnEvaluator(grid, fetch_with(client))  # type: ignore[arg-type]
    evaluator.plan([expr])
    mine = by_step(evaluator.run(expr).vectors())
    assert not differences(mine, from_server(client, expr, grid))


@pytest.mark.parametrize(
    ("expr", "message"),
    [
        ("edge_gauge * on (node) edge_info", "many-to-many"),
        ("edge_gauge * ignoring (pool) edge_info", 'match group {job="edge", node="n2"} on the right'),
        ('abs({__name__=~"edge_gauge|edge_twin",node="n2"})', "same labelset"),
        ('{__name__=~"edge_gauge|edge_twin",node="n2"} * 2', "same labelset"),
        ('rate({__name__=~"edge_gauge|edge_twin",node="n2"}[5m])', "same labelset"),
        ('max_over_time({__name__=~"edge_gauge|edge_twin",node="n2"}[5m])', "same labelset"),
    ],
)
def test_a_clash_fails_the_steps_prometheus_fails(server: tuple[Client, Grid], expr: str, message: str) -> None:
    """A one-to-one match with two series on the one side, or two series that differ only by name once a function
    drops it, fail the rule at those steps only, as the server does (it refuses the whole range query, so it is
    asked at one step inside the clash and one outside)."""
    client, grid = server
    evaluator = ColumnEvaluator(grid, fetch_with(client))  # type: ignore[arg-type]
    evaluator.plan([expr])
    result = evaluator.run(expr)
    failed = evaluator.first_error()
    assert failed is not None and message in failed[1]
    steps = [index for index in range(grid.n) if evaluator.errors[index]]
    assert steps and not result.present[:, steps].any()
    inside, outside = grid.time(steps[0]) / 1000, grid.time(steps[-1] + 1) / 1000
    with pytest.raises(QueryError, match=message):
        client.query(expr, at=inside)
    assert len(client.query(expr, at=outside)) == len([1 for row in result.present[:, steps[-1] + 1] if row])


@pytest.mark.parametrize(
    "expr",
    [
        "edge_clustered",
        'edge_clustered{cluster="edge-x"}',
        'edge_clustered{cluster=""}',
        "sum by (cluster) (edge_clustered)",
        "rate(edge_requests_total[5m])",
    ],
)
def test_the_servers_external_labels_are_not_what_its_rules_see(
    blocks: tuple[Path, int], tmp_path: Path, expr: str
) -> None:
    """Remote read adds the server's external labels to every series and reads ``cluster="edge-x"`` (equal to
    one) as "no cluster label"; the rules see each series' own labels. Backtest's reads give those."""
    tsdb, end_s = blocks
    copy = tmp_path / "tsdb"
    shutil.copytree(tsdb, copy)
    external = {"cluster": "edge-x", "replica": "r1"}
    with servers.prometheus(tmp_path, [], None, copy, external_labels=external) as prom:
        client = Client(Access(prom.url, timeout_s=120))
        grid = Grid((end_s - (STEPS - 1) * 60) * 1000, MINUTE_MS, STEPS)
        backtest = Backtest(client, grid.start_ms, grid.time(grid.n - 1), 0)
        evaluator = ColumnEvaluator(grid, backtest._remote_read)
        evaluator.plan([expr])
        mine = by_step(evaluator.run(expr).vectors())
        assert any(mine) and not differences(mine, from_server(client, expr, grid))
