"""Property (issue 26, item 2): the surfaces that read other people's text, ``import`` and the live
commands, never crash, never run away, and answer with positions.

- **import**: random Sloth ``prometheus/v1`` and OpenSLO ``v1``/``v1alpha`` documents, valid ones from
  a strategy and the corpus in ``../shared/corpus`` (read in place), then mutated (keys dropped, values
  of the wrong type, hostile unicode in names and label values, huge numbers, NaN, spliced or cut YAML
  text). ``import`` runs in-process: exit 0, 1 or 2, no traceback or internal error, every line of a
  failure ``path:line:col: message``, nothing a terminal would act on. Each spec it writes, its
  placeholders filled, passes ``validate`` or fails it with positions only; the first few that pass are
  generated and their generated tests run in the real ``promtool test rules``, each distinct proof once
  (``tests/promtool_runs.py``: hypothesis may draw the same document twice).
- **preflight and backtest**: a loopback server (``tests.servers.hostile``) answers every endpoint
  with hypothesis-chosen answers: valid shapes with random labels and values, malformed JSON, wrong
  shapes, NaN/Inf/huge numbers, long strings, deep nesting, odd statuses, lying Content-Lengths, slow
  answers. Each run exits 0, 1 or 2 without a traceback, within its ``--timeout`` times the requests
  that can be slow plus slack, and without its memory growing past a bound.

The example budget is fixed and the runs derandomized, so CI draws the same examples every time;
``SLO_PROPERTY_EXAMPLES_SCALE=N`` multiplies the budget to explore more (``SLO_PROPERTY_RANDOM=1``: new ones).
"""

from __future__ import annotations

import copy
import json
import os
import re
import resource
import shutil
import threading
import time
import unicodedata
import urllib.parse
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from http.server import BaseHTTPRequestHandler
from pathlib import Path
from typing import Any

import pytest
import yaml
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from tests import live_data
from tests.conftest import OWNERS_YAML, PROJECT_YAML, REPO_ROOT, _run_cli
from tests.promtool_runs import promtool_test
from tests.servers import hostile

SCALE = int(os.environ.get("SLO_PROPERTY_EXAMPLES_SCALE", "1"))
RANDOM = bool(os.environ.get("SLO_PROPERTY_RANDOM"))
CORPUS = REPO_ROOT.parent / "shared" / "corpus"
CORPUS_FILES = sorted(
    (path, "sloth" if "sloth" in path.relative_to(CORPUS).parts[0] else "openslo")
    for path in (CORPUS.rglob("*.y*ml") if CORPUS.is_dir() else [])
    if "_gen" not in path.parts
)
POSITIONED = re.compile(r"^[^:\n]+:\d+:\d+: \S")
CRASH = ("Traceback", "internal error")
PROMTOOL = shutil.which("promtool")


def _settings(examples: int) -> Callable[[Any], Any]:
    return settings(
        max_examples=examples * SCALE,
        deadline=None,
        derandomize=not RANDOM,
        database=None,
        suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large, HealthCheck.function_scoped_fixture],
    )


def acts_on_a_terminal(text: str) -> list[str]:
    """The characters of ``text`` a terminal would act on rather than show: controls other than the
    newline, format characters (bidi overrides), line and paragraph separators."""
    return sorted(
        {char for char in text if char != "\n" and unicodedata.category(char) in ("Cc", "Cf", "Zl", "Zp", "Cs")}
    )


def assert_answered(code: int, out: str, err: str, what: str) -> None:
    """The invariants every run holds: a known exit code, no crash, nothing raw for the terminal."""
    assert code in (0, 1, 2), f"{what}: exit {code}\n{err[-2000:]}"
    assert not [word for word in CRASH if word in out + err], f"{what}: crashed\n{err[-2000:]}"
    raw = acts_on_a_terminal(out + err)
    assert not raw, f"{what}: printed raw {raw!r}\n{(out + err)[-2000:]}"


