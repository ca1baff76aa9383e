"""``generate`` never destroys what is not its own, and concurrent or interrupted runs never corrupt the output.

Each test runs the real CLI (a subprocess, killed past its timeout) on the small spec tree
of conftest.py. "Nothing touched" is asserted by comparing a snapshot of every file under
the test's directory before and after the run.
"""

from __future__ import annotations

import hashlib
import json
import os
import select
import shutil
import signal
import subprocess
import sys
import time
from collections.abc import Sequence
from pathlib import Path

import pytest

from compiler.write import MANIFEST_NAME, OutputRefusedError, check_location, leftover_name, read_tree
from tests.conftest import VALID_SLO, make_spec_tree
from tests.support import reference_output

REPO_ROOT = Path(__file__).resolve().parents[2]
RULES = "prometheus/rules/dns-errors.rules.yaml"
TIMEOUT = 120
CATCHABLE = [signal.SIGHUP, signal.SIGQUIT, signal.SIGUSR1, signal.SIGALRM]
SIGNAL_IDS = [sig.name for sig in CATCHABLE]


def _env(home: Path | None = None) -> dict[str, str]:
    env = {**os.environ, "PYTHONPATH": str(REPO_ROOT)}
    env.pop("SLO_COMPILER_DEBUG", None)
    if home is not None:
        env["HOME"] = str(home)
    return env


def run(args: Sequence[str | Path], cwd: Path, home: Path | None = None) -> tuple[int, str, str]:
    result = subprocess.run(
        [sys.executable, "-m", "compiler", *map(str, args)],
        cwd=cwd,
        env=_env(home),
        capture_output=True,
        text=True,
        timeout=TIMEOUT,
        check=False,
    )
    assert "Traceback" not in result.stderr and "internal error" not in result.stderr, result.stderr
    return result.returncode, result.stdout, result.stderr


def generate(
    cwd: Path, out: str | Path = "out", specs: str = "specs", home: Path | None = None
) -> tuple[int, str, str]:
    return run(["generate", "--specs", specs, "--out", out], cwd, home)


def snapshot(root: Path) -> dict[str, bytes | str]:
    """Every file, link and directory under ``root``: what "nothing touched" compares."""
    tree: dict[str, bytes | str] = {}
    for path in sorted(root.rglob("*")):
        name = path.relative_to(root).as_posix()
        if path.is_symlink():
            tree[name] = f"-> {path.readlink()}"
        elif path.is_dir():
            tree[name] = "dir"
        else:
            tree[name] = path.read_bytes()
    return tree


def leftovers(parent: Path, out: str = "out") -> list[str]:
    """Build, parked and lock files of runs on ``parent/out``."""
    return sorted(path.name for path in parent.iterdir() if path.name.startswith(f".{out}."))


def assert_refused(code: int, stdout: str, stderr: str, *needles: str) -> None:
    assert (code, stdout) == (2, ""), stderr
    assert stderr.startswith("slo-compiler: refusing to write to "), stderr
    for needle in needles:
        assert needle in stderr, stderr


@pytest.fixture
def specs(tmp_path: Path) -> Path:
    return make_spec_tree(tmp_path / "specs")


@pytest.fixture
def expected(specs: Path) -> dict[str, bytes]:
    """What the spec tree generates, manifest included, built by a run of its own in another directory
    (once per worker process: every test here starts from the same tree)."""
    tree = read_tree(reference_output(specs), with_manifest=True)
    assert RULES in tree and MANIFEST_NAME in tree
    return tree


# -- what generate may replace ------------------------------------------------------------------


def test_absent_output_is_created_with_a_sorted_sha256_manifest(tmp_path: Path, expected: dict[str, bytes]) -> None:
    code, stdout, stderr = generate(tmp_path)
    assert (code, stderr) == (0, "")
    assert stdout == f"slo-compiler: wrote {len(expected) - 1} file(s) for 1 spec(s) to out\n"
    tree = read_tree(tmp_path / "out", with_manifest=True)
    assert tree == expected  # byte-identical to a run elsewhere: deterministic
    manifest = json.loads(tree.pop(MANIFEST_NAME))
    assert manifest["format"] == "slo-compiler-manifest/1"
    assert manifest["files"] == {name: hashlib.sha256(data).hexdigest() for name, data in sorted(tree.items())}
    assert list(manifest["files"]) == sorted(manifest["files"])
    assert leftovers(tmp_path) == []


