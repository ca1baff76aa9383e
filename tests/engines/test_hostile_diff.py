"""``diff`` is never silently wrong: a base it cannot read is exit 2 with the reason, never "all added".

The git base is read from a real repository (symbolic links as git stores them), the behaviour
with the real promtool; each test is one defect class of issue 26's third sweep.
"""

from __future__ import annotations

import subprocess
from pathlib import Path

import pytest

from tests.conftest import RATIO_SLI_AND_OBJECTIVE, SLO_RELATIVE, RunCli, make_spec_tree

CHANGED = "threshold: error ratio > 1.44% -> error ratio > 7.2%"


def git(repo: Path, *args: str) -> None:
    subprocess.run(
        ["git", "-c", "user.name=t", "-c", "user.email=t@e", "-c", "core.symlinks=true", *args],
        cwd=repo,
        check=True,
        capture_output=True,
    )


def commit_then_lower_the_target(repo: Path) -> None:
    """Commit the tree as ``main``, then change the objective 99.9% -> 99.5% in the work tree."""
    git(repo, "init", "-q", "-b", "main")
    git(repo, "add", "-A")
    git(repo, "commit", "-q", "-m", "base")
    spec = repo / "specs" / SLO_RELATIVE
    spec.write_text(spec.read_text(encoding="utf-8").replace("target: 99.9%", "target: 99.5%"), encoding="utf-8")


def shared_owners(repo: Path, link_to: str) -> None:
    """Move ``specs/owners.yaml`` to ``shared/owners.yaml`` and link it back as ``link_to``."""
    (repo / "shared").mkdir()
    (repo / "specs" / "owners.yaml").rename(repo / "shared" / "owners.yaml")
    (repo / "specs" / "owners.yaml").symlink_to(link_to)


@pytest.mark.parametrize("absolute", [False, True], ids=["relative", "absolute"])
def test_symlinked_spec_files_in_the_git_base_are_followed(run_cli: RunCli, tmp_path: Path, absolute: bool) -> None:
    """owners.yaml linked from a shared folder: the base reads the linked file at the ref, so the 99.9% ->
    99.5% change is reviewed (was: an absolute link exited 70 with AbsoluteLinkError, a relative one
    reported the spec as added and exit 0)."""
    repo = tmp_path / "repo"
    make_spec_tree(repo / "specs")
    shared_owners(repo, str(repo / "shared" / "owners.yaml") if absolute else "../shared/owners.yaml")
    commit_then_lower_the_target(repo)
    code, out, err = run_cli(["diff", "--specs", "specs", "--base", "main", "--no-behaviour"], repo)
    assert (code, err) == (0, "")
    assert "1 changed; 0 unchanged" in out
    assert "objective: 99.9% over 30d -> 99.5% over 30d" in out
    assert CHANGED in out
    assert "added" not in out


def test_symlinked_spec_directory_in_the_git_base_is_followed(run_cli: RunCli, tmp_path: Path) -> None:
    """A directory of specs linked in from elsewhere in the repository is part of the base, as in generate."""
    repo = tmp_path / "repo"
    make_spec_tree(repo / "specs")
    (repo / "specs" / "network").rename(repo / "network-specs")
    (repo / "specs" / "network").symlink_to("../network-specs")
    commit_then_lower_the_target(repo)
    code, out, err = run_cli(["diff", "--specs", "specs", "--base", "main", "--no-behaviour"], repo)
    assert (code, err) == (0, "")
    assert "1 changed; 0 unchanged" in out and CHANGED in out


@pytest.mark.parametrize(
    ("link_to", "reason"),
    [
        ("/nonexistent-slo-compiler-test/owners.yaml", "links to /nonexistent-slo-compiler-test/owners.yaml, outside"),
        ("../../outside/owners.yaml", "links outside the repository at main"),
        ("../shared/missing.yaml", "links to shared/missing.yaml, which does not exist at main"),
        ("owners.yaml", "links through more than 40 symbolic links in a row"),
    ],
    ids=["absolute-outside", "relative-outside", "dangling", "loop"],
)
def test_unresolvable_symlink_in_the_git_base_is_a_usage_error(
    run_cli: RunCli, tmp_path: Path, link_to: str, reason: str
) -> None:
    """A base link git cannot resolve at the ref is exit 2 naming the link and why, never an empty base."""
    repo = tmp_path / "repo"
    make_spec_tree(repo / "specs")
    (repo / "shared").mkdir()
    (repo / "specs" / "owners.yaml").rename(repo / "shared" / "owners.yaml")
    (repo / "specs" / "owners.yaml").symlink_to(link_to)
    git(repo, "init", "-q", "-b", "main")
    git(repo, "add", "-A")
    git(repo, "commit", "-q", "-m", "base")
    (repo / "specs" / "owners.yaml").unlink()
    (repo / "specs" / "owners.yaml").symlink_to("../shared/owners.yaml")
    code, out, err = run_cli(["diff", "--specs", "specs", "--base", "main", "--no-behaviour"], repo)
    assert (code, out) == (2, "")
    assert err.startswith("slo-compiler: specs/owners.yaml ") and reason in err, err
    assert len(err.strip().splitlines()) == 1


