"""A spec's generated tests and the proof that its cheaper rules equal their raw forms, in one promtool run.

Some recorded series are computed from other series recorded earlier in the same evaluation instead of from the raw
series (``queries.raw_expressions``): a fleet's slice series from the per-unit value, a ratio's total and bad rates
from its parts, a latency bad rate from the recorded total. The proof (test_rule_cost) is that each equals its raw
form at every evaluation of every generated case of the spec, on the generated tests' own inputs, and that the
comparison can fail: the raw form scaled by 1.01 plus 0.001 (the mutant) must differ somewhere.

Most of a promtool run is loading a case's inputs, evaluation by evaluation (node-readiness: 8,012 series, 20 s of
CPU), so the comparison rides in the run that proves the generated tests (test_generated_tests) instead of loading
the same inputs a second time (issue 23: one promtool run per generated file):

- the test file is the generated one with two checks added to each case, and a second rule file: the raw forms,
  and as recorded series, where each series differs from its raw form and where it differs from the mutant;
- the comparison records series and raises no alert, so no ``ALERTS`` check of the generated cases can see it;
- ``group_eval_order`` evaluates the spec's groups first, so the comparison reads their series of the same
  evaluation;
- both files sit in one directory and name each other by file name, so every pytest worker writes the same bytes
  and ``tests.promtool_runs`` runs the proof once in a test run, whichever test asks first.

A verdict passes the generated tests when every check that failed is a mutant's (exit code 1 is expected, as the
mutants fail); the comparison holds when no series differs from its raw form and every mutant was caught.
"""

from __future__ import annotations

import atexit
import copy
import dataclasses
import functools
import re
import shutil
import tempfile
from pathlib import Path
from typing import Any

import yaml

from compiler.model import SLO, Model, queries, series
from compiler.promql import parse_duration
from tests.promtool_runs import promtool_test
from tests.support import LIBRARY_SPECS, REPO_ROOT, compile_tree

GENERATED = REPO_ROOT / "generated" / "prometheus"

# The library's specs with a series whose rules read other recorded series (``differing_specs`` keeps it true).
COMPARED = (
    *("apf-workload-shedding", "apiserver-5xx", "apiserver-read-latency", "apiserver-terminated-requests"),
    *("apiserver-throttled-requests", "apiserver-write-latency", "arp-neighbor-table", "client-request-errors"),
    *("cluster-dns-latency", "cluster-dns-servfail", "conntrack-exhaustion", "etcd-grpc-failures"),
    *("etcd-request-latency", "gpu-memory-row-remap", "infiniband-port-errors", "kubelet-certificate-expiry"),
    *("nic-drop-budget", "nic-error-budget", "node-file-descriptors", "node-filesystem-inodes"),
    *("node-filesystem-space", "node-oom-kills", "node-readiness", "pod-sandbox-latency", "pod-startup-latency"),
    *("pod-startup-latency-per-pool", "scheduler-pod-scheduling-latency"),
)

DIFFERS = "test:derived_differs"
MUTANT = "test:mutant_differs"
MUTANT_SCALE = " * 1.01 + 0.001"
GROUP = "test-derived-comparison"

# One failed check in promtool's report: its expression, and what it expected and got.
_FAILED_CHECK = re.compile(r'^ +expr: "(?P<expr>.*)", time: \S+,\n +exp: nil\n +got: (?P<got>.*)$', re.MULTILINE)


@functools.cache
def library() -> Model:
    """The library's model, compiled once per process."""
    return compile_tree(LIBRARY_SPECS)


def differing(slo: SLO) -> list[tuple[str, str]]:
    """(recorded series, its raw form) for each series of ``slo`` whose rule reads other recorded series."""
    ours, raw = queries.raw_expressions(slo), queries.raw_expressions(slo, same_evaluation=False)
    return [(name, expression) for name, expression in raw.items() if expression != ours.get(name)]


def differing_specs(model: Model) -> list[str]:
    return sorted(slo.name for slo in model.slos if differing(slo))


def _differs(new: str, old: str, scale: str) -> str:
    return f"abs({new} - {old}{scale}) > 1e-9 * (abs({old}) + 1)\nor ({new} unless {old})\nor ({old} unless {new})"


