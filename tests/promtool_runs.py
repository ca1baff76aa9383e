"""One ``promtool test rules`` per distinct proof, in a test run and across the runs of one checkout (issue 23).

Several tests prove the same files: ``test_generated_tests`` runs every generated and golden test file, and
the mutation check's control, the Sloth conformance tests and others run some of them again, or the same
proof written under another spec name. ``promtool_test`` keys a run by what promtool reads (the test file
and the rule files it names, without their ``#`` comment lines) and runs promtool only for a key it has
no verdict for. The verdict (exit code and output) is kept in memory and in a directory the pytest-xdist
workers share.

That directory is ``.cache/promtool-verdicts/<promtool>/`` (``<promtool>`` names the binary: its path, size
and modification time), so a verdict also serves the next run of the suite in this checkout: promtool is a
pure function of the files it reads, and the key is those files. A run after a change proves again exactly
what the change touched (a spec's edit: that spec's proofs and the world's group holding it; a compiler change
that leaves ``generated/`` alone: nothing), as a build system's test cache does. A new or reinstalled
promtool starts an empty directory; a clean clone (CI) has none and proves everything.
``SLO_TEST_PROMTOOL_STORE=off`` keeps the verdicts for one run only, in a temporary directory removed at
its end (``make test-cold``). The store is bounded: at the start of a run, verdicts unused for
``KEEP_DAYS`` days and all but the ``KEEP_ENTRIES`` most recently used are removed, and so are the
directories of other promtool binaries. Only an exit code promtool chose (0: passed, 1: failed) is kept,
never a timeout or a signal, and no output over ``MAX_OUTPUT`` characters.

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
import time
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path

VERDICTS_ENV = "SLO_TEST_PROMTOOL_VERDICTS"  # the directory the verdicts of this run are read from and kept in
STORE_ENV = "SLO_TEST_PROMTOOL_STORE"  # "off": verdicts last one run
STORE = Path(__file__).resolve().parent.parent / ".cache" / "promtool-verdicts"
KEEP_DAYS = 14
KEEP_ENTRIES = 20_000
MAX_OUTPUT = 1_000_000
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


@dataclass(frozen=True)
class Verdicts:
    """Where a run keeps its verdicts, and whether the directory goes with the run."""

    directory: Path
    temporary: bool


def start_run(store: Path = STORE) -> Verdicts | None:
    """Choose the run's verdict directory (the xdist controller, or a run without workers); None in a worker.

    The store of this checkout's promtool unless ``SLO_TEST_PROMTOOL_STORE=off`` or promtool is missing (then
    a temporary directory); a store that cannot be written (a read-only checkout) also falls back to one.
    """
    if os.environ.get(VERDICTS_ENV):
        return None
    binary = shutil.which("promtool")
    verdicts = None
    if os.environ.get(STORE_ENV, "").lower() != "off" and binary:
        with contextlib.suppress(OSError):
            verdicts = Verdicts(_pruned(store, _binary_name(Path(binary))), temporary=False)
    if verdicts is None:
        verdicts = Verdicts(Path(tempfile.mkdtemp(prefix="slo-promtool-verdicts-")), temporary=True)
    os.environ[VERDICTS_ENV] = str(verdicts.directory)
    return verdicts


def end_run(verdicts: Verdicts | None) -> None:
    if verdicts is not None:
        if verdicts.temporary:
            shutil.rmtree(verdicts.directory, ignore_errors=True)
        os.environ.pop(VERDICTS_ENV, None)


def _binary_name(binary: Path) -> str:
    """The promtool binary's path, size and modification time, hashed: a new or reinstalled one differs."""
    real = binary.resolve()
    stat = real.stat()
    return hashlib.sha256(f"{real}\0{stat.st_size}\0{stat.st_mtime_ns}".encode()).hexdigest()[:16]


def _pruned(store: Path, name: str, now: float | None = None) -> Path:
    """``store / name``, made if missing, without other binaries' directories, verdicts unused for
    ``KEEP_DAYS`` days, verdicts past the ``KEEP_ENTRIES`` most recently used, and leftover partial writes."""
    directory = store / name
    directory.mkdir(parents=True, exist_ok=True)
    for other in store.iterdir():
        if other.is_dir() and other.name != name:
            shutil.rmtree(other, ignore_errors=True)
    oldest = (time.time() if now is None else now) - KEEP_DAYS * 86400
    kept: list[tuple[float, Path]] = []
    for path in directory.iterdir():
        with contextlib.suppress(OSError):
            used = path.stat().st_mtime
            if path.suffix == ".part" or (path.suffix in (".json", ".lock") and used < oldest):
                path.unlink()
            elif path.suffix == ".json":
                kept.append((used, path))
    for _, path in sorted(kept, reverse=True)[KEEP_ENTRIES:]:
        with contextlib.suppress(OSError):
            path.unlink()
            path.with_suffix(".lock").unlink(missing_ok=True)
    return directory


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


