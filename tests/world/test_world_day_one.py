"""Day one against the world: a healthy fleet, as each stack scrapes it, raises nothing.

Four clusters (prod-east and prod-west: three pools, four zones, 62 nodes, three apiservers,
etcd members, schedulers and CoreDNS replicas each; edge-kubeadm and batch-central, the
deployments the specs' assumptions cover, see topology.py) for three hours, written as the stack delivers them: its job
labels, only the histogram edges its relabelings keep, no series for counters created on
their first event, and the normal trickle of one node rebooting (NotReady, scrapes failing)
for 5 minutes. promtool runs every generated rule file over it; no ALERTS series, pending or
firing, may exist after the first rate window, and no page from minute 0, except for the specs listed below, each with
the reason it still fails on day one. The list is checked too: a listed spec that no longer
raises anything fails the test, so it is emptied as the specs are fixed (issue 13).
"""

from __future__ import annotations

import dataclasses
from pathlib import Path

import pytest

from tests.world import promtool, topology
from tests.world.dataset import Expectations, Expected
from tests.world.stack import STACKS as STACKS_VIEW

# The first rate window after Prometheus starts: a rate() needs two samples, so every no-data
# alert of a rate-based SLI is pending at minute 0 of any fresh Prometheus. Judged from here.
WARM_UP_MIN = 5
MINUTES = 180

# Specs the compiler refuses on a stack (their file is left out of the copy; the rest compiles).
REFUSED: dict[str, dict[str, str]] = {
    "kube-prometheus-stack": {},
    # apiserver-read-latency's 30 s thresholds (an edge kube-prometheus drops) read 45 s there
    # (on_dropped_edge: next_kept_above), so the whole library compiles on both stacks.
    "kube-prometheus": {},
}

# Specs that still raise an alert (pending counts) on day one, per stack, and why: empty, the
# whole library is quiet on both stacks (issue 13). A spec added before the data set writes its
# series goes here as NOT_MODELLED (the incidents then leave its rules out) until it does.
NOT_MODELLED = "the day-one data set writes none of the series it reads yet, so its no-data alert fires"

DAY_ONE_FAILURES: dict[str, dict[str, str]] = {
    "kube-prometheus-stack": {},
    "kube-prometheus": {},
}
STACKS = sorted(DAY_ONE_FAILURES)


def _stack_premises(stack: str) -> tuple[tuple[str, int, float], ...]:
    """The data is what the stack delivers: its job labels, its dropped edges, no lazy counters."""
    dropped = "0.2" if stack == "kube-prometheus-stack" else "0.4"
    dns_job = "coredns" if stack == "kube-prometheus-stack" else "kube-dns"
    return (
        (f'count(up{{job="{dns_job}"}})', 60, 8),
        (f'count(apiserver_request_sli_duration_seconds_bucket{{le="{dropped}"}}) or vector(0)', 60, 0),
        ('count(etcd_request_duration_seconds_bucket{le="0.1"}) > 0 or vector(0)', 60, 90),
        ("count(apiserver_flowcontrol_rejected_requests_total) or vector(0)", 60, 0),
        ("count(apiserver_terminated_watchers_total) or vector(0)", 60, 0),
        ('count(scheduler_schedule_attempts_total{result="error"}) or vector(0)', 60, 0),
        ('count(up{job="kubelet",metrics_path="/metrics"} == 0)', topology.TRICKLE.start + 2, 1),
        # Node side: the rebooting node's kube-proxy is unscraped and its DaemonSet pods unavailable;
        # the lazily created error counters (sandbox failures, upstream health-check failures) are absent.
        ('count(up{cluster="prod-east",job="kube-proxy"} == 0)', topology.TRICKLE.start + 2, 1),
        ('max(kube_daemonset_status_number_unavailable{daemonset="kube-proxy"})', topology.TRICKLE.start + 2, 1),
        ("count(kubelet_run_podsandbox_errors_total or coredns_proxy_healthcheck_failures_total) or vector(0)", 60, 0),
        *_deployment_premises(stack),
    )