# -- import: documents ------------------------------------------------------------------------------------

HOSTILE_PIECES = [
    "\n", "\r\n", "\r", "\t", "\x00", "\x07", "\x1b[31m", "\x7f", "\x85", "\u2028", "\u2029", "\u202e", "\u200b",
    "\ufeff", '"', "'", "\\", "{{", "}}", "{", "}", "[", "]", ": ", " #", "- ", "&a", "*a", "!!str", "%TAG", "`",
    "{{.window}}", "${x}", "é", "名前", "\U0001f600", ",", "=~", "|", ">", "---", "...", "?", "@",
]  # fmt: skip
hostile_text = st.lists(st.one_of(st.text(max_size=6), st.sampled_from(HOSTILE_PIECES)), max_size=6).map("".join)
dns_name = st.from_regex(r"[a-z][a-z0-9-]{0,14}[a-z0-9]", fullmatch=True)
label_name = st.from_regex(r"[a-z_][a-z0-9_]{0,10}", fullmatch=True)
metric_name = st.from_regex(r"[a-z_][a-z0-9_]{0,14}_total", fullmatch=True)
label_value = st.from_regex(r"[A-Za-z0-9_.-]{1,10}", fullmatch=True)
camel = st.from_regex(r"[A-Z][A-Za-z0-9]{0,15}", fullmatch=True)
WEIRD_NUMBERS = [float("nan"), float("inf"), -float("inf"), 10**400, -(10**30), 1e308, 5e-324, 0, -1, 100, 1, 0.0]
weird_value: st.SearchStrategy[Any] = st.one_of(
    st.none(),
    st.booleans(),
    st.sampled_from(WEIRD_NUMBERS),
    st.integers(),
    st.floats(),
    hostile_text,
    st.text(min_size=5_000, max_size=20_000),
    st.lists(hostile_text, max_size=3),
    st.dictionaries(hostile_text, hostile_text, max_size=3),
)


@st.composite
def selectors(draw: st.DrawFn, metric: str) -> tuple[str, str]:
    """(events, total) selectors of one counter: the events one matches a subset of the total's series."""
    matchers = draw(st.dictionaries(label_name.filter(lambda n: n != "__name__"), label_value, max_size=2))
    extra = draw(label_name.filter(lambda n: n not in matchers and n != "__name__"))
    total = ",".join(f'{name}="{value}"' for name, value in sorted(matchers.items()))
    events = ",".join(filter(None, [total, f'{extra}=~"{draw(label_value)}|5.."']))
    return f"{metric}{{{events}}}", f"{metric}{{{total}}}" if total else metric


@st.composite
def sloth_queries(draw: st.DrawFn) -> tuple[str, str]:
    bad, total = draw(selectors(draw(metric_name)))
    by = draw(st.lists(label_name, max_size=2, unique=True))
    tail = f" by ({', '.join(by)})" if by else ""
    rate = draw(st.sampled_from(["rate", "increase"]))
    return tuple(f"sum(rate({s}[{{{{.window}}}}])){tail}".replace("rate", rate, 1) for s in (bad, total))  # type: ignore[return-value]


