"""Issue 27, items 1 and 2, as the user meets them: the heartbeat and foreign-alert settings of project.yaml.

Without a heartbeat, ``validate`` warns that nothing watches the watcher; without
``foreign_alerts``, it warns that the root receiver drops alerts the compiler did not
make. Both are warnings (exit 0). Settings that cannot work are positioned errors (exit 1) that say
why: an interval outside its bounds, a team the registry does not know, a PagerDuty "heartbeat",
a webhook URL by file (Alertmanager 0.25 cannot read one), an inline key.
"""

from __future__ import annotations

from pathlib import Path

from tests.conftest import RunCli

BARE_PROJECT = """\
apiVersion: slo-compiler/v1
kind: Project
runbook_base_url: https://runbooks.example.com/slo
evaluation_interval: 1m
example_links: true
"""
HEARTBEAT = """\
heartbeat:
  receiver:
    webhook: {url: "https://hc-ping.example.com/ping", credentials_file: /etc/am/hb-token}
  interval: 30s
foreign_alerts: {team: platform-network}
"""

WATCHER = "warning: nothing watches the watcher: no heartbeat is configured"
DROPS = "warning: the root receiver drops alerts the compiler did not make"


def _project(spec_tree: Path, extra: str) -> Path:
    path = spec_tree / "project.yaml"
    path.write_text(BARE_PROJECT + extra, encoding="utf-8")
    return path


def _line_col(path: Path, needle: str) -> str:
    """``path:line:col`` of the first occurrence of ``needle`` (columns from 1), as the CLI prints positions."""
    for number, line in enumerate(path.read_text(encoding="utf-8").splitlines(), start=1):
        if needle in line:
            return f"specs/{path.name}:{number}:{line.index(needle) + 1}"
    raise AssertionError(f"{needle!r} not in {path}")


def test_no_heartbeat_warns_that_nothing_watches_the_watcher(run_cli: RunCli, tmp_path: Path, spec_tree: Path) -> None:
    _project(spec_tree, "")
    code, stdout, stderr = run_cli(["validate", "--specs", "specs"], tmp_path)
    assert code == 0, stderr
    assert stdout.endswith("slo-compiler: 1 spec(s) valid\n")
    assert f"specs/project.yaml:2:7: {WATCHER}" in stderr.splitlines()[0], stderr
    assert "set heartbeat.receiver in project.yaml" in stderr


def test_root_receiver_dropping_foreign_alerts_is_a_warning(run_cli: RunCli, tmp_path: Path, spec_tree: Path) -> None:
    _project(spec_tree, HEARTBEAT.replace("foreign_alerts: {team: platform-network}\n", ""))
    code, _, stderr = run_cli(["validate", "--specs", "specs"], tmp_path)
    assert code == 0
    lines = [line for line in stderr.splitlines() if DROPS in line]
    assert lines == [
        f'specs/project.yaml:2:7: {DROPS} (without slo_compiler="true", e.g. kube-prometheus\'s): its receiver '
        "'unrouted' has no integrations; set foreign_alerts in project.yaml to send them to a team, "
        "or merge fragment.yaml into your own configuration"
    ]


def test_generate_prints_the_same_warnings_and_still_writes(run_cli: RunCli, tmp_path: Path, spec_tree: Path) -> None:
    _project(spec_tree, "")
    code, _, stderr = run_cli(["generate", "--specs", "specs", "--out", "out"], tmp_path)
    assert code == 0
    assert WATCHER in stderr and DROPS in stderr
    assert (tmp_path / "out" / "alertmanager" / "alertmanager.yaml").exists()


def test_without_a_project_document_the_warnings_name_no_position(
    run_cli: RunCli, tmp_path: Path, spec_tree: Path
) -> None:
    (spec_tree / "project.yaml").unlink()
    code, _, stderr = run_cli(["validate", "--specs", "specs"], tmp_path)
    assert code == 0
    # The placeholder-link warning names the folder where project.yaml is missing (test_placeholder_links.py).
    assert [line.split(":", 2)[:2] for line in stderr.splitlines()] == [
        ["slo-compiler", " warning"],
        ["slo-compiler", " warning"],
        ["specs", " warning"],
    ], stderr


