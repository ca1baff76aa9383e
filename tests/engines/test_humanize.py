"""The Python ports of Prometheus's humanize functions agree with Prometheus itself (via promtool)."""

from __future__ import annotations

from pathlib import Path

import yaml

from compiler.targets.prometheus.proof.humanize import humanize, humanize1024, humanize_duration, humanize_percentage
from tests.promtool_runs import promtool_test

VALUES = [
    0.0,
    1.0,
    -1.0,
    0.5,
    0.0123456,
    0.158,
    0.9999,
    1.5,
    12.345,
    999.9,
    1000.0,
    1234.5,
    55.0,
    123456789.0,
    0.001,
    0.000123,
    1e-9,
    59.9,
    61.0,
    3599.0,
    3661.5,
    90061.0,
    2048.0,
    1048576.0,
    0.07200000000000001,
    7.2e-05,
    0.9999999999999,  # what a gauge scaled by 3.3 reads from 12-digit inputs: 1000m, not 1 (issue 26)
    0.999999999999,
    999.9999999999,
    0.99995,
]
FUNCTIONS = {
    "humanize": humanize,
    "humanize1024": humanize1024,
    "humanizeDuration": humanize_duration,
    "humanizePercentage": humanize_percentage,
}


def test_ports_format_exactly_as_prometheus(tmp_path: Path) -> None:
    rules, tests = [], []
    for index, value in enumerate(VALUES):
        name = f"Value{index}"
        annotations = {fn: f"{{{{ $value | {fn} }}}}" for fn in FUNCTIONS}
        rules.append({"alert": name, "expr": f"vector({value!r})", "annotations": annotations})
        expected = {fn: port(value) for fn, port in FUNCTIONS.items()}
        tests.append({"eval_time": "0m", "alertname": name, "exp_alerts": [{"exp_annotations": expected}]})
    (tmp_path / "rules.yaml").write_text(yaml.safe_dump({"groups": [{"name": "h", "rules": rules}]}), "utf-8")
    document = {
        "rule_files": ["rules.yaml"],
        "evaluation_interval": "1m",
        "tests": [{"interval": "1m", "input_series": [], "alert_rule_test": tests}],
    }
    (tmp_path / "test.yaml").write_text(yaml.safe_dump(document), "utf-8")
    result = promtool_test(tmp_path / "test.yaml")
    assert result.returncode == 0, result.stderr[-3000:]


def test_ports_known_values() -> None:
    assert humanize_percentage(0.158) == "15.8%"
    assert humanize(1234.5) == "1.234k"
    assert humanize_duration(3661.5) == "1h 1m 1s"
    assert humanize1024(1048576.0) == "1Mi"