@st.composite
def sloth_documents(draw: st.DrawFn) -> dict[str, Any]:
    slos = []
    for slo_name in draw(st.lists(dns_name, min_size=1, max_size=3, unique=True)):
        kind = draw(st.sampled_from(["events", "events", "events", "raw", "plugin"]))
        if kind == "events":
            bad, total = draw(sloth_queries())
            sli: dict[str, Any] = {"events": {"error_query": bad, "total_query": total}}
        elif kind == "raw":
            sli = {"raw": {"error_ratio_query": "sum(rate(a[{{.window}}])) / sum(rate(b[{{.window}}]))"}}
        else:
            sli = {"plugin": {"id": "sloth-common/availability", "options": {"job": draw(label_value)}}}
        slo: dict[str, Any] = {
            "name": slo_name,
            "objective": draw(st.sampled_from([99.9, 99.0, 95.0, 99.99, 99.5]) | st.floats(90, 99.999)),
            "sli": sli,
        }
        if draw(st.booleans()):
            slo["description"] = draw(st.text(max_size=40))
        if draw(st.booleans()):
            slo["labels"] = draw(st.dictionaries(label_name, label_value, max_size=2))
        if draw(st.integers(0, 3)):
            alerting: dict[str, Any] = {"name": draw(camel)}
            if draw(st.booleans()):
                alerting["labels"] = draw(st.dictionaries(label_name, label_value, max_size=2))
            if draw(st.booleans()):
                alerting["annotations"] = {"summary": draw(st.text(max_size=20)), "runbook": "https://x/{{.Labels}}"}
            for which in ("page_alert", "ticket_alert"):
                if draw(st.booleans()):
                    alerting[which] = {"labels": {"severity": draw(label_value)}, "disable": draw(st.booleans())}
            slo["alerting"] = alerting
        slos.append(slo)
    document: dict[str, Any] = {"version": "prometheus/v1", "service": draw(dns_name), "slos": slos}
    if draw(st.booleans()):
        document["labels"] = draw(st.dictionaries(label_name, label_value, max_size=3))
    return document


@st.composite
def openslo_documents(draw: st.DrawFn) -> dict[str, Any]:
    v1 = draw(st.integers(0, 3)) > 0
    good, total = draw(selectors(draw(metric_name)))
    shape = draw(st.sampled_from(["{}", "sum({})", "sum(rate({}[{{{{.window}}}}]))"]))
    queries = [shape.format(good), shape.format(total)]
    field = draw(st.sampled_from(["good", "bad"]))
    targets = draw(st.lists(st.sampled_from([0.99, 0.999, 0.95]) | st.floats(0.9, 0.9999), min_size=1, max_size=2))
    name, service = draw(dns_name), draw(dns_name)
    if not v1:
        source = [{"source": "prometheus", "queryType": "promql", "query": query} for query in queries]
        return {
            "apiVersion": "openslo/v1alpha",
            "kind": "SLO",
            "metadata": {"name": name, "displayName": draw(st.text(max_size=20))},
            "spec": {
                "service": service,
                "budgetingMethod": "Occurrences",
                "timeWindows": [{"unit": "Day", "count": draw(st.sampled_from([7, 28, 30])), "isRolling": True}],
                "objectives": [
                    {"target": target, "ratioMetrics": {"counter": True, field: source[0], "total": source[1]}}
                    for target in targets
                ],
            },
        }
    metric_source = [{"metricSource": {"type": "Prometheus", "spec": {"query": query}}} for query in queries]
    indicator: dict[str, Any] = {"ratioMetric": {"counter": True, field: metric_source[0], "total": metric_source[1]}}
    if draw(st.integers(0, 4)) == 0:
        indicator = {"thresholdMetric": metric_source[0]}
    return {
        "apiVersion": "openslo/v1",
        "kind": "SLO",
        "metadata": {"name": name, "labels": draw(st.dictionaries(label_name, st.lists(label_value, max_size=2)))},
        "spec": {
            "service": service,
            "description": draw(st.text(max_size=30)),
            "budgetingMethod": draw(st.sampled_from(["Occurrences", "Occurrences", "Timeslices"])),
            "timeWindow": [{"duration": draw(st.sampled_from(["28d", "30d", "4w", "1h", "7d"])), "isRolling": True}],
            "indicator": {"metadata": {"name": f"{name}-sli"}, "spec": indicator},
            "objectives": [{"displayName": "o", "target": target} for target in targets],
        },
    }


def node_paths(value: Any, path: tuple[Any, ...] = ()) -> Iterator[tuple[Any, ...]]:
    yield path
    if isinstance(value, dict):
        for key, item in value.items():
            yield from node_paths(item, (*path, key))
    elif isinstance(value, list):
        for index, item in enumerate(value):
            yield from node_paths(item, (*path, index))