def test_heartbeat_and_foreign_alerts_configured_validate_without_warnings(
    run_cli: RunCli, tmp_path: Path, spec_tree: Path
) -> None:
    _project(spec_tree, HEARTBEAT)
    code, _, stderr = run_cli(["validate", "--specs", "specs"], tmp_path)
    assert (code, stderr) == (0, "")


def test_foreign_alerts_to_an_unknown_team_is_a_positioned_error(
    run_cli: RunCli, tmp_path: Path, spec_tree: Path
) -> None:
    path = _project(spec_tree, HEARTBEAT.replace("team: platform-network", "team: platform-nobody"))
    code, _, stderr = run_cli(["validate", "--specs", "specs"], tmp_path)
    assert code == 1
    assert stderr.splitlines()[0] == (
        f"{_line_col(path, 'platform-nobody')}: foreign_alerts.team 'platform-nobody' is not a team "
        "of the owners registry (teams: platform-network, platform-nodes)"
    )


def test_unbounded_heartbeat_interval(run_cli: RunCli, tmp_path: Path, spec_tree: Path) -> None:
    for interval in ("1s", "2h"):
        path = _project(spec_tree, HEARTBEAT.replace("interval: 30s", f"interval: {interval}"))
        code, _, stderr = run_cli(["validate", "--specs", "specs"], tmp_path)
        assert code == 1, interval
        assert stderr.splitlines()[0].startswith(
            f"{_line_col(path, interval)}: heartbeat.interval {interval} is outside the allowed 5s to 1h"
        ), stderr
    for interval in ("5s", "1h"):
        _project(spec_tree, HEARTBEAT.replace("interval: 30s", f"interval: {interval}"))
        assert run_cli(["validate", "--specs", "specs"], tmp_path)[0] == 0, interval


def test_heartbeat_receivers_alertmanager_cannot_serve_are_refused_with_the_reason(
    run_cli: RunCli, tmp_path: Path, spec_tree: Path
) -> None:
    cases = {
        "pagerduty: {routing_key_file: /etc/am/pd}": "PagerDuty's Events API opens an incident per event",
        'webhook: {url_file: /etc/am/url, url: "https://x.example.com"}': "Alertmanager 0.25 cannot read a webhook URL",
        "opsgenie: {name: hb, api_key_file: /etc/am/og, api_key: s3cret}": "is an inline secret",
        'webhook: {url: "https://user:pw@x.example.com"}': "without credentials",
        "{}": "must have exactly one of: webhook, opsgenie",
    }
    for receiver, reason in cases.items():
        text = HEARTBEAT.replace(
            'webhook: {url: "https://hc-ping.example.com/ping", credentials_file: /etc/am/hb-token}', receiver
        )
        _project(spec_tree, text.replace("receiver:\n    {}", "receiver: {}"))
        code, _, stderr = run_cli(["validate", "--specs", "specs"], tmp_path)
        assert code == 1, receiver
        assert reason in stderr, (receiver, stderr)
        assert all(line.startswith("specs/project.yaml:") for line in stderr.splitlines()[:-1]), stderr
        assert "s3cret" not in stderr


def test_inline_secret_value_is_never_echoed(run_cli: RunCli, tmp_path: Path, spec_tree: Path) -> None:
    """A refused inline secret is named, never printed: validate's output ends up in CI logs."""
    owners = spec_tree / "owners.yaml"
    owners.write_text(
        owners.read_text(encoding="utf-8").replace(
            "{pagerduty: {routing_key_file: /etc/am/pd}}", "{pagerduty: {routing_key: pd-s3cret}}", 1
        ),
        encoding="utf-8",
    )
    _project(
        spec_tree,
        "alertmanager:\n  smtp: {smarthost: 'smtp.example.com:25', from: a@example.com, auth_password: smtp-s3cret}\n",
    )
    code, _, stderr = run_cli(["validate", "--specs", "specs"], tmp_path)
    assert code == 1
    assert "routing_key is an inline secret: reference a file with routing_key_file instead" in stderr, stderr
    assert "auth_password is an inline secret" in stderr, stderr
    assert "s3cret" not in stderr
