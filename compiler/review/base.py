"""The base revision's spec tree: a git ref's copy of ``--specs``, or a directory given as is.

``diff`` compares compiled models, so it needs the base specs on disk. From git, the spec
directory of the ref is extracted with ``git archive`` into a temporary directory (the
work tree is never touched); the default ref is the merge base with the main branch, the
revision a pull request is reviewed against.
"""

from __future__ import annotations

import io
import subprocess
import tarfile
from pathlib import Path

MAIN_BRANCHES = ("origin/main", "main", "origin/master", "master")


class BaseError(RuntimeError):
    """The base revision cannot be read; the message says why, in one line."""


def _git(cwd: Path, *args: str) -> subprocess.CompletedProcess[bytes]:
    try:
        return subprocess.run(["git", *args], cwd=cwd, capture_output=True, check=False)
    except FileNotFoundError as exc:
        raise BaseError("git is not installed; pass --base-dir DIR with the base specs instead") from exc


def default_base(spec_dir: Path) -> str:
    """The merge base of HEAD with the main branch (the first of origin/main, main, ... that exists)."""
    for branch in MAIN_BRANCHES:
        found = _git(spec_dir, "merge-base", "HEAD", branch)
        if found.returncode == 0:
            return found.stdout.decode().strip()
    raise BaseError("no main branch to diff against (origin/main, main, master); pass --base REF or --base-dir DIR")


def extract(spec_dir: Path, ref: str, into: Path) -> Path:
    """Write ``ref``'s copy of ``spec_dir`` under ``into``; returns its path there (may not exist)."""
    top = _git(spec_dir, "rev-parse", "--show-toplevel")
    if top.returncode != 0:
        raise BaseError(f"{spec_dir} is not in a git repository; pass --base-dir DIR with the base specs")
    root = Path(top.stdout.decode().strip())
    relative = spec_dir.resolve().relative_to(root.resolve()).as_posix()
    if _git(root, "rev-parse", "--verify", "--quiet", f"{ref}^{{commit}}").returncode != 0:
        raise BaseError(f"unknown revision {ref!r}")
    listed = _git(root, "ls-tree", "-d", "--name-only", ref, relative)
    if not listed.stdout.strip():
        return into / relative  # the specs did not exist at the base: everything is new
    archive = _git(root, "archive", "--format=tar", ref, relative)
    if archive.returncode != 0:
        raise BaseError(f"git archive {ref} {relative} failed: {archive.stderr.decode().strip()}")
    with tarfile.open(fileobj=io.BytesIO(archive.stdout)) as tar:
        tar.extractall(into, filter="data")
    return into / relative
