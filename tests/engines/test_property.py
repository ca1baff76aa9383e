"""Property (issue 17): any spec tree, however careless or hostile, compiles without an internal error to
either ``path:line:col: message`` problems or output that the real engines accept.

Hypothesis draws spec trees from ``tests/spec_strategies.py``: one to three SLO specs in one or two files,
with owners and project variations, each spec a valid base bent by the shapes issue 17 lists (extreme
numbers, zero durations, label-name edge cases, YAML tags, template braces, ``explains`` cycles, ...).
Each shape leads as many trees as any other. Every example is compiled in-process (``compile_specs`` and
``render_all``, as ``generate`` does), and

- nothing may raise: an exception is an internal error, and hypothesis shrinks it to a minimal tree;
- every problem must be one line ``path:line:col: message``;
- an accepted tree must have rules and tests for every spec, and a test naming every alert;
- its rules, promtool tests and Alertmanager config are kept, and checked once all examples ran, in one
  call per tool (a process per example would cost more than the compiler does): ``promtool check rules
  --lint=all --lint-fatal``, ``amtool check-config`` and ``promtool test rules``. A failure names the
  example, its shapes and its spec files, which are also kept under the test's ``tmp_path``.

The seeds are fixed (``SEED`` plus the shape's index, no example database), so CI runs the same 1,000 trees
every time and cannot flake; ``SLO_PROPERTY_RANDOM=1`` explores new ones, ``SLO_PROPERTY_EXAMPLES=N``
changes how many (the coverage checks at the end need 1,000 or more).
"""

from __future__ import annotations

import collections
import hashlib
import os
import re
import subprocess
import time
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field
from pathlib import Path

import hypothesis
from hypothesis import HealthCheck, event, given, settings

from compiler.pipeline import compile_specs
from compiler.targets import TargetError, render_all
from tests import promtool_runs
from tests.promtool_runs import proof_key
from tests.spec_strategies import ALL_SHAPES, ALWAYS_REFUSED, Tree, spec_trees

EXAMPLES = int(os.environ.get("SLO_PROPERTY_EXAMPLES", "1000"))
RANDOM = bool(os.environ.get("SLO_PROPERTY_RANDOM"))
SEED = 17  # the issue: each shape's examples come from SEED + its index
DIAGNOSTIC = re.compile(r"^specs(/[^:\n]+)?:\d+:\d+: \S.*$")
KEPT = ("prometheus/rules/", "prometheus/tests/", "alertmanager/")
RULES, TESTS, ALERTMANAGER = "prometheus/rules/*.yaml", "prometheus/tests/*.yaml", "alertmanager/alertmanager.yaml"
PROMTOOL = ["promtool"]


@dataclass
class Accepted:
    """An example that compiled: its tree and where its engine inputs were written."""

    index: int
    tree: Tree
    out: Path


@dataclass
class Run:
    """What the examples did: those accepted, and how often each shape was drawn."""

    root: Path
    examples: int = 0
    accepted: list[Accepted] = field(default_factory=list)
    drawn: collections.Counter[str] = field(default_factory=collections.Counter)
    compiled: collections.Counter[str] = field(default_factory=collections.Counter)


def bare(shape: str) -> str:
    """A shape without the index of the spec it was applied to (``1:yaml tags`` -> ``yaml tags``)."""
    return shape.partition(":")[2] or shape


@contextmanager
def working_directory(path: Path) -> Iterator[None]:
    previous = Path.cwd()
    os.chdir(path)
    try:
        yield
    finally:
        os.chdir(previous)


def write_tree(root: Path, files: dict[str, str]) -> None:
    for relative, text in files.items():
        path = root / relative
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(text, encoding="utf-8")


def compile_tree(root: Path, tree: Tree) -> tuple[dict[str, bytes], list[str]]:
    """(the output files, the problem lines) of ``tree`` compiled as ``generate`` does, from ``root``."""
    write_tree(root / "specs", tree.files)
    with working_directory(root):
        model, diagnostics = compile_specs(Path("specs"))
        if model is not None and not diagnostics:
            try:
                return render_all(model), []
            except TargetError as exc:
                diagnostics.extend(exc.diagnostics())
    assert diagnostics, "no model and no problem"
    return {}, diagnostics.render().splitlines()


ALERT = re.compile(r"^  - alert: (\S+)$", re.MULTILINE)


