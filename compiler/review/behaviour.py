"""When each alert first goes pending, fires and resolves on generated test cases, measured with promtool.

A range alert's change is reviewed by its effect on its own generated case (the value
stepped just past the band): how long after the value leaves the band the alert first
fires, before and after. A declared scenario whose expectation the new rules break is
flagged. The generated tests already hold these inputs, so this module re-runs their input
series against the spec's rules with two questions per case instead of the case's own
assertions: the first and the last minute each alert was pending or firing
(``min_over_time`` and ``max_over_time`` of ``timestamp(ALERTS)`` over the case, one answer
per alert state). promtool answers them as failures listing every alert's value, which is
parsed back. Scenario cases are matched across the two revisions by their name with
numbers blanked, since a case name carries the threshold that changed.
"""

from __future__ import annotations

import re
import subprocess
import tempfile
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import yaml

from compiler.model import SLO
from compiler.model.links import rules_path
from compiler.promql.samples import SampleSyntaxError, parse_samples
from compiler.text import human
from compiler.text.yamlin import load_own

_DURATION = re.compile(r"(?:(\d+)d)?(?:(\d+)h)?(?:(\d+)m)?(?:(\d+)s)?")
_NUMBER = re.compile(r"(?<![\w.])\d+(?:\.\d+)?(?:e[+-]?\d+)?(?![\w.])")


@dataclass(frozen=True)
class Timing:
    first: int | None  # minute the alert was first firing, None if never
    last: int | None  # last firing minute
    end: int  # the case's last minute
    pending: int | None = None  # minute the alert was first pending (its condition held), None if never

    @property
    def after_crossing(self) -> int | None:
        """Minutes from the condition first holding (pending, or firing at once without ``for``) to firing."""
        if self.first is None:
            return None
        start = self.first if self.pending is None else min(self.pending, self.first)
        return self.first - start

    def __str__(self) -> str:
        if self.first is None or self.last is None:
            return "never"
        resolved = "still firing" if self.last >= self.end else f"resolves {human.duration((self.last + 1) * 60_000)}"
        return f"fires {human.duration(self.first * 60_000)}, {resolved}"


@dataclass(frozen=True)
class BehaviourChange:
    case: str
    alert: str
    before: str
    after: str
    broken: bool = False  # a scenario expectation the new behaviour no longer meets


Timings = dict[str, dict[str, Timing]]  # case name -> alert key -> timing


def _minutes(text: str) -> int:
    match = _DURATION.fullmatch(text)
    if not match or not text:
        return 0
    days, hours, mins, secs = (int(g) if g else 0 for g in match.groups())
    return days * 1440 + hours * 60 + mins + (1 if secs else 0)


def _case_end(group: dict[str, Any]) -> int:
    times = [
        _minutes(str(item["eval_time"]))
        for key in ("alert_rule_test", "promql_expr_test")
        for item in group.get(key, [])
    ]
    return max(times, default=0)


def _probe(group: dict[str, Any], end: int, index: int) -> dict[str, Any]:
    """The case's inputs with two questions; ``or vector(-index)`` makes each always answer, tagged."""
    firing = "timestamp(ALERTS) / 60"
    questions = [
        {
            "expr": f"{fn}_over_time(({firing})[{end}m:1m]) or vector(-{index})",
            "eval_time": f"{end}m",
            "exp_samples": [],
        }
        for fn in ("min", "max")
    ]
    return {
        "name": group["name"],
        "interval": group.get("interval", "1m"),
        "input_series": group.get("input_series", []),
        "promql_expr_test": questions,
    }


def _alert_key(labels: dict[str, str]) -> str:
    key = labels.get("alertname", "?")
    if "long_window" in labels:
        key += f" {labels['long_window']}/{labels.get('short_window', '')}"
    return key


_TAG = re.compile(r"(min|max)_over_time.* or vector\(-(\d+)\)")


class BehaviourError(RuntimeError):
    """promtool could not run a case at all (not an assertion failure: those are the answers)."""


Answers = dict[tuple[int, str], dict[tuple[str, str], float]]


def _parse(output: str) -> Answers:
    """(case index, min|max) -> (alert key, alert state) -> minute, from promtool's failure report."""
    answers: Answers = {}
    current: tuple[int, str] | None = None
    for line in output.splitlines():
        text = line.strip()
        tag = _TAG.search(text) if text.startswith("expr:") else None
        if tag:
            current = (int(tag.group(2)), tag.group(1))
            answers[current] = {}
        elif text.startswith("got:") and current is not None:
            pick = min if current[1] == "min" else max
            found = answers[current]
            try:
                samples = parse_samples(text.removeprefix("got:"))
            except SampleSyntaxError as exc:
                raise BehaviourError(f"cannot read promtool's answer: {exc}") from None
            for labels, value in samples:
                if "alertname" not in labels:
                    continue  # the tag itself
                key = (_alert_key(labels), labels.get("alertstate", "firing"))
                found[key] = pick(found.get(key, value), value)  # the earliest or latest slice
    return answers


