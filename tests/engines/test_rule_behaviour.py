"""What the generated rules do, proven with the real promtool on hand-written input series.

These tests read the golden rule files of the fixture specs (tests/fixtures/specs), so a
change of rule text that changes behaviour fails here even when the golden file was
regenerated.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import yaml

from compiler.text.numbers import go_float
from tests import promtool_runs

REPO_ROOT = Path(__file__).resolve().parents[2]
RULES = REPO_ROOT / "tests" / "golden" / "prometheus" / "rules"

DNS = "fixture-ratio-bad"
DNS_LABELS = {"slo": DNS, "team": "team-b", "family": "node-network-errors", "slo_compiler": "true"}


def promtool_test(tmp_path: Path, specs: list[str], tests: list[dict[str, Any]]) -> None:
    document = {
        "rule_files": [str(RULES / f"{spec}.rules.yaml") for spec in specs],
        "evaluation_interval": "1m",
        "tests": [{"interval": "1m", **test} for test in tests],
    }
    path = tmp_path / "test.yaml"
    path.write_text(yaml.safe_dump(document, sort_keys=False), encoding="utf-8")
    result = promtool_runs.promtool_test(path)
    assert result.returncode == 0, result.stdout + result.stderr


def alerts(name: str, state: str = "firing", **labels: str) -> str:
    """An ALERTS selector with every label of the alert, as promtool prints it."""
    pairs = {"alertname": name, "alertstate": state, **labels}
    return "ALERTS{" + ", ".join(f'{key}="{value}"' for key, value in sorted(pairs.items())) + "}"


def burn(long_window: str, short_window: str, factor: str, severity: str, **slice_labels: str) -> str:
    return alerts(
        "FixtureRatioBadErrorBudgetBurn",
        long_window=long_window,
        short_window=short_window,
        burn_factor=factor,
        severity=severity,
        **DNS_LABELS,
        **slice_labels,
    )


def dns_series(cluster: str, ok: str, servfail: str) -> list[dict[str, str]]:
    return [
        {"series": f'coredns_dns_responses_total{{job="kube-dns",cluster="{cluster}",rcode="NOERROR"}}', "values": ok},
        {
            "series": f'coredns_dns_responses_total{{job="kube-dns",cluster="{cluster}",rcode="SERVFAIL"}}',
            "values": servfail,
        },
    ]


def test_window_error_ratios_are_traffic_weighted_not_averages_of_5m_ratios(tmp_path: Path) -> None:
    # 100 answers/s for 5.5h, then traffic falls to 1/s and every answer fails for 30 minutes.
    quiet_failure = dns_series("c1", "0+6000x330 1980000x30", "0x330 0+60x30")
    six_hour_ratio = (
        f'avg_over_time(slo:sli_bad:rate5m{{slo="{DNS}"}}[6h]) / avg_over_time(slo:sli_total:rate5m{{slo="{DNS}"}}[6h])'
    )
    mean_of_ratios = f'avg_over_time((slo:sli_bad:rate5m{{slo="{DNS}"}} / slo:sli_total:rate5m{{slo="{DNS}"}})[6h:1m])'
    promtool_test(
        tmp_path,
        [DNS],
        [
            {
                "input_series": quiet_failure,
                "promql_expr_test": [
                    # The weighted 6h ratio is below 0.1% (1,800 bad of about 1.98M) ...
                    {
                        "expr": f"{six_hour_ratio} < bool 0.001",
                        "eval_time": "360m",
                        "exp_samples": [{"labels": '{cluster="c1", slo="fixture-ratio-bad"}', "value": 1}],
                    },
                    # ... while a mean of 5m ratios would claim over 5% and page.
                    {
                        "expr": f"{mean_of_ratios} > bool 0.05",
                        "eval_time": "360m",
                        "exp_samples": [{"labels": '{cluster="c1", slo="fixture-ratio-bad"}', "value": 1}],
                    },
                    {
                        "expr": 'ALERTS{alertname="FixtureRatioBadErrorBudgetBurn", alertstate="firing"}',
                        "eval_time": "360m",
                        "exp_samples": [],
                    },
                ],
            },
            {
                # Control: the same 30 minutes of failure at full traffic pages on both page pairs.
                "input_series": dns_series("c1", "0+6000x330 1980000x30", "0x330 0+6000x30"),
                "promql_expr_test": [
                    {
                        "expr": 'ALERTS{alertname="FixtureRatioBadErrorBudgetBurn", severity="page"}',
                        "eval_time": "355m",
                        "exp_samples": [
                            {"labels": burn("1h", "5m", "14.4", "page", cluster="c1"), "value": 1},
                            {"labels": burn("6h", "30m", "6", "page", cluster="c1"), "value": 1},
                        ],
                    }
                ],
            },
        ],
    )


def test_zero_traffic_does_not_poison_windows_or_the_budget(tmp_path: Path) -> None:
    # Three silent hours (counters flat), then 10% of answers fail.
    series = dns_series("c1", "0x180 0+5400x60", "0x180 0+600x60")
    is_nan = 'slo:error_budget_remaining:ratio{slo="fixture-ratio-bad"} != bool slo:error_budget_remaining:ratio'
    promtool_test(
        tmp_path,
        [DNS],
        [
            {
                "input_series": series,
                "promql_expr_test": [
                    {
                        "expr": 'slo:error_budget_remaining:ratio{slo="fixture-ratio-bad"}',
                        "eval_time": "170m",
                        "exp_samples": [
                            {
                                "labels": 'slo:error_budget_remaining:ratio{cluster="c1", slo="fixture-ratio-bad"}',
                                "value": 1,
                            }
                        ],
                    },
                    {
                        "expr": 'ALERTS{alertname="FixtureRatioBadErrorBudgetBurn"}',
                        "eval_time": "170m",
                        "exp_samples": [],
                    },
                    # The 1h window holds 40 minutes of zeros and 20 of traffic: still 10%, so it pages.
                    {
                        "expr": 'ALERTS{alertname="FixtureRatioBadErrorBudgetBurn", long_window="1h"}',
                        "eval_time": "200m",
                        "exp_samples": [{"labels": burn("1h", "5m", "14.4", "page", cluster="c1"), "value": 1}],
                    },
                    {
                        "expr": is_nan,
                        "eval_time": "200m",
                        "exp_samples": [{"labels": '{cluster="c1", slo="fixture-ratio-bad"}', "value": 0}],
                    },
                ],
            }
        ],
    )


def test_alerts_fire_per_slice(tmp_path: Path) -> None:
    series = dns_series("healthy", "0+6000x60", "0x60") + dns_series("broken", "0+5400x60", "0+600x60")
    promtool_test(
        tmp_path,
        [DNS],
        [
            {
                "input_series": series,
                "promql_expr_test": [
                    {
                        "expr": 'ALERTS{alertname="FixtureRatioBadErrorBudgetBurn", alertstate="firing"}',
                        "eval_time": "30m",
                        "exp_samples": [
                            {"labels": burn("1h", "5m", "14.4", "page", cluster="broken"), "value": 1},
                            {"labels": burn("6h", "30m", "6", "page", cluster="broken"), "value": 1},
                        ],
                    },
                    {
                        "expr": 'ALERTS{alertname="FixtureRatioBadAboveCriticalRange", alertstate="firing"}',
                        "eval_time": "30m",
                        "exp_samples": [
                            {
                                "labels": alerts(
                                    "FixtureRatioBadAboveCriticalRange", severity="page", cluster="broken", **DNS_LABELS
                                ),
                                "value": 1,
                            }
                        ],
                    },
                ],
            }
        ],
    )


def _no_data_mitigation(alert: str) -> str:
    document = yaml.safe_load((RULES / f"{DNS}.rules.yaml").read_text(encoding="utf-8"))
    rule = next(r for g in document["groups"] for r in g["rules"] if r.get("alert") == alert)
    text: str = rule["annotations"]["mitigation"]
    assert "absent(" in text and "{{" not in text
    return text


def test_no_data_fires_after_its_wait_with_template_text_left_literal(tmp_path: Path) -> None:
    annotations = {
        "summary": "fixture-ratio-bad: no SLI data for 30m",
        "description": (
            "No series feed the fixture-ratio-bad SLI for 30m: every alert of this spec is blind. Check the "
            "scrape targets and whether a metric was renamed by an upgrade."
        ),
        "runbook_url": "https://runbooks.example.com/slo/fixture-ratio-bad.md#fixtureratiobadnodata",
        # A no-data alert's mitigation is about the missing data (the spec's own, with its literal
        # "{{ now }}", is for when the data is back); promtool must see the same text.
        "mitigation": _no_data_mitigation("FixtureRatioBadNoData"),
    }
    promtool_test(
        tmp_path,
        [DNS],
        [
            {
                "input_series": [{"series": 'unrelated_metric{job="x"}', "values": "1x40"}],
                "alert_rule_test": [
                    {"eval_time": "29m", "alertname": "FixtureRatioBadNoData", "exp_alerts": []},
                    {
                        "eval_time": "31m",
                        "alertname": "FixtureRatioBadNoData",
                        "exp_alerts": [
                            {"exp_labels": {"severity": "info", **DNS_LABELS}, "exp_annotations": annotations}
                        ],
                    },
                ],
            }
        ],
    )


def test_state_sli_counts_unit_time_per_joined_slice(tmp_path: Path) -> None:
    series = []
    for pool, not_ready in (("gpu", 1), ("cpu", 0)):
        for index in range(10):
            node = f"{pool}-{index}"
            ready = "0x40" if index < not_ready else "1x40"
            series.append(
                {
                    "series": f'kube_node_status_condition{{job="ksm",cluster="c1",node="{node}",'
                    f'condition="Ready",status="true"}}',
                    "values": ready,
                }
            )
            series.append(
                {
                    "series": f'kube_node_labels{{job="ksm",cluster="c1",node="{node}",label_pool="{pool}"}}',
                    "values": "1x40",
                }
            )
    # fixture-state is in shadow mode: its alerts carry shadow="true" so Alertmanager keeps them off pagers.
    labels = {
        "slo": "fixture-state",
        "team": "team-b",
        "family": "node-network-errors",
        "slo_compiler": "true",
        "shadow": "true",
    }
    promtool_test(
        tmp_path,
        ["fixture-state"],
        [
            {
                "input_series": series,
                "promql_expr_test": [
                    {
                        "expr": 'slo:sli_bad:rate5m{slo="fixture-state"}',
                        "eval_time": "20m",
                        "exp_samples": [
                            {
                                "labels": 'slo:sli_bad:rate5m{cluster="c1", label_pool="cpu", slo="fixture-state"}',
                                "value": 0,
                            },
                            {
                                "labels": 'slo:sli_bad:rate5m{cluster="c1", label_pool="gpu", slo="fixture-state"}',
                                "value": 1,
                            },
                        ],
                    },
                    {
                        "expr": 'slo:sli_total:rate5m{slo="fixture-state", label_pool="gpu"}',
                        "eval_time": "20m",
                        "exp_samples": [
                            {
                                "labels": 'slo:sli_total:rate5m{cluster="c1", label_pool="gpu", slo="fixture-state"}',
                                "value": 10,
                            }
                        ],
                    },
                    {
                        "expr": 'ALERTS{alertname="FixtureStateAboveNormalRange"}',
                        "eval_time": "8m",
                        "exp_samples": [
                            {
                                "labels": alerts(
                                    "FixtureStateAboveNormalRange",
                                    "pending",
                                    severity="ticket",
                                    cluster="c1",
                                    label_pool="gpu",
                                    **labels,
                                ),
                                "value": 1,
                            }
                        ],
                    },
                    {
                        "expr": 'ALERTS{alertname="FixtureStateAboveNormalRange"}',
                        "eval_time": "12m",
                        "exp_samples": [
                            {
                                "labels": alerts(
                                    "FixtureStateAboveNormalRange",
                                    severity="ticket",
                                    cluster="c1",
                                    label_pool="gpu",
                                    **labels,
                                ),
                                "value": 1,
                            }
                        ],
                    },
                ],
            }
        ],
    )


def test_latency_sli_is_count_minus_good_plus_errors(tmp_path: Path) -> None:
    histogram = "apiserver_request_sli_duration_seconds"
    base = 'job="apiserver",cluster="c1",verb="LIST"'
    series = [
        # resource scope: 10/s, 9/s under 1 s.  cluster scope: 2/s, 1/s under 30 s.
        {"series": f'{histogram}_count{{{base},scope="resource"}}', "values": "0+600x30"},
        {"series": f'{histogram}_bucket{{{base},scope="resource",le="1"}}', "values": "0+540x30"},
        {"series": f'{histogram}_bucket{{{base},scope="resource",le="30"}}', "values": "0+600x30"},
        {"series": f'{histogram}_count{{{base},scope="cluster"}}', "values": "0+120x30"},
        {"series": f'{histogram}_bucket{{{base},scope="cluster",le="1"}}', "values": "0+0x30"},
        {"series": f'{histogram}_bucket{{{base},scope="cluster",le="30"}}', "values": "0+60x30"},
        # 0.5/s of resource-scope reads fail with 503.
        {"series": f'apiserver_request_total{{{base},scope="resource",code="503"}}', "values": "0+30x30"},
    ]
    promtool_test(
        tmp_path,
        ["fixture-latency"],
        [
            {
                "input_series": series,
                "promql_expr_test": [
                    {
                        "expr": 'slo:sli_bad:rate5m{slo="fixture-latency"}',
                        "eval_time": "20m",
                        "exp_samples": [
                            {
                                "labels": 'slo:sli_bad:rate5m{cluster="c1", scope="cluster", slo="fixture-latency"}',
                                "value": 1,
                            },
                            {
                                "labels": 'slo:sli_bad:rate5m{cluster="c1", scope="resource", slo="fixture-latency"}',
                                "value": 1.5,
                            },
                        ],
                    },
                    {
                        "expr": 'slo:sli_total:rate5m{slo="fixture-latency"}',
                        "eval_time": "20m",
                        "exp_samples": [
                            {
                                "labels": 'slo:sli_total:rate5m{cluster="c1", scope="cluster", slo="fixture-latency"}',
                                "value": 2,
                            },
                            {
                                "labels": 'slo:sli_total:rate5m{cluster="c1", scope="resource", slo="fixture-latency"}',
                                "value": 10,
                            },
                        ],
                    },
                ],
            }
        ],
    )


def test_gauge_ranges_are_two_sided_static_and_relative_with_a_floor(tmp_path: Path) -> None:
    def watchers(resource: str, values: str) -> dict[str, str]:
        return {
            "series": f'apiserver_longrunning_requests{{job="apiserver",cluster="c1",verb="WATCH",'
            f'resource="{resource}"}}',
            "values": values,
        }

    labels = {
        "slo": "fixture-gauge",
        "team": "team-a",
        "family": "watch-list-volume",
        "slo_compiler": "true",
        "severity": "ticket",
        "cluster": "c1",
    }
    series = [
        watchers("steady", "5000x1500"),
        watchers("zero", "0x1500"),  # below min 1
        watchers("surge", "5000x1440 8000x60"),  # 1.6x its value a day ago
        watchers("collapse", "4000x1440 1500x60"),  # 0.375x its value a day ago
        watchers("tiny-surge", "100x1440 400x60"),  # 4x, but under the 1,000 floor
    ]
    promtool_test(
        tmp_path,
        ["fixture-gauge"],
        [
            {
                "input_series": series,
                "promql_expr_test": [
                    {
                        "expr": 'ALERTS{slo="fixture-gauge", alertstate="firing"}',
                        "eval_time": "1460m",
                        "exp_samples": [
                            {"labels": alerts("FixtureGaugeAboveNormalRange", resource="surge", **labels), "value": 1},
                            {
                                "labels": alerts("FixtureGaugeBelowNormalRange", resource="collapse", **labels),
                                "value": 1,
                            },
                            {"labels": alerts("FixtureGaugeBelowNormalRange", resource="zero", **labels), "value": 1},
                        ],
                    },
                ],
            }
        ],
    )


def test_quantile_ranges_see_the_top_bucket_edge(tmp_path: Path) -> None:
    edges = [0.001 * 2**n for n in range(14)]
    series = []
    for instance, slow in (("fast", False), ("stuck", True)):
        for edge in [*edges, float("inf")]:
            le = "+Inf" if edge == float("inf") else go_float(edge)
            grows = edge == float("inf") if slow else edge >= 0.016
            series.append(
                {
                    "series": f'etcd_disk_wal_fsync_duration_seconds_bucket{{job="etcd",cluster="c1",'
                    f'instance="{instance}",le="{le}"}}',
                    "values": "0+60x30" if grows else "0x30",
                }
            )
    labels = {
        "slo": "fixture-quantile",
        "team": "team-a",
        "family": "scheduling-api-latency",
        "slo_compiler": "true",
        "cluster": "c1",
        "automation": "remediator",  # its mitigation runs through the project's automation webhook
    }
    promtool_test(
        tmp_path,
        ["fixture-quantile"],
        [
            {
                "input_series": series,
                "promql_expr_test": [
                    {
                        "expr": 'slo:sli_value:gauge{instance="stuck"}',
                        "eval_time": "20m",
                        "exp_samples": [
                            {
                                "labels": 'slo:sli_value:gauge{cluster="c1", instance="stuck", slo="fixture-quantile"}',
                                "value": 8.192,
                            }
                        ],
                    },
                    {
                        "expr": 'ALERTS{slo="fixture-quantile", alertstate="firing"}',
                        "eval_time": "20m",
                        "exp_samples": [
                            {
                                "labels": alerts(
                                    "FixtureQuantileAboveCriticalRange", severity="page", instance="stuck", **labels
                                ),
                                "value": 1,
                            },
                            {
                                "labels": alerts(
                                    "FixtureQuantileAboveNormalRange", severity="ticket", instance="stuck", **labels
                                ),
                                "value": 1,
                            },
                        ],
                    },
                ],
            }
        ],
    )
