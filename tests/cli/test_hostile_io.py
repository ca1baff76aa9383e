"""Hostile and careless input to the loader: bounded work, nothing skipped silently, YAML tags, jsonnet limits.

Every run is a real CLI process with its address space capped and a timeout that kills it,
so a regression fails the test instead of eating the machine. The timeouts are generous
(the cases take a second or two when bounded); the inputs are sized so that the unbounded
behaviour would take many times longer, so the bound is proven by behaviour, not by timing.
"""

from __future__ import annotations

import ctypes
import os
import resource
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

from compiler.diagnostics import MAX_DIAGNOSTICS_PER_FILE as CAP
from compiler.diagnostics import Diagnostics, Position
from compiler.source.load import (
    JSONNET_MEMORY_MIB,
    JSONNET_TIMEOUT_SECONDS,
    MAX_DOCUMENTS_PER_FILE,
    MAX_FILE_BYTES,
    load_text,
)
from compiler.write import read_tree
from tests.conftest import VALID_SLO, make_spec_tree
from tests.support import reference_output

REPO_ROOT = Path(__file__).resolve().parents[2]
MEMORY_LIMIT = 1536 * 1024 * 1024  # the CLI's own cap; the jsonnet child has a lower one of its own
SLO = "specs/network/dns-errors.yaml"
_CAP_DAC_OVERRIDE, _CAP_DAC_READ_SEARCH, _PR_CAPBSET_DROP = 1, 2, 24


def _limited() -> None:
    resource.setrlimit(resource.RLIMIT_AS, (MEMORY_LIMIT, MEMORY_LIMIT))


def _limited_without_root_read() -> None:
    """Also drop root's power to read anything, so permission bits apply as to any user."""
    _limited()
    if os.geteuid() == 0:
        libc = ctypes.CDLL(None, use_errno=True)
        for capability in (_CAP_DAC_OVERRIDE, _CAP_DAC_READ_SEARCH):
            if libc.prctl(_PR_CAPBSET_DROP, capability, 0, 0, 0) != 0:
                raise OSError(ctypes.get_errno(), "cannot drop CAP_DAC_OVERRIDE")


def run(args: list[str], cwd: Path, timeout: float = 60, honour_permissions: bool = False) -> tuple[int, str, str]:
    """The CLI in a subprocess with its address space capped; it is killed past ``timeout``."""
    env = {**os.environ, "PYTHONPATH": str(REPO_ROOT)}
    env.pop("SLO_COMPILER_DEBUG", None)
    result = subprocess.run(
        [sys.executable, "-m", "compiler", *args],
        cwd=cwd,
        env=env,
        capture_output=True,
        text=True,
        timeout=timeout,
        preexec_fn=_limited_without_root_read if honour_permissions else _limited,
        check=False,
    )
    assert "Traceback" not in result.stderr and "internal error" not in result.stderr, result.stderr
    return result.returncode, result.stdout, result.stderr


def validate(tmp_path: Path, timeout: float = 60) -> str:
    code, _, stderr = run(["validate", "--specs", "specs"], tmp_path, timeout)
    assert code == 1, stderr
    return stderr


def generate(tmp_path: Path, **kwargs: bool) -> tuple[int, str, str]:
    return run(["generate", "--specs", "specs", "--out", "out"], tmp_path, **kwargs)


def message_at(stderr: str, where: str) -> str:
    lines = [line for line in stderr.splitlines() if line.startswith(where + ": ")]
    assert lines, f"no diagnostic at {where}:\n{stderr}"
    return lines[0][len(where) + 2 :]


@pytest.fixture
def specs(tmp_path: Path) -> Path:
    return make_spec_tree(tmp_path / "specs")


@pytest.fixture
def generated(tmp_path: Path, specs: Path) -> dict[str, bytes]:
    """The output of a first, successful generate (a copy of what a run of its own wrote, once per worker):
    what a careless second run must not delete."""
    shutil.copytree(reference_output(specs), tmp_path / "out")
    tree = read_tree(tmp_path / "out", with_manifest=True)
    assert any("dns-errors" in name for name in tree)
    return tree


# -- unbounded work ---------------------------------------------------------------------------


def test_nonterminating_jsonnet_stops_at_the_time_limit(tmp_path: Path, specs: Path) -> None:
    (specs / "forever.jsonnet").write_text("local f(x) = f(x + 1) tailstrict;\nf(0)\n", encoding="utf-8")
    stderr = validate(tmp_path, timeout=JSONNET_TIMEOUT_SECONDS + 50)
    assert message_at(stderr, "specs/forever.jsonnet:1:1") == (
        f"jsonnet evaluation exceeded {JSONNET_TIMEOUT_SECONDS} s, the limit per file; "
        "look for recursion that never ends"
    )