@st.composite
def mutated(draw: st.DrawFn, document: Any) -> Any:
    """``document`` with up to four nodes dropped, replaced by a value of another type, or renamed."""
    document = copy.deepcopy(document)
    for _ in range(draw(st.integers(0, 4))):
        paths = [path for path in node_paths(document) if path]
        if not paths:
            break
        path = draw(st.sampled_from(paths))
        parent = document
        for step in path[:-1]:
            parent = parent[step]
        operation = draw(st.sampled_from(["drop", "replace", "replace", "text", "rename"]))
        if operation == "drop":
            del parent[path[-1]]
        elif operation == "replace":
            parent[path[-1]] = draw(weird_value)
        elif operation == "text":
            parent[path[-1]] = f"{parent[path[-1]]}{draw(hostile_text)}"
        elif isinstance(parent, dict):
            parent[draw(hostile_text)] = parent.pop(path[-1])
    return document


def dump(documents: list[Any]) -> str:
    return yaml.safe_dump_all(documents, allow_unicode=True, sort_keys=False, width=10_000)


@st.composite
def spliced(draw: st.DrawFn, text: str) -> str:
    """``text`` cut short, with hostile text spliced in, or a line repeated."""
    operation = draw(st.sampled_from(["keep", "keep", "cut", "splice", "repeat"]))
    if operation == "keep" or not text:
        return text
    at = draw(st.integers(0, len(text)))
    if operation == "cut":
        return text[:at]
    if operation == "splice":
        return text[:at] + draw(hostile_text) + text[at:]
    lines = text.splitlines(keepends=True)
    index = draw(st.integers(0, len(lines) - 1))
    return "".join(lines[: index + 1] + lines[index:])


@dataclass(frozen=True)
class ImportCase:
    fmt: str
    text: str
    origin: str


@st.composite
def import_cases(draw: st.DrawFn) -> ImportCase:
    source = draw(st.sampled_from(["sloth", "openslo", "corpus"] * 2 if CORPUS_FILES else ["sloth", "openslo"] * 2))
    if source == "corpus":
        path, fmt = draw(st.sampled_from(CORPUS_FILES))
        documents = list(yaml.safe_load_all(path.read_text(encoding="utf-8")))
        origin = str(path.relative_to(CORPUS))
    else:
        fmt, origin = source, f"strategy {source}"
        documents = [draw(sloth_documents() if source == "sloth" else openslo_documents())]
    documents = [
        draw(mutated(document)) if draw(st.sampled_from([False, True])) else document for document in documents
    ]
    if draw(st.sampled_from([False] * 9 + [True])):  # hypothesis draws the first choice often, the last rarely
        fmt = "openslo" if fmt == "sloth" else "sloth"
    return ImportCase(fmt, draw(spliced(dump(documents))), origin)


# -- import: the checks ---------------------------------------------------------------------------------------


def fill(text: str) -> str:
    """The placeholders answered as a user would: a team and family that exist, one global slice."""
    text = re.sub(r'^family: ".*"$', "family: node-network-errors", text, flags=re.MULTILINE)
    text = re.sub(r'^owner: ".*"$', "owner: platform-network", text, flags=re.MULTILINE)
    text = re.sub(r'^  by: \["PLACEHOLDER:.*\]$', "  by: []", text, flags=re.MULTILINE)
    return text.replace('"PLACEHOLDER: ', '"Filled in by the property test: ')


@dataclass
class ImportRun:
    root: Path
    examples: int = 0
    outcomes: dict[str, int] = field(default_factory=dict)
    validated: list[Path] = field(default_factory=list)  # spec trees whose imported specs validate


