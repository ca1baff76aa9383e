"""Counters created on their first event (``sli.gauge.absent_as_zero_while``, issue 12 item 2).

A ``CounterVec`` child exists only after its first ``Inc()``, so on a healthy cluster a
"must be zero" gauge over such a counter has no series, and without this field its no-data
alert fires for ever. These tests prove with the real promtool that, with the field, a
healthy component (``up`` at 1, counter absent) raises nothing for an hour, that no-data
still fires once the targets are gone, that a real event still alerts, and that misuse is a
positioned error.
"""

from __future__ import annotations

import json
import subprocess
import threading
import time
from collections.abc import Callable, Iterator, Sequence
from contextlib import contextmanager
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from typing import Any

import yaml

from tests import servers
from tests.conftest import RATIO_SLI_AND_OBJECTIVE

RunCli = Callable[[Sequence[str | Path], Path], tuple[int, str, str]]

SLO = "specs/network/dns-errors.yaml"
# Lines 10-16 of the conftest spec, swapped for a gauge over a first-event counter (same line count).
GAUGE_SLI = """\
sli:
  gauge:
    expr: 'sum by (cluster) (rate(coredns_panics_total[5m]))'
    absent_as_zero_while: 'up == 1'
unit: per_second
normal_range:
  max: 0
"""
PRESENCE_LINE = "    absent_as_zero_while: 'up == 1'\n"
PRESENCE_VALUE_COLUMN = 1 + len("    absent_as_zero_while: ")
RULE_LABELS = {"slo": "dns-errors", "team": "platform-network", "family": "node-network-errors"}
UP = 'up{cluster="c1",instance="10.0.0.1:9153",job="kube-dns"}'
COUNTER = 'coredns_panics_total{cluster="c1",instance="10.0.0.1:9153",job="kube-dns"}'
HOUR = 60


def gauge_spec(slo_file: Path, sli: str = GAUGE_SLI) -> None:
    text = slo_file.read_text(encoding="utf-8")
    assert text.count(RATIO_SLI_AND_OBJECTIVE) == 1
    slo_file.write_text(text.replace(RATIO_SLI_AND_OBJECTIVE, sli), encoding="utf-8")


def generate(run_cli: RunCli, tmp_path: Path) -> Path:
    code, _, stderr = run_cli(["generate", "--specs", "specs", "--out", "out"], tmp_path)
    assert code == 0, stderr
    return tmp_path / "out" / "prometheus"


def promtool(*args: str | Path) -> None:
    result = subprocess.run(["promtool", *map(str, args)], capture_output=True, text=True, check=False, timeout=120)
    assert result.returncode == 0, result.stdout + result.stderr


def hand_test(tmp_path: Path, rules: Path, tests: list[dict[str, Any]]) -> None:
    document = {
        "rule_files": [str(rules / "rules" / "dns-errors.rules.yaml")],
        "evaluation_interval": "1m",
        "tests": [{"interval": "1m", **test} for test in tests],
    }
    path = tmp_path / "hand.test.yaml"
    path.write_text(yaml.safe_dump(document, sort_keys=False), encoding="utf-8")
    promtool("test", "rules", path)


def no_data_wait(rules: Path) -> int:
    """The no-data alert's ``for`` in minutes, read from the generated rule."""
    document = yaml.safe_load((rules / "rules" / "dns-errors.rules.yaml").read_text(encoding="utf-8"))
    (rule,) = [r for g in document["groups"] for r in g["rules"] if r.get("alert", "").endswith("NoData")]
    text = rule["for"]
    assert text.endswith("m"), text
    return int(text[:-1])


def firing(name: str, **labels: str) -> str:
    pairs = {"alertname": name, "alertstate": "firing", **RULE_LABELS, "severity": "ticket", "slo_compiler": "true"}
    pairs.update(labels)
    return "ALERTS{" + ", ".join(f'{key}="{value}"' for key, value in sorted(pairs.items())) + "}"


def test_spec_compiles_lints_and_its_generated_tests_pass(run_cli: RunCli, tmp_path: Path, slo_file: Path) -> None:
    gauge_spec(slo_file)
    rules = generate(run_cli, tmp_path)
    rule_file = rules / "rules" / "dns-errors.rules.yaml"
    assert 'up{job="kube-dns"} == 1' in rule_file.read_text(encoding="utf-8")
    promtool("check", "rules", "--lint=all", "--lint-fatal", rule_file)
    tests = (rules / "tests" / "dns-errors.test.yaml").read_text(encoding="utf-8")
    assert "counters created on first event: none yet" in tests
    assert "(targets down), so it fires after" in tests
    promtool("test", "rules", rules / "tests" / "dns-errors.test.yaml")


