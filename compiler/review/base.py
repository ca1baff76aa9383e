"""The base revision's spec tree: a git ref's copy of ``--specs``, or a directory given as is.

``diff`` compares compiled models, so it needs the base specs on disk. From git, the spec
directory of the ref is read with ``git ls-tree`` and ``git cat-file`` and written into a
temporary directory (the work tree is never touched); the default ref is the merge base with
the main branch, the revision a pull request is reviewed against.

Symbolic links are followed as ``generate`` follows them on disk, but inside the ref: a link
to ``../shared/owners.yaml`` (or to an absolute path inside the repository) is replaced by
that file's content at the ref, a link to a directory by the directory (each directory once).
A link the ref cannot resolve (outside the repository, missing at the ref, a loop) and a git
submodule are a ``BaseError``: comparing without that file would make the review wrong.

The base is history anyone could have committed to, so it is bounded before it is read: the
tree listing gives every blob's size, and a file over the spec limit (2 MiB), more than
MAX_BASE_FILES files or more than MAX_BASE_BYTES in all is an error naming the file or the
count; blobs are then read one at a time (a 300 MB blob used to be held whole, twice: 633 MB).
"""

from __future__ import annotations

import posixpath
import subprocess
from dataclasses import dataclass
from pathlib import Path

MAIN_BRANCHES = ("origin/main", "main", "origin/master", "master")
MAX_LINK_HOPS = 40  # as Linux's ELOOP
MAX_FILE_BYTES = 2 * 1024 * 1024  # source.load's limit of a spec file (review may not import source)
MAX_BASE_FILES = 10_000  # files under the base's spec directory; the library has about a hundred
MAX_BASE_BYTES = 256 * 1024 * 1024  # all of them together
_TREE, _LINK, _SUBMODULE = "040000", "120000", "160000"


class BaseError(RuntimeError):
    """The base revision cannot be read; the message says why, in one line."""


def _git(cwd: Path, *args: str, stdin: bytes | None = None) -> subprocess.CompletedProcess[bytes]:
    try:
        return subprocess.run(["git", *args], cwd=cwd, input=stdin, capture_output=True, check=False)
    except FileNotFoundError as exc:
        raise BaseError("git is not installed; pass --base-dir DIR with the base specs instead") from exc


def default_base(spec_dir: Path) -> str:
    """The merge base of HEAD with the main branch (the first of origin/main, main, ... that exists)."""
    for branch in MAIN_BRANCHES:
        found = _git(spec_dir, "merge-base", "HEAD", branch)
        if found.returncode == 0:
            return found.stdout.decode().strip()
    raise BaseError("no main branch to diff against (origin/main, main, master); pass --base REF or --base-dir DIR")


class _MissingError(BaseError):
    """A path that does not exist at the ref."""


@dataclass(frozen=True)
class _Entry:
    mode: str
    oid: str
    size: int = 0


class _Revision:
    """One commit's tree, listed once, with paths resolved through its symbolic links."""

    def __init__(self, root: Path, ref: str) -> None:
        self.root, self.ref = root, ref
        listed = _git(root, "ls-tree", "-r", "-t", "-l", "-z", "--full-tree", ref)
        if listed.returncode != 0:
            raise BaseError(f"git ls-tree {ref} failed: {listed.stderr.decode(errors='replace').strip()}")
        self.entries: dict[str, _Entry] = {"": _Entry(_TREE, "")}
        self.children: dict[str, list[str]] = {}
        for record in listed.stdout.split(b"\0"):
            if record:
                meta, _, raw_path = record.partition(b"\t")
                mode, _, oid, size = meta.decode().split()
                path = raw_path.decode("utf-8", "surrogateescape")
                self.entries[path] = _Entry(mode, oid, int(size) if size.isdigit() else 0)
                self.children.setdefault(posixpath.dirname(path), []).append(path)

    def blob(self, oid: str) -> bytes:
        """One blob's content (its size was checked against the limits from the listing)."""
        found = _git(self.root, "cat-file", "blob", oid)
        if found.returncode != 0:
            raise BaseError(f"git cat-file failed: {found.stderr.decode(errors='replace').strip()}")
        return found.stdout

    def _inside(self, target: str) -> str | None:
        """An absolute link target as a path in the repository; None when it points outside."""
        for root in {self.root.as_posix(), self.root.resolve().as_posix()}:
            if target == root or target.startswith(root.rstrip("/") + "/"):
                return target[len(root) :].strip("/")
        return None

    def resolve(self, path: str, shown: str) -> str:
        """``path`` with every symbolic link in it followed at the ref; ``shown`` names it in errors."""
        pending, current, hops = path.split("/"), "", 0
        while pending:
            part = pending.pop(0)
            if part in ("", "."):
                continue
            if part == "..":
                if not current:
                    raise BaseError(
                        f"{shown} links outside the repository at {self.ref}; pass --base-dir DIR with the base specs"
                    )
                current = posixpath.dirname(current)
                continue
            candidate = posixpath.join(current, part)
            entry = self.entries.get(candidate)
            if entry is None or (pending and entry.mode not in (_TREE, _LINK)):
                if not hops:
                    raise _MissingError(f"{shown} does not exist at {self.ref}")
                raise BaseError(f"{shown} links to {candidate}, which does not exist at {self.ref}")
            if entry.mode != _LINK:
                current = candidate
                continue
            hops += 1
            if hops > MAX_LINK_HOPS:
                raise BaseError(
                    f"{shown} links through more than {MAX_LINK_HOPS} symbolic links in a row (a loop?) at {self.ref}"
                )
            if entry.size > 4096:  # PATH_MAX: no link target is longer
                raise BaseError(f"{shown} is a symbolic link of {entry.size:,} bytes at {self.ref}")
            target = self.blob(entry.oid).decode("utf-8", "surrogateescape")
            if target.startswith("/"):
                inside = self._inside(target)
                if inside is None:
                    raise BaseError(
                        f"{shown} links to {target}, outside the repository: git does not hold "
                        f"its content at {self.ref}; pass --base-dir DIR with the base specs"
                    )
                current, target = "", inside
            pending = target.split("/") + pending
        return current


