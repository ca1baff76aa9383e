"""Wrong output from regex semantics and test synthesis (issue 26, third sweep).

Each case writes the valid tree of conftest.py (line 9 is ``slice.selector``, its value at
column 13) with one change, runs the CLI in-process (cwd = tmp_path, so paths print relative)
and, where the spec compiles, runs the generated tests in the real promtool: a spec problem is
``path:line:col: message`` with exit 1, never a compiler bug; an accepted spec's tests pass.
"""

from __future__ import annotations

from pathlib import Path

import pytest
import yaml

from tests import promtool_runs
from tests.conftest import SLO_RELATIVE, RunCli, make_spec_tree

SLO = "specs/network/dns-errors.yaml"
SELECTOR = """  selector: '{job="kube-dns"}'\n"""


def tree(tmp_path: Path, selector: str) -> Path:
    """The conftest tree with ``slice.selector`` replaced (a YAML single-quoted scalar)."""
    specs = make_spec_tree(tmp_path / "specs")
    path = specs / SLO_RELATIVE
    text = path.read_text(encoding="utf-8")
    assert SELECTOR in text
    path.write_text(text.replace(SELECTOR, f"  selector: '{selector}'\n"), encoding="utf-8")
    return specs


def generate(run_cli: RunCli, tmp_path: Path) -> tuple[int, str]:
    code, out, err = run_cli(["generate", "--specs", "specs", "--out", "out"], tmp_path)
    assert "Traceback" not in err and "compiler bug" not in err, err
    return code, out + err


def promtool_test(tmp_path: Path, picked: str | None = None) -> None:
    """Run the generated tests in promtool and assert they pass; only the groups whose name holds ``picked``
    when given (all 13 of a spec take 15 s of promtool on a busy machine; one group proves the inputs)."""
    folder = tmp_path / "out" / "prometheus" / "tests"
    tests = sorted(folder.glob("*.test.yaml"))
    assert tests
    if picked is not None:
        for path in tests:
            document = yaml.safe_load(path.read_text(encoding="utf-8"))
            document["tests"] = [group for group in document["tests"] if picked in group["name"]]
            assert document["tests"], picked
            path.write_text(yaml.safe_dump(document, sort_keys=False), encoding="utf-8")
    for test in tests:
        result = promtool_runs.promtool_test(test, timeout=300)
        assert result.returncode == 0, result.stdout[-3000:] + result.stderr[-3000:]


def input_values(tmp_path: Path, label: str) -> set[str]:
    """The values of ``label`` in the generated tests' input series."""
    found = set()
    for path in (tmp_path / "out" / "prometheus" / "tests").glob("*.test.yaml"):
        for test in yaml.safe_load(path.read_text(encoding="utf-8"))["tests"]:
            for series in test.get("input_series", []):
                text = series["series"]
                marker = f'{label}="'
                if marker in text:
                    found.add(text.split(marker, 1)[1].split('"', 1)[0])
    return found


# -- 1. regexes are RE2, as Prometheus reads them ----------------------------------------------


@pytest.mark.parametrize(
    ("regex", "expected"),
    [
        ("[[:alpha:]]+", {"a"}),  # Python's re read a set of "[:alph" and a literal "]": job="[]"
        ("\\\\p{Greek}+", {"Ͱ"}),  # Python's re refused \p: "cannot compile this spec ... a compiler bug"
        ("a\\\\z", {"a"}),  # Go's RE2 has \z (end of text); Python's re has not
        ("(?i)kube-(dns|proxy)", {"kube-dns"}),
    ],
)
def test_regex_semantics_are_re2_not_python(tmp_path: Path, run_cli: RunCli, regex: str, expected: set[str]) -> None:
    """Synthesised input values are what RE2 matches, so the generated tests pass promtool."""
    tree(tmp_path, f'{{job=~"{regex}"}}')
    code, output = generate(run_cli, tmp_path)
    assert code == 0, output
    assert input_values(tmp_path, "job") == expected
    promtool_test(tmp_path, "1h/5m: error ratio 0.0158 just over")  # the page fires on the synthesised series


