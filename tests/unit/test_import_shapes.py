"""`slo-compiler import` takes the common SLOs (issue 28 item 3): histogram latency shapes become
sli.latency, unit-count and gauge-mean shapes sli.state, OpenSLO `good` with a negative matcher a
`bad` the generated tests can build, OpenSLO fixed windows, OpenSLO wording and policy, --prefix,
full file names."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import yaml

from tests.conftest import RunCli

APISERVER_LATENCY = """version: prometheus/v1
service: k8s-apiserver
slos:
  - name: requests-latency
    objective: 99
    sli:
      {sli}
    alerting: {{name: K8sApiserverLatencyAlert}}
"""
COUNT_LESS_BUCKET = """events:
        error_query: |
          (
            sum(rate(apiserver_request_duration_seconds_count{{verb!="WATCH"}}[{{{{.window}}}}]))
            -
            sum(rate(apiserver_request_duration_seconds_bucket{{le="{le}",verb!="WATCH"}}[{{{{.window}}}}]))
          )
        total_query: sum(rate(apiserver_request_duration_seconds_count{{verb!="WATCH"}}[{{{{.window}}}}]))"""
BUCKET_OVER_COUNT = """raw:
        error_ratio_query: |
          1 - (sum(rate(apiserver_request_duration_seconds_bucket{le="5",verb!="WATCH"}[{{.window}}]))
            / sum(rate(apiserver_request_duration_seconds_count{verb!="WATCH"}[{{.window}}])))"""


def _openslo(good: str, total: str, api: str = "openslo/v1alpha", target: float = 0.999) -> str:
    return f"""apiVersion: {api}
kind: SLO
metadata: {{name: requests}}
spec:
  service: svc
  budgetingMethod: Occurrences
  objectives:
    - ratioMetrics:
        good: {{source: prometheus, query: '{good}'}}
        total: {{source: prometheus, query: '{total}'}}
      target: {target}
  timeWindows: [{{count: 30, unit: Day}}]