@dataclass
class _Budget:
    """What the base's spec tree may still hold: files and bytes (MAX_BASE_FILES, MAX_BASE_BYTES)."""

    ref: str
    shown: str
    files: int = 0
    bytes: int = 0

    def take(self, here: str, size: int) -> None:
        if size > MAX_FILE_BYTES:
            raise BaseError(
                f"{self.ref}:{here} is {size:,} bytes, over the {MAX_FILE_BYTES:,}-byte limit of a spec file; "
                "the base cannot be read (pass --base-dir DIR with the base specs instead)"
            )
        self.files, self.bytes = self.files + 1, self.bytes + size
        if self.files > MAX_BASE_FILES:
            raise BaseError(
                f"{self.ref}:{self.shown} holds more than {MAX_BASE_FILES:,} files, the limit of a base spec tree"
            )
        if self.bytes > MAX_BASE_BYTES:
            raise BaseError(
                f"{self.ref}:{self.shown} holds more than {MAX_BASE_BYTES // 2**20} MiB of files, the limit of a "
                "base spec tree"
            )


def _plan(
    revision: _Revision, directory: str, into: Path, shown: str, seen: set[str], budget: _Budget
) -> list[tuple[Path, str]]:
    """The files to write for the ref's ``directory`` (a resolved tree path), following links as generate
    does, each checked against the budget before any is read."""
    seen.add(directory)
    files: list[tuple[Path, str]] = []
    for path in sorted(revision.children.get(directory, [])):
        name = posixpath.basename(path)
        if name.startswith("."):
            continue  # hidden, as generate skips them
        here = f"{shown}/{name}"
        entry = revision.entries[path]
        if entry.mode == _LINK:
            path = revision.resolve(path, here)
            entry = revision.entries.get(path, _Entry(_TREE, ""))
        if entry.mode == _SUBMODULE:
            raise BaseError(f"{here} is a git submodule at {revision.ref}; pass --base-dir DIR with the base specs")
        if entry.mode == _TREE:
            if path not in seen:
                files += _plan(revision, path, into / name, here, seen, budget)
        else:
            budget.take(here, entry.size)
            files.append((into / name, entry.oid))
    return files


def _materialise(revision: _Revision, directory: str, into: Path, shown: str) -> None:
    """Write the ref's ``directory`` to ``into``: checked whole first, then read one blob at a time."""
    into.mkdir(parents=True, exist_ok=True)
    for file, oid in _plan(revision, directory, into, shown, set(), _Budget(revision.ref, shown)):
        file.parent.mkdir(parents=True, exist_ok=True)
        file.write_bytes(revision.blob(oid))


def extract(spec_dir: Path, ref: str, into: Path) -> Path:
    """Write ``ref``'s copy of ``spec_dir`` under ``into``; returns its path there (may not exist)."""
    top = _git(spec_dir, "rev-parse", "--show-toplevel")
    if top.returncode != 0:
        raise BaseError(f"{spec_dir} is not in a git repository; pass --base-dir DIR with the base specs")
    root = Path(top.stdout.decode().strip())
    relative = spec_dir.resolve().relative_to(root.resolve()).as_posix()
    if _git(root, "rev-parse", "--verify", "--quiet", f"{ref}^{{commit}}").returncode != 0:
        raise BaseError(f"unknown revision {ref!r}")
    revision = _Revision(root, f"{ref}")
    target = into / relative
    try:
        directory = revision.resolve("" if relative == "." else relative, relative)
    except _MissingError:
        return target  # the specs did not exist at the base: everything is new
    if revision.entries[directory].mode != _TREE:
        raise BaseError(f"{relative} is not a directory at {ref}")
    _materialise(revision, directory, target, relative)
    return target