def test_empty_output_directory_is_accepted(tmp_path: Path, expected: dict[str, bytes]) -> None:
    (tmp_path / "out" / "empty-subdir").mkdir(parents=True)
    assert generate(tmp_path)[0] == 0
    assert read_tree(tmp_path / "out", with_manifest=True) == expected


def test_unrelated_file_in_the_output_is_refused_and_nothing_is_touched(tmp_path: Path, specs: Path) -> None:
    # Reproduction: `--out /tmp/x` deleted an unrelated file that was there.
    out = tmp_path / "x"
    (out / "photos").mkdir(parents=True)
    (out / "notes.txt").write_text("my notes\n", encoding="utf-8")
    (out / "photos" / "cat.jpg").write_bytes(b"\xff\xd8 a cat")
    before = snapshot(tmp_path)
    assert_refused(*generate(tmp_path, out), "slo-compiler did not write: notes.txt, photos/cat.jpg", "Move them out")
    assert snapshot(tmp_path) == before


def test_generate_out_dot_in_a_repository_is_refused(tmp_path: Path) -> None:
    # Reproduction: in a scratch repository `generate --specs specs --out .` deleted specs/
    # and .git/, printed `wrote 14 file(s)` and exited 0.
    repo = tmp_path / "repo"
    make_spec_tree(repo / "specs")
    subprocess.run(["git", "init", "-q", str(repo)], check=True, timeout=TIMEOUT)
    before = snapshot(tmp_path)
    code, stdout, stderr = generate(repo, ".")
    assert_refused(code, stdout, stderr, "it contains the spec directory", "it is or contains the repository root")
    assert "wrote" not in stdout
    assert snapshot(tmp_path) == before


def test_output_written_by_the_compiler_is_replaced(tmp_path: Path, specs: Path, expected: dict[str, bytes]) -> None:
    second = specs / "network" / "dns-two.yaml"
    second.write_text(VALID_SLO.replace("name: dns-errors", "name: dns-two"), encoding="utf-8")
    assert generate(tmp_path)[0] == 0
    assert "prometheus/rules/dns-two.rules.yaml" in read_tree(tmp_path / "out")
    second.unlink()  # its files are listed in the manifest: the compiler's to remove
    code, _, stderr = generate(tmp_path)
    assert (code, stderr) == (0, "")
    assert read_tree(tmp_path / "out", with_manifest=True) == expected
    assert leftovers(tmp_path) == []


def test_file_the_manifest_does_not_list_is_never_deleted(tmp_path: Path, specs: Path) -> None:
    assert generate(tmp_path)[0] == 0
    custom = tmp_path / "out" / "prometheus" / "rules" / "team-custom.rules.yaml"
    custom.write_text("groups: []\n", encoding="utf-8")
    before = snapshot(tmp_path)
    assert_refused(*generate(tmp_path), "did not write: prometheus/rules/team-custom.rules.yaml")
    assert snapshot(tmp_path) == before
    # check agrees: the same file makes the output stale.
    code, _, stderr = run(["check", "--specs", "specs", "--out", "out"], tmp_path)
    assert code == 1
    assert "out: not generated by the specs: prometheus/rules/team-custom.rules.yaml" in stderr.splitlines()


def test_hand_edited_generated_file_is_replaced_and_named(
    tmp_path: Path, specs: Path, expected: dict[str, bytes]
) -> None:
    assert generate(tmp_path)[0] == 0
    (tmp_path / "out" / RULES).write_text("edited by hand\n", encoding="utf-8")
    code, stdout, stderr = generate(tmp_path)
    assert (code, stderr) == (0, "")
    assert stdout.splitlines()[1] == f"slo-compiler: replaced 1 hand-edited file(s): {RULES}"
    assert read_tree(tmp_path / "out", with_manifest=True) == expected


def test_output_without_manifest_is_adopted_when_every_file_is_the_compilers(
    tmp_path: Path, specs: Path, expected: dict[str, bytes]
) -> None:
    # The state of a generated/ written before manifests: current files, a stale one, and
    # the output of a spec deleted since (all with the compiler's header).
    out = tmp_path / "out"
    assert generate(tmp_path)[0] == 0
    (out / MANIFEST_NAME).unlink()
    rules = (out / RULES).read_text(encoding="utf-8")
    (out / RULES).write_text(rules.replace("for: 10m", "for: 5m"), encoding="utf-8")
    (out / "prometheus" / "rules" / "old-spec.rules.yaml").write_text(rules.replace("dns-errors", "old-spec"), "utf-8")
    code, _, stderr = generate(tmp_path)
    assert (code, stderr) == (0, "")
    assert read_tree(out, with_manifest=True) == expected


