"""Issue 28 items 7 and 8: links left at example.com placeholders are a warning, said once, where set.

Without project.yaml every alert's runbook link is ``https://runbooks.example.com/...`` and every
runbook's dashboard link ``https://grafana.example.com/...``; a project.yaml copied from an example
keeps them. ``validate`` and ``generate`` warn once (exit 0), at the first placeholder value in
project.yaml (at the specs folder when there is no project.yaml), naming each setting that is a
placeholder and what it sets. ``example_links: true`` says the links are examples on purpose.
"""

from __future__ import annotations

from pathlib import Path

import pytest

from compiler.source.registry import is_placeholder
from tests.conftest import PROJECT_YAML, RunCli

EXAMPLES_ON_PURPOSE = "example_links: true\n"
HEADER = "warning: placeholder links: "
RUNBOOK = "runbook_base_url (the runbook link in every alert)"
DASHBOARD = "grafana_base_url (the dashboard links in every runbook)"


def _warnings(stderr: str) -> list[str]:
    return [line for line in stderr.splitlines() if "placeholder" in line]


def _project(spec_tree: Path, text: str) -> None:
    (spec_tree / "project.yaml").write_text(text, encoding="utf-8")


def test_default_and_example_links_warn_once_at_the_first_placeholder_value(
    run_cli: RunCli, tmp_path: Path, spec_tree: Path
) -> None:
    _project(spec_tree, PROJECT_YAML.replace(EXAMPLES_ON_PURPOSE, ""))
    code, stdout, stderr = run_cli(["validate", "--specs", "specs"], tmp_path)
    assert code == 0, stderr
    assert stdout.endswith("slo-compiler: 1 spec(s) valid\n")
    # runbook_base_url is set to an example.com URL on line 3; grafana_base_url is left at its default.
    assert _warnings(stderr) == [
        f"specs/project.yaml:3:19: {HEADER}{RUNBOOK} and {DASHBOARD} point at an example domain, which reaches "
        "no runbook or dashboard; set them to where yours are published, or set example_links: true if they "
        "are examples on purpose"
    ]


def test_generate_warns_too_and_writes_the_output(run_cli: RunCli, tmp_path: Path, spec_tree: Path) -> None:
    _project(spec_tree, PROJECT_YAML.replace(EXAMPLES_ON_PURPOSE, ""))
    code, _, stderr = run_cli(["generate", "--specs", "specs", "--out", "out"], tmp_path)
    assert code == 0, stderr
    assert len(_warnings(stderr)) == 1 and HEADER in stderr
    assert (tmp_path / "out" / "runbooks").is_dir()


def test_only_the_settings_left_at_a_placeholder_are_named(run_cli: RunCli, tmp_path: Path, spec_tree: Path) -> None:
    project = PROJECT_YAML.replace(EXAMPLES_ON_PURPOSE, "").replace(
        "runbook_base_url: https://runbooks.example.com/slo",
        "runbook_base_url: https://git.acme.io/slo/runbooks\ngrafana_base_url: https://GRAFANA.Example.ORG.",
    )
    _project(spec_tree, project)
    code, _, stderr = run_cli(["validate", "--specs", "specs"], tmp_path)
    assert code == 0, stderr
    assert _warnings(stderr) == [
        f"specs/project.yaml:4:19: {HEADER}{DASHBOARD} point at an example domain, which reaches no runbook or "
        "dashboard; set them to where yours are published, or set example_links: true if they are examples on purpose"
    ]


def test_real_links_or_examples_on_purpose_do_not_warn(run_cli: RunCli, tmp_path: Path, spec_tree: Path) -> None:
    real = PROJECT_YAML.replace(EXAMPLES_ON_PURPOSE, "").replace(
        "runbook_base_url: https://runbooks.example.com/slo",
        "runbook_base_url: https://runbooks.acme.io/slo\ngrafana_base_url: https://grafana.notexample.com",
    )
    for project in (real, PROJECT_YAML):
        _project(spec_tree, project)
        code, _, stderr = run_cli(["validate", "--specs", "specs"], tmp_path)
        assert (code, stderr) == (0, "")


def test_without_project_yaml_the_warning_names_the_specs_folder(
    run_cli: RunCli, tmp_path: Path, spec_tree: Path
) -> None:
    (spec_tree / "project.yaml").unlink()
    code, _, stderr = run_cli(["validate", "--specs", "specs"], tmp_path)
    assert code == 0, stderr
    assert _warnings(stderr) == [
        "specs: warning: no project.yaml here, so links are example.com placeholders that reach no runbook or "
        f"dashboard: set {RUNBOOK} and {DASHBOARD} in a project.yaml (kind: Project) in this folder"
    ]


@pytest.mark.parametrize(
    ("url", "placeholder"),
    [
        ("https://runbooks.example.com/slo", True),
        ("https://example.net", True),
        ("http://Grafana.EXAMPLE.org.:3000/x", True),
        ("https://example.com.evil.io", False),
        ("https://myexample.com", False),
        ("https://grafana.acme.io", False),
        ("https://[::1", False),  # malformed: not ours to judge here (the schema and Alertmanager are)
    ],
)
def test_placeholder_hosts_are_the_reserved_example_domains(url: str, placeholder: bool) -> None:
    assert is_placeholder(url) is placeholder
