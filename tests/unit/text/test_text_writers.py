"""The compiler's own YAML and JSON writers give PyYAML's and the json module's text, byte for byte.

``yamlout.dump`` writes block YAML itself and asks PyYAML only for each distinct scalar;
``jsonout.dumps`` writes sorted, indented JSON in one pass. Both exist for speed, so both
are held here to the libraries they stand in for, on random documents built to hit the
awkward cases: text YAML would read as another type, multi-line text with and without
trailing blanks, keys that need quotes, empty containers, an object met twice (an anchor).
"""

from __future__ import annotations

import json
import math
from pathlib import Path
from typing import Any

import yaml
from hypothesis import given, settings
from hypothesis import strategies as st

from compiler.text import jsonout, yamlout

REPO_ROOT = Path(__file__).resolve().parents[3]

AWKWARD_TEXT = st.sampled_from(
    [
        "",
        " ",
        "yes",
        "on",
        "null",
        "~",
        "0x1f",
        "1e3",
        "0777",
        "- item",
        "key: value",
        "#comment",
        "a\nb",
        "a\n\nb\n",
        "trailing \nspace",
        "line\n",
        "two\n\n",
        "\ttab",
        "'quoted'",
        '"double"',
        "é ü 日本",
        "{{ $labels.instance }}",
        "rate(x[5m]) > 0.1",
        "\x85next line",
        "a" * 200,
        "a #b",
        "a:b",
        "a:",
        "{x}",
        "x{y}",
        'up{job="a"} == 1',
        "a,b",
        "a'b",
        "%x",
        "@x",
        "`x",
        "1_000",
        "12:30",
        "0b101",
        "2001-12-14",
        "=",
        "<<",
        ".inf",
        "+1",
        "1x181",
        "0+596.7x14 8953.8+600x5",
        "_x3",
    ]
)
TEXT = st.one_of(AWKWARD_TEXT, st.text(max_size=30))
SCALARS = st.one_of(
    TEXT,
    st.integers(min_value=-(10**20), max_value=10**20),
    st.floats(allow_nan=True, allow_infinity=True),
    st.booleans(),
    st.none(),
)
KEYS = st.one_of(AWKWARD_TEXT, st.text(max_size=12))


def _documents(leaves: st.SearchStrategy[Any]) -> st.SearchStrategy[Any]:
    return st.recursive(
        leaves,
        lambda children: st.one_of(st.lists(children, max_size=4), st.dictionaries(KEYS, children, max_size=4)),
        max_leaves=25,
    )


@settings(max_examples=400, deadline=None)
@given(st.dictionaries(KEYS, _documents(SCALARS), min_size=1, max_size=5))
def test_yaml_writer_equals_pyyaml(document: dict[str, Any]) -> None:
    assert yamlout.dump(document) == yamlout.pyyaml_dump(document)


def test_yaml_writer_leaves_an_object_met_twice_to_pyyaml_as_an_anchor() -> None:
    shared = {"receiver": "team"}
    document = {"routes": [shared, shared], "empty": [], "nested": {"deeper": {"text": "a\nb"}}}
    text = yamlout.dump(document)
    assert "&id001" in text
    assert text == yamlout.pyyaml_dump(document)


def test_yaml_writer_indents_multi_line_text_under_its_key_at_any_depth() -> None:
    document = {"tests": [{"alerts": [{"exp_annotations": {"steps": "1. first\n2. second\n\n3. third"}}]}]}
    text = yamlout.dump(document)
    assert "      steps: |-\n        1. first\n" in text
    assert text == yamlout.pyyaml_dump(document)
    assert yaml.safe_load(text) == document


JSON_SCALARS = st.one_of(TEXT, st.integers(), st.floats(allow_nan=False, allow_infinity=True), st.booleans(), st.none())


@settings(max_examples=400, deadline=None)
@given(_documents(JSON_SCALARS))
def test_json_writer_equals_the_json_module(document: Any) -> None:
    expected = json.dumps(json.loads(json.dumps(document)), sort_keys=True, indent=2, ensure_ascii=False)
    assert jsonout.dumps(document) == expected


def test_json_writer_writes_keys_that_are_not_strings_as_json_does() -> None:
    """Numbers, booleans and null as keys become their JSON text, then sort among the strings."""
    document = {"b": 1, 2: "x", None: 3.5, True: [1, "a"], 1.5: {}, "10": {"z": 1, 9: 2}}
    expected = json.dumps(json.loads(json.dumps(document)), sort_keys=True, indent=2, ensure_ascii=False)
    assert jsonout.dumps(document) == expected


class _Builder:
    """Stands for a Grafana SDK builder: JSON cannot write it, its ``to_json`` can."""

    def __init__(self, data: Any) -> None:
        self.data = data

    def to_json(self) -> Any:
        return self.data


def test_json_writer_hands_unknown_objects_to_default_like_the_round_trip_it_replaces() -> None:
    document = {"panels": [_Builder({"b": 1.5, "a": _Builder([None, math.inf])})], "title": "x"}

    def default(value: Any) -> Any:
        return value.to_json()

    expected = json.dumps(
        json.loads(json.dumps(document, default=default)), sort_keys=True, indent=2, ensure_ascii=False
    )
    assert jsonout.dumps(document, default) == expected


def test_every_shipped_dashboard_is_what_the_json_module_writes() -> None:
    dashboards = sorted((REPO_ROOT / "generated" / "grafana").rglob("*.json"))
    assert dashboards
    for path in dashboards:
        text = path.read_text(encoding="utf-8")
        data = json.loads(text)
        assert jsonout.dumps(data) + "\n" == text, path


def test_signed_zeros_are_written_apart_whichever_comes_first() -> None:
    """0.0 and -0.0 are equal keys to a cache; PyYAML writes them apart, and so must the writer."""
    for first, second in ((-0.0, 0.0), (0.0, -0.0)):
        assert yamlout.dump({"a": first}) == yamlout.pyyaml_dump({"a": first})
        assert yamlout.dump({"a": second}) == yamlout.pyyaml_dump({"a": second})


def test_complement_is_decimal() -> None:
    """1 - target as written: the error budget of 99.999% is 1e-05, of 99.9% 0.001, of 95% 0.05."""
    from compiler.text.human import percent
    from compiler.text.numbers import complement

    assert complement(0.99999) == 1e-05
    assert complement(0.999) == 0.001
    assert complement(0.95) == 0.05
    assert percent(complement(0.99999)) == "0.001%"
    assert complement(0.0) == 1.0


@given(
    st.recursive(st.text(), lambda inner: st.lists(inner, max_size=3) | st.dictionaries(st.text(), inner, max_size=3))
)
@settings(max_examples=200, deadline=None)
def test_script_json_reads_back_and_cannot_end_its_script_element(data: Any) -> None:
    text = jsonout.for_script(data)
    assert json.loads(text) == data
    assert not {"<", ">", "&", "\u2028", "\u2029"} & set(text)


def test_script_json_escapes_a_closing_script_tag_and_line_separators() -> None:
    text = jsonout.for_script({"d": "</script><script>alert(1)</script>\u2028<!--"})
    assert text == ('{"d":"\\u003c/script\\u003e\\u003cscript\\u003ealert(1)\\u003c/script\\u003e\\u2028\\u003c!--"}')
