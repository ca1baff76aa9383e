"""``slo-compiler tune`` against a real Prometheus 2.42 holding a day of a gauge whose distribution the test
wrote: the proposed p99 bound and its firings per week are what that data implies, computed here from the
values written; ``--write`` changes only the bound's text; the JSON carries raw numbers; a garbage server,
an unknown spec and a spec without a normal range are refused with a one-line message. About 15 s."""

from __future__ import annotations

import json
import math
import re
import time
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest

from compiler.cli import main
from compiler.pipeline import compile_specs
from tests import live_data, servers
from tests.servers import hostile, send

MINUTE, DAY = 60, 86_400
PROJECT = live_data.BACKTEST_PROJECT.replace("evaluation_interval: 2s", "evaluation_interval: 1m")
SPEC = """\
# The depth bound is a first guess (U: not measured): tune it.
slice: {by: [cluster]}
sli:
  gauge:
    expr: 'max by (cluster) (work_queue_depth)'
    aggregate: max
unit: count
normal_range:
  max: 80     # a guess
  reason: >-
    Deeper than this and the workers fall behind.
critical_range:
  max: 1000
  severity: page
persistence:
  for: 2m     # two evaluations
"""
SPIKES = ((300, 90), (900, 120))  # (minute of the day, depth) for ten minutes each; the rest 20..69


def depth(minute: int) -> int:
    """The day's queue depth per minute: a body from 20 to 69, and two ten-minute spikes."""
    for begin, value in SPIKES:
        if begin <= minute < begin + 10:
            return value
    return 20 + minute % 50


@dataclass
class World:
    url: str
    tree: Path
    start: int  # unix seconds, on a whole hour: the window is [start, start + 1d]


