"""Incidents against the world: each fault reaches the right team by its deadline, nothing else pages.

Each data set is the healthy fleet (its deployments included) of
``tests/world/test_world_day_one.py`` with one fault injected at minute 60 (see
``tests/world/incidents.py``): a hung PLEG, apiserver 5xx at 5%, 20% of a pool unreachable, a pool's
nodes deleted, one NotReady node in a 10-node pool, one bad NIC, one node out of inodes, one node's
file table at 90%, one node OOM-killing every 20 s, a Prometheus refusing its configuration reload,
a degrading InfiniBand cable, an image registry down, an apiserver OOM loop, a slow and an RBAC-broken
kube-state-metrics, a Prometheus replica OOM-looping, a cluster-autoscaler left scaled to zero.
On each stack (kube-prometheus-stack, the one the library ships for, and kube-prometheus, with the
series as that stack delivers them and the library compiled for it), promtool runs the library's
rule files that can change the verdict over the raw series they read (``judged_rules``: every file
with a live page, and the expected alerts' files; less the files that read only series the fault
leaves as they are on day one, which day one judges: ``cannot_change``,
``tests/world/untouched.py``; an incident is day one's fleet, its rebooting node included, plus one
fault) and asserts, through ``ALERTS``, the alert, its ``team`` label, its slice and the minute it
fires by, and that no other alert of severity page (and not in shadow) is pending or firing at any
minute.

Every incident also checks its data (``premises``: raw-series queries, e.g. 1% of the bad
node's packets errored). The incidents whose feature is still being built (``Incident.missing``)
are skipped with the feature they wait for, and their premises run on their own, without rules.
"""

from __future__ import annotations

from dataclasses import replace
from pathlib import Path

import pytest

from tests.world import promtool, untouched
from tests.world.dataset import Expectations, Fires, every_series
from tests.world.incidents import INCIDENTS, Incident
from tests.world.stack import STACKS as STACK_VIEWS
from tests.world.test_world_day_one import (
    DAY_ONE_FAILURES,
    MINUTES,
    NOT_MODELLED,
    STACKS,
    day_one_world,
    known_pages,
)
from tests.world.timeline import Series

# Specs whose series the data set does not write yet raise their no-data alerts (pages, for the
# availability specs) in every incident; their rules are left out, as day one lists them per stack.
UNMODELLED = {
    stack: frozenset(name for name, why in DAY_ONE_FAILURES[stack].items() if why == NOT_MODELLED) for stack in STACKS
}


@pytest.fixture(scope="module", params=STACKS)
def stack(request: pytest.FixtureRequest) -> str:
    name: str = request.param
    return name


@pytest.fixture(scope="module")
def rules(stack: str, tmp_path_factory: pytest.TempPathFactory) -> list[Path]:
    """The library as compiled for ``stack`` (specs it leaves out have no rules), once per stack."""
    compiled = promtool.compile_library(tmp_path_factory.mktemp(f"library-{stack}"), stack)
    return [path for path in compiled if path.name.removesuffix(".rules.yaml") not in UNMODELLED[stack]]


def _alert_rules(path: Path) -> list[dict[str, object]]:
    groups = untouched.rule_groups(path.read_text(encoding="utf-8"))
    return [rule for group in groups for rule in group["rules"] if "alert" in rule]


def _labels(rule: dict[str, object]) -> dict[str, str]:
    labels = rule.get("labels") or {}
    assert isinstance(labels, dict)
    return {str(key): str(value) for key, value in labels.items()}


def _raises(rule: dict[str, object], fires: Fires) -> bool:
    if fires.alertname is not None:
        return rule["alert"] == fires.alertname
    return _labels(rule).get("team") == fires.team


def judged_rules(rules: list[Path], expect: Expectations) -> list[Path]:
    """The rule files that can change the verdict: every file with a live page, and the expected alerts' files.

    Each spec's rule file reads only raw series and its own recorded series (no rule reads
    another spec's), so a file with no live page alert and none of the expected alerts can
    neither page nor make an expected alert fire: leaving it out changes no assertion and
    halves promtool's work (38 of the 88 files have live pages). Day one runs every file.
    """
    kept = []
    for path in rules:
        alerts = _alert_rules(path)
        pages = any(
            _labels(rule).get("severity") == "page" and _labels(rule).get("shadow") != "true" for rule in alerts
        )
        if pages or any(_raises(rule, fires) for rule in alerts for fires in expect.fires):
            kept.append(path)
    return kept


