"""The manual's coverage against the mixins says what it counts, and names only what exists.

Section "Coverage against the mixins" of docs/library.md: a summary table (per mixin its alerts and how many are
covered, improved, partial and left out), then one table per mixin under "### <mixin> (<n> alerts)",
a row per mixin alert. Checked here: every status is one of the four; a left-out row names no spec,
every other row names specs of slo_specs/ and alerts those specs generate; each mixin's rows match
its heading and the summary; the storage, quota and HPA alerts the text sets aside are out-of-scope rows.
"""

from __future__ import annotations

import re
from collections import Counter
from pathlib import Path

import pytest

from tests.docs import page

REPO_ROOT = Path(__file__).resolve().parents[2]
TITLE = "## Coverage against the mixins"
STATUSES = ("covered", "improved", "partial", "left out")
NONE = "—"


def _section() -> str:
    text = page("library.md")
    start = text.index(f"\n{TITLE}\n")
    end = text.find("\n## ", start + 1)
    return text[start : end if end != -1 else len(text)]


def _rows(block: str) -> list[list[str]]:
    """The body rows of the first table in ``block``, as cells."""
    lines = [line for line in block.splitlines() if line.startswith("|")]
    assert len(lines) >= 2 and set(lines[1].replace("|", "").strip()) <= {"-"}, "no table"
    return [[cell.strip() for cell in line.strip().strip("|").split("|")] for line in lines[2:]]


def _summary(section: str) -> dict[str, list[int]]:
    """Mixin -> [alerts, covered, improved, partial, left out], from the table before the first ###."""
    head = section.split("\n### ", 1)[0]
    rows = _rows(head[head.index("| Mixin |") :])
    assert all(len(row) == 7 for row in rows), rows
    return {row[0]: [int(cell) for cell in row[2:]] for row in rows}


def _mixin_tables(section: str) -> dict[str, tuple[int, str, list[list[str]]]]:
    """Mixin -> (the count its heading states, its prose, its rows)."""
    tables = {}
    for part in section.split("\n### ")[1:]:
        heading, body = part.split("\n", 1)
        match = re.fullmatch(r"(.+) \((\d+) alerts\)", heading.strip())
        assert match, heading
        prose = body[: body.index("| Mixin alert |")]
        tables[match.group(1)] = (int(match.group(2)), prose, _rows(body[body.index("| Mixin alert |") :]))
    return tables


def _spec_names() -> set[str]:
    names = set()
    for path in (REPO_ROOT / "slo_specs").glob("*/*.yaml"):
        # every document's name: a file may hold several specs (kubelet-certificate-expiry and -last-day)
        names.update(re.findall(r"^name:\s*(\S+)\s*$", path.read_text(encoding="utf-8"), re.M))
    return names


def _alerts_of(spec: str) -> set[str]:
    path = REPO_ROOT / "generated" / "prometheus" / "rules" / f"{spec}.rules.yaml"
    if not path.is_file():
        return set()
    return set(re.findall(r"^\s*- alert: (\S+)\s*$", path.read_text(encoding="utf-8"), re.M))


SECTION = _section()
TABLES = _mixin_tables(SECTION)


def test_the_summary_lists_each_mixin_table_and_their_total() -> None:
    summary = _summary(SECTION)
    total = summary.pop("All")
    assert set(summary) == set(TABLES)
    assert total == [sum(column) for column in zip(*summary.values(), strict=True)]


@pytest.mark.parametrize("mixin", sorted(TABLES))
def test_rows_match_the_stated_counts(mixin: str) -> None:
    stated, _, rows = TABLES[mixin]
    alerts, *per_status = _summary(SECTION)[mixin]
    assert len(rows) == stated == alerts, (len(rows), stated, alerts)
    names = [row[0] for row in rows]
    assert len(set(names)) == len(names), [name for name, n in Counter(names).items() if n > 1]
    statuses = Counter(row[3] for row in rows)
    assert [statuses[status] for status in STATUSES] == per_status, statuses


@pytest.mark.parametrize("mixin", sorted(TABLES))
def test_every_row_has_a_status_a_reason_and_existing_specs_and_alerts(mixin: str) -> None:
    specs = _spec_names()
    for row in TABLES[mixin][2]:
        assert len(row) == 5, row
        alert, spec_cell, ours_cell, status, reason = row
        assert re.fullmatch(r"[A-Za-z][A-Za-z0-9]+", alert), row
        assert status in STATUSES, row
        assert reason and reason != NONE, row
        if status == "left out":
            assert spec_cell == ours_cell == NONE, row
            continue
        named = spec_cell.split(", ")
        assert set(named) <= specs, (alert, set(named) - specs)
        generated = set().union(*(_alerts_of(spec) for spec in named))
        ours = ours_cell.split(", ")
        assert ours and set(ours) <= generated, (alert, set(ours) - generated)


def test_the_kubernetes_mixin_sets_aside_as_many_out_of_scope_alerts_as_it_says() -> None:
    _, prose, rows = TABLES["kubernetes-mixin"]
    match = re.search(r"Storage, quota and HPA \((\d+) alerts\) are out of scope", prose)
    assert match, "the kubernetes-mixin's text no longer says how many alerts are out of scope"
    stated = int(match.group(1))
    out_of_scope = [row[0] for row in rows if row[3] == "left out" and row[4].startswith("out of scope")]
    assert len(out_of_scope) == stated, out_of_scope


CONFORMANCE = "### Conformance with the mixins' own tests"
KINDS = ("agree", "earlier", "prometheus-3", "differs")


def _conformance_note() -> str:
    text = page("proofs.md")
    start = text.index(f"\n{CONFORMANCE}\n")
    end = text.find("\n## ", start + 1)
    return text[start : end if end != -1 else len(text)]


def test_every_claimed_row_with_a_mixin_test_has_conformance_verdicts() -> None:
    """A covered or improved row whose mixin ships a test for its alert is judged on that test (tests/conformance/)."""
    from tests.conformance.mixins import MIXINS, claimed_rows, tested_alerts
    from tests.conformance.verdicts import VERDICTS

    assert {mixin.name for mixin in MIXINS} == set(TABLES) - {"node-mixin"}  # the node-mixin ships no tests
    for mixin in MIXINS:
        judged = {case_id.split(" ")[1] for case_id in VERDICTS if case_id.startswith(f"{mixin.folder}/")}
        assert judged == set(claimed_rows(mixin)) & tested_alerts(mixin), mixin.name


def test_the_conformance_note_states_the_suites_verdicts() -> None:
    from tests.conformance.verdicts import VERDICTS

    note = _conformance_note()
    counts = Counter(kind for kind, _ in VERDICTS.values())
    stated = re.search(r"(\d+) cases: " + ", ".join(rf"(\d+) {kind}" for kind in KINDS) + r"\.", note)
    assert stated, "the conformance note no longer states its verdict counts"
    assert [int(n) for n in stated.groups()] == [len(VERDICTS), *(counts[kind] for kind in KINDS)]
    per_alert = Counter(case_id.split(" ")[1] for case_id in VERDICTS)
    rows = _rows(note[note.index("| Mixin alert |") :])
    assert {row[0]: int(row[1]) for row in rows} == dict(per_alert)
    for alert, _, verdicts in rows:
        kinds = Counter(VERDICTS[case_id][0] for case_id in VERDICTS if case_id.split(" ")[1] == alert)
        written = {kind: int(n) for n, kind in re.findall(r"(\d+) (agree|earlier|prometheus-3|differs)\b", verdicts)}
        assert written == dict(kinds), alert