def test_growing_jsonnet_comprehension_stops_at_the_memory_limit(tmp_path: Path, specs: Path) -> None:
    # 60 bytes that would allocate tens of GB; the CLI itself is capped at 1.5 GB, so only a
    # child with its own, lower limit can turn this into a message instead of an abort.
    (specs / "huge.jsonnet").write_text("std.length([[x, x] for x in std.range(1, 1e10)])\n", encoding="utf-8")
    stderr = validate(tmp_path)
    assert message_at(stderr, "specs/huge.jsonnet:1:1").startswith(
        f"jsonnet evaluation exceeded {JSONNET_MEMORY_MIB} MiB, the limit per file"
    )


def test_twenty_thousand_empty_documents_are_cut_off_at_the_document_limit(tmp_path: Path, specs: Path) -> None:
    # 80 KB; one problem per document used to be de-duplicated in O(n^2): 210 s.
    (specs / "empty.yaml").write_text("---\n" * 20_000, encoding="utf-8")
    stderr = validate(tmp_path)
    assert stderr == (
        f"specs/empty.yaml:{MAX_DOCUMENTS_PER_FILE + 2}:1: file holds more than {MAX_DOCUMENTS_PER_FILE} "
        "documents, the limit per file; split it into several files\n"
        "slo-compiler: 1 problem(s); nothing written\n"
    )


def test_seventy_five_thousand_unknown_keys_are_reported_in_linear_time(tmp_path: Path, specs: Path) -> None:
    # 15,000 unknown keys took 43 s with the quadratic de-duplication; five times as many
    # would take over 15 minutes, far past the timeout.
    extra = "".join(f"zz{i}: 1\n" for i in range(15_000))
    documents = [VALID_SLO.replace("name: dns-errors", f"name: dns-errors-{n}") + extra for n in range(5)]
    (specs / "keys.yaml").write_text("---\n".join(documents), encoding="utf-8")
    stderr = validate(tmp_path, timeout=90)
    shown = [line for line in stderr.splitlines() if line.startswith("specs/keys.yaml:")]
    assert shown[0].startswith("specs/keys.yaml:26:1: unknown key 'zz0' at the top level")
    assert len(shown) == CAP + 1
    assert "74800 more problem(s) from here on not shown" in shown[-1]
    assert stderr.endswith("slo-compiler: 75000 problem(s); nothing written\n")


def test_diagnostics_are_deduplicated_and_capped_per_file() -> None:
    diagnostics = Diagnostics()
    for line in range(CAP + 50, 0, -1):  # reported out of order: the first lines are shown
        diagnostics.error(Position("a.yaml", line, 1), "bad")
        diagnostics.error(Position("a.yaml", line, 1), "bad")
    diagnostics.error(Position("b.yaml", 3, 4), "also bad")
    rendered = diagnostics.render().splitlines()
    assert len(diagnostics) == CAP + 51
    assert rendered[0] == "a.yaml:1:1: bad"
    assert rendered[CAP - 1] == f"a.yaml:{CAP}:1: bad"
    assert rendered[CAP].startswith(f"a.yaml:{CAP + 1}:1: 50 more problem(s) from here on not shown")
    assert rendered[CAP + 1 :] == ["b.yaml:3:4: also bad"]
    assert not diagnostics.accepts("a.yaml") and diagnostics.accepts("b.yaml")


# -- silent loss ------------------------------------------------------------------------------


def test_unreadable_spec_directory_is_a_positioned_error(
    tmp_path: Path, specs: Path, generated: dict[str, bytes]
) -> None:
    (specs / "network").chmod(0)
    try:
        code, stdout, stderr = generate(tmp_path, honour_permissions=True)
    finally:
        (specs / "network").chmod(0o755)
    assert (code, stdout) == (1, "")
    assert message_at(stderr, "specs/network:1:1") == (
        "cannot read directory: Permission denied; specs in it would be missed"
    )
    assert read_tree(tmp_path / "out", with_manifest=True) == generated


def test_unreadable_spec_file_is_a_positioned_error(tmp_path: Path, specs: Path, generated: dict[str, bytes]) -> None:
    (specs / SLO.removeprefix("specs/")).chmod(0)
    code, stdout, stderr = generate(tmp_path, honour_permissions=True)
    assert (code, stdout) == (1, "")
    assert message_at(stderr, f"{SLO}:1:1") == "cannot read file: Permission denied"
    assert read_tree(tmp_path / "out", with_manifest=True) == generated


@pytest.mark.parametrize("link", ["network/gone.yaml", "team-specs"])
def test_dangling_symlink_is_a_positioned_error(
    tmp_path: Path, specs: Path, generated: dict[str, bytes], link: str
) -> None:
    (specs / link).symlink_to(tmp_path / "moved-away")
    code, stdout, stderr = generate(tmp_path)
    assert (code, stdout) == (1, "")
    assert message_at(stderr, f"specs/{link}:1:1") == (
        f"broken symbolic link to {tmp_path / 'moved-away'}; fix or remove it, it may hide specs"
    )
    assert read_tree(tmp_path / "out", with_manifest=True) == generated