def test_output_without_manifest_holding_a_foreign_file_is_refused(tmp_path: Path, specs: Path) -> None:
    assert generate(tmp_path)[0] == 0
    (tmp_path / "out" / MANIFEST_NAME).unlink()
    (tmp_path / "out" / "prometheus" / "rules" / "team-custom.rules.yaml").write_text("groups: []\n", "utf-8")
    before = snapshot(tmp_path)
    assert_refused(*generate(tmp_path), "did not write: prometheus/rules/team-custom.rules.yaml")
    assert snapshot(tmp_path) == before


def test_symbolic_link_in_the_output_is_refused(tmp_path: Path, specs: Path) -> None:
    assert generate(tmp_path)[0] == 0
    (tmp_path / "precious.txt").write_text("keep me\n", encoding="utf-8")
    (tmp_path / "out" / "link.txt").symlink_to(tmp_path / "precious.txt")
    before = snapshot(tmp_path)
    assert_refused(*generate(tmp_path), "link.txt (not a regular file)")
    assert snapshot(tmp_path) == before


@pytest.mark.parametrize("content", [b"not json", b'{"format": "other", "files": {}}', b"[]"])
def test_manifest_not_written_by_the_compiler_is_refused(tmp_path: Path, specs: Path, content: bytes) -> None:
    assert generate(tmp_path)[0] == 0
    (tmp_path / "out" / MANIFEST_NAME).write_bytes(content)
    before = snapshot(tmp_path)
    assert_refused(*generate(tmp_path), "is not a manifest written by slo-compiler")
    assert snapshot(tmp_path) == before


def test_output_that_is_a_file_is_refused(tmp_path: Path, specs: Path) -> None:
    (tmp_path / "out").write_text("a file\n", encoding="utf-8")
    before = snapshot(tmp_path)
    assert_refused(*generate(tmp_path), "exists and is not a directory")
    assert snapshot(tmp_path) == before


def test_check_treats_a_missing_or_wrong_manifest_as_stale(tmp_path: Path, specs: Path) -> None:
    assert generate(tmp_path)[0] == 0
    manifest = tmp_path / "out" / MANIFEST_NAME
    check = ["check", "--specs", "specs", "--out", "out"]
    assert run(check, tmp_path)[0] == 0
    manifest.write_bytes(manifest.read_bytes().replace(b'"', b"'", 1))
    code, _, stderr = run(check, tmp_path)
    assert code == 1 and f"out: out of date: {MANIFEST_NAME}" in stderr.splitlines()
    manifest.unlink()
    code, _, stderr = run(check, tmp_path)
    assert code == 1 and f"out: missing: {MANIFEST_NAME}" in stderr.splitlines()


# -- where the output may go ----------------------------------------------------------------------


@pytest.mark.parametrize(
    ("out", "reason"),
    [
        ("specs", "it is or lies inside the spec directory"),
        ("specs/generated", "it is or lies inside the spec directory"),
        ("specs/..", "it contains the spec directory"),
        (".", "it is or contains the repository root"),
        ("..", "it is or contains the repository root"),
        ("../home", "it is or contains the home directory"),
        ("../home/..", "it is or contains the home directory"),
    ],
)
def test_output_in_a_protected_place_is_refused(tmp_path: Path, out: str, reason: str) -> None:
    repo = tmp_path / "repo"
    make_spec_tree(repo / "specs")
    (repo / ".git").mkdir()
    (tmp_path / "home").mkdir()
    before = snapshot(tmp_path)
    code, stdout, stderr = generate(repo, out, home=tmp_path / "home")
    assert_refused(code, stdout, stderr, reason)
    assert snapshot(tmp_path) == before


def test_file_system_root_is_refused() -> None:
    with pytest.raises(OutputRefusedError, match="it is the file system root"):
        check_location(Path("/"), None)


