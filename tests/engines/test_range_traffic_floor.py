"""A range's traffic floor (``min_bad_events``, library review 3 on admission-webhook-failures).

An error ratio over a 5-minute window pages on two failed calls of a rarely used path (2 of 3
is 67%). ``min_bad_events`` makes a static max of a ratio or latency SLI also need that many
bad events in the window. These tests prove with the real promtool that the generated proof
passes, that a trickle past the bound stays silent while the same ratio on real traffic fires,
that the generated proof catches a rule without the floor, and that misuse is a positioned error.
"""

from __future__ import annotations

import subprocess
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import Any

import yaml

from tests.conftest import RATIO_SLI_AND_OBJECTIVE

RunCli = Callable[[Sequence[str | Path], Path], tuple[int, str, str]]

SLO = "specs/network/dns-errors.yaml"
# Lines 10-16 of the conftest spec, swapped for a ratio judged by ranges, with a floor on the page.
RANGES = """\
sli:
  ratio:
    bad: 'coredns_dns_responses_total{rcode="SERVFAIL"}'
    total: coredns_dns_responses_total
normal_range: {max: 0.01}
critical_range:
  max: 0.1
  min_bad_events: 10
"""
FLOOR_LINE, FLOOR_COLUMN = 17, 19  # the value of min_bad_events
BAD = 'coredns_dns_responses_total{cluster="c1",job="kube-dns",rcode="SERVFAIL"}'
GOOD = 'coredns_dns_responses_total{cluster="c1",job="kube-dns",rcode="NOERROR"}'
PAGE = "DnsErrorsAboveCriticalRange"


def spec(slo_file: Path, text: str = RANGES) -> None:
    body = slo_file.read_text(encoding="utf-8")
    assert body.count(RATIO_SLI_AND_OBJECTIVE) == 1
    slo_file.write_text(body.replace(RATIO_SLI_AND_OBJECTIVE, text), encoding="utf-8")


def generate(run_cli: RunCli, tmp_path: Path) -> Path:
    code, _, stderr = run_cli(["generate", "--specs", "specs", "--out", "out"], tmp_path)
    assert code == 0, stderr
    return tmp_path / "out" / "prometheus"


def promtool(*args: str | Path) -> subprocess.CompletedProcess[str]:
    return subprocess.run(["promtool", *map(str, args)], capture_output=True, text=True, check=False, timeout=120)


def counter(per_minute: float, minutes: int) -> str:
    return f"0+{per_minute}x{minutes}"


def page_test(bad_per_minute: float, good_per_minute: float, fires: bool) -> dict[str, Any]:
    """40 minutes at a steady ratio; the page is firing at 30m, or nothing fires at all."""
    expr = f'count by (cluster, severity) (ALERTS{{alertname="{PAGE}",alertstate="firing"}})'
    samples = [{"labels": '{cluster="c1", severity="page"}', "value": 1}] if fires else []
    return {
        "interval": "1m",
        "input_series": [
            {"series": BAD, "values": counter(bad_per_minute, 40)},
            {"series": GOOD, "values": counter(good_per_minute, 40)},
        ],
        "promql_expr_test": [{"expr": expr, "eval_time": "30m", "exp_samples": samples}],
    }


def run_hand_test(tmp_path: Path, rules: Path, tests: list[dict[str, Any]]) -> subprocess.CompletedProcess[str]:
    document = {
        "rule_files": [str(rules / "rules" / "dns-errors.rules.yaml")],
        "evaluation_interval": "1m",
        "tests": tests,
    }
    path = tmp_path / "hand.test.yaml"
    path.write_text(yaml.safe_dump(document, sort_keys=False), encoding="utf-8")
    return promtool("test", "rules", path)


