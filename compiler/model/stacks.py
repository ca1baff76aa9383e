"""Scrape profiles: the job selector of each component and the bucket edges a stack drops.

The same spec reads different series on different monitoring stacks: kube-prometheus-stack
labels CoreDNS ``job="coredns"`` where kube-prometheus says ``job="kube-dns"``, and both
drop ``le`` edges of the apiserver and etcd histograms at scrape time. A threshold on a
dropped edge matches no bucket series, so the SLI reads 100% bad on a healthy cluster
(library review, finding X1). Specs therefore name a component (``slice.component``) and
the project names the stack (``scrape_profile``); the edge check and the job matchers follow.

A stack may also scrape a component not at all by default (kube-prometheus: etcd). A spec
reading only that component would see no series and raise its no-data alert on day one, so
the plan leaves it out on that profile (with a note saying how to add the scrape) until
project.yaml names the component's matchers in ``scrape_profile.components``.
"""

from __future__ import annotations

from dataclasses import dataclass

from compiler.promql import Matcher


@dataclass(frozen=True)
class ScrapeProfile:
    """One stack as the rules see it: job matchers per component, dropped edges per histogram."""

    stack: str
    components: tuple[tuple[str, tuple[Matcher, ...]], ...]
    dropped_buckets: tuple[tuple[str, tuple[float, ...]], ...]
    relabeling: str  # where the drops are configured, quoted in errors
    # Components the stack does not scrape by default, each with how to add the scrape (quoted in notes).
    unscraped: tuple[tuple[str, str], ...] = ()

    def component(self, name: str) -> tuple[Matcher, ...] | None:
        return dict(self.components).get(name)

    def how_to_scrape(self, component: str) -> str | None:
        """How to make the stack scrape ``component``, or None when it scrapes it already."""
        return dict(self.unscraped).get(component)

    def dropped(self, histogram: str) -> tuple[float, ...]:
        return dict(self.dropped_buckets).get(histogram, ())


def _job(value: str) -> tuple[Matcher, ...]:
    return (Matcher("job", "=", value),)


def _edges(text: str) -> tuple[float, ...]:
    return tuple(float(edge) for edge in text.split())


# kube-prometheus-stack >= 68.0.0 (still at 88.5.3), charts/kube-prometheus-stack/values.yaml line 1742
# (kubeApiServer.serviceMonitor.metricRelabelings, added by f699905ab):
#   regex: (etcd_request|apiserver_request_slo|apiserver_request_sli|apiserver_request)_duration_seconds_bucket;
#          (0\.15|0\.2|0\.3|0\.35|0\.4|0\.45|0\.6|0\.7|0\.8|0\.9|1\.25|1\.5|1\.75|2|3|3\.5|4|4\.5|6|7|8|9|
#           15|20|40|45|50)(\.0)?
# Charts 68.0.0-70.4.1 also dropped 30 (put back by 52506c20d in 70.4.2): override dropped_buckets for those.
_KPS_DROPPED = _edges("0.15 0.2 0.3 0.35 0.4 0.45 0.6 0.7 0.8 0.9 1.25 1.5 1.75 2 3 3.5 4 4.5 6 7 8 9 15 20 40 45 50")
_KPS_RELABELING = "its apiserver ServiceMonitor metricRelabelings, charts/kube-prometheus-stack/values.yaml:1742"

