"""Proof against the world: raw series of a cluster as a real monitoring stack scrapes them.

The generated promtool tests prove each alert against its own spec: inputs derived from the
spec's selectors. This package proves the library against the world instead: it writes the
series a kube-prometheus-stack or kube-prometheus installation delivers for a whole cluster
(job labels as the stack sets them, histogram edges its relabelings drop left out, counters
that only appear at their first event left out, nodes that reboot, a pool that vanishes) and
runs every generated rule file over them with promtool, the real rule engine.

- ``timeline``: sample lists per series (None = not scraped) and their promtool notation;
- ``topology``: the clusters, pools, zones and nodes, and the faults an incident injects;
- ``stack``: what a scrape profile changes in the raw series (from ``compiler.model.stacks``);
- ``control_plane`` and ``nodes``: the exporters' series (apiserver, etcd, scheduler, CoreDNS;
  kubelet, node-exporter, kube-state-metrics);
- ``promtool``: compile the library for a profile in a temp copy, write a test file whose
  assertions read ``ALERTS``, run promtool and report what fired.
"""
