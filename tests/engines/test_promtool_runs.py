"""tests/promtool_runs.py proves each distinct proof once per test run, and never lets a changed proof pass
on another's verdict."""

from __future__ import annotations

import json
import os
import subprocess
import sys
import time
from pathlib import Path

import pytest

from tests import promtool_runs
from tests.promtool_runs import STORE_ENV, VERDICTS_ENV, promtool_test, proof_key
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


def _fresh(monkeypatch: pytest.MonkeyPatch, verdicts: Path) -> None:
    """This process as a worker of a run whose store is ``verdicts``, with nothing proven yet in memory."""
    verdicts.mkdir(parents=True, exist_ok=True)
    monkeypatch.setenv(VERDICTS_ENV, str(verdicts))
    monkeypatch.setattr(promtool_runs, "_MEMORY", {})


def test_one_promtool_run_per_proof_and_a_changed_rule_is_run_again(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    _fresh(monkeypatch, tmp_path / "verdicts")
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


def test_a_later_run_reads_the_stored_verdict_and_a_changed_proof_is_run_again(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The store outlives the run: a new run (a new process, an empty memory) reads the verdict of a proof it
    has already seen without running promtool, failures included; a changed rule is a new key, run again."""
    store = tmp_path / "verdicts"
    passing = _write(tmp_path / "a", "getting-started-errors", "GettingStartedErrors")
    failing = _write(tmp_path / "b", "multifile-errors", "MultifileErrors", threshold=50)
    _fresh(monkeypatch, store)
    before = promtool_runs.runs
    assert promtool_test(passing).returncode == 0
    assert promtool_test(failing).returncode == 1
    assert promtool_runs.runs - before == 2
    _fresh(monkeypatch, store)  # the next run
    assert promtool_test(passing).returncode == 0
    kept = promtool_test(failing)
    assert kept.returncode == 1 and "MultifileErrors" in kept.stdout + kept.stderr
    assert promtool_runs.runs - before == 2
    rules = tmp_path / "b" / "rules" / "multifile-errors.rules.yaml"
    rules.write_text(rules.read_text(encoding="utf-8").replace("> 50", "> 5"), encoding="utf-8")
    _fresh(monkeypatch, store)
    assert promtool_test(failing).returncode == 0  # the fixed rule is proven, not read from the store
    assert promtool_runs.runs - before == 3


def test_a_verdict_promtool_did_not_give_is_not_kept(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """Only exit codes 0 and 1 are promtool's verdict on the files: a run killed by a signal (or timed out) is
    not kept, so the next run proves the file again."""
    store = tmp_path / "verdicts"
    test = _write(tmp_path / "a", "getting-started-errors", "GettingStartedErrors")
    _fresh(monkeypatch, store)

    def killed(*args: object, **kwargs: object) -> subprocess.CompletedProcess[str]:
        return subprocess.CompletedProcess(["promtool"], -9, "", "")

    with monkeypatch.context() as patched:
        patched.setattr(subprocess, "run", killed)
        assert promtool_test(test).returncode == -9
    assert not list(store.glob("*.json"))
    _fresh(monkeypatch, store)
    assert promtool_test(test).returncode == 0
    assert len(list(store.glob("*.json"))) == 1


def test_the_store_is_bounded_and_follows_the_promtool_binary(tmp_path: Path) -> None:
    """At the start of a run: another binary's directory goes, and so do verdicts unused for KEEP_DAYS days,
    all but the KEEP_ENTRIES most recently used, and partial writes a killed worker left."""
    store = tmp_path / "store"
    old_binary = store / "0123456789abcdef"
    old_binary.mkdir(parents=True)
    (old_binary / "x.json").write_text('[0, "", ""]', encoding="utf-8")
    current = store / "fedcba9876543210"
    current.mkdir()
    now = time.time()
    ages = {"stale": 15 * 86400, "oldest": 3000, "older": 2000, "newer": 1000, "newest": 0}
    for name, age in ages.items():
        path = current / f"{name}.json"
        path.write_text('[0, "", ""]', encoding="utf-8")
        os.utime(path, (now - age, now - age))
    (current / "newest.123.part").write_text("[0,", encoding="utf-8")
    original = promtool_runs.KEEP_ENTRIES
    promtool_runs.KEEP_ENTRIES = 3
    try:
        assert promtool_runs._pruned(store, current.name, now=now) == current
    finally:
        promtool_runs.KEEP_ENTRIES = original
    assert sorted(path.name for path in store.iterdir()) == [current.name]
    assert sorted(path.name for path in current.iterdir()) == ["newer.json", "newest.json", "older.json"]


def test_the_store_off_keeps_verdicts_for_one_run(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """SLO_TEST_PROMTOOL_STORE=off (make test-cold): a temporary directory, removed at the end of the run; by
    default, the store's directory of this promtool, kept."""
    monkeypatch.delenv(VERDICTS_ENV, raising=False)
    monkeypatch.setenv(STORE_ENV, "off")
    cold = promtool_runs.start_run(store=tmp_path / "store")
    assert cold is not None and cold.temporary and os.environ[VERDICTS_ENV] == str(cold.directory)
    promtool_runs.end_run(cold)
    assert not cold.directory.exists() and VERDICTS_ENV not in os.environ
    assert not (tmp_path / "store").exists()
    monkeypatch.delenv(STORE_ENV)
    warm = promtool_runs.start_run(store=tmp_path / "store")
    assert warm is not None and not warm.temporary and warm.directory.parent == tmp_path / "store"
    promtool_runs.end_run(warm)
    assert warm.directory.is_dir() and VERDICTS_ENV not in os.environ


def test_a_batch_pass_is_kept_per_file_and_per_check(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """The property test runs a check on many files at once: a passing call is kept for each file's key, read by
    the next run for that check only, and a file whose key changed is not among the passes."""
    _fresh(monkeypatch, tmp_path / "verdicts")
    one, two = tmp_path / "one.yaml", tmp_path / "two.yaml"
    keys = {one: "key-one", two: "key-two"}
    assert promtool_runs.passed_before("promtool check rules", keys) == set()
    promtool_runs.keep_passes("promtool check rules", {one: "key-one"})
    _fresh(monkeypatch, tmp_path / "verdicts")
    assert promtool_runs.passed_before("promtool check rules", keys) == {one}
    assert promtool_runs.passed_before("promtool test rules", keys) == set()
    assert promtool_runs.passed_before("promtool check rules", {one: "key-one-changed"}) == set()
