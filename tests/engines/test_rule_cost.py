"""Rule cost: each raw series is read once per evaluation of a group, and the cheaper form gives the same values.

The latency bad rate used to read the histogram's ``_count`` three times per evaluation (in the
total, in the slow requests and in the "no bucket" fallback); it now reads the recorded 5m
total, which Prometheus has written earlier in the same evaluation. The value proof runs each
such rule next to its raw form (kept for vmalert) in promtool, on the generated tests' own
inputs and in the same run as those tests (tests/derived_proofs.py), and asserts no evaluation
differs.
"""

from __future__ import annotations

import dataclasses

import pytest
import yaml

from compiler.explain import explain, group_reads, reads_report
from compiler.model import SLO, GaugeSLI, LatencySLI, Model, RatioSLI, StateSLI, queries, series
from compiler.model.budget import estimate
from compiler.model.reads import raw_reads, repeated
from compiler.plan import plan
from compiler.promql import selector_reads
from compiler.targets import render_all
from tests import derived_proofs
from tests.support import FIXTURE_SPECS, LIBRARY_SPECS, compile_tree


@pytest.fixture(scope="module")
def library() -> tuple[Model, dict[str, bytes]]:
    model = compile_tree(LIBRARY_SPECS)
    return model, render_all(model)


@pytest.fixture(scope="module")
def fixtures() -> tuple[Model, dict[str, bytes]]:
    model = compile_tree(FIXTURE_SPECS)
    return model, render_all(model)


def _latency_specs(model: Model) -> list[SLO]:
    found = [slo for slo in model.slos if isinstance(slo.sli, LatencySLI)]
    assert len(found) >= 5, [slo.name for slo in found]
    return found


def test_every_library_latency_spec_reads_its_histogram_once_per_evaluation(
    library: tuple[Model, dict[str, bytes]],
) -> None:
    model, files = library
    for slo in _latency_specs(model):
        assert isinstance(slo.sli, LatencySLI)
        reads = group_reads(files, slo)
        histogram = [read for read in reads if (read.metric or "").startswith(slo.sli.histogram)]
        assert any(read.metric == f"{slo.sli.histogram}_count" for read in reads) or slo.sli.total, slo.name
        assert histogram, slo.name
        assert [read.times for read in histogram] == [1] * len(histogram), (slo.name, [r.text() for r in histogram])


@pytest.mark.parametrize(
    ("spec", "times"),
    [
        ("fixture-latency", {}),  # no total given: the count is the total, read once
        ("fixture-scheduling", {}),
        ("fixture-ratio-bad", {}),
        # The bad rate is the recorded total less the good events; the good counters are also terms of the
        # total, which reads them too: one read cannot feed two recorded series.
        ("fixture-ratio-good", {"node_network_receive_packets_total": 2, "node_network_transmit_packets_total": 2}),
        # A state's units are read by the count (total) and the sum (bad): PromQL cannot share one read
        # between two recorded series without recording a third.
        ("fixture-state", {"kube_node_status_condition": 2, "kube_node_labels": 2}),
    ],
)
def test_raw_reads_per_group_of_each_sli_kind(
    fixtures: tuple[Model, dict[str, bytes]], spec: str, times: dict[str, int]
) -> None:
    model, files = fixtures
    slo = next(slo for slo in model.slos if slo.name == spec)
    reads = group_reads(files, slo)
    assert reads, spec
    assert {read.metric: read.times for read in repeated(reads)} == times, [read.text() for read in reads]


def test_raw_reads_count_occurrences_not_recorded_series() -> None:
    rules = [
        ("a:total", 'sum by (c) (rate(x_count{j="1"}[5m]))'),
        ("a:bad", 'a:total{slo="s"} - on (c) sum by (c) (rate(x_bucket{j="1"}[5m])) or 0 * x_count{j="1"}'),
    ]
    reads = raw_reads(rules, {"a:total"})
    assert [(read.selector, read.times, read.ranges_ms) for read in reads] == [
        ('x_count{j="1"}', 2, (300_000, 0)),
        ('x_bucket{j="1"}', 1, (300_000,)),
    ]
    assert [read.selector for read in repeated(reads)] == ['x_count{j="1"}']


def test_validate_report_lists_every_spec_with_its_reads(library: tuple[Model, dict[str, bytes]]) -> None:
    model, files = library
    report = reads_report(model, files)
    for slo in model.slos:
        assert f"\n  {slo.name}:\n" in report
    assert "1x (5m; slo:sli_total:rate5m): etcd_request_duration_seconds_count{" in report


