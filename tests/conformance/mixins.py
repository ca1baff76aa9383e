"""The mixins' own promtool tests as cases for the library's equivalent specs (issue 25, item 4).

Each vendored mixin (``tests/fixtures/mixins/<folder>/``, with its licence and a SOURCE file
naming the repository, path and commit) ships ``alert_rule_test`` entries: at ``eval_time`` the
mixin's alert fires (``exp_alerts`` listed) or is silent (none). For every mixin alert the manual's
coverage table marks covered or improved, each such entry is a ``Case``: the same
``input_series``, with the job labels translated to the stack the library compiles for
(``slo_specs/project.yaml``'s ``scrape_profile``, read through ``compiler.model.stacks``) and the
series listed in ``ADDITIONS`` added, each with why a real cluster has it.

``probe`` asks promtool two questions per case, on the library's rule files (or on the mixin's
own rendered rules, on the untranslated input): which of the alerts fire at ``eval_time``, and the
first minute each fired by ``eval_time`` plus the lag the manual documents for it. promtool answers
them as failures listing what each query returned (as ``compiler.review.behaviour`` does), tagged
with ``or vector(-k)`` so every answer is found again.
"""

from __future__ import annotations

import re
from collections.abc import Iterable, Sequence
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import Any

import yaml

from compiler.model.stacks import BUILT_IN_STACKS
from compiler.promql.samples import parse_samples
from tests.promtool_runs import promtool_test
from tests.unit.test_docs_coverage import TABLES

REPO = Path(__file__).resolve().parents[2]
FIXTURES = REPO / "tests" / "fixtures" / "mixins"
RULES = REPO / "generated" / "prometheus" / "rules"
CLAIMED = ("covered", "improved")


@dataclass(frozen=True)
class Mixin:
    name: str  # the heading in docs/library.md: "### <name> (<n> alerts)"
    folder: str  # under tests/fixtures/mixins/
    test_files: tuple[str, ...]  # relative to the folder, as the mixin ships them
    rules: str  # the mixin's alerts rendered from its jsonnet (see SOURCE)
    # the mixin's job label value -> the component (compiler.model.stacks) and the target labels the stack adds
    jobs: dict[str, tuple[str, dict[str, str]]]


MIXINS = (
    Mixin(
        "kubernetes-mixin",
        "kubernetes-mixin",
        ("tests/absent_alert-test.yaml", "tests/tests.yaml", "tests/resource_alerts-test.yaml"),
        "prometheus_alerts.yaml",
        {
            "kube-apiserver": ("apiserver", {}),
            # the kubelet ServiceMonitor scrapes three paths, each target labelled with its metrics_path
            "kubelet": ("kubelet", {"metrics_path": "/metrics"}),
            "kube-scheduler": ("kube-scheduler", {}),
            "kube-controller-manager": ("kube-controller-manager", {}),
            "kube-proxy": ("kube-proxy", {}),
            "kube-state-metrics": ("kube-state-metrics", {}),
        },
    ),
    Mixin("etcd mixin", "etcd", ("test.yaml",), "etcd-prometheusRules.yaml", {"etcd": ("etcd", {})}),
    Mixin("CoreDNS mixin", "coredns", ("tests.yaml",), "prometheus_alerts.yaml", {"kube-dns": ("coredns", {})}),
)
# The node-mixin (prometheus/node_exporter docs/node-mixin at a7dcc3a0) ships no promtool tests.


@dataclass(frozen=True)
class Addition:
    """A series added to a mixin test's input: one any real cluster has, and why."""

    series: str  # in the stack's labels already
    values: str
    why: str


@dataclass(frozen=True)
class Case:
    mixin: Mixin
    file: str
    group: int  # 1-based index of the test group in the file
    alert: str  # the mixin's alert
    minute: int  # eval_time
    fires: bool  # the mixin's test expects its alert at eval_time
    ours: tuple[str, ...]  # the docs row's alerts
    spec_files: tuple[str, ...]  # the docs row's specs, as rule files
    input_series: tuple[tuple[str, str], ...]  # as the mixin wrote it
    translated: tuple[tuple[str, str], ...] = field(default=())  # on the stack, with the additions

    @property
    def id(self) -> str:
        return f"{self.mixin.folder}/{self.file}#{self.group} {self.alert} @{self.minute}m"


