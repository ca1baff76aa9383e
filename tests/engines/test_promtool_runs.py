"""tests/promtool_runs.py proves each distinct proof once per test run, and never lets a changed proof pass
on another's verdict."""

from __future__ import annotations

import json
import os
import subprocess
import sys
import time
from pathlib import Path

from tests import promtool_runs
from tests.promtool_runs import VERDICTS_ENV, promtool_test, proof_key
from tests.support import REPO_ROOT

RULES = """\
# Generated for {spec}
groups:
- name: slo-{spec}
  rules:
  - alert: {alert}
    expr: errors{{job="a"}} > {threshold}
    for: 2m
    labels:
      slo: {spec}
      spec_hash: {spec_hash}
    annotations:
      runbook_url: https://example.com/{spec}.md#{anchor}
"""
TEST = """\
# promtool unit tests for {spec}
rule_files:
- ../rules/{spec}.rules.yaml
evaluation_interval: 1m
tests:
- name: '{alert} fires after 2m over 5'
  interval: 1m
  input_series:
  - series: errors{{job="a"}}
    values: 0 9x10
  alert_rule_test:
  - alertname: {alert}
    eval_time: 4m
    exp_alerts:
    - exp_labels: {{job: a, slo: {spec}, spec_hash: {spec_hash}}}
      exp_annotations: {{runbook_url: "https://example.com/{spec}.md#{anchor}"}}
"""


def _write(root: Path, spec: str, alert: str, threshold: int = 5, spec_hash: str = "0123abcd") -> Path:
    values = {"spec": spec, "alert": alert, "threshold": threshold, "spec_hash": spec_hash, "anchor": alert.lower()}
    (root / "rules").mkdir(parents=True, exist_ok=True)
    (root / "tests").mkdir(parents=True, exist_ok=True)
    (root / "rules" / f"{spec}.rules.yaml").write_text(RULES.format(**values), encoding="utf-8")
    test = root / "tests" / f"{spec}.test.yaml"
    test.write_text(TEST.format(**values), encoding="utf-8")
    return test


def test_one_promtool_run_per_proof_and_a_changed_rule_is_run_again(tmp_path: Path) -> None:
    first = _write(tmp_path / "a", "getting-started-errors", "GettingStartedErrors")
    same = _write(tmp_path / "b", "k8s-getting-started-errors", "K8sGettingStartedErrors", spec_hash="89ef4567")
    copy = _write(tmp_path / "c", "getting-started-errors", "GettingStartedErrors")
    broken = _write(tmp_path / "d", "multifile-errors", "MultifileErrors", threshold=50)  # never fires
    assert proof_key(first) == proof_key(copy) != proof_key(same)
    assert proof_key(first, rename=True) == proof_key(same, rename=True) != proof_key(broken, rename=True)

    before = promtool_runs.runs
    assert promtool_test(first, rename=True).returncode == 0
    assert promtool_test(same, rename=True).returncode == 0
    assert promtool_test(copy).returncode == 0
    assert promtool_runs.runs - before == 2  # `first` by name and by renamed content; `same` and `copy` reuse
    failed = promtool_test(broken, rename=True)
    assert failed.returncode == 1 and "MultifileErrors" in failed.stdout + failed.stderr
    assert promtool_runs.runs - before == 3


def test_renaming_keeps_words_that_only_contain_a_name(tmp_path: Path) -> None:
    """A name is replaced only as a whole word: a metric that contains it is not renamed with it."""
    one = _write(tmp_path / "a", "errors", "Errors")
    two = _write(tmp_path / "b", "latency", "Latency")
    for test in (one, two):
        rules = test.parent.parent / "rules" / test.name.replace(".test.yaml", ".rules.yaml")
        for path in (test, rules):
            path.write_text(path.read_text(encoding="utf-8").replace("errors{", "errors_total{"), encoding="utf-8")
    assert proof_key(one, rename=True) == proof_key(two, rename=True)
    assert proof_key(one) != proof_key(two)


def test_names_a_regex_matcher_or_a_function_reads_keep_their_own_key(tmp_path: Path) -> None:
    """Renaming must not change what promtool computes: a matcher that matches one name and not the other,
    or a name that PromQL reads as a word, keeps the proofs apart."""
    one = _write(tmp_path / "a", "dns-errors", "DnsErrors")
    two = _write(tmp_path / "b", "node-ready", "NodeReady")
    assert proof_key(one, rename=True) == proof_key(two, rename=True)
    for test in (one, two):
        rules = test.parent.parent / "rules" / test.name.replace(".test.yaml", ".rules.yaml")
        rules.write_text(rules.read_text(encoding="utf-8").replace('job="a"', 'job="a",slo=~"dns-.*"'), "utf-8")
    assert proof_key(one, rename=True) != proof_key(two, rename=True)
    three = _write(tmp_path / "c", "sum", "Sum")
    four = _write(tmp_path / "d", "max", "Max")
    assert proof_key(three, rename=True) == proof_key(three) != proof_key(four, rename=True)


PROVE = (
    "import sys; from pathlib import Path; from tests import promtool_runs as p; "
    "r = p.promtool_test(Path(sys.argv[1])); print(p.runs, r.returncode, r.stdout)"
)


def test_a_worker_waits_for_the_verdict_another_is_working_out(tmp_path: Path) -> None:
    """Two workers of a run proving the same file at once: the second waits on the lock and reads the first's
    verdict, without running promtool (here the first is this test, holding the lock, and its verdict a marker)."""
    test = _write(tmp_path / "a", "getting-started-errors", "GettingStartedErrors")
    verdicts = tmp_path / "verdicts"
    verdicts.mkdir()
    shared = verdicts / f"{proof_key(test)}.json"
    env = {**os.environ, VERDICTS_ENV: str(verdicts), "PYTHONPATH": str(REPO_ROOT)}
    with promtool_runs._exclusive(shared.with_suffix(".lock")):
        other = subprocess.Popen(
            [sys.executable, "-c", PROVE, str(test)], cwd=REPO_ROOT, env=env, stdout=subprocess.PIPE, text=True
        )
        time.sleep(3)  # the other process has started and reached the lock
        assert other.poll() is None, "it did not wait"
        shared.write_text(json.dumps([0, "the first worker's verdict", ""]), encoding="utf-8")
    out, _ = other.communicate(timeout=60)
    assert out.split(maxsplit=2) == ["0", "0", "the first worker's verdict\n"], out
