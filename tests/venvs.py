"""Throw-away virtualenvs for the packaging and CI tests: slo-compiler installed as a user would.

Nothing is downloaded for the runtime dependencies: a temp venv sees the packages already
installed in the venv running the tests through a ``.pth`` file naming a folder of links to
them. slo-compiler's own install there (an editable finder and its metadata), pip and
setuptools are left out of that folder, so neither the interpreter nor pip can find the
repository's copy of the compiler, and pip never sees (or uninstalls) the shared install.
"""

from __future__ import annotations

import fcntl
import os
import shutil
import subprocess
import sys
import sysconfig
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path

import pytest

REPO_ROOT = Path(__file__).resolve().parent.parent
SHARED_SITE = Path(sysconfig.get_path("purelib"))
# Entries of the shared site-packages a temp venv must not see (prefixes of their names).
HIDDEN = ("slo_compiler", "__editable__", "compiler", "pip", "setuptools", "_distutils_hack", "pkg_resources")
TIMEOUT = 300


@dataclass(frozen=True)
class Venv:
    root: Path

    @property
    def bin(self) -> Path:
        return self.root / "bin"

    @property
    def python(self) -> Path:
        return self.bin / "python"

    @property
    def site_packages(self) -> Path:
        return self.root / "lib" / f"python{sys.version_info.major}.{sys.version_info.minor}" / "site-packages"

    def env(self) -> dict[str, str]:
        """The environment of a shell with this venv activated, free of the test run's own settings."""
        env = {key: value for key, value in os.environ.items() if key not in {"PYTHONPATH", "SLO_COMPILER_DEBUG"}}
        env["PATH"] = f"{self.bin}{os.pathsep}{env.get('PATH', '')}"
        env["VIRTUAL_ENV"] = str(self.root)
        return env

    def run(self, argv: Sequence[str | Path], cwd: Path) -> subprocess.CompletedProcess[str]:
        """Run a command (found on the venv's PATH first) in ``cwd``; never raises on its exit code."""
        command = [str(arg) for arg in argv]
        executable = shutil.which(command[0], path=self.env()["PATH"]) or command[0]
        return subprocess.run(
            [executable, *command[1:]],
            cwd=cwd,
            env=self.env(),
            capture_output=True,
            text=True,
            timeout=TIMEOUT,
            check=False,
        )

    def shell(self, command: str, cwd: Path) -> subprocess.CompletedProcess[str]:
        """Run one line as a CI step would (``bash -e -c``), with this venv activated."""
        return self.run(["bash", "-e", "-c", command], cwd)


def create_venv(root: Path, *, with_pip: bool) -> Venv:
    """A fresh venv at ``root`` that can import the shared venv's dependencies but not slo-compiler."""
    flags = [] if with_pip else ["--without-pip"]
    subprocess.run([sys.executable, "-m", "venv", *flags, str(root)], check=True, timeout=TIMEOUT)
    venv = Venv(root)
    links = root / "shared-dependencies"
    links.mkdir()
    for entry in sorted(SHARED_SITE.iterdir()):
        if entry.name.startswith(HIDDEN) or entry.suffix == ".pth" or entry.name == "__pycache__":
            continue
        (links / entry.name).symlink_to(entry)
    # After the venv's own site-packages on sys.path, so what the venv installs wins.
    (venv.site_packages / "zz-shared-dependencies.pth").write_text(f"{links}\n", encoding="utf-8")
    return venv


def copy_checkout(dest: Path, *extra: str) -> Path:
    """The files a checkout needs to build the package (plus ``extra`` top-level paths), caches left out."""
    dest.mkdir(parents=True)
    ignore = shutil.ignore_patterns("__pycache__", "*.pyc", "*.egg-info")
    for name in ("pyproject.toml", "compiler", *extra):
        source = REPO_ROOT / name
        if source.is_dir():
            shutil.copytree(source, dest / name, ignore=ignore)
        else:
            shutil.copy2(source, dest / name)
    return dest


@dataclass(frozen=True)
class Wheel:
    path: Path
    build_log: str  # pip's verbose output while building it


def built_wheel(tmp_path_factory: pytest.TempPathFactory) -> Wheel:
    """The package's wheel, built from a copy of the checkout with pip's build isolation (as ``pip install .``
    builds it), once per test run: the pytest workers share it, the first to ask builds it while the
    others wait on a lock. Tests install it; none writes to it."""
    base = tmp_path_factory.getbasetemp()
    shared = base.parent if os.environ.get("PYTEST_XDIST_WORKER") else base  # a run's workers share the parent
    root = shared / "shared-wheel"
    with (shared / "shared-wheel.lock").open("w") as lock:
        fcntl.flock(lock, fcntl.LOCK_EX)
        log = root / "build.log"
        if not log.is_file():
            shutil.rmtree(root, ignore_errors=True)  # what a failed build left
            source = copy_checkout(root / "checkout")
            build = subprocess.run(
                [sys.executable, "-m", "pip", "wheel", "--no-deps", "--verbose", "-w", str(root / "dist"), str(source)],
                capture_output=True,
                text=True,
                timeout=TIMEOUT,
                check=False,
            )
            assert build.returncode == 0, build.stdout[-4000:] + build.stderr[-4000:]
            log.write_text(build.stdout + build.stderr, encoding="utf-8")
    (wheel,) = (root / "dist").glob("slo_compiler-*.whl")
    return Wheel(wheel, log.read_text(encoding="utf-8"))
