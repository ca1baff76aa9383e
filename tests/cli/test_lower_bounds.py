"""The declared lower bounds work: the wheel, on the lowest Python it allows, with every runtime
dependency at its lower bound (``constraints/lower-bounds.txt``), compiles the library into
exactly ``generated/``.

pyproject.toml declares ranges (``>=LOW,<NEXT``) so slo-compiler installs next to a user's other
tools; a bound nobody installs is a guess, so this test installs them from the package index.
"""

from __future__ import annotations

import filecmp
import os
import re
import shutil
import subprocess
import sys
import tomllib
from pathlib import Path

import pytest
from packaging.requirements import Requirement
from packaging.specifiers import SpecifierSet
from packaging.utils import NormalizedName, canonicalize_name

from tests.venvs import REPO_ROOT, built_wheel

PYPROJECT = tomllib.loads((REPO_ROOT / "pyproject.toml").read_text(encoding="utf-8"))
LOWER_BOUNDS = REPO_ROOT / "constraints" / "lower-bounds.txt"
INSTALL_TIMEOUT = 900


def _pins(path: Path) -> dict[NormalizedName, str]:
    """``name==version`` lines of a constraints file, by canonical name."""
    pins: dict[NormalizedName, str] = {}
    for line in path.read_text(encoding="utf-8").splitlines():
        line = line.split("#", 1)[0].strip()
        if line:
            name, version = line.split("==")
            pins[canonicalize_name(name)] = version
    return pins


def _lowest_python() -> str:
    """The lowest ``major.minor`` that ``requires-python`` allows."""
    match = re.fullmatch(r">=\s*(\d+\.\d+)", PYPROJECT["project"]["requires-python"])
    assert match, "requires-python is expected as '>=X.Y'"
    return match.group(1)


def _find_python(version: str) -> Path | None:
    """An interpreter of exactly ``version``: this one, one on PATH, or one pyenv installed."""
    if f"{sys.version_info.major}.{sys.version_info.minor}" == version:
        return Path(sys.executable)
    candidates: list[Path] = []
    on_path = shutil.which(f"python{version}")
    if on_path:
        candidates.append(Path(on_path))
    roots = [os.environ.get("PYENV_ROOT", ""), str(Path.home() / ".pyenv")]
    pyenv = shutil.which("pyenv")
    if pyenv:
        found = subprocess.run([pyenv, "root"], capture_output=True, text=True, timeout=30, check=False)
        roots.insert(0, found.stdout.strip())
    for root in filter(None, roots):
        candidates.extend(sorted(Path(root).glob(f"versions/{version}.*/bin/python{version}"), reverse=True))
    for candidate in candidates:
        probe = subprocess.run(
            [str(candidate), "-c", "import sys, venv; print(f'{sys.version_info[0]}.{sys.version_info[1]}')"],
            capture_output=True,
            text=True,
            timeout=60,
            check=False,
        )
        if probe.returncode == 0 and probe.stdout.strip() == version:
            return candidate
    return None


def test_the_lower_bounds_file_pins_each_runtime_dependency_at_its_declared_lower_bound() -> None:
    pins = _pins(LOWER_BOUNDS)
    declared = [Requirement(text) for text in PYPROJECT["project"]["dependencies"]]
    assert sorted(pins) == sorted(canonicalize_name(req.name) for req in declared)
    for req in declared:
        lows = [spec.version for spec in req.specifier if spec.operator == ">="]
        assert len(lows) == 1, f"{req}: a range with one lower bound, '>=LOW,<NEXT'"
        assert any(spec.operator == "<" for spec in req.specifier), f"{req}: no upper bound"
        pinned = pins[canonicalize_name(req.name)]
        assert SpecifierSet(f"=={lows[0]}").contains(pinned), f"{req.name}: pinned {pinned}, bound {lows[0]}"


def test_the_dev_lock_satisfies_the_declared_ranges() -> None:
    locked = _pins(REPO_ROOT / "constraints" / "dev.txt")
    extras = PYPROJECT["project"]["optional-dependencies"]
    for text in [*PYPROJECT["project"]["dependencies"], *extras["dev"], *extras["backtest"]]:
        req = Requirement(text)
        assert req.specifier.contains(locked[canonicalize_name(req.name)]), f"constraints/dev.txt breaks {req}"


def test_the_wheel_at_the_lower_bounds_on_the_lowest_python_generates_the_library_unchanged(
    tmp_path: Path, tmp_path_factory: pytest.TempPathFactory
) -> None:
    version = _lowest_python()
    python = _find_python(version)
    if python is None:
        pytest.skip(f"no Python {version} (python{version} on PATH or under pyenv) to test the lower bounds")
    wheel = built_wheel(tmp_path_factory).path  # the one test_packaging installs: built once per run
    venv = tmp_path / "venv"
    subprocess.run([str(python), "-m", "venv", str(venv)], check=True, timeout=INSTALL_TIMEOUT)
    env = {key: value for key, value in os.environ.items() if key not in {"PYTHONPATH", "SLO_COMPILER_DEBUG"}}
    pip = [str(venv / "bin" / "python"), "-m", "pip", "--disable-pip-version-check"]
    install = subprocess.run(
        [*pip, "install", "-q", "--only-binary=:all:", "-c", str(LOWER_BOUNDS), str(wheel)],
        capture_output=True,
        text=True,
        env=env,
        timeout=INSTALL_TIMEOUT,
        check=False,
    )
    assert install.returncode == 0, install.stdout[-4000:] + install.stderr[-4000:]
    freeze = subprocess.run([*pip, "freeze"], capture_output=True, text=True, env=env, timeout=120, check=True)
    installed = {
        canonicalize_name(name): ver
        for name, ver in (line.split("==") for line in freeze.stdout.splitlines() if "==" in line)
    }
    for name, pinned in _pins(LOWER_BOUNDS).items():
        assert installed[name].lstrip("v") == pinned, f"{name}: {installed[name]} installed, {pinned} expected"
    out = tmp_path / "out"
    generate = subprocess.run(
        [str(venv / "bin" / "slo-compiler"), "generate", "--specs", str(REPO_ROOT / "slo_specs"), "--out", str(out)],
        capture_output=True,
        text=True,
        env=env,
        cwd=tmp_path,
        timeout=INSTALL_TIMEOUT,
        check=False,
    )
    assert generate.returncode == 0, generate.stderr
    assert _differences(out, REPO_ROOT / "generated") == []


def _differences(left: Path, right: Path) -> list[str]:
    """Paths under either tree that are missing from the other or differ byte for byte."""
    names = {p.relative_to(left).as_posix() for p in left.rglob("*") if p.is_file()}
    names |= {p.relative_to(right).as_posix() for p in right.rglob("*") if p.is_file()}
    return sorted(
        name
        for name in names
        if not ((left / name).is_file() and (right / name).is_file())
        or not filecmp.cmp(left / name, right / name, shallow=False)
    )