def check_import(case: ImportCase, run: ImportRun) -> None:
    example = run.root / f"ex{run.examples:04d}"
    run.examples += 1
    example.mkdir(parents=True)
    (example / "in.yaml").write_text(case.text, encoding="utf-8")
    specs = example / "specs"
    what = f"import {case.fmt} of {case.origin}:\n{case.text[:3000]}"
    code, out, err = _run_cli(["import", case.fmt, "in.yaml", "--out", "specs/imported"], example)
    assert_answered(code, out, err, what)
    if code != 0:
        lines = err.splitlines()
        assert lines, f"{what}\nexit {code} without a word"
        wrong = [line for line in lines if not POSITIONED.match(line)]
        assert not wrong, f"{what}\nnot positioned: {wrong[:3]}"
    written = sorted((specs / "imported").glob("*.yaml"))
    key = f"exit {code}, {'some' if written else 'no'} spec written"
    run.outcomes[key] = run.outcomes.get(key, 0) + 1
    if not written:
        return
    (specs / "owners.yaml").write_text(OWNERS_YAML, encoding="utf-8")
    (specs / "project.yaml").write_text(PROJECT_YAML, encoding="utf-8")
    for path in written:
        path.write_text(fill(path.read_text(encoding="utf-8")), encoding="utf-8")
    code, out, err = _run_cli(["validate", "--specs", "specs"], example)
    assert_answered(code, out, err, f"validate after {what}")
    assert code in (0, 1), f"{what}\nvalidate exit {code}: {err[-2000:]}"
    if code == 1:
        problems = err.splitlines()[:-1]  # the last line counts them
        wrong = [line for line in problems if not POSITIONED.match(line)]
        assert problems and not wrong, f"{what}\nvalidate, not positioned: {wrong[:3] or err[-500:]}"
    else:
        run.validated.append(example)


GENERATED_SAMPLE = 3  # imported spec trees generated and tested in promtool


def test_random_imports_answer_with_positions_or_specs_whose_tests_pass(tmp_path: Path) -> None:
    run = ImportRun(tmp_path / "import")

    @_settings(80)
    @given(case=import_cases())
    def one(case: ImportCase) -> None:
        check_import(case, run)

    one()
    print(f"\n{run.examples} import examples: {run.outcomes}; {len(run.validated)} validated after filling")
    assert len(run.validated) >= GENERATED_SAMPLE, run.outcomes  # the strategy must keep producing good specs
    assert any(key.startswith("exit 1") for key in run.outcomes), run.outcomes
    tests = []
    for example in run.validated[:GENERATED_SAMPLE]:
        code, _, err = _run_cli(["generate", "--specs", "specs", "--out", "out"], example)
        assert code == 0, err
        tests += sorted((example / "out" / "prometheus" / "tests").glob("*.test.yaml"))
    if PROMTOOL is None:
        pytest.skip("promtool is not installed")
    for test in tests:  # each distinct proof once: hypothesis may draw the same document twice (5 s of promtool)
        result = promtool_test(test, timeout=300)
        assert result.returncode == 0, f"{test}\n{result.stdout[-3000:]}{result.stderr[-3000:]}"


# -- preflight and backtest: server answers ------------------------------------------------------------------

TIMEOUT_S = 0.5
NOW = 1_700_000_000.0
NUMBERS = ["1", "0", "0.5", "NaN", "+Inf", "-Inf", "1e308", "-1e308", "1e400", "1" + "0" * 400, "-0", "3", "250"]
number: st.SearchStrategy[Any] = st.one_of(
    st.sampled_from(NUMBERS), st.floats().map(repr), st.integers(-(2**70), 2**70), st.floats(0, 1e6)
)
sample_value: st.SearchStrategy[Any] = st.one_of(
    number, st.sampled_from(["abc", "", "0x1p3"]), st.none(), st.booleans()
)
json_scalar: st.SearchStrategy[Any] = st.one_of(
    st.none(), st.booleans(), st.integers(), st.floats(allow_nan=False, allow_infinity=False), st.text(max_size=10)
)
json_value: st.SearchStrategy[Any] = st.recursive(
    json_scalar,
    lambda inner: st.lists(inner, max_size=3) | st.dictionaries(st.text(max_size=8), inner, max_size=3),
    max_leaves=10,
)
server_labels = st.dictionaries(
    st.one_of(st.sampled_from(["cluster", "job", "code", "le", "node", "label_node_pool", "__name__"]), label_name),
    st.one_of(label_value, hostile_text, st.sampled_from(["0.1", "0.2", "+Inf", "abc", "x" * 100_000])),
    max_size=4,
)
rarely = st.sampled_from([False] * 7 + [True])  # hypothesis draws the first choice often, the last rarely