def comparison_rules(slo: SLO) -> dict[str, Any]:
    """The raw forms of ``slo``'s derived series, and where each differs from the spec's series and the mutant's."""
    rules: list[dict[str, Any]] = []
    for index, (name, raw) in enumerate(differing(slo)):
        new, old = series.recorded(name, slo), f'test:raw_{index}{{slo="{slo.name}"}}'
        labels = {"compared": name}  # two comparisons that differ at once record two series
        rules += [
            {"record": f"test:raw_{index}", "expr": raw, "labels": {"slo": slo.name}},
            {"record": DIFFERS, "expr": _differs(new, old, ""), "labels": labels},
            {"record": MUTANT, "expr": _differs(new, old, MUTANT_SCALE), "labels": labels},
        ]
    return {"groups": [{"name": GROUP, "interval": "1m", "rules": rules}]}


def _eval_end(case: dict[str, Any]) -> str:
    """The latest evaluation time a generated test case looks at."""
    times = [str(t["eval_time"]) for key in ("promql_expr_test", "alert_rule_test") for t in case.get(key, [])]
    return max(times, key=lambda text: parse_duration(text) or 0)


def proof_tests(tests_text: str, rules_name: str, comparison_name: str, groups: list[str]) -> dict[str, Any]:
    """The generated test file, with its rule file and the comparison's, and two checks more per case."""
    document: dict[str, Any] = copy.deepcopy(yaml.safe_load(tests_text))
    document["rule_files"] = [rules_name, comparison_name]
    document["group_eval_order"] = [*groups, GROUP]
    for case in document["tests"]:
        end = _eval_end(case)
        case.setdefault("promql_expr_test", []).extend(
            {"expr": f"max_over_time({name}[{end}])", "eval_time": end, "exp_samples": []} for name in (DIFFERS, MUTANT)
        )
    return document


@dataclasses.dataclass(frozen=True)
class Verdict:
    """promtool's verdict on a spec's generated tests with the comparison."""

    output: str
    returncode: int
    differs: int  # failed checks of the comparison itself
    caught: int  # failed checks of the mutant's comparison (each one catches it)
    unexplained: str  # the report less the mutants' failed checks: empty unless a generated check failed too

    @property
    def generated_tests_pass(self) -> bool:
        """Every check of the generated cases held: nothing failed but the mutants' checks, which did (so promtool
        evaluated the cases)."""
        return not self.unexplained and self.differs == 0 and self.caught > 0 and self.returncode == 1


_ROOT: list[Path] = []


def _directory(spec: str) -> Path:
    if not _ROOT:
        _ROOT.append(Path(tempfile.mkdtemp(prefix="slo-derived-proofs-")))
        atexit.register(shutil.rmtree, _ROOT[0], ignore_errors=True)
    directory = _ROOT[0] / spec
    directory.mkdir(exist_ok=True)
    return directory


def write_proof(directory: Path, slo: SLO, rules_text: str, tests_text: str) -> Path:
    """The proof's three files in ``directory``; returns the test file."""
    rules, comparison = f"{slo.name}.rules.yaml", f"{slo.name}.comparison.rules.yaml"
    (directory / rules).write_text(rules_text, encoding="utf-8")
    (directory / comparison).write_text(yaml.safe_dump(comparison_rules(slo), sort_keys=False), encoding="utf-8")
    groups = [str(group["name"]) for group in yaml.safe_load(rules_text)["groups"]]
    test = directory / f"{slo.name}.test.yaml"
    test.write_text(yaml.safe_dump(proof_tests(tests_text, rules, comparison, groups), sort_keys=False))
    return test


def judge(output: str, returncode: int, test_name: str) -> Verdict:
    differs = caught = 0
    for found in _FAILED_CHECK.finditer(output):
        if f"max_over_time({MUTANT}[" in found["expr"]:
            caught += 1
        elif f"max_over_time({DIFFERS}[" in found["expr"]:
            differs += 1
    rest = "\n".join(
        found.group(0) for found in _FAILED_CHECK.finditer(output) if f"max_over_time({MUTANT}[" not in found["expr"]
    )
    rest += "\n" + _FAILED_CHECK.sub("", output)
    expected = ("FAILED:", "SUCCESS", f"Unit Testing:  {test_name}")
    unexplained = "\n".join(line for line in rest.splitlines() if line.strip() and line.strip() not in expected)
    return Verdict(output, returncode, differs, caught, unexplained)


def verdict(spec: str) -> Verdict:
    """The library spec's generated tests with its comparison, run once per test run (``tests.promtool_runs``)."""
    slo = next(slo for slo in library().slos if slo.name == spec)
    rules_text = (GENERATED / "rules" / f"{spec}.rules.yaml").read_text(encoding="utf-8")
    tests_text = (GENERATED / "tests" / f"{spec}.test.yaml").read_text(encoding="utf-8")
    test = write_proof(_directory(spec), slo, rules_text, tests_text)
    result = promtool_test(test)
    return judge(result.stdout + result.stderr, result.returncode, test.name)
