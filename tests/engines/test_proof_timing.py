"""The generated tests' timing follows the rules' window shape, because both read ``WindowSource``.

A short burn window of a day or more that is not a tier (``1d5m``) sums a 1d and a 5m block.
The proof once decided "hourly" by length alone, so for such a window it over-estimated when
the window clears and checked ``keep_firing_for`` after the alert had resolved: promtool failed
the generated test. Windows are now all sums of blocks, simulated the same way.
"""

from __future__ import annotations

import subprocess
from pathlib import Path

from compiler.model.windows import DAY, MINUTE, Block, WindowSource, blocks
from compiler.targets import render_all
from tests.conftest import SLO_RELATIVE, VALID_SLO, make_spec_tree
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
    result = subprocess.run(
        ["promtool", "test", "rules", test_file.name],
        cwd=test_file.parent,
        capture_output=True,
        text=True,
        timeout=300,
        check=False,
    )
    assert result.returncode == 0, (result.stdout + result.stderr)[-3000:]