def _run_cases(workdir: Path, rules: str, groups: list[dict[str, Any]]) -> Timings:
    if not groups:
        return {}
    ends = [_case_end(group) for group in groups]
    probes = [_probe(group, end, index + 1) for index, (group, end) in enumerate(zip(groups, ends, strict=True)) if end]
    probe = {"rule_files": [rules], "evaluation_interval": "1m", "tests": probes}
    path = workdir / "prometheus" / "tests" / "probe.test.yaml"
    path.write_text(yaml.safe_dump(probe, sort_keys=False))
    result = subprocess.run(
        ["promtool", "test", "rules", path.name], cwd=path.parent, capture_output=True, text=True, check=False
    )
    output = result.stdout + result.stderr
    if result.returncode != 0 and "got:" not in output:
        raise BehaviourError(f"promtool could not run the cases: {output.strip()[:400]}")
    answers = _parse(output)
    timings: Timings = {}
    for index, (group, end) in enumerate(zip(groups, ends, strict=True), start=1):
        first, last = answers.get((index, "min"), {}), answers.get((index, "max"), {})
        timings[group["name"]] = {
            key: Timing(
                round(first[(key, state)]),
                round(last.get((key, state), first[(key, state)])),
                end,
                round(first[(key, "pending")]) if (key, "pending") in first else None,
            )
            for key, state in first
            if state == "firing"
        }
    return timings


def measure(slo: SLO, files: dict[str, bytes], wanted: Callable[[str], bool] = lambda case: True) -> Timings:
    """Alert timings per generated test case of ``slo`` whose name is ``wanted``, from the rendered ``files``."""
    rules = rules_path(slo)
    tests = next(
        (p for p in sorted(files) if p.startswith("prometheus/") and p.endswith(f"/{slo.name}.test.yaml")), None
    )
    if tests is None or rules not in files:
        return {}
    document = load_own(files[tests].decode("utf-8"))
    with tempfile.TemporaryDirectory(prefix="slo-diff-") as tmp:
        workdir = Path(tmp)
        for path in (rules, tests):
            target = workdir / path
            target.parent.mkdir(parents=True, exist_ok=True)
            target.write_bytes(files[path])
        rule_ref = str(document.get("rule_files", [f"../rules/{Path(rules).name}"])[0])
        groups = [group for group in document.get("tests", []) if wanted(str(group.get("name", "")))]
        return _run_cases(workdir, rule_ref, groups)


def _shape(case: str) -> str:
    return _NUMBER.sub("#", case)


def _expectation_broken(slo: SLO, case: str, timings: dict[str, Timing]) -> bool:
    """Whether a declared scenario's expectation fails with these timings."""
    scenario = next((s for s in slo.scenarios if case.startswith(f"scenario {s.name}:")), None)
    if scenario is None:
        return False
    for expect in scenario.expectations:
        minute = expect.at_ms // 60000
        chosen = [t for key, t in timings.items() if expect.alert is None or key.split(" ")[0].endswith(expect.alert)]
        if expect.kind == "firing" and not any(
            t.first is not None and t.first <= minute <= (t.last or 0) for t in chosen
        ):
            return True
        if expect.kind in ("silent", "nothing") and any(t.first is not None and t.first <= minute for t in chosen):
            return True
    return False


def scenario_breaks(slo: SLO, before: Timings, after: Timings) -> tuple[BehaviourChange, ...]:
    """Each (scenario, alert) whose declared expectation the new timings break: the alerts whose timing moved
    (or, when none moved, those that fire), named by the scenario alone (its case name repeats its description)."""
    by_shape = {_shape(case): timings for case, timings in before.items()}
    changes = []
    for case, timings in after.items():
        if not case.startswith("scenario ") or not _expectation_broken(slo, case, timings):
            continue
        known = case in before or _shape(case) in by_shape
        previous = before[case] if case in before else by_shape.get(_shape(case), {})
        found = []
        for key in sorted({*timings, *previous}):
            was = str(previous[key]) if key in previous else ("never" if known else "(new case)")
            now = str(timings[key]) if key in timings else "never"
            found.append(BehaviourChange(case.split(":", 1)[0], key, was, now, True))
        moved = [change for change in found if change.before != change.after]
        changes += moved or [change for change in found if change.after != "never"]
    return tuple(changes)
