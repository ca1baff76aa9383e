"""The signals issue 27 item 3 added, on the shipped rules in the real promtool.

The generated tests prove each alert's timing on inputs synthesized from the expression; these
cases feed the shapes the expressions exist for: image-pull-failures reads the registry from the
pod spec's image (docker.io for a short name, the host otherwise) and counts images, not pods.
"""

from __future__ import annotations

import subprocess
from pathlib import Path
from typing import Any

import yaml

from tests.promtool_runs import promtool_test
from tests.support import REPO_ROOT

GENERATED = REPO_ROOT / "generated" / "prometheus"


def _series(name: str, values: str, **label_values: str) -> dict[str, str]:
    text = ",".join(f'{key}="{value}"' for key, value in label_values.items())
    return {"series": f"{name}{{{text}}}", "values": values}


def _run(tmp_path: Path, spec: str, cases: dict[str, dict[str, Any]]) -> subprocess.CompletedProcess[str]:
    tests = [{"name": name, "interval": "1m", **case} for name, case in cases.items()]
    test_file = tmp_path / f"{spec}.test.yaml"
    rule_file = GENERATED / "rules" / f"{spec}.rules.yaml"
    document = {"rule_files": [str(rule_file)], "evaluation_interval": "1m", "tests": tests}
    test_file.write_text(yaml.safe_dump(document), encoding="utf-8")
    return promtool_test(test_file)


def _containers(image: str, pods: int, waiting: str, namespace: str = "team-a") -> list[dict[str, str]]:
    """kube-state-metrics series of ``pods`` pods running ``image``; ``waiting`` the waiting series' values."""
    found = []
    workload = image.rsplit("/", 1)[-1].split(":")[0]
    for index in range(pods):
        pod = {"cluster": "c1", "job": "kube-state-metrics", "namespace": namespace, "pod": f"{workload}-{index}"}
        pod["container"] = workload
        found.append(_series("kube_pod_container_info", "1x40", image_spec=image, image=image, **pod))
        found.append(_series("kube_pod_container_status_waiting_reason", waiting, reason="ImagePullBackOff", **pod))
    return found


def _value(registry: str, at: str, value: int | None) -> dict[str, Any]:
    expr = f'slo:sli_value:gauge{{slo="image-pull-failures",registry="{registry}"}}'
    samples = [] if value is None else [{"labels": expr.replace("slo=", 'cluster="c1",slo=', 1), "value": value}]
    return {"expr": expr, "eval_time": at, "exp_samples": samples}


WAITING = "1x40"
PAGE = "ImagePullFailuresAboveCriticalRange"


def _firing(alert: str, at: str, registry: str | None) -> dict[str, Any]:
    expr = f'count(ALERTS{{alertname="{alert}",alertstate="firing"}}) by (registry)'
    samples = [] if registry is None else [{"labels": f'{{registry="{registry}"}}', "value": 1}]
    return {"expr": expr, "eval_time": at, "exp_samples": samples}


def test_image_pull_failures_counts_images_per_registry_read_from_the_image(tmp_path: Path) -> None:
    """Short names are docker.io, a first component with a dot, a colon or localhost is the host;
    50 replicas of one bad tag are one image; 21 images of one registry page for that registry only."""
    registry_down = [
        series
        for index in range(21)
        for series in _containers(f"registry.example.com/team-{index}/job:v1", 2, WAITING, f"team-{index}")
    ]
    cases: dict[str, dict[str, Any]] = {
        "registries read from the image": {
            "input_series": [
                *_containers("busybox:1.36", 1, WAITING, "ns-0"),
                *_containers("library/nginx:1.27", 1, WAITING, "ns-1"),
                *_containers("nvcr.io/nvidia/pytorch:24.05-py3", 1, WAITING, "ns-2"),
                *_containers("localhost/mirror/tool:1", 1, WAITING, "ns-3"),
                *_containers("10.0.0.5:5000/tool:2", 1, WAITING, "ns-4"),
                *_containers("registry.example.com/ml/eval:v2.3.O", 50, WAITING, "ns-5"),
                # Running containers of the same registry: their info series alone count for nothing.
                *_containers("registry.example.com/ml/serve:v1", 5, "_x40", "ns-6"),
            ],
            "promql_expr_test": [
                _value("docker.io", "5m", 2),
                _value("nvcr.io", "5m", 1),
                _value("localhost", "5m", 1),
                _value("10.0.0.5:5000", "5m", 1),
                _value("registry.example.com", "5m", 1),
                _firing(PAGE, "30m", None),
                _firing("ImagePullFailuresAboveNormalRange", "30m", None),
            ],
        },
        "a registry down pages once for the registry": {
            "input_series": [*registry_down, *_containers("busybox:1.36", 3, WAITING)],
            "promql_expr_test": [
                _value("registry.example.com", "5m", 21),
                _firing(PAGE, "9m", None),
                _firing(PAGE, "10m", "registry.example.com"),
            ],
        },
    }
    result = _run(tmp_path, "image-pull-failures", cases)
    assert result.returncode == 0, result.stdout + result.stderr
    # The cases have teeth: counting pods, not images, makes the 50 replicas of one tag 50.
    wrong = {"wrong": {**cases["registries read from the image"]}}
    wrong["wrong"]["promql_expr_test"] = [_value("registry.example.com", "5m", 50)]
    assert _run(tmp_path, "image-pull-failures", wrong).returncode == 1
