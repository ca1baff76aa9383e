"""``slo-compiler init [DIR]``: a working starter repository that validates and generates at once.

The files are package data (``compiler/starter_files/``): an owners registry with one team, the
project settings (links, scrape profile, heartbeat, foreign alerts), one small spec per family, a
GitHub Actions job and a pre-commit hook. ``init`` writes all of them or none: an existing file
(or a symbolic link on the way to one) is refused unless ``--force``, and nothing is written
outside DIR.
"""

from __future__ import annotations

import errno
import os
import stat
from importlib import resources
from pathlib import Path

from compiler.text.terminal import printable

# Where each packaged file goes, relative to DIR.
FILES: tuple[tuple[str, str], ...] = (
    ("slo_specs/owners.yaml", "owners.yaml"),
    ("slo_specs/project.yaml", "project.yaml"),
    ("slo_specs/scheduling-api-latency/apiserver-read-latency.yaml", "apiserver-read-latency.yaml"),
    ("slo_specs/watch-list-volume/apiserver-watchers.yaml", "apiserver-watchers.yaml"),
    ("slo_specs/node-network-errors/coredns-servfail.yaml", "coredns-servfail.yaml"),
    (".github/workflows/slo.yaml", "github-workflow.yaml"),
    (".pre-commit-config.yaml", "pre-commit-config.yaml"),
)

# A `generate` killed with SIGKILL leaves its build directory beside the output
# (``.generated.new-<pid>-...``); the next run removes it, but it must never be committed.
GITIGNORE_LINE = "/.generated.*-*/"
GITIGNORE_COMMENT = "# slo-compiler: build directories of a killed `slo-compiler generate` (the next run removes them)"


class StarterError(Exception):
    """Why nothing was written: ``usage`` (exit 2) or a refusal of the directory's contents (exit 1)."""

    def __init__(self, problems: list[str], *, usage: bool = False) -> None:
        super().__init__("; ".join(problems))
        self.problems = problems
        self.usage = usage


def packaged(name: str) -> bytes:
    return resources.files("compiler").joinpath("starter_files", name).read_bytes()


def _symlink_on_the_way(root: Path, relative: str) -> Path | None:
    """The first symbolic link among the components of ``relative`` under ``root`` (root itself is trusted)."""
    path = root
    for part in Path(relative).parts:
        path = path / part
        if path.is_symlink():
            return path
    return None


def refusals(root: Path, force: bool) -> list[str]:
    """Every reason not to write the starter into ``root``, all at once (empty when it may be written)."""
    problems: list[str] = []
    for relative, _ in (*FILES, (".gitignore", "")):
        link = _symlink_on_the_way(root, relative)
        if link is not None:
            problems.append(f"{link} is a symbolic link; init writes only regular files inside {root}")
            continue
        target = root / relative
        if relative == ".gitignore":
            if target.exists() and not target.is_file():
                problems.append(f"{target} is not a regular file")
            continue
        if target.exists() and (not force or not target.is_file()):
            why = "is not a regular file" if not target.is_file() else "exists"
            problems.append(f"{target} {why}; not overwritten" + ("" if force else " (run again with --force)"))
    return problems


def _write_regular(target: Path, data: bytes, *, append: bool = False) -> None:
    """Write ``target`` without following a symbolic link, nor writing through a hard link to another file."""
    target.parent.mkdir(parents=True, exist_ok=True)
    flags = os.O_WRONLY | os.O_CREAT | os.O_NOFOLLOW | os.O_CLOEXEC | (os.O_APPEND if append else 0)
    try:
        fd = os.open(target, flags, 0o644)
    except OSError as exc:
        if exc.errno == errno.ELOOP:
            raise OSError(exc.errno, "it is a symbolic link", str(target)) from exc
        raise
    with os.fdopen(fd, "wb") as handle:
        info = os.fstat(fd)
        if not stat.S_ISREG(info.st_mode) or info.st_nlink > 1:
            raise OSError(errno.EPERM, "not a regular file of its own (a hard link?); not replaced", str(target))
        if not append:
            handle.truncate(0)
        handle.write(data)


def _gitignore(root: Path) -> tuple[str, str] | None:
    """Append the leftover line to ``root/.gitignore`` unless it is there: (what was done, the path)."""
    target = root / ".gitignore"
    current = target.read_text(encoding="utf-8", errors="replace") if target.exists() else ""
    if GITIGNORE_LINE in current.splitlines():
        return None
    prefix = "" if not current or current.endswith("\n") else "\n"
    _write_regular(target, f"{prefix}{GITIGNORE_COMMENT}\n{GITIGNORE_LINE}\n".encode(), append=True)
    return ("appended to" if current else "wrote", ".gitignore")


def init(root: Path, force: bool = False) -> list[tuple[str, str]]:
    """Write the starter into ``root``: (what was done, relative path) per file, or StarterError with every refusal."""
    if root.exists() and not root.is_dir():
        raise StarterError([f"{root} is not a directory"], usage=True)
    problems = refusals(root, force)
    if problems:
        raise StarterError(problems)
    written: list[str] = []
    try:
        root.mkdir(parents=True, exist_ok=True)
        for relative, name in FILES:
            _write_regular(root / relative, packaged(name))
            written.append(relative)
        ignored = _gitignore(root)
    except OSError as exc:
        where = exc.filename or root
        raise StarterError([f"cannot write {where}: {exc.strerror or exc}"], usage=True) from exc
    return [("wrote", path) for path in written] + ([ignored] if ignored else [])


def next_steps(root: Path) -> str:
    into = "" if root == Path() else f"cd {printable(str(root))} && "
    return (
        f"next: {into}slo-compiler generate && slo-compiler test\n"
        "then replace the values marked REPLACE in slo_specs/owners.yaml and slo_specs/project.yaml"
    )
