"""``slo-compiler backtest --last 1h`` against a young Prometheus: the real Prometheus 2.42 holds only the
last four minutes of the window (issue 29). The report says how much of the window has data, reports no
firing and no weekly count outside it (the no-data alerts were firing from the first step of the week-long
warm-up before), clips "firing for" to the data, and lists the no-data alerts as "no history" over the part
the server never covered. About 10 s."""

from __future__ import annotations

import json
import time
from pathlib import Path
from typing import Any

import pytest

from compiler.cli import main
from compiler.live.summary import render_markdown, render_table
from tests import live_data, servers

HELD_S = 240  # the server holds the last 4 minutes of the hour asked
SPECS = {
    "queue-depth": live_data.BACKTEST_SPECS["queue-depth"].replace("no_data: {for: 4s}", "no_data: {for: 2m}"),
    # a day's budget: the warm-up (a day and an hour) reaches far before the data, at a test's cost
    "request-errors": live_data.BACKTEST_SPECS["request-errors"].replace("period: 7d", "period: 1d"),
}
PROJECT = live_data.BACKTEST_PROJECT.replace("evaluation_interval: 2s", "evaluation_interval: 10s")


def run(capsys: pytest.CaptureFixture[str], tmp_path: Path) -> tuple[dict[str, Any], dict[str, str], int, int]:
    """One ``--last 1h`` backtest against a server holding the last 4 minutes: its JSON, the same summary as
    a table and as Markdown (what ``--format`` prints), when the data begins (ms), and the most the window can
    hold of it (ms): the backtest's "now" comes seconds after the data was written, on a loaded machine more."""
    now = int(time.time())
    begins = now - HELD_S
    # west is in trouble from the second minute of the data: its queue pages and its errors burn; the server
    # scrapes (``up``) since its data begins
    data = live_data.backtest_data(begins, now + 120, begins + 60, begins + 150)
    up = "".join(f'up{{job="prometheus"}} 1 {t}\n' for t in range(begins, now + 121, 15))
    blocks = servers.backfill(data.replace("# EOF\n", f"# TYPE up gauge\n{up}# EOF\n"), tmp_path)
    tree = live_data.write_tree(tmp_path / "specs", SPECS, PROJECT)
    with servers.prometheus(tmp_path, [], None, blocks) as prom:
        args = ["backtest", "--prometheus", prom.url, "--specs", str(tree), "--last", "1h", "--format", "json"]
        assert main(args) == 0
    held_ms = (int(time.time()) + 1 - begins) * 1000
    report = json.loads(capsys.readouterr().out)
    return report, {"table": render_table(report), "markdown": render_markdown(report)}, begins * 1000, held_ms


def test_backtest_on_short_history_reports_nothing_outside_the_data(
    capsys: pytest.CaptureFixture[str], tmp_path: Path
) -> None:
    report, texts, begins_ms, held_ms = run(capsys, tmp_path)
    hour = 3_600_000
    # how much of the window has data, per spec, for people and in raw milliseconds
    for coverage in report["coverage"]:
        assert coverage["asked_ms"] == hour
        assert begins_ms <= coverage["first_ms"] <= begins_ms + 10_000  # within one evaluation interval
        assert HELD_S * 1000 - 10_000 <= coverage["covered_ms"] <= held_ms
        assert coverage["missing_ms"] == hour - coverage["covered_ms"]
        assert "of the 1h asked" in coverage["text"] and "without data)" in coverage["text"]
        assert coverage["text"] in texts["table"] and coverage["text"] in texts["markdown"]
    assert {c["spec"] for c in report["coverage"]} == set(SPECS)
    # every firing inside the data: none before it began, "firing for" no longer than the data
    fired = {i["alert"] for i in report["intervals"]}
    assert {"QueueDepthAboveCriticalRange", "RequestErrorsErrorBudgetBurn"} <= fired
    for interval in report["intervals"]:
        assert interval["fired_ms"] >= begins_ms, interval
        assert interval["firing_for_ms"] <= held_ms, interval
        assert interval["resolved_ms"] is None or interval["resolved_ms"] > interval["fired_ms"]
    # the no-data alerts fired from the warm-up's first step before: over no data they are not judged
    assert not fired & {"QueueDepthNoData", "RequestErrorsNoData"}
    unjudged = {n["alert"]: n["without_history_ms"] for n in report["no_history"]}
    assert set(unjudged) == {"QueueDepthNoData", "RequestErrorsNoData"}
    assert all(hour - held_ms <= ms <= hour - HELD_S * 1000 + 10_000 for ms in unjudged.values())
    # a count only for a week with data, which says how little of the week that is
    assert report["per_week"] and all(0 < w["data_ms"] <= held_ms for w in report["per_week"])
    assert all(w["data"].endswith("of 7d (1h asked)") for w in report["per_week"])
    assert "No history" in texts["table"] and "without data" in texts["markdown"]
