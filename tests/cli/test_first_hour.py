"""The first hour of a new user (issue 28 items 1 and 2): ``init``, ``generate``, ``test``.

From an empty directory, ``slo-compiler init`` writes a starter that validates and generates at
once, and ``slo-compiler test`` runs its proof (promtool and amtool, the real binaries).
"""

from __future__ import annotations

import os
from pathlib import Path

import pytest

from compiler import starter
from tests.conftest import RunCli


def test_init_writes_a_starter_that_validates_without_problems_or_warnings(run_cli: RunCli, tmp_path: Path) -> None:
    code, out, err = run_cli(["init"], tmp_path)
    assert code == 0, err
    for relative, _ in starter.FILES:
        assert (tmp_path / relative).is_file(), relative
    assert "/.generated.*-*/" in (tmp_path / ".gitignore").read_text(encoding="utf-8").splitlines()
    assert "slo-compiler generate && slo-compiler test" in out
    code, out, err = run_cli(["validate"], tmp_path)
    assert code == 0, err
    assert err == ""  # no notes, no warnings (heartbeat and foreign alerts are configured)
    assert "3 spec(s) valid" in out
    code, out, err = run_cli(["generate"], tmp_path)
    assert code == 0, err
    assert (tmp_path / "generated" / "alertmanager" / "routing-tests.yaml").is_file()
    assert len(list((tmp_path / "generated" / "prometheus" / "tests").glob("*.test.yaml"))) == 3


def test_init_into_a_new_directory_names_it_in_the_next_steps(run_cli: RunCli, tmp_path: Path) -> None:
    code, out, err = run_cli(["init", "repo"], tmp_path)
    assert code == 0, err
    assert (tmp_path / "repo" / "slo_specs" / "owners.yaml").is_file()
    assert "cd repo && slo-compiler generate" in out


def test_init_refuses_to_overwrite_and_names_every_existing_file(run_cli: RunCli, tmp_path: Path) -> None:
    (tmp_path / "slo_specs").mkdir()
    (tmp_path / "slo_specs" / "owners.yaml").write_text("mine\n", encoding="utf-8")
    (tmp_path / ".pre-commit-config.yaml").write_text("repos: []\n", encoding="utf-8")
    code, _, err = run_cli(["init"], tmp_path)
    assert code == 1
    assert "slo_specs/owners.yaml exists; not overwritten (run again with --force)" in err
    assert ".pre-commit-config.yaml exists; not overwritten" in err
    assert "init wrote nothing" in err
    assert (tmp_path / "slo_specs" / "owners.yaml").read_text(encoding="utf-8") == "mine\n"
    assert not (tmp_path / "slo_specs" / "project.yaml").exists()  # all or nothing
    code, _, err = run_cli(["init", "--force"], tmp_path)
    assert code == 0, err
    assert (tmp_path / "slo_specs" / "owners.yaml").read_bytes() == starter.packaged("owners.yaml")


def test_init_appends_to_an_existing_gitignore_once(run_cli: RunCli, tmp_path: Path) -> None:
    (tmp_path / ".gitignore").write_text("/venv", encoding="utf-8")
    assert run_cli(["init"], tmp_path)[0] == 0
    assert run_cli(["init", "--force"], tmp_path)[0] == 0
    lines = (tmp_path / ".gitignore").read_text(encoding="utf-8").splitlines()
    assert lines[0] == "/venv"
    assert lines.count("/.generated.*-*/") == 1


def test_init_refuses_symlinks_and_writes_nothing_outside_dir(run_cli: RunCli, tmp_path: Path) -> None:
    outside = tmp_path / "outside"
    outside.mkdir()
    repo = tmp_path / "repo"
    repo.mkdir()
    (repo / "slo_specs").symlink_to(outside)
    (repo / ".gitignore").symlink_to(outside / "ignored")
    code, _, err = run_cli(["init", "--force", "repo"], tmp_path)
    assert code == 1
    assert "slo_specs is a symbolic link; init writes only regular files inside repo" in err
    assert ".gitignore is a symbolic link" in err
    assert list(outside.iterdir()) == []
    assert not (repo / ".github").exists()


def test_init_into_a_file_is_a_usage_error(run_cli: RunCli, tmp_path: Path) -> None:
    (tmp_path / "afile").write_text("", encoding="utf-8")
    code, _, err = run_cli(["init", "afile"], tmp_path)
    assert code == 2
    assert "afile is not a directory" in err


@pytest.mark.skipif(os.geteuid() == 0, reason="root writes through any permission")
def test_init_into_an_unwritable_directory_is_one_line(run_cli: RunCli, tmp_path: Path) -> None:
    locked = tmp_path / "locked"
    locked.mkdir(mode=0o500)
    code, _, err = run_cli(["init", "locked"], tmp_path)
    assert code == 2
    assert "cannot write" in err and "Traceback" not in err