def test_vmalert_keeps_the_raw_bad_rate(library: tuple[Model, dict[str, bytes]]) -> None:
    """vmalert reads recorded series one delivery later: its bad rate must not take its value from them."""
    model, files = library
    for slo in model.slos:
        if not slo.counts_events:
            continue
        group = yaml.safe_load(files[f"vmalert/{slo.name}.rules.yaml"])["groups"][0]
        bad = next(rule["expr"] for rule in group["rules"] if rule.get("record") == series.BAD_5M)
        assert bad == queries.total_and_bad(slo, same_evaluation=False)[1], slo.name
        value_reads = bad.replace(f"0 * {series.recorded(series.TOTAL_5M, slo)}", "")
        if not isinstance(slo.sli, StateSLI):
            assert series.TOTAL_5M not in value_reads, slo.name


def test_ratio_good_on_vmalert_reads_the_raw_total(fixtures: tuple[Model, dict[str, bytes]]) -> None:
    model, _ = fixtures
    slo = next(slo for slo in model.slos if isinstance(slo.sli, RatioSLI) and slo.sli.good)
    bad = queries.total_and_bad(slo, same_evaluation=False)[1]
    assert series.TOTAL_5M not in bad
    errors = {read.metric: read.times for read in raw_reads([("bad", bad)], set()) if "errs" in (read.metric or "")}
    assert errors == {"node_network_receive_errs_total": 2, "node_network_transmit_errs_total": 2}
    assert series.recorded(series.TOTAL_5M, slo) in queries.total_and_bad(slo)[1]


# -- the same values, proved in promtool (tests/derived_proofs.py) ------------------------------------------


def test_every_spec_whose_rules_read_recorded_series_is_compared(library: tuple[Model, dict[str, bytes]]) -> None:
    """The comparison covers every library spec with a series read from other recorded series (the latency bad
    rates from the recorded total included), and every shape listed below."""
    model, _ = library
    assert derived_proofs.differing_specs(model) == sorted(derived_proofs.COMPARED)
    assert {slo.name for slo in _latency_specs(model)} <= set(derived_proofs.COMPARED)
    listed = {*FROM_UNITS, *PARTS, *UNIT_PARTS, *RATIO_UNIT_PARTS, *LATENCY_PARTS}
    assert listed <= set(derived_proofs.COMPARED), sorted(listed - set(derived_proofs.COMPARED))


@pytest.mark.parametrize("spec", derived_proofs.COMPARED)
def test_derived_series_equal_their_raw_forms_in_promtool(spec: str) -> None:
    """Every evaluation of every generated case: each series read from recorded series equals its raw form.

    The comparison can fail: in the same run, against the raw forms scaled by 1.01 plus 0.001 (the mutant), it
    must. It runs in the promtool run of the spec's generated tests (test_generated_tests reads the same
    verdict), so the cases' inputs are loaded once. It replaces the latency bad rate's comparison with the recorded
    total and its own mutant test (``test_latency_bad_rate_from_the_recorded_total_equals_the_raw_form`` and
    ``test_the_comparison_fails_when_the_values_differ``), a second and a third load of the same inputs.
    """
    found = derived_proofs.verdict(spec)
    assert found.differs == 0, (spec, found.output[-3000:])
    assert found.caught > 0, (spec, "the comparison did not catch the mutant", found.output[-3000:])
    assert not found.unexplained, (spec, found.unexplained[-3000:])
    assert found.returncode == 1, (spec, found.output[-3000:])


def test_selector_reads_give_the_range_each_selector_is_read_through() -> None:
    reads = selector_reads('max_over_time(x{a="1"}[10m:1m]) + rate(y[5m] offset 1h) + z')
    assert [(name, [m.render() for m in matchers], range_ms) for name, matchers, range_ms in reads] == [
        ("x", ['a="1"'], 600_000),
        ("y", [], 300_000),
        ("z", [], 0),
    ]


# -- rules at the read floor: per-unit values and a ratio's parts (issue 29 item 1) ------------------

# One library spec of each shape whose slice series come from the recorded per-unit value.
FROM_UNITS = {
    "node-readiness": "a state: its units counted and summed",
    "conntrack-exhaustion": "max of a max by slice",
    "arp-neighbor-table": "max of a max over per-unit sums",
    "kubelet-certificate-expiry": "min through a join",
    "node-file-descriptors": "avg of one series per unit",
    "infiniband-port-errors": "avg of one sum per unit",
    "gpu-memory-row-remap": "avg of one max per unit (a difference of per-GPU aggregations inside)",
}
# Shapes whose units do not give the slice's value exactly: they read the raw series again.
NOT_FROM_UNITS = {
    "node-clock-skew": "avg by slice: units of different sizes would weigh differently",
}
PARTS = ("apiserver-5xx", "apiserver-throttled-requests", "apiserver-terminated-requests", "apf-workload-shedding")
# Fleet gauges whose unit and slice values both sum one counter's rates: recorded once per unit (the parts).
UNIT_PARTS = {"client-request-errors": "a ratio of sums by slice with a traffic floor per unit"}
# Fleet ratios: per unit the total and bad rates recorded once; the unit value, total and bad sum them.
RATIO_UNIT_PARTS = ("nic-error-budget", "nic-drop-budget")
# Latency SLIs whose errors are their total's requests with a code, some outside the total (subresources).
LATENCY_PARTS = ("apiserver-read-latency", "apiserver-write-latency")


