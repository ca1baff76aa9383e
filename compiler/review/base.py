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
"""

from __future__ import annotations

import posixpath
import subprocess
from dataclasses import dataclass
from pathlib import Path

MAIN_BRANCHES = ("origin/main", "main", "origin/master", "master")
MAX_LINK_HOPS = 40  # as Linux's ELOOP
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


class _Revision:
    """One commit's tree, listed once, with paths resolved through its symbolic links."""

    def __init__(self, root: Path, ref: str) -> None:
        self.root, self.ref = root, ref
        listed = _git(root, "ls-tree", "-r", "-t", "-z", "--full-tree", ref)
        if listed.returncode != 0:
            raise BaseError(f"git ls-tree {ref} failed: {listed.stderr.decode(errors='replace').strip()}")
        self.entries: dict[str, _Entry] = {"": _Entry(_TREE, "")}
        self.children: dict[str, list[str]] = {}
        for record in listed.stdout.split(b"\0"):
            if record:
                meta, _, raw_path = record.partition(b"\t")
                mode, _, oid = meta.decode().split(" ")
                path = raw_path.decode("utf-8", "surrogateescape")
                self.entries[path] = _Entry(mode, oid)
                self.children.setdefault(posixpath.dirname(path), []).append(path)

    def blobs(self, oids: list[str]) -> dict[str, bytes]:
        """The contents of these blobs, read in one ``git cat-file --batch``."""
        if not oids:
            return {}
        found = _git(self.root, "cat-file", "--batch", stdin="".join(f"{oid}\n" for oid in oids).encode())
        if found.returncode != 0:
            raise BaseError(f"git cat-file failed: {found.stderr.decode(errors='replace').strip()}")
        contents, data, at = {}, found.stdout, 0
        for oid in oids:
            header_end = data.index(b"\n", at)
            size = int(data[at:header_end].split(b" ")[2])
            contents[oid] = data[header_end + 1 : header_end + 1 + size]
            at = header_end + 1 + size + 1
        return contents

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
            target = self.blobs([entry.oid])[entry.oid].decode("utf-8", "surrogateescape")
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


def _materialise(revision: _Revision, directory: str, into: Path, shown: str, seen: set[str]) -> None:
    """Write the ref's ``directory`` (a resolved tree path) to ``into``, following links as generate does."""
    seen.add(directory)
    into.mkdir(parents=True, exist_ok=True)
    files: dict[Path, str] = {}
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
                _materialise(revision, path, into / name, here, seen)
        else:
            files[into / name] = entry.oid
    contents = revision.blobs(sorted(set(files.values())))
    for file, oid in files.items():
        file.write_bytes(contents[oid])


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
    _materialise(revision, directory, target, relative, set())
    return target