def stack() -> str:
    text = (REPO / "slo_specs" / "project.yaml").read_text(encoding="utf-8")
    match = re.search(r"^scrape_profile:\n  stack: ([a-z-]+)\n", text, re.MULTILINE)
    assert match, "slo_specs/project.yaml no longer sets scrape_profile.stack on two lines"
    return match.group(1)


def job_of(component: str) -> str:
    matchers = BUILT_IN_STACKS[stack()].component(component)
    assert matchers and matchers[0].name == "job" and matchers[0].op == "=", component
    return matchers[0].value


_JOB = re.compile(r'(?<![A-Za-z0-9_])job="([^"]*)"')


def translate(series: str, mixin: Mixin) -> str:
    """``series`` with its job label that of the stack's scrape of the same component, and the labels it adds."""
    match = _JOB.search(series)
    assert match, f"{mixin.name}: a series without a job label: {series}"
    assert match.group(1) in mixin.jobs, f"{mixin.name}: no component for job={match.group(1)!r} in {series}"
    component, labels = mixin.jobs[match.group(1)]
    added = "".join(f', {name}="{value}"' for name, value in labels.items() if f'{name}="' not in series)
    return f'{series[: match.start()]}job="{job_of(component)}"{added}{series[match.end() :]}'


_TOKEN = re.compile(r"(_|stale|-?\d+(?:\.\d+)?)(?:([+-]\d+(?:\.\d+)?)?x(\d+))?")


def scrape_samples(series: str, values: str) -> tuple[str, str] | None:
    """The ``scrape_samples_scraped`` Prometheus writes with an ``up`` series: 0 on a failed scrape, else a count."""
    if not series.startswith("up{"):
        return None
    out = []
    for token in values.split():
        match = _TOKEN.fullmatch(token)
        assert match and match.group(1) in ("_", "stale", "0", "1") and match.group(2) in (None, "+0"), token
        value = {"0": "0", "1": "100"}.get(match.group(1), match.group(1))
        step = "" if value in ("_", "stale") else "+0"
        out.append(value if match.group(3) is None else f"{value}{step}x{match.group(3)}")
    return "scrape_samples_scraped" + series.removeprefix("up"), " ".join(out)


def minutes(text: str) -> int:
    match = re.fullmatch(r"(?:(\d+)h)?(?:(\d+)m)?", str(text).strip())
    assert match and text, f"eval_time {text!r} is not whole minutes"
    return int(match.group(1) or 0) * 60 + int(match.group(2) or 0)


def claimed_rows(mixin: Mixin) -> dict[str, tuple[tuple[str, ...], tuple[str, ...]]]:
    """Mixin alert -> (our specs, our alerts), for the manual's covered and improved rows."""
    rows = TABLES[mixin.name][2]
    return {row[0]: (tuple(row[1].split(", ")), tuple(row[2].split(", "))) for row in rows if row[3] in CLAIMED}


def _groups(mixin: Mixin, file: str) -> list[dict[str, Any]]:
    document = yaml.safe_load((FIXTURES / mixin.folder / file).read_text(encoding="utf-8"))
    return list(document["tests"])


def tested_alerts(mixin: Mixin) -> set[str]:
    """Every alert some ``alert_rule_test`` of the mixin's tests names."""
    return {
        str(item["alertname"])
        for file in mixin.test_files
        for group in _groups(mixin, file)
        for item in group.get("alert_rule_test") or []
    }


def cases(additions: dict[str, tuple[Addition, ...]]) -> list[Case]:
    """Every ``alert_rule_test`` entry on a claimed alert, in file order; ``additions`` per case id prefix."""
    found = []
    for mixin in MIXINS:
        claimed = claimed_rows(mixin)
        for file in mixin.test_files:
            for index, group in enumerate(_groups(mixin, file), start=1):
                assert str(group.get("interval", "1m")) == "1m", (file, index)
                series = tuple((str(s["series"]), str(s["values"])) for s in group.get("input_series") or [])
                for test in group.get("alert_rule_test") or []:
                    alert = str(test["alertname"])
                    if alert in claimed:
                        specs, ours = claimed[alert]
                        files = tuple(f"{spec}.rules.yaml" for spec in specs)
                        fires = bool(test.get("exp_alerts"))
                        case = Case(mixin, file, index, alert, minutes(test["eval_time"]), fires, ours, files, series)
                        found.append(replace(case, translated=_on_the_stack(case, additions)))
    return found


