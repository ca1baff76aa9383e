"""``slo-compiler backtest`` against the real Prometheus 2.42: the same compiled rules run live in the
server over backfilled incident and calm data, and the replay's firing intervals must equal what
the server recorded in ``ALERTS`` (exactly when the replay's evaluation timestamps are the
server's, within one evaluation interval through the command line, which aligns them to the
interval). The run takes about 75 s of real time (``for`` and ``keep_firing_for``) for a few seconds
of CPU: it starts when the session collects a test that needs it (tests/clockwork.py), so the wait
overlaps other tests."""

from __future__ import annotations

import json
import time
from collections.abc import Iterator
from itertools import pairwise
from pathlib import Path
from typing import Any

import pytest

from compiler.cli import main
from compiler.live.backtest import Backtest, Interval
from compiler.live.client import Access, Client
from compiler.model import Model
from compiler.model.links import rules_path
from compiler.pipeline import compile_specs, render
from compiler.plan import plan
from tests import clockwork, live_data, servers

INTERVAL_S = 2
INCIDENT_AT = 25  # seconds after the data starts being "now"
CALM_AT = 45
DRAINED_AT = 58  # every queue empty: the gauge's recorded series goes stale, its no-data alert fires
RUN_FOR = 70
Key = tuple[str, tuple[tuple[str, str], ...]]


Compiled = tuple[Path, Model, dict[str, bytes]]


@clockwork.scenario()
def backtest_run(clock: clockwork.Clock) -> tuple[Compiled, str, dict[str, Any]]:
    """Started when the session collects a test that needs it (tests/clockwork.py): the compiled specs, then the
    server after the run (left running for the replays) and the live facts (first and last evaluation, ALERTS)."""
    workdir = clock.workdir
    specs = {**live_data.BACKTEST_SPECS, **live_data.FLEET_SPECS}
    tree = live_data.write_tree(workdir / "specs", specs, live_data.BACKTEST_PROJECT)
    model, diagnostics = compile_specs(tree)
    assert model is not None and not diagnostics, diagnostics.render()
    files = render(model, diagnostics)
    now = int(time.time())
    text = live_data.backtest_data(
        now - 15 * 60, now + RUN_FOR + 60, now + INCIDENT_AT, now + CALM_AT, now + DRAINED_AT, hosts=True
    )
    (workdir / "server").mkdir()
    rule_files = []
    for slo in model.slos:
        path = workdir / "server" / f"{slo.name}.rules.yaml"
        path.write_bytes(files[rules_path(slo)])
        rule_files.append(path)
    clock.ready()
    blocks = servers.backfill(text, workdir / "server")
    prom = clock.stack.enter_context(servers.prometheus(workdir / "server", rule_files, None, blocks))
    clock.wait(now + RUN_FOR - time.time())
    return (tree, model, files), prom.url, facts(prom)


@pytest.fixture(scope="module")
def compiled() -> Compiled:
    return clockwork.result(backtest_run)[0]


@pytest.fixture(scope="module")
def live() -> Iterator[tuple[str, dict[str, Any]]]:
    """The server after the run: its URL and the live facts (first and last evaluation, ALERTS)."""
    _, url, seen = clockwork.result(backtest_run)
    yield url, seen
    clockwork.close(backtest_run)


# Each spec's group runs at its own phase within the interval (Prometheus hashes the group's name and file);
# slo_info (vector(1)) is recorded at every evaluation of its group.
SPECS = ("queue-depth", "request-errors", "host-temp")


def facts(prom: servers.Prometheus) -> dict[str, Any]:
    evaluated, missed = {}, {}
    for spec in SPECS:
        found = prom.query(f'slo_info{{slo="{spec}"}}[10m]')
        stamps = sorted(float(t) for series in found for t, _ in series["values"])
        evaluated[spec] = (stamps[0], stamps[-1])
        missed[spec] = sum(1 for a, b in pairwise(stamps) if b - a > 1.5 * INTERVAL_S)
    alerts: dict[Key, list[float]] = {}
    for series in prom.query('ALERTS{alertstate="firing"}[10m]'):
        labels = {k: v for k, v in series["metric"].items() if k not in ("__name__", "alertstate")}
        key = (labels["alertname"], tuple(sorted(labels.items())))
        alerts[key] = sorted(float(t) for t, _ in series["values"])
    return {"evaluated": evaluated, "alerts": alerts, "missed": missed}


def live_intervals(seen: dict[str, Any]) -> dict[Key, list[tuple[float, float | None]]]:
    """Runs of ALERTS samples: fired at the first, resolved one interval after the last (None: still firing)."""
    runs: dict[Key, list[tuple[float, float | None]]] = {}
    for key, stamps in seen["alerts"].items():
        last = seen["evaluated"][dict(key[1])["slo"]][1]
        start = previous = stamps[0]
        for t in [*stamps[1:], None]:
            if t is None or t - previous > 1.5 * INTERVAL_S:
                end = None if previous >= last else previous + INTERVAL_S
                runs.setdefault(key, []).append((start, end))
                if t is not None:
                    start = t
            if t is not None:
                previous = t
    return runs


def replayed(intervals: list[Interval]) -> dict[Key, list[tuple[float, float | None]]]:
    runs: dict[Key, list[tuple[float, float | None]]] = {}
    for interval in sorted(intervals, key=lambda i: i.fired_ms):
        key = (interval.alert, tuple(sorted(interval.labels.items())))
        end = interval.resolved_ms / 1000 if interval.resolved_ms is not None else None
        runs.setdefault(key, []).append((interval.fired_ms / 1000, end))
    return runs


