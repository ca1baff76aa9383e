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

from compiler.plan import plan
from compiler.plan.quality import Quality, burn_quality, figure_text
from compiler.text import human
from tests.conftest import RATIO_SLI_AND_OBJECTIVE, SLO_RELATIVE, RunCli, make_spec_tree
from tests.support import FIXTURE_SPECS, compile_tree


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


def test_a_static_bound_next_to_a_relative_one_is_reviewed(run_cli: RunCli, trees: tuple[Path, Path]) -> None:
    """fixture-gauge's normal band has a max and a relative bound: moving the max is a change (was: the
    threshold fact showed only the relative bound, so the spec counted as unchanged)."""
    base, head = trees
    edit(head / "gauge.yaml", "  min: 1\n  max: 200000\n", "  min: 1\n  max: 150000\n")
    out = review(run_cli, base, head, "--no-behaviour")
    assert "alert changed: FixtureGaugeAboveNormalRange" in out
    assert "threshold: value > 200,000 or relative: offset 1d" in out
    assert "-> value > 150,000 or relative: offset 1d" in out
    assert "FixtureGaugeBelowNormalRange" not in out


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


def behaviour_section(out: str) -> list[str]:
    """The lines of the text review's behaviour sections (one per changed alert or broken scenario)."""
    lines, inside = [], False
    for line in out.splitlines():
        if line == "  behaviour:":
            inside = True
        elif inside and line.startswith("      "):
            lines.append(line.strip())
        else:
            inside = False
    return lines


def test_behaviour_shows_when_an_alert_now_fires(run_cli: RunCli, trees: tuple[Path, Path]) -> None:
    """A longer `for` moves the first fire on the band's own generated case; promtool measures it."""
    base, head = trees
    edit(head / "ratio.yaml", "critical_range:\n  max: 0.03\n  for: 5m\n", "critical_range:\n  max: 0.03\n  for: 20m\n")
    out = review(run_cli, base, head, "--format", "markdown")
    assert "| alert | before | after |" in out
    rows = [line for line in out.splitlines() if line.startswith("| FixtureRatioBadAboveCriticalRange |")]
    assert len(rows) == 1, out
    assert "first fires 5m after the value leaves the band |" in rows[0]
    assert rows[0].endswith("first fires 20m after the value leaves the band |")
    text = review(run_cli, base, head)
    assert behaviour_section(text) == [
        "FixtureRatioBadAboveCriticalRange: fires above 3% (unchanged); "
        "first fires 20m (was 5m) after the value leaves the band"
    ]


GAUGE = """\
sli:
  gauge:
    expr: 'max by (cluster) (coredns_forward_sessions)'
    aggregate: max
unit: bytes
normal_range:
  max: 500
critical_range:
  max: 5000
  for: 5m
"""


def git_repo_with_a_gauge(repo: Path) -> Path:
    """A repository whose ``main`` holds one gauge spec (normal max 500 bytes); returns the spec's path."""
    spec = make_spec_tree(repo / "specs") / SLO_RELATIVE
    spec.write_text(spec.read_text(encoding="utf-8").replace(RATIO_SLI_AND_OBJECTIVE, GAUGE), encoding="utf-8")
    for args in (("init", "-q", "-b", "main"), ("add", "-A"), ("commit", "-q", "-m", "base")):
        subprocess.run(["git", "-c", "user.name=t", "-c", "user.email=t@e", *args], cwd=repo, check=True)
    return spec


def test_a_normal_range_change_shows_its_bound_and_first_fire(run_cli: RunCli, tmp_path: Path) -> None:
    """500 -> 400: one behaviour line with the bound in the spec's unit and the first fire on the range's own
    case, measured with promtool (was: no behaviour line at all, since no case crossed the old bound)."""
    repo = tmp_path / "repo"
    spec = git_repo_with_a_gauge(repo)
    spec.write_text(spec.read_text(encoding="utf-8").replace("max: 500\n", "max: 400\n"), encoding="utf-8")
    code, out, err = run_cli(["diff", "--specs", "specs", "--base", "main"], repo)
    assert (code, err) == (0, ""), err
    above = f"fires above {human.value('bytes', 400)} (was above {human.value('bytes', 500)})"
    assert behaviour_section(out) == [
        f"DnsErrorsAboveNormalRange: {above}; first fires 10m after the value leaves the band (unchanged)"
    ]


POLICY = """\
  burn_alerts:
    - {severity: page, long: 1h, short: 5m, factor: 13.44, for: 10m}
    - {severity: page, long: 6h, short: 30m, factor: 5.6, for: 15m}
"""


def test_a_burn_policy_change_shows_detection_and_budget_before_and_after(
    run_cli: RunCli, trees: tuple[Path, Path]
) -> None:
    """The 1h/5m pair waits 10m instead of 2m: its line shows the runbooks' and the catalog's figures
    (``plan.quality``) before -> after. The 6h/30m pair the policy keeps as it was, the pairs it drops and an
    owner change elsewhere get no line (was: a line per generated case whose timing moved)."""
    base, head = trees
    edit(head / "ratio.yaml", "  target: 99.9%\n  period: 28d\n", "  target: 99.9%\n  period: 28d\n" + POLICY)
    edit(
        head / "gauge.yaml",
        "name: fixture-gauge\nfamily: watch-list-volume\nowner: team-a",
        "name: fixture-gauge\nfamily: watch-list-volume\nowner: team-b",
    )
    out = review(run_cli, base, head)
    assert "alert changed: FixtureRatioGoodErrorBudgetBurn 6h/30m" not in out
    was, now = one_hour_pair(base), one_hour_pair(head)
    assert was.budget_spent_full is not None and now.budget_spent_full is not None
    assert now.full_outage_ms != was.full_outage_ms
    assert behaviour_section(out) == [
        f"FixtureRatioGoodErrorBudgetBurn 1h/5m: a full outage fires in {figure_text(now.full_outage_ms)} "
        f"(was {figure_text(was.full_outage_ms)}); spends {human.share(now.budget_spent_full)} "
        f"(was {human.share(was.budget_spent_full)}) of the 28d budget before it fires; twice the threshold fires in "
        f"{figure_text(now.twice_threshold_ms)} (was {figure_text(was.twice_threshold_ms)})"
    ]


def one_hour_pair(tree: Path) -> Quality:
    """The alert-quality figures of fixture-ratio-good's 1h/5m pair, as the runbooks and the catalog show them."""
    spec = plan(compile_tree(tree)).of("fixture-ratio-good")
    alert = next(a for a in spec.alerts if a.burn is not None and a.burn.long_ms == 3_600_000)
    figures = burn_quality(spec.slo, alert)
    assert figures is not None
    return figures


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