# kube-prometheus (jsonnet), components/k8s-control-plane.libsonnet (serviceMonitorApiserver metricRelabelings):
#   regex: apiserver_request_duration_seconds_bucket;(0.15|0.25|0.3|0.35|0.4|0.45|0.6|0.7|0.8|0.9|1.25|1.5|1.75|
#          2.5|3|3.5|4.5|6|7|8|9|15|25|30|50)
# (read at ddaa90f7). Since 69d9636b (October 2024, line 327) the same edges are dropped for the etcd and SLI
# histograms too (library review; the widened name list is not re-read here). The regex has no (\.0)?, so on
# Prometheus 3 (le="30.0") nothing is dropped; the library targets Prometheus 2.42, where the drop applies.
_KP_DROPPED = _edges("0.15 0.25 0.3 0.35 0.4 0.45 0.6 0.7 0.8 0.9 1.25 1.5 1.75 2.5 3 3.5 4.5 6 7 8 9 15 25 30 50")
_KP_RELABELING = (
    "its apiserver ServiceMonitor metricRelabelings, jsonnet/kube-prometheus/components/k8s-control-plane.libsonnet:327"
)

_DROPPING_HISTOGRAMS = (
    "etcd_request_duration_seconds",
    "apiserver_request_sli_duration_seconds",
    "apiserver_request_slo_duration_seconds",
    "apiserver_request_duration_seconds",
)

