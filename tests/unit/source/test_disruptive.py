"""Disruptive mitigation steps name their check first (compiler/source/disruptive.py).

The rule is an error: a spec whose step drains, cordons, deletes, stops or restarts before
naming its check fails ``validate`` (and ``generate``, ``check``) with the message at the step.
The CLI tests run the real CLI on a temp spec tree (conftest.py).
"""

from __future__ import annotations

from pathlib import Path

import pytest

from compiler.source.disruptive import unchecked
from tests.conftest import RunCli
from tests.unit.source.test_errors import edit, message_at, validate


@pytest.mark.parametrize(
    ("step", "command"),
    [
        ("Cordon it so no new pods land: kubectl cordon <node>.", "kubectl cordon"),
        ("Restart that node's kube-proxy: kubectl -n kube-system delete pod <pod>.", "kubectl -n kube-system delete"),
        ("Restart the runtime: systemctl restart containerd && systemctl restart kubelet.", "systemctl restart"),
        ("Roll it: kubectl -n kube-system rollout restart ds/kube-proxy.", "kubectl -n kube-system rollout restart"),
        ("Reboot the node: reboot.", "Reboot"),
        ("Remove it: etcdctl member remove <id>.", "etcdctl member remove"),
    ],
)
def test_a_disruptive_step_without_a_check_is_reported(step: str, command: str) -> None:
    assert unchecked(step) == command


@pytest.mark.parametrize(
    "step",
    [
        "If it stays stale, cordon the node (kubectl cordon <node>).",
        "Only once the stop conditions are clear: kubectl drain <node> --ignore-daemonsets.",
        "First confirm the node is NotReady in kubectl get nodes; then kubectl cordon <node>.",
        "After the timestamp stops advancing for 5 minutes, systemctl restart kubelet.",
        "Drain them once their jobs finish (kubectl drain <node> --ignore-daemonsets --delete-emptydir-data).",
        "Read the logs: kubectl -n kube-system logs <pod> --previous.",  # nothing disruptive
        "kubectl get pods --field-selector=status.phase!=Running --delete-emptydir-data",  # an option, not a verb
    ],
)
def test_a_step_with_its_check_first_or_nothing_disruptive_passes(step: str) -> None:
    assert unchecked(step) is None


SPEC = "specs/network/dns-errors.yaml"
FIRST_STEP = "    - Scale the CoreDNS deployment.\n"  # line 22 of the conftest spec, the step at column 7


def message(number: int, command: str) -> str:
    return (
        f"mitigation step {number} runs {command!r} without saying first which check must pass: "
        'put the condition before it in the step ("If <check>, ...", "Only once <check>, ...", '
        '"First confirm <check>; then ...") or name the stop condition it waits for'
    )


def test_an_unguarded_disruptive_step_fails_validate_at_the_step(
    run_cli: RunCli, tmp_path: Path, slo_file: Path
) -> None:
    edit(
        slo_file,
        FIRST_STEP,
        FIRST_STEP + '    - "Restart the stuck pod: kubectl -n kube-system delete pod <coredns pod>."\n',
    )
    stderr = validate(run_cli, tmp_path, problems=1)
    assert message_at(stderr, f"{SPEC}:23:7") == message(2, "kubectl -n kube-system delete")


def test_generate_writes_nothing_for_an_unguarded_step(run_cli: RunCli, tmp_path: Path, slo_file: Path) -> None:
    edit(slo_file, FIRST_STEP, '    - "Cordon the node: kubectl cordon <node>."\n')
    code, _, stderr = run_cli(["generate", "--specs", "specs", "--out", "out"], tmp_path)
    assert code == 1, stderr
    assert f"{SPEC}:22:7: {message(1, 'kubectl cordon')}" in stderr.splitlines(), stderr
    assert not (tmp_path / "out").exists()


def test_the_error_comes_with_the_spec_s_other_problems_in_one_run(
    run_cli: RunCli, tmp_path: Path, slo_file: Path
) -> None:
    edit(slo_file, FIRST_STEP, '    - "Cordon the node: kubectl cordon <node>."\n')
    edit(slo_file, "owner: platform-network\n", "owner: nobody\n")
    stderr = validate(run_cli, tmp_path, problems=2)
    assert message_at(stderr, f"{SPEC}:22:7") == message(1, "kubectl cordon")
    assert message_at(stderr, f"{SPEC}:5:8").startswith("unknown owner 'nobody'")


def test_a_guarded_disruptive_step_passes_validate_without_a_note(
    run_cli: RunCli, tmp_path: Path, slo_file: Path
) -> None:
    edit(
        slo_file,
        FIRST_STEP,
        FIRST_STEP + '    - "Only if kubectl -n kube-system get pods shows a CoreDNS pod in CrashLoopBackOff, '
        'restart it: kubectl -n kube-system delete pod <coredns pod>."\n',
    )
    code, stdout, stderr = run_cli(["validate", "--specs", "specs"], tmp_path)
    assert code == 0, stderr
    assert "spec(s) valid" in stdout
    assert "note:" not in stderr, stderr
