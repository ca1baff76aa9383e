"""A state SLI under ``burn_policy: sloth`` (burn pairs without ``for``): its generated tests pass promtool.

Without ``for`` each pair resolves the minute its short window clears, so the test generator must place
that minute as the rules compute the window (5-minute blocks, the oldest partial in a test's first
minutes), not by the minutes' average: the Sloth examples' home-wifi SLOs failed this way.
"""

from __future__ import annotations

from pathlib import Path

from tests.conftest import RATIO_SLI_AND_OBJECTIVE, SLO_RELATIVE, RunCli, make_spec_tree
from tests.promtool_runs import promtool_test

STATE_SLI = """\
sli:
  state:
    expr: 'unifipoller_client_satisfaction_ratio >= bool 0.5'
objective:
  target: 99.9%
  period: 30d
  burn_policy: sloth
"""


def test_state_sli_without_for_passes_its_generated_tests(tmp_path: Path, run_cli: RunCli) -> None:
    specs = make_spec_tree(tmp_path / "specs")
    spec = specs / SLO_RELATIVE
    text = spec.read_text(encoding="utf-8").replace(RATIO_SLI_AND_OBJECTIVE, STATE_SLI)
    spec.write_text(text.replace("  selector: '{job=\"kube-dns\"}'\n", ""), encoding="utf-8")
    code, _, err = run_cli(["generate", "--specs", "specs", "--out", "out"], tmp_path)
    assert code == 0, err
    tests = tmp_path / "out" / "prometheus" / "tests"
    run = promtool_test(tests / "dns-errors.test.yaml")
    assert run.returncode == 0, run.stdout[-3000:]
