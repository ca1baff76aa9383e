"""The base revision's spec tree: a git ref's copy of ``--specs``, or a directory given as is.

``diff`` compares compiled models, so it needs the base specs on disk. From git, the spec
directory of the ref is extracted with ``git archive`` into a temporary directory (the
work tree is never touched); the default ref is the merge base with the main branch, the
revision a pull request is reviewed against.

The base is history anyone could have committed to, so it is bounded before it is read:
``git ls-tree`` gives every file's size, and a file over the spec limit (2 MiB), more than
MAX_BASE_FILES files or more than MAX_BASE_BYTES in all is an error naming the file or the
count; the archive is then streamed and written one file at a time (a 300 MB blob used to
be held whole, twice: 633 MB).
"""

from __future__ import annotations

import contextlib
import subprocess
import tarfile
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import IO

MAIN_BRANCHES = ("origin/main", "main", "origin/master", "master")
MAX_FILE_BYTES = 2 * 1024 * 1024  # source.load's limit of a spec file (review may not import source)
MAX_BASE_FILES = 10_000  # files under the base's spec directory; the library has about a hundred
MAX_BASE_BYTES = 256 * 1024 * 1024  # all of them together


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
    _check_sizes(root, ref, relative)
    try:
        with (
            _streamed(root, "archive", "--format=tar", ref, relative) as (stdout, failed),
            tarfile.open(fileobj=stdout, mode="r|") as tar,
        ):
            for member in tar:
                if member.size > MAX_FILE_BYTES:  # the listing said otherwise: never trust one check alone
                    raise BaseError(_too_large(ref, member.name, member.size))
                tar.extract(member, into, filter="data")
    except tarfile.TarError as exc:
        raise BaseError(f"git archive {ref} {relative} gave no archive that can be read: {exc}") from exc
    if failed():
        raise BaseError(f"git archive {ref} {relative} failed: {failed()}")
    return into / relative


def _too_large(ref: str, path: str, size: int) -> str:
    return (
        f"{ref}:{path} is {size:,} bytes, over the {MAX_FILE_BYTES:,}-byte limit of a spec file; "
        "the base cannot be read (pass --base-dir DIR with the base specs instead)"
    )


def _check_sizes(root: Path, ref: str, relative: str) -> None:
    """Refuse a base whose spec directory holds a file over the spec limit, or too many files or bytes."""
    count = total = 0
    with _streamed(root, "ls-tree", "-r", "-l", "-z", ref, "--", relative) as (stdout, failed):
        for entry in _entries(stdout):
            meta, _, path = entry.partition("\t")
            size = meta.split()[-1]
            if not size.isdigit():
                continue  # a submodule has no size, and is not in the archive's files
            count, total = count + 1, total + int(size)
            if int(size) > MAX_FILE_BYTES:
                raise BaseError(_too_large(ref, path, int(size)))
            if count > MAX_BASE_FILES:
                raise BaseError(
                    f"{ref}:{relative} holds more than {MAX_BASE_FILES:,} files, the limit of a base spec tree"
                )
            if total > MAX_BASE_BYTES:
                raise BaseError(
                    f"{ref}:{relative} holds more than {MAX_BASE_BYTES // 2**20} MiB of files, the limit of a "
                    "base spec tree"
                )
    if failed():
        raise BaseError(f"git ls-tree {ref} {relative} failed: {failed()}")


def _entries(stream: IO[bytes]) -> Iterator[str]:
    """NUL-terminated entries of ``stream``, read a piece at a time."""
    pending = b""
    while piece := stream.read(65_536):
        *done, pending = (pending + piece).split(b"\0")
        yield from (entry.decode("utf-8", "surrogateescape") for entry in done if entry)
    if pending:
        yield pending.decode("utf-8", "surrogateescape")


@contextlib.contextmanager
def _streamed(cwd: Path, *args: str) -> Iterator[tuple[IO[bytes], Callable[[], str]]]:
    """git's standard output as a stream, and a function that gives its error once it ended ('' if none).
    Leaving early (an error) stops git."""
    try:
        process = subprocess.Popen(["git", *args], cwd=cwd, stdout=subprocess.PIPE, stderr=subprocess.PIPE)
    except FileNotFoundError as exc:
        raise BaseError("git is not installed; pass --base-dir DIR with the base specs instead") from exc
    assert process.stdout is not None and process.stderr is not None
    error = ""

    def failed() -> str:
        return error

    try:
        yield process.stdout, failed
        process.stdout.read()  # git may still be writing what the reader did not need
        detail = process.stderr.read(65_536).decode(errors="replace").strip()
        if process.wait() != 0:
            error = detail or f"exit {process.returncode}"
    finally:
        if process.poll() is None:
            process.kill()
        process.wait()
        process.stdout.close()
        process.stderr.close()
