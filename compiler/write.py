"""Write generated files deterministically, swap them in atomically, and never destroy what is not ours.

Ownership: ``generate`` replaces only a directory that is absent, empty, or was written by
the compiler. Each run leaves a manifest (``.slo-compiler-manifest.json``: every file it
wrote, with its sha256) inside the output; a later run refuses (``OutputRefusedError``, before
touching anything) when the directory holds a file the manifest does not list. A directory
without a manifest (written before manifests existed) is adopted only when every file in it
is what this run writes or carries the compiler's ``slo-compiler`` header. The output may
not be, contain or lie inside the spec directory, nor be or contain a repository root, ``/``
or the home directory.

Concurrency: a run holds an exclusive ``flock`` on ``.<name>.lock`` beside the output, so
runs on one output directory take turns; the holder removes the lock file when it is done.

Atomicity: the output is built in ``.<name>.new-<pid>-<random>`` beside it and swapped in
with two renames (the old tree parked as ``.<name>.old-<pid>``) while every catchable signal
is blocked, so no signal can leave the output missing or partial. A file whose bytes are unchanged
is hard-linked into the build from the current output rather than written again (``_kept``: only a
file no path outside the output reaches). A run killed outright leaves its build directory behind;
the next run removes leftovers whose process is dead (restoring a parked tree if the output is
missing) and never touches those of a live process.

Signals: while a run writes, terminating signals raise ``InterruptedBySignalError`` so the build
directory is removed before the process exits; once the new tree is in place, a signal is
held until the run has finished and is then reported as arriving after the write.
"""

from __future__ import annotations

import fcntl
import hashlib
import json
import os
import re
import shutil
import signal
import stat
import sys
import tempfile
import threading
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from types import FrameType, TracebackType
from typing import Any

MANIFEST_NAME = ".slo-compiler-manifest.json"
_MANIFEST_FORMAT = "slo-compiler-manifest/1"
_MARKER = b"slo-compiler"  # every generated file names the compiler in its first few KiB
_MARKER_WINDOW = 8192  # the header of a rules file; the description of a dashboard
# Signals whose default action ends the process; they would cut a run short between writes.
_TERMINATING = ("SIGHUP", "SIGINT", "SIGQUIT", "SIGTERM", "SIGUSR1", "SIGUSR2", "SIGALRM", "SIGVTALRM", "SIGPROF")
_TERMINATING_MORE = ("SIGXCPU", "SIGIO", "SIGPWR", "SIGSTKFLT")
# Raised by the CPU for the faulting instruction: blocking them would not stop them.
_FAULTS = {signal.SIGSEGV, signal.SIGBUS, signal.SIGFPE, signal.SIGILL, signal.SIGABRT, signal.SIGTRAP, signal.SIGSYS}


class OutputRefusedError(Exception):
    """The output directory is not one the compiler may replace; nothing was touched."""


class InterruptedBySignalError(BaseException):
    """A terminating signal arrived during ``write_tree``; ``committed`` says whether the new tree was in place.

    A ``BaseException``, like ``KeyboardInterrupt``, so no ``except Exception`` swallows it.
    """

    def __init__(self, signum: int, committed: bool) -> None:
        super().__init__(signal_name(signum))
        self.signum = signum
        self.committed = committed


def signal_name(signum: int) -> str:
    """``SIGHUP`` for 1; real-time signals have no name of their own."""
    try:
        return signal.Signals(signum).name
    except ValueError:
        return f"signal {signum}"


def _safe_relative(path: str) -> Path:
    relative = Path(path)
    if relative.is_absolute() or ".." in relative.parts or not relative.parts:
        raise ValueError(f"refusing to write outside the output directory: {path!r}")
    return relative


def _inside(path: str) -> bool:
    try:
        _safe_relative(path)
    except ValueError:
        return False
    return True


def _sha256(data: bytes) -> str:
    return hashlib.sha256(data).hexdigest()


def manifest_bytes(files: dict[str, bytes]) -> bytes:
    """The manifest of ``files``: deterministic JSON, paths sorted, a sha256 per file."""
    manifest = {
        "format": _MANIFEST_FORMAT,
        "note": "Written by slo-compiler: the files it generated here. generate replaces only these.",
        "files": {name: _sha256(files[name]) for name in sorted(files)},
    }
    return (json.dumps(manifest, indent=2, sort_keys=True) + "\n").encode("utf-8")