def test_floor_compiles_lints_and_its_generated_proof_passes(run_cli: RunCli, tmp_path: Path, slo_file: Path) -> None:
    spec(slo_file)
    rules = generate(run_cli, tmp_path)
    rule_file = rules / "rules" / "dns-errors.rules.yaml"
    assert 'slo:sli_bad:rate5m{slo="dns-errors"} * 300 >= 10' in rule_file.read_text(encoding="utf-8")
    lint = promtool("check", "rules", "--lint=all", "--lint-fatal", rule_file)
    assert lint.returncode == 0, lint.stdout + lint.stderr
    tests = (rules / "tests" / "dns-errors.test.yaml").read_text(encoding="utf-8")
    assert "(half of its 10 bad events in 5 minutes) stays silent" in tests
    result = promtool("test", "rules", rules / "tests" / "dns-errors.test.yaml")
    assert result.returncode == 0, result.stdout + result.stderr


def test_a_trickle_past_the_bound_stays_silent_and_real_traffic_pages(
    run_cli: RunCli, tmp_path: Path, slo_file: Path
) -> None:
    spec(slo_file)
    rules = generate(run_cli, tmp_path)
    # 2 of 3 calls failing every 5 minutes (0.4 bad a minute, 67%): under the floor of 10, silent.
    # 60 of 300 calls failing a minute (20%, 300 bad in 5m): pages.
    result = run_hand_test(
        tmp_path,
        rules,
        [page_test(0.4, 0.2, fires=False), page_test(60, 240, fires=True)],
    )
    assert result.returncode == 0, result.stdout + result.stderr


def test_the_generated_proof_catches_a_rule_without_the_floor(run_cli: RunCli, tmp_path: Path, slo_file: Path) -> None:
    spec(slo_file)
    rules = generate(run_cli, tmp_path)
    rule_file = rules / "rules" / "dns-errors.rules.yaml"
    document = yaml.safe_load(rule_file.read_text(encoding="utf-8"))
    for group in document["groups"]:
        for rule in group["rules"]:
            if rule.get("alert") == PAGE:
                rule["expr"] = rule["expr"].split("\nand\n")[0]
    rule_file.write_text(yaml.safe_dump(document, sort_keys=False), encoding="utf-8")
    result = promtool("test", "rules", rules / "tests" / "dns-errors.test.yaml")
    assert result.returncode != 0
    # promtool names the failing assertion, not its group: the trickle group's "nothing fired" check.
    assert f'max_over_time(ALERTS{{alertname=\\"{PAGE}\\"}}' in result.stdout + result.stderr


def validate_errors(run_cli: RunCli, tmp_path: Path) -> str:
    code, stdout, stderr = run_cli(["validate", "--specs", "specs"], tmp_path)
    assert code == 1, stdout + stderr
    return stderr


def test_a_floor_on_a_gauge_is_a_positioned_error(run_cli: RunCli, tmp_path: Path, slo_file: Path) -> None:
    ratio = (
        "  ratio:\n    bad: 'coredns_dns_responses_total{rcode=\"SERVFAIL\"}'\n    total: coredns_dns_responses_total\n"
    )
    gauge = RANGES.replace(ratio, "  gauge:\n    expr: 'max by (cluster) (coredns_cache_entries)'\nunit: count\n")
    gauge = gauge.replace("max: 0.01", "max: 1000").replace("max: 0.1\n", "max: 5000\n")
    spec(slo_file, gauge)
    stderr = validate_errors(run_cli, tmp_path)
    assert f"{SLO}:{FLOOR_LINE}:{FLOOR_COLUMN}: critical_range.min_bad_events counts bad events" in stderr, stderr


def test_a_floor_next_to_a_min_is_a_positioned_error(run_cli: RunCli, tmp_path: Path, slo_file: Path) -> None:
    spec(slo_file, RANGES.replace("  max: 0.1\n", "  min: 0.0001\n  max: 0.1\n"))
    stderr = validate_errors(run_cli, tmp_path)
    assert f"{SLO}:{FLOOR_LINE + 1}:{FLOOR_COLUMN}: critical_range.min_bad_events floors a max" in stderr, stderr
