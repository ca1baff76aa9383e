"""A large tree's specs checked and built in two processes (compiler/source/project.py, ``_clean_tree_in_two``):
the same model as in one process, and every problem reported exactly as one process reports it."""

from __future__ import annotations

import os
import threading
from collections.abc import Callable, Iterator
from pathlib import Path

import pytest

from compiler import forked
from compiler.model import SLO
from compiler.pipeline import compile_specs
from compiler.source import project
from compiler.source.load import Document

OWNERS = """\
apiVersion: slo-compiler/v1
kind: Owners
teams:
  - {name: team-a, contact: "#a", receivers: {page: [{pagerduty: {routing_key_file: /s/a}}], ticket: [{webhook: {url: "http://x/a"}}]}}
"""

SPEC = """\
apiVersion: slo-compiler/v1
kind: SLO
name: {name}
family: watch-list-volume
owner: team-a
description: Synthetic spec {i}.
slice:
  by: [cluster, server]
  selector: '{{job="coredns"}}'
sli:
  ratio:
    bad: 'coredns_dns_responses_total{{rcode="SERVFAIL",shard="{i}"}}'
    total: 'coredns_dns_responses_total{{shard="{i}"}}'
objective: {{target: 99.9%, period: 30d}}
persistence: {{for: 10m}}
mitigation:
  summary: Do the thing.
  steps: [One, Two]
  stop_conditions: [Unless]
  escalation: Call someone.
"""


def _tree(root: Path, names: list[str]) -> Path:
    root.mkdir()
    (root / "owners.yaml").write_text(OWNERS, encoding="utf-8")
    for i, name in enumerate(names):
        (root / f"spec-{i:04d}.yaml").write_text(SPEC.format(name=name, i=i), encoding="utf-8")
    return root


MIN_SPECS = 24
LAST = f"spec-{MIN_SPECS - 1:04d}.yaml"


def _names(count: int = MIN_SPECS) -> list[str]:
    return [f"spec-{i:04d}" for i in range(count)]


@pytest.fixture
def forks(monkeypatch: pytest.MonkeyPatch) -> Iterator[list[int]]:
    """The forks made while the test runs (the compile may fork once, rendering is not run)."""
    made: list[int] = []
    real_fork = os.fork

    def counted_fork() -> int:
        pid = real_fork()
        if pid:
            made.append(pid)
        return pid

    monkeypatch.setattr(os, "fork", counted_fork)
    monkeypatch.setattr(forked, "available", lambda: True)
    # A smaller tree in smaller blocks shares the same way, in a fraction of the time.
    monkeypatch.setattr(project, "SHARED_MIN_SPECS", MIN_SPECS)
    monkeypatch.setattr(project, "SHARED_BLOCK", 4)
    yield made


def _in_one_process(tree: Path, monkeypatch: pytest.MonkeyPatch) -> tuple[object, str]:
    with monkeypatch.context() as patched:
        patched.setattr(forked, "available", lambda: False)
        model, diagnostics = compile_specs(tree)
    return model, diagnostics.render()


def test_a_large_clean_tree_gives_the_same_model_in_two_processes(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, forks: list[int]
) -> None:
    tree = _tree(tmp_path / "specs", _names())
    alone, problems = _in_one_process(tree, monkeypatch)
    assert alone is not None and problems == ""
    assert not forks
    log, marker = tmp_path / "taken", tmp_path / "marker"
    monkeypatch.setattr(project, "_checked_and_built", _logged(project._checked_and_built, log, marker))
    shared, diagnostics = compile_specs(tree)
    assert len(forks) == 1, "the tree was not shared with a child"
    assert shared == alone  # every spec, in the same order, field for field
    assert not diagnostics
    taken = [line.split() for line in log.read_text(encoding="utf-8").splitlines()]
    assert sorted(first for first, _ in taken) == sorted(_names()[:: project.SHARED_BLOCK]), "a block twice or never"
    assert {pid for _, pid in taken} - {str(os.getpid())}, "the child checked no block"