def _deployment_premises(stack: str) -> tuple[tuple[str, int, float], ...]:
    """Each deployment the assumptions cover is in the data, and the old reading of each spec would page on it.

    The old readings: node-clock-sync's avg(node_timex_sync_status) (0 on every prod-west node:
    its fleet page needs 3 nodes and 3%), kube-proxy-rules-staleness's age of the last sync alone
    (over 300 s on most prod-west nodes, each synced once an hour), and the availability specs'
    share of targets up without assumptions (0 on edge-kubeadm: their critical ranges page).
    """
    edge = 'cluster="edge-kubeadm",job=~"kube-proxy|kube-scheduler|kube-controller-manager|kube-etcd"'
    refused = 7 if stack == "kube-prometheus-stack" else 6  # kube-prometheus scrapes no etcd
    west = 'cluster="prod-west"'
    pending = " + ".join(
        f"kubeproxy_sync_proxy_rules_{kind}_changes_pending{{{west}}}" for kind in ("endpoint", "service")
    )
    spot = 'count(kube_node_labels{cluster="batch-central",label_node_pool="spot"}) or vector(0)'
    return (
        # kubeadm's localhost binds: every target down and empty, the components working.
        (f"count(up{{{edge}}} == 0)", 60, refused),
        (f"max(scrape_samples_scraped{{{edge}}})", 60, 0),
        (f"avg(up{{{edge}}})", 60, 0),  # the old availability SLI: 0, under every critical range
        ('count(kube_pod_info{cluster="edge-kubeadm",namespace="kube-system",created_by_kind="Node"})', 60, 4),
        ('max(kube_daemonset_status_number_unavailable{cluster="edge-kubeadm",daemonset="kube-proxy"})', 60, 0),
        # chrony without rtcsync: the flag 0 on every node, maxerror tens of milliseconds.
        (f"max(node_timex_sync_status{{{west}}})", 60, 0),
        (f"avg(node_timex_sync_status{{{west}}})", 60, 0),  # the old SLI
        (f"max(node_timex_maxerror_seconds{{{west}}}) < bool 0.1", 60, 1),
        # An idle kube-proxy: nothing pending, one sync an hour, so the old staleness (age alone) is over 300 s.
        (f"max({pending})", 60, 0),
        (f"max(changes(kubeproxy_sync_proxy_rules_last_timestamp_seconds{{{west}}}[59m]))", 120, 1),
        (f"count(time() - kubeproxy_sync_proxy_rules_last_timestamp_seconds{{{west}}} > 300) >= bool 3", 60, 1),
        # The scale-up: 3 nodes created at minute 90, NotReady for their first minute and a half.
        ('count(kube_node_created{cluster="batch-central"} == 5400)', 100, 3),
        ('sum(kube_node_status_condition{cluster="batch-central",condition="Ready",status="false"})', 91, 3),
        ('sum(kube_node_status_condition{cluster="batch-central",condition="Ready",status="false"})', 93, 0),
        ('count(up{cluster="batch-central",job="kubelet",metrics_path="/metrics"})', 89, 15),
        ('count(up{cluster="batch-central",job="kubelet",metrics_path="/metrics"})', 91, 18),
        # The spot pool scaled to zero from minute 130.
        (spot, 120, 3),
        (spot, 140, 0),
    )


def _expected(stack: str) -> tuple[Expected, ...]:
    """The alerts day one raises on purpose, on the deployments whose assumptions do not hold, and why."""
    edge, batch = (("cluster", "edge-kubeadm"),), (("cluster", "batch-central"),)
    broken = "kubeadm binds it to 127.0.0.1: its assumption metrics-reachable is broken, a ticket after 1h"
    out = [
        Expected(f"{alert}AssumptionBroken", broken, (*edge, ("assumption", "metrics-reachable")), by_minute=70)
        for alert in ("KubeProxyTargets", "KubeSchedulerTargets", "KubeControllerManagerTargets")
    ]
    below = "every target down: the availability ticket (tickets do not wait for assumptions)"
    out += [
        Expected(f"{alert}BelowNormalRange", below, edge, by_minute=30)
        for alert in ("KubeProxyTargets", "KubeControllerManagerTargets")  # the scheduler's normal range is a page
    ]
    if stack == "kube-prometheus-stack":  # kube-prometheus scrapes no etcd: the etcd specs are left out
        out.append(Expected("EtcdMembersBelowNormalRange", below, edge, by_minute=30))
        etcd = (*edge, ("assumption", "metrics-reachable"))
        out.append(Expected("EtcdMembersAssumptionBroken", broken, etcd, by_minute=70))
    if stack == "kube-prometheus-stack":  # the chart does not scrape kube-state-metrics' telemetry port by default
        out.append(_KSM_TELEMETRY)
    vanished = "the cluster-autoscaler scaled the spot pool to zero: its slice vanished, a ticket"
    out.append(Expected("NodeReadinessSliceVanished", vanished, (*batch, ("label_node_pool", "spot")), by_minute=170))
    joining = "3 nodes join NotReady for 1.5 minutes: pending a few minutes, never firing"
    out += [
        Expected(alert, joining, batch, pending_only=True)
        for alert in (
            "DaemonSetPodsUnavailableAboveNormalRange",
            "NodeLifecycleZoneHealthBelowNormalRange",
            "NodeReadinessFlappingAboveNormalRange",
        )
    ]
    return tuple(out)