@pytest.mark.parametrize(
    ("regex", "reason"),
    [
        ("(?P<x>a)(?P=x)", "illegal regex"),  # a backreference (Python only); the PromQL parser refuses it
        ("(?=a)a", "illegal regex"),  # a lookahead (Python only)
        ("(?x)a b", "invalid perl operator: (?x"),  # the PromQL parser (Rust's syntax) accepts these four
        ("a**", "bad repetition operator: **"),
        ("[[:foo:]]", "invalid character class range: [:foo:]"),
        ("a{1001}", "invalid repetition size: {1001}"),
        ("(?<x>a)", "(?<"),  # C++ RE2 accepts it, Go's regexp in Prometheus 2.42 does not
    ],
)
def test_regex_prometheus_refuses_is_a_positioned_error(
    tmp_path: Path, run_cli: RunCli, regex: str, reason: str
) -> None:
    tree(tmp_path, f'{{job=~"{regex}"}}')
    code, out, err = run_cli(["validate", "--specs", "specs"], tmp_path)
    assert code == 1, out + err
    assert "compiler bug" not in err and "Traceback" not in err
    lines = [line for line in err.splitlines() if line.startswith(f"{SLO}:9:13: ")]
    assert lines, err
    assert reason in lines[0], lines[0]


def test_regex_without_a_synthesisable_value_is_a_positioned_error(tmp_path: Path, run_cli: RunCli) -> None:
    """A valid RE2 regex no label value matches is named at its selector, not a compiler bug."""
    tree(tmp_path, '{job=~"[^\\\\x00-\\\\x{10FFFF}]"}')
    code, output = generate(run_cli, tmp_path)
    assert code == 1
    assert f"{SLO}:9:13: slice.selector: no label value of at most 4,096 characters matches job=~" in output


def test_regex_that_leaves_out_every_value_is_a_positioned_error(tmp_path: Path, run_cli: RunCli) -> None:
    tree(tmp_path, '{job!~"(?s).*"}')
    code, output = generate(run_cli, tmp_path)
    assert code == 1
    assert f'{SLO}:9:13: slice.selector: job!~"(?s).*" leaves out every label value' in output


def test_regex_length_is_bounded(tmp_path: Path, run_cli: RunCli) -> None:
    """RE2's compile time grows with the pattern: a regex over 4,096 characters is refused with the bound."""
    tree(tmp_path, '{job=~"' + "(a|b)" * 1000 + '"}')
    code, output = generate(run_cli, tmp_path)
    assert code == 1
    assert f"{SLO}:9:13: " in output
    assert "5,000 characters long, over the 4,096-character limit" in output


def test_regex_nesting_is_bounded(tmp_path: Path, run_cli: RunCli) -> None:
    tree(tmp_path, '{job=~"' + "(" * 101 + "a" + ")" * 101 + '"}')
    code, output = generate(run_cli, tmp_path)
    assert code == 1
    assert f"{SLO}:9:13: " in output
    assert "groups nest more than 100 levels deep, the limit" in output


def test_regex_in_label_replace_is_checked_as_re2(tmp_path: Path, run_cli: RunCli) -> None:
    """label_replace compiles its regex only when the rule runs: promtool's check passes a bad one."""
    specs = make_spec_tree(tmp_path / "specs")
    path = specs / SLO_RELATIVE
    text = path.read_text(encoding="utf-8")
    start, end = text.index("sli:"), text.index("persistence:")
    gauge = (
        'sli:\n  gauge:\n    expr: \'max by (cluster) (label_replace(up, "k", "$1", "job", "(?x)(.*)"))\'\n'
        "unit: count\nnormal_range:\n  max: 5\n  reason: r\n"
    )
    path.write_text(text[:start] + gauge + text[end:], encoding="utf-8")
    code, _out, err = run_cli(["validate", "--specs", "specs"], tmp_path)
    assert code == 1
    assert f'{SLO}:12:11: invalid PromQL in sli.gauge.expr: invalid regex "(?x)(.*)" in label_replace()' in err


# -- 3. a slice label the selectors pin gives one slice ------------------------------------------


def slice_by(tmp_path: Path, by: str, selector: str) -> None:
    specs = tree(tmp_path, selector)
    path = specs / SLO_RELATIVE
    text = path.read_text(encoding="utf-8")
    path.write_text(text.replace("  by: [cluster]\n", f"  by: [{by}]\n"), encoding="utf-8")