"""


def _import(
    tmp_path: Path, run_cli: RunCli, fmt: str, text: str, *extra: str
) -> tuple[int, str, str, list[dict[str, Any]]]:
    (tmp_path / "in.yml").write_text(text, encoding="utf-8")
    code, stdout, stderr = run_cli(["import", fmt, "in.yml", "--out", "out", *extra], tmp_path)
    specs = [yaml.safe_load(p.read_text(encoding="utf-8")) for p in sorted((tmp_path / "out").glob("*.yaml"))]
    return code, stdout, stderr, specs


def test_import_histogram_latency_count_less_bucket(tmp_path: Path, run_cli: RunCli) -> None:
    sli = COUNT_LESS_BUCKET.format(le="0.4")
    code, stdout, stderr, (spec,) = _import(tmp_path, run_cli, "sloth", APISERVER_LATENCY.format(sli=sli))
    assert code == 0, stderr
    assert spec["sli"] == {
        "latency": {
            "histogram": "apiserver_request_duration_seconds",
            "selector": '{verb!="WATCH"}',
            "threshold": 0.4,
            "on_dropped_edge": "next_kept_above",  # kube-prometheus(-stack) drop le="0.4": read le="1" there
        }
    }
    assert 'kube-prometheus-stack drops le="0.4"' in stdout and 'reads le="1"' in stdout


def test_import_histogram_latency_bucket_over_count(tmp_path: Path, run_cli: RunCli) -> None:
    code, _, stderr, (spec,) = _import(tmp_path, run_cli, "sloth", APISERVER_LATENCY.format(sli=BUCKET_OVER_COUNT))
    assert code == 0, stderr
    assert spec["sli"]["latency"]["threshold"] == 5  # a kept edge: no fallback
    assert "on_dropped_edge" not in spec["sli"]["latency"]


def test_import_histogram_latency_rate_of_bucket_openslo(tmp_path: Path, run_cli: RunCli) -> None:
    good = 'sum(rate(apiserver_request_duration_seconds_bucket{le="1",verb!="WATCH"}[{{.window}}]))'
    total = 'sum(rate(apiserver_request_duration_seconds_count{verb!="WATCH"}[{{.window}}]))'
    code, _, stderr, (spec,) = _import(tmp_path, run_cli, "openslo", _openslo(good, total))
    assert code == 0, stderr
    assert spec["sli"]["latency"]["threshold"] == 1 and spec["sli"]["latency"]["selector"] == '{verb!="WATCH"}'


def test_import_histogram_latency_threshold_not_an_edge(tmp_path: Path, run_cli: RunCli) -> None:
    sli = COUNT_LESS_BUCKET.format(le="0.3")
    code, _, stderr, specs = _import(tmp_path, run_cli, "sloth", APISERVER_LATENCY.format(sli=sli))
    assert code == 1 and specs == []
    assert "in.yml:8:9: not imported: SLO k8s-apiserver-requests-latency:" in stderr
    assert 'le="0.3" is not a bucket edge of apiserver_request_duration_seconds' in stderr
    assert "nearest: 0.2 or 0.4" in stderr


def test_import_histogram_latency_unknown_histogram_declares_its_edge(tmp_path: Path, run_cli: RunCli) -> None:
    sli = COUNT_LESS_BUCKET.format(le="0.25").replace("apiserver_request_duration_seconds", "my_seconds")
    code, stdout, _, (spec,) = _import(tmp_path, run_cli, "sloth", APISERVER_LATENCY.format(sli=sli))
    assert code == 0
    assert spec["sli"]["latency"]["buckets"] == [0.25]
    assert "my_seconds is not in the built-in bucket catalogue" in stdout


def test_import_state_shapes(tmp_path: Path, run_cli: RunCli) -> None:
    count = """events:
        error_query: sum_over_time((count(wifi_ratio < 0.75))[{{.window}}:]) OR on() vector(0)
        total_query: sum_over_time((count(wifi_ratio))[{{.window}}:])"""
    code, _, stderr, (spec,) = _import(tmp_path, run_cli, "sloth", APISERVER_LATENCY.format(sli=count))
    assert code == 0, stderr
    assert spec["sli"] == {"state": {"expr": "wifi_ratio >= bool 0.75"}}
    mean = """raw:
        error_ratio_query: >-
          1 - (sum(sum_over_time(wifi_ratio[{{.window}}])) / sum(count_over_time(wifi_ratio[{{.window}}])))"""
    code, stdout, stderr, (spec,) = _import(tmp_path, run_cli, "sloth", APISERVER_LATENCY.format(sli=mean), "--force")
    assert code == 0, stderr
    assert spec["sli"] == {"state": {"expr": "wifi_ratio"}}
    assert "must stay between 0 and 1" in stdout


def test_import_good_negative_matcher_becomes_bad(tmp_path: Path, run_cli: RunCli) -> None:
    good = 'sum(rate(http_requests_total{job="a",code!~"(5..|429)"}[{{.window}}]))'
    total = 'sum(rate(http_requests_total{job="a"}[{{.window}}]))'
    code, stdout, stderr, (spec,) = _import(tmp_path, run_cli, "openslo", _openslo(good, total))
    assert code == 0, stderr
    assert spec["sli"] == {
        "ratio": {"bad": 'http_requests_total{job="a",code=~"(5..|429)"}', "total": 'http_requests_total{job="a"}'}
    }
    assert "is written as bad" in stdout


def test_import_openslo_fixed_window_queries(tmp_path: Path, run_cli: RunCli) -> None:
    good = 'sum(rate(http_requests_total{code!~"5.."}[5m]))'
    total = "sum(rate(http_requests_total[5m]))"
    code, stdout, stderr, (spec,) = _import(tmp_path, run_cli, "openslo", _openslo(good, total))
    assert code == 0, stderr
    assert spec["sli"]["ratio"]["total"] == "http_requests_total"
    assert "fixed window ([5m]) is dropped" in stdout


def test_import_openslo_wording_and_default_policy(tmp_path: Path, run_cli: RunCli) -> None:
    text = _openslo('sum(rate(x{code!~"5.."}[5m]))', "sum(rate(x[5m]))")
    code, stdout, _, (spec,) = _import(tmp_path, run_cli, "openslo", text)
    assert code == 0
    assert spec["objective"]["burn_policy"] == "default"
    written = next((tmp_path / "out").glob("*.yaml")).read_text(encoding="utf-8")
    assert "Sloth" not in written and "Sloth" not in stdout
    assert "OpenSLO's query summed every series" in written
    # The same file imported as Sloth's (Sloth ran it) keeps Sloth's pairs.
    code, _, _, (spec,) = _import(tmp_path, run_cli, "sloth", text, "--force")
    assert spec["objective"]["burn_policy"] == "sloth"


def test_import_pairs_that_can_never_fire_left_out(tmp_path: Path, run_cli: RunCli) -> None:
    text = _openslo('sum(rate(x{code!~"5.."}[5m]))', "sum(rate(x[5m]))", target=0.9)
    code, stdout, _, (spec,) = _import(tmp_path, run_cli, "sloth", text)
    assert code == 0
    assert "burn_policy" not in spec["objective"]
    assert [(a["long"], a["short"]) for a in spec["objective"]["burn_alerts"]] == [
        ("6h", "30m"),
        ("1d", "2h"),
        ("3d", "6h"),
    ]
    assert "1 left out" in stdout


def test_import_prefix_for_colliding_names(tmp_path: Path, run_cli: RunCli) -> None:
    sli = COUNT_LESS_BUCKET.format(le="1")
    for name in ("a.yml", "b.yml"):
        (tmp_path / name).write_text(APISERVER_LATENCY.format(sli=sli), encoding="utf-8")
    code, _, stderr = run_cli(["import", "sloth", "a.yml", "b.yml", "--out", "out"], tmp_path)
    assert code == 1 and "b.yml:4:11: a second SLO imports as k8s-apiserver-requests-latency" in stderr
    assert "--prefix NAME-" in stderr
    code, _, stderr = run_cli(["import", "sloth", "b.yml", "--out", "out", "--prefix", "ex2-"], tmp_path)
    assert code == 0, stderr
    spec = yaml.safe_load((tmp_path / "out" / "ex2-k8s-apiserver-requests-latency.yaml").read_text(encoding="utf-8"))
    assert spec["name"] == "ex2-k8s-apiserver-requests-latency"
    assert spec["alert_names"] == {"burn": "Ex2K8sApiserverLatencyAlert"}
    code, _, stderr = run_cli(["import", "sloth", "b.yml", "--out", "out", "--prefix", "Bad_"], tmp_path)
    assert code == 2 and "'Bad_' is not a name prefix" in stderr


def test_import_full_file_names(tmp_path: Path, run_cli: RunCli) -> None:
    long = "requests-availability-contrib-plugin-rule-intervals-v1"
    sli = COUNT_LESS_BUCKET.format(le="1")
    text = APISERVER_LATENCY.format(sli=sli).replace("requests-latency", long)
    code, stdout, _, (spec,) = _import(tmp_path, run_cli, "sloth", text)
    assert code == 0
    full = f"k8s-apiserver-{long}"
    assert (tmp_path / "out" / f"{full}.yaml").is_file()
    assert len(spec["name"]) == 63 and spec["name"].startswith(full[:50]) and spec["name"] != full[:63]
    assert f"the full {full} is shortened" in stdout
