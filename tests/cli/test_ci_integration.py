"""The manual's CI job and the shipped pre-commit hooks work as written, on a copy of the repository.

The commands come from the section "Use in CI" of docs/commands.md and from ``.pre-commit-hooks.yaml``,
never restated here, so the documentation cannot drift from what is tested: the job's
``run:`` steps run one by one in a fresh venv (``pip install .`` included) and each hook is
called the way pre-commit calls it (its ``entry``, plus the matching file names when it takes
them). Then ``validate PATH...``, which the validate hook relies on, is pinned down on small
spec trees.
"""

from __future__ import annotations

import re
import shlex
import shutil
import subprocess
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest
import yaml

from compiler.source.load import discover
from tests.docs import section
from tests.venvs import REPO_ROOT, Venv, copy_checkout, create_venv

RunCli = Callable[[Sequence[str | Path], Path], tuple[int, str, str]]

HOOKS_FILE = REPO_ROOT / ".pre-commit-hooks.yaml"
SECTION = "Use in CI"
BROKEN_SPEC = Path("slo_specs") / "node-network-errors" / "cluster-dns-servfail.yaml"
OTHER_SPEC = Path("slo_specs") / "node-network-errors" / "node-readiness.yaml"


def doc_snippets() -> list[Any]:
    """The YAML code blocks of the section "Use in CI" of docs/commands.md, parsed."""
    blocks, _ = section("commands.md", SECTION)
    return [yaml.safe_load(text) for info, text in blocks if info == "yaml"]


def job_steps() -> list[str]:
    """The ``run:`` steps of the manual's CI job, in order."""
    (workflow,) = [block for block in doc_snippets() if "jobs" in block]
    (job,) = workflow["jobs"].values()
    return [step["run"] for step in job["steps"] if "run" in step]


def compiler_steps() -> list[str]:
    """The job's steps that run the compiler (the rest install it)."""
    return [step for step in job_steps() if step.startswith("slo-compiler ")]


def doc_hook_ids() -> list[str]:
    (config,) = [block for block in doc_snippets() if "repos" in block]
    (repo,) = config["repos"]
    return [hook["id"] for hook in repo["hooks"]]


def shipped_hooks() -> dict[str, dict[str, Any]]:
    hooks: list[dict[str, Any]] = yaml.safe_load(HOOKS_FILE.read_text(encoding="utf-8"))
    return {hook["id"]: hook for hook in hooks}


def hook_argv(hook: dict[str, Any], repo: Path, files: Sequence[str] | None = None) -> list[str]:
    """What pre-commit runs for ``hook``: its entry, plus the file names it matches when it takes them.

    ``files`` defaults to every file of ``repo`` (``pre-commit run --all-files``).
    """
    argv = shlex.split(hook["entry"])
    if not hook.get("pass_filenames", True):
        return argv
    if files is None:
        files = sorted(path.relative_to(repo).as_posix() for path in repo.rglob("*") if path.is_file())
    pattern = re.compile(hook.get("files", ""))
    return argv + [name for name in files if pattern.search(name)]


@dataclass(frozen=True)
class Job:
    venv: Venv
    repo: Path
    results: list[tuple[str, subprocess.CompletedProcess[str]]]


@pytest.fixture(scope="module")
def job(tmp_path_factory: pytest.TempPathFactory) -> Job:
    """The manual's CI job, run step by step in a fresh venv on a copy of the repository."""
    root = tmp_path_factory.mktemp("ci")
    repo = copy_checkout(root / "repo", "slo_specs", "generated")
    venv = create_venv(root / "venv", with_pip=True)
    results = []
    for step in job_steps():
        results.append((step, venv.shell(step, repo)))
        if results[-1][1].returncode != 0:
            break
    return Job(venv, repo, results)


