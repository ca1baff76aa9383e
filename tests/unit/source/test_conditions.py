"""``assumes`` and ``confirmed_by``: read with positions, refused where a page could wait on its own outage.

The valid tree of conftest.py gets one page band and conditions appended; each test breaks one
of them and checks the positioned message, or compiles the tree and checks what the rules and
the plan make of them.
"""

from __future__ import annotations

from pathlib import Path

import pytest

from compiler.model import series
from compiler.pipeline import compile_specs
from compiler.plan import plan
from compiler.targets import catalog, runbooks
from compiler.targets.prometheus import alert_rules, recording_rules
from tests.conftest import RunCli
from tests.unit.source.test_errors import SLO, message_at, validate

PAGE_BAND = """\
normal_range:
  max: 0.01
critical_range:
  max: 0.2
"""


def conditions(assumes: str = "", confirmed: str = "") -> str:
    text = PAGE_BAND
    if assumes:
        text += "assumes:\n" + assumes
    if confirmed:
        text += "confirmed_by:\n" + confirmed
    return text


ASSUMPTION = """\
  - name: metrics-reachable
    expr: 'max by (cluster) (scrape_samples_scraped) > 0'
    why: The targets may refuse the scrape.
    otherwise: Fix the bind address.
"""
CONFIRMATION = """\
  - name: pods-unavailable
    expr: 'max by (cluster) (kube_deployment_status_replicas_unavailable{deployment="coredns"}) > 0'
    why: A scrape failure alone is not an outage.
"""


def with_conditions(slo_file: Path, text: str) -> None:
    slo_file.write_text(slo_file.read_text(encoding="utf-8") + text, encoding="utf-8")


def line_of(slo_file: Path, needle: str) -> int:
    return next(n for n, line in enumerate(slo_file.read_text(encoding="utf-8").splitlines(), 1) if needle in line)


def test_a_condition_that_reads_the_slis_own_series_is_refused(run_cli: RunCli, tmp_path: Path, slo_file: Path) -> None:
    """The outage that moves the SLI would break the condition too and hold back its own page."""
    with_conditions(slo_file, conditions(ASSUMPTION.replace("scrape_samples_scraped", "coredns_dns_responses_total")))
    stderr = validate(run_cli, tmp_path, problems=1)
    message = message_at(stderr, f"{SLO}:{line_of(slo_file, 'coredns_dns_responses_total) > 0')}:11")
    assert message.startswith("assumes[0].expr reads coredns_dns_responses_total, which the SLI reads too")


@pytest.mark.parametrize(
    ("expr", "expected"),
    [
        ("time() - x > 60", "assumes[0].expr reads time(): a condition is a fact seen in series, not a clock"),
        ("sum(up) > 0", "assumes[0].expr drops slice label(s) cluster in an aggregation"),
        ("max by (cluster) (up[1h]) > 0", "invalid PromQL in assumes[0].expr"),
    ],
)
def test_a_condition_expression_is_checked_where_it_is_written(
    run_cli: RunCli, tmp_path: Path, slo_file: Path, expr: str, expected: str
) -> None:
    with_conditions(slo_file, conditions(ASSUMPTION.replace("max by (cluster) (scrape_samples_scraped) > 0", expr)))
    stderr = validate(run_cli, tmp_path, problems=1)
    assert message_at(stderr, f"{SLO}:{line_of(slo_file, expr[:8])}:11").startswith(expected)


def test_condition_names_are_unique_across_both_lists(run_cli: RunCli, tmp_path: Path, slo_file: Path) -> None:
    confirmation = CONFIRMATION.replace("pods-unavailable", "metrics-reachable")
    with_conditions(slo_file, conditions(ASSUMPTION, confirmation))
    stderr = validate(run_cli, tmp_path, problems=1)
    line = line_of(slo_file, "confirmed_by:") + 1
    assert message_at(stderr, f"{SLO}:{line}:11") == (
        "condition name 'metrics-reachable' is already used in assumes[0]: each needs its own"
    )


