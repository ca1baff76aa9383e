"""Backtest specs in several processes at once: the local engine's evaluation is Python and numpy on one core,
and each spec's replay is independent of the others, so ``jobs`` processes replay ``jobs`` specs at a time.

The workers are forked from the caller, so they share its ``Backtest`` (client, range, engine) without pickling
it; each returns its spec's part of the result, and the parts are put together in the specs' order, so the
result is the one a single process gives, byte for byte. A worker ignores SIGINT: Ctrl-C stops the caller,
which terminates the workers (no traceback from a child). Memory: each worker holds one spec's replay, so the
peak is about ``jobs`` times one replay's.
"""

from __future__ import annotations

import multiprocessing
import signal
from collections.abc import Sequence
from dataclasses import dataclass

from compiler.live.backtest import Backtest, Result
from compiler.live.memory import keep_freed_memory
from compiler.plan import SpecPlan


@dataclass(frozen=True)
class Job:
    """One spec to replay, with what ``Backtest.run_spec`` takes besides it."""

    spec: SpecPlan
    rule_file: bytes
    interval_ms: int
    series_limit: int | None
    recorded_series: int | None


@dataclass(frozen=True)
class _Part:
    result: Result
    requests: int
    samples_read: int
    server_s: float


_SHARED: tuple[Backtest, Sequence[Job]] | None = None  # set before the fork: what the workers replay


def run_jobs(backtest: Backtest, jobs: Sequence[Job], processes: int = 1) -> None:
    """Replay every job into ``backtest.result``, ``processes`` at a time (one: here, in order); freed memory is
    kept in the processes for the next arrays (``memory``)."""
    keep_freed_memory()
    if processes <= 1 or len(jobs) <= 1 or "fork" not in multiprocessing.get_all_start_methods():
        for job in jobs:
            backtest.run_spec(job.spec, job.rule_file, job.interval_ms, job.series_limit, job.recorded_series)
        return
    global _SHARED
    backtest.ask_shared([(job.rule_file, job.interval_ms) for job in jobs])
    _SHARED = (backtest, jobs)
    pool = multiprocessing.get_context("fork").Pool(min(processes, len(jobs)), initializer=_ignore_sigint)
    try:
        for part in pool.imap(_replay, range(len(jobs))):
            _merge(backtest, part)
        pool.close()
    finally:
        pool.terminate()
        pool.join()
        _SHARED = None


def _ignore_sigint() -> None:
    signal.signal(signal.SIGINT, signal.SIG_IGN)


def _replay(index: int) -> _Part:
    """In a worker: one job over the shared backtest, with a result and counts of its own."""
    assert _SHARED is not None
    backtest, jobs = _SHARED
    client = backtest.client
    requests, samples, server_s = client.requests, client.samples_read, client.server_s
    backtest.result = Result(backtest.start_ms, backtest.end_ms, backtest.warmup or 0)
    job = jobs[index]
    backtest.run_spec(job.spec, job.rule_file, job.interval_ms, job.series_limit, job.recorded_series)
    return _Part(backtest.result, client.requests - requests, client.samples_read - samples, client.server_s - server_s)


def _merge(backtest: Backtest, part: _Part) -> None:
    """A worker's part into the caller's result, as if the caller had replayed that spec itself."""
    mine, theirs = backtest.result, part.result
    mine.warmup_ms = max(mine.warmup_ms, theirs.warmup_ms)
    mine.intervals += theirs.intervals
    mine.alerts += theirs.alerts
    mine.problems += theirs.problems
    mine.split_queries += theirs.split_queries
    mine.segments += theirs.segments
    mine.inlined_rules += theirs.inlined_rules
    mine.server_specs += theirs.server_specs
    mine.coverage.update(theirs.coverage)
    client = backtest.client
    client.requests += part.requests
    client.samples_read += part.samples_read
    client.server_s += part.server_s
    mine.samples_read, mine.queries = client.samples_read, client.requests