@clockwork.needs(backtest_run)
def test_the_replay_equals_what_the_live_server_fired(live: tuple[str, dict[str, Any]], compiled: Compiled) -> None:
    url, seen = live
    _, model, files = compiled
    intervals: list[Interval] = []
    for spec in plan(model):
        first, last = (round(t * 1000) for t in seen["evaluated"][spec.slo.name])
        replay = Backtest(Client(Access(url)), first, last, warmup=0, align_ms=first % (INTERVAL_S * 1000))
        replay.run_spec(spec, files[rules_path(spec.slo)], model.project.evaluation_interval_ms)
        assert replay.result.problems == []
        intervals += replay.result.intervals
    expected = live_intervals(seen)
    got = replayed(intervals)
    names = {key[0] for key in expected}
    # The data trips each kind: a range alert that resolves, one without for, a burn pair, a no-data alert
    # that fires only because a rule's series is stale at once (the raw series would still be read), and a
    # fleet's page with unit tickets held back while it fires.
    assert {
        "QueueDepthAboveNormalRange",
        "QueueDepthAboveCriticalRange",
        "RequestErrorsErrorBudgetBurn",
        "QueueDepthNoData",
        "HostTempAboveCriticalRange",
        "HostTempUnitAboveCriticalRange",
    } <= names
    units = {dict(k[1])["instance"]: runs for k, runs in expected.items() if k[0] == "HostTempUnitAboveCriticalRange"}
    # h1: fired, held back when the page fired, fired again after the calm; h2: fired, then held back for good
    assert sorted(units) == ["h1", "h2"] and len(units["h1"]) == 2 and len(units["h2"]) == 1, units
    page = next(runs for k, runs in expected.items() if k[0] == "HostTempAboveCriticalRange")
    assert units["h2"][0][1] is not None and units["h2"][0][1] <= page[0][0] + INTERVAL_S, (units, page)
    if not any(seen["missed"].values()):
        assert got == expected
    else:  # an overloaded machine made the server skip evaluations, which a replay on a full grid does not
        assert_close(got, expected, INTERVAL_S * (1 + max(seen["missed"].values())))
    normal = next(v for k, v in got.items() if k[0] == "QueueDepthAboveNormalRange")
    assert len(normal) == 1 and normal[0][1] is not None  # resolved, after keep_firing_for
    assert all(dict(k[1]).get("cluster", "west") == "west" for k in got)


def assert_close(
    got: dict[Key, list[tuple[float, float | None]]],
    expected: dict[Key, list[tuple[float, float | None]]],
    slack: float,
) -> None:
    assert got.keys() == expected.keys()
    for key, runs in expected.items():
        assert len(got[key]) == len(runs), key
        for (fired, resolved), (mine, mine_resolved) in zip(runs, got[key], strict=True):
            assert abs(mine - fired) <= slack and (resolved is None) == (mine_resolved is None), key
            assert resolved is None or mine_resolved is None or abs(mine_resolved - resolved) <= slack, key


@clockwork.needs(backtest_run)
def test_the_command_line_agrees_within_one_interval_and_reports(
    live: tuple[str, dict[str, Any]], compiled: Compiled, capsys: pytest.CaptureFixture[str]
) -> None:
    url, seen = live
    tree = compiled[0]
    args = ["backtest", "--prometheus", url, "--specs", str(tree), "--warmup", "0"]
    first = min(start for start, _ in seen["evaluated"].values())
    last = max(end for _, end in seen["evaluated"].values())
    args += ["--from", f"{first:.3f}", "--to", f"{last:.3f}", "--format", "json"]
    assert main(args) == 0
    report = json.loads(capsys.readouterr().out)
    expected = live_intervals(seen)
    got: dict[Key, list[dict[str, Any]]] = {}
    for item in report["intervals"]:
        got.setdefault((item["alert"], tuple(sorted(item["labels"].items()))), []).append(item)
    assert set(got) == set(expected)
    for key, runs in expected.items():
        assert len(got[key]) == len(runs)
        # A held-back unit ticket follows its page (one interval off on the aligned grid) and its subquery's
        # steps (another): two intervals; every other alert one.
        slack = 2 * INTERVAL_S if key[0] == "HostTempUnitAboveCriticalRange" else INTERVAL_S
        for (fired, resolved), item in zip(runs, got[key], strict=True):
            assert abs(item["fired_ms"] / 1000 - fired) <= slack
            assert abs((item["resolved_ms"] or last * 1000) / 1000 - (resolved or last)) <= slack
    weekly = {(w["team"], w["severity"]): w["firings"] for w in report["per_week"]}
    assert weekly[("team-a", "page")] >= 2 and weekly[("team-a", "ticket")] >= 1
    assert {n["alert"] for n in report["never_fired"]} == {"RequestErrorsNoData", "HostTempNoData"}
    assert report["noisiest"][0]["firings"] >= 1
    burn = next(i for i in report["intervals"] if i["labels"].get("long_window") == "1h")
    assert burn["condition_began"] != "-" and burn["time_to_fire"] != "0s"
    for form, marker in (("markdown", "#### Firing intervals"), ("table", "Firing intervals:")):
        assert main([*args[:-1], form]) == 0
        assert marker in capsys.readouterr().out
    # Two specs at a time, each in a process of its own (--jobs): the same report, byte for byte.
    assert main([*args, "--jobs", "2"]) == 0
    assert json.loads(capsys.readouterr().out) == report
