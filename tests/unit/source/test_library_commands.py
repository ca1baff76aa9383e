"""The library's mitigation steps hold no command known to be wrong or unsafe at 3 a.m.

Each entry comes from the "wrong or unsafe commands" table of the library review
(`../shared/docs/library-review.md`), checked against upstream source: a step that matches
the pattern would do nothing, be reverted, or make the incident worse. The test reads the
compiled model, so jsonnet-stamped specs (the list-volume family) are covered too, and a
new spec that copies an old step fails here with the reason.
"""

from __future__ import annotations

import dataclasses
import re

import pytest

from compiler.model import SLO
from tests.support import LIBRARY_SPECS, compile_tree

# (pattern, why it is wrong, unless this pattern is also in the same step)
UNSAFE: tuple[tuple[str, str, str | None], ...] = (
    (
        r"annotate deployment cluster-autoscaler",
        "the scale-down-disabled annotation is read on Node objects only; on the Deployment it does nothing",
        None,
    ),
    (
        r"kubectl edit prioritylevelconfiguration",
        "the apiserver restores a suggested level's spec unless apf.kubernetes.io/autoupdate-spec=false is set first",
        r"autoupdate-spec=false",
    ),
    (
        r'updateStrategy\\?"?:\s*\{\\?"?type\\?"?:\s*\\?"?OnDelete',
        "OnDelete only stops future replacements; the DaemonSet's running pods keep calling the API",
        None,
    ),
    (
        r"dump_requests(?!\?includeRequestDetails=1)",
        "dump_requests has no user column without ?includeRequestDetails=1",
        None,
    ),
    (
        r"paginate with limit|pagination \(limit",
        "paging does not avoid etcd on 1.28-1.31: continuation pages are served from etcd",
        None,
    ),
    (
        r"delete the leader pod",
        "kube-scheduler is a static pod: deleting it through the API does nothing",
        None,
    ),
    (
        r"raise the cluster-proportional-autoscaler",
        "a higher nodesPerReplica or coresPerReplica gives fewer CoreDNS replicas, not more",
        None,
    ),
    (
        r"echo [^;]*> /sys/class/net/<device>/queues/rx-\*",
        "a redirect to a glob that matches several files fails; loop over the files",
        None,
    ),
    (
        r"(?-i:ethtool -G)",
        "a ring change resets the link on many drivers: only on a cordoned and drained node",
        r"drain",
    ),
    (
        r"-A -o json",
        "a full LIST of every object in JSON during a storm is itself a storm, read from etcd",
        None,
    ),
    (
        r"awk '\{print \$7\}'",
        "the source column of conntrack -L moves with the protocol and state",
        None,
    ),
    (
        r"etcdctl compact \$rev",
        "the apiserver compacts every 5 minutes; defragment followers first, move the leader, then the old leader",
        None,
    ),
    (
        r"sum by \([^)]*\btype\b[^)]*\) \(rate\(coredns_dns_request_duration_seconds",
        "coredns_dns_request_duration_seconds has no type label",
        None,
    ),
)


def _texts(slo: SLO) -> list[tuple[str, str]]:
    mitigation = slo.mitigation
    parts = [("summary", mitigation.summary), ("escalation", mitigation.escalation)]
    parts += [(f"steps[{i}]", step) for i, step in enumerate(mitigation.steps)]
    parts += [(f"stop_conditions[{i}]", text) for i, text in enumerate(mitigation.stop_conditions)]
    return parts


def _findings(slos: tuple[SLO, ...]) -> list[str]:
    found = []
    for slo in slos:
        for where, text in _texts(slo):
            for pattern, why, unless in UNSAFE:
                if re.search(pattern, text, re.IGNORECASE) and not (unless and re.search(unless, text)):
                    found.append(f"{slo.name} mitigation.{where}: {why}")
    return found


@pytest.fixture(scope="module")
def library() -> tuple[SLO, ...]:
    return compile_tree(LIBRARY_SPECS).slos


def test_library_mitigations_hold_no_known_unsafe_command(library: tuple[SLO, ...]) -> None:
    assert _findings(library) == []


@pytest.mark.parametrize(
    "step",
    [
        "kubectl -n kube-system annotate deployment cluster-autoscaler scale-down-disabled=true",
        "Raise shares (kubectl edit prioritylevelconfiguration workload-high).",
        'kubectl patch daemonset x --type=merge -p \'{"spec":{"updateStrategy":{"type":"OnDelete"}}}\'',
        "kubectl get --raw /debug/api_priority_and_fairness/dump_requests (UserName column)",
        "If the leader is wedged, delete the leader pod so a standby takes over.",
        "ethtool -G eth0 rx 4096 tx 4096 to test",
        "kubectl get events -A -o json | jq .",
    ],
)
def test_each_unsafe_pattern_is_caught(library: tuple[SLO, ...], step: str) -> None:
    """The check above can fail: each review finding, written as the library had it, is caught."""
    slo = library[0]
    broken = dataclasses.replace(slo.mitigation, steps=(step,), stop_conditions=())
    assert _findings((dataclasses.replace(slo, mitigation=broken),)) != []
