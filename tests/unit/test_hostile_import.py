"""Hostile input to `slo-compiler import`: spec keys injected through values, symlinks in --out, size and empty files,
malformed OpenSLO (issue 26)."""

from __future__ import annotations

import os
import threading
from pathlib import Path

import yaml

from compiler.source.load import MAX_FILE_BYTES
from tests.conftest import RunCli

INJECTED = "\nexplains: [{slo: other, equal: [cluster]}]"


def _sloth(service: str = "svc", name: str = "req", labels: str = "", by: str = "") -> str:
    by_text = f" by ({by})" if by else ""
    bad = _yaml_str('sum(rate(a{code="5"}[{{.window}}]))' + by_text)
    total = _yaml_str("sum(rate(a[{{.window}}]))" + by_text)
    return (
        "version: prometheus/v1\n"
        f"service: {_yaml_str(service)}\n"
        f"{labels}"
        "slos:\n"
        f"  - name: {_yaml_str(name)}\n"
        "    objective: 99.9\n"
        "    sli:\n"
        "      events:\n"
        f"        error_query: {bad}\n"
        f"        total_query: {total}\n"
        "    alerting: {name: Foo}\n"
    )


def _yaml_str(text: str) -> str:
    return yaml.safe_dump(text, default_style='"', width=10_000).strip().removesuffix("...").strip()


def _spec_keys(out: Path) -> list[set[str]]:
    return [set(yaml.safe_load(path.read_text(encoding="utf-8"))) for path in sorted(out.glob("*.yaml"))]


def test_import_injects_spec_keys_label_value(tmp_path: Path, run_cli: RunCli) -> None:
    labels = f"labels:\n  tier: {_yaml_str('web' + INJECTED)}\n  severity: {_yaml_str('x' + INJECTED)}\n"
    (tmp_path / "s.yml").write_text(_sloth(labels=labels), encoding="utf-8")
    code, stdout, _ = run_cli(["import", "sloth", "s.yml", "--out", "out"], tmp_path)
    assert code == 0
    (spec,) = [yaml.safe_load(path.read_text(encoding="utf-8")) for path in (tmp_path / "out").glob("*.yaml")]
    assert "explains" not in spec
    assert spec["labels"]["tier"] == "web" + INJECTED  # the value itself, quoted
    assert "\nexplains" not in stdout  # the note on the severity label is one line


def test_import_injects_spec_keys_by_label(tmp_path: Path, run_cli: RunCli) -> None:
    (tmp_path / "s.yml").write_text(_sloth(by="a" + INJECTED), encoding="utf-8")
    code, _, stderr = run_cli(["import", "sloth", "s.yml", "--out", "out"], tmp_path)
    assert code == 1
    assert "s.yml:" in stderr and "not a Prometheus label name" in stderr
    assert all("explains" not in keys for keys in _spec_keys(tmp_path / "out"))


def test_import_injects_spec_keys_name(tmp_path: Path, run_cli: RunCli) -> None:
    for index, (service, name) in enumerate((("svc" + INJECTED, "req"), ("svc", "req\u0085explains: [x]"))):
        (tmp_path / f"s{index}.yml").write_text(_sloth(service=service, name=name), encoding="utf-8")
        code, stdout, stderr = run_cli(["import", "sloth", f"s{index}.yml", "--out", "out"], tmp_path)
        assert code == 1, stdout
        assert f"s{index}.yml:" in stderr and "line break or control character" in stderr
        assert "\nexplains" not in stderr
    assert _spec_keys(tmp_path / "out") == []


def test_import_writes_through_symlinks_dangling(tmp_path: Path, run_cli: RunCli) -> None:
    (tmp_path / "s.yml").write_text(_sloth(), encoding="utf-8")
    out = tmp_path / "out"
    out.mkdir()
    outside = tmp_path / "elsewhere" / "planted.yaml"
    outside.parent.mkdir()
    (out / "svc-req.yaml").symlink_to(outside)
    for force in ([], ["--force"]):
        code, _, stderr = run_cli(["import", "sloth", "s.yml", "--out", "out", *force], tmp_path)
        assert code == 1
        assert "symbolic link" in stderr
        assert not outside.exists()


def test_import_writes_through_symlinks_force(tmp_path: Path, run_cli: RunCli) -> None:
    (tmp_path / "s.yml").write_text(_sloth(), encoding="utf-8")
    out = tmp_path / "out"
    out.mkdir()
    outside = tmp_path / "precious.txt"
    outside.write_text("keep me\n", encoding="utf-8")
    (out / "svc-req.yaml").symlink_to(outside)
    code, _, stderr = run_cli(["import", "sloth", "s.yml", "--out", "out", "--force"], tmp_path)
    assert code == 1
    assert "symbolic link" in stderr
    assert outside.read_text(encoding="utf-8") == "keep me\n"
    (out / "svc-req.yaml").unlink()
    os.link(outside, out / "svc-req.yaml")  # a hard link is not replaced either
    code, _, stderr = run_cli(["import", "sloth", "s.yml", "--out", "out", "--force"], tmp_path)
    assert code == 1
    assert outside.read_text(encoding="utf-8") == "keep me\n"


