"""The library review's ❌ findings that no other test showed fixed (issue 13: a test per finding).

`/work/notes/findings.md` lists every finding of `../shared/docs/library-review.md` with the
test or scenario that proves what the library does now. These are the proofs that were
missing: the unsafe-command patterns of `tests/unit/source/test_library_commands.py` that had no case
showing they catch the library's old text, the safe forms the review asked for, the APF
rejection reason that no longer exists on 1.29+, the unmeasured ranges kept in shadow, and
one incident of protected-level rejections reaching on-call as one page per cluster in the
real Alertmanager 0.25.
"""

from __future__ import annotations

import dataclasses
import re
import time
from pathlib import Path

import pytest

from compiler.model import SLO, Model
from tests import servers
from tests.engines.test_fleet_signals import _alert, _count, _nics, _run_cases, _webhook_model
from tests.engines.test_hostile_routing import post_alerts, write_alertmanager
from tests.engines.test_library_findings import firing, promtool_test
from tests.support import LIBRARY_SPECS, compile_tree
from tests.unit.source.test_library_commands import _findings as unsafe_findings
from tests.unit.source.test_library_commands import _texts


@pytest.fixture(scope="module")
def library() -> Model:
    return compile_tree(LIBRARY_SPECS)


def spec(model: Model, name: str) -> SLO:
    return next(s for s in model.slos if s.name == name)


def with_steps(slo: SLO, *steps: str) -> SLO:
    """The spec with only these steps and no stop conditions: a mitigation as an older library had it."""
    return dataclasses.replace(slo, mitigation=dataclasses.replace(slo.mitigation, steps=steps, stop_conditions=()))


# -- the unsafe commands, as the library had them before the review (git show 05fba3a^) ----------

# Each is the step's text from the library the review read, for a ❌ spec or a command the review
# names as wrong; tests/unit/source/test_library_commands.py must refuse every one of them.
OLD_STEPS = {
    "read-latency: paginate": (
        "apiserver-read-latency",
        "Enable ConsistentListFromCache (beta, on by default in 1.31) if the cluster is older, "
        "and make clients paginate with limit=500.",
    ),
    "watch-cache-bypass: pagination": (
        "watch-cache-bypass",
        "Move the client to the watch cache: shared informers, or LIST with resourceVersion=0 and "
        "pagination (limit=500); add field selectors (spec.nodeName) for per-node agents.",
    ),
    "cluster-dns-latency: CPA ratio raised": (
        "cluster-dns-latency",
        "Scale CoreDNS: kubectl -n kube-system scale deployment coredns --replicas=<n>, or raise the "
        "cluster-proportional-autoscaler's nodesPerReplica/coresPerReplica ratio.",
    ),
    "cluster-dns-latency: type label": (
        "cluster-dns-latency",
        "Find where the slowness is: histogram_quantile(0.99, sum by (le, server, zone, type) "
        '(rate(coredns_dns_request_duration_seconds_bucket{job="coredns"}[5m]))).',
    ),
    "etcd-db-quota: compact to the current revision": (
        "etcd-db-quota",
        "Compact to the current revision and defragment one member at a time: rev=$(etcdctl endpoint "
        "status --write-out=json | jq '.[0].Status.header.revision'); etcdctl compact $rev; "
        "etcdctl --endpoints=<member> defrag.",
    ),
    "nic-drop-budget: redirect to a glob": (
        "nic-drop-budget",
        "CPU-bound receive: spread IRQs and enable RPS (echo <cpumask> > "
        "/sys/class/net/<device>/queues/rx-*/rps_cpus).",
    ),
    "conntrack-exhaustion: awk $7": (
        "conntrack-exhaustion",
        "On that node, group entries by source: conntrack -L -o extended | awk '{print $7}' | sort | uniq -c",
    ),
}


@pytest.mark.parametrize("case", sorted(OLD_STEPS))
def test_the_old_unsafe_step_is_refused(library: Model, case: str) -> None:
    name, step = OLD_STEPS[case]
    assert unsafe_findings((with_steps(spec(library, name), step),)) != [], case


# -- ConsistentListFromCache: a planned change, never a 3 a.m. step (apiserver-read-latency ❌ (3)) --

CACHE_GATE = "ConsistentListFromCache"
# Said wherever the gate is named, so no text reads as an incident step ...
NOT_A_STEP = r"not an incident step|not a 3 a\.m\. step"
# ... and somewhere in the spec's mitigation: why it is not one.
GATE_CAVEATS = (r"alpha before 1\.31", r"restart of every apiserver")