@st.composite
def series_answer(draw: st.DrawFn, matrix: bool, valid: bool) -> dict[str, Any]:
    labels = draw(server_labels if valid or not draw(rarely) else json_value)
    values = number if valid else sample_value
    if matrix:
        start = draw(st.sampled_from([NOW - 3600, 0.0, -1.0, 1e300]))
        step = draw(st.sampled_from([60, 15, 0.5, -60]))
        points: Any = [[start + i * step, draw(values)] for i in range(draw(st.integers(0, 40)))]
        return {"metric": labels, "values": points if valid or not draw(rarely) else draw(json_value)}
    value: Any = [draw(st.sampled_from([NOW, 0, -1, 1e300] if valid else [NOW, "x", None])), draw(values)]
    return {"metric": labels, "value": value if valid or not draw(rarely) else draw(json_value)}


@st.composite
def data_answer(draw: st.DrawFn, endpoint: str, valid: bool) -> Any:
    """The ``data`` member for one endpoint: its shape (``valid``), or mostly its shape with odd parts."""
    if not valid and draw(rarely):
        return draw(json_value)
    if endpoint == "buildinfo":
        return {"version": draw(st.sampled_from(["2.42.0", "3.1.0", "0.0.0"]) | hostile_text)}
    if endpoint in ("labels", "series"):
        one = server_labels if endpoint == "series" else st.sampled_from(["0.1", "0.2", "1", "+Inf", "x", "NaN"])
        return draw(st.lists(one if valid else one | hostile_text, max_size=6))
    matrix = endpoint == "query_range"
    result_type = "matrix" if matrix else draw(st.sampled_from(["vector", "vector", "vector", "scalar"]))
    if result_type == "scalar":
        return {"resultType": result_type, "result": [NOW, draw(number if valid else sample_value)]}
    data: dict[str, Any] = {
        "resultType": result_type,
        "result": draw(st.lists(series_answer(matrix, valid), max_size=4)),
    }
    if matrix and draw(st.booleans()):
        data["stats"] = {"samples": {"totalQueryableSamples": draw(sample_value)}, "timings": draw(json_value)}
    return data


@dataclass(frozen=True)
class Grid:
    """A range answer on the grid the request asked for: per series, its labels and values taken in turn."""

    series: tuple[tuple[tuple[tuple[str, str], ...], tuple[Any, ...]], ...]
    every: int  # every n-th step has a point

    def body(self, request: bytes) -> bytes:
        asked = dict(urllib.parse.parse_qsl(request.decode()))
        start, end, step = (
            float(asked.get(name, default)) for name, default in (("start", 0), ("end", 0), ("step", 60))
        )
        steps = [start + i * step for i in range(0, min(int((end - start) / step) + 1, 20_000), self.every)]
        result = [
            {"metric": dict(labels), "values": [[at, values[i % len(values)]] for i, at in enumerate(steps)]}
            for labels, values in self.series
        ]
        return json.dumps({"status": "success", "data": {"resultType": "matrix", "result": result}}).encode()


