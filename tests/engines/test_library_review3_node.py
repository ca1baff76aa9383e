"""Library review 3, node and network side: the fixes scenarios cannot show stay fixed.

Each test names the finding of `../shared/docs/library-review-3.md` it guards and runs the
committed rules in `generated/` with the real promtool on hand-written raw series (the
generated proofs feed the spec's own value, not the raw series of the case at issue).
"""

from __future__ import annotations

from pathlib import Path

import pytest

from tests.engines.test_library_findings import firing, promtool_test

NODE_EXPORTER = 'cluster="c1",job="node-exporter"'


# -- arp-neighbor-table: the node's own gc_thresh3 where node-exporter exports it -------------


@pytest.mark.parametrize(
    ("gc_thresh3", "fires"),
    [
        # An untuned image (kernel default 1024) exported by --collector.sysctl.include: 980
        # entries are 96% of the node's own limit, past the 95% critical line.
        ("1024", 1),
        # The same node without the sysctl collector: the fallback 100000 reads 1%, silent.
        (None, 0),
        # A tuned node (100000) exported: 1%, silent.
        ("100000", 0),
    ],
)
def test_arp_entries_are_judged_against_the_nodes_own_gc_thresh3(
    tmp_path: Path, gc_thresh3: str | None, fires: int
) -> None:
    node = f'{NODE_EXPORTER},instance="10.1.0.7:9100"'
    series = [
        {"series": f'node_arp_entries{{{node},device="eth0"}}', "values": "900x30"},
        {"series": f'node_arp_entries{{{node},device="cilium_host"}}', "values": "80x30"},
    ]
    if gc_thresh3 is not None:
        limit = f"node_sysctl_net_ipv4_neigh_default_gc_thresh3{{{node}}}"
        series.append({"series": limit, "values": f"{gc_thresh3}x30"})
    result = promtool_test(
        tmp_path,
        "arp-neighbor-table.rules.yaml",
        [
            {
                "interval": "1m",
                "input_series": series,
                "promql_expr_test": [
                    firing("ARPNeighborTableUnitAboveCriticalRange", "20m", fires, instance="10.1.0.7:9100"),
                    firing("ARPNeighborTableAboveCriticalRange", "20m", 0),  # one node never pages
                ],
            }
        ],
    )
    assert result.returncode == 0, result.stdout + result.stderr


# -- client-request-errors: one client's broken path is a ticket naming it ---------------------


def _client(job: str, instance: str, ok_per_minute: float, failed_per_minute: float) -> list[dict[str, str]]:
    labels = f'cluster="c1",job="{job}",instance="{instance}",host="api.c1.internal:6443",method="GET"'
    return [
        {"series": f'rest_client_requests_total{{{labels},code="200"}}', "values": f"0+{ok_per_minute}x40"},
        {"series": f'rest_client_requests_total{{{labels},code="<error>"}}', "values": f"0+{failed_per_minute}x40"},
    ]


def test_one_kubelet_with_a_broken_path_is_a_ticket_naming_it(tmp_path: Path) -> None:
    """30% of one kubelet's 18 requests a minute fail: diluted in the job, a ticket for its instance."""
    series = _client("kubelet", "10.1.0.7:10250", 12.6, 5.4)
    for n in range(20, 40):  # 20 healthy kubelets: the job's share is 1.5%, each of them 0%
        series += _client("kubelet", f"10.1.0.{n}:10250", 18, 0)[:1]
    result = promtool_test(
        tmp_path,
        "client-request-errors.rules.yaml",
        [
            {
                "interval": "1m",
                "input_series": series,
                "promql_expr_test": [
                    firing("KubeClientRequestErrorsUnitAboveCriticalRange", "25m", 1, instance="10.1.0.7:10250"),
                    firing("KubeClientRequestErrorsUnitAboveCriticalRange", "25m", 1),
                    firing("KubeClientRequestErrorsAboveCriticalRange", "35m", 0),  # one instance never pages
                ],
            }
        ],
    )
    assert result.returncode == 0, result.stdout + result.stderr


def test_a_quiet_client_under_the_traffic_floor_is_not_judged_per_instance(tmp_path: Path) -> None:
    """A kube-proxy making 0.6 requests a minute, a third failing: under 0.05/s, no per-instance ticket."""
    result = promtool_test(
        tmp_path,
        "client-request-errors.rules.yaml",
        [
            {
                "interval": "1m",
                "input_series": _client("kube-proxy", "10.1.0.7:10249", 0.4, 0.2),
                "promql_expr_test": [firing("KubeClientRequestErrorsUnitAboveCriticalRange", "35m", 0)],
            }
        ],
    )
    assert result.returncode == 0, result.stdout + result.stderr
