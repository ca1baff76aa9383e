"""Generated test inputs read as a reviewer expects: no binary float noise in the vectors.

A threshold change re-derives the input vectors of the generated tests, and a reviewer
reads them in the diff: ``8907.6+600x5``, not ``8907.599999999999+600x5``. The noise can
only stay where removing it would change what promtool sees: a flat run after a ramp
starts at the exact total promtool accumulated, because a rounded start a hair below it
is a counter reset.
"""

from __future__ import annotations

import re
from pathlib import Path

from compiler.targets.prometheus.proof.timeline import render_counter, render_gauge
from tests.promtool_runs import promtool_test
from tests.support import REPO_ROOT

NOISE = re.compile(r"\d\.\d*(?:0{6,}[1-9]|9{6,})\d*")


def test_counter_runs_start_from_rounded_totals() -> None:
    # 0.1 + 0.2 = 0.30000000000000004 in binary; the run after it is written as 0.3+...
    assert render_counter([0.1, 0.1, 0.1, 0.2, 0.2]) == "0+0.1x2 0.4+0.2x1"
    assert render_counter([596.7] * 15 + [600.0] * 6) == "0+596.7x14 8953.8+600x5"


def test_a_flat_run_after_a_ramp_keeps_the_exact_total() -> None:
    # 9.48 x 6 accumulates to 56.88000000000001; writing 56.88 would drop the counter.
    vector = render_counter([9.48] * 7 + [0.0] * 5)
    assert vector == "0+9.48x6 56.88000000000001x4"


def test_gauge_values_are_rounded() -> None:
    assert render_gauge([0.1 + 0.2, 0.1 + 0.2, None]) == "0.3x1 _x1"


def test_promtool_reads_the_counter_as_a_counter_without_reset(tmp_path: Path) -> None:
    """The rounded vectors keep increase() exact: no reset where a run starts."""
    vector = render_counter([596.7] * 15 + [600.0] * 6)
    test = tmp_path / "t.test.yaml"
    test.write_text(
        "rule_files: []\n"
        "evaluation_interval: 1m\n"
        "tests:\n"
        "- interval: 1m\n"
        f"  input_series:\n  - series: c_total\n    values: '{vector}'\n"
        "  promql_expr_test:\n"
        "  - expr: resets(c_total[30m])\n    eval_time: 20m\n    exp_samples: [{labels: '{}', value: 0}]\n"
        "  - expr: c_total\n    eval_time: 20m\n    exp_samples: [{labels: 'c_total', value: 11953.8}]\n"
    )
    result = promtool_test(test)
    assert result.returncode == 0, result.stdout + result.stderr


def test_generated_vectors_of_the_library_hold_noise_only_at_flat_runs() -> None:
    """Every noisy number left in generated/ is the start of a flat run after a ramp."""
    noisy = []
    for path in sorted((REPO_ROOT / "generated" / "prometheus" / "tests").glob("*.test.yaml")):
        for line in path.read_text().splitlines():
            if "values:" not in line:
                continue
            for run in line.split("values:", 1)[1].strip().strip("'").split():
                if NOISE.search(run) and not re.fullmatch(r"[0-9.e+-]+x\d+", run):
                    noisy.append(f"{path.name}: {run}")
    assert noisy == []
