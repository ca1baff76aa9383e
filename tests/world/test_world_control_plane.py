"""The control-plane series of the world data sets are what the stacks deliver (no promtool needed).

The day-one test proves the library silent on them; these check the data itself where a
mistake would make that proof hollow: lazily created counters absent, pre-initialised ones
present at 0, histograms on the edges the source defines, standbys without leader-only series,
and no etcd at all where the stack scrapes none.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Iterator
from functools import cache

import pytest
import yaml

from tests.world import topology
from tests.world.dataset import every_series
from tests.world.promtool import LIBRARY
from tests.world.stack import STACKS
from tests.world.timeline import Series


@cache
def _series(stack: str) -> tuple[Series, ...]:
    world = dataclasses.replace(topology.day_one(), minutes=30)
    return tuple(every_series(world, STACKS[stack]))


def _named(stack: str, name: str) -> Iterator[dict[str, str]]:
    return (dict(item.labels) for item in _series(stack) if item.name == name)


@pytest.mark.parametrize("stack", sorted(STACKS))
def test_lazy_failure_counters_are_absent_on_a_healthy_cluster(stack: str) -> None:
    assert not list(_named(stack, "apiserver_admission_webhook_fail_open_count"))
    rejections = list(_named(stack, "apiserver_admission_webhook_rejection_count"))
    assert rejections, "the policy webhook's denials (error_type no_error) are part of a healthy cluster"
    assert {labels["error_type"] for labels in rejections} == {"no_error"}
    assert not [labels for labels in _named(stack, "rest_client_requests_total") if labels["code"].startswith("5")]


def test_etcd_grpc_failure_codes_exist_at_zero_where_etcd_is_scraped() -> None:
    handled = [item for item in _series("kube-prometheus-stack") if item.name == "grpc_server_handled_total"]
    failing = [item for item in handled if dict(item.labels)["grpc_code"] == "Unavailable"]
    methods = {dict(item.labels)["grpc_method"] for item in handled}
    members = {dict(item.labels)["instance"] for item in handled}
    assert len(members) == 9  # prod-east, prod-west, batch-central (edge-kubeadm's are not scraped: 127.0.0.1)
    assert len(failing) == len(methods) * len(members), "every method of every member has its Unavailable child"
    assert all(item.samples[-1] == item.samples[0] == 0 for item in failing)


def test_kube_prometheus_has_no_etcd_series() -> None:
    names = {item.name for item in _series("kube-prometheus")}
    assert not {name for name in names if name.startswith(("etcd_disk_", "etcd_network_", "grpc_server_"))}


@pytest.mark.parametrize("stack", sorted(STACKS))
def test_only_the_controller_manager_leader_has_work_queues(stack: str) -> None:
    instances = {labels["instance"] for labels in _named(stack, "workqueue_queue_duration_seconds_count")}
    # One leader per cluster whose controller-manager is scraped (edge-kubeadm's refuse: 127.0.0.1).
    assert instances == {"10.1.0.1:10257", "10.2.0.1:10257", "10.4.0.1:10257"}
    up = {labels["instance"] for labels in _named(stack, "up") if labels["job"] == "kube-controller-manager"}
    assert len(up) == 10  # three in prod-east, prod-west and batch-central; edge-kubeadm has one control-plane node


def test_client_certificate_buckets_are_the_ones_the_spec_reads() -> None:
    spec = yaml.safe_load((LIBRARY / "scheduling-api-latency/apiserver-client-cert-expiration.yaml").read_text())
    edges = {
        labels["le"]
        for labels in _named("kube-prometheus-stack", "apiserver_client_certificate_expiration_seconds_bucket")
    }
    assert edges == {str(edge) for edge in spec["sli"]["quantile"]["buckets"]} | {"+Inf"}


@pytest.mark.parametrize("stack", sorted(STACKS))
def test_exempt_requests_wait_in_no_queue(stack: str) -> None:
    waited = {
        labels["priority_level"]
        for labels in _named(stack, "apiserver_flowcontrol_request_wait_duration_seconds_count")
    }
    assert "exempt" not in waited and {"workload-low", "node-high"} <= waited
    limits = {labels["priority_level"] for labels in _named(stack, "apiserver_flowcontrol_current_limit_seats")}
    assert {"exempt", "catch-all"} <= limits
