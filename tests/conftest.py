"""Shared fixtures: a minimal valid spec tree in a temp dir, and a CLI runner.

The SLO spec below is written inline (not copied from slo_specs/) so tests that break one
line of it can assert exact line numbers. Its layout, for reference:

     1 apiVersion          10 sli:                 19 mitigation:
     3 name: dns-errors    11   ratio:             20   summary
     5 owner               12     bad              21   steps:
     7 slice:              13     total            23   stop_conditions:
     8   by: [cluster]     14 objective:           25   escalation
     9   selector          15   target: 99.9%
                           16   period: 30d
                           17 persistence:
                           18   for: 10m
"""

from __future__ import annotations

import contextlib
import io
import os
import signal
import subprocess
import sys
import threading
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import Any

import pytest

from tests.promtool_runs import Verdicts
from tests.suite import bytecode_cached

pytest_plugins = ("tests.cpu_report",)  # --cpu-durations

REPO_ROOT = Path(__file__).resolve().parent.parent

# The Go tools the suite runs (promtool above all, a fifth of the suite's CPU) spend a quarter of
# their time collecting garbage at Go's default GOGC=100, and run a collector thread per core while
# the other pytest worker needs that core. Measured on node-readiness.test.yaml: 44 s of CPU at the
# defaults, 27 s with these (same results; the heap peaks at 190 MB instead of 79 MB). GOMEMLIMIT
# keeps a large data set collected before it grows past 4 GiB. A developer's own setting wins.
for _name, _value in (("GOGC", "400"), ("GOMAXPROCS", "1"), ("GOMEMLIMIT", "4GiB")):
    os.environ.setdefault(_name, _value)

# Every Python process a test starts (the CLI as a process, the wheel's and the CI job's venvs) imports
# the compiler's 124 modules: with PYTHONDONTWRITEBYTECODE set, each compiled them from source again (0.4 s
# of CPU per process, a third of a one-spec `generate`). They cache their bytecode out of the tree instead.
_cached = bytecode_cached(os.environ)
os.environ.update(_cached)
for _name in set(os.environ) - set(_cached):
    del os.environ[_name]

OWNERS_YAML = """\
apiVersion: slo-compiler/v1
kind: Owners
teams:
  - name: platform-network
    contact: "#platform-network"
    receivers: {page: [{pagerduty: {routing_key_file: /etc/am/pd}}], ticket: [{webhook: {url: "http://127.0.0.1:9/t"}}]}
  - name: platform-nodes
    contact: "#platform-nodes"
    receivers: {page: [{pagerduty: {routing_key_file: /etc/am/pd}}], ticket: [{webhook: {url: "http://127.0.0.1:9/t"}}]}
"""

# The watcher is watched, foreign alerts have a home and the example links are said to be examples,
# so a valid tree validates without warnings
# (tests/unit/source/test_watch_the_watcher.py covers a project without them).
PROJECT_YAML = """\
apiVersion: slo-compiler/v1
kind: Project
runbook_base_url: https://runbooks.example.com/slo
evaluation_interval: 1m
heartbeat:
  receiver: {webhook: {url: "http://127.0.0.1:9/heartbeat"}}
foreign_alerts: {team: platform-network}
example_links: true
"""

# Lines 10-16 of the valid spec: the SLI and its objective; tests swap in other SLI kinds.
RATIO_SLI_AND_OBJECTIVE = """\
sli:
  ratio:
    bad: 'coredns_dns_responses_total{rcode="SERVFAIL"}'
    total: coredns_dns_responses_total
objective:
  target: 99.9%
  period: 30d
"""

VALID_SLO = (
    """\
apiVersion: slo-compiler/v1
kind: SLO
name: dns-errors
family: node-network-errors
owner: platform-network
description: Cluster DNS answers without SERVFAIL.
slice:
  by: [cluster]
  selector: '{job="kube-dns"}'
"""
    + RATIO_SLI_AND_OBJECTIVE
    + """\
persistence:
  for: 10m
mitigation:
  summary: Scale CoreDNS.
  steps:
    - Scale the CoreDNS deployment.
  stop_conditions:
    - An upstream zone is down.
  escalation: Page the network on-call.
"""
)