def cache_gate_findings(slos: tuple[SLO, ...]) -> list[str]:
    """The gate is alpha before 1.31 and restarts every apiserver (every client relists): never a 3 a.m. step."""
    found = []
    for slo in slos:
        texts = [(where, text) for where, text in _texts(slo) if CACHE_GATE in text]
        found += [
            f"{slo.name} mitigation.{where}: reads as a step"
            for where, text in texts
            if not re.search(NOT_A_STEP, text)
        ]
        joined = " ".join(text for _, text in texts)
        found += [
            f"{slo.name}: {caveat} not said" for caveat in GATE_CAVEATS if texts and not re.search(caveat, joined)
        ]
    return found


def test_the_cache_gate_is_named_only_as_a_planned_change(library: Model) -> None:
    assert cache_gate_findings(library.slos) == []
    # The specs the review flagged still name the gate (so the check above is not vacuous).
    assert all(
        any(CACHE_GATE in text for _, text in _texts(spec(library, name)))
        for name in ("apiserver-read-latency", "watch-cache-bypass")
    )


def test_the_old_cache_gate_step_is_refused(library: Model) -> None:
    _, step = OLD_STEPS["read-latency: paginate"]
    assert len(cache_gate_findings((with_steps(spec(library, "apiserver-read-latency"), step),))) == 3


# -- the safe forms the review asked for --------------------------------------------------------

# (spec, a pattern its mitigation must contain, the review finding)
SAFE_FORMS = (
    ("etcd-db-quota", r"followers first", "etcd-db-quota (2): defragment followers first"),
    ("etcd-db-quota", r"etcdctl move-leader", "etcd-db-quota (2): move the leader before defragmenting it"),
    ("etcd-db-quota", r"compacts every 5 minutes", "etcd-db-quota (2): the apiserver already compacts"),
    ("cluster-dns-latency", r"lower its nodesPerReplica/coresPerReplica", "cluster-dns-latency (3): CPA inverted"),
    ("cluster-dns-latency", r"reverts a kubectl scale", "cluster-dns-latency (3): kubectl scale is reverted"),
    ("cluster-dns-servfail", r"lower its nodesPerReplica/coresPerReplica", "CPA inverted (servfail)"),
    ("cluster-dns-servfail", r"it reverts that", "kubectl scale is reverted by CPA (servfail)"),
    ("scheduler-errors", r"crictl stop", "scheduler-errors: static pod, restart on the host"),
    ("scheduler-backlog", r"crictl stop", "scheduler-backlog (1): static pod, restart on the host"),
    ("apf-protected-level-rejections", r"autoupdate-spec=false --overwrite", "X3: annotate before editing"),
    ("scheduler-errors", r"autoupdate-spec=false --overwrite", "X3: annotate before editing"),
)


def missing_safe_forms(slos: tuple[SLO, ...]) -> list[str]:
    by_name = {slo.name: " ".join(text for _, text in _texts(slo)) for slo in slos}
    return [finding for name, pattern, finding in SAFE_FORMS if not re.search(pattern, by_name.get(name, ""))]


def test_the_steps_give_the_safe_forms_the_review_asked_for(library: Model) -> None:
    assert missing_safe_forms(library.slos) == []


def test_a_spec_without_its_safe_form_is_reported(library: Model) -> None:
    stripped = tuple(with_steps(slo, "Look at the dashboard.") for slo in library.slos)
    assert len(missing_safe_forms(stripped)) == len(SAFE_FORMS)


# -- APF reason "cancelled" exists on 1.28 only (apf-protected-level-rejections ❌ (5)) ------------

# Read in k8s.io/apiserver pkg/util/flowcontrol/fairqueuing/queueset/queueset.go: AddReject is
# called with "cancelled" at v0.28.0 (line 449) and at no call site of v0.29.0 or v0.31.0, which
# report only concurrency-limit, queue-full and time-out.


def cancelled_findings(slos: tuple[SLO, ...]) -> list[str]:
    return [
        f"{slo.name} mitigation.{where}"
        for slo in slos
        for where, text in _texts(slo)
        if re.search(r"\bcancelled\b", text) and "1.28" not in text
    ]


def test_the_cancelled_reason_is_named_only_for_1_28(library: Model) -> None:
    assert cancelled_findings(library.slos) == []
    old = "Rejections with reason cancelled only, at under 0.1/s, are clients giving up: confirm with apiserver logs."
    assert cancelled_findings((with_steps(spec(library, "apf-protected-level-rejections"), old),)) != []


# -- normal ranges never measured run in shadow ("Normal ranges that were never measured") --------

UNMEASURED = (
    "watch-cache-bypass",  # 100,000 objects/s
    "watch-event-bytes",  # 100 MB/s per kind
    "kubelet-runtime-errors",  # 0.1/s per node
    "watch-fanout",  # 1.5x a day earlier
    *(f"list-volume-{r}" for r in ("pods", "nodes", "endpointslices", "events", "configmaps", "secrets")),
)