def known_pages(stack: str) -> tuple[str, ...]:
    """The pages day one raises on purpose (known false pages; none today): an incident allows them too."""
    return tuple(item.excused() for item in _expected(stack) if item.why.startswith(KNOWN_FALSE_PAGE))


# A known false page would be listed in _expected with a reason starting with this, kept visible
# until its spec is fixed (the test fails once it no longer fires). There is none today.
KNOWN_FALSE_PAGE = "KNOWN FALSE PAGE: "


def day_one_world() -> topology.World:
    """The healthy fleet of day one, over the minutes it is judged (incidents compare their data with it)."""
    return dataclasses.replace(topology.day_one(), minutes=MINUTES)


@pytest.fixture(scope="module", params=STACKS)
def stack(request: pytest.FixtureRequest) -> str:
    name: str = request.param
    return name


def _check_left_out(stack: str, rules: list[Path], found: promtool.Coverage) -> None:
    """The specs the compiler leaves out are exactly those reading a component the stack does not scrape.

    Both ways, as for REFUSED: every spec of an unscraped component is left out (its rules
    would judge nothing and its no-data alert would fire), no other spec is, none has a rule
    file, and none is listed in DAY_ONE_FAILURES (a spec without rules cannot raise anything).
    """
    unscraped = set() if STACKS_VIEW[stack].scrapes_etcd else {"etcd"}
    reading = {name for name, component in found.components.items() if component in unscraped}
    assert set(found.left_out) == reading, (stack, sorted(found.left_out), sorted(reading))
    assert not any(path.name.removesuffix(".rules.yaml") in found.left_out for path in rules)
    stale = sorted(set(found.left_out) & set(DAY_ONE_FAILURES[stack]))
    assert not stale, f"left out on {stack}, so they raise nothing: remove them from DAY_ONE_FAILURES: {stale}"


def test_day_one_raises_nothing_but_the_listed_specs(stack: str, tmp_path: Path) -> None:
    rules = promtool.compile_library(tmp_path, stack, leave_out=tuple(REFUSED[stack]))
    _check_left_out(stack, rules, promtool.coverage(tmp_path / "slo_specs"))
    world = day_one_world()
    failing = tuple(sorted(DAY_ONE_FAILURES[stack]))
    expect = Expectations(
        quiet_from=WARM_UP_MIN,
        quiet_except=failing,
        raising=failing,
        premises=_stack_premises(stack),
        no_pages=True,
        expected=_expected(stack),
    )
    result = promtool.run(tmp_path, rules, world, stack, expect)
    print(f"day one on {stack}: {result.series} series, promtool {result.seconds:.0f} s, {result.cpu:.0f} s CPU")
    assert result.ok, (
        f"day one on {stack} ({result.series} series, {result.seconds:.0f} s): an alert not listed in "
        "DAY_ONE_FAILURES pends or fires, a listed spec no longer raises anything (remove it from the "
        f"list), or the data is not what the stack delivers:\n{result.output}"
    )


def test_the_refused_specs_are_refused(stack: str, tmp_path: Path) -> None:
    """Leaving a spec out is only honest while the compiler really refuses it on that stack."""
    if not REFUSED[stack]:
        # The default refusal of a dropped edge is proven on a temp spec: tests/engines/test_dropped_edge_fallback.py.
        pytest.skip(f"the whole library compiles on {stack}")
    with pytest.raises(AssertionError) as refused:
        promtool.compile_library(tmp_path, stack)
    for name in REFUSED[stack]:
        assert f"slo_specs/{name}" in str(refused.value), str(refused.value)