# Where the SLO spec lives inside the spec tree.
SLO_RELATIVE = Path("network") / "dns-errors.yaml"

RunCli = Callable[[Sequence[str | Path], Path], tuple[int, str, str]]


def make_spec_tree(spec_dir: Path) -> Path:
    """Write owners.yaml, project.yaml and one valid SLO spec under ``spec_dir``."""
    (spec_dir / SLO_RELATIVE).parent.mkdir(parents=True, exist_ok=True)
    (spec_dir / "owners.yaml").write_text(OWNERS_YAML, encoding="utf-8")
    (spec_dir / "project.yaml").write_text(PROJECT_YAML, encoding="utf-8")
    (spec_dir / SLO_RELATIVE).write_text(VALID_SLO, encoding="utf-8")
    return spec_dir


def _run_cli(args: Sequence[str | Path], cwd: Path) -> tuple[int, str, str]:
    """Run the CLI in this process, in ``cwd``; returns (returncode, stdout, stderr).

    What a command prints and returns does not depend on the process it runs in, so the tests
    of messages and exit codes call ``compiler.cli.main`` directly: a fresh interpreter costs
    about half a second of CPU to start and import, and the parse caches stay warm between calls.
    Tests about the process itself (signals, concurrent runs, the installed wheel) start it
    themselves or use ``run_cli_subprocess``.
    """
    from compiler import cli

    out, err = io.StringIO(), io.StringIO()
    before = Path.cwd()
    debug = os.environ.pop("SLO_COMPILER_DEBUG", None)
    try:
        os.chdir(cwd)
        with contextlib.redirect_stdout(out), contextlib.redirect_stderr(err):
            try:
                code = cli.main([str(arg) for arg in args])
            except SystemExit as exc:  # argparse's usage errors and --help
                code = exc.code if isinstance(exc.code, int) else (0 if exc.code is None else 1)
                if isinstance(exc.code, str):
                    print(exc.code, file=sys.stderr)
    finally:
        os.chdir(before)
        if debug is not None:
            os.environ["SLO_COMPILER_DEBUG"] = debug
    return code, out.getvalue(), err.getvalue()


def run_cli_subprocess(args: Sequence[str | Path], cwd: Path) -> tuple[int, str, str]:
    """Run ``python -m compiler *args`` in ``cwd`` in a new process; returns (returncode, stdout, stderr)."""
    env = {**os.environ, "PYTHONPATH": str(REPO_ROOT)}
    env.pop("SLO_COMPILER_DEBUG", None)
    result = subprocess.run(
        [sys.executable, "-m", "compiler", *(str(arg) for arg in args)],
        cwd=cwd,
        env=env,
        capture_output=True,
        text=True,
        timeout=120,
        check=False,
    )
    return result.returncode, result.stdout, result.stderr


@pytest.fixture(scope="session")
def repo_root() -> Path:
    return REPO_ROOT


@pytest.fixture
def spec_tree(tmp_path: Path) -> Path:
    """A valid spec tree at ``tmp_path/specs`` (run the CLI with cwd=tmp_path)."""
    return make_spec_tree(tmp_path / "specs")


@pytest.fixture
def slo_file(spec_tree: Path) -> Path:
    """The one SLO spec of ``spec_tree``."""
    return spec_tree / SLO_RELATIVE


@pytest.fixture
def valid_slo() -> str:
    """The text of the valid SLO spec, for tests that break one line of it."""
    return VALID_SLO


@pytest.fixture(scope="session")
def run_cli() -> RunCli:
    return _run_cli


TIERS = ("unit", "targets", "engines", "cli", "world", "conformance", "live", "lab")
FAST_TIERS = ("unit", "targets")  # `make test-fast`: nothing but Python runs


def tier_of(path: Path) -> str | None:
    """The tier of a test file: its first folder under tests/ (None outside a tier folder)."""
    try:
        parts = path.resolve().relative_to(REPO_ROOT / "tests").parts
    except ValueError:
        return None
    return parts[0] if len(parts) > 1 and parts[0] in TIERS else None


