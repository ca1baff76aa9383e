"""`slo-compiler import` over the third-party corpus in ../shared/corpus (read in place, never copied).

Every corpus file imports or is refused with its reason; for each Sloth example with
Sloth's own generated rules in ``_gen/``, the imported spec (placeholders filled by the
fixture below) compiles, its rules pass ``promtool check rules`` and its generated tests,
and on the same input series its page and ticket first fire within one evaluation interval
of Sloth's rules (both measured with promtool).
"""

from __future__ import annotations

import re
import shutil
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest
import yaml

from compiler import cli
from compiler.importers import import_files
from compiler.importers.draft import Draft
from tests.promtool_runs import promtool_test

REPO = Path(__file__).resolve().parents[2]
CORPUS = (
    REPO.parent.parent / "shared" / "corpus"
    if not (REPO.parent / "shared").is_dir()
    else REPO.parent / "shared" / "corpus"
)
SLOTH = CORPUS / "sloth"
OPENSLO = CORPUS / "openslo"
pytestmark = pytest.mark.skipif(not CORPUS.is_dir(), reason="../shared/corpus is not present")
EVAL_INTERVAL_MIN = 1


def _inputs(root: Path, pattern: str) -> list[Path]:
    return sorted(p for p in root.rglob(pattern) if "_gen" not in p.parts) if root.is_dir() else []


SLOTH_FILES = _inputs(SLOTH, "*.y*ml")
OPENSLO_FILES = _inputs(OPENSLO, "*.yaml")


def _slo_count(path: Path, fmt: str) -> int:
    """How many SLOs a corpus file declares (what import must account for, one way or another)."""
    count = 0
    for doc in yaml.safe_load_all(path.read_text()):
        for item in doc if isinstance(doc, list) else [doc]:
            if not isinstance(item, dict):
                continue
            slos = (
                (item.get("spec") or {}).get("slos")
                if item.get("kind") == "PrometheusServiceLevel"
                else item.get("slos")
            )
            if fmt == "sloth" and isinstance(slos, list):
                count += len(slos)
            elif item.get("kind") == "SLO":
                count += 1
    return count


@pytest.mark.parametrize("path", SLOTH_FILES + OPENSLO_FILES, ids=lambda p: str(p.relative_to(CORPUS)))
def test_every_corpus_file_imports_or_is_refused_with_a_reason(path: Path, tmp_path: Path) -> None:
    fmt = "sloth" if SLOTH in path.parents else "openslo"
    outcome, code = import_files(fmt, [str(path)], tmp_path, force=False)
    answered = len(outcome.written) + len(outcome.refused)
    assert outcome.diagnostics or answered >= _slo_count(path, fmt)  # a bad file is one error, at its version
    assert answered or outcome.diagnostics or outcome.skipped
    for item in outcome.refused + outcome.skipped:
        assert item.reason and item.where.line >= 1
    for diagnostic in outcome.diagnostics.sorted():
        assert re.match(r".+:\d+:\d+: \S", str(diagnostic)), diagnostic
    assert code == (1 if outcome.refused or outcome.diagnostics else 0)
    for written, _ in outcome.written:
        assert "PLACEHOLDER:" in written.read_text()


def _fill(text: str) -> str:
    """The fixture's answers to the placeholders: an existing team and family, one global slice."""
    text = re.sub(r'^family: ".*"$', "family: node-network-errors", text, flags=re.M)
    text = re.sub(r'^owner: ".*"$', "owner: platform-network", text, flags=re.M)
    text = re.sub(r'^  by: \["PLACEHOLDER:.*\]$', "  by: []", text, flags=re.M)
    return text.replace('"PLACEHOLDER: ', '"Filled in by the conformance fixture: ')


def _sloth_rules(gen: Path, out: Path) -> Path:
    groups: list[Any] = []
    for doc in yaml.safe_load_all(gen.read_text()):
        if isinstance(doc, dict):
            groups += doc.get("groups") or (doc.get("spec") or {}).get("groups") or []
    out.write_text(yaml.safe_dump({"groups": groups}, sort_keys=False))
    return out


def _series_labels(selector: str, value_hint: str) -> str:
    """A concrete series matching ``selector`` (regex matchers get the first fitting value)."""
    metric, _, body = selector.partition("{")
    labels = {}
    for name, op, value in re.findall(r'(\w+)\s*(=~|!~|!=|=)\s*"((?:[^"\\]|\\.)*)"', body):
        if op == "=":
            labels[name] = value
        elif op == "=~":
            labels[name] = next(c for c in ("500", "429", "503", "200") if re.fullmatch(value, c))
    labels.setdefault("code", value_hint)
    return metric.strip() + "{" + ",".join(f'{k}="{v}"' for k, v in sorted(labels.items())) + "}"