def test_generated_inside_a_repository_is_accepted(tmp_path: Path) -> None:
    repo = tmp_path / "repo"
    make_spec_tree(repo / "specs")
    (repo / ".git").mkdir()
    code, _, stderr = generate(repo, "generated")
    assert (code, stderr) == (0, "")


# -- concurrent runs ------------------------------------------------------------------------------


def _start(cwd: Path, out: str = "out") -> subprocess.Popen[str]:
    return subprocess.Popen(
        [sys.executable, "-m", "compiler", "generate", "--specs", "specs", "--out", out],
        cwd=cwd,
        env=_env(),
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
    )


def test_twenty_concurrent_pairs_on_one_output_take_turns(
    tmp_path: Path, specs: Path, expected: dict[str, bytes]
) -> None:
    # Before the lock, 4 of 40 pairs had one run crash: its build directory was deleted by
    # the other run's recovery.
    waited = 0
    for _ in range(20):
        pair = [_start(tmp_path), _start(tmp_path)]
        for process in pair:
            stdout, stderr = process.communicate(timeout=TIMEOUT)
            assert process.returncode == 0, stderr
            assert stdout.startswith("slo-compiler: wrote ")
            assert stderr in ("", f"slo-compiler: waiting for another generate to finish writing {tmp_path / 'out'}\n")
            waited += bool(stderr)
        assert read_tree(tmp_path / "out", with_manifest=True) == expected
        assert leftovers(tmp_path) == []
    print(f"{waited} of 40 runs waited for the lock")


def test_recovery_never_touches_a_live_runs_leftovers(tmp_path: Path, specs: Path, expected: dict[str, bytes]) -> None:
    live = subprocess.Popen([sys.executable, "-c", "import time; time.sleep(300)"])
    try:
        dead = subprocess.Popen([sys.executable, "-c", ""])
        dead.wait(timeout=TIMEOUT)
        out = tmp_path / "out"
        for pid in (live.pid, dead.pid):
            (tmp_path / (leftover_name(out, "new", pid) + "-abc")).mkdir()
            (tmp_path / leftover_name(out, "old", pid)).mkdir()
        sibling = tmp_path / (leftover_name(tmp_path / "out2", "new", dead.pid) + "-abc")
        sibling.mkdir()  # another output's leftovers are that output's business
        assert generate(tmp_path)[0] == 0
        live_leftovers = [leftover_name(out, "new", live.pid) + "-abc", leftover_name(out, "old", live.pid)]
        assert leftovers(tmp_path) == sorted(live_leftovers)
        assert sibling.is_dir()
        assert read_tree(out, with_manifest=True) == expected
    finally:
        live.kill()
        live.wait(timeout=TIMEOUT)
    assert generate(tmp_path)[0] == 0  # its process is gone now: its leftovers may go too
    assert leftovers(tmp_path) == []


# -- signals --------------------------------------------------------------------------------------

# The CLI with one file operation slowed down, so a signal can be sent at a chosen moment: the
# hook prints a line once the operation happened, then waits {pause} s or until a file named
# "release" appears in its working directory.
_HOOKED_CLI = """
import sys, time
from pathlib import Path
real = Path.{method}
fired = []
def hooked(self, *args):
    result = real(self, *args)
    if not fired and {condition}:
        fired.append(True)
        print("hooked", flush=True)
        until = time.monotonic() + {pause}
        while time.monotonic() < until and not Path("release").exists():
            time.sleep(0.01)
    return result
Path.{method} = hooked
from compiler.cli import main
sys.exit(main(sys.argv[1:]))
"""
_MID_SWAP = {"method": "rename", "condition": 'self.name == "out" and Path(args[0]).name.startswith(".out.old-")'}
_MID_BUILD = {"method": "write_bytes", "condition": '".out.new-" in str(self)'}


def _hooked_generate(cwd: Path, hook: dict[str, str], specs: str, pause: float = 1.5) -> subprocess.Popen[str]:
    script = _HOOKED_CLI.format(pause=pause, **hook)
    process = subprocess.Popen(
        [sys.executable, "-c", script, "generate", "--specs", specs, "--out", "out"],
        cwd=cwd,
        env=_env(),
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
    )
    assert process.stdout is not None
    ready, _, _ = select.select([process.stdout], [], [], TIMEOUT)
    assert ready and process.stdout.readline() == "hooked\n", "the hook never ran"
    return process