def _read_manifest(out_dir: Path) -> dict[str, str] | None:
    """The files and hashes the last run listed; None when there is no manifest."""
    path = out_dir / MANIFEST_NAME
    if not path.is_file() or path.is_symlink():
        return None
    problem = f"{path} is not a manifest written by slo-compiler"
    try:
        manifest: Any = json.loads(path.read_bytes())
    except (OSError, ValueError) as exc:
        raise OutputRefusedError(f"{problem} ({exc}); restore it from version control or delete it") from None
    listed = manifest.get("files") if isinstance(manifest, dict) else None
    if (
        not isinstance(listed, dict)
        or manifest.get("format") != _MANIFEST_FORMAT
        or not all(isinstance(k, str) and isinstance(v, str) and _inside(k) for k, v in listed.items())
    ):
        raise OutputRefusedError(f"{problem}; restore it from version control or delete it")
    return listed


# -- where the output may go ----------------------------------------------------------------


def _repository_root(start: Path) -> Path | None:
    for directory in (start, *start.parents):
        if (directory / ".git").exists():
            return directory
    return None


def check_location(out_dir: Path, spec_dir: Path | None) -> None:
    """Refuse an output that would replace the specs, a repository, ``/`` or the home directory."""
    out = out_dir.resolve()
    reasons: list[str] = []
    if spec_dir is not None:
        specs = spec_dir.resolve()
        if out == specs or specs in out.parents:
            reasons.append(f"it is or lies inside the spec directory {specs}")
        elif out in specs.parents:
            reasons.append(f"it contains the spec directory {specs}")
    starts = [Path.cwd(), out] + ([spec_dir.resolve()] if spec_dir is not None else [])
    for root in sorted({root for root in map(_repository_root, starts) if root is not None}):
        if out == root or out in root.parents:
            reasons.append(f"it is or contains the repository root {root} (a directory with .git)")
    if out == Path(out.anchor):
        reasons.append("it is the file system root")
    try:
        home = Path.home().resolve()
    except (KeyError, RuntimeError):  # no home directory known: nothing to protect
        home = None
    if home is not None and (out == home or out in home.parents):
        reasons.append(f"it is or contains the home directory {home}")
    if reasons:
        raise OutputRefusedError("; ".join(reasons) + "; choose a directory of its own, such as generated/")


# -- what is in the output already ----------------------------------------------------------


def _entries(out_dir: Path) -> Iterator[tuple[str, bool]]:
    """Every non-directory below ``out_dir`` as (relative path, is a regular file); links are not followed."""
    pending = [out_dir]
    while pending:
        directory = pending.pop()
        try:
            with os.scandir(directory) as listing:
                entries = list(listing)
        except OSError as exc:
            raise OutputRefusedError(f"cannot read {directory}: {exc.strerror}") from None
        for entry in entries:
            path = Path(entry.path)
            if entry.is_dir(follow_symlinks=False):
                pending.append(path)
            else:
                yield path.relative_to(out_dir).as_posix(), entry.is_file(follow_symlinks=False)


def _head(path: Path) -> bytes:
    with path.open("rb") as handle:
        return handle.read(_MARKER_WINDOW)


def _adoptable(out_dir: Path, name: str, files: dict[str, bytes], suffixes: set[str]) -> bool:
    """Whether a file in an output without manifest was written by the compiler (an older run)."""
    path = out_dir / name
    if name in files and path.stat().st_size == len(files[name]) and path.read_bytes() == files[name]:
        return True
    return "".join(Path(name).suffixes) in suffixes and _MARKER in _head(path)


def _foreign_files(out_dir: Path, files: dict[str, bytes]) -> list[str]:
    """The files in ``out_dir`` that the compiler did not write, which a run must not destroy."""
    if not out_dir.exists() and not out_dir.is_symlink():
        return []
    if not out_dir.is_dir():
        raise OutputRefusedError(f"{out_dir} exists and is not a directory")
    manifest = _read_manifest(out_dir)
    suffixes = {"".join(Path(name).suffixes) for name in files}
    foreign = []
    for name, regular in sorted(_entries(out_dir)):
        if not regular:
            foreign.append(f"{name} (not a regular file)")
        elif manifest is not None:
            if name != MANIFEST_NAME and name not in manifest:
                foreign.append(name)
        elif not _adoptable(out_dir, name, files, suffixes):
            foreign.append(name)
    return foreign


def _hand_edited(out_dir: Path) -> list[str]:
    """Files the manifest lists whose content no longer matches: edits this run discards."""
    manifest = _read_manifest(out_dir) if out_dir.is_dir() else None
    edited = []
    for name, digest in sorted((manifest or {}).items()):
        path = out_dir / name
        if path.is_file() and not path.is_symlink() and _sha256(path.read_bytes()) != digest:
            edited.append(name)
    return edited


def _refuse_foreign(out_dir: Path, files: dict[str, bytes]) -> None:
    foreign = _foreign_files(out_dir, files)
    if foreign:
        shown = ", ".join(foreign[:5]) + (f" and {len(foreign) - 5} more" if len(foreign) > 5 else "")
        raise OutputRefusedError(
            f"{out_dir} holds files slo-compiler did not write: {shown}. Move them out of it (or choose another "
            "--out) and run again; generate replaces only an empty directory or one it wrote itself"
        )