def test_symlinked_spec_directory_is_loaded_once(tmp_path: Path, specs: Path) -> None:
    elsewhere = tmp_path / "shared-specs"
    elsewhere.mkdir()
    (elsewhere / "two.yaml").write_text(VALID_SLO.replace("name: dns-errors", "name: dns-two"), encoding="utf-8")
    (specs / "shared").symlink_to(elsewhere)
    (specs / "loop").symlink_to(specs)  # a cycle: followed once, not forever
    code, stdout, stderr = generate(tmp_path)
    assert (code, stderr) == (0, ""), stderr
    assert "for 2 spec(s)" in stdout
    assert "prometheus/rules/dns-two.rules.yaml" in read_tree(tmp_path / "out")


# -- YAML tags --------------------------------------------------------------------------------


def test_core_yaml_tags_are_honoured() -> None:
    diagnostics = Diagnostics()
    text = (
        "a: !!str 123\nb: !!int '42'\nc: !!float 1\nd: !!bool true\ne: !!null\n"
        "f: !!seq [1]\ng: !!map {x: 1}\nh: 123\ni: no\nj: !!str\n"
    )
    [document] = load_text(text, "t.yaml", diagnostics)
    assert not diagnostics, diagnostics.render()
    assert document.data == {
        "a": "123",
        "b": 42,
        "c": 1.0,
        "d": True,
        "e": None,
        "f": [1],
        "g": {"x": 1},
        "h": 123,
        "i": "no",
        "j": "",
    }
    assert isinstance(document.data["c"], float)


def test_str_tag_makes_a_number_a_string_in_a_spec(tmp_path: Path, specs: Path) -> None:
    slo = specs / SLO.removeprefix("specs/")
    text = slo.read_text(encoding="utf-8")
    slo.write_text(text.replace("description: Cluster DNS answers without SERVFAIL.", "description: 123"), "utf-8")
    assert "description: expected a string, got a number" in message_at(validate(tmp_path), f"{SLO}:6:14")
    slo.write_text(
        text.replace("description: Cluster DNS answers without SERVFAIL.", "description: !!str 123"), "utf-8"
    )
    code, _, stderr = run(["validate", "--specs", "specs"], tmp_path)
    assert code == 0, stderr


@pytest.mark.parametrize(
    ("value", "message"),
    [
        ("!custom x", "YAML tag !custom is not supported"),
        ("!!timestamp 2024-01-01", "YAML tag !!timestamp is not supported"),
        ("!!binary aGk=", "YAML tag !!binary is not supported"),
        ("!!set {a: null}", "YAML tag !!set is not supported"),
        ("!!int abc", '"abc" is not a valid !!int'),
        ("!!bool yes", '"yes" is not a valid !!bool'),
        ("!!str [1]", "YAML tag !!str cannot be applied to a list"),
    ],
)
def test_unknown_or_misapplied_yaml_tag_is_a_positioned_error(
    tmp_path: Path, specs: Path, value: str, message: str
) -> None:
    slo = specs / SLO.removeprefix("specs/")
    text = slo.read_text(encoding="utf-8")
    slo.write_text(text.replace("description: Cluster DNS answers without SERVFAIL.", f"description: {value}"), "utf-8")
    assert message_at(validate(tmp_path), f"{SLO}:6:14").startswith(message)


# -- jsonnet has the limits of YAML files -------------------------------------------------------


def test_jsonnet_file_with_a_nul_byte_is_refused(tmp_path: Path, specs: Path) -> None:
    (specs / "binary.jsonnet").write_bytes(b"{ a: 1 }\x00\n")
    assert message_at(validate(tmp_path), "specs/binary.jsonnet:1:1") == "file contains NUL bytes; is it binary?"


def test_jsonnet_file_over_2_mb_is_refused(tmp_path: Path, specs: Path) -> None:
    (specs / "huge.jsonnet").write_text("// " + "x" * MAX_FILE_BYTES + "\n{}\n", encoding="utf-8")
    message = message_at(validate(tmp_path), "specs/huge.jsonnet:1:1")
    assert message.endswith(f"bytes; spec files are limited to {MAX_FILE_BYTES}")


def test_jsonnet_import_with_a_nul_byte_is_refused(tmp_path: Path, specs: Path) -> None:
    (specs / "lib.libsonnet").write_bytes(b"{}\x00")
    (specs / "uses.jsonnet").write_text("import 'lib.libsonnet'\n", encoding="utf-8")
    assert "import 'lib.libsonnet' contains NUL bytes" in message_at(validate(tmp_path), "specs/uses.jsonnet:1:1")


@pytest.mark.parametrize(
    ("source", "message"),
    [
        ("[{} for i in std.range(1, 1001)]", "file holds more than 1000 documents, the limit per file"),
        ("[std.range(1, 20001)]", "a document jsonnet produced has more than 20000 nodes"),
        ("std.foldl(function(acc, i) [acc], std.range(1, 70), [])", "a document jsonnet produced nests deeper than 64"),
    ],
    ids=["documents", "nodes", "depth"],
)
def test_jsonnet_output_has_the_limits_of_yaml_documents(
    tmp_path: Path, specs: Path, source: str, message: str
) -> None:
    (specs / "big.jsonnet").write_text(source + "\n", encoding="utf-8")
    assert message_at(validate(tmp_path), "specs/big.jsonnet:1:1").startswith(message)
