"""``slo-compiler diff``: a spec change reviewed by what it does.

Each test makes one known change to a copy of the fixture specs and checks the review
names it the way a reviewer needs: a threshold, a window policy, an owner, a new spec, a
removed alert, a renamed spec; the behaviour table is measured with the real promtool,
and the git base is read from a real repository.
"""

from __future__ import annotations

import shutil
import subprocess
from pathlib import Path

import pytest

from tests.conftest import RunCli
from tests.support import FIXTURE_SPECS


@pytest.fixture
def trees(tmp_path: Path) -> tuple[Path, Path]:
    """(base, head) copies of the fixture specs, both named ``specs`` so sources compare equal."""
    base, head = tmp_path / "base" / "specs", tmp_path / "head" / "specs"
    shutil.copytree(FIXTURE_SPECS, base)
    shutil.copytree(FIXTURE_SPECS, head)
    return base, head


def edit(path: Path, old: str, new: str) -> None:
    text = path.read_text(encoding="utf-8")
    assert text.count(old) == 1, f"{old!r} is not unique in {path}"
    path.write_text(text.replace(old, new), encoding="utf-8")


def review(run_cli: RunCli, base: Path, head: Path, *extra: str) -> str:
    code, out, err = run_cli(["diff", "--specs", head, "--base-dir", base, *extra], head.parent)
    assert code == 0, err
    return out


def test_unchanged_specs_give_an_empty_review(run_cli: RunCli, trees: tuple[Path, Path]) -> None:
    out = review(run_cli, *trees, "--no-behaviour")
    assert "no spec changed; 7 unchanged" in out


def test_a_threshold_change_is_one_line(run_cli: RunCli, trees: tuple[Path, Path]) -> None:
    base, head = trees
    edit(head / "ratio.yaml", "normal_range:\n  max: 0.01", "normal_range:\n  max: 0.02")
    out = review(run_cli, base, head, "--no-behaviour")
    assert "fixture-ratio-bad (changed)" in out
    assert "alert changed: FixtureRatioBadAboveNormalRange" in out
    assert "threshold: value > 1% -> value > 2%" in out
    assert "1 changed; 6 unchanged" in out


def test_a_window_policy_change_lists_the_pairs_it_removes(run_cli: RunCli, trees: tuple[Path, Path]) -> None:
    base, head = trees
    edit(
        head / "ratio.yaml",
        "  target: 99.9%\n  period: 30d\n",
        "  target: 99.9%\n  period: 30d\n  burn_alerts:\n"
        "    - {severity: page, long: 1h, short: 5m, factor: 14.4, for: 5m}\n",
    )
    out = review(run_cli, base, head, "--no-behaviour")
    assert "alert changed: FixtureRatioBadErrorBudgetBurn 1h/5m" in out
    assert "for: 2m -> 5m" in out
    for pair in ("6h/30m", "1d/2h", "3d/6h"):
        assert f"alert removed: FixtureRatioBadErrorBudgetBurn {pair}" in out


def test_an_owner_change_shows_the_receivers_it_moves_to(run_cli: RunCli, trees: tuple[Path, Path]) -> None:
    base, head = trees
    edit(
        head / "gauge.yaml",
        "name: fixture-gauge\nfamily: watch-list-volume\nowner: team-a",
        "name: fixture-gauge\nfamily: watch-list-volume\nowner: team-b",
    )
    out = review(run_cli, base, head, "--no-behaviour")
    assert "owner: team-a -> team-b" in out
    assert "receivers: team-a-page -> team-b-page" in out
    assert "receivers: team-a-ticket -> team-b-ticket" in out


def test_a_new_spec_and_a_removed_alert(run_cli: RunCli, trees: tuple[Path, Path]) -> None:
    base, head = trees
    text = (head / "ratio.yaml").read_text(encoding="utf-8").split("---")[0]
    (head / "extra.yaml").write_text(text.replace("name: fixture-ratio-good", "name: fixture-new"), encoding="utf-8")
    edit(head / "ratio.yaml", "critical_range:\n  max: 0.03\n  for: 5m\n", "")
    out = review(run_cli, base, head, "--no-behaviour")
    assert "fixture-new (added)" in out
    assert "owner: team-a" in out
    assert "alert added: FixtureNewErrorBudgetBurn 1h/5m" in out
    assert "alert removed: FixtureRatioBadAboveCriticalRange" in out
    assert "1 changed, 1 added" in out


def test_a_renamed_spec_is_a_rename_not_a_removal(run_cli: RunCli, trees: tuple[Path, Path]) -> None:
    base, head = trees
    edit(head / "gauge.yaml", "name: fixture-gauge\n", "name: fixture-watchers\n")
    out = review(run_cli, base, head, "--no-behaviour")
    assert "fixture-gauge -> fixture-watchers (renamed)" in out
    assert "alert renamed: FixtureGaugeAboveNormalRange -> FixtureWatchersAboveNormalRange" in out
    assert "(removed)" not in out


def test_behaviour_shows_when_an_alert_now_fires(run_cli: RunCli, trees: tuple[Path, Path]) -> None:
    """A longer `for` moves the first-fire minute on every case that crosses the band; promtool measures it."""
    base, head = trees
    edit(head / "ratio.yaml", "critical_range:\n  max: 0.03\n  for: 5m\n", "critical_range:\n  max: 0.03\n  for: 20m\n")
    out = review(run_cli, base, head, "--format", "markdown")
    assert "| case | alert | before | after |" in out
    rows = [
        line for line in out.splitlines() if line.startswith("| ") and "FixtureRatioBadAboveCriticalRange |" in line
    ]
    assert rows, out
    assert any("fires 6m" in row and "fires 21m" in row for row in rows), rows


def test_the_default_base_is_the_merge_base_with_main(run_cli: RunCli, tmp_path: Path) -> None:
    repo = tmp_path / "repo"
    shutil.copytree(FIXTURE_SPECS, repo / "specs")

    def git(*args: str) -> None:
        subprocess.run(
            ["git", "-c", "user.name=t", "-c", "user.email=t@e", *args], cwd=repo, check=True, capture_output=True
        )

    git("init", "-q", "-b", "main")
    git("add", "specs")
    git("commit", "-q", "-m", "base")
    git("checkout", "-q", "-b", "change")
    edit(repo / "specs" / "ratio.yaml", "normal_range:\n  max: 0.01", "normal_range:\n  max: 0.02")
    code, out, err = run_cli(["diff", "--specs", "specs", "--no-behaviour"], repo)
    assert code == 0, err
    assert out.startswith("slo-compiler diff against merge base ")
    assert "threshold: value > 1% -> value > 2%" in out
    code, _, err = run_cli(["diff", "--specs", "specs", "--base", "no-such-ref"], repo)
    assert code == 2
    assert err.strip() == "slo-compiler: unknown revision 'no-such-ref'"