@pytest.fixture(scope="module")
def world(tmp_path_factory: pytest.TempPathFactory) -> Iterator[World]:
    tmp = tmp_path_factory.mktemp("tune")
    start = (int(time.time()) - 2 * DAY) // 3600 * 3600
    lines = ["# TYPE work_queue_depth gauge"]
    for t in range(start - 5 * 3600, start + DAY + 1, MINUTE):  # history before the window for the warm-ups
        value = depth((t - start) // MINUTE) if t >= start else 30
        lines.append(f'work_queue_depth{{cluster="west"}} {value} {t}')
    blocks = servers.backfill("\n".join(lines) + "\n# EOF\n", tmp)
    specs = {"queue-depth": SPEC, "no-range": NO_RANGE, "queue-growth": GROWTH}
    tree = live_data.write_tree(tmp / "specs", specs, PROJECT)
    with servers.prometheus(tmp, [], None, blocks) as prom:
        yield World(prom.url, tree, start)


# The same depth against itself an hour earlier: the body's ratios reach 1.5 (30 after 20), the spikes 1.5
# (90 after 60) and 2.0 (120 after 60), the window's first hour 2.3 (69 after the 30 before the window).
GROWTH = """\
slice: {by: [cluster]}
sli:
  gauge:
    expr: 'max by (cluster) (work_queue_depth)'
    aggregate: max
unit: count
normal_range:
  relative: {offset: 1h, max_factor: 1.9, floor: 10}
persistence: {for: 2m}
"""


NO_RANGE = """\
slice: {by: [cluster]}
sli:
  ratio:
    bad: 'app_requests_total{code="500"}'
    total: app_requests_total
objective: {target: 99%, period: 7d}
"""


def tune(
    world: World, capsys: pytest.CaptureFixture[str], *extra: str, tree: Path | None = None
) -> tuple[int, str, str]:
    span = ["--from", str(world.start), "--to", str(world.start + DAY)]
    code = main(["tune", "queue-depth", "--prometheus", world.url, "--specs", str(tree or world.tree), *span, *extra])
    out, err = capsys.readouterr()
    return code, out, err


def expected_p99_bound() -> tuple[float, float]:
    """The day's p99 (linear between the nearest ranks, over the 1,440 minutes of the window; the value at
    the window's last instant is the next day's first minute), times 1.2, up to two significant digits."""
    seen = sorted([depth(m) for m in range(DAY // MINUTE)] + [depth(DAY // MINUTE)])
    position = 0.99 * (len(seen) - 1)
    low = math.floor(position)
    p99 = seen[low] + (seen[low + 1] - seen[low]) * (position - low)
    scaled = p99 * 1.2
    exponent = math.floor(math.log10(scaled)) - 1
    return p99, math.ceil(scaled / 10**exponent) * 10**exponent


def knob(report: dict[str, Any], key: str) -> dict[str, Any]:
    found: dict[str, Any] = next(row for row in report["knobs"] if row["key"] == key)
    return found


def test_proposes_the_p99_bound_the_data_implies_and_its_firings(
    world: World, capsys: pytest.CaptureFixture[str]
) -> None:
    code, out, err = tune(world, capsys, "--format", "json")
    assert code == 0, err
    report = json.loads(out)
    p99, bound = expected_p99_bound()
    assert (p99, bound) == (90, 110)  # the first spike is the p99; 90 x 1.2 = 108, written 110
    row = knob(report, "normal_range.max")
    assert row["current"] == 80 and row["line"] > 0 and row["alerts"] == ["QueueDepthAboveNormalRange"]
    picks = {c["pick"]: c for c in row["candidates"]}
    assert picks["p99"]["value"] == bound and picks["p99"]["basis"] == p99 and picks["p99"]["headroom"] == 1.2
    assert picks["p99"]["text"] == "110"
    assert picks["max"]["value"] == 150  # 120 x 1.2 = 144, up to 150
    # at 110 only the 120 spike fires: pending at its first minute, firing 2m later, resolved after its tenth
    covered = picks["p99"]["covered_ms"]
    assert DAY * 1000 - 2 * MINUTE * 1000 <= covered <= DAY * 1000
    assert picks["p99"]["fires"] == 1
    assert picks["p99"]["firing_ms"] == picks["p99"]["longest_ms"] == 8 * MINUTE * 1000
    assert picks["p99"]["fires_per_week"] == pytest.approx(7 * DAY * 1000 / covered)
    assert isinstance(picks["p99"]["fires_per_week"], float) and isinstance(picks["p99"]["firing_ms"], int)
    # at the current 80 both spikes fire; at 150 nothing does
    assert (picks["current"]["fires"], picks["max"]["fires"]) == (2, 0)
    # persistence: 2m fires twice; the first wait that halves it is 10m (each spike lasts ten minutes)
    wait = knob(report, "persistence.for")
    assert [(c["pick"], c["text"], c["fires"]) for c in wait["candidates"]] == [
        ("current", "2m", 2),
        ("halves", "10m", 0),
    ]
    assert report["seen"]["max"] == 120 and report["values_seen"] == DAY // MINUTE + 1


def test_the_server_is_asked_once_whatever_the_candidates(world: World, capsys: pytest.CaptureFixture[str]) -> None:
    """Seven candidates replayed (two share a value) ask the server what one backtest of the spec asks."""
    code, out, err = tune(world, capsys, "--format", "json")
    assert code == 0, err
    replays = sum(len(row["candidates"]) for row in json.loads(out)["knobs"])
    asked = json.loads(out)["queries"]
    span = ["--from", str(world.start), "--to", str(world.start + DAY)]
    main(["backtest", "queue-depth", "--prometheus", world.url, "--specs", str(world.tree), *span, "--format", "json"])
    assert replays >= 7 and asked == json.loads(capsys.readouterr().out)["queries"]


def test_table_shows_candidates_for_people(world: World, capsys: pytest.CaptureFixture[str]) -> None:
    code, out, err = tune(world, capsys)
    assert code == 0, err
    assert "normal_range.max (" in out and "now 80" in out
    p99_row = next(line for line in out.splitlines() if line.strip().startswith("p99 "))
    assert "110" in p99_row and "90 x 1.2" in p99_row and "7.0/week" in p99_row and "8m" in p99_row


def test_write_changes_only_the_bounds_text(world: World, capsys: pytest.CaptureFixture[str], tmp_path: Path) -> None:
    tree = live_data.write_tree(tmp_path / "specs", {"queue-depth": SPEC}, PROJECT)
    spec = tree / "queue-depth.yaml"
    before = spec.read_bytes()
    code, out, err = tune(world, capsys, "--pick", "normal_range.max=p99", "--format", "patch", tree=tree)
    assert code == 0, err
    assert spec.read_bytes() == before  # a patch is only shown
    assert "-  max: 80     # a guess\n+  max: 110     # a guess\n" in out
    code, _, err = tune(world, capsys, "--pick", "normal_range.max=p99", "--write", tree=tree)
    assert code == 0, err
    assert spec.read_bytes() == before.replace(b"max: 80     # a guess", b"max: 110     # a guess")
    model, diagnostics = compile_specs(tree)
    assert not diagnostics and model is not None
    assert model.slos[0].normal_range is not None and model.slos[0].normal_range.maximum == 110


def test_write_refuses_a_spec_changed_meanwhile(
    world: World, capsys: pytest.CaptureFixture[str], tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    from compiler.live import tune as tune_module

    tree = live_data.write_tree(tmp_path / "specs", {"queue-depth": SPEC}, PROJECT)
    spec = tree / "queue-depth.yaml"
    real = tune_module.tune

    def edited_meanwhile(*args: Any, **kwargs: Any) -> dict[str, Any]:
        spec.write_text(spec.read_text(encoding="utf-8") + "# edited by someone\n", encoding="utf-8")
        return real(*args, **kwargs)

    monkeypatch.setattr(tune_module, "tune", edited_meanwhile)
    code, _, err = tune(world, capsys, "--pick", "p99", "--write", tree=tree)
    assert code == 1
    assert err.strip().endswith("queue-depth.yaml:1:1: changed since tune read it; nothing written (run tune again)")
    assert spec.read_text(encoding="utf-8").endswith("# edited by someone\n") and "max: 80 " in spec.read_text()


def test_write_refuses_values_that_do_not_compile(
    world: World, capsys: pytest.CaptureFixture[str], tmp_path: Path
) -> None:
    """A normal bound above the critical one: the spec's own check refuses it, and the file stays."""
    tree = live_data.write_tree(tmp_path / "specs", {"queue-depth": SPEC.replace("max: 1000", "max: 120")}, PROJECT)
    before = (tree / "queue-depth.yaml").read_bytes()
    code, _, err = tune(world, capsys, "--pick", "normal_range.max=max", "--write", tree=tree)
    assert code == 1
    where = (tree / "queue-depth.yaml").as_posix()  # the spec's own path, not the copy tune compiled
    assert f"{where}:19:8: critical_range.max 120 is not above normal_range.max 150" in err
    assert (tree / "queue-depth.yaml").read_bytes() == before


def test_unknown_spec_and_spec_without_a_normal_range(world: World, capsys: pytest.CaptureFixture[str]) -> None:
    code = main(["tune", "queue-dept", "--prometheus", world.url, "--specs", str(world.tree), "--last", "1h"])
    err = capsys.readouterr().err
    assert code == 2 and "no spec named 'queue-dept'; did you mean: queue-depth, queue-growth?" in err
    code = main(["tune", "no-range", "--prometheus", world.url, "--specs", str(world.tree), "--last", "1h"])
    err = capsys.readouterr().err
    assert code == 1 and re.match(r"\S*/specs/no-range\.yaml:\d+:\d+: no-range has no normal_range", err), err
    code = main(
        ["tune", "queue-depth", "--prometheus", world.url, "--specs", str(world.tree), "--last", "1h", "--pick", "p42"]
    )
    err = capsys.readouterr().err
    assert code == 2 and "--pick p42: no candidate named p42" in err


def test_garbage_server_exits_2_with_a_message(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    tree = live_data.write_tree(tmp_path / "specs", {"queue-depth": SPEC}, PROJECT)

    def garbage(handler: Any) -> None:
        if handler.path.startswith("/api/v1/status/buildinfo"):
            send(handler, {"status": "success", "data": {"version": "2.42.0"}})
        else:
            send(handler, b"\x1b[31mnot json{")

    with hostile(garbage, []) as url:
        code = main(["tune", "queue-depth", "--prometheus", url, "--specs", str(tree), "--last", "1h"])
    out, err = capsys.readouterr()
    assert code == 2 and out == ""
    assert err.startswith("slo-compiler: ") and len(err.strip().splitlines()) == 1 and "\x1b" not in err


def test_candidates_are_rendered_as_generate_renders_the_spec(world: World) -> None:
    """The replayed rules of the current values are the generated rule file, byte for byte."""
    from compiler.cli import _spec_compiler
    from compiler.model.links import rules_path
    from compiler.pipeline import render
    from compiler.plan import plan

    model, diagnostics = compile_specs(world.tree)
    assert model is not None and not diagnostics
    files = render(model, diagnostics)
    slo = next(slo for slo in model.slos if slo.name == "queue-depth")
    _, rendered = _spec_compiler(plan(model).model)(slo)
    assert rendered == files[rules_path(slo)]


def test_a_history_wider_than_the_budget_is_a_problem_not_a_crash(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """A server whose answer holds more series than the spec's budget (2,000): one problem per reading, exit 1."""
    tree = live_data.write_tree(tmp_path / "specs", {"queue-depth": SPEC}, PROJECT)
    now = int(time.time()) // 60 * 60
    wide = [{"metric": {"cluster": f"c{i}"}, "values": [[now - 60, "1"], [now, "1"]]} for i in range(2001)]

    def route(handler: Any) -> None:
        path = handler.path.split("?")[0]
        if path == "/api/v1/status/buildinfo":
            send(handler, {"status": "success", "data": {"version": "2.42.0"}})
        elif path == "/api/v1/query_range":
            send(handler, {"status": "success", "data": {"resultType": "matrix", "result": wide}})
        else:
            send(handler, {"status": "success", "data": {"resultType": "vector", "result": []}})

    with hostile(route, []) as url:
        args = ["tune", "queue-depth", "--prometheus", url, "--specs", str(tree), "--last", "10m"]
        code = main([*args, "--engine", "server"])  # the server evaluates the rules: its answer is too wide
    out, err = capsys.readouterr()
    assert code == 1, err
    assert "the history of slo:sli_value:gauge: returned 2001 series, more than the spec's series_budget of 2000" in err
    assert "only the current values are replayed" in out


def test_a_relative_bound_gets_factors_from_the_value_over_itself(
    world: World, capsys: pytest.CaptureFixture[str]
) -> None:
    span = ["--from", str(world.start), "--to", str(world.start + DAY), "--format", "json"]
    code = main(["tune", "queue-growth", "--prometheus", world.url, "--specs", str(world.tree), *span])
    out, err = capsys.readouterr()
    assert code == 0, err
    ratios = sorted(
        depth(m) / depth(m - 60) if m >= 60 else depth(m) / 30 for m in range(DAY // MINUTE + 1)
    )  # the hour before the window held 30
    row = knob(json.loads(out), "normal_range.relative.max_factor")
    picks = {c["pick"]: c for c in row["candidates"]}
    # the largest: 69 in the window's first hour over the 30 an hour before it
    assert ratios[-1] == pytest.approx(2.3) and picks["max"]["basis"] == pytest.approx(ratios[-1])
    assert picks["max"]["value"] == 2.8 and picks["max"]["fires"] == 0  # 2.3 x 1.2 = 2.76: never crossed
    assert picks["current"]["fires"] >= 1  # 1.9: crossed in the first hour and by the 120 spike
