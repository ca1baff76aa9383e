"""The in-memory stage of backtest against the real Prometheus 2.42, value for value.

Backtest evaluates every rule that reads only recorded series in memory (``compiler.live.steps``).
Here the recorded series are backfilled into a real Prometheus as they would have been recorded
(one sample per minute, on the minute, over four days, varying), and every such expression of
a library spec and of the fixture gauge (windows of 5m to 3d, subqueries at 1h steps, offsets,
``and``, ``absent``, the 30d budget) is evaluated both ways over the last day at 1m steps: the
same series at every step, with the same values to 1e-9 (Prometheus's incremental mean against
compensated sums). About 10 s.
"""

from __future__ import annotations

import math
import time
from collections.abc import Iterator

import pytest

from compiler.live.backtest import _names, rules_of, split_of
from compiler.live.client import Access, Client
from compiler.live.steps import Grid, StepEvaluator, Store
from tests import servers
from tests.support import REPO_ROOT

MINUTE = 60_000
DAYS = 4
FILES = (
    REPO_ROOT / "generated" / "prometheus" / "rules" / "cluster-dns-servfail.rules.yaml",
    REPO_ROOT / "tests" / "golden" / "prometheus" / "rules" / "fixture-gauge.rules.yaml",
    REPO_ROOT / "generated" / "prometheus" / "rules" / "node-clock-sync.rules.yaml",
)
SERIES = {
    "cluster-dns-servfail": (
        "slo:sli_total:rate5m",
        "slo:sli_bad:rate5m",
        "slo:sli_total:rate1h",
        "slo:sli_bad:rate1h",
    ),
    "fixture-gauge": ("slo:sli_value:gauge",),
    # a fleet: its unit tickets are held back through a subquery of the page's condition over the slice counts
    "node-clock-sync": (
        "slo:sli_value:gauge",
        "slo:unit_value:gauge",
        "slo:fleet_units:count",
        "slo:fleet_units_out:count",
    ),
}
CLUSTERS = ("a", "b")


def value(name: str, cluster: str, minute: int) -> float:
    """Varying values: a daily wave, bursts, and one cluster dark for an hour (the series disappears). A unit
    value and the units out cross the fleet's lines (0.5; 3 units) with the wave."""
    base = 0.5 if "unit_value" in name else 1000.0 if "total" in name or "gauge" in name else 5.0
    wave = 1 + 0.5 * math.sin(minute / 180) + (3.0 if minute % 997 < 40 and "bad" in name else 0.0)
    return round(base * wave * (1.3 if cluster == "b" else 1.0), 6)


def present(cluster: str, minute: int) -> bool:
    """Cluster b's series start a day late. (No gaps: backfilled samples carry no staleness markers, so
    Prometheus reads across a gap for 5m where a rule's series would be stale at once; that is proven
    against live rules in test_live_backtest.)"""
    return not (cluster == "b" and minute < 1440)


@pytest.fixture(scope="module")
def server(tmp_path_factory: pytest.TempPathFactory) -> Iterator[tuple[str, int]]:
    workdir = tmp_path_factory.mktemp("steps")
    end_ms = int(time.time()) // 3600 * 3600 * 1000 - 3600_000
    start_ms = end_ms - DAYS * 1440 * MINUTE
    lines = []
    for slo, names in SERIES.items():
        for name in names:
            lines.append(f"# TYPE {name.replace(':', '_')} unknown")
            for cluster in CLUSTERS:
                for minute in range(DAYS * 1440 + 1):
                    if present(cluster, minute):
                        stamp = (start_ms + minute * MINUTE) // 1000
                        labels = f'slo="{slo}",cluster="{cluster}"'
                        lines.append(f"{name}{{{labels}}} {value(name, cluster, minute)} {stamp}")
    text = "\n".join(line for line in lines if not line.startswith("#")) + "\n# EOF\n"
    blocks = servers.backfill(text, workdir)
    with servers.prometheus(workdir, [], None, blocks) as prom:
        yield prom.url, start_ms


def expressions() -> list[str]:
    """Every expression of the rule files that reads only recorded series, and the part of a unit ticket that
    backtest evaluates in memory when its left side runs on the server (``Split``)."""
    found = []
    for path in FILES:
        _, rules = rules_of(path.read_bytes())
        recorded = {rule.name for rule in rules if rule.kind == "record"}
        for rule in rules:
            if rule.expr != "vector(1)" and all(name in recorded for name in _names(rule.expr)):
                found.append(rule.expr)
                split = split_of(rule.expr, recorded)
                if split is not None:
                    found.append(split.memory)
    return found


def store(start_ms: int) -> Store:
    grid = Grid(start_ms, MINUTE, DAYS * 1440 + 1)
    held = Store(grid)
    for slo, names in SERIES.items():
        for name in names:
            for cluster in CLUSTERS:
                values = [value(name, cluster, m) if present(cluster, m) else None for m in range(grid.n)]
                held.put({"__name__": name, "slo": slo, "cluster": cluster}, values)
    return held


def test_every_recorded_series_expression_matches_prometheus(server: tuple[str, int]) -> None:
    url, start_ms = server
    client = Client(Access(url, timeout_s=60))
    held = store(start_ms)
    last_day = held.grid.n - 1440 - 1
    checked = 0
    found = expressions()
    # the rate tiers sum non-overlapping blocks read with offset; the budget and period events read [30d:1h]
    # and the 5m total and bad sum the recorded parts (the total's rates by rcode)
    # node-clock-sync: its two counts, the normal, page, unit (whole, and its held-back part) and no-data alerts
    assert len(found) == 31 and sum("offset" in e for e in found) == 13 and sum(":1h]" in e for e in found) == 2
    assert sum("[10m:1m]" in e for e in found) == 2
    for expr in found:
        mine = StepEvaluator(held).run(expr)
        theirs = client.query_range(expr, held.grid.time(last_day) / 1000, held.grid.time(held.grid.n - 1) / 1000, 60)
        expected: dict[tuple[int, frozenset[tuple[str, str]]], float] = {}
        for labels, points in theirs:
            for t, v in points:
                expected[(round(t * 1000 - start_ms) // MINUTE, frozenset(labels.items()))] = v
        got = {
            (index, frozenset(labels.items())): v for index in range(last_day, held.grid.n) for labels, v in mine[index]
        }
        assert got.keys() == expected.keys(), expr
        for key, v in expected.items():
            assert math.isclose(got[key], v, rel_tol=1e-9, abs_tol=1e-12) or (math.isnan(v) and math.isnan(got[key])), (
                expr,
                key,
            )
        checked += len(expected)
    assert checked > 15_000  # series x steps compared