def library_copy(job: Job, tmp_path: Path) -> Path:
    """A scratch copy of the repository's specs and generated/ to break."""
    for name in ("slo_specs", "generated"):
        shutil.copytree(job.repo / name, tmp_path / name)
    return tmp_path


def break_spec(repo: Path) -> None:
    path = repo / BROKEN_SPEC
    text = path.read_text(encoding="utf-8")
    assert "\nowner: " in text
    path.write_text(text.replace("\nowner: ", "\nownr: ", 1), encoding="utf-8")


# -- the CI job ---------------------------------------------------------------------------


def test_the_ci_job_installs_the_package_and_runs_green(job: Job) -> None:
    for step, result in job.results:
        assert result.returncode == 0, f"{step}\n{result.stdout[-3000:]}\n{result.stderr[-3000:]}"
    assert [step for step, _ in job.results] == job_steps()
    assert "pip install ." in job_steps()
    assert compiler_steps() == ["slo-compiler validate", "slo-compiler check"]
    # The steps ran the installed package: a console script does not import from the working
    # directory (``-P`` makes ``python -c`` behave the same).
    where = job.venv.run(["python", "-P", "-c", "import compiler; print(compiler.__file__)"], job.repo)
    assert Path(where.stdout.strip()) == job.venv.site_packages / "compiler" / "__init__.py", where.stderr
    assert shutil.which("slo-compiler", path=job.venv.env()["PATH"]) == str(job.venv.bin / "slo-compiler")


def test_the_ci_job_fails_on_a_broken_spec_and_on_stale_output(job: Job, tmp_path: Path) -> None:
    repo = library_copy(job, tmp_path)
    validate, check = compiler_steps()
    rules = repo / "generated" / "prometheus" / "rules" / "cluster-dns-servfail.rules.yaml"
    rules.write_text(rules.read_text(encoding="utf-8") + "# edited by hand\n", encoding="utf-8")
    assert job.venv.shell(validate, repo).returncode == 0
    stale = job.venv.shell(check, repo)
    assert stale.returncode == 1
    assert "prometheus/rules/cluster-dns-servfail.rules.yaml" in stale.stderr
    break_spec(repo)
    broken = job.venv.shell(validate, repo)
    assert broken.returncode == 1
    assert re.search(rf"^{re.escape(BROKEN_SPEC.as_posix())}:\d+:1: unknown key 'ownr'", broken.stderr, re.MULTILINE)


# -- pre-commit -----------------------------------------------------------------------------


def test_the_hooks_run_the_ci_jobs_commands() -> None:
    hooks = shipped_hooks()
    assert doc_hook_ids() == list(hooks) == ["slo-compiler-validate", "slo-compiler-check"]
    assert [hook["entry"] for hook in hooks.values()] == compiler_steps()
    validate, check = hooks.values()
    assert (validate["language"], validate["pass_filenames"]) == ("python", True)
    assert (check["language"], check["pass_filenames"], check["always_run"]) == ("python", False, True)


def test_the_validate_hook_gets_every_spec_file_and_nothing_else() -> None:
    hook = shipped_hooks()["slo-compiler-validate"]
    names = sorted(path.relative_to(REPO_ROOT).as_posix() for path in REPO_ROOT.rglob("*") if path.is_file())
    passed = set(hook_argv(hook, REPO_ROOT, names)[len(shlex.split(hook["entry"])) :])
    specs = {path.relative_to(REPO_ROOT).as_posix() for path in discover(REPO_ROOT / "slo_specs")}
    assert specs <= passed
    assert all(name.startswith("slo_specs/") for name in passed)


