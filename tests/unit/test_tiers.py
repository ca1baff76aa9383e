"""The fast tier stays fast: a test under tests/unit/ or tests/targets/ cannot start a tool.

tests/conftest.py refuses, in those folders, any process but Python (the spec loader runs
jsonnet in a Python child); this test is itself in the fast tier, so the refusal applies here.
"""

from __future__ import annotations

import subprocess
import sys

import pytest


def test_starting_promtool_in_the_fast_tier_fails_naming_it() -> None:
    with pytest.raises(AssertionError, match="a fast-tier test ran promtool: move it to tests/engines/"):
        subprocess.run(["promtool", "--version"], capture_output=True, check=False)


def test_python_children_are_allowed() -> None:
    result = subprocess.run([sys.executable, "-c", "print('ok')"], capture_output=True, text=True, check=True)
    assert result.stdout == "ok\n"
