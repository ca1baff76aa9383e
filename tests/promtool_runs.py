"""One ``promtool test rules`` per distinct proof in a test run (issue 23: never the same proof twice).

Several tests prove the same files: ``test_generated_tests`` runs every generated and golden test file, and
the mutation check's control, the Sloth conformance tests and others run some of them again, or the same
proof written under another spec name. ``promtool_test`` keys a run by what promtool reads (the test file
and the rule files it names, without their ``#`` comment lines) and runs promtool only for a key it has
not seen in this test run; the verdict (exit code and output) is kept in memory and in a directory that
the pytest-xdist workers of one run share, made at the start of the run and removed at its end, so no
verdict outlives the run that measured it.

``rename=True`` also keys the proof without its spec and alert names (the ``slo`` label values, the
``- alert:`` names and the spec hash of its rule files, each replaced wherever it stands as a whole word,
not inside a PromQL name):
the Sloth corpus imports the same SLO under several names, and promtool's verdict on a proof does not
depend on what its spec and alerts are called. Use it only where the names are generated (spec names
with a dash, CamelCase alert names), never for names a test chose to be PromQL words.
"""

from __future__ import annotations

import contextlib
import fcntl
import hashlib
import json
import os
import re
import shutil
import subprocess
import tempfile
from collections.abc import Iterator
from pathlib import Path

VERDICTS_ENV = "SLO_TEST_PROMTOOL_VERDICTS"
_MEMORY: dict[str, tuple[int, str, str]] = {}
_RULE_FILE = re.compile(r"^rule_files:\n((?:- .+\n)+)", re.MULTILINE)
_SPEC_NAME = re.compile(r"^\s+slo: (\S+)$", re.MULTILINE)
_ALERT_NAME = re.compile(r"^\s+- alert: (\S+)$", re.MULTILINE)
_SPEC_HASH = re.compile(r"^\s+spec_hash: (\S+)$", re.MULTILINE)
_REGEX_MATCHER = re.compile(r'[=!]~\s*"((?:[^"\\]|\\.)*)"')
_LABEL_TEXT = re.compile(r"\b(?:label_replace|label_join|topk|bottomk|sort|sort_desc|count_values)\s*\(")
_PROMQL_WORDS = {
    *("sum", "min", "max", "avg", "group", "stddev", "stdvar", "count", "count_values", "bottomk", "topk"),
    *("quantile", "by", "without", "on", "ignoring", "group_left", "group_right", "bool", "and", "or"),
    *("unless", "offset", "atan2", "inf", "nan", "start", "end"),
}
runs = 0  # promtool processes started by promtool_test in this process (the tests of this module read it)


def start_run() -> Path | None:
    """Make the run's verdict directory (the xdist controller, or a run without workers); None in a worker."""
    if os.environ.get(VERDICTS_ENV):
        return None
    directory = Path(tempfile.mkdtemp(prefix="slo-promtool-verdicts-"))
    os.environ[VERDICTS_ENV] = str(directory)
    return directory


def end_run(directory: Path | None) -> None:
    if directory is not None:
        shutil.rmtree(directory, ignore_errors=True)
        os.environ.pop(VERDICTS_ENV, None)


def _uncommented(text: str) -> str:
    return "\n".join(line for line in text.splitlines() if not line.startswith("#"))


def _renamed(texts: list[str], names: set[str]) -> list[str] | None:
    """The texts with each name replaced by its place in the order the names first appear in them, and what
    every regular expression matcher of the texts says of each name; None where renaming could change what
    promtool computes (a name that is a PromQL word or called as a function, functions that read label values
    as text or order series by them, a matcher that is not a regular expression Python reads)."""
    everything = "\n".join(texts)
    if _LABEL_TEXT.search(everything):
        return None
    if any(
        name.lower() in _PROMQL_WORDS or re.search(rf"(?<![\w:]){re.escape(name)}\s*\(", everything) for name in names
    ):
        return None
    ordered = sorted(names, key=lambda name: (-len(name), name))  # the longest name of an overlap wins
    word = re.compile(rf"(?<![\w:])(?:{'|'.join(map(re.escape, ordered))})(?!\w|:\w)")
    seen: dict[str, str] = {}
    renamed = [word.sub(lambda match: seen.setdefault(match.group(), f"@name{len(seen)}@"), text) for text in texts]
    try:
        matchers = [re.compile(pattern) for pattern in _REGEX_MATCHER.findall(everything)]
    except re.error:
        return None
    table = ["".join("1" if matcher.fullmatch(name) else "0" for name in seen) for matcher in matchers]
    return [*renamed, "\n".join(table)]


