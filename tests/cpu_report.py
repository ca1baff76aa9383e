"""``--cpu-durations=N``: the N tests that took the most CPU, beside pytest's ``--durations`` (wall time).

On two cores with both workers busy, the suite's wall time is its CPU, and a test's wall time says little
about its CPU: one waits on a clock, another runs promtool for a minute. Each phase of a test (setup, call,
teardown) is charged the CPU of its worker process and of the children it waited for meanwhile (promtool,
a ``slo-compiler`` run, a server it stopped), read with ``getrusage``; a scenario thread's work
(tests/clockwork.py) lands on whichever test runs meanwhile. The figures travel to the controller in each
report's ``user_properties``, so the table covers every worker. ``make test`` prints the 25 largest, and
the 25 test modules that took the most (a module's tests summed: where a tier's CPU goes).
"""

from __future__ import annotations

import resource
from collections.abc import Iterator

import pytest

_KEY = "cpu_seconds"
_TOTALS: dict[str, float] = {}  # test id: CPU seconds, in the process that reports (xdist's controller)


def pytest_addoption(parser: pytest.Parser) -> None:
    parser.addoption(
        "--cpu-durations",
        type=int,
        default=0,
        metavar="N",
        help="show the N tests that took the most CPU (their process and the children they waited for)",
    )


def _cpu() -> float:
    mine, children = resource.getrusage(resource.RUSAGE_SELF), resource.getrusage(resource.RUSAGE_CHILDREN)
    return mine.ru_utime + mine.ru_stime + children.ru_utime + children.ru_stime


@pytest.hookimpl(hookwrapper=True)
def pytest_runtest_setup(item: pytest.Item) -> Iterator[None]:
    yield from _charged(item)


@pytest.hookimpl(hookwrapper=True)
def pytest_runtest_call(item: pytest.Item) -> Iterator[None]:
    yield from _charged(item)


@pytest.hookimpl(hookwrapper=True)
def pytest_runtest_teardown(item: pytest.Item) -> Iterator[None]:
    yield from _charged(item)


def _charged(item: pytest.Item) -> Iterator[None]:
    """Record the phase's CPU in the item's properties, which the phase's report carries (replacing the last
    phase's figure: each report holds its own phase)."""
    if not item.config.getoption("cpu_durations"):
        yield
        return
    start = _cpu()
    yield
    properties = [(name, value) for name, value in item.user_properties if name != _KEY]
    item.user_properties[:] = [*properties, (_KEY, _cpu() - start)]


def pytest_runtest_logreport(report: pytest.TestReport) -> None:
    """Sum each test's phases (in the controller under xdist, where every worker's reports arrive)."""
    for name, value in report.user_properties:
        if name == _KEY and isinstance(value, int | float):
            _TOTALS[report.nodeid] = _TOTALS.get(report.nodeid, 0.0) + float(value)


def pytest_terminal_summary(terminalreporter: pytest.TerminalReporter) -> None:
    count = terminalreporter.config.getoption("cpu_durations")
    if not count or not _TOTALS:
        return
    terminalreporter.section(f"{count} tests that took the most CPU (theirs and their children's)")
    for nodeid, seconds in sorted(_TOTALS.items(), key=lambda item: (-item[1], item[0]))[:count]:
        terminalreporter.write_line(f"{seconds:8.2f}s cpu  {nodeid}")
    terminalreporter.write_line(f"{sum(_TOTALS.values()):8.2f}s cpu  in all, over {len(_TOTALS)} tests")
    modules: dict[str, list[float]] = {}
    for nodeid, seconds in _TOTALS.items():
        modules.setdefault(nodeid.split("::", 1)[0], []).append(seconds)
    terminalreporter.section(f"{count} modules that took the most CPU")
    for module, each in sorted(modules.items(), key=lambda item: (-sum(item[1]), item[0]))[:count]:
        terminalreporter.write_line(f"{sum(each):8.2f}s cpu  {module} ({len(each)} tests)")