@pytest.fixture(scope="module")
def day_one_data(stack: str) -> list[Series]:
    """Day one's series on ``stack``, once per stack: what an untouched rule file reads in an incident too."""
    return every_series(day_one_world(), STACK_VIEWS[stack])


def cannot_change(
    rules: list[Path], stack: str, expect: Expectations, data: list[Series], day_one: list[Series]
) -> list[Path]:
    """The files that raise no expected alert and read only series the fault leaves as on day one.

    Day one judges them over its whole span with every file (nothing pending or firing after the
    first rate window, no page from minute 0), so in the incident they raise exactly that: nothing.
    A spec day one still lists as failing is never left to it.
    """
    samples = max(len(item.samples) for item in data)
    changed = untouched.changed_metrics(data, day_one, samples)
    kept = [
        path
        for path in rules
        if path.name.removesuffix(".rules.yaml") in DAY_ONE_FAILURES[stack]
        or any(_raises(rule, fires) for rule in _alert_rules(path) for fires in expect.fires)
    ]
    return [path for path in untouched.untouched(rules, changed) if path not in kept]


WAITING = [incident for incident in INCIDENTS if incident.missing]


def test_every_incident_names_the_alert_it_expects() -> None:
    """A named alert is the stricter check, and the cheaper: only the files that page or raise it are judged.

    With any name, every rule file with an alert for the team could raise the expected one, so each was
    judged and none left to day one (pool-deleted 40 files, bad-nic 13; named, 22 and 1).
    """
    unnamed = [
        f"{incident.name} ({stack or 'every stack'})"
        for incident in INCIDENTS
        for stack, expect in ((None, incident.expect), *incident.on)
        for fires in expect.fires
        if fires.alertname is None
    ]
    assert not unnamed, f"these incidents expect an alert of any name: {unnamed}"


@pytest.mark.parametrize("incident", WAITING, ids=[incident.name for incident in WAITING])
def test_the_data_of_a_waiting_incident_is_what_it_claims(incident: Incident, stack: str, tmp_path: Path) -> None:
    """The main test checks the premises with the rules; a skipped incident gets them checked here."""
    premises_only = Expectations(quiet_from=0, pages_only=(), premises=incident.expect.premises)
    # No rule files, so no alert can exist and the page check passes trivially: only the premises judge.
    last = max(minute for _, minute, _ in incident.expect.premises)
    world = replace(incident.world, minutes=last + 5)  # no rules to evaluate past the last premise
    result = promtool.run(tmp_path, [], world, stack, premises_only)
    assert incident.expect.premises, f"{incident.name} states no premise about its data"
    assert result.ok, f"{incident.name} on {stack}: the data set is not what it claims:\n{result.output}"


@pytest.mark.parametrize("incident", INCIDENTS, ids=[incident.name for incident in INCIDENTS])
def test_the_right_team_hears_by_the_deadline_and_nobody_else_is_paged(
    incident: Incident, stack: str, rules: list[Path], day_one_data: list[Series], tmp_path: Path
) -> None:
    if incident.missing:
        pytest.skip(f"waits for {incident.missing}")
    workdir = tmp_path / "run"
    workdir.mkdir()
    expect = incident.for_stack(stack)
    # Day one's known false pages (its Expected pages) are in every incident's fleet too.
    expect = replace(expect, pages_only=(*(expect.pages_only or ()), *known_pages(stack)))
    assert incident.world.minutes <= MINUTES, "day one must cover every minute an incident leaves to it"
    data = every_series(incident.world, STACK_VIEWS[stack])
    judged = judged_rules(rules, expect)
    assert len(judged) < len(rules), "every rule file pages: nothing to leave out"
    unchanged = cannot_change(judged, stack, expect, data, day_one_data)
    judged = [path for path in judged if path not in unchanged]
    result = promtool.run(workdir, judged, incident.world, stack, expect, data)
    print(
        f"{incident.name} on {stack}: {result.seconds:.0f} s of promtool ({result.cpu:.0f} s CPU), "
        f"{result.series} series, "
        f"{len(judged)} rule files judged, {len(unchanged)} left to day one"
    )
    assert result.ok, (
        f"{incident.name} on {stack} ({result.series} series, {result.seconds:.0f} s): {incident.description}\n"
        "the expected alert did not fire for its team by its deadline, something else paged, or the data is "
        f"not what it claims:\n{result.output}"
    )
