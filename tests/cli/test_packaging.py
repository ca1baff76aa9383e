"""The wheel works away from the repository: built, installed into a fresh venv, run from elsewhere.

Before the schemas and templates were package data, ``pip install`` succeeded and every
command then failed with an internal error looking for ``site-packages/schemas``. These tests
build the wheel once per test run (with pip's build isolation, as ``pip install .`` does;
``tests/venvs.py`` shares it with the lower-bounds test), install it with
``--no-deps --no-index`` into a venv that sees only the already-installed dependencies (see
``tests/venvs.py``), and run every command from an unrelated directory on a copy of the
library.
"""

from __future__ import annotations

import json
import re
import shutil
import subprocess
import sys
import zipfile
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from pathlib import Path

import pytest

from compiler.source.schema import SCHEMA_FILES
from tests.venvs import REPO_ROOT, TIMEOUT, Venv, built_wheel, create_venv

RunCli = Callable[[Sequence[str | Path], Path], tuple[int, str, str]]

PACKAGE = REPO_ROOT / "compiler"
GENERATED = REPO_ROOT / "generated"
SPEC = "apiserver-write-latency"
SPEC_FILE = Path("scheduling-api-latency") / f"{SPEC}.yaml"
# What setuptools prints when the packaging config is ambiguous or deprecated (BuildBackendWarning,
# SetuptoolsDeprecationWarning, ...), boxed in "!!" banners.
PACKAGING_WARNING = re.compile(r"[A-Z]\w*Warning\b|^\s*!!\s*$", re.MULTILINE)


@dataclass(frozen=True)
class Installed:
    venv: Venv
    wheel: Path
    build_log: str
    elsewhere: Path  # an unrelated working directory
    specs: Path  # a copy of slo_specs/, outside the repository


@pytest.fixture(scope="module")
def installed(tmp_path_factory: pytest.TempPathFactory) -> Installed:
    root = tmp_path_factory.mktemp("packaging")
    built = built_wheel(tmp_path_factory)
    wheel = built.path
    venv = create_venv(root / "venv", with_pip=False)
    install = subprocess.run(
        [sys.executable, "-m", "pip", "--python", str(venv.python), "install", "--no-deps", "--no-index", str(wheel)],
        capture_output=True,
        text=True,
        timeout=TIMEOUT,
        check=False,
    )
    assert install.returncode == 0, install.stdout + install.stderr
    elsewhere = root / "elsewhere"
    elsewhere.mkdir()
    specs = shutil.copytree(REPO_ROOT / "slo_specs", root / "library" / "specs")
    return Installed(venv, wheel, built.build_log, elsewhere, specs)


def cli(installed: Installed, *args: str | Path) -> subprocess.CompletedProcess[str]:
    """The venv's ``slo-compiler`` console script, run from the unrelated directory."""
    result = installed.venv.run([installed.venv.bin / "slo-compiler", *args], installed.elsewhere)
    assert "internal error" not in result.stderr, result.stderr
    return result


def test_the_wheel_holds_every_module_and_data_file_of_the_package(installed: Installed) -> None:
    shipped = {name for name in zipfile.ZipFile(installed.wheel).namelist() if name.startswith("compiler/")}
    expected = {
        path.relative_to(REPO_ROOT).as_posix()
        for path in PACKAGE.rglob("*")
        if path.is_file() and "__pycache__" not in path.parts and path.suffix != ".pyc"
    }
    assert shipped == expected
    assert {f"compiler/schemas/{name}" for name in SCHEMA_FILES} <= shipped


def test_building_the_wheel_prints_no_packaging_warnings(installed: Installed) -> None:
    assert "Building wheel for slo-compiler" in installed.build_log  # the log is the verbose one
    assert PACKAGING_WARNING.findall(installed.build_log) == []


def test_the_package_is_imported_from_the_venv_not_the_repository(installed: Installed) -> None:
    code = "import compiler, importlib.resources as r; print(compiler.__file__); print(r.files('compiler') / 'schemas')"
    result = installed.venv.run(["python", "-c", code], installed.elsewhere)
    assert result.returncode == 0, result.stderr
    module, schemas = (Path(line) for line in result.stdout.splitlines())
    assert module == installed.venv.site_packages / "compiler" / "__init__.py"
    assert schemas == installed.venv.site_packages / "compiler" / "schemas"
    assert not module.resolve().is_relative_to(REPO_ROOT)


