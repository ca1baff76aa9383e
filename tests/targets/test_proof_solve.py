"""A fleet's units share one input solve: their series differ only in label values the expression never reads."""

from __future__ import annotations

import pytest

from compiler.targets.prometheus.proof.inputs import InputError, _solved, _unread_values_ranked, solve

EXPR = (
    'max by (cluster, node) (node_nf_conntrack_entries{job="node-exporter"} / node_nf_conntrack_entries_limit '
    '* on (cluster, instance) group_left (node) kube_node_info{job="kube-state-metrics"})'
)


def _unit(index: int) -> list[dict[str, str]]:
    instance, node = f"instance-unit-{index}", f"node-fleet-{index}"
    common = {"cluster": "cluster-a", "instance": instance}
    return [
        {"__name__": "node_nf_conntrack_entries", "job": "node-exporter", **common},
        {"__name__": "node_nf_conntrack_entries_limit", "job": "node-exporter", **common},
        {"__name__": "kube_node_info", "job": "kube-state-metrics", **common, "node": node},
    ]


def _key(labels: list[dict[str, str]]) -> tuple[tuple[tuple[str, str], ...], ...]:
    return tuple(tuple(series.items()) for series in labels)


def test_units_differing_in_unread_values_have_one_key_and_matched_labels_keep_theirs() -> None:
    first, other = _unread_values_ranked(EXPR, _key(_unit(0))), _unread_values_ranked(EXPR, _key(_unit(7)))
    assert first == other
    assert first is not None
    assert dict(first[2]) == {
        "__name__": "kube_node_info",  # names are read
        "job": "kube-state-metrics",  # a matcher reads it
        "cluster": "~0",
        "instance": "~0",
        "node": "~0",
    }


def test_ranks_keep_equal_values_equal_and_the_order_of_values() -> None:
    series = _key([{"__name__": "x", "pod": "b"}, {"__name__": "x", "pod": "a"}, {"__name__": "x", "pod": "b"}])
    assert _unread_values_ranked("sum by (pod) (x)", series) == (
        (("__name__", "x"), ("pod", "~1")),
        (("__name__", "x"), ("pod", "~0")),
        (("__name__", "x"), ("pod", "~1")),
    )


@pytest.mark.parametrize(
    "expr",
    [
        'label_replace(x, "a", "$1", "pod", "(.*)")',
        'label_join(x, "a", ",", "pod")',
        "topk(1, x)",
        "bottomk(1, x)",
        "sort(x)",
        'count_values("v", x)',
    ],
)
def test_an_expression_reading_label_values_is_solved_over_its_real_series(expr: str) -> None:
    assert _unread_values_ranked(expr, _key([{"__name__": "x", "pod": "a"}])) is None


def test_the_shared_solve_is_the_one_the_real_series_give() -> None:
    counters = [False, False, False]
    for index in (0, 3, 11):
        real = _solved(EXPR, _key(_unit(index)), tuple(counters), False)
        assert solve(EXPR, _unit(index), counters, False) == real


def test_an_underivable_expression_names_its_real_series() -> None:
    labels = [{"__name__": "up", "instance": "instance-unit-4"}]
    with pytest.raises(InputError, match="instance-unit-4"):
        solve("up * 0", labels, [False], True)
