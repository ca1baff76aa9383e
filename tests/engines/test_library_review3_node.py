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