grids = st.builds(
    Grid,
    st.lists(
        st.tuples(
            server_labels.map(lambda labels: tuple(sorted(labels.items()))),
            st.lists(number, min_size=1, max_size=5).map(tuple),
        ),
        max_size=3,
    ).map(tuple),
    st.sampled_from([1, 1, 2, 7]),
)


@dataclass(frozen=True)
class Answer:
    status: int
    body: bytes
    delay_s: float = 0.0
    length: str | None = None  # a Content-Length that lies, or None for the body's own
    trickle: bool = False  # the body a byte at a time, slower than the deadline allows
    grid: Grid | None = None  # a range answer built on the request's grid instead of ``body``

    def slow(self) -> bool:
        return self.delay_s >= TIMEOUT_S or self.trickle


@st.composite
def valid_answers(draw: st.DrawFn, endpoint: str) -> Answer:
    if endpoint == "query_range" and draw(st.sampled_from([True, True, False])):
        return Answer(200, b"", grid=draw(grids))
    return Answer(200, json.dumps({"status": "success", "data": draw(data_answer(endpoint, valid=True))}).encode())


@st.composite
def bad_answers(draw: st.DrawFn, endpoint: str) -> Answer:
    kind = draw(st.sampled_from(["odd", "json", "bytes", "deep", "huge", "error", "status", "length", "slow"]))
    status, delay, length, trickle = 200, 0.0, None, False
    if kind == "odd":
        body = json.dumps({"status": "success", "data": draw(data_answer(endpoint, valid=False))}).encode()
    elif kind == "json":
        body = json.dumps(draw(json_value)).encode()
    elif kind == "bytes":
        valid = json.dumps({"status": "success", "data": draw(data_answer(endpoint, valid=True))}).encode()
        body = draw(st.binary(max_size=40) | st.integers(0, len(valid)).map(lambda at: valid[:at]))
    elif kind == "deep":
        depth = draw(st.sampled_from([1_000, 100_000]))
        open_, close = draw(st.sampled_from([(b"[", b"]"), (b'{"a":', b"}")]))
        body = b'{"status": "success", "data": ' + open_ * depth + b"1" + close * depth + b"}"
    elif kind == "huge":
        body = json.dumps({"status": "success", "data": {"version": "2", "x": "y" * 5_000_000}}).encode()
    elif kind == "error":
        status = draw(st.sampled_from([400, 422, 503, 500]))
        body = json.dumps({"status": "error", "errorType": "x", "error": draw(hostile_text | json_value)}).encode()
    elif kind == "status":
        status = draw(st.sampled_from([204, 301, 302, 304, 401, 403, 404, 405, 418, 429, 502]))
        body = draw(st.sampled_from([b"", b"{}", b'{"status": "success", "data": []}']))
    elif kind == "length":
        body = b'{"status": "success", "data": []}'
        length = draw(st.sampled_from(["0", "5", "1000", str(10**12), str(10**20), "-1", "x"]))
    else:
        body = json.dumps({"status": "success", "data": draw(data_answer(endpoint, valid=True))}).encode()
        delay, trickle = draw(st.sampled_from([(0.05, False), (TIMEOUT_S + 0.5, False), (0.0, True)]))
    return Answer(status, body, delay, length, trickle)


ENDPOINTS = ("buildinfo", "query", "query_range", "labels", "series")


def endpoint_of(path: str) -> str:
    path = path.split("?")[0]
    if path.endswith("/status/buildinfo"):
        return "buildinfo"
    if path.endswith("/query_range"):
        return "query_range"
    if path.endswith("/query"):
        return "query"
    return "labels" if "/label/" in path else "series"