def _series(draft: Draft, healthy_min: int, bad_ratio: float, bad_min: int) -> list[dict[str, str]]:
    """Counters at 100 events/s: healthy_min minutes of no errors, then bad_ratio for bad_min minutes."""
    per_min = 6000
    errors = round(per_min * bad_ratio)
    bad = _series_labels(draft.ratio_selector if draft.ratio_field == "bad" else draft.total_selector, "500")
    good = _series_labels(draft.total_selector, "200")
    if bad == good:
        good = good.replace('code="500"', 'code="200"')
    bad_values = f"0x{healthy_min} 0+{errors}x{bad_min}" if healthy_min else f"0+{errors}x{bad_min}"
    good_values = f"0+{per_min}x{healthy_min} {per_min * healthy_min}+{per_min - errors}x{bad_min}"
    if not healthy_min:
        good_values = f"0+{per_min - errors}x{bad_min}"
    return [{"series": bad, "values": bad_values}, {"series": good, "values": good_values}]


def _first_fire(rules: Path, series: list[dict[str, str]], end: int, severity: str) -> dict[str, int]:
    """The first minute each severity's alert fires, per rule file, measured with promtool."""
    questions = []
    for sev in ("page", "ticket"):
        firing = f'timestamp(ALERTS{{alertstate="firing",{severity}="{sev}"}}) / 60'
        questions.append(
            {
                "expr": f"min(min_over_time(({firing})[{end}m:1m])) or vector(-1)",
                "eval_time": f"{end}m",
                "exp_samples": [{"labels": "{}", "value": -99}],
            }
        )
    test = {
        "rule_files": [rules.name],
        "evaluation_interval": "1m",
        "tests": [{"interval": "1m", "input_series": series, "promql_expr_test": questions}],
    }
    path = rules.parent / f"{rules.stem}.probe.yaml"
    path.write_text(yaml.safe_dump(test, sort_keys=False))
    result = promtool_test(path)
    got = re.findall(r"got:\s*\{\} (-?[0-9.eE+-]+)", result.stdout + result.stderr)
    assert len(got) == 2, result.stdout + result.stderr
    return {sev: round(float(value)) for sev, value in zip(("page", "ticket"), got, strict=True)}


SHAPES = {  # name: (healthy minutes, error ratio, minutes at that ratio)
    "constant 2% errors from the start": (0, 0.02, 60),
    "constant 5% errors from the start": (0, 0.05, 30),
}
# A step after a healthy stretch: every burn window is a sum of recorded blocks, whole at every
# evaluation as Sloth's rate over the whole window is, so ours fires within a minute of Sloth's
# here too (before the windows were blocks it was 2-3 minutes later, and this test an xfail).
STEP_SHAPES = {
    "90m healthy, then 5% errors": (90, 0.05, 60),
    "120m healthy, then 0.5% errors (tickets, never pages)": (120, 0.005, 120),
}
# contrib-*: their SLO plugins (denominator correction, rule intervals) change Sloth's own rules; not imported.
GEN = sorted(
    p
    for p in (SLOTH / "examples").glob("*.y*ml")
    if (SLOTH / "examples" / "_gen" / p.name).is_file() and not p.name.startswith("contrib-")
)


@pytest.mark.skipif(shutil.which("promtool") is None, reason="promtool is not installed")
@pytest.mark.parametrize("example", GEN, ids=lambda p: p.name)
def test_imported_spec_fires_when_sloth_does(example: Path, tmp_path: Path) -> None:
    _conformance(example, tmp_path, SHAPES)


@pytest.mark.skipif(shutil.which("promtool") is None, reason="promtool is not installed")
def test_imported_spec_on_a_step_fires_when_sloth_does(tmp_path: Path) -> None:
    _conformance(SLOTH / "examples" / "getting-started.yml", tmp_path, STEP_SHAPES)


