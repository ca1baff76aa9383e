"""The command line: exit codes, help, generate/check, and the atomic, deterministic output tree."""

from __future__ import annotations

import errno
import os
import stat
import subprocess
import sys
from collections.abc import Callable, Sequence
from pathlib import Path

import pytest

from compiler import write
from compiler.write import read_tree, recover, write_tree
from tests.conftest import run_cli_subprocess

RunCli = Callable[[Sequence[str | Path], Path], tuple[int, str, str]]

RULES = "prometheus/rules/dns-errors.rules.yaml"
TESTS = "prometheus/tests/dns-errors.test.yaml"


def generate(run_cli: RunCli, cwd: Path, out: str = "out") -> dict[str, bytes]:
    code, stdout, stderr = run_cli(["generate", "--specs", "specs", "--out", out], cwd)
    assert (code, stderr) == (0, ""), stderr
    assert stdout.startswith("slo-compiler: wrote ")
    return read_tree(cwd / out)


def check(run_cli: RunCli, cwd: Path) -> tuple[int, str, str]:
    return run_cli(["check", "--specs", "specs", "--out", "out"], cwd)


def leftovers(directory: Path) -> list[str]:
    """Build, parked and lock files the runs on ``directory/out`` left behind."""
    return sorted(path.name for path in directory.iterdir() if path.name.startswith((".out.", ".generated.")))


def dead_pid() -> int:
    """The pid of a process that has exited (and been reaped)."""
    child = subprocess.Popen([sys.executable, "-c", ""])
    child.wait()
    return child.pid


# -- exit codes ---------------------------------------------------------------------------


def test_validate_valid_tree_exits_0(run_cli: RunCli, tmp_path: Path, spec_tree: Path) -> None:
    code, stdout, stderr = run_cli(["validate", "--specs", "specs"], tmp_path)
    assert (code, stderr) == (0, "")
    assert stdout.endswith("slo-compiler: 1 spec(s) valid\n")
    # The series estimate: slice by cluster (1 on the default profile) x 12 recorded series + slo_info,
    # and the parts the total's rates are recorded by (6 rcode values): the bad series are among the total's.
    assert "  dns-errors " in stdout and "  total: 19 series in 1 spec(s)" in stdout
    assert "  total: 1 raw selector(s), 0 read more than once per evaluation" in stdout


def test_explain_shows_rules_windows_series_and_routing(run_cli: RunCli, tmp_path: Path, spec_tree: Path) -> None:
    code, stdout, stderr = run_cli(["explain", "dns-errors", "--specs", "specs"], tmp_path)
    assert (code, stderr) == (0, "")
    assert "DnsErrorsErrorBudgetBurn: page, 1h/5m windows over 14.4x (error ratio over 1.44%), for 2m" in stdout
    assert "slo:sli_bad:rate5m:" in stdout
    assert "estimated series: 19 (1 slices x 12 + 6 parts series + slo_info), budget 2,000" in stdout
    assert "severity=page -> platform-network-page (pagerduty)" in stdout
    assert run_cli(["explain", "nope", "--specs", "specs"], tmp_path)[0] == 2


@pytest.mark.parametrize(
    ("args", "needle"),
    [
        (["frobnicate"], "invalid choice: 'frobnicate'"),
        (["validate", "--frobnicate"], "unrecognized arguments: --frobnicate"),
        ([], "the following arguments are required: COMMAND"),
        (["validate", "--specs", "no-such-dir"], "spec directory not found: no-such-dir"),
        (["generate", "--specs", "no-such-dir"], "spec directory not found: no-such-dir"),
        (["check", "--specs", "no-such-dir"], "spec directory not found: no-such-dir"),
    ],
)
def test_usage_errors_exit_2(run_cli: RunCli, tmp_path: Path, spec_tree: Path, args: list[str], needle: str) -> None:
    code, stdout, stderr = run_cli(args, tmp_path)
    assert code == 2
    assert stdout == ""
    assert needle in stderr
    assert "Traceback" not in stderr
    assert not (tmp_path / "generated").exists()


