"""Issue 28 ("The first hour"): what a new user's first specs should be told without asking.

A spec sliced per unit (instance, node, pod, device) without ``fleet:`` pages once per unit: a
positioned warning at ``slice.by`` says how many pages a 300-unit fault makes and points to ``fleet:``.
The default burn policy on a period other than 30d never gets a factor under 1 (a ticket for a
burn that would leave budget at the period's end).
"""

from __future__ import annotations

from pathlib import Path

from compiler.pipeline import compile_specs
from tests.conftest import SLO_RELATIVE, VALID_SLO, RunCli

FANOUT = "so dns-errors pages once per instance: a fault on 300 instances would page 300 times; judge the units"


def _slice_by(spec_tree: Path, by: str, extra: str = "", period: str = "  period: 30d\n") -> Path:
    path = spec_tree / SLO_RELATIVE
    text = VALID_SLO.replace("  by: [cluster]\n", f"  by: {by}\n{extra}").replace("  period: 30d\n", period)
    path.write_text(text + "series_budget: 100000\n", encoding="utf-8")
    return path


def test_per_unit_slice_pages_per_unit(run_cli: RunCli, tmp_path: Path, spec_tree: Path) -> None:
    _slice_by(spec_tree, "[cluster, instance]")
    code, stdout, stderr = run_cli(["validate", "--specs", "specs"], tmp_path)
    assert code == 0, stderr
    assert stdout.endswith("slo-compiler: 1 spec(s) valid\n")
    assert stderr.splitlines() == [
        "specs/network/dns-errors.yaml:8:3: warning: slice.by has instance, "
        f"{FANOUT} as a fleet (`fleet:`) so one unit is a ticket and many are one page "
        '(docs/spec-reference.md: "Fleet signals")'
    ]


def test_per_unit_slice_with_a_few_declared_units_or_no_page_is_quiet(
    run_cli: RunCli, tmp_path: Path, spec_tree: Path
) -> None:
    _slice_by(spec_tree, "[cluster, instance]", "  cardinality: {instance: 5}\n")
    code, _, stderr = run_cli(["validate", "--specs", "specs"], tmp_path)
    assert (code, stderr) == (0, "")
    tickets = "  period: 30d\n  burn_alerts: [{severity: ticket, long: 6h, short: 30m, factor: 6}]\n"
    _slice_by(spec_tree, "[cluster, instance]", period=tickets)
    code, _, stderr = run_cli(["validate", "--specs", "specs"], tmp_path)
    assert (code, stderr) == (0, "")
    _slice_by(spec_tree, "[cluster, pod]", "  cardinality: {pod: 5000}\n")  # many declared: still a storm
    code, _, stderr = run_cli(["generate", "--specs", "specs", "--out", "out"], tmp_path)
    assert code == 0
    assert "so dns-errors pages once per pod: a fault on 300 pods would page 300 times" in stderr


def test_burn_factor_below_one_never_tickets_on_a_met_slo(spec_tree: Path) -> None:
    """28d: the 3d/6h pair is 1x (the budget gone at the period's end), not 0.933x (gone in 30d)."""
    factors = {}
    for period in ("28d", "7d", "30d", "90d"):
        _slice_by(spec_tree, "[cluster]", period=f"  period: {period}\n")
        model, diagnostics = compile_specs(spec_tree)
        assert model is not None and not diagnostics, diagnostics.render()
        objective = model.slos[0].objective
        assert objective is not None
        factors[period] = [(alert.severity, alert.factor) for alert in objective.burn_alerts]
    assert factors["28d"] == [("page", 13.44), ("page", 5.6), ("ticket", 2.8), ("ticket", 1.0)]
    assert factors["7d"] == [("page", 3.36), ("page", 1.4), ("ticket", 1.0), ("ticket", 1.0)]
    assert factors["30d"] == [("page", 14.4), ("page", 6.0), ("ticket", 3.0), ("ticket", 1.0)]
    assert factors["90d"] == [("page", 43.2), ("page", 18.0), ("ticket", 9.0), ("ticket", 3.0)]


def test_messages_assume_no_makefile(run_cli: RunCli, tmp_path: Path, spec_tree: Path) -> None:
    """The user's repository has no Makefile: headers and the stale message name the command itself."""
    code, _, stderr = run_cli(["generate", "--specs", "specs", "--out", "out"], tmp_path)
    assert code == 0, stderr
    files = [path for path in (tmp_path / "out").rglob("*") if path.is_file()]
    texts = {path.relative_to(tmp_path / "out").as_posix(): path.read_text(encoding="utf-8") for path in files}
    assert [name for name, text in texts.items() if "make generate" in text] == []
    told = {name for name, text in texts.items() if "run `slo-compiler generate`" in text}
    assert {
        "alertmanager/alertmanager.yaml",
        "prometheus/rules/dns-errors.rules.yaml",
        "runbooks/dns-errors.md",
    } <= told
    rules = tmp_path / "out" / "prometheus" / "rules" / "dns-errors.rules.yaml"
    rules.write_text(texts["prometheus/rules/dns-errors.rules.yaml"] + "# edited\n", encoding="utf-8")
    code, _, stderr = run_cli(["check", "--specs", "specs", "--out", "out"], tmp_path)
    assert code == 1
    assert stderr.splitlines()[-1] == (
        "slo-compiler: generated output is stale; run `slo-compiler generate --specs specs --out out` "
        "and commit the result"
    )


def test_series_budget_is_reported_with_the_other_problems(run_cli: RunCli, tmp_path: Path, spec_tree: Path) -> None:
    """An unknown owner and a schema error do not hide the series-budget error: one run shows all three."""
    path = spec_tree / SLO_RELATIVE
    text = VALID_SLO.replace("  by: [cluster]\n", "  by: [cluster, instance]\n")
    text = text.replace("owner: platform-network", "owner: platform-netwrk").replace("persistence:", "persistance:")
    path.write_text(text, encoding="utf-8")
    code, _, stderr = run_cli(["validate", "--specs", "specs"], tmp_path)
    assert code == 1
    expected = [
        "specs/network/dns-errors.yaml:5:8: unknown owner 'platform-netwrk'",
        "specs/network/dns-errors.yaml:8:3: slicing by instance records about 90,001 series",
        "specs/network/dns-errors.yaml:17:1: unknown key 'persistance' at the top level",
        "slo-compiler: 3 problem(s); nothing written",
    ]
    lines = stderr.splitlines()
    assert len(lines) == len(expected) and all(map(str.startswith, lines, expected)), stderr


def test_missing_owners_file_is_named(run_cli: RunCli, tmp_path: Path, spec_tree: Path) -> None:
    """Without owners.yaml the message says so and how to create it, not "(teams: none registered)"."""
    (spec_tree / "owners.yaml").unlink()
    (spec_tree / "project.yaml").write_text(
        (spec_tree / "project.yaml")
        .read_text(encoding="utf-8")
        .replace("foreign_alerts: {team: platform-network}\n", ""),
        encoding="utf-8",
    )
    code, _, stderr = run_cli(["validate", "--specs", "specs"], tmp_path)
    assert code == 1
    assert stderr.splitlines()[0] == (
        "specs/network/dns-errors.yaml:5:8: unknown owner 'platform-network': no owners.yaml (no Owners document "
        "with teams) in the spec directory, so every owner is unknown; create owners.yaml with apiVersion: "
        "slo-compiler/v1, kind: Owners and teams: [{name: platform-network, contact: ..., receivers: "
        '{page: [...], ticket: [...]}}] (docs/getting-started.md: "Quick start")'
    )