def test_a_tree_of_any_size_fits_the_queue_in_blocks_that_cover_every_spec_once(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, forks: list[int]
) -> None:
    """The queue holds at most ``forked.MAX_ITEMS`` items: a larger tree has larger blocks, not more of them
    (here 5 blocks at most for 24 specs, as 100 at most hold a tree of any size in blocks of 25 or more)."""
    assert project.SHARED_MAX_BLOCKS <= forked.MAX_ITEMS
    tree = _tree(tmp_path / "specs", _names())
    alone, _ = _in_one_process(tree, monkeypatch)
    monkeypatch.setattr(project, "SHARED_BLOCK", 1)
    monkeypatch.setattr(project, "SHARED_MAX_BLOCKS", 5)
    log, marker = tmp_path / "taken", tmp_path / "marker"
    monkeypatch.setattr(project, "_checked_and_built", _logged(project._checked_and_built, log, marker))
    shared, diagnostics = compile_specs(tree)
    assert shared == alone and not diagnostics and len(forks) == 1
    firsts = sorted(line.split()[0] for line in log.read_text(encoding="utf-8").splitlines())
    assert firsts == _names()[::5], "5 specs a block: 24 specs in 5 blocks, each once"


Block = Callable[[], "list[SLO] | None"]


def _logged(real: Callable[..., Block], log: Path, marker: Path) -> Callable[..., Block]:
    """Blocks that log their first spec and their process once done; this process waits, on its first block,
    until the child has taken one (it writes ``marker``), so the child checks a block whatever the scheduler does.
    A block the child sends back is logged once: one computed again here would be logged twice."""
    parent = os.getpid()

    def checked_and_built(documents: list[Document], *args: object) -> Block:
        inner = real(documents, *args)

        def block() -> list[SLO] | None:
            if os.getpid() != parent:
                marker.write_text("taken", encoding="utf-8")
            else:
                waited = threading.Event()
                for _ in range(2000):
                    if marker.exists() or waited.wait(0.01):
                        break
            built = inner()
            with log.open("a", encoding="utf-8") as out:
                out.write(f"{documents[0].data['name']} {os.getpid()}\n")
            return built

        return block

    return checked_and_built


@pytest.mark.parametrize(
    "broken",
    [
        pytest.param(lambda text: text.replace("target: 99.9%", "target: 199%"), id="a schema error"),
        pytest.param(lambda text: text.replace('rcode="SERVFAIL"', "rcode=SERVFAIL"), id="bad PromQL"),
        pytest.param(lambda text: text.replace("owner: team-a", "owner: team-b"), id="an unknown owner"),
    ],
)
def test_a_problem_in_any_spec_is_reported_as_one_process_reports_it(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, forks: list[int], broken: object
) -> None:
    assert callable(broken)
    tree = _tree(tmp_path / "specs", _names())
    for index in (0, MIN_SPECS - 1):  # the first block and the last: taken by either process
        spec = tree / f"spec-{index:04d}.yaml"
        spec.write_text(broken(spec.read_text(encoding="utf-8")), encoding="utf-8")
    alone, problems = _in_one_process(tree, monkeypatch)
    assert alone is None and "spec-0000.yaml:" in problems and LAST in problems
    shared, diagnostics = compile_specs(tree)
    assert len(forks) == 1, "the tree was not shared with a child"
    assert shared is None and diagnostics.render() == problems


def test_a_name_used_in_two_blocks_is_reported_as_one_process_reports_it(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, forks: list[int]
) -> None:
    names = _names()
    names[-1] = names[0]  # the first block's name again in the last block
    tree = _tree(tmp_path / "specs", names)
    alone, problems = _in_one_process(tree, monkeypatch)
    assert alone is None and "duplicate spec name 'spec-0000'" in problems
    shared, diagnostics = compile_specs(tree)
    assert len(forks) == 1
    assert shared is None and diagnostics.render() == problems


def test_a_smaller_tree_is_checked_in_this_process(tmp_path: Path, forks: list[int]) -> None:
    model, diagnostics = compile_specs(_tree(tmp_path / "specs", _names(MIN_SPECS - 1)))
    assert model is not None and not diagnostics
    assert not forks