# Job names. kube-prometheus (k8s-control-plane.libsonnet at ddaa90f7): the mixin selectors job="apiserver",
# "kubelet", "node-exporter", "kube-state-metrics", "kube-scheduler", "kube-controller-manager"; kube-proxy's
# PodMonitor (only with kubeProxy: true) has jobLabel k8s-app, so job="kube-proxy"; the CoreDNS ServiceMonitor
# selects the kube-dns Service (jobLabel app.kubernetes.io/name, which it lacks, so its name): job="kube-dns".
# kube-prometheus-stack: CoreDNS is job="coredns" (templates/exporters/core-dns/service.yaml:8, jobLabel coredns);
# apiserver, kubelet, node-exporter, kube-state-metrics, kube-scheduler as kube-prometheus (library review).
# kube-prometheus-stack 88.5.3: the etcd, kube-controller-manager and kube-proxy Services are labelled
# jobLabel: kube-etcd / kube-controller-manager / kube-proxy (templates/exporters/<component>/service.yaml)
# and their ServiceMonitors take the job from that label (values.yaml serviceMonitor.jobLabel: jobLabel).
# kube-prometheus scrapes no etcd by default; its addon jsonnet/kube-prometheus/addons/static-etcd.libsonnet
# (read at 4d719f1d) adds Service, Endpoints and ServiceMonitor "etcd" in kube-system with
# jobLabel: app.kubernetes.io/name and that label set to "etcd", so job="etcd". Override them in project.yaml
# scrape_profile.components when they differ.
_COMMON_JOBS = {
    "apiserver": "apiserver",
    "kubelet": "kubelet",
    "node-exporter": "node-exporter",
    "kube-state-metrics": "kube-state-metrics",
    "kube-scheduler": "kube-scheduler",
    "kube-controller-manager": "kube-controller-manager",
    "kube-proxy": "kube-proxy",
    # Neither stack scrapes the cluster-autoscaler (both list it in unscraped below). Its chart
    # (kubernetes/autoscaler cluster-autoscaler/charts/cluster-autoscaler 9.59.0) creates a ServiceMonitor only
    # with serviceMonitor.enabled (values.yaml:458, false), without jobLabel, so the job is its Service's
    # name, "<release>-<cloudProvider>-cluster-autoscaler" (templates/_helpers.tpl, fullname), or
    # "cluster-autoscaler" with fullnameOverride: cluster-autoscaler, which this default assumes.
    "cluster-autoscaler": "cluster-autoscaler",
    # Neither stack scrapes NVIDIA's dcgm-exporter (both list it in unscraped below). The GPU operator
    # (NVIDIA/gpu-operator v24.9.0 and v25.10.1) creates its ServiceMonitor only with
    # dcgmExporter.serviceMonitor.enabled (deployments/gpu-operator/values.yaml:304 @v25.10.1, false), named
    # nvidia-dcgm-exporter with jobLabel: app (assets/state-dcgm-exporter/0500_service_monitor.yaml:4,12
    # @v25.10.1, 0700_service_monitor.yaml @v24.9.0), and the Service's label app is nvidia-dcgm-exporter
    # (0400_service.yaml:7 @v25.10.1, 0600_service.yaml:7 @v24.9.0), so job="nvidia-dcgm-exporter".
    "dcgm-exporter": "nvidia-dcgm-exporter",
}
_CLUSTER_AUTOSCALER_UNSCRAPED = (
    "cluster-autoscaler",
    "install its chart with serviceMonitor.enabled: true and serviceMonitor.selector matching your Prometheus's "
    "serviceMonitorSelector; the job is the chart's Service name, <release>-<cloudProvider>-cluster-autoscaler",
)
# Prometheus and Alertmanager: their ServiceMonitors set no jobLabel, so the job is the Service's name.
# kube-prometheus-stack 88.5.3 (release kube-prometheus-stack): templates/prometheus/service.yaml and
# templates/alertmanager/service.yaml name them "<fullname>-prometheus" / "<fullname>-alertmanager", and the
# fullname is the release name when it contains the chart name (_helpers.tpl, kube-prometheus-stack.fullname);
# another release name gives other jobs: override them in scrape_profile.components. kube-prometheus
# (main.libsonnet: prometheus name 'k8s', alertmanager name 'main'; components/prometheus.libsonnet and
# alertmanager.libsonnet: Service 'prometheus-' + name / 'alertmanager-' + name, read at 4d719f1d).
_KPS_JOBS = {
    **_COMMON_JOBS,
    "coredns": "coredns",
    "etcd": "kube-etcd",
    "prometheus": "kube-prometheus-stack-prometheus",
    "alertmanager": "kube-prometheus-stack-alertmanager",
}
_KP_JOBS = {
    **_COMMON_JOBS,
    "coredns": "kube-dns",
    "etcd": "etcd",  # etcd: with the static-etcd addon only
    "prometheus": "prometheus-k8s",
    "alertmanager": "alertmanager-main",
}
_DCGM_EXPORTER_UNSCRAPED = (
    "dcgm-exporter",
    "set the GPU operator's dcgmExporter.serviceMonitor.enabled: true (ClusterPolicy "
    "spec.dcgmExporter.serviceMonitor) with labels matching your Prometheus's serviceMonitorSelector; the job "
    "is nvidia-dcgm-exporter",
)
_KPS_UNSCRAPED = (_CLUSTER_AUTOSCALER_UNSCRAPED, _DCGM_EXPORTER_UNSCRAPED)
_KP_UNSCRAPED = (
    _CLUSTER_AUTOSCALER_UNSCRAPED,
    _DCGM_EXPORTER_UNSCRAPED,
    (
        "etcd",
        "the addon jsonnet/kube-prometheus/addons/static-etcd.libsonnet with values.etcd.ips and its client "
        'certificates, which scrapes job="etcd", or a ServiceMonitor of your own',
    ),
)


def _profile(
    stack: str,
    jobs: dict[str, str],
    dropped: tuple[float, ...],
    relabeling: str,
    unscraped: tuple[tuple[str, str], ...] = (),
) -> ScrapeProfile:
    return ScrapeProfile(
        stack=stack,
        components=tuple(sorted((name, _job(job)) for name, job in jobs.items())),
        dropped_buckets=tuple((histogram, dropped) for histogram in sorted(_DROPPING_HISTOGRAMS)),
        relabeling=relabeling,
        unscraped=unscraped,
    )


BUILT_IN_STACKS: dict[str, ScrapeProfile] = {
    "kube-prometheus-stack": _profile(
        "kube-prometheus-stack", _KPS_JOBS, _KPS_DROPPED, _KPS_RELABELING, _KPS_UNSCRAPED
    ),
    "kube-prometheus": _profile("kube-prometheus", _KP_JOBS, _KP_DROPPED, _KP_RELABELING, _KP_UNSCRAPED),
}
