"""What a scrape profile changes in the raw series, read from ``compiler.model.stacks``.

The job label of each component and the ``le`` edges the apiserver ServiceMonitor drops
come from the compiler's own profile table, so the world and the compiler cannot disagree
silently about them. The rest is what the stacks' scrape configs add, as far as their
sources say (library review, "Which stack this library runs on"):

- both stacks run the prometheus-operator, whose ServiceMonitor relabelings add
  ``namespace``, ``service``, ``endpoint`` and ``pod`` (pod targets) or ``node`` (the kubelet's
  Node targets); the kubelet ServiceMonitor scrapes three paths, each its own ``up``
  (``metrics_path`` label);
- kube-prometheus relabels node-exporter's ``instance`` to the node name and starts
  node-exporter with ``--collector.netdev.device-exclude=^(veth.*|[a-f0-9]{15})$``;
  kube-prometheus-stack keeps ``instance`` as ``<node IP>:9100`` and exports veth devices
  (chart defaults, not re-read at a tag: U);
- kube-prometheus scrapes no etcd members by default; the chart's kubeEtcd ServiceMonitor does
  (``job="kube-etcd"``, unverified, as in ``compiler/model/stacks.py``);
- kube-prometheus scrapes kube-state-metrics' telemetry port (its ServiceMonitor's https-self endpoint,
  ``components/kube-state-metrics.libsonnet``), also as ``job="kube-state-metrics"``; kube-prometheus-stack
  does only with ``kube-state-metrics.selfMonitor.enabled``, false by default;
- neither stack adds a ``cluster`` label: every series here carries one, as the platform's
  external labels or relabeling would (the library slices by ``cluster`` everywhere).
"""

from __future__ import annotations

from dataclasses import dataclass

from compiler.model.buckets import KNOWN_BUCKETS
from compiler.model.stacks import BUILT_IN_STACKS


@dataclass(frozen=True)
class StackView:
    name: str
    kubelet_service: str
    node_exporter_instance_is_node: bool
    exports_veth: bool
    scrapes_etcd: bool
    scrapes_ksm_telemetry: bool

    def job(self, component: str) -> str:
        matchers = BUILT_IN_STACKS[self.name].component(component)
        assert matchers and matchers[0].name == "job" and matchers[0].op == "=", (self.name, component)
        return matchers[0].value

    def edges(self, histogram: str) -> tuple[float, ...]:
        """The finite ``le`` edges that reach Prometheus: the catalogue minus the stack's drops."""
        dropped = set(BUILT_IN_STACKS[self.name].dropped(histogram))
        return tuple(edge for edge in KNOWN_BUCKETS[histogram] if edge not in dropped)


STACKS = {
    "kube-prometheus-stack": StackView(
        "kube-prometheus-stack",
        kubelet_service="kube-prometheus-stack-kubelet",
        node_exporter_instance_is_node=False,
        exports_veth=True,
        scrapes_etcd=True,
        scrapes_ksm_telemetry=False,
    ),
    "kube-prometheus": StackView(
        "kube-prometheus",
        kubelet_service="kubelet",
        node_exporter_instance_is_node=True,
        exports_veth=False,
        scrapes_etcd=False,
        scrapes_ksm_telemetry=True,
    ),
}