def test_targets_up_and_counter_absent_raise_nothing_for_an_hour(
    run_cli: RunCli, tmp_path: Path, slo_file: Path
) -> None:
    gauge_spec(slo_file)
    rules = generate(run_cli, tmp_path)
    value = 'slo:sli_value:gauge{slo="dns-errors"}'
    hand_test(
        tmp_path,
        rules,
        [
            {
                "input_series": [{"series": UP, "values": f"1x{HOUR}"}],
                "promql_expr_test": [
                    {
                        "expr": value,
                        "eval_time": "1h",
                        "exp_samples": [{"labels": value[:-1] + ', cluster="c1"}', "value": 0}],
                    },
                    {"expr": 'max_over_time(ALERTS{slo="dns-errors"}[1h])', "eval_time": "1h", "exp_samples": []},
                ],
            }
        ],
    )


def test_targets_gone_fire_no_data_after_its_wait(run_cli: RunCli, tmp_path: Path, slo_file: Path) -> None:
    gauge_spec(slo_file)
    rules = generate(run_cli, tmp_path)
    wait = no_data_wait(rules)
    no_data = 'ALERTS{alertname="DnsErrorsNoData"}'
    pending = firing("DnsErrorsNoData", alertstate="pending")
    for up in ([], [{"series": UP, "values": f"0x{wait}"}]):  # up absent, and up at 0 (scrapes failing)
        hand_test(
            tmp_path,
            rules,
            [
                {
                    "input_series": up,
                    "promql_expr_test": [
                        {
                            "expr": no_data,
                            "eval_time": f"{wait - 1}m",
                            "exp_samples": [{"labels": pending, "value": 1}],
                        },
                        {
                            "expr": no_data,
                            "eval_time": f"{wait}m",
                            "exp_samples": [{"labels": firing("DnsErrorsNoData"), "value": 1}],
                        },
                    ],
                }
            ],
        )


def test_a_real_event_still_alerts_while_targets_are_up(run_cli: RunCli, tmp_path: Path, slo_file: Path) -> None:
    """The fallback must not mask the counter once it exists: one panic a minute fires the range alert."""
    gauge_spec(slo_file)
    rules = generate(run_cli, tmp_path)
    alert = 'ALERTS{alertname="DnsErrorsAboveNormalRange"}'
    hand_test(
        tmp_path,
        rules,
        [
            {
                "input_series": [
                    {"series": UP, "values": "1x30"},
                    {"series": COUNTER, "values": "_x5 0+1x25"},
                ],
                "promql_expr_test": [
                    {
                        "expr": alert,
                        "eval_time": "30m",
                        "exp_samples": [{"labels": firing("DnsErrorsAboveNormalRange", cluster="c1"), "value": 1}],
                    },
                ],
            }
        ],
    )


def validate_errors(run_cli: RunCli, tmp_path: Path) -> str:
    code, stdout, stderr = run_cli(["validate", "--specs", "specs"], tmp_path)
    assert code == 1, stderr
    assert stdout == ""
    assert "Traceback" not in stderr
    return stderr


def test_marker_on_a_gauge_without_counter_is_a_positioned_error(
    run_cli: RunCli, tmp_path: Path, slo_file: Path
) -> None:
    gauge_spec(slo_file, GAUGE_SLI.replace("rate(coredns_panics_total[5m])", "coredns_cache_entries"))
    stderr = validate_errors(run_cli, tmp_path)
    assert f"{SLO}:13:5: absent_as_zero_while reads a missing value as 0 only for counters" in stderr, stderr
    assert "drop absent_as_zero_while" in stderr


def test_presence_that_drops_slice_labels_is_a_positioned_error(
    run_cli: RunCli, tmp_path: Path, slo_file: Path
) -> None:
    gauge_spec(slo_file, GAUGE_SLI.replace("'up == 1'", "'sum(up) > 0'"))
    stderr = validate_errors(run_cli, tmp_path)
    location = f"{SLO}:13:{PRESENCE_VALUE_COLUMN}"
    assert f"{location}: sli.gauge.absent_as_zero_while drops slice label(s) cluster" in stderr, stderr