def _on_the_stack(case: Case, additions: dict[str, tuple[Addition, ...]]) -> tuple[tuple[str, str], ...]:
    """The case's input as the stack delivers it: job labels translated, scrape series derived, additions added."""
    translated = tuple((translate(name, case.mixin), values) for name, values in case.input_series)
    derived = tuple(pair for pair in (scrape_samples(name, values) for name, values in translated) if pair)
    added = tuple((a.series, a.values) for key, extra in additions.items() if case.id.startswith(key) for a in extra)
    return translated + derived + added


@dataclass(frozen=True)
class Answer:
    at: frozenset[str]  # the alerts firing at eval_time
    first: dict[str, int]  # alert -> the first minute it fired, up to eval_time plus the lag


_TAG = re.compile(r"or vector\(-(\d+)\)\"?, time:")


def _questions(alerts: Sequence[str], minute: int, horizon: int, tag: int) -> list[dict[str, Any]]:
    names = "|".join(re.escape(alert) for alert in alerts)
    firing = f'ALERTS{{alertstate="firing",alertname=~"{names}"}}'
    return [
        {"expr": f"count by (alertname) ({firing}) or vector(-{tag})", "eval_time": f"{minute}m", "exp_samples": []},
        {
            "expr": f"min by (alertname) (min_over_time((timestamp({firing}) / 60)[{horizon + 1}m:1m]))"
            f" or vector(-{tag + 1})",
            "eval_time": f"{horizon}m",
            "exp_samples": [],
        },
    ]


Question = tuple[Sequence[str], int, int]  # alerts, eval_time and horizon in minutes


def probe(
    workdir: Path, rule_files: Iterable[Path], groups: Sequence[tuple[Sequence[tuple[str, str]], Sequence[Question]]]
) -> list[list[Answer]]:
    """For each group's input series and each of its (alerts, minute, horizon): the alerts firing at the
    minute, and the first minute each fired by the horizon. One promtool run; each group a test group."""
    tags: list[list[int]] = []
    tests = []
    asked = 0
    for series, questions in groups:
        tags.append([2 * (asked + i) + 1 for i in range(len(questions))])
        asked += len(questions)
        tests.append(
            {
                "interval": "1m",
                "input_series": [{"series": name, "values": values} for name, values in series],
                "promql_expr_test": [
                    item
                    for tag, (alerts, minute, horizon) in zip(tags[-1], questions, strict=True)
                    for item in _questions(alerts, minute, horizon, tag)
                ],
            }
        )
    test = workdir / "conformance.test.yaml"
    document = {"rule_files": [str(path) for path in rule_files], "evaluation_interval": "1m", "tests": tests}
    test.write_text(yaml.safe_dump(document, sort_keys=False, width=1000), encoding="utf-8")
    result = promtool_test(test, timeout=300)  # its questions' answers are the failures it prints: kept as well
    answers = _answers(result.stdout + result.stderr)
    output = result.stdout + result.stderr
    assert len(answers) == 2 * asked, f"promtool answered {len(answers)} of {2 * asked} questions:\n{output}"
    return [
        [
            Answer(
                at=frozenset(labels["alertname"] for labels, _ in answers[tag]),
                first={labels["alertname"]: round(value) for labels, value in answers[tag + 1]},
            )
            for tag in group_tags
        ]
        for group_tags in tags
    ]


def _answers(output: str) -> dict[int, list[tuple[dict[str, str], float]]]:
    """Tag -> the samples promtool reports its question returned (the tag's own ``vector(-k)`` left out)."""
    answers: dict[int, list[tuple[dict[str, str], float]]] = {}
    tag: int | None = None
    for line in output.splitlines():
        text = line.strip()
        match = _TAG.search(text) if text.startswith("expr:") else None
        if match:
            tag = int(match.group(1))
        elif text.startswith("got:") and tag is not None:
            answers[tag] = [(labels, value) for labels, value in parse_samples(text.removeprefix("got:")) if labels]
            tag = None
    return answers