def test_the_hooks_pass_on_the_library_and_fail_on_a_broken_spec(job: Job, tmp_path: Path) -> None:
    hooks = shipped_hooks()
    # A hook that runs exactly a step of the job (the check hook: `slo-compiler check`, no file names) ran on
    # this checkout already, in the job: its result is that step's, and the library is not compiled again.
    ran = {tuple(shlex.split(step)): result for step, result in job.results}
    for hook in hooks.values():
        argv = hook_argv(hook, job.repo)
        result = ran.get(tuple(argv)) or job.venv.run(argv, job.repo)
        assert result.returncode == 0, f"{hook['id']}\n{result.stdout[-2000:]}\n{result.stderr[-2000:]}"
    repo = library_copy(job, tmp_path)
    break_spec(repo)
    changed = [BROKEN_SPEC.as_posix(), OTHER_SPEC.as_posix()]
    validate = job.venv.run(hook_argv(hooks["slo-compiler-validate"], repo, changed), repo)
    assert validate.returncode == 1
    assert re.search(rf"^{re.escape(BROKEN_SPEC.as_posix())}:\d+:1: unknown key 'ownr'", validate.stderr, re.MULTILINE)
    untouched = job.venv.run(hook_argv(hooks["slo-compiler-validate"], repo, [OTHER_SPEC.as_posix()]), repo)
    assert untouched.returncode == 0, untouched.stderr
    check = job.venv.run(hook_argv(hooks["slo-compiler-check"], repo), repo)
    assert check.returncode == 1


# -- validate PATH... -------------------------------------------------------------------------


def add_spec(spec_tree: Path, relative: str, text: str) -> Path:
    path = spec_tree / relative
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(text, encoding="utf-8")
    return path


def test_validate_paths_reports_only_the_problems_in_those_paths(
    run_cli: RunCli, tmp_path: Path, spec_tree: Path, valid_slo: str
) -> None:
    broken = valid_slo.replace("name: dns-errors", "name: dns-latency").replace("owner:", "ownr:")
    add_spec(spec_tree, "other/dns-latency.yaml", broken)
    code, stdout, stderr = run_cli(["validate", "--specs", "specs", "specs/network/dns-errors.yaml"], tmp_path)
    assert (code, stdout) == (0, "slo-compiler: no problems in 1 given path(s)\n")
    assert stderr == "slo-compiler: note: 2 problem(s) elsewhere in specs (`slo-compiler validate` lists them)\n"
    for path in ("specs/other/dns-latency.yaml", "specs/other", "specs"):
        code, stdout, stderr = run_cli(["validate", "--specs", "specs", path], tmp_path)
        assert (code, stdout) == (1, "")
        assert stderr.splitlines() == [
            "specs/other/dns-latency.yaml:1:1: missing required field 'owner' at the top level",
            "specs/other/dns-latency.yaml:5:1: unknown key 'ownr' at the top level; did you mean 'owner'?",
            "slo-compiler: 2 problem(s) in the given path(s)",
        ]


def test_validate_paths_still_checks_across_the_whole_tree(
    run_cli: RunCli, tmp_path: Path, spec_tree: Path, valid_slo: str
) -> None:
    """A spec that duplicates another's name is wrong only next to the other: the whole tree is compiled."""
    add_spec(spec_tree, "zz/copy.yaml", valid_slo)
    code, _, stderr = run_cli(["validate", "--specs", "specs", "specs/zz/copy.yaml"], tmp_path)
    assert code == 1
    assert stderr.startswith("specs/zz/copy.yaml:3:7: duplicate spec name 'dns-errors' (first defined at ")


def test_validate_paths_outside_the_tree_or_missing_are_usage_errors(
    run_cli: RunCli, tmp_path: Path, spec_tree: Path
) -> None:
    (tmp_path / "elsewhere.yaml").write_text("kind: SLO\n", encoding="utf-8")
    code, stdout, stderr = run_cli(["validate", "--specs", "specs", "elsewhere.yaml", "specs/nope.yaml"], tmp_path)
    assert (code, stdout) == (2, "")
    assert stderr.splitlines() == [
        "slo-compiler: elsewhere.yaml is outside the spec directory specs; pass --specs DIR for the tree it is in",
        "slo-compiler: no such file or directory: specs/nope.yaml",
    ]