def test_marker_on_a_ratio_sli_is_a_positioned_error(run_cli: RunCli, tmp_path: Path, slo_file: Path) -> None:
    """Ratio and latency SLIs already read absent bad events as 0 while total has series: no field there."""
    text = slo_file.read_text(encoding="utf-8")
    slo_file.write_text(
        text.replace(
            "    total: coredns_dns_responses_total\n", "    total: coredns_dns_responses_total\n" + PRESENCE_LINE
        ),
        encoding="utf-8",
    )
    stderr = validate_errors(run_cli, tmp_path)
    assert f"{SLO}:14:5: unknown key 'absent_as_zero_while' in sli.ratio; it is a field of sli.gauge only" in stderr


# -- end to end: a real Prometheus scraping a real target -------------------------------

SCHEDULER_RULES = (
    Path(__file__).resolve().parents[2] / "generated" / "prometheus" / "rules" / "scheduler-errors.rules.yaml"
)
E2E_TIMEOUT_S = 45  # bounds each wait: rules every 2s, `for` capped at 6s, scrapes every 1s
HEALTHY_HOLD_S = 10  # longer than the capped `for` plus two evaluations


def fast_scheduler_rules(workdir: Path) -> Path:
    """scheduler-errors' generated rules, evaluated every 2s with every `for` at 6s."""
    document = yaml.safe_load(SCHEDULER_RULES.read_text(encoding="utf-8"))
    for group in document["groups"]:
        group["interval"] = "2s"
        for rule in group["rules"]:
            if "for" in rule:
                rule["for"] = "6s"
    path = workdir / "scheduler-errors.rules.yaml"
    path.write_text(yaml.safe_dump(document, sort_keys=False), encoding="utf-8")
    return path


class _SchedulerMetrics(BaseHTTPRequestHandler):
    """A kube-scheduler stand-in whose /metrics has no scheduler_schedule_attempts_total (no error yet)."""

    def do_GET(self) -> None:
        body = b'# TYPE scheduler_pending_pods gauge\nscheduler_pending_pods{queue="active"} 0\n'
        self.send_response(200)
        self.send_header("Content-Type", "text/plain; version=0.0.4")
        self.end_headers()
        self.wfile.write(body)

    def log_message(self, *args: Any) -> None:
        return


@contextmanager
def scheduler_target() -> Iterator[ThreadingHTTPServer]:
    """The stand-in served on a free loopback port; the test may shut it down early (targets gone)."""
    server = ThreadingHTTPServer(("127.0.0.1", 0), _SchedulerMetrics)
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    try:
        yield server
    finally:
        server.shutdown()
        server.server_close()


def prometheus_args(workdir: Path, target: int, port: int) -> list[str]:
    config = {
        "global": {"evaluation_interval": "2s", "scrape_interval": "1s", "scrape_timeout": "500ms"},
        "rule_files": [str(fast_scheduler_rules(workdir))],
        "scrape_configs": [
            {
                "job_name": "kube-scheduler",
                "static_configs": [{"targets": [f"127.0.0.1:{target}"], "labels": {"cluster": "c1"}}],
            }
        ],
    }
    (workdir / "prometheus.yml").write_text(json.dumps(config), encoding="utf-8")
    return [
        "prometheus",
        f"--config.file={workdir / 'prometheus.yml'}",
        f"--storage.tsdb.path={workdir / 'tsdb'}",
        f"--web.listen-address=127.0.0.1:{port}",
    ]


def test_real_prometheus_healthy_scheduler_raises_nothing_and_a_gone_one_fires_no_data(tmp_path: Path) -> None:
    port = servers.free_port()
    with scheduler_target() as target:
        args = prometheus_args(tmp_path, target.server_address[1], port)
        with servers.serving(args, port, tmp_path / "prometheus.log") as url:
            prom = servers.Prometheus(url)
            value = 'slo:sli_value:gauge{slo="scheduler-errors",cluster="c1"} == 0'
            assert servers.wait_until(lambda: bool(prom.query(value)), E2E_TIMEOUT_S), "the healthy value never read 0"
            time.sleep(HEALTHY_HOLD_S)  # past every `for` with the value present: nothing may pend or fire
            assert prom.query('ALERTS{slo="scheduler-errors"}') == []
            assert prom.query(value)
            target.shutdown()  # the scheduler is gone: its scrapes fail and up drops to 0
            no_data = 'ALERTS{alertname="SchedulerErrorsNoData",alertstate="firing"}'
            assert servers.wait_until(lambda: bool(prom.query(no_data)), E2E_TIMEOUT_S), "no-data never fired"
            assert prom.query('up{job="kube-scheduler"} == 0')
            assert prom.query('slo:sli_value:gauge{slo="scheduler-errors"}') == []
