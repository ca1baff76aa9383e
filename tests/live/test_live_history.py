"""``slo-compiler backtest`` over history only, the way a team runs it before a merge: a Prometheus
that holds backfilled data and none of the spec's rules, the range given with ``--from/--to``.
The rule group runs every second over three hours, so the server engine's replay needs several range queries
(10,000 steps and 2,000,000 points each at most) and its state crosses their boundaries: each alert
must fire and resolve exactly when Prometheus 2.42's rules would (``for`` 5m, ``keep_firing_for``
5m, a page without ``for``), once. About 10 s."""

from __future__ import annotations

import json
import time
from pathlib import Path

import pytest

from compiler.cli import main
from tests import live_data, servers

SPEC = {
    "queue-depth": live_data.BACKTEST_SPECS["queue-depth"]
    .replace("for: 6s, keep_firing_for: 6s", "for: 5m, keep_firing_for: 5m")
    .replace("no_data: {for: 4s}", "no_data: {for: 10m}")
}
PROJECT = live_data.BACKTEST_PROJECT.replace("evaluation_interval: 2s", "evaluation_interval: 1s")


def test_a_replay_over_history_crosses_query_chunks_and_fires_on_time(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    end = int(time.time()) // 60 * 60 - 3600
    start = end - 3 * 3600
    incident, calm = start + 9_900, start + 10_500
    lines = []
    for t in range(start - 600, end + 1, 15):
        for cluster in ("west", "east"):
            depth = 500 if cluster == "west" and incident <= t < calm else 10
            lines.append(f'work_queue_depth{{cluster="{cluster}"}} {depth} {t}')
    blocks = servers.backfill("\n".join(lines) + "\n# EOF\n", tmp_path)
    tree = live_data.write_tree(tmp_path / "specs", SPEC, PROJECT)
    with servers.prometheus(tmp_path, [], None, blocks) as prom:
        span = ["--from", str(start), "--to", str(end), "--format", "json"]
        code = main(["backtest", "--prometheus", prom.url, "--specs", str(tree), *span, "--engine", "server"])
        report = json.loads(capsys.readouterr().out)
        assert main(["backtest", "--prometheus", prom.url, "--specs", str(tree), *span]) == 0
        local = json.loads(capsys.readouterr().out)
    assert code == 0, report["problems"]
    # the local engine (the default) fires the same, in fewer requests: the raw series read once
    assert local["intervals"] == report["intervals"] and local["problems"] == []
    assert local["queries"] < report["queries"]
    # buildinfo; the raw rule's width counted at the first and the last step (its budget allows a wide
    # rule: 2 series, so it is held); then the rule in two chunks: the first sized from the spec's
    # series budget (2,000 series x 1,000 steps = the 2,000,000-point cap), the rest (9,801 steps)
    # from the 2 series it found (up to 10,000 steps, the step cap); and the history the server holds: the
    # spec's series counted at every step (one series: two chunks of at most 10,000 steps) and ``up`` every 5m.
    assert report["queries"] == 8
    assert report["coverage"][0]["text"] == "data for the whole 3h asked"
    fired = {(i["alert"], i["labels"]["cluster"]): i for i in report["intervals"]}
    assert set(fired) == {("QueueDepthAboveCriticalRange", "west"), ("QueueDepthAboveNormalRange", "west")}
    page = fired[("QueueDepthAboveCriticalRange", "west")]
    assert (page["fired_ms"], page["resolved_ms"]) == (incident * 1000, calm * 1000)  # no for, no hold
    ticket = fired[("QueueDepthAboveNormalRange", "west")]
    assert ticket["fired_ms"] == (incident + 300) * 1000  # for 5m
    assert ticket["resolved_ms"] == (calm + 300) * 1000  # held 5m by keep_firing_for
    assert ticket["time_to_fire"] == "5m" and ticket["condition_began"] == page["pending_since"]
    assert [n["alert"] for n in report["never_fired"]] == ["QueueDepthNoData"]