def test_an_assumption_needs_what_to_do_where_it_does_not_hold(run_cli: RunCli, tmp_path: Path, slo_file: Path) -> None:
    with_conditions(slo_file, conditions(ASSUMPTION.replace("    otherwise: Fix the bind address.\n", "")))
    stderr = validate(run_cli, tmp_path, problems=1)
    assert "otherwise" in stderr


def test_pages_wait_for_every_assumption_and_a_confirmation_and_tickets_do_not(spec_tree: Path, slo_file: Path) -> None:
    with_conditions(slo_file, conditions(ASSUMPTION, CONFIRMATION))
    model, problems = compile_specs(spec_tree)
    assert model is not None and not problems
    alert_plan = plan(model)
    spec = alert_plan.specs[0]
    rules = {(rule.name, rule.spec.severity): rule.expr for rule in alert_rules(alert_plan.model, spec)}
    held = 'slo:assumption:held_1d{slo="dns-errors", condition="metrics-reachable"}'
    confirmed = 'slo:condition:holds{slo="dns-errors", condition="pods-unavailable"}'
    page = rules[("DnsErrorsAboveCriticalRange", "page")]
    assert page.endswith(f"\nand on (cluster) {held}\nand on (cluster) {confirmed}")
    assert held not in rules[("DnsErrorsAboveNormalRange", "ticket")]
    no_data = rules[("DnsErrorsNoData", "ticket")]
    assert held not in no_data  # a ticket: never gated
    ticket = rules[("DnsErrorsAssumptionBroken", "ticket")]
    assert f"absent({held})" in ticket
    names = (series.CONDITION_HOLDS, series.ASSUMPTION_HELD)
    recorded = [rule for rule in recording_rules(spec.slo) if rule["record"] in names]
    assert [(rule["record"], rule["labels"]["condition"]) for rule in recorded] == [
        (series.CONDITION_HOLDS, "metrics-reachable"),
        (series.ASSUMPTION_HELD, "metrics-reachable"),
        (series.CONDITION_HOLDS, "pods-unavailable"),
    ]


def test_explain_runbook_and_catalog_show_what_the_pages_rely_on(
    run_cli: RunCli, tmp_path: Path, spec_tree: Path, slo_file: Path
) -> None:
    with_conditions(slo_file, conditions(ASSUMPTION, CONFIRMATION))
    code, stdout, stderr = run_cli(["explain", "dns-errors", "--specs", "specs"], tmp_path)
    assert code == 0, stderr
    assert "assumes (pages wait while one has not held within 1d; a ticket names it):" in stdout
    assert "  metrics-reachable: max by (cluster) (scrape_samples_scraped" in stdout
    assert "    otherwise: Fix the bind address. (ticket after 1h)" in stdout
    assert "confirmed by (a page needs one of these for its slice):\n  pods-unavailable: " in stdout
    model, problems = compile_specs(spec_tree)
    assert model is not None and not problems
    alert_plan = plan(model)
    runbook = runbooks.render(alert_plan)["runbooks/dns-errors.md"].decode()
    assert "### Assumption: metrics-reachable\n" in runbook
    assert "- **Where it does not hold:** Fix the bind address." in runbook
    page_section = runbook.split("### DnsErrorsAboveCriticalRange\n", 1)[1].split("\n### ", 1)[0]
    assert "This page assumes `metrics-reachable`, and stays silent while it does not hold." in page_section
    assert "It pages only while `pods-unavailable` confirms it." in page_section
    ticket_section = runbook.split("### DnsErrorsAboveNormalRange\n", 1)[1].split("\n### ", 1)[0]
    assert "This page assumes" not in ticket_section
    page = catalog.render(alert_plan)["catalog/specs/dns-errors.html"].decode()
    assert "<h2>Assumptions</h2>" in page and "<td>metrics-reachable</td>" in page
    assert "<strong>pods-unavailable</strong>" in page