def test_the_unmeasured_ranges_run_in_shadow(library: Model) -> None:
    assert {name: spec(library, name).mode for name in UNMEASURED} == dict.fromkeys(UNMEASURED, "shadow")


# -- one APF incident: one page per starved level (apf-protected-level-rejections ❌ (3)) ----------

APF_PAGE = "APFRejectingProtectedLevelAboveCriticalRange"  # the page (review 3: any rejection is a ticket)
# One saturation incident in c1: two protected levels, three FlowSchemas, three reasons; one slice in c2.
APF_REJECTIONS = (
    ("c1", "workload-high", "kube-system-service-accounts", "time-out"),
    ("c1", "workload-high", "kube-system-service-accounts", "queue-full"),
    ("c1", "workload-high", "kube-controller-manager", "time-out"),
    ("c1", "workload-high", "kube-scheduler", "concurrency-limit"),
    ("c1", "node-high", "system-nodes", "time-out"),
    ("c1", "node-high", "system-nodes", "queue-full"),
    ("c2", "workload-high", "kube-system-service-accounts", "time-out"),
)
STARVED_LEVELS = sorted({(cluster, level) for cluster, level, _, _ in APF_REJECTIONS})


def test_protected_level_rejections_fire_once_per_starved_level(tmp_path: Path) -> None:
    """Rejections from 7 (FlowSchema, reason) series on 3 (cluster, level) pairs: 3 alerts, not 7."""
    series = [
        {
            "series": "apiserver_flowcontrol_rejected_requests_total"
            f'{{cluster="{cluster}",job="apiserver",instance="10.0.0.1:6443",priority_level="{level}",'
            f'flow_schema="{flow_schema}",reason="{reason}"}}',
            "values": "0+60x30",  # 1 rejection/s
        }
        for cluster, level, flow_schema, reason in APF_REJECTIONS
    ]
    per_level = {
        "expr": f'count by (cluster, priority_level) (ALERTS{{alertname="{APF_PAGE}",alertstate="firing"}})',
        "eval_time": "20m",
        "exp_samples": [
            {"labels": f'{{cluster="{c}",priority_level="{level}"}}', "value": 1} for c, level in STARVED_LEVELS
        ],
    }
    tests = [{"interval": "1m", "input_series": series, "promql_expr_test": [per_level, firing(APF_PAGE, "20m", 3)]}]
    result = promtool_test(tmp_path, "apf-protected-level-rejections.rules.yaml", tests)
    assert result.returncode == 0, result.stdout + result.stderr


def test_protected_level_pages_reach_on_call_once_per_starved_level(tmp_path: Path) -> None:
    """In the real Alertmanager: one page notification per (cluster, level), none per FlowSchema or reason."""
    with servers.webhook() as hook:
        model = _webhook_model(f"http://127.0.0.1:{hook.port}")
        config = write_alertmanager(model, tmp_path / "out")
        alerts = [
            _alert(model, "apf-protected-level-rejections", APF_PAGE, cluster=cluster, priority_level=level)
            for cluster, level in STARVED_LEVELS
        ]
        assert {alert["labels"]["severity"] for alert in alerts} == {"page"}
        with servers.alertmanager(tmp_path, config) as am:
            post_alerts(am, alerts)
            assert servers.wait_until(lambda: len(hook.alerts("page")) >= len(alerts), 20), hook.received
            time.sleep(3)  # three group intervals: a second notification for the same group would be here by now
            with hook.lock:
                notifications = list(hook.received.get("page", []))
    delivered = sorted(
        (n["groupLabels"]["cluster"], n["groupLabels"]["priority_level"], len(n["alerts"])) for n in notifications
    )
    assert delivered == [(cluster, level, 1) for cluster, level in STARVED_LEVELS], delivered


# -- X8 for drops: one host that drops is seen (nic-drop-budget ⚠️ (1)) ---------------------------


def test_one_dropping_nic_among_healthy_ones_is_a_ticket_naming_it(tmp_path: Path) -> None:
    """2% drops on one NIC of ten (a cluster ratio of 0.2%): a ticket naming instance and device after 30m."""
    ticket = "NICDropsUnitAboveCriticalRange"
    cases = {
        "10.0.0.3 eth1 drops 2%": {
            "input_series": _nics(("10.0.0.3:9100", "eth1"), counter="drop", share=0.02, minutes=50),
            "promql_expr_test": [
                _count(ticket, "29m", None),
                _count(ticket, "31m", 1, instance="10.0.0.3:9100", device="eth1"),
                _count(ticket, "31m", 1),
                _count("NICDropsAboveCriticalRange", "50m", None),
            ],
        }
    }
    result = _run_cases(tmp_path, "nic-drop-budget", cases)
    assert result.returncode == 0, result.stdout + result.stderr