def assert_nothing_lost(files: dict[str, bytes], tree: Tree) -> None:
    """Every spec of an accepted tree has its rules and tests, and every alert is in its tests."""
    rules = sorted(path for path in files if path.startswith("prometheus/rules/"))
    assert len(rules) == tree.specs, f"{len(rules)} rule files for {tree.specs} specs\n{tree.describe()}"
    for path in rules:
        test = path.replace("prometheus/rules/", "prometheus/tests/").replace(".rules.yaml", ".test.yaml")
        proof = files[test].decode()
        for alert in ALERT.findall(files[path].decode()):
            assert f"alertname: {alert}\n" in proof or f'alertname="{alert}"' in proof, f"{alert} is not tested"


def check_example(tree: Tree, run: Run) -> None:
    """The in-process checks of one example; an accepted one's engine inputs are kept for the batch checks."""
    example = run.root / f"ex{run.examples:04d}"
    run.examples += 1
    files, problems = compile_tree(example, tree)
    for line in problems:
        assert DIAGNOSTIC.match(line), f"not a path:line:col diagnostic: {line!r}\n{tree.describe()}"
        assert "compiler bug" not in line and "internal error" not in line, f"{line}\n{tree.describe()}"
    if files:
        assert_nothing_lost(files, tree)
    event("accepted" if files else "refused")
    shapes = {bare(shape) for shape in tree.shapes}
    run.drawn.update(shapes)
    if files:
        write_tree(example / "out", {path: data.decode() for path, data in files.items() if path.startswith(KEPT)})
        run.accepted.append(Accepted(run.examples - 1, tree, example / "out"))
        run.compiled.update(shapes)


def run_examples(root: Path) -> Run:
    """Every example through the compiler: each shape is the primary shape of as many trees as any other,
    from a seed of its own (hypothesis draws an example's first choice unevenly over a thousand examples)."""
    run = Run(root)
    share, extra = divmod(EXAMPLES, len(ALL_SHAPES))
    for index, shape in enumerate(ALL_SHAPES):
        explore(run, shape, share + (index < extra), SEED + index)
    return run


def explore(run: Run, shape: str, examples: int, seed: int) -> None:
    """``examples`` trees around ``shape``, from ``seed`` unless exploring."""
    if not examples:
        return

    @settings(
        max_examples=examples,
        deadline=None,
        database=None,
        suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large, HealthCheck.filter_too_much],
    )
    @given(tree=spec_trees(shape))
    def one(tree: Tree) -> None:
        check_example(tree, run)

    (one if RANDOM else hypothesis.seed(seed)(one))()


def _run(args: list[str], timeout: int) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        args, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True, timeout=timeout, check=False
    )