@pytest.fixture
def old_and_new(tmp_path: Path, specs: Path, expected: dict[str, bytes]) -> tuple[dict[str, bytes], dict[str, bytes]]:
    """``out`` holds the output of ``specs``; ``new-specs`` adds a second spec. Returns both trees."""
    new = make_spec_tree(tmp_path / "new-specs")
    (new / "network" / "dns-two.yaml").write_text(VALID_SLO.replace("name: dns-errors", "name: dns-two"), "utf-8")
    shutil.copytree(reference_output(specs), tmp_path / "out")  # what `generate` wrote there, byte for byte
    assert read_tree(tmp_path / "out", with_manifest=True) == expected
    return expected, read_tree(reference_output(new), with_manifest=True)


def test_a_run_waits_for_the_lock_of_a_slow_run(
    tmp_path: Path, old_and_new: tuple[dict[str, bytes], dict[str, bytes]]
) -> None:
    slow = _hooked_generate(tmp_path, _MID_BUILD, "new-specs", pause=TIMEOUT)  # holds the lock, mid-build
    quick = _start(tmp_path)
    assert quick.stderr is not None
    ready, _, _ = select.select([quick.stderr], [], [], TIMEOUT)
    waiting = quick.stderr.readline() if ready else ""
    (tmp_path / "release").touch()  # whatever happened, let the slow run finish
    assert waiting == f"slo-compiler: waiting for another generate to finish writing {tmp_path / 'out'}\n"
    _, quick_stderr = quick.communicate(timeout=TIMEOUT)
    _, slow_stderr = slow.communicate(timeout=TIMEOUT)
    assert (slow.returncode, slow_stderr) == (0, "")
    assert (quick.returncode, quick_stderr) == (0, "")
    assert read_tree(tmp_path / "out", with_manifest=True) == old_and_new[0]  # the run that waited wrote last
    assert leftovers(tmp_path) == []


@pytest.mark.parametrize("sig", CATCHABLE, ids=SIGNAL_IDS)
def test_signal_during_the_swap_is_held_until_the_new_output_is_in_place(
    tmp_path: Path, old_and_new: tuple[dict[str, bytes], dict[str, bytes]], sig: signal.Signals
) -> None:
    process = _hooked_generate(tmp_path, _MID_SWAP, "new-specs")  # between the two renames now
    process.send_signal(sig)
    _, stderr = process.communicate(timeout=TIMEOUT)
    assert process.returncode == 128 + sig, stderr
    assert f"slo-compiler: {sig.name} received after the new output was written to out" in stderr
    assert read_tree(tmp_path / "out", with_manifest=True) == old_and_new[1]
    assert leftovers(tmp_path) == []


@pytest.mark.parametrize("sig", CATCHABLE, ids=SIGNAL_IDS)
def test_signal_while_building_leaves_the_old_output_and_no_temp_dirs(
    tmp_path: Path, old_and_new: tuple[dict[str, bytes], dict[str, bytes]], sig: signal.Signals
) -> None:
    process = _hooked_generate(tmp_path, _MID_BUILD, "new-specs")  # one file of the build written
    process.send_signal(sig)
    _, stderr = process.communicate(timeout=TIMEOUT)
    assert process.returncode == 128 + sig, stderr
    assert f"slo-compiler: interrupted by {sig.name}; out left as it was" in stderr
    assert read_tree(tmp_path / "out", with_manifest=True) == old_and_new[0]
    assert leftovers(tmp_path) == []


@pytest.mark.parametrize("sig", CATCHABLE, ids=SIGNAL_IDS)
@pytest.mark.parametrize("delay", [0.1, 0.5, 0.9, 1.3])
def test_signal_at_any_moment_leaves_a_complete_output_and_no_temp_dirs(
    tmp_path: Path, old_and_new: tuple[dict[str, bytes], dict[str, bytes]], sig: signal.Signals, delay: float
) -> None:
    process = subprocess.Popen(
        [sys.executable, "-m", "compiler", "generate", "--specs", "new-specs", "--out", "out"],
        cwd=tmp_path,
        env=_env(),
        stdout=subprocess.DEVNULL,
        stderr=subprocess.DEVNULL,
    )
    time.sleep(delay)
    process.send_signal(sig)
    process.wait(timeout=TIMEOUT)
    assert read_tree(tmp_path / "out", with_manifest=True) in old_and_new, "partial or missing output"
    assert leftovers(tmp_path) == []