# On a managed control plane (EKS, GKE, AKS) its own Prometheus sees no kube-scheduler,
# kube-controller-manager or etcd (absent() is per Prometheus, so the cluster is judged alone).
MANAGED_NO_DATA = {
    "ControllerWorkQueueLatencyNoData": "kube-controller-manager",
    "NodeLifecycleEvictionsNoData": "kube-controller-manager",
    "NodeLifecycleZoneHealthNoData": "kube-controller-manager",
    "SchedulerBacklogNoData": "kube-scheduler",
    "SchedulerErrorsNoData": "kube-scheduler",
    "SchedulerPodSchedulingLatencyNoData": "kube-scheduler",
}
MANAGED_ETCD_NO_DATA = (
    *("EtcdBackendCommitNoData", "EtcdDBFragmentationNoData", "EtcdDBGrowthNoData", "EtcdDBQuotaNoData"),
    *("EtcdFailedProposalsNoData", "EtcdGRPCFailuresNoData", "EtcdLeaderChangesNoData"),
    *("EtcdMemberCommunicationSlowNoData", "EtcdMembersNoData", "EtcdNoLeaderNoData", "EtcdWALFsyncNoData"),
)


_KSM_TELEMETRY = Expected(
    "KubeStateMetricsListWatchErrorsAssumptionBroken",
    "kube-prometheus-stack does not scrape kube-state-metrics' telemetry port (selfMonitor off): telemetry-scraped "
    "never held, a (shadow) ticket after 1h",
    (("assumption", "telemetry-scraped"),),
    by_minute=70,
)


def _expected_managed(stack: str) -> tuple[Expected, ...]:
    out = [
        Expected(
            f"{alert}AssumptionBroken",
            f"no {component} static pod and no target: {assumption} never held, a ticket after 1h",
            (("assumption", assumption),),
            by_minute=70,
        )
        for alert, component in (
            ("KubeSchedulerTargets", "kube-scheduler"),
            ("KubeControllerManagerTargets", "kube-controller-manager"),
        )
        for assumption in ("metrics-reachable", "self-managed-control-plane")
    ]
    out.append(
        Expected(
            "ControlPlaneRestartsAssumptionBroken",
            "no kube-apiserver or etcd static pod: self-managed-control-plane never held, a ticket after 1h",
            (("assumption", "self-managed-control-plane"),),
            by_minute=70,
        )
    )
    # Tickets of specs reading a component the provider runs: right as "no data", though these specs
    # do not state the assumption (a managed cluster should leave them out, as the etcd specs say).
    out += [
        Expected(alert, f"no {component} on a managed control plane: its no-data ticket", (), by_minute=30)
        for alert, component in MANAGED_NO_DATA.items()
    ]
    out.append(
        Expected(
            "GPUMemoryRowRemapAssumptionBroken",
            "no GPU node, so no dcgm-exporter target: dcgm-exporter-scraped never held, a (shadow) ticket after 1h "
            "(a Prometheus that sees no GPU anywhere should not name the component)",
            (("assumption", "dcgm-exporter-scraped"),),
            by_minute=70,
        )
    )
    if stack == "kube-prometheus-stack":
        out.append(_KSM_TELEMETRY)
        out += [
            Expected(alert, "no etcd on a managed control plane: its no-data ticket", (), by_minute=30)
            for alert in MANAGED_ETCD_NO_DATA
        ]
        out.append(
            Expected(
                "EtcdMembersAssumptionBroken",
                "no etcd target: metrics-reachable never held, a ticket after 1h",
                (("assumption", "metrics-reachable"),),
                by_minute=70,
            )
        )
    return tuple(out)


def test_a_managed_control_plane_pages_nobody(stack: str, tmp_path: Path) -> None:
    """EKS-like: apiservers only, no scheduler, controller-manager or etcd targets or static pods."""
    rules = promtool.compile_library(tmp_path, stack, leave_out=tuple(REFUSED[stack]))
    world = dataclasses.replace(topology.day_one_managed(), minutes=MINUTES)
    cp = 'job=~"kube-scheduler|kube-controller-manager|kube-etcd|etcd"'
    premises = (
        (f"count(up{{{cp}}}) or vector(0)", 60, 0),
        ('count(kube_pod_info{namespace="kube-system"}) or vector(0)', 60, 0),
        ('count(up{job="apiserver"} == 1)', 60, 2),
    )
    expect = Expectations(quiet_from=WARM_UP_MIN, premises=premises, no_pages=True, expected=_expected_managed(stack))
    result = promtool.run(tmp_path, rules, world, stack, expect)
    assert result.ok, (
        f"managed day one on {stack} ({result.series} series, {result.seconds:.0f} s): a page, an alert not "
        f"expected, an expected alert missing, or the data is not what it claims:\n{result.output}"
    )