def _rule_files(text: str) -> list[str] | None:
    """The rule files a test file names: a YAML list (the generated tests) or a JSON document's (the world's)."""
    if text.startswith("{"):
        try:
            listed = json.loads(text).get("rule_files")
        except (ValueError, AttributeError):
            return None
        return [str(path) for path in listed] if isinstance(listed, list) else None
    found = _RULE_FILE.search(text)
    return None if found is None else [line[2:].strip().strip("'\"") for line in found.group(1).splitlines()]


def _placeless(text: str, paths: list[str]) -> str:
    """The test file with each rule file named by its file name alone: where the rule files are (a test's temp
    directory, named absolutely) is not what promtool proves, and their content is in the key."""
    if text.startswith("{"):
        for path in paths:
            text = text.replace(json.dumps(path), json.dumps(Path(path).name))
        return text
    listing = "".join(f"- {Path(path).name}\n" for path in paths)
    return _RULE_FILE.sub(lambda _: f"rule_files:\n{listing}", text, count=1)


def proof_key(test_file: Path, *, rename: bool = False) -> str | None:
    """What promtool reads to prove ``test_file``, hashed; None when the rule files are not plain paths."""
    text = test_file.read_text(encoding="utf-8")
    paths = _rule_files(text)
    if paths is None:
        return None
    if any(set(path) & set("*?[{") for path in paths):
        return None
    bodies = [(test_file.parent / path).read_text(encoding="utf-8") for path in paths]
    texts = [_placeless(text, paths), *bodies]
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
    """``promtool test rules <test_file>`` in its directory, or the verdict of the same proof earlier (this run's
    or, from the store, an earlier run's).

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
        kept = _read(shared)
        if kept is not None:
            _MEMORY[str(key)] = kept
            return subprocess.CompletedProcess(args, *kept)
        result = _run(test_file, key, args, timeout)
        if result.returncode in (0, 1) and len(result.stdout) + len(result.stderr) <= MAX_OUTPUT:
            _keep(shared, _MEMORY[str(key)])
    return result


def _keep(shared: Path, verdict: tuple[int, str, str]) -> None:
    """Write a verdict whole or not at all (a reader sees the old file or the new one); a write that fails (a
    full disk, another run pruning the store) only costs the next run a promtool run."""
    partial = shared.with_suffix(f".{os.getpid()}.part")
    try:
        partial.write_text(json.dumps(verdict), encoding="utf-8")
        partial.replace(shared)
    except OSError:
        with contextlib.suppress(OSError):
            partial.unlink(missing_ok=True)


def _read(shared: Path) -> tuple[int, str, str] | None:
    """The verdict kept at ``shared``, marked as just used (the store keeps the most recently used); None when
    there is none or it cannot be read."""
    try:
        code, out, err = json.loads(shared.read_text(encoding="utf-8"))
        os.utime(shared)
    except (OSError, ValueError, TypeError):
        return None
    return int(code), str(out), str(err)


def passed_before(check: str, keys: dict[Path, str]) -> set[Path]:
    """The files whose ``check`` (a tool and its arguments, run on many files at once) passed with the same
    ``keys`` before, in this run or a stored one (``keep_passes``)."""
    directory = os.environ.get(VERDICTS_ENV)
    if not directory:
        return set()
    return {path for path, key in keys.items() if _read(Path(directory) / f"{_pass_name(check, key)}.json")}


def keep_passes(check: str, keys: dict[Path, str]) -> None:
    """Remember that ``check`` passed on these files (one call on all of them exited 0)."""
    directory = os.environ.get(VERDICTS_ENV)
    for key in keys.values() if directory else ():
        _keep(Path(str(directory)) / f"{_pass_name(check, key)}.json", (0, "", ""))


def _pass_name(check: str, key: str) -> str:
    """A batch's verdict on one file lives apart from ``promtool_test``'s (it has no output to give back)."""
    return hashlib.sha256(f"{check}\0{key}".encode()).hexdigest()


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