def explain_spec(model: Model, files: dict[str, bytes], slo: SLO) -> str:
    planned = plan(model)
    return explain(planned.model, planned.of(slo), files)


def _rules_reading_raw(files: dict[str, bytes], slo: SLO) -> set[str]:
    return {rule for read in group_reads(files, slo) for rule in read.rules}


def test_fleet_slice_series_aggregate_the_recorded_unit_value(library: tuple[Model, dict[str, bytes]]) -> None:
    model, files = library
    derived = {slo.name for slo in model.slos if queries.derives_from_units(slo)}
    assert set(FROM_UNITS) <= derived, sorted(derived)
    assert not set(NOT_FROM_UNITS) & derived
    for slo in model.slos:
        if slo.name not in derived:
            continue
        # Only the per-unit value reads raw series (and the conditions, which read their own).
        assert _rules_reading_raw(files, slo) - {series.CONDITION_HOLDS} == {series.UNIT_VALUE}, slo.name
        unit = queries.raw_expressions(slo)[series.UNIT_VALUE]
        alone = {read.selector: read.times for read in raw_reads([("unit", unit)], set())}
        own = [read for read in group_reads(files, slo) if set(read.rules) != {series.CONDITION_HOLDS}]
        assert {read.selector: read.times for read in own} == alone, slo.name
    readiness = next(slo for slo in model.slos if slo.name == "node-readiness")
    assert [read.times for read in group_reads(files, readiness)] == [1, 1, 1, 1]


def test_ratio_parts_read_the_total_once(library: tuple[Model, dict[str, bytes]]) -> None:
    model, files = library
    with_parts = {slo.name for slo in model.slos if queries.ratio_parts(slo) is not None}
    assert set(PARTS) <= with_parts, sorted(with_parts)
    for slo in model.slos:
        if slo.name not in with_parts:
            continue
        assert isinstance(slo.sli, RatioSLI)
        reads = group_reads(files, slo)
        assert [read.times for read in reads] == [1] * len(reads), (slo.name, [read.text() for read in reads])
        assert {read.rules for read in reads} == {(series.PARTS_5M,)}, slo.name
        assert len(reads) == len(slo.sli.total), slo.name  # the bad selectors are not read on their own
    five = next(slo for slo in model.slos if slo.name == "apiserver-5xx")
    assert [read.selector for read in group_reads(files, five)] == [
        'apiserver_request_total{verb!~"WATCH|CONNECT",job="apiserver"}'
    ]


def test_parts_count_in_the_series_budget(library: tuple[Model, dict[str, bytes]]) -> None:
    model, _ = library
    five = next(slo for slo in model.slos if slo.name == "apiserver-5xx")
    found = estimate(five, model.project.cluster_profile)
    slices = found.slices
    assert found.parts_series == slices * 12  # by cluster and code (12 values on the profile)
    assert found.series == slices * found.series_per_slice + found.parts_series + 1


def test_unit_parts_read_the_counter_once(library: tuple[Model, dict[str, bytes]]) -> None:
    model, files = library
    with_parts = {slo.name for slo in model.slos if queries.unit_parts(slo) is not None}
    assert set(UNIT_PARTS) <= with_parts, sorted(with_parts)
    assert not with_parts & (set(FROM_UNITS) | set(NOT_FROM_UNITS))
    for name in with_parts:
        slo = next(slo for slo in model.slos if slo.name == name)
        reads = group_reads(files, slo)
        assert [(read.times, read.rules) for read in reads] == [(1, (series.PARTS_5M,))], [r.text() for r in reads]
        text = explain_spec(model, files, slo)
        assert f"sum {series.PARTS_5M}, the counter's rates recorded once per unit" in text
        assert "read the raw series again" not in text
    errors = next(slo for slo in model.slos if slo.name == "client-request-errors")
    found = estimate(errors, model.project.cluster_profile)
    assert found.parts_series == 2 * found.unit_series  # the failed requests' rates and the rest, per unit
    assert found.series == found.slices * found.series_per_slice + found.unit_series + found.parts_series + 1


