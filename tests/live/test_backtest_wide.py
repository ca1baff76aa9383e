"""Wide recorded rules in backtest: a per-unit series (a fleet's value per host, a spec sliced per
host) that only instant reads use is not fetched and held; its readers run on the server with it
inlined. The replay must not change: against the real Prometheus 2.42, the same specs replayed
with every such rule inlined (``wide_series=1``) and with every rule held (the default threshold
is above these 8 hosts) give the same firings. A series read with a range or an offset (a burn
rate's windows) is never inlined. That is the server engine's way; the local engine (the default) reads
the raw series once and holds every rule, and must give the same firings too. About 20 s."""

from __future__ import annotations

import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from compiler.live.backtest import (
    Backtest,
    Interval,
    Result,
    Rule,
    _with_absent_labels,
    droppable,
    needed,
    rules_of,
    split_of,
)
from compiler.live.client import Access, Client
from compiler.model import Model, series
from compiler.model.links import rules_path
from compiler.pipeline import compile_specs, render
from compiler.plan import plan
from tests import live_data, servers

REPO_ROOT = Path(__file__).resolve().parents[2]
HOUR = 3600
SPECS = {
    # A fleet judged per host: one hot host is a ticket naming it, two at once page.
    "host-temp": """\
slice: {by: [cluster]}
sli:
  gauge:
    expr: 'max by (cluster) (host_temp)'
    aggregate: max
unit: ratio
normal_range: {max: 0.8, for: 2m}
critical_range: {max: 0.95, for: 2m}
fleet:
  units: [instance]
  page: {units: 2}
series_budget: 7504
persistence: {for: 2m}
no_data: {for: 5m}
""",
    # Sliced per host: one series per host, and all of them gone at the end (no data).
    "host-load": """\
slice: {by: [cluster, instance]}
sli:
  gauge:
    expr: 'max by (cluster, instance) (host_load)'
    aggregate: max
unit: count
normal_range: {max: 10, for: 2m}
series_budget: 7501
persistence: {for: 2m}
no_data: {for: 5m}
""",
}
Key = tuple[str, tuple[tuple[str, str], ...], int, int, int | None]


def wide_data(start: int, end: int) -> str:
    """Two clusters of four hosts. West h1 is hot from end-3h to end-2h and h2 with it for 10 minutes
    (two hosts out: the fleet pages); west h1's load is high from end-200m for 30 minutes; every
    host's load series ends at end-1h."""
    om = live_data.OpenMetrics(start, end, step=30)
    temps, loads = om.families.setdefault("host_temp", []), om.families.setdefault("host_load", [])
    for cluster in ("west", "east"):
        for host in range(1, 5):
            labels = f'{{cluster="{cluster}",instance="h{host}"}}'
            for t in range(start, end + 1, 30):
                hot = cluster == "west" and (
                    (host == 1 and end - 3 * HOUR <= t < end - 2 * HOUR)
                    or (host == 2 and end - 150 * 60 <= t < end - 140 * 60)
                )
                temps.append(f"host_temp{labels} {0.99 if hot else 0.5} {t}")
                if t < end - HOUR:
                    busy = cluster == "west" and host == 1 and end - 200 * 60 <= t < end - 170 * 60
                    loads.append(f"host_load{labels} {20 if busy else 2} {t}")
    return om.text()


@pytest.fixture(scope="module")
def setup(tmp_path_factory: pytest.TempPathFactory) -> Iterator[tuple[Model, dict[str, bytes], str, int]]:
    tree = live_data.write_tree(tmp_path_factory.mktemp("specs"), SPECS)
    model, diagnostics = compile_specs(tree)
    assert model is not None and not diagnostics, diagnostics.render()
    workdir = tmp_path_factory.mktemp("wide")
    end = int(time.time()) // 60 * 60 - 600
    blocks = servers.backfill(wide_data(end - 6 * HOUR, end), workdir)
    with servers.prometheus(workdir, [], None, blocks) as prom:
        yield model, render(model, diagnostics), prom.url, end


def replay(setup: tuple[Model, dict[str, bytes], str, int], engine: str = "server", **bounds: Any) -> Result:
    """The server engine unless told: inlining is how it keeps the wide series on the server."""
    model, files, url, end = setup
    backtest = Backtest(
        Client(Access(url, timeout_s=60)), (end - 4 * HOUR) * 1000, end * 1000, None, engine=engine, **bounds
    )
    for spec in plan(model):
        backtest.run_spec(spec, files[rules_path(spec.slo)], model.project.evaluation_interval_ms)
    return backtest.result


def keys(intervals: list[Interval]) -> set[Key]:
    return {(i.alert, tuple(sorted(i.labels.items())), i.active_ms, i.fired_ms, i.resolved_ms) for i in intervals}


