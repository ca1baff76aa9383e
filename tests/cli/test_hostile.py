"""Hostile input: malicious YAML fails fast and clearly; hostile text is escaped in every output."""

from __future__ import annotations

import json
import os
import resource
import shutil
import subprocess
import sys
from pathlib import Path

import pytest
import yaml

from tests.promtool_runs import promtool_test

REPO_ROOT = Path(__file__).resolve().parents[2]
FIXTURES = REPO_ROOT / "tests" / "fixtures" / "specs"
MEMORY_LIMIT = 1536 * 1024 * 1024


def _limited() -> None:
    resource.setrlimit(resource.RLIMIT_AS, (MEMORY_LIMIT, MEMORY_LIMIT))


def run(args: list[str], cwd: Path, timeout: float = 60) -> tuple[int, str, str]:
    """The CLI in a subprocess with its address space capped; it is killed past ``timeout``."""
    env = {**os.environ, "PYTHONPATH": str(REPO_ROOT)}
    result = subprocess.run(
        [sys.executable, "-m", "compiler", *args],
        cwd=cwd,
        env=env,
        capture_output=True,
        text=True,
        timeout=timeout,
        preexec_fn=_limited,
        check=False,
    )
    return result.returncode, result.stdout, result.stderr


def spec_tree(tmp_path: Path) -> Path:
    specs = tmp_path / "specs"
    specs.mkdir()
    for name in ("owners.yaml", "project.yaml"):
        shutil.copy(FIXTURES / name, specs / name)
    return specs


def alias_bomb() -> str:
    lines = ['a: &a ["lol", "lol", "lol", "lol", "lol", "lol", "lol", "lol", "lol"]']
    for index in range(1, 10):
        previous, current = chr(ord("a") + index - 1), chr(ord("a") + index)
        lines.append(f"{current}: &{current} [" + ", ".join([f"*{previous}"] * 9) + "]")
    return "\n".join(lines) + "\n"


MALICIOUS = {
    "alias-bomb": (alias_bomb(), "alias bomb"),
    "deep-flow": ("a: " + "[" * 50_000 + "]" * 50_000 + "\n", "nesting depth"),
    "deep-block": ("".join("  " * i + "k:\n" for i in range(1_200)), "nesting depth"),
    "huge": (("# " + "x" * 80 + "\n") * 130_000, "spec files are limited to"),
    "binary": ("\x00\x01\x02\xff garbage", "binary"),
}


@pytest.mark.parametrize("case", sorted(MALICIOUS))
def test_malicious_yaml_fails_fast_with_a_positioned_error(tmp_path: Path, case: str) -> None:
    text, needle = MALICIOUS[case]
    specs = spec_tree(tmp_path)
    (specs / "evil.yaml").write_bytes(text.encode("utf-8", "surrogateescape"))
    # Bounded, not timed: the run is killed past its timeout and its address space is capped.
    code, _, stderr = run(["validate", "--specs", "specs"], tmp_path, timeout=60)
    assert code == 1, stderr
    assert "Traceback" not in stderr
    line = next(line for line in stderr.splitlines() if line.startswith("specs/evil.yaml:"))
    _, row, col, message = line.split(":", 3)
    assert row.isdigit() and col.isdigit()
    assert needle in message


@pytest.mark.parametrize(
    ("field", "value"),
    [("name", "../../etc/passwd"), ("name", "a/b"), ("owner", "../team-a"), ("name", "Team-A")],
)
def test_names_cannot_escape_the_output_directory(tmp_path: Path, field: str, value: str) -> None:
    specs = spec_tree(tmp_path)
    text = (FIXTURES / "state.yaml").read_text(encoding="utf-8")
    original = {"name": "fixture-state", "owner": "team-b"}[field]
    (specs / "evil.yaml").write_text(text.replace(f"{field}: {original}", f"{field}: '{value}'", 1), "utf-8")
    code, _, stderr = run(["generate", "--specs", "specs", "--out", "out"], tmp_path)
    assert code == 1
    assert "specs/evil.yaml:" in stderr
    assert not (tmp_path / "out").exists()
    assert not list(tmp_path.parent.glob("etc*"))


HOSTILE_TEXT = 'Run `kubectl` <script>alert(1)</script> {{ .Labels.x }} **bold** | pipe & "quotes" \\back Größe 🚀'

HOSTILE_SPEC = f"""\
apiVersion: slo-compiler/v1
kind: SLO
name: hostile
family: watch-list-volume
owner: team-a
description: {json.dumps(HOSTILE_TEXT, ensure_ascii=False)}
slice:
  by: [cluster, resource]
  selector: '{{job="api\\\\server", note="say \\"hi\\"", regexy="a.b*c+(d)|[e]{{2}}", unicode="Größe 🚀"}}'
sli:
  gauge:
    expr: 'sum by (cluster, resource) (rate(apiserver_request_total{{verb="LIST", path=~"/api/.*\\\\?x=1"}}[2m]))'
unit: per_second
normal_range:
  max: 100
  reason: {json.dumps(HOSTILE_TEXT, ensure_ascii=False)}
persistence:
  for: 3m
mitigation:
  summary: {json.dumps(HOSTILE_TEXT, ensure_ascii=False)}
  steps: [{json.dumps(HOSTILE_TEXT, ensure_ascii=False)}, "second {{{{ step }}}}"]
  stop_conditions: [{json.dumps(HOSTILE_TEXT, ensure_ascii=False)}]
  escalation: {json.dumps(HOSTILE_TEXT, ensure_ascii=False)}
"""


def test_hostile_text_and_label_values_survive_every_output(tmp_path: Path) -> None:
    specs = spec_tree(tmp_path)
    (specs / "hostile.yaml").write_text(HOSTILE_SPEC, encoding="utf-8")
    code, _, stderr = run(["generate", "--specs", "specs", "--out", "out"], tmp_path)
    assert code == 0, stderr
    out = tmp_path / "out"
    rules = out / "prometheus" / "rules" / "hostile.rules.yaml"
    rule_data = yaml.safe_load(rules.read_text(encoding="utf-8"))
    record = next(r for r in rule_data["groups"][0]["rules"] if r["record"] == "slo:sli_value:gauge")
    for value in ("api\\\\server", 'say \\"hi\\"', "a.b*c+(d)|[e]{2}", "Größe 🚀"):
        assert value in record["expr"]
    alert = next(r for r in rule_data["groups"][0]["rules"] if r.get("alert", "").endswith("AboveNormalRange"))
    assert '{{ "{{" }} .Labels.x }}' in alert["annotations"]["mitigation"]
    check = subprocess.run(
        ["promtool", "check", "rules", "--lint=all", "--lint-fatal", str(rules)], capture_output=True, text=True
    )
    assert check.returncode == 0, check.stderr
    test = promtool_test(out / "prometheus" / "tests" / "hostile.test.yaml")
    assert test.returncode == 0, test.stderr[-3000:]
    for path in out.rglob("*"):
        if path.suffix == ".json":
            json.loads(path.read_text(encoding="utf-8"))
        elif path.suffix in (".yaml", ".yml"):
            list(yaml.safe_load_all(path.read_text(encoding="utf-8")))
    config = out / "alertmanager" / "alertmanager.yaml"
    if config.exists():
        result = subprocess.run(["amtool", "check-config", str(config)], capture_output=True, text=True)
        assert result.returncode == 0, result.stdout + result.stderr
