"""The mixins' own test cases, run on the library's equivalent specs (issue 25, item 4).

For every alert the coverage table (docs/library.md) marks covered or improved and its mixin has a promtool
test for, each ``alert_rule_test`` entry is a case (``mixins.cases``): the library's rule files for
the row's specs (``generated/``, compiled for ``slo_specs/project.yaml``'s stack) run on the mixin's
``input_series`` with the job labels of that stack and the additions listed in ``verdicts.ADDITIONS``;
the mixin's own rendered rules run on the untranslated input in the same promtool (2.42). Each case's
verdict is computed from both answers and must be the one ``verdicts.VERDICTS`` writes down:

- ``agree``: where the mixin's test expects its alert, one of ours has fired by ``eval_time`` plus the
  lag ``verdicts.LAG`` documents (0 unless stated); where it expects silence, none of ours fires.
- ``earlier``: the mixin's test expects silence at ``eval_time`` and its rule is silent there, ours
  fires, and a later case of the same test expects the mixin's alert: ours fires sooner on the same input.
- ``prometheus-3``: ours does not do what the mixin's test expects, and neither does the mixin's own rule
  in promtool 2.42, which first fires at the same minute as ours: the test was written for Prometheus 3.
- ``differs``: a real difference, the mixin's own rule doing what its test expects and ours not; the
  reason says what, for a spec fix to remove.
"""

from __future__ import annotations

import tempfile
from collections import defaultdict
from pathlib import Path

import pytest

from tests.conformance.mixins import FIXTURES, RULES, Answer, Case, cases, probe
from tests.conformance.verdicts import ADDITIONS, LAG, VERDICTS

CASES = cases(ADDITIONS)
BY_ID = {case.id: case for case in CASES}
SLACK = 5  # minutes past a group's last eval_time (plus lag) over which first firings are looked for


def _groups(chosen: list[Case], key: str) -> dict[object, dict[tuple[str, int], list[Case]]]:
    out: dict[object, dict[tuple[str, int], list[Case]]] = defaultdict(dict)
    for case in chosen:
        by = case.spec_files if key == "specs" else case.mixin.folder
        out[by].setdefault((case.file, case.group), []).append(case)
    return out


def _horizon(group: list[Case]) -> int:
    return max(case.minute + LAG.get(case.alert, (0, ""))[0] for case in group) + SLACK


def _run(workdir: Path) -> dict[str, tuple[Answer, Answer]]:
    """Case id -> (our answer, the mixin's own rule's answer)."""
    ours: dict[str, Answer] = {}
    for specs, groups in _groups(CASES, "specs").items():
        assert isinstance(specs, tuple)
        listed = list(groups.values())
        questions = [(g[0].translated, [(c.ours, c.minute, _horizon(g)) for c in g]) for g in listed]
        for group, answers in zip(listed, probe(workdir, [RULES / name for name in specs], questions), strict=True):
            ours.update({case.id: answer for case, answer in zip(group, answers, strict=True)})
    theirs: dict[str, Answer] = {}
    for groups in _groups(CASES, "mixin").values():
        listed = list(groups.values())
        mixin = listed[0][0].mixin
        questions = [(g[0].input_series, [((c.alert,), c.minute, _horizon(g)) for c in g]) for g in listed]
        rules = [FIXTURES / mixin.folder / mixin.rules]
        for group, answers in zip(listed, probe(workdir, rules, questions), strict=True):
            theirs.update({case.id: answer for case, answer in zip(group, answers, strict=True)})
    return {case_id: (ours[case_id], theirs[case_id]) for case_id in BY_ID}


@pytest.fixture(scope="module")
def answers() -> dict[str, tuple[Answer, Answer]]:
    with tempfile.TemporaryDirectory(prefix="conformance-") as workdir:
        return _run(Path(workdir))


def _first(answer: Answer) -> int | None:
    return min(answer.first.values(), default=None)


def judge(case: Case, ours: Answer, mixin: Answer) -> str:
    deadline = case.minute + LAG.get(case.alert, (0, ""))[0]
    first = _first(ours)
    agrees = (first is not None and first <= deadline) if case.fires else not ours.at
    if agrees:
        return "agree"
    if bool(mixin.at) != case.fires and first == _first(mixin):
        return "prometheus-3"
    later = any(
        other.fires and other.minute > case.minute and (other.file, other.group) == (case.file, case.group)
        for other in CASES
    )
    if not case.fires and ours.at and not mixin.at and later:
        return "earlier"
    return "differs"


def test_every_case_has_a_verdict_and_every_verdict_a_case() -> None:
    assert sorted(VERDICTS) == sorted(BY_ID), set(BY_ID) ^ set(VERDICTS)
    assert all(kind in ("agree", "earlier", "prometheus-3", "differs") for kind, _ in VERDICTS.values())
    assert all(reason for kind, reason in VERDICTS.values() if kind != "agree")


def test_every_addition_is_used() -> None:
    for prefix in ADDITIONS:
        assert any(case_id.startswith(prefix) for case_id in BY_ID), prefix


@pytest.mark.parametrize("case_id", sorted(BY_ID))
def test_mixin_case_verdict(case_id: str, answers: dict[str, tuple[Answer, Answer]]) -> None:
    case = BY_ID[case_id]
    ours, mixin = answers[case_id]
    expected, reason = VERDICTS[case_id]
    got = judge(case, ours, mixin)
    assert got == expected, (
        f"{case_id}: {got}, not {expected} ({reason or 'no reason'}); the mixin's test expects "
        f"{'its alert' if case.fires else 'silence'}; ours fire at eval_time: {sorted(ours.at)}, first: {ours.first}; "
        f"the mixin's rule in promtool 2.42 fires: {sorted(mixin.at)}, first: {mixin.first}"
    )