def test_inlining_the_wide_rules_on_the_server_gives_the_same_replay(
    setup: tuple[Model, dict[str, bytes], str, int],
) -> None:
    held, inlined = replay(setup), replay(setup, wide_series=1)
    assert held.problems == [] and inlined.problems == []
    assert held.inlined_rules == 0  # 8 series are below the default threshold: everything held, as before
    # host-temp's value and unit value, host-load's value: read only at an instant; host-temp's two counts
    # are held (the unit ticket reads them through a subquery and an offset, in memory)
    assert inlined.inlined_rules == 3
    fired = {(i.alert, i.labels.get("instance"), i.labels["severity"]) for i in held.intervals}
    assert {
        ("HostTempUnitAboveCriticalRange", "h1", "ticket"),
        ("HostTempAboveCriticalRange", None, "page"),
        ("HostTempAboveNormalRange", None, "ticket"),
        ("HostLoadAboveNormalRange", "h1", "ticket"),
        ("HostLoadNoData", None, "ticket"),
    } <= fired
    # h2 is out only while the fleet pages (its 2m ends as the page's does): its ticket is held back
    assert ("HostTempUnitAboveCriticalRange", "h2", "ticket") not in fired
    assert keys(inlined.intervals) == keys(held.intervals)
    one_at_a_time = replay(setup, wide_series=1, concurrency=1)  # the server's rules asked one after another
    assert keys(one_at_a_time.intervals) == keys(inlined.intervals) and one_at_a_time.queries == inlined.queries
    local = replay(setup, engine="local")  # every rule held and evaluated here, the raw series read once
    assert local.problems == [] and keys(local.intervals) == keys(held.intervals)
    # An inlined signal leaves the condition's start unset, so the time to fire counts from the alert's
    # own start; for a per-host threshold alert that is where the condition began anyway.
    same = {(i.alert, tuple(sorted(i.labels.items())), i.fired_ms): i for i in held.intervals}
    for interval in inlined.intervals:
        before = same[(interval.alert, tuple(sorted(interval.labels.items())), interval.fired_ms)]
        assert interval.condition_ms is None
        if interval.spec == "host-load":
            assert interval.time_to_fire_ms == before.time_to_fire_ms, interval


def test_an_inlined_absent_gets_back_its_selectors_labels() -> None:
    # the library's no-data rules carry their slo label themselves; a hand-written absent() may not
    inlined = _with_absent_labels('absent(x{slo="a", job="b", job="c", le=~"1"})', [[({}, 1.0)], []])
    assert inlined == [[({"slo": "a"}, 1.0)], []]
    assert _with_absent_labels("absent(sum(x))", [[({}, 1.0)]]) == [[({}, 1.0)]]


@pytest.mark.parametrize(
    ("spec", "inlined"),
    [
        # the NIC spec records its error and packet parts once and sums them at an instant
        # (their fleet counts are held: the unit ticket reads them through a subquery and an offset)
        ("nic-error-budget", {series.PARTS_5M, series.UNIT_VALUE}),
        ("node-readiness", {series.UNIT_VALUE}),
        ("kubelet-pleg-health", {series.VALUE}),
        ("apiserver-5xx", {series.PARTS_5M, series.TOTAL_5M, series.BAD_5M}),  # no windows read them
    ],
)
def test_only_rules_read_at_an_instant_may_be_inlined(spec: str, inlined: set[str]) -> None:
    text = (REPO_ROOT / "generated" / "prometheus" / "rules" / f"{spec}.rules.yaml").read_bytes()
    _, rules = rules_of(text)
    found = {rule.name for rule in droppable(needed(rules))}
    assert found == inlined
    # the burn windows read the 5m series with offsets and ranges: never inlined
    if spec in ("nic-error-budget", "node-readiness"):
        assert series.TOTAL_5M not in found and series.BAD_5M not in found


def test_a_split_alert_runs_its_left_side_on_the_server_and_holds_what_its_right_side_reads() -> None:
    rules = [
        Rule("record", "u", "max by (c, i) (raw)", {}),
        Rule("record", "n", "count by (c) (u)", {}),
        Rule("alert", "A", "u > 1 unless on (c) (min_over_time((n > 2)[5m:1m]) > 0)", {}),
        Rule("alert", "B", "u > 1 unless on (c) (u > 5)", {}),
    ]
    split = split_of(rules[2].expr, {"u", "n"})
    assert split is not None and split.server == "u{} > 1" and "n" in split.memory
    assert split_of(rules[2].expr, {"u"}) is None  # its right side reads n, which is not held: all on the server
    assert split_of("u > 1 and on (c) n", {"u", "n"}) is None
    # u is read plainly by n and by A's left side, but B reads it on its right side too, in memory: held
    assert [rule.name for rule in droppable(rules)] == []
    assert [rule.name for rule in droppable(rules[:3])] == ["u"]  # n is read through a subquery: held
