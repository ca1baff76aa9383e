"""kube-state-metrics' view of the workloads' containers and the images they pull.

Verified in kubernetes/kube-state-metrics internal/store/pod.go @v2.13.0:
``kube_pod_container_info{container, image_spec, image, image_id, container_id}`` (:139, labels :146),
one series of value 1 per container status, ``image_spec`` the pod spec's image;
``kube_pod_container_status_waiting_reason{container, reason}`` (:556), one series of value 1 per
container whose state is Waiting, none otherwise. Every pod series carries ``namespace``, ``pod`` and
``uid`` (the object's: honorLabels on the chart's ServiceMonitor).

Each cluster runs the workloads below, two replicas each, every container running. prod-east also
has one workload whose image tag does not exist (``BAD_TAG``): its three replicas wait in
ImagePullBackOff all day, one image of its owner's, which image-pull-failures must not raise.
The cluster fault ``registry-down`` (the platform's registry, ``registry.example.com``, stops
answering) makes every replica of the registry's workloads wait on a pull from its start: the
kubelet's ErrImagePull for the first minute of each back-off, ImagePullBackOff the rest.
"""

from __future__ import annotations

import zlib

from tests.world.stack import StackView
from tests.world.timeline import Series, series
from tests.world.topology import Cluster, World, minute_of

REGISTRY = "registry.example.com"
# (namespace, workload, image): 30 images of the platform's registry, a few from public ones.
WORKLOADS = (
    *(
        (f"team-{team:02d}", f"trainer-{team:02d}", f"{REGISTRY}/team-{team:02d}/trainer:v1.{team}")
        for team in range(30)
    ),
    ("inference", "triton", "nvcr.io/nvidia/tritonserver:24.05-py3"),
    ("ingress", "ingress-nginx", "registry.k8s.io/ingress-nginx/controller:v1.10.1"),
    ("tools", "debug", "busybox:1.36"),
)
REPLICAS = 2
BAD_TAG = ("team-ml", "evaluator", f"{REGISTRY}/team-ml/evaluator:v2.3.O", 3)  # a letter O for a zero
BAD_TAG_CLUSTER = "prod-east"


def series_for(world: World, cluster: Cluster, stack: StackView) -> list[Series]:
    base = {"cluster": cluster.name, "job": stack.job("kube-state-metrics")}
    base["instance"] = f"10.{cluster.index}.200.10:8080"
    base.update(endpoint="http", service="kube-state-metrics")
    count = world.samples
    down = [world.cluster_fault(cluster.name, "registry-down", minute_of(i)) is not None for i in range(count)]
    out: list[Series] = []
    pods = [(ns, name, image, REPLICAS, image.startswith(f"{REGISTRY}/")) for ns, name, image in WORKLOADS]
    if cluster.name == BAD_TAG_CLUSTER:
        pods.append((*BAD_TAG, False))
    for namespace, workload, image, replicas, from_registry in pods:
        for replica in range(replicas):
            pod = f"{workload}-{zlib.crc32(workload.encode()) % 100000:05x}-{replica}"
            labels = {**base, "namespace": namespace, "pod": pod, "container": workload}
            labels["uid"] = f"{zlib.crc32(f'{cluster.name}/{pod}'.encode()):08x}-3c1d-4e2f-8a9b-{replica:012x}"
            if (namespace, workload) == BAD_TAG[:2]:
                waiting = [True] * count
            else:
                waiting = [from_registry and flag for flag in down]
            info = {**labels, "image_spec": image, "image": image, "image_id": "", "container_id": ""}
            out.append(series("kube_pod_container_info", info, [1.0] * count))
            for reason in ("ErrImagePull", "ImagePullBackOff"):
                values = _waiting(waiting, reason == "ErrImagePull", replica)
                out.append(series("kube_pod_container_status_waiting_reason", {**labels, "reason": reason}, values))
    return out


def _waiting(waiting: list[bool], pulling: bool, replica: int) -> list[float | None]:
    """1 while the container waits for this reason: ErrImagePull in the minute of each try (the back-off
    reaches its 5 minutes within a few tries), ImagePullBackOff the other four; absent while it is not waiting."""
    return [
        1.0 if flag and (int(minute_of(i)) % 5 == replica % 5) == pulling else None for i, flag in enumerate(waiting)
    ]