def test_validate_explain_generate_and_check_run_from_any_directory(installed: Installed, tmp_path: Path) -> None:
    validate = cli(installed, "validate", "--specs", installed.specs)
    assert validate.returncode == 0, validate.stderr
    assert re.search(r"slo-compiler: \d+ spec\(s\) valid\n\Z", validate.stdout)
    explain = cli(installed, "explain", SPEC, "--specs", installed.specs)
    assert explain.returncode == 0, explain.stderr
    assert "ApiserverWriteLatencyErrorBudgetBurn" in explain.stdout
    out = tmp_path / "out"
    generate = cli(installed, "generate", "--specs", installed.specs, "--out", out)
    assert generate.returncode == 0, generate.stderr
    # Every target rendered, runbooks (Jinja2 templates) and Alertmanager templates included.
    written = sorted(path.relative_to(out).as_posix() for path in out.rglob("*") if path.is_file())
    committed = sorted(path.relative_to(GENERATED).as_posix() for path in GENERATED.rglob("*") if path.is_file())
    assert written == committed
    runbook = (out / "runbooks" / f"{SPEC}.md").read_text(encoding="utf-8")
    assert runbook.startswith(f"# {SPEC}\n") and "\n### ApiserverWriteLatencyErrorBudgetBurn\n" in runbook
    check = cli(installed, "check", "--specs", installed.specs, "--out", out)
    assert check.returncode == 0, check.stderr
    (out / "runbooks" / f"{SPEC}.md").write_text("edited by hand\n", encoding="utf-8")
    assert cli(installed, "check", "--specs", installed.specs, "--out", out).returncode == 1


def test_schemas_writes_byte_copies_of_the_packaged_schemas(installed: Installed, tmp_path: Path) -> None:
    result = cli(installed, "schemas", "--out", tmp_path / "vendored")
    assert result.returncode == 0, result.stderr
    assert sorted(path.name for path in (tmp_path / "vendored").iterdir()) == sorted(SCHEMA_FILES)
    for name in SCHEMA_FILES:
        assert (tmp_path / "vendored" / name).read_bytes() == (PACKAGE / "schemas" / name).read_bytes()


def test_validate_takes_a_file_or_a_directory_of_the_spec_tree(installed: Installed) -> None:
    for path in (installed.specs / SPEC_FILE, installed.specs / SPEC_FILE.parent):
        result = cli(installed, "validate", "--specs", installed.specs, path)
        assert (result.returncode, result.stderr) == (0, "")
        assert result.stdout == "slo-compiler: no problems in 1 given path(s)\n"


@pytest.mark.parametrize("name", SCHEMA_FILES)
def test_every_schema_has_a_stable_id_named_after_its_file(name: str) -> None:
    """Editors and other repositories refer to the schemas by ``$id``; it must not move with the files."""
    schema = json.loads((PACKAGE / "schemas" / name).read_text(encoding="utf-8"))
    assert schema["$id"] == f"https://slo-compiler.dev/schemas/{name}"


def test_schemas_upgrades_its_own_copies_and_leaves_other_files_alone(run_cli: RunCli, tmp_path: Path) -> None:
    vendored = tmp_path / "vendored"
    vendored.mkdir()
    older = json.loads((PACKAGE / "schemas" / "slo.schema.json").read_text(encoding="utf-8"))
    older["description"] = "an older release"
    (vendored / "slo.schema.json").write_text(json.dumps(older), encoding="utf-8")
    assert run_cli(["schemas", "--out", "vendored"], tmp_path) == (
        0,
        "slo-compiler: wrote 3 schema(s) to vendored (0 already current)\n",
        "",
    )
    assert (vendored / "slo.schema.json").read_bytes() == (PACKAGE / "schemas" / "slo.schema.json").read_bytes()
    assert run_cli(["schemas", "--out", "vendored"], tmp_path)[1].endswith("(3 already current)\n")
    (vendored / "owners.schema.json").write_text('{"$id": "https://example.com/owners.json"}\n', encoding="utf-8")
    (vendored / "project.schema.json").unlink()
    code, stdout, stderr = run_cli(["schemas", "--out", "vendored"], tmp_path)
    assert (code, stdout) == (2, "")
    assert stderr.splitlines() == [
        "slo-compiler: vendored/owners.schema.json exists and is not slo-compiler's schema; not overwritten",
        "slo-compiler: nothing written; choose another --out or move those files away",
    ]
    assert (vendored / "owners.schema.json").read_text(
        encoding="utf-8"
    ) == '{"$id": "https://example.com/owners.json"}\n'
    assert not (vendored / "project.schema.json").exists()


def test_init_then_generate_run_from_the_installed_wheel(installed: Installed, tmp_path: Path) -> None:
    """The starter is package data: `init` in an empty directory, then `generate` there, succeed."""
    repo = tmp_path / "new-repo"
    init = installed.venv.run([installed.venv.bin / "slo-compiler", "init", repo], installed.elsewhere)
    assert init.returncode == 0, init.stderr
    generate = installed.venv.run([installed.venv.bin / "slo-compiler", "generate"], repo)
    assert generate.returncode == 0, generate.stderr
    assert "wrote 24 file(s) for 3 spec(s) to generated" in generate.stdout