def test_import_bounds_and_empty_input_large_file(tmp_path: Path, run_cli: RunCli) -> None:
    text = _sloth()
    (tmp_path / "big.yml").write_text(text + "#" * (MAX_FILE_BYTES + 1) + "\n", encoding="utf-8")
    code, _, stderr = run_cli(["import", "sloth", "big.yml", "--out", "out"], tmp_path)
    assert code == 1
    assert "big.yml:1:1:" in stderr and str(MAX_FILE_BYTES) in stderr
    assert not (tmp_path / "out").exists()


def test_import_bounds_and_empty_input_pipe(tmp_path: Path, run_cli: RunCli) -> None:
    read_end, write_end = os.pipe()
    written = [0]

    def writer() -> None:
        chunk = b"# " + b"x" * 65_534 + b"\n"
        try:
            while written[0] < 8 * MAX_FILE_BYTES:
                written[0] += os.write(write_end, chunk)
        except BrokenPipeError:
            pass
        finally:
            os.close(write_end)

    thread = threading.Thread(target=writer, daemon=True)
    thread.start()
    try:
        code, _, stderr = run_cli(["import", "sloth", f"/dev/fd/{read_end}", "--out", "out"], tmp_path)
    finally:
        os.close(read_end)
        thread.join(timeout=30)
    assert code == 1
    assert str(MAX_FILE_BYTES) in stderr
    assert written[0] < 2 * MAX_FILE_BYTES  # the reader stopped at the limit


def test_import_bounds_and_empty_input_empty(tmp_path: Path, run_cli: RunCli) -> None:
    for name, text in (("empty.yml", ""), ("comments.yml", "# nothing here\n---\n# nor here\n")):
        (tmp_path / name).write_text(text, encoding="utf-8")
        for fmt in ("sloth", "openslo"):
            code, _, stderr = run_cli(["import", fmt, name, "--out", "out"], tmp_path)
            assert code == 1
            assert f"{name}:1:1: no SLOs in {name}" in stderr


OPENSLO_SPEC = """spec:
  service: s
  budgetingMethod: Occurrences
  timeWindow: [{duration: 28d, isRolling: true}]
  indicator:
    spec:
      ratioMetric:
        good: {metricSource: {type: Prometheus, spec: {query: "sum(a)"}}}
        total: {metricSource: {type: Prometheus, spec: {query: "sum(b)"}}}
  objectives: [{target: 0.99}]
"""


def test_malformed_openslo(tmp_path: Path, run_cli: RunCli) -> None:
    head = "apiVersion: openslo/v1\nkind: SLO\n"
    good = head + "metadata: {name: n}\n" + OPENSLO_SPEC
    cases = {
        "no-metadata": (head + OPENSLO_SPEC, "1:1:"),
        "metadata-str": (head + 'metadata: "x"\n' + OPENSLO_SPEC, "3:11:"),
        "window-str": (good.replace("[{duration: 28d, isRolling: true}]", '["28d"]'), "3:18:"),
        "source-str": (good.replace('spec: {query: "sum(a)"}', 'spec: "q"'), "3:18:"),
        "spec-int": (head + "metadata: {name: n}\nspec: 3\n", "4:7:"),
    }
    for name, (text, where) in cases.items():
        (tmp_path / f"{name}.yml").write_text(text, encoding="utf-8")
        code, _, stderr = run_cli(["import", "openslo", f"{name}.yml", "--out", "out"], tmp_path)
        assert code == 1, (name, stderr)
        assert f"{name}.yml:{where}" in stderr, (name, stderr)
    assert _spec_keys(tmp_path / "out") == []


def test_raw_format_characters_in_import_output(tmp_path: Path, run_cli: RunCli) -> None:
    """A bidi override (U+202E) or another format character in a name or label value is printed and
    written as its escape: raw, it would reorder what the terminal or an editor shows (property find)."""
    tier, severity = _yaml_str("web\u202etxt.exe"), _yaml_str("x\u200b\U000e0001")
    labels = f"labels:\n  tier: {tier}\n  severity: {severity}\n"
    (tmp_path / "s.yml").write_text(_sloth(name="\u202ereq", labels=labels), encoding="utf-8")
    code, stdout, stderr = run_cli(["import", "sloth", "s.yml", "--out", "out"], tmp_path)
    assert code == 0, stderr
    assert "SLO \\u202ereq" in stdout and "severity=x\\u200b\\U000e0001" in stdout
    (path,) = (tmp_path / "out").glob("*.yaml")
    text = path.read_text(encoding="utf-8")
    assert not [char for char in stdout + text if char in "\u202e\u200b\U000e0001"]
    assert yaml.safe_load(text)["labels"]["tier"] == "web\u202etxt.exe"  # the value itself, escaped in YAML


def test_blank_line_in_import_diagnostics(tmp_path: Path, run_cli: RunCli) -> None:
    """Every stderr line of a failed import is ``path:line:col: message``; no blank line after the
    diagnostics (property find: `import openslo` of a Sloth file)."""
    (tmp_path / "s.yml").write_text(_sloth(), encoding="utf-8")
    code, _, stderr = run_cli(["import", "openslo", "s.yml", "--out", "out"], tmp_path)
    assert code == 1
    assert stderr.splitlines() == [
        "s.yml:1:1: not an OpenSLO document (apiVersion None): expected one of ('openslo/v1alpha', 'openslo/v1')"
    ]
