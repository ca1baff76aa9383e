"""The generated tests' timing follows the rules' window shape, because both read ``WindowSource``.

A short burn window of a day or more that is not a tier (``1d5m``) sums a 1d and a 5m block.
The proof once decided "hourly" by length alone, so for such a window it over-estimated when
the window clears and checked ``keep_firing_for`` after the alert had resolved: promtool failed
the generated test. Windows are now all sums of blocks, simulated the same way.
"""

from __future__ import annotations

from pathlib import Path

from compiler.model.windows import DAY, MINUTE, Block, WindowSource, blocks
from compiler.targets import render_all
from tests.conftest import SLO_RELATIVE, VALID_SLO, make_spec_tree
from tests.promtool_runs import promtool_test
from tests.support import compile_tree

PAIRS = """\
  burn_alerts:
    - {severity: page, long: 1h, short: 5m, factor: 14.4, for: 2m}
    - {severity: ticket, long: 3d, short: 1d5m, factor: 1, for: 1h, keep_firing_for: 30m}
"""


def test_a_day_long_short_window_off_the_hour_is_timed_as_the_blocks_it_reads(tmp_path: Path) -> None:
    assert WindowSource.of(DAY + 5 * MINUTE) is WindowSource.BLOCKS
    assert blocks(DAY + 5 * MINUTE) == (Block(DAY, 0), Block(5 * MINUTE, DAY))
    spec_dir = make_spec_tree(tmp_path / "specs")
    (spec_dir / SLO_RELATIVE).write_text(VALID_SLO.replace("  period: 30d\n", "  period: 30d\n" + PAIRS, 1))
    files = render_all(compile_tree(spec_dir, cwd=tmp_path))
    out = tmp_path / "out"
    for name, content in files.items():
        if name.startswith("prometheus/rules/") or name.startswith("prometheus/tests/"):
            (out / name).parent.mkdir(parents=True, exist_ok=True)
            (out / name).write_bytes(content)
    test_file = out / "prometheus" / "tests" / "dns-errors.test.yaml"
    assert 'short_window="1d5m"' in test_file.read_text(encoding="utf-8")  # the pair is under test
    result = promtool_test(test_file, timeout=300)
    assert result.returncode == 0, (result.stdout + result.stderr)[-3000:]


RATE_GAUGE_WITH_ASSUMPTION = """\
apiVersion: slo-compiler/v1
kind: SLO
name: dns-errors
family: node-network-errors
owner: platform-network
description: SERVFAIL answers per second per pod.
slice:
  by: [cluster]
  selector: '{job="kube-dns"}'
sli:
  gauge:
    expr: 'sum by (cluster) (rate(coredns_servfail_total[5m]))'
unit: per_second
normal_range:
  max: 1
  reason: More than one SERVFAIL a second is an upstream failing.
  for: 10m
critical_range:
  max: 10
  reason: Ten a second is every lookup of a busy client failing.
  for: 5m
assumes:
  - name: coredns-scraped
    expr: 'count by (cluster) (coredns_build_info)'
    why: Without CoreDNS's own series the rate cannot be told from a quiet resolver.
    otherwise: Scrape CoreDNS.
mitigation:
  summary: Find the failing upstream.
  steps:
    - Read the CoreDNS logs.
  stop_conditions:
    - An upstream zone is down.
  escalation: Page the network on-call.
"""


def test_assumption_ticket_case_of_a_rate_gauge_waits_for_the_rate_window(tmp_path: Path) -> None:
    """A gauge over rate() has no value before its second sample, so its no-data alert is pending at minute 0.

    The assumption's ticket case asserted that nothing else pends from minute 0 on, and promtool failed the
    generated test of such a spec (infiniband-port-errors); it now judges the warming alerts once the window is
    whole, as the calm baseline does.
    """
    spec_dir = make_spec_tree(tmp_path / "specs")
    (spec_dir / SLO_RELATIVE).write_text(RATE_GAUGE_WITH_ASSUMPTION, encoding="utf-8")
    files = render_all(compile_tree(spec_dir, cwd=tmp_path))
    out = tmp_path / "out"
    for name, content in files.items():
        if name.startswith("prometheus/rules/") or name.startswith("prometheus/tests/"):
            (out / name).parent.mkdir(parents=True, exist_ok=True)
            (out / name).write_bytes(content)
    test_file = out / "prometheus" / "tests" / "dns-errors.test.yaml"
    assert "the assumption has no series in slice a" in test_file.read_text(encoding="utf-8")
    result = promtool_test(test_file, timeout=300)
    assert result.returncode == 0, (result.stdout + result.stderr)[-3000:]