# -- leftovers, lock and signals ------------------------------------------------------------


def leftover_name(out_dir: Path, kind: str, pid: int) -> str:
    """The name of a build (``new``) or parked (``old``) directory of process ``pid`` beside ``out_dir``."""
    return f".{out_dir.name}.{kind}-{pid}"


def _leftover_of(name: str, out_dir: Path) -> tuple[str, int] | None:
    match = re.fullmatch(rf"\.{re.escape(out_dir.name)}\.(new|old)-([0-9]+)(?:-[^/]*)?", name)
    return (match[1], int(match[2])) if match and int(match[2]) > 0 else None


def _alive(pid: int) -> bool:
    if pid == os.getpid():  # our own name on a leftover: a dead process had this pid before
        return False
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:
        return True
    return True


def recover(out_dir: Path) -> None:
    """Undo what runs that died left beside ``out_dir``; leftovers of live processes are not touched."""
    parent = out_dir.parent
    if not parent.is_dir():
        return
    for leftover in sorted(parent.iterdir()):
        owner = _leftover_of(leftover.name, out_dir)
        if owner is None or _alive(owner[1]):
            continue
        if owner[0] == "old" and not out_dir.exists():
            leftover.rename(out_dir)
        else:
            shutil.rmtree(leftover, ignore_errors=True)


@contextmanager
def _locked(out_dir: Path) -> Iterator[None]:
    """Hold the lock of ``out_dir``; the lock file is removed by the holder, so none is left behind."""
    lock = out_dir.parent / f".{out_dir.name}.lock"
    while True:
        fd = os.open(lock, os.O_RDWR | os.O_CREAT | os.O_CLOEXEC, 0o644)
        try:
            try:
                fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
            except BlockingIOError:
                print(f"slo-compiler: waiting for another generate to finish writing {out_dir}", file=sys.stderr)
                fcntl.flock(fd, fcntl.LOCK_EX)
            try:
                if lock.stat().st_ino == os.fstat(fd).st_ino:
                    break  # the file is still the lock, not one a previous holder removed
            except FileNotFoundError:
                pass
        except BaseException:
            os.close(fd)
            raise
        os.close(fd)
    try:
        yield
    finally:
        lock.unlink(missing_ok=True)
        os.close(fd)


class _SignalGuard:
    """Turns terminating signals into ``InterruptedBySignalError`` while a run writes, so it can clean up first."""

    def __init__(self) -> None:
        self.committed = False
        self.raised = False
        self.pending: int | None = None
        self.saved: dict[int, Any] = {}

    def __enter__(self) -> _SignalGuard:
        if threading.current_thread() is not threading.main_thread():
            return self  # handlers can only be set in the main thread; the swap is still blocked
        names = (*_TERMINATING, *_TERMINATING_MORE)
        numbers = [getattr(signal, name) for name in names if hasattr(signal, name)]
        numbers += list(range(signal.SIGRTMIN, signal.SIGRTMAX + 1))
        for number in numbers:
            current = signal.getsignal(number)
            if current in (signal.SIG_IGN, None):  # respect nohup and the like
                continue
            self.saved[number] = current
            signal.signal(number, self._handle)
        return self

    def _handle(self, signum: int, frame: FrameType | None) -> None:
        if self.committed or self.raised:
            self.pending = self.pending or signum
            return
        self.raised = True
        raise InterruptedBySignalError(signum, committed=False)

    def __exit__(self, kind: type[BaseException] | None, error: BaseException | None, tb: TracebackType | None) -> None:
        for number, handler in self.saved.items():
            signal.signal(number, handler)
        if kind is None and self.pending is not None:
            raise InterruptedBySignalError(self.pending, committed=True)


# -- reading and writing --------------------------------------------------------------------


def read_tree(out_dir: Path, with_manifest: bool = False) -> dict[str, bytes]:
    """Every file under ``out_dir`` keyed by its POSIX path relative to it (the manifest only on request)."""
    if not out_dir.is_dir():
        return {}
    tree = {
        path.relative_to(out_dir).as_posix(): path.read_bytes() for path in sorted(out_dir.rglob("*")) if path.is_file()
    }
    if not with_manifest:
        tree.pop(MANIFEST_NAME, None)
    return tree


