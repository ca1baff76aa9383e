"""The first hour of a new user (issue 28 items 1 and 2): ``init``, ``generate``, ``test``.

From an empty directory, ``slo-compiler init`` writes a starter that validates and generates at
once, and ``slo-compiler test`` runs its proof (promtool and amtool, the real binaries).
"""

from __future__ import annotations

import os
import shutil
from pathlib import Path

import pytest
import yaml

from compiler import starter, testrun
from tests.conftest import RunCli


def test_init_writes_a_starter_that_validates_with_one_warning_its_placeholder_links(
    run_cli: RunCli, tmp_path: Path
) -> None:
    code, out, err = run_cli(["init"], tmp_path)
    assert code == 0, err
    for relative, _ in starter.FILES:
        assert (tmp_path / relative).is_file(), relative
    assert "/.generated.*-*/" in (tmp_path / ".gitignore").read_text(encoding="utf-8").splitlines()
    assert "slo-compiler generate && slo-compiler test" in out
    code, out, err = run_cli(["validate"], tmp_path)
    assert code == 0, err
    # No notes and no other warning (heartbeat and foreign alerts are configured); the links its
    # project.yaml marks REPLACE are example.com placeholders until the user sets them.
    assert err.startswith("slo_specs/project.yaml:") and err.count("\n") == 1, err
    assert "warning: placeholder links: runbook_base_url (the runbook link in every alert) and grafana_base_url" in err
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


def test_first_hour_from_an_empty_directory_init_generate_test(run_cli: RunCli, tmp_path: Path) -> None:
    """The quick start (docs/getting-started.md): init, generate, test, each exit 0; promtool and amtool run."""
    assert run_cli(["init"], tmp_path)[0] == 0
    code, out, err = run_cli(["generate"], tmp_path)
    assert code == 0, err
    code, out, err = run_cli(["test"], tmp_path)
    assert code == 0, out + err
    cases = yaml.safe_load((tmp_path / "generated" / testrun.ROUTING_TESTS).read_text(encoding="utf-8"))
    assert out.endswith(f"slo-compiler: 4 promtool test file(s) passed, {len(cases)} routing case(s) passed\n")


def test_test_names_the_failing_case_of_a_hand_broken_output_and_says_it_is_stale(
    run_cli: RunCli, tmp_path: Path
) -> None:
    assert run_cli(["init"], tmp_path)[0] == 0
    assert run_cli(["generate"], tmp_path)[0] == 0
    tests = tmp_path / "generated" / "prometheus" / "tests"
    for other in ("apiserver-read-latency", "coredns-servfail"):  # only the broken file runs: a faster test
        (tests / f"{other}.test.yaml").unlink()
    broken = tests / "apiserver-watchers.test.yaml"
    broken.write_text(
        broken.read_text(encoding="utf-8").replace('alertstate="firing", cluster="cluster-a"', 'alertstate="firing"'),
        encoding="utf-8",
    )
    routing = tmp_path / "generated" / testrun.ROUTING_TESTS
    routing.write_text(
        routing.read_text(encoding="utf-8").replace("  - platform-page\n", "  - platform-ticket\n", 1), encoding="utf-8"
    )
    code, out, err = run_cli(["test"], tmp_path)
    assert code == 1
    assert "generated is stale (not what the specs generate); testing it as it is" in err
    assert (
        "generated/prometheus/tests/apiserver-watchers.test.yaml: promtool test failed: "
        "'ApiserverWatchersAboveNormalRange: 22000 beyond the max 20000 is pending, fires after 30m, "
        "and resolves when the value returns'\n"
    ) in err
    assert (
        "generated/alertmanager/routing-tests.yaml: routing case 1 (alertname=ApiserverReadLatencyErrorBudgetBurn, "
        "severity=page, team=platform): expected platform-ticket, got platform-page\n"
    ) in err
    assert "1 promtool test file(s) passed" in out and ", 2 failed; the output is stale" in out
    code, _, err = run_cli(["check"], tmp_path)
    assert code == 1
    assert "out of date: prometheus/tests/apiserver-watchers.test.yaml" in err


def test_test_without_promtool_or_amtool_is_a_usage_error_with_the_install_hint(
    run_cli: RunCli, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    assert run_cli(["init"], tmp_path)[0] == 0
    assert run_cli(["generate"], tmp_path)[0] == 0
    promtool = shutil.which("promtool")
    assert promtool is not None
    empty = tmp_path / "bin"
    empty.mkdir()
    monkeypatch.setenv("PATH", str(empty))
    code, _, err = run_cli(["test"], tmp_path)
    assert code == 2
    assert "slo-compiler: promtool not found: install Prometheus's promtool (Debian/Ubuntu: apt-get install" in err
    (empty / "promtool").symlink_to(promtool)
    code, _, err = run_cli(["test"], tmp_path)
    assert code == 2
    assert "slo-compiler: amtool not found: install Alertmanager's amtool" in err