@pytest.mark.parametrize(
    ("command", "needles"),
    [
        ([], ["usage: slo-compiler", "validate", "generate", "check"]),
        (["validate"], ["usage: slo-compiler validate", "--specs"]),
        (["generate"], ["usage: slo-compiler generate", "--specs", "--out"]),
        (["check"], ["usage: slo-compiler check", "--specs", "--out"]),
    ],
)
def test_help(run_cli: RunCli, tmp_path: Path, command: list[str], needles: list[str]) -> None:
    code, stdout, stderr = run_cli([*command, "--help"], tmp_path)
    assert (code, stderr) == (0, "")
    for needle in needles:
        assert needle in stdout


# -- generate / check ---------------------------------------------------------------------


def test_generate_then_check_is_clean(run_cli: RunCli, tmp_path: Path, spec_tree: Path) -> None:
    files = generate(run_cli, tmp_path)
    assert {RULES, TESTS} <= set(files)
    spec_files = [name for name in files if name.startswith("prometheus/") and "/heartbeat/" not in name]
    assert all("dns-errors" in name for name in spec_files)
    assert b"dns-errors" in files[RULES]
    assert check(run_cli, tmp_path) == (0, f"slo-compiler: out is up to date ({len(files)} file(s))\n", "")


def test_check_fails_on_an_edited_file(run_cli: RunCli, tmp_path: Path, spec_tree: Path) -> None:
    generate(run_cli, tmp_path)
    rules = tmp_path / "out" / RULES
    rules.write_bytes(rules.read_bytes().replace(b"dns-errors", b"dns-errorz", 1))
    code, stdout, stderr = check(run_cli, tmp_path)
    assert (code, stdout) == (1, "")
    assert f"out: out of date: {RULES}" in stderr.splitlines()
    assert "generated output is stale" in stderr


def test_check_fails_on_an_extra_file(run_cli: RunCli, tmp_path: Path, spec_tree: Path) -> None:
    generate(run_cli, tmp_path)
    (tmp_path / "out" / "prometheus" / "notes.txt").write_text("hand-written\n", encoding="utf-8")
    code, _, stderr = check(run_cli, tmp_path)
    assert code == 1
    assert "out: not generated by the specs: prometheus/notes.txt" in stderr.splitlines()


def test_check_fails_on_a_missing_file(run_cli: RunCli, tmp_path: Path, spec_tree: Path) -> None:
    generate(run_cli, tmp_path)
    (tmp_path / "out" / RULES).unlink()
    code, _, stderr = check(run_cli, tmp_path)
    assert code == 1
    assert f"out: missing: {RULES}" in stderr.splitlines()


def test_check_fails_after_deleting_a_spec(
    run_cli: RunCli, tmp_path: Path, spec_tree: Path, slo_file: Path, valid_slo: str
) -> None:
    second = spec_tree / "network" / "dns-errors-two.yaml"
    second.write_text(valid_slo.replace("name: dns-errors\n", "name: dns-errors-two\n"), encoding="utf-8")
    files = generate(run_cli, tmp_path)
    second_files = sorted(name for name in files if "dns-errors-two" in name)
    assert "prometheus/rules/dns-errors-two.rules.yaml" in second_files
    second.unlink()
    code, _, stderr = check(run_cli, tmp_path)
    assert code == 1
    for name in second_files:
        assert f"out: not generated by the specs: {name}" in stderr.splitlines()
    assert f"out: out of date: {RULES}" not in stderr


def test_generate_is_deterministic(run_cli: RunCli, tmp_path: Path, spec_tree: Path) -> None:
    """Again, elsewhere, and in a new process: the compiler's memoised parses and texts change no byte."""
    first = generate(run_cli, tmp_path)
    again = generate(run_cli, tmp_path)
    elsewhere = generate(run_cli, tmp_path, out="out2")
    fresh = generate(run_cli_subprocess, tmp_path, out="out3")
    assert first
    assert again == first
    assert elsewhere == first
    assert fresh == first


