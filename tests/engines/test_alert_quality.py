"""The alert-quality figures (runbooks, catalog) hold in promtool: each pair fires when they say.

The plan computes, from the window math alone, how long after a full outage each burn pair
fires and how soon it resolves. This test feeds the real rules of a 99.9%/30d ratio spec a
calm history longer than the longest window, then 100% errors, and asks promtool when each
pair was first firing: it must be within one evaluation interval of the figure, for every
pair of the default policy.
"""

from __future__ import annotations

import math
import re
from pathlib import Path

import yaml

from compiler.model.links import rules_path
from compiler.model.windows import MINUTE
from compiler.plan import plan
from compiler.plan.quality import quality
from compiler.targets import render_plan
from tests.promtool_runs import promtool_test
from tests.support import FIXTURE_SPECS, compile_tree

SPEC = "fixture-ratio-bad"  # 99.9% over 30d; bad = SERVFAIL over every DNS response, job="kube-dns"
HISTORY = 3 * 24 * 60 + 60  # minutes of calm traffic: past the longest window (3d)
AFTER = 5 * 60  # minutes of full outage: past the slowest pair's detection (3h43m)
RATE = 6000  # responses a minute


def _probe(rules: str) -> dict[str, object]:
    series = 'coredns_dns_responses_total{cluster="cluster-a",job="kube-dns",rcode="%s"}'
    end = HISTORY + AFTER
    first = f'min_over_time((timestamp(ALERTS{{alertstate="firing"}}) / 60)[{end}m:1m])'
    return {
        "rule_files": [rules],
        "evaluation_interval": "1m",
        "tests": [
            {
                "interval": "1m",
                "input_series": [
                    {"series": series % "NOERROR", "values": f"0+{RATE}x{HISTORY} {RATE * HISTORY}x{AFTER}"},
                    {"series": series % "SERVFAIL", "values": f"0x{HISTORY} {RATE}+{RATE}x{AFTER}"},
                ],
                "promql_expr_test": [{"expr": first, "eval_time": f"{end}m", "exp_samples": []}],
            }
        ],
    }


def test_every_burn_pair_fires_when_its_full_outage_figure_says(tmp_path: Path) -> None:
    compiled = plan(compile_tree(FIXTURE_SPECS))
    spec = compiled.of(SPEC)
    files = render_plan(compiled)
    rules = tmp_path / "rules.yaml"
    rules.write_bytes(files[rules_path(spec.slo)])
    test = tmp_path / "probe.test.yaml"
    test.write_text(yaml.safe_dump(_probe(rules.name)))
    result = promtool_test(test)
    answer = (result.stdout + result.stderr).replace(", {", "\n{")
    measured = {
        labels: float(value) - HISTORY
        for labels, value in re.findall(r'long_window="(\w+)".*?\} (-?[0-9.]+(?:E[+-][0-9]+)?)', answer)
    }
    expected = {}
    for alert in spec.of_kind("burn"):
        figures = quality(spec.slo, alert)
        assert figures is not None and figures.full_outage_ms is not None and alert.burn is not None
        long = alert.label_map["long_window"]
        expected[long] = math.ceil(figures.full_outage_ms / MINUTE)
    assert set(measured) == set(expected), result.stdout + result.stderr
    for long, minute in expected.items():
        assert abs(measured[long] - minute) <= 1, (long, measured[long], minute)