def _conformance(example: Path, tmp_path: Path, shapes: dict[str, tuple[int, float, int]]) -> None:
    specs = tmp_path / "specs"
    (specs / "imported").mkdir(parents=True)
    for name in ("owners.yaml", "project.yaml"):
        shutil.copy(REPO / "slo_specs" / name, specs / name)
    outcome, _ = import_files("sloth", [str(example)], specs / "imported", force=False)
    # Timed against Sloth's rules: ratio SLIs (the series below are counters of one metric) of Sloth's own
    # formats (Sloth writes no alert rules for an OpenSLO file).
    drafts = [
        (p, d)
        for p, d in outcome.written
        if set(d.severities) == {"page", "ticket"}
        and d.origin.startswith("Sloth")
        and d.ratio_selector
        and (d.shape is None or d.shape.latency is None)
        and (d.shape is None or d.shape.state is None)
    ]
    if not drafts:
        pytest.skip(f"nothing with Sloth's alerts imports from {example.name} (see the first test)")
    for path, _ in outcome.written:
        path.write_text(_fill(path.read_text()))
    out = tmp_path / "out"
    result = subprocess.run(
        [sys.executable, "-m", "compiler", "generate", "--specs", str(specs), "--out", str(out)],
        cwd=REPO,
        capture_output=True,
        text=True,
    )
    if "cannot generate the promtool tests" in result.stderr:
        pytest.xfail(f"the test generator cannot prove this imported SLI: {result.stderr.strip()[:300]}")
    assert result.returncode == 0, result.stderr
    sloth_rules = _sloth_rules(SLOTH / "examples" / "_gen" / example.name, out / "prometheus" / "rules" / "sloth.yaml")
    for _path, draft in drafts[:1]:
        ours = out / "prometheus" / "rules" / f"{draft.name}.rules.yaml"
        check = subprocess.run(["promtool", "check", "rules", str(ours)], capture_output=True, text=True)
        assert check.returncode == 0, check.stdout + check.stderr
        # The same proof under this file's --prefix names is in test_sloth_examples_import_and_compile: one
        # promtool run between them (tests/promtool_runs.py).
        tests = promtool_test(out / "prometheus" / "tests" / f"{draft.name}.test.yaml", rename=True)
        assert tests.returncode == 0, tests.stdout[-2000:]
        only = tmp_path / "sloth-one.yaml"
        sloth_id = f"{draft.origin.split('service ')[1].split(',')[0]}-{draft.origin.rsplit('SLO ', 1)[1]}"
        groups = [g for g in yaml.safe_load(sloth_rules.read_text())["groups"] if g["name"].endswith(f"-{sloth_id}")]
        only.write_text(yaml.safe_dump({"groups": groups}, sort_keys=False))
        shutil.copy(only, ours.parent / only.name)
        fired: list[str] = []
        for shape, (healthy, ratio, minutes) in shapes.items():
            series = _series(draft, healthy, ratio, minutes)
            end = healthy + minutes
            theirs = _first_fire(ours.parent / only.name, series, end, "sloth_severity")
            mine = _first_fire(ours, series, end, "severity")
            assert theirs["ticket"] >= 0, f"{shape}: Sloth's ticket never fires: the shape proves nothing"
            for sev in ("page", "ticket"):
                if theirs[sev] < 0:  # never (-1): ours must not fire either
                    assert mine[sev] < 0, f"{shape}: our {sev} fires at {mine[sev]}m, Sloth's never"
                else:
                    assert abs(mine[sev] - theirs[sev]) <= EVAL_INTERVAL_MIN, f"{shape}: {sev} {mine} vs Sloth {theirs}"
            fired.append(f"{shape}: page {theirs['page']}/{mine['page']}, ticket {theirs['ticket']}/{mine['ticket']}")
    assert any("page -1" not in line for line in fired) or shapes is STEP_SHAPES, fired  # some shape pages


# The Sloth example files (examples/*.yml|yaml, 18 at v0.16.0) that cannot be imported, and why.
NOT_IMPORTED = {
    "plugin-getting-started.yml": "SLI plugin getting_started_availability is Go code",
    "plugin-k8s-getting-started.yml": "SLI plugin getting_started_availability is Go code",
}


def _examples() -> list[Path]:
    return sorted(p for p in (SLOTH / "examples").glob("*.y*ml"))


@pytest.mark.skipif(not (SLOTH / "examples").is_dir(), reason="the Sloth examples are not present")
def test_sloth_examples_import_and_compile(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    """Every Sloth example whose SLI a spec kind expresses imports and compiles, placeholders filled only:
    16 of the 18 files. All files go into one tree, each with --prefix <file>- (their names collide).
    ``generate`` runs in-process (what it writes and reports is what the CLI does; a new interpreter
    that imports the compiler again proves nothing more here)."""
    specs = tmp_path / "specs"
    (specs / "imported").mkdir(parents=True)
    for name in ("owners.yaml", "project.yaml"):
        shutil.copy(REPO / "slo_specs" / name, specs / name)
    refused: dict[str, str] = {}
    prefixes: dict[str, str] = {}
    for example in _examples():
        prefix = re.sub(r"[^a-z0-9]+", "-", example.stem.lower()) + "-"
        prefixes[prefix] = example.name
        outcome, code = import_files("sloth", [str(example)], specs / "imported", force=False, prefix=prefix)
        if code:
            refused[example.name] = "; ".join(r.reason for r in outcome.refused) + str(outcome.diagnostics.render())
    for path in (specs / "imported").glob("*.yaml"):
        path.write_text(_fill(path.read_text()))
    out = tmp_path / "out"
    capsys.readouterr()  # what the imports printed
    code = cli.main(["generate", "--specs", str(specs), "--out", str(out)])
    stderr = capsys.readouterr().err
    failed = {
        prefixes[prefix]: line
        for line in stderr.splitlines()
        if ": note: " not in line
        for prefix in prefixes
        if f"/imported/{prefix}" in line
    }
    assert code == cli.EXIT_OK, stderr
    assert not failed, failed
    assert set(refused) == set(NOT_IMPORTED), refused
    for name, reason in NOT_IMPORTED.items():
        assert reason in refused[name]
    compiled = len(_examples()) - len(refused)
    assert len(_examples()) == 18 and compiled == 16
    # Their generated tests pass promtool: the state SLIs (home-wifi) under burn_policy sloth too, whose
    # recovery the test generator once placed by the minutes' average instead of the rules' 5-minute blocks.
    # Eleven of the 25 are one Sloth SLO under other file names: promtool proves each distinct proof once.
    tests = out / "prometheus" / "tests"
    failing = [test.name for test in sorted(tests.glob("*.test.yaml")) if promtool_test(test, rename=True).returncode]
    assert not failing, failing
