"""The manual builds with ``mkdocs build --strict``: every link, anchor, nav entry and included example resolves.

The real mkdocs of the dev install runs on the repository's mkdocs.yml and docs/ (output in a temp
dir); then on a copy with one broken anchor and one with a missing example, which must fail, so a
passing build means the checks ran.
"""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
from pathlib import Path

from tests.docs import DOCS, REPO_ROOT

ENV = {**os.environ, "NO_MKDOCS_2_WARNING": "1"}


def mkdocs_build(root: Path, site: Path) -> subprocess.CompletedProcess[str]:
    """``mkdocs build --strict`` of the project at ``root`` (snippets resolve from the working directory)."""
    return subprocess.run(
        [sys.executable, "-m", "mkdocs", "build", "--strict", "--site-dir", str(site)],
        cwd=root,
        env=ENV,
        capture_output=True,
        text=True,
        timeout=300,
        check=False,
    )


def copy_manual(root: Path) -> Path:
    shutil.copy(REPO_ROOT / "mkdocs.yml", root / "mkdocs.yml")
    shutil.copytree(DOCS, root / "docs")
    return root / "docs"


def test_mkdocs_build_strict_passes(tmp_path: Path) -> None:
    result = mkdocs_build(REPO_ROOT, tmp_path / "site")
    assert result.returncode == 0, result.stdout + result.stderr
    assert "WARNING" not in result.stderr, result.stderr
    index = (tmp_path / "site" / "index.html").read_text(encoding="utf-8")
    assert "slo-compiler" in index
    reference = (tmp_path / "site" / "spec-reference" / "index.html").read_text(encoding="utf-8")
    assert "apiserver-write-latency" in reference and "--8&lt;--" not in reference  # the example is included


def test_mkdocs_build_strict_fails_on_a_broken_anchor(tmp_path: Path) -> None:
    docs = copy_manual(tmp_path)
    page = docs / "getting-started.md"
    page.write_text(page.read_text(encoding="utf-8") + "\nSee [nowhere](commands.md#no-such-heading).\n", "utf-8")
    result = mkdocs_build(tmp_path, tmp_path / "site")
    assert result.returncode != 0
    assert "no-such-heading" in result.stderr, result.stderr


def test_mkdocs_build_strict_fails_on_a_missing_example(tmp_path: Path) -> None:
    docs = copy_manual(tmp_path)
    (docs / "examples" / "spec-reference" / "apiserver-write-latency.yaml").unlink()
    result = mkdocs_build(tmp_path, tmp_path / "site")
    assert result.returncode != 0
    assert "apiserver-write-latency.yaml" in result.stderr, result.stderr
