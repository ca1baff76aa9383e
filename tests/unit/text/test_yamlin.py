"""Our own YAML read back with libyaml gives the documents the pure-Python safe loader gives."""

from __future__ import annotations

import math
from pathlib import Path
from typing import Any

import yaml

from compiler.text.yamlin import load_own

GOLDEN = Path(__file__).resolve().parents[2] / "golden"


def _same(left: Any, right: Any) -> bool:
    if isinstance(left, float) and isinstance(right, float) and math.isnan(left) and math.isnan(right):
        return True
    if type(left) is not type(right):
        return False
    if isinstance(left, dict):
        return left.keys() == right.keys() and all(_same(left[key], right[key]) for key in left)
    if isinstance(left, list):
        return len(left) == len(right) and all(_same(a, b) for a, b in zip(left, right, strict=True))
    return bool(left == right)


def test_every_golden_yaml_file_reads_the_same_with_both_loaders() -> None:
    files = sorted(GOLDEN.rglob("*.yaml"))
    assert len(files) >= 10, files  # rule files, generated tests, routing tests
    for path in files:
        text = path.read_text(encoding="utf-8")
        assert _same(load_own(text), yaml.safe_load(text)), path


def test_a_difference_is_seen() -> None:
    assert not _same(load_own("a: [1, 2]"), yaml.safe_load("a: [1, 3]"))
    assert not _same(load_own("a: '1'"), yaml.safe_load("a: 1"))
    assert _same(load_own("a: .nan"), yaml.safe_load("a: .nan"))