@dataclass
class Persona:
    """A server: per endpoint, valid answers in turn, except where ``bad`` holds another for that turn."""

    valid: dict[str, list[Answer]]
    bad: dict[tuple[str, int], Answer]
    asked: dict[str, int] = field(default_factory=dict)

    def route(self, handler: BaseHTTPRequestHandler) -> None:
        endpoint = endpoint_of(handler.path)
        with LOCK:
            turn = self.asked.get(endpoint, 0)
            self.asked[endpoint] = turn + 1
        answer = self.bad.get((endpoint, turn)) or self.valid[endpoint][turn % len(self.valid[endpoint])]
        if answer.delay_s:
            time.sleep(answer.delay_s)
        body = answer.grid.body(getattr(handler, "request_body", b"")) if answer.grid else answer.body
        handler.send_response(answer.status)
        handler.send_header("Content-Type", "application/json")
        handler.send_header("Content-Length", answer.length or str(len(body)))
        handler.end_headers()
        if answer.trickle:
            deadline = time.monotonic() + TIMEOUT_S + 1
            for byte in body:
                if time.monotonic() > deadline:
                    return
                handler.wfile.write(bytes([byte]))
                handler.wfile.flush()
                time.sleep(0.2)
            return
        handler.wfile.write(body)

    def slow_answers(self) -> int:
        return sum(answer.slow() for answer in self.bad.values())


LOCK = threading.Lock()
bad_turns = st.tuples(st.sampled_from(ENDPOINTS), st.integers(0, 12)).flatmap(
    lambda key: st.tuples(st.just(key), bad_answers(key[0]))
)
personas = st.builds(
    Persona,
    st.fixed_dictionaries(
        {endpoint: st.lists(valid_answers(endpoint), min_size=1, max_size=3) for endpoint in ENDPOINTS}
    ),
    st.lists(bad_turns, max_size=2).map(dict),
)
LIVE_SPECS = ("apiserver-errors", "write-latency", "runtime-errors-per-pool", "kubelet-targets")
BACKTEST_SPECS = ("apiserver-errors", "runtime-errors-per-pool")  # a ratio and a joined one; all four doubles the time
MAX_RSS_GROWTH_MB = 1024


def rss_mb() -> float:
    return resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024


@pytest.fixture(scope="module")
def live_tree(tmp_path_factory: pytest.TempPathFactory) -> Path:
    specs = {name: live_data.PREFLIGHT_SPECS[name] for name in LIVE_SPECS}
    return live_data.write_tree(tmp_path_factory.mktemp("live") / "specs", specs)


def run_live(persona: Persona, argv: list[str], tree: Path) -> None:
    with hostile(persona.route, []) as url:
        began = time.monotonic()
        code, out, err = _run_cli(
            [*argv, "--prometheus", url, "--specs", str(tree), "--timeout", f"{TIMEOUT_S:g}"], tree
        )
        elapsed = time.monotonic() - began
    what = f"{argv[0]} against {persona.valid} and, at these turns, {persona.bad}"[:6000]
    assert_answered(code, out, err, what)
    if code == 2:
        assert err.count("\n") == 1 and err.startswith("slo-compiler: "), f"{what}\n{err[-2000:]}"
    bound = 10 + persona.slow_answers() * (TIMEOUT_S + 1)
    assert elapsed < bound, f"{what}\ntook {elapsed:.1f}s, more than {bound:.0f}s"


def test_preflight_against_random_server_answers(live_tree: Path) -> None:
    start = rss_mb()

    @_settings(30)
    @given(persona=personas)
    def one(persona: Persona) -> None:
        run_live(persona, ["preflight"], live_tree)
        assert rss_mb() - start < MAX_RSS_GROWTH_MB, "memory grew past the bound"

    one()


def test_backtest_against_random_server_answers(live_tree: Path) -> None:
    start = rss_mb()

    @_settings(25)
    @given(persona=personas, warmup=st.sampled_from(["0", "1h", "2h"]))
    def one(persona: Persona, warmup: str) -> None:
        run_live(persona, ["backtest", "--last", "1h", "--warmup", warmup, *BACKTEST_SPECS], live_tree)
        assert rss_mb() - start < MAX_RSS_GROWTH_MB, "memory grew past the bound"

    one()
