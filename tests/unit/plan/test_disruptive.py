"""Disruptive mitigation steps name their check first (compiler/plan/disruptive.py)."""

from __future__ import annotations

import pytest

from compiler.plan.disruptive import unchecked


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