def test_missing_base_dir_is_a_usage_error(run_cli: RunCli, tmp_path: Path) -> None:
    """--base-dir that does not exist, is a file, or holds a broken link: exit 2, not everything "added"."""
    make_spec_tree(tmp_path / "specs")
    (tmp_path / "a-file").write_text("x", encoding="utf-8")
    broken = make_spec_tree(tmp_path / "broken")
    (broken / "gone.yaml").symlink_to("nowhere.yaml")
    for base, message in (
        ("no-such", "slo-compiler: --base-dir no-such does not exist; give the directory that holds the base specs"),
        ("a-file", "slo-compiler: --base-dir a-file is not a directory; give the directory that holds the base specs"),
        ("broken", "slo-compiler: cannot read the base (broken): broken/gone.yaml: broken symbolic link to nowhere"),
    ):
        code, out, err = run_cli(["diff", "--specs", "specs", "--base-dir", base, "--no-behaviour"], tmp_path)
        assert (code, out) == (2, ""), err
        assert err.startswith(message), err


def test_a_base_without_the_spec_directory_shows_every_spec_as_added(run_cli: RunCli, tmp_path: Path) -> None:
    """The specs did not exist at the base revision: that is a real "everything is new", exit 0."""
    repo = tmp_path / "repo"
    repo.mkdir()
    (repo / "README").write_text("x", encoding="utf-8")
    git(repo, "init", "-q", "-b", "main")
    git(repo, "add", "-A")
    git(repo, "commit", "-q", "-m", "before the specs")
    make_spec_tree(repo / "specs")
    code, out, err = run_cli(["diff", "--specs", "specs", "--base", "main", "--no-behaviour"], repo)
    assert (code, err) == (0, "")
    assert "1 added; 0 unchanged" in out


GAUGE_WITH_A_SCENARIO = """\
sli:
  gauge:
    expr: 'max by (cluster) (coredns_forward_sessions)'
    aggregate: max
unit: count
normal_range:
  max: 100
critical_range:
  max: {max}
  for: 5m
scenarios:
  - name: session-storm
    description: Sessions jump to 500 for half an hour.
    shape:
      - {{for: 20m, value: 10}}
      - {{for: 30m, value: 500}}
    expect:
      - {{alert: AboveCriticalRange, fires_by: 30m}}
"""


def test_label_value_with_a_closing_brace_keeps_broken_expectations(run_cli: RunCli, tmp_path: Path) -> None:
    """A slice value `a}b` in promtool's answers: the alert's timings are still read, so the scenario whose
    expectation the change breaks is flagged (was: the lines vanished with no note)."""
    for name, bound in (("base", "300"), ("head", "600")):
        spec = make_spec_tree(tmp_path / name / "specs") / SLO_RELATIVE
        gauge = GAUGE_WITH_A_SCENARIO.format(max=bound)
        text = spec.read_text(encoding="utf-8").replace(RATIO_SLI_AND_OBJECTIVE, gauge)
        spec.write_text(
            text.replace("selector: '{job=\"kube-dns\"}'", 'selector: \'{job="kube-dns", cluster=~"a}b|c}d"}\''),
            encoding="utf-8",
        )
    code, out, err = run_cli(["diff", "--specs", "head/specs", "--base-dir", "base/specs"], tmp_path)
    assert code == 0, err
    flagged = [line.strip() for line in out.splitlines() if "NOW FAILS ITS EXPECTATION" in line]
    assert any("scenario session-storm" in line and "AboveCriticalRange: fires" in line for line in flagged), out
    # Only the alert whose timing moved, named by the scenario alone (not its description); the normal-range
    # ticket fires as before and is not listed.
    assert len(flagged) == 1, flagged
    assert flagged[0].startswith("scenario session-storm: DnsErrorsAboveCriticalRange: fires "), flagged