def test_ratio_unit_parts_read_each_raw_series_once(library: tuple[Model, dict[str, bytes]]) -> None:
    model, files = library
    assert {slo.name for slo in model.slos if queries.ratio_unit_parts(slo)} >= set(RATIO_UNIT_PARTS)
    for name in RATIO_UNIT_PARTS:
        slo = next(slo for slo in model.slos if slo.name == name)
        reads = group_reads(files, slo)
        assert [(read.times, read.rules) for read in reads] == [(1, (series.PARTS_5M,))] * 4, name
        assert "the total and bad rates recorded once per unit" in explain_spec(model, files, slo)
        found = estimate(slo, model.project.cluster_profile)
        assert found.parts_series == 2 * found.unit_series  # a NIC's total and bad rates
        assert found.series <= found.budget


def test_latency_errors_come_from_the_parts_and_the_rest_outside_the_total(
    library: tuple[Model, dict[str, bytes]],
) -> None:
    model, files = library
    assert {slo.name for slo in model.slos if queries.latency_parts(slo)} >= set(LATENCY_PARTS)
    for name in LATENCY_PARTS:
        slo = next(slo for slo in model.slos if slo.name == name)
        reads = group_reads(files, slo)
        assert [read.times for read in reads] == [1] * len(reads), [read.text() for read in reads]
        total = [read for read in reads if read.metric == "apiserver_request_total"]
        assert [read.rules for read in total] == [(series.PARTS_5M,), (series.BAD_5M,)], name
        # The errors' own read is only of what the total leaves out: disjoint from the parts.
        assert 'subresource=~"proxy|attach|log|exec|portforward"' in total[1].selector
        assert 'code=~"5.."' in total[1].selector


def test_unit_parts_need_one_counter_read_as_sums(library: tuple[Model, dict[str, bytes]]) -> None:
    """A gauge read other than through sums of one counter's rates keeps its raw reads."""
    model, _ = library
    errors = next(slo for slo in model.slos if slo.name == "client-request-errors")
    assert isinstance(errors.sli, GaugeSLI)
    other = errors.sli.expr.replace("rate(rest_client_requests_total{job", "irate(rest_client_requests_total{job", 1)
    assert queries.unit_parts(dataclasses.replace(errors, sli=dataclasses.replace(errors.sli, expr=other))) is None
    two = errors.sli.expr.replace('code=~"5..|<error>"', 'code=~"5..",method="GET"')
    assert queries.unit_parts(dataclasses.replace(errors, sli=dataclasses.replace(errors.sli, expr=two))) is None
    negative = errors.sli.expr.replace('code=~"5..|<error>"', 'code!~"2.."')
    parts = queries.unit_parts(dataclasses.replace(errors, sli=dataclasses.replace(errors.sli, expr=negative)))
    assert parts is not None and parts.pick is not None and parts.pick.op == "!~"
    value = queries.raw_expressions(dataclasses.replace(errors, sli=dataclasses.replace(errors.sli, expr=negative)))
    assert f'{series.PARTS_5M}{{slo="client-request-errors",slo_part=""}}' in value[series.VALUE]


@pytest.mark.parametrize("spec", sorted(NOT_FROM_UNITS))
def test_explain_says_when_the_slice_reads_the_raw_series_again(
    library: tuple[Model, dict[str, bytes]], spec: str
) -> None:
    model, files = library
    slo = next(slo for slo in model.slos if slo.name == spec)
    text = explain_spec(model, files, slo)
    assert "read the raw series again" in text
    assert f"aggregate {series.UNIT_VALUE}" not in text


def test_explain_shows_the_reads_of_a_spec_at_the_floor(library: tuple[Model, dict[str, bytes]]) -> None:
    model, files = library
    slo = next(slo for slo in model.slos if slo.name == "node-readiness")
    text = explain_spec(model, files, slo)
    reads = text.split("raw series read per evaluation", 1)[1].split("\n\n", 1)[0]
    assert "2x" not in reads and "3x" not in reads
    assert "1x (5m; slo:unit_value:gauge): kube_node_status_condition{" in reads
    assert "slo:sli_total:rate5m, slo:sli_bad:rate5m aggregate slo:unit_value:gauge in the same evaluation" in reads


def test_vmalert_reads_the_raw_series_for_derived_series(library: tuple[Model, dict[str, bytes]]) -> None:
    """vmalert sees recorded series a delivery late: nothing there aggregates the per-unit value or the parts."""
    model, files = library
    for slo in model.slos:
        if not (
            queries.derives_from_units(slo)
            or queries.total_parts(slo)
            or queries.unit_parts(slo)
            or queries.ratio_unit_parts(slo)
        ):
            continue
        rules = yaml.safe_load(files[f"vmalert/{slo.name}.rules.yaml"])["groups"][0]["rules"]
        raw = queries.raw_expressions(slo, same_evaluation=False)
        assert series.PARTS_5M not in {rule.get("record") for rule in rules}, slo.name
        for rule in rules:
            if rule.get("record") in raw:
                assert rule["expr"] == raw[rule["record"]], slo.name
                assert series.UNIT_VALUE not in rule["expr"] and series.PARTS_5M not in rule["expr"], slo.name
