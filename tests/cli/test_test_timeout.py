"""``slo-compiler test --timeout`` and ``--promtool-timeout``: a run that hangs is stopped and says where.

The starter of ``slo-compiler init`` is generated once per module and tested with the real promtool
and amtool under bounds no process can meet (1ms), so the outcome does not depend on the machine's
speed: every file times out, or is left unstarted once the run's deadline has passed.
"""

from __future__ import annotations

import re
import shutil
from pathlib import Path

import pytest

from compiler import testrun
from tests.conftest import RunCli

pytestmark = pytest.mark.skipif(
    shutil.which("promtool") is None or shutil.which("amtool") is None, reason="promtool and amtool are needed"
)


@pytest.fixture
def starter(run_cli: RunCli, tmp_path: Path) -> Path:
    assert run_cli(["init"], tmp_path)[0] == 0
    code, _, err = run_cli(["generate"], tmp_path)
    assert code == 0, err
    return tmp_path


def test_each_promtool_process_past_its_bound_is_killed_and_its_file_named(run_cli: RunCli, starter: Path) -> None:
    files = sorted(
        path.relative_to(starter).as_posix()
        for glob in testrun.TEST_GLOBS
        for path in (starter / "generated").glob(glob)
    )
    assert len(files) == 4  # three specs and the heartbeat
    code, out, err = run_cli(["test", "--promtool-timeout", "1ms"], starter)
    assert code == 2, out + err
    timed_out = [line for line in err.splitlines() if "promtool test timed out" in line]
    assert timed_out == [f"{name}: promtool test timed out after 1ms (--promtool-timeout)" for name in files]
    # The routing cases still ran within the whole run's (default) bound.
    assert re.search(
        r"^slo-compiler: 0 promtool test file\(s\) passed, [1-9]\d* routing case\(s\) passed, 4 timed out$", out, re.M
    )


def test_the_whole_run_past_its_timeout_stops_and_says_what_did_not_run(run_cli: RunCli, starter: Path) -> None:
    code, out, err = run_cli(["test", "--timeout", "1ms"], starter)
    assert code == 2, out + err
    lines = [line for line in err.splitlines() if ": warning: " not in line]  # the starter's placeholder links
    assert lines, out
    allowed = re.compile(
        r"^(generated/prometheus/(tests|heartbeat)/[a-z-]+\.test\.yaml: "
        r"promtool test timed out: the run's --timeout 1ms passed"
        r"|generated: [1-4] promtool test file\(s\) not run: the run's --timeout 1ms passed"
        r"|generated/alertmanager/routing-tests\.yaml: \d+ routing case\(s\) not run: the run's --timeout 1ms passed)$"
    )
    assert [line for line in lines if not allowed.match(line)] == []
    assert lines[-1].startswith("generated/alertmanager/routing-tests.yaml: ")
    assert "0 promtool test file(s) passed, 0 routing case(s) passed" in out


@pytest.mark.parametrize("flag", ["--timeout", "--promtool-timeout"])
@pytest.mark.parametrize("value", ["0s", "soon", "2d"])
def test_a_timeout_that_is_not_a_positive_duration_is_a_usage_error(
    run_cli: RunCli, tmp_path: Path, flag: str, value: str
) -> None:
    assert run_cli(["init"], tmp_path)[0] == 0
    code, out, err = run_cli(["test", flag, value], tmp_path)
    assert (code, out) == (2, "")
    assert err == f"slo-compiler: {flag} '{value}' must be a duration from 1ms to 1d, such as 10m\n"