def test_slice_label_pinned_by_the_selector_is_a_positioned_error(tmp_path: Path, run_cli: RunCli) -> None:
    """by: [job] with job="kube-dns" gave every slice the same series, and the generated test failed."""
    slice_by(tmp_path, "job", '{job="kube-dns"}')
    code, output = generate(run_cli, tmp_path)
    assert code == 1
    assert (
        f'{SLO}:8:7: every slice label is pinned to one value (job="kube-dns" in slice.selector): slicing by '
        "labels the selectors pin gives one slice"
    ) in output


def test_slice_label_pinned_by_the_sli_is_a_positioned_error(tmp_path: Path, run_cli: RunCli) -> None:
    specs = make_spec_tree(tmp_path / "specs")
    path = specs / SLO_RELATIVE
    text = path.read_text(encoding="utf-8").replace("  by: [cluster]\n", "  by: [rcode]\n")
    path.write_text(text, encoding="utf-8")
    code, output = generate(run_cli, tmp_path)
    assert code == 1
    assert f'{SLO}:8:7: every slice label is pinned to one value (rcode="SERVFAIL" in sli.ratio.bad)' in output


def test_slice_label_with_one_regex_value_is_refused_at_the_spec(tmp_path: Path, run_cli: RunCli) -> None:
    """A regex that admits one value pins the label too; the test generator says so at the spec."""
    slice_by(tmp_path, "job", '{job=~"kube-dns"}')
    code, output = generate(run_cli, tmp_path)
    assert code == 1
    assert f"{SLO}:10:1: cannot generate the promtool tests that prove its alerts: the selectors admit one " in output
    assert "slicing by labels the selectors pin gives one slice" in output


def test_slice_label_pinned_beside_a_free_one_compiles(tmp_path: Path, run_cli: RunCli) -> None:
    """A pinned label beside a free one carries a constant into every alert; the free one splits the slices."""
    slice_by(tmp_path, "cluster, job", '{job="kube-dns"}')
    code, output = generate(run_cli, tmp_path)
    assert code == 0, output
    assert input_values(tmp_path, "cluster") == {"cluster-a", "cluster-b"}
    promtool_test(tmp_path, "1h/5m: error ratio 0.0158 just over")


def test_slice_label_with_regex_values_compiles(tmp_path: Path, run_cli: RunCli) -> None:
    slice_by(tmp_path, "job", '{job=~"kube-dns|coredns"}')
    code, output = generate(run_cli, tmp_path)
    assert code == 0, output
    assert input_values(tmp_path, "job") == {"kube-dns", "coredns"}
    promtool_test(tmp_path, "1h/5m: error ratio 0.0158 just over")


# -- 2. the value an annotation shows is what Prometheus computes from the written inputs --------


@pytest.mark.parametrize("factor", ["3.3", "2.2", "6.1"])
def test_humanized_value_is_computed_from_the_written_inputs(tmp_path: Path, run_cli: RunCli, factor: str) -> None:
    """A gauge scaled by 3.3 with max 0: the inputs (12 digits) give 0.999999999999, which Prometheus's
    humanize writes 1000m/s; the generated test expected 1/s, the value it wanted, and failed."""
    specs = make_spec_tree(tmp_path / "specs")
    path = specs / SLO_RELATIVE
    text = path.read_text(encoding="utf-8")
    start, end = text.index("sli:"), text.index("persistence:")
    gauge = (
        f"sli:\n  gauge:\n    expr: 'max by (cluster) (rate(x_total[5m]) * {factor})'\n"
        "unit: per_second\nnormal_range:\n  max: 0\n  reason: r\n"
    )
    path.write_text(text[:start] + gauge + text[end:], encoding="utf-8")
    code, output = generate(run_cli, tmp_path)
    assert code == 0, output
    test_file = (tmp_path / "out" / "prometheus" / "tests" / "dns-errors.test.yaml").read_text(encoding="utf-8")
    assert "the value 1000m/s is above the normal range" in test_file
    promtool_test(tmp_path, "beyond the max 0 is pending")