def write_tree(files: dict[str, bytes], out_dir: Path, spec_dir: Path | None = None) -> list[str]:
    """Replace ``out_dir`` with exactly ``files`` and their manifest; returns the hand-edited files replaced.

    Raises ``OutputRefusedError`` (nothing touched) when ``out_dir`` is not the compiler's to
    replace, and ``InterruptedBySignalError`` when a signal arrived.
    """
    for name in files:
        _safe_relative(name)
    check_location(out_dir, spec_dir)
    out_dir = out_dir.resolve()
    out_dir.parent.mkdir(parents=True, exist_ok=True)
    with _SignalGuard() as guard, _locked(out_dir):
        recover(out_dir)
        _refuse_foreign(out_dir, files)
        edited = _hand_edited(out_dir)
        build = Path(tempfile.mkdtemp(prefix=leftover_name(out_dir, "new", os.getpid()) + "-", dir=out_dir.parent))
        try:
            _fill(build, files, out_dir)
            _swap(build, out_dir, guard)
        finally:
            if build.exists():
                shutil.rmtree(build, ignore_errors=True)
    return edited


def _fill(build: Path, files: dict[str, bytes], current: Path) -> None:
    """Write ``files`` into the empty ``build`` with fixed modes (not the umask's): 0755 folders, 0644 files.

    A file whose bytes the ``current`` output already holds is hard-linked from it (``_kept``) rather
    than written again: creating a file costs this machine 0.5 ms of system time, linking one 0.015 ms,
    so ``generate`` over an unchanged library no longer spends 0.2-0.5 s re-creating its 733 files, and
    an unchanged file keeps its inode and time. Each folder is made once and the modes are set on the
    paths written, not found by walking the tree again.
    """
    folders = {build}
    written = []
    for name in sorted(files):
        target = build / _safe_relative(name)
        if target.parent not in folders:
            target.parent.mkdir(parents=True, exist_ok=True)
            folders.update(_folders_between(build, target.parent))
        if not _kept(current / name, target, files[name]):
            target.write_bytes(files[name])
            written.append(target)
    (build / MANIFEST_NAME).write_bytes(manifest_bytes(files))  # last: a tree with a manifest is complete
    written.append(build / MANIFEST_NAME)
    for folder in sorted(folders):
        folder.chmod(0o755)
    for file in written:
        file.chmod(0o644)


def _kept(old: Path, target: Path, data: bytes) -> bool:
    """Hard-link ``old`` as ``target`` when it holds exactly ``data``; False (nothing made) when it cannot be.

    Only a file this run could have written itself is shared: a regular file of this user, mode 0644
    (so no ``chmod`` reaches it), with no other link (an inode reached from outside the output would
    change with it) and the same bytes. The lock keeps other runs out; a hand edit made between the
    read and the link changes the file's time, and the file is then written afresh. A file system
    without hard links, or another device, is written as before.
    """
    try:
        before = old.lstat()
        if not (
            stat.S_ISREG(before.st_mode)
            and stat.S_IMODE(before.st_mode) == 0o644
            and before.st_nlink == 1
            and before.st_uid == os.geteuid()
            and before.st_size == len(data)
            and old.read_bytes() == data
        ):
            return False
        os.link(old, target)
    except OSError:
        return False
    after = target.lstat()
    if (after.st_ino, after.st_dev, after.st_size, after.st_mtime_ns) == (
        before.st_ino,
        before.st_dev,
        before.st_size,
        before.st_mtime_ns,
    ):
        return True
    target.unlink()
    return False


def _folders_between(build: Path, folder: Path) -> list[Path]:
    """``folder`` and each folder above it up to ``build`` (a file at ``a/b/c`` made both ``a`` and ``a/b``)."""
    found = []
    while folder != build:
        found.append(folder)
        folder = folder.parent
    return found


def _swap(build: Path, out_dir: Path, guard: _SignalGuard) -> None:
    """Two renames with every catchable signal blocked: no signal can leave the output missing."""
    parked = out_dir.parent / leftover_name(out_dir, "old", os.getpid())
    previous = signal.pthread_sigmask(signal.SIG_BLOCK, signal.valid_signals() - _FAULTS)
    try:
        if out_dir.exists():
            out_dir.rename(parked)
        try:
            build.rename(out_dir)
        except OSError:
            if parked.exists():
                parked.rename(out_dir)
            raise
        guard.committed = True
    finally:
        signal.pthread_sigmask(signal.SIG_SETMASK, previous)
    shutil.rmtree(parked, ignore_errors=True)


def stale_files(files: dict[str, bytes], out_dir: Path) -> list[str]:
    """Paths whose content differs between ``files`` (with their manifest) and ``out_dir``."""
    expected = {**files, MANIFEST_NAME: manifest_bytes(files)}
    current = read_tree(out_dir, with_manifest=True)
    problems = []
    for name in sorted(set(expected) | set(current)):
        if name not in current:
            problems.append(f"missing: {name}")
        elif name not in expected:
            problems.append(f"not generated by the specs: {name}")
        elif current[name] != expected[name]:
            problems.append(f"out of date: {name}")
    return problems