def proof_key(test_file: Path, *, rename: bool = False) -> str | None:
    """What promtool reads to prove ``test_file``, hashed; None when the rule files are not plain paths."""
    text = test_file.read_text(encoding="utf-8")
    listed = _RULE_FILE.search(text)
    if listed is None:
        return None
    paths = [line[2:].strip().strip("'\"") for line in listed.group(1).splitlines()]
    if any(set(path) & set("*?[{") for path in paths):
        return None
    texts = [text] + [(test_file.parent / path).read_text(encoding="utf-8") for path in paths]
    if rename:
        rules = "\n".join(texts[1:])
        alerts = _ALERT_NAME.findall(rules)  # and their runbook anchors, lowercased
        names = {*_SPEC_NAME.findall(rules), *alerts, *(alert.lower() for alert in alerts), *_SPEC_HASH.findall(rules)}
        names |= {path.rsplit("/", 1)[-1] for path in paths} | {test_file.name}
        texts = _renamed(texts, {name.strip("'\"") for name in names} - {""}) or texts
    digest = hashlib.sha256()
    for body in texts:
        digest.update(_uncommented(body).encode())
        digest.update(b"\0")
    return digest.hexdigest()


def promtool_test(test_file: Path, *, rename: bool = False, timeout: int = 900) -> subprocess.CompletedProcess[str]:
    """``promtool test rules <test_file>`` in its directory, or the verdict of the same proof earlier in this run.

    Workers proving the same file at once take turns on a lock in the run's directory: the second waits for the
    first's verdict rather than running promtool again (test_generated_tests and test_rule_cost both ask for
    node-readiness' proof, 37 s of promtool, and on three workers they often asked within seconds).
    """
    key = proof_key(test_file, rename=rename)
    args = ["promtool", "test", "rules", test_file.name]
    if key in _MEMORY:
        code, out, err = _MEMORY[key]
        return subprocess.CompletedProcess(args, code, out, err)
    shared = Path(os.environ[VERDICTS_ENV]) / f"{key}.json" if key and os.environ.get(VERDICTS_ENV) else None
    if shared is None:
        return _run(test_file, key, args, timeout)
    with _exclusive(shared.with_suffix(".lock")):
        if shared.is_file():
            code, out, err = json.loads(shared.read_text(encoding="utf-8"))
            _MEMORY[str(key)] = (code, out, err)
            return subprocess.CompletedProcess(args, code, out, err)
        result = _run(test_file, key, args, timeout)
        partial = shared.with_suffix(f".{os.getpid()}.part")
        partial.write_text(json.dumps(_MEMORY[str(key)]), encoding="utf-8")
        partial.replace(shared)
    return result


@contextlib.contextmanager
def _exclusive(path: Path) -> Iterator[None]:
    """An exclusive lock on ``path`` (made if missing) for the block: released when the block ends or the
    process dies."""
    with path.open("a") as handle:
        fcntl.flock(handle, fcntl.LOCK_EX)
        try:
            yield
        finally:
            fcntl.flock(handle, fcntl.LOCK_UN)


def _run(test_file: Path, key: str | None, args: list[str], timeout: int) -> subprocess.CompletedProcess[str]:
    global runs
    runs += 1
    result = subprocess.run(args, cwd=test_file.parent, capture_output=True, text=True, timeout=timeout, check=False)
    if key is not None:
        _MEMORY[key] = (result.returncode, result.stdout, result.stderr)
    return result