def _run_split(tool: list[str], files: list[Path], timeout: int) -> tuple[int, str]:
    """The tool on every file, in two processes at once (promtool evaluates on one core): (worst exit code,
    the outputs one after the other)."""
    halves = [files[: len(files) // 2], files[len(files) // 2 :]]
    running = [
        subprocess.Popen([*tool, *map(str, half)], stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True)
        for half in halves
        if half
    ]
    try:
        outputs = [process.communicate(timeout=timeout)[0] for process in running]
    finally:
        for process in running:  # only on a timeout are they still running: stop them, by their own handle
            if process.poll() is None:
                process.kill()
                process.wait()
    return max(process.returncode for process in running), "".join(outputs)


def _sections(output: str, header: str) -> dict[str, str]:
    """A tool's output split per file, by the line that names each file (``header`` captures the path)."""
    parts = re.split(header, output, flags=re.MULTILINE)
    return {parts[i]: parts[i + 1] for i in range(1, len(parts) - 1, 2)}


def failing_files(
    tool: list[str], files: list[Path], header: str, timeout: int, keys: dict[Path, str] | None = None
) -> dict[Path, str]:
    """Files the tool rejects, with what it said about each: one call for all of them; when it fails, the
    files its output does not show passing are run again one by one, for their own exit code and output.

    With ``keys`` (what the tool reads from each file, hashed), files the tool passed with the same key
    before, in this run or an earlier one, are not run again (tests/promtool_runs.py), and a call that passes
    is remembered."""
    check = " ".join(tool)
    if keys:
        known = promtool_runs.passed_before(check, keys)
        files = [path for path in files if path not in known]
    if not files:
        return {}
    code, output = _run_split(tool, files, timeout)
    if code == 0:
        if keys:
            promtool_runs.keep_passes(check, {path: keys[path] for path in files if path in keys})
        return {}
    sections = _sections(output, header)
    suspects = [path for path in files if "SUCCESS" not in sections.get(str(path), "")] or files
    found = {}
    for path in suspects:
        alone = _run([*tool, str(path)], timeout)
        if alone.returncode != 0:
            found[path] = alone.stdout
    return found or {files[0]: f"exit {code}, though every file passes alone:\n{output[-3000:]}"}


def distinct(test_files: list[Path]) -> list[Path]:
    """One test file per distinct proof: hypothesis draws many trees whose spec differs only elsewhere or only
    in its name (``dns-errors`` or ``watchers``, and the alert names that follow), and promtool's verdict on
    the same proof under other names is the same (tests/promtool_runs.py: of 402 test files of the 1,000
    trees, 318 were distinct by content, 265 by content without the names)."""
    seen: dict[str, Path] = {}
    for path in test_files:
        seen.setdefault(proof_key(path, rename=True) or str(path), path)
    return list(seen.values())


CHECKS = (
    ("promtool check rules", [*PROMTOOL, "check", "rules", "--lint=all", "--lint-fatal"], r"^Checking (\S+)$"),
    ("amtool check-config", ["amtool", "check-config"], r"^Checking '(\S+)'"),
    ("promtool test rules", [*PROMTOOL, "test", "rules"], r"^Unit Testing:\s+(\S+)$"),
)


def engine_inputs(accepted: list[Accepted]) -> dict[str, list[Path]]:
    """What each tool checks: every rule file and Alertmanager config, and the distinct generated tests of
    the specs a shape or the project touched (a plain base spec's tests repeat those of the shaped ones)."""
    tests = [
        path
        for example in accepted
        for path in sorted(example.out.glob(TESTS))
        if path.name.removesuffix(".test.yaml") not in example.tree.plain
    ]
    return {
        "promtool check rules": [path for example in accepted for path in sorted(example.out.glob(RULES))],
        "amtool check-config": [example.out / ALERTMANAGER for example in accepted],
        "promtool test rules": distinct(tests),
    }


def _keys(check: str, files: list[Path]) -> dict[Path, str] | None:
    """What promtool reads from each file, hashed (the proof under any names, or the rule file), for the
    verdicts kept across runs; None for amtool (a config can name template files its key would not see)."""
    if check == "promtool test rules":
        keys = {path: proof_key(path, rename=True) for path in files}
        return {path: key for path, key in keys.items() if key is not None}
    if check == "promtool check rules":
        return {path: hashlib.sha256(path.read_bytes()).hexdigest() for path in files}
    return None


def engine_failures(accepted: list[Accepted]) -> tuple[dict[Path, str], dict[str, str]]:
    """The accepted examples' files through promtool and amtool: (failures, files and seconds per tool)."""
    inputs = engine_inputs(accepted)
    failures: dict[Path, str] = {}
    spent = {}
    for name, tool, header in CHECKS:
        start = time.perf_counter()
        failures.update(failing_files(tool, inputs[name], header, timeout=900, keys=_keys(name, inputs[name])))
        spent[name] = f"{len(inputs[name])} files in {time.perf_counter() - start:.0f}s"
    return failures, spent


def report(failures: dict[Path, str], accepted: list[Accepted]) -> str:
    by_example = {example.out: example for example in accepted}
    lines = [f"{len(failures)} file(s) of accepted examples failed the engines:"]
    for path, output in list(failures.items())[:5]:
        example = next(by_example[parent] for parent in path.parents if parent in by_example)
        lines += [
            f"== example {example.index} ({example.out.parent}): {path.name}",
            output[-3000:],
            example.tree.describe(),
        ]
    return "\n".join(lines)


def test_random_spec_trees_give_positioned_errors_or_output_the_engines_accept(tmp_path: Path) -> None:
    start = time.perf_counter()
    run = run_examples(tmp_path / "examples")
    compiled = time.perf_counter() - start
    failures, spent = engine_failures(run.accepted)
    print(f"\n{run.examples} examples compiled in {compiled:.0f}s, {len(run.accepted)} accepted; {spent}")
    print("shape: drawn/compiled", {shape: f"{run.drawn[shape]}/{run.compiled[shape]}" for shape in ALL_SHAPES})
    assert not failures, report(failures, run.accepted)
    if EXAMPLES >= 1000:  # the mix must keep exercising both outcomes and every shape, or it tests little
        assert 0.25 * run.examples <= len(run.accepted) <= 0.75 * run.examples, (len(run.accepted), run.examples)
        never = [shape for shape in ALL_SHAPES if not run.compiled[shape] and shape not in ALWAYS_REFUSED]
        assert not never, f"shapes in no accepted tree: {never}"
