"""``source.edit``: a value replaced at the position the loader kept; every other byte of the file stays."""

from __future__ import annotations

import pytest

from compiler.diagnostics import Diagnostics
from compiler.source.edit import EditError, replace_values
from compiler.source.load import load_text

BLOCK = """\
# a comment that stays
normal_range:
  max: 100    # a guess
  relative: {offset: 1h, max_factor: 1.5, floor: 8}
persistence:
  for: 10m
"""


def edit(text: str, edits: dict[tuple[str | int, ...], str]) -> str:
    document = load_text(text, "spec.yaml", Diagnostics())[0]
    return replace_values(text, document, edits)


def test_only_the_values_text_changes() -> None:
    edited = edit(BLOCK, {("normal_range", "max"): "110", ("persistence", "for"): "20m"})
    assert edited == BLOCK.replace("max: 100 ", "max: 110 ").replace("for: 10m", "for: 20m")


def test_values_inside_flow_mappings_and_crlf_files() -> None:
    edited = edit(BLOCK, {("normal_range", "relative", "max_factor"): "1.8"})
    assert "relative: {offset: 1h, max_factor: 1.8, floor: 8}" in edited
    crlf = BLOCK.replace("\n", "\r\n")
    assert edit(crlf, {("persistence", "for"): "5m"}) == crlf.replace("for: 10m", "for: 5m")


def test_refuses_what_it_cannot_edit_in_place() -> None:
    quoted = BLOCK.replace("max: 100", 'max: "100"')
    with pytest.raises(EditError) as caught:
        edit(quoted, {("normal_range", "max"): "110"})
    assert (str(caught.value.position), caught.value.message) == (
        "spec.yaml:3:8",
        "normal_range.max is not a plain value written here; edit it by hand",
    )
    with pytest.raises(EditError, match=r"normal_range\.min is not written in this file"):
        edit(BLOCK, {("normal_range", "min"): "1"})
    with pytest.raises(EditError, match="is not a plain value"):
        edit(BLOCK, {("normal_range", "max"): "1 # sneaky"})