def pytest_collection_modifyitems(config: pytest.Config, items: list[pytest.Item]) -> None:
    """Mark every test with its tier; a test file under tests/ but outside the tier folders is a layout error."""
    for item in items:
        tier = tier_of(item.path)
        if tier is not None:
            item.add_marker(getattr(pytest.mark, tier))
        elif item.path.resolve().is_relative_to(REPO_ROOT / "tests"):
            raise pytest.UsageError(f"{item.path}: a test file belongs in one of tests/{{{','.join(TIERS)}}}/")


@pytest.fixture(autouse=True)
def _fast_tier_starts_no_tool(request: pytest.FixtureRequest, monkeypatch: pytest.MonkeyPatch) -> None:
    """A fast-tier test that starts promtool, a server or any program but Python fails, naming the program:
    it belongs in tests/engines/ (or cli/, world/, live/). The spec loader's jsonnet child is Python."""
    if tier_of(request.path) not in FAST_TIERS:
        return
    real = subprocess.Popen.__init__
    test_thread = threading.current_thread()  # a clock-bound scenario's thread (tests/clockwork.py) may start tools

    def guarded(self: subprocess.Popen[Any], args: Any, *rest: Any, **options: Any) -> None:
        program = str(args[0] if isinstance(args, list | tuple) else args).split()[0]
        mine = threading.current_thread() is test_thread
        if mine and Path(program).name != Path(sys.executable).name and program != sys.executable:
            raise AssertionError(f"a fast-tier test ran {program}: move it to tests/engines/ (see tests/conftest.py)")
        real(self, args, *rest, **options)

    monkeypatch.setattr(subprocess.Popen, "__init__", guarded)


_VERDICTS = pytest.StashKey[Verdicts | None]()


def _signals_as_a_terminal_delivers_them() -> None:
    """Undo the signal dispositions a suite started in the background inherits.

    A non-interactive shell starts a background job (``make test &`` in a script) with SIGINT and SIGQUIT
    ignored, and ``nohup`` ignores SIGHUP. The command-line processes the signal tests start would inherit
    that and never see the signal they are sent (an ignored signal stays ignored across exec), so those
    tests failed whenever the suite ran in the background. Restore what a terminal gives: Python's
    KeyboardInterrupt for SIGINT, the default action for SIGQUIT and SIGHUP.
    """
    if signal.getsignal(signal.SIGINT) == signal.SIG_IGN:
        signal.signal(signal.SIGINT, signal.default_int_handler)
    for sig in (signal.SIGQUIT, signal.SIGHUP):
        if signal.getsignal(sig) == signal.SIG_IGN:
            signal.signal(sig, signal.SIG_DFL)


def pytest_configure(config: pytest.Config) -> None:
    """The verdict directory of the run, shared by its xdist workers: the checkout's store (tests/promtool_runs.py)."""
    from tests import promtool_runs

    _signals_as_a_terminal_delivers_them()
    config.stash[_VERDICTS] = promtool_runs.start_run()


def pytest_unconfigure(config: pytest.Config) -> None:
    from tests import promtool_runs

    promtool_runs.end_run(config.stash.get(_VERDICTS, None))


def pytest_sessionstart(session: pytest.Session) -> None:
    from tests.engines import test_e2e

    test_e2e.EVALUATION_REPORT.unlink(missing_ok=True)


def pytest_terminal_summary(terminalreporter: pytest.TerminalReporter) -> None:
    """Report the rule groups' evaluation times measured by the end-to-end tier."""
    from tests.engines import test_e2e

    if test_e2e.EVALUATION_REPORT.exists():
        terminalreporter.section("rule group evaluation time (real Prometheus 2.42)")
        for line in test_e2e.EVALUATION_REPORT.read_text(encoding="utf-8").splitlines():
            terminalreporter.write_line(line)


def pytest_collection_finish(session: pytest.Session) -> None:
    """Start the clock-bound scenarios of the collected tests now, so their waits overlap the session's work."""
    from tests import clockwork

    clockwork.start_collected(session)


def pytest_sessionfinish(session: pytest.Session) -> None:
    from tests import clockwork

    clockwork.close_all()
