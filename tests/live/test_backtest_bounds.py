"""Backtest's bounds against the real Prometheus 2.42: a server with a low ``--query.max-samples``
refuses the unchunked range queries, and the backtest still succeeds by asking again over fewer
steps, with exactly the firing intervals of the unchunked replay; so do a small points-per-query
bound and a replay cut into time segments. A refusal even a single step cannot pass is a problem
of the spec, in the server's words. Two days of backfilled data at 5s, replayed over the last day
at 1m (about 40 s)."""

from __future__ import annotations

import shutil
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from compiler.live.backtest import Backtest, Interval, Result, segments
from compiler.live.client import Access, Client, QueryError, too_large
from compiler.live.steps import Grid
from compiler.model import Model
from compiler.model.links import rules_path
from compiler.pipeline import compile_specs, render
from compiler.plan import plan
from tests import live_data
from tests import servers as engines

PROJECT = live_data.BACKTEST_PROJECT.replace("evaluation_interval: 2s", "evaluation_interval: 1m")
DAY_S = 86_400
# rate(app_requests_total[5m]) over 2 series at 5s reads about 120 samples per step: one step passes,
# the day's 1,800 steps in one query do not.
LOW_MAX_SAMPLES = 2_000
Key = tuple[str, tuple[tuple[str, str], ...], int, int | None, int | None]


@pytest.fixture(scope="module")
def setup(tmp_path_factory: pytest.TempPathFactory) -> tuple[Model, dict[str, bytes], Path, int]:
    tree = live_data.write_tree(tmp_path_factory.mktemp("specs"), live_data.BACKTEST_SPECS, PROJECT)
    model, diagnostics = compile_specs(tree)
    assert model is not None and not diagnostics, diagnostics.render()
    workdir = tmp_path_factory.mktemp("bounds")
    end = int(time.time()) // 60 * 60 - 600
    text = live_data.backtest_data(end - 2 * DAY_S, end, end - 10 * 3600, end - 8 * 3600, end - 3 * 3600)
    return model, render(model, diagnostics), engines.backfill(text, workdir), end


@pytest.fixture(scope="module")
def servers(
    tmp_path_factory: pytest.TempPathFactory, setup: tuple[Model, dict[str, bytes], Path, int]
) -> Iterator[dict[str, str]]:
    """Two servers on copies of the same blocks: the default limits, and a low --query.max-samples."""
    blocks = setup[2]
    urls: dict[str, str] = {}
    with (
        engines.prometheus(tmp_path_factory.mktemp("default"), [], None, _copy(blocks, "default")) as default,
        engines.prometheus(
            tmp_path_factory.mktemp("low"), [], None, _copy(blocks, "low"), (f"--query.max-samples={LOW_MAX_SAMPLES}",)
        ) as low,
    ):
        urls["default"], urls["low"] = default.url, low.url
        yield urls


def _copy(blocks: Path, name: str) -> Path:
    target = blocks.parent / f"tsdb-{name}"
    shutil.copytree(blocks, target)
    return target


def replay(setup: tuple[Model, dict[str, bytes], Path, int], url: str, engine: str = "server", **bounds: Any) -> Result:
    """The server engine unless told: these bounds are those of its range queries."""
    model, files, _, end = setup
    client = Client(Access(url, timeout_s=60))
    backtest = Backtest(client, (end - DAY_S) * 1000, end * 1000, None, engine=engine, **bounds)
    for spec in plan(model):
        backtest.run_spec(spec, files[rules_path(spec.slo)], model.project.evaluation_interval_ms)
    return backtest.result


def keys(intervals: list[Interval]) -> set[Key]:
    return {(i.alert, tuple(sorted(i.labels.items())), i.fired_ms, i.resolved_ms, i.condition_ms) for i in intervals}


@pytest.fixture(scope="module")
def unchunked(setup: tuple[Model, dict[str, bytes], Path, int], servers: dict[str, str]) -> Result:
    result = replay(setup, servers["default"])
    assert result.problems == [] and result.split_queries == 0 and result.segments == 2
    # the data trips a range alert, a page without for, a burn pair and a no-data alert
    assert {"QueueDepthAboveNormalRange", "RequestErrorsErrorBudgetBurn", "QueueDepthNoData"} <= {
        i.alert for i in result.intervals
    }
    return result


def test_a_server_refusing_large_queries_still_gives_the_same_replay(
    setup: tuple[Model, dict[str, bytes], Path, int], servers: dict[str, str], unchunked: Result
) -> None:
    chunked = replay(setup, servers["low"])
    assert chunked.problems == []
    assert chunked.split_queries > 0 and chunked.queries > unchunked.queries
    assert keys(chunked.intervals) == keys(unchunked.intervals)