# -- atomic writes ------------------------------------------------------------------------


def test_failed_generate_leaves_output_byte_identical(
    run_cli: RunCli, tmp_path: Path, spec_tree: Path, slo_file: Path
) -> None:
    before = generate(run_cli, tmp_path)
    assert before
    slo_file.write_text(slo_file.read_text(encoding="utf-8").replace("99.9%", "100%"), encoding="utf-8")
    code, stdout, stderr = run_cli(["generate", "--specs", "specs", "--out", "out"], tmp_path)
    assert (code, stdout) == (1, "")
    assert "nothing written" in stderr
    assert read_tree(tmp_path / "out") == before
    assert leftovers(tmp_path) == []


def test_write_tree_failure_keeps_previous_tree(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    out = tmp_path / "out"
    previous = {"a.yaml": b"old a\n", "sub/b.yaml": b"old b\n"}
    write_tree(previous, out)
    assert read_tree(out) == previous

    real_write_bytes = Path.write_bytes
    written: list[str] = []

    def failing_write_bytes(self: Path, data: bytes) -> int:
        if len(written) == 2:
            raise OSError(28, "No space left on device")
        written.append(self.name)
        return real_write_bytes(self, data)

    monkeypatch.setattr(Path, "write_bytes", failing_write_bytes)
    new = {"a.yaml": b"new a\n", "c.yaml": b"new c\n", "d.yaml": b"new d\n", "sub/b.yaml": b"new b\n"}
    with pytest.raises(OSError, match="No space left on device"):
        write_tree(new, out)
    monkeypatch.undo()

    assert written == ["a.yaml", "c.yaml"]
    assert read_tree(out) == previous
    assert leftovers(tmp_path) == []


def test_write_tree_sets_fixed_modes_whatever_the_umask(tmp_path: Path) -> None:
    """Folders 0755 and files 0644 under a umask of 077 too: the platform team deploys what CI wrote."""
    out = tmp_path / "out"
    files = {"a.yaml": b"a\n", "p/q/r/deep.yaml": b"deep\n", "p/side.yaml": b"side\n", "z/last.md": b"last\n"}
    previous = os.umask(0o077)
    try:
        write_tree(files, out)
    finally:
        os.umask(previous)
    modes = {path.relative_to(out).as_posix(): stat.S_IMODE(path.stat().st_mode) for path in out.rglob("*")}
    folders = {"p", "p/q", "p/q/r", "z"}
    assert modes == {
        **{folder: 0o755 for folder in folders},
        **{name: 0o644 for name in [*files, write.MANIFEST_NAME]},
    }
    assert stat.S_IMODE(out.stat().st_mode) == 0o755
    assert read_tree(out) == files


def _inodes(out: Path) -> dict[str, int]:
    return {path.relative_to(out).as_posix(): path.stat().st_ino for path in out.rglob("*") if path.is_file()}


def test_write_tree_keeps_an_unchanged_file_and_writes_a_changed_one(tmp_path: Path) -> None:
    out = tmp_path / "out"
    write_tree({"same.yaml": b"same\n", "sub/changed.yaml": b"old\n", "gone.yaml": b"gone\n"}, out)
    before = _inodes(out)
    files = {"same.yaml": b"same\n", "sub/changed.yaml": b"new\n", "new.yaml": b"new\n"}
    write_tree(files, out)
    after = _inodes(out)
    assert read_tree(out) == files
    assert after["same.yaml"] == before["same.yaml"]  # linked from the tree it replaced, not written again
    assert after["sub/changed.yaml"] != before["sub/changed.yaml"]
    assert {path.stat().st_nlink for path in out.rglob("*") if path.is_file()} == {1}
    assert {stat.S_IMODE(path.stat().st_mode) for path in out.rglob("*") if path.is_file()} == {0o644}
    assert leftovers(tmp_path) == []


def test_write_tree_writes_afresh_a_file_reached_from_outside_or_with_another_mode(tmp_path: Path) -> None:
    """An inode another path shares, or one whose mode was changed, is left as it is: a new file replaces it."""
    out = tmp_path / "out"
    files = {"linked.yaml": b"linked\n", "private.yaml": b"private\n"}
    write_tree(files, out)
    outside = tmp_path / "elsewhere.yaml"
    os.link(out / "linked.yaml", outside)
    (out / "private.yaml").chmod(0o600)
    private_inode = (out / "private.yaml").stat().st_ino
    write_tree(files, out)
    assert read_tree(out) == files
    assert (out / "linked.yaml").stat().st_ino != outside.stat().st_ino
    assert (out / "private.yaml").stat().st_ino != private_inode
    assert stat.S_IMODE((out / "private.yaml").stat().st_mode) == 0o644
    outside.write_bytes(b"edited outside\n")
    assert (out / "linked.yaml").read_bytes() == b"linked\n"


@pytest.mark.skipif(os.geteuid() != 0, reason="giving a file to another user needs root")
def test_write_tree_writes_afresh_a_file_of_another_user(tmp_path: Path) -> None:
    out = tmp_path / "out"
    files = {"a.yaml": b"a\n"}
    write_tree(files, out)
    os.chown(out / "a.yaml", 4242, 4242)
    write_tree(files, out)
    assert (out / "a.yaml").stat().st_uid == os.geteuid()
    assert read_tree(out) == files


def test_write_tree_writes_every_file_where_hard_links_fail(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    out = tmp_path / "out"
    files = {"a.yaml": b"a\n", "sub/b.yaml": b"b\n"}
    write_tree(files, out)
    before = _inodes(out)

    def no_links(source: object, target: object) -> None:
        raise OSError(errno.EPERM, "Operation not permitted")

    monkeypatch.setattr(os, "link", no_links)
    write_tree(files, out)
    assert read_tree(out) == files
    assert set(_inodes(out).values()).isdisjoint(before.values())


def test_write_tree_writes_afresh_a_file_edited_while_it_was_linked(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """An edit that lands between the comparison and the link changes the file's time: it is not kept."""
    out = tmp_path / "out"
    files = {"a.yaml": b"aaaa\n"}
    write_tree(files, out)
    real_link = os.link

    def edit_then_link(source: str | Path, target: str | Path) -> None:
        Path(source).write_bytes(b"EDIT\n")  # same size, in place
        os.utime(source, ns=(1, 1))
        real_link(source, target)

    monkeypatch.setattr(os, "link", edit_then_link)
    write_tree(files, out)
    assert read_tree(out) == files
    assert leftovers(tmp_path) == []


def test_recover_restores_parked_tree_when_output_is_missing(tmp_path: Path) -> None:
    out = tmp_path / "out"
    pid = dead_pid()
    parked = tmp_path / write.leftover_name(out, "old", pid)
    (parked / "prometheus").mkdir(parents=True)
    (parked / "prometheus" / "x.yaml").write_bytes(b"kept\n")
    half_built = tmp_path / (write.leftover_name(out, "new", pid) + "-abc")
    half_built.mkdir()
    (half_built / "partial.yaml").write_bytes(b"half\n")

    recover(out)

    assert read_tree(out) == {"prometheus/x.yaml": b"kept\n"}
    assert leftovers(tmp_path) == []


def test_recover_drops_parked_tree_when_output_exists(tmp_path: Path) -> None:
    out = tmp_path / "out"
    out.mkdir()
    (out / "current.yaml").write_bytes(b"current\n")
    parked = tmp_path / write.leftover_name(out, "old", dead_pid())
    parked.mkdir()
    (parked / "old.yaml").write_bytes(b"old\n")

    recover(out)

    assert read_tree(out) == {"current.yaml": b"current\n"}
    assert leftovers(tmp_path) == []
