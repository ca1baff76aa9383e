"""Property: any spec, however mangled, gives clean path:line:col errors or output the engines accept."""

from __future__ import annotations

import json
import os
import re
import shutil
import subprocess
import tempfile
from pathlib import Path

from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from compiler.pipeline import compile_specs
from compiler.targets import TargetError, render_all
from compiler.write import write_tree

REPO_ROOT = Path(__file__).resolve().parent.parent
FIXTURES = REPO_ROOT / "tests" / "fixtures" / "specs"
DIAGNOSTIC = re.compile(r"^specs(/[^:]+)?:\d+:\d+: \S.*$")

VALID_NAMES = st.from_regex(r"[a-z][a-z0-9-]{0,20}[a-z0-9]", fullmatch=True)
VALID_LABELS = st.sampled_from(["cluster", "resource", "node", "zone"])
VALID_DURATIONS = st.sampled_from(["1m", "5m", "10m", "1h"])
VALID_PERIODS = st.sampled_from(["30d", "7d", "28d"])
metric = st.sampled_from(["apiserver_request_total", "coredns_dns_responses_total", "x_total"])
matcher_values = st.text(alphabet=st.characters(blacklist_categories=["Cs"]), max_size=10)
texts = st.text(alphabet=st.characters(blacklist_categories=["Cs", "Cc"]), min_size=1, max_size=40)


def q(value: object) -> str:
    """YAML double-quoted scalar (JSON strings are valid YAML)."""
    return json.dumps(value, ensure_ascii=False)


@st.composite
def specs(draw: st.DrawFn) -> str:
    """A spec that is valid about half the time, with random hostile text and label values throughout."""
    clean = draw(st.booleans())

    def pick(valid: st.SearchStrategy[object], invalid: st.SearchStrategy[object]) -> object:
        return draw(valid if clean or draw(st.booleans()) else invalid)

    kind = draw(st.sampled_from(["ratio", "gauge", "latency", "state"] + ([] if clean else ["junk"])))
    if kind == "junk":
        return draw(st.text(max_size=200))
    labels = VALID_LABELS if clean else st.one_of(VALID_LABELS, st.text(max_size=8))
    by = draw(st.lists(labels, max_size=3, unique=True))
    value = draw(matcher_values)
    if kind == "ratio":
        sli = f"  ratio:\n    bad: {q(draw(metric) + '{code=' + q(value) + '}')}\n    total: {q(draw(metric))}\n"
    elif kind == "gauge":
        window = pick(st.sampled_from(["1m", "2m", "5m"]), st.text(max_size=4))
        grouping = ", ".join(str(label) for label in by)
        expr = f"sum by ({grouping}) (rate({draw(metric)}[{window}]))"
        sli = f"  gauge:\n    expr: {q(expr)}\n"
    elif kind == "latency":
        edge = pick(st.sampled_from([1, 5, 0.4, 60]), st.sampled_from([5.12, 61, -1]))
        sli = f"  latency:\n    histogram: apiserver_request_sli_duration_seconds\n    threshold: {edge}\n"
    else:
        sli = f"  state:\n    expr: {q('up{job=' + q(value) + '}')}\n"
    objective = ""
    if kind != "gauge" and draw(st.booleans()):
        target = pick(st.sampled_from(["99%", "99.9%", "95%", 99.5]), st.sampled_from(["100%", "0%", 150, "x"]))
        period = pick(VALID_PERIODS, st.text(max_size=4))
        objective = f"objective:\n  target: {q(target)}\n  period: {q(period)}\n"
    bound = pick(st.floats(min_value=0, max_value=0.9), st.floats(allow_nan=False, allow_infinity=False))
    normal = f"normal_range:\n  max: {bound}\n" if draw(st.booleans()) or not objective else ""
    name = pick(VALID_NAMES, st.text(max_size=12))
    owner = pick(st.sampled_from(["team-a", "team-b"]), st.sampled_from(["nobody", ""]))
    persistence = pick(VALID_DURATIONS, st.text(max_size=6))
    return (
        "apiVersion: slo-compiler/v1\nkind: SLO\n"
        f"name: {q(name)}\nfamily: watch-list-volume\nowner: {q(owner)}\n"
        f"description: {q(draw(texts))}\n"
        f"slice:\n  by: [{', '.join(q(label) for label in by)}]\n"
        f"  selector: {q('{job=' + q(draw(matcher_values)) + '}')}\n"
        f"sli:\n{sli}{objective}{normal}persistence:\n  for: {q(persistence)}\n"
        f"mitigation:\n  summary: {q(draw(texts))}\n  steps: [{q(draw(texts))}]\n"
        f"  stop_conditions: [{q(draw(texts))}]\n  escalation: {q(draw(texts))}\n"
    )


@settings(max_examples=100, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(documents=st.lists(specs(), min_size=1, max_size=2))
def test_random_specs_give_positioned_errors_or_output_the_engines_accept(documents: list[str]) -> None:
    with tempfile.TemporaryDirectory() as directory:
        root = Path(directory)
        spec_dir = root / "specs"
        spec_dir.mkdir()
        for name in ("owners.yaml", "project.yaml"):
            shutil.copy(FIXTURES / name, spec_dir / name)
        for index, text in enumerate(documents):
            (spec_dir / f"spec-{index}.yaml").write_text(text, encoding="utf-8")
        cwd = Path.cwd()
        os.chdir(root)
        try:
            model, diagnostics = compile_specs(Path("specs"))
            files = {}
            if model is not None and not diagnostics:
                try:
                    files = render_all(model)
                except TargetError as exc:
                    diagnostics.extend(exc.diagnostics())
        finally:
            os.chdir(cwd)
        if diagnostics:
            for line in diagnostics.render().splitlines():
                assert DIAGNOSTIC.match(line), line
            return
        out = root / "out"
        write_tree(files, out)
        rules = sorted(str(p) for p in (out / "prometheus" / "rules").glob("*.yaml"))
        result = subprocess.run(["promtool", "check", "rules", *rules], capture_output=True, text=True)
        assert result.returncode == 0, result.stderr
        config = out / "alertmanager" / "alertmanager.yaml"
        if config.exists():
            result = subprocess.run(["amtool", "check-config", str(config)], capture_output=True, text=True)
            assert result.returncode == 0, result.stdout + result.stderr