def test_a_small_points_bound_asks_in_more_queries_with_the_same_replay(
    setup: tuple[Model, dict[str, bytes], Path, int], servers: dict[str, str], unchunked: Result
) -> None:
    bounded = replay(setup, servers["default"], max_samples=300)
    assert bounded.problems == [] and bounded.split_queries == 0
    # 2 series per raw rule: 150 steps per query, so 1,800-odd steps take 13 queries per raw rule, not 1
    assert bounded.queries >= unchunked.queries + 3 * 12
    assert keys(bounded.intervals) == keys(unchunked.intervals)


def test_a_replay_cut_into_time_segments_equals_the_whole(
    setup: tuple[Model, dict[str, bytes], Path, int], servers: dict[str, str], unchunked: Result
) -> None:
    cut = replay(setup, servers["default"], segment_cells=3_000)
    assert cut.problems == []
    assert cut.segments > unchunked.segments  # a spec replayed in more than one segment
    assert keys(cut.intervals) == keys(unchunked.intervals)


def test_the_local_engine_gives_the_same_replay_whole_and_in_segments(
    setup: tuple[Model, dict[str, bytes], Path, int], servers: dict[str, str], unchunked: Result
) -> None:
    """The raw series read once and every rule evaluated here: the server's firings exactly, also when the
    replay is cut into segments smaller than a spec's warm-up allows (each still gets its warm-up)."""
    whole = replay(setup, servers["default"], engine="local")
    assert whole.problems == [] and keys(whole.intervals) == keys(unchunked.intervals)
    cut = replay(setup, servers["low"], engine="local", segment_cells=3)
    assert cut.problems == [] and cut.segments > whole.segments and cut.server_specs == []
    assert keys(cut.intervals) == keys(unchunked.intervals)
    # a spec too wide for the local engine over twice its warm-up is left to the server engine: same firings
    left = replay(setup, servers["default"], engine="local", local_cells=3)
    assert left.server_specs == sorted(left.server_specs) and len(left.server_specs) == 2
    assert left.problems == [] and keys(left.intervals) == keys(unchunked.intervals)


def test_a_query_no_chunk_can_pass_is_a_problem_in_the_servers_words(
    setup: tuple[Model, dict[str, bytes], Path, int], tmp_path: Path
) -> None:
    blocks = _copy(setup[2], "tiny")
    with engines.prometheus(tmp_path, [], None, blocks, ("--query.max-samples=5",)) as prom:
        result = replay(setup, prom.url)
    assert any("too many samples" in problem and "request-errors" in problem for problem in result.problems)
    assert any(problem.startswith("request-errors: not replayed past") for problem in result.problems)


def test_segments_feed_every_step_once_in_order_each_after_its_warm_up() -> None:
    full = Grid(1_000_000, 60_000, 10_000)
    cut = segments(full, 100, 1_000, 300_000)
    fed = [full.at_or_before(grid.time(index)) for grid, skip in cut for index in range(skip, grid.n)]
    assert fed == list(range(full.n))
    assert all(grid.n * 1_000 <= 300_000 for grid, _ in cut)  # each within the cells budget
    assert [skip for _, skip in cut] == [0] + [100] * (len(cut) - 1)
    # the warm-up is the floor: a budget below it still gives each segment its warm-up, and new steps
    floor = segments(full, 100, 1_000, 1_000)
    assert all(skip == 100 and grid.n <= 200 for grid, skip in floor[1:])
    assert segments(full, 100, 1, 10_000) == [(full, 0)]  # fits: one segment


def test_a_query_the_server_gave_up_on_in_time_is_asked_again_smaller() -> None:
    # Prometheus 2.42's words (HTTP 503 and 422), as a 7,500-node replay at concurrency 2 met them
    base = "Prometheus at http://127.0.0.1:9090 answered HTTP "
    assert too_large(QueryError(base + "503: query timed out in expression evaluation"))
    assert too_large(
        QueryError(base + "422: query processing would load too many samples into memory in query execution")
    )
    assert not too_large(QueryError(base + "422: found duplicate series for the match group"))


def test_the_local_engine_refuses_more_series_than_the_budget(
    setup: tuple[Model, dict[str, bytes], Path, int], servers: dict[str, str]
) -> None:
    """A selector reading more series than the spec's series_budget is the spec's problem, not a replay of them."""
    model, files, _, end = setup
    backtest = Backtest(Client(Access(servers["default"], timeout_s=60)), (end - DAY_S) * 1000, end * 1000, None)
    spec = next(spec for spec in plan(model) if spec.slo.name == "queue-depth")
    backtest.run_spec(spec, files[rules_path(spec.slo)], model.project.evaluation_interval_ms, series_limit=1)
    assert any("more than the spec's series_budget of 1" in problem for problem in backtest.result.problems)
    assert any(problem.startswith("queue-depth: not replayed past") for problem in backtest.result.problems)
