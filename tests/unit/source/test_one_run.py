"""Every problem in one run (issue 11, item 5): schema errors no longer hide the semantic ones.

A new gauge spec used to take four failing runs in three phases: schema errors first, then
owner, bucket and aggregation errors only once those were fixed. Now the semantic checks
run on every section that passed its schema, cross-spec checks see every named spec, and
the specs that built are test-derived while others fail. Each test runs ``validate``
in-process (``compiler.cli.main``) with cwd at the temp tree, so paths print relative.
"""

from __future__ import annotations

import contextlib
import io
import os
from pathlib import Path

from compiler.cli import main
from tests.conftest import SLO_RELATIVE, make_spec_tree

SPEC = f"specs/{SLO_RELATIVE.as_posix()}"

MITIGATION = """\
mitigation:
  summary: Scale it.
  steps: [Scale the deployment.]
  stop_conditions: [An upstream is down.]
  escalation: Page the on-call.
"""

# A gauge spec as a first-time author writes it, with `unit` where the manual used to list it.
INFLIGHT = (
    """\
apiVersion: slo-compiler/v1
kind: SLO
name: apiserver-inflight
family: watch-list-volume
owner: platform-netwrk
description: Read requests in flight per cluster, as a share of the limit.
slice:
  by: [cluster]
sli:
  gauge:
    expr: 'sum(apiserver_current_inflight_requests) / 400'
    unit: ratio
normal_range:
  max: 0.8
persistence:
  for: 10m
"""
    + MITIGATION
)

POD_SCHEDULING = (
    """\
apiVersion: slo-compiler/v1
kind: SLO
name: pod-scheduling
family: scheduling-api-latency
owner: platform-network
description: Pods are scheduled within 5 s.
slice:
  by: [cluster]
sli:
  latency:
    histogram: scheduler_pod_scheduling_sli_duration_seconds
    threshold: 5
objective:
  target: 99%
  period: 30days
"""
    + MITIGATION
)

# Valid as far as every check of the source stage goes; only its tests cannot be derived.
ROOT_OF_QUEUE = (
    """\
apiVersion: slo-compiler/v1
kind: SLO
name: queue-root
family: watch-list-volume
owner: platform-network
description: The square root of the queue length.
slice:
  by: [cluster]
sli:
  gauge:
    expr: 'sqrt(sum by (cluster) (workqueue_depth))'
normal_range:
  max: 30
persistence:
  for: 10m
"""
    + MITIGATION
)


def validate(root: Path) -> tuple[int, list[str]]:
    """``validate --specs specs`` in ``root``: (exit code, the problem lines)."""
    previous = Path.cwd()
    err, out = io.StringIO(), io.StringIO()
    os.chdir(root)
    try:
        with contextlib.redirect_stderr(err), contextlib.redirect_stdout(out):
            code = main(["validate", "--specs", "specs"])
    finally:
        os.chdir(previous)
    stderr = err.getvalue()
    assert "Traceback" not in stderr and "internal error" not in stderr and "compiler bug" not in stderr, stderr
    return code, [line for line in stderr.splitlines() if not line.startswith("slo-compiler: ")]


def tree(tmp_path: Path, **specs: str) -> Path:
    """The valid tree of conftest plus ``specs`` (file stem -> text) under specs/network/."""
    if not (tmp_path / "specs").exists():
        make_spec_tree(tmp_path / "specs")
    for stem, text in specs.items():
        (tmp_path / "specs" / "network" / f"{stem}.yaml").write_text(text, encoding="utf-8")
    return tmp_path


def test_new_gauge_spec_gets_every_problem_in_one_run(tmp_path: Path) -> None:
    """The reproduction: a schema error, an unknown owner, an aggregation dropping a slice label, a
    latency threshold off the bucket edges and an underivable spec, all reported by one run."""
    code, problems = validate(
        tree(tmp_path, inflight=INFLIGHT, **{"pod-scheduling": POD_SCHEDULING, "queue-root": ROOT_OF_QUEUE})
    )
    assert code == 1
    inflight, scheduling, root = (f"specs/network/{stem}.yaml" for stem in ("inflight", "pod-scheduling", "queue-root"))
    expected = [
        f"{inflight}:5:8: unknown owner 'platform-netwrk' (teams: platform-network, platform-nodes); "
        "did you mean 'platform-network'?",
        f"{inflight}:11:11: sli.gauge.expr drops slice label(s) cluster in an aggregation; keep them in every "
        "'by (...)' so each alert fires per slice",
        f"{inflight}:12:5: unknown key 'unit' in sli.gauge; 'unit' is a top-level field: move it out of sli.gauge",
        f"{scheduling}:12:16: latency threshold 5 is not a bucket edge of "
        "scheduler_pod_scheduling_sli_duration_seconds; nearest edges: 2.56 or 5.12",
        f'{scheduling}:15:11: objective.period is not a Prometheus duration (write e.g. 30s, 5m, 1h30m, 30d): "30days"',
    ]
    assert problems[: len(expected)] == expected
    assert len(problems) == len(expected) + 1, problems
    assert problems[-1].startswith(f"{root}:9:1: cannot generate the promtool tests that prove its alerts: ")


def test_schema_error_and_unknown_owner_in_one_spec_come_together(tmp_path: Path, slo_file: Path) -> None:
    text = slo_file.read_text(encoding="utf-8")
    slo_file.write_text(text.replace("owner: platform-network", "owner: platform-netwrk").replace("30d", "30 days"))
    code, problems = validate(tmp_path)
    assert code == 1
    assert problems == [
        f"{SPEC}:5:8: unknown owner 'platform-netwrk' (teams: platform-network, platform-nodes); "
        "did you mean 'platform-network'?",
        f'{SPEC}:16:11: objective.period is not a Prometheus duration (write e.g. 30s, 5m, 1h30m, 30d): "30 days"',
    ]


def test_misspelt_optional_key_does_not_hide_the_bucket_check(tmp_path: Path) -> None:
    """An unknown key breaks no section: the rest of the spec is checked as if it were not there."""
    text = POD_SCHEDULING.replace("30days", "30d").replace("objective:", "critcal_range: {max: 0.1}\nobjective:")
    code, problems = validate(tree(tmp_path, **{"pod-scheduling": text}))
    assert code == 1
    assert [problem.split(": ", 1)[0] for problem in problems] == [
        "specs/network/pod-scheduling.yaml:12:16",
        "specs/network/pod-scheduling.yaml:13:1",
    ]
    assert "not a bucket edge" in problems[0]
    assert "unknown key 'critcal_range' at the top level; did you mean 'critical_range'?" in problems[1]


def test_duplicate_name_is_reported_for_a_spec_with_a_schema_error(tmp_path: Path) -> None:
    copy = POD_SCHEDULING.replace("name: pod-scheduling", "name: dns-errors")
    code, problems = validate(tree(tmp_path, **{"pod-scheduling": copy}))
    assert code == 1
    assert problems == [
        "specs/network/pod-scheduling.yaml:3:7: duplicate spec name 'dns-errors' (first defined at "
        "specs/network/dns-errors.yaml:3:7)",
        "specs/network/pod-scheduling.yaml:15:11: objective.period is not a Prometheus duration (write e.g. 30s, "
        '5m, 1h30m, 30d): "30days"',
    ]


def test_explaining_a_spec_with_problems_is_not_an_unknown_spec(tmp_path: Path, slo_file: Path) -> None:
    """The explained spec did not build, but it exists: only its own problem is reported."""
    slo_file.write_text(
        slo_file.read_text(encoding="utf-8") + "explains: [{slo: pod-scheduling, equal: [cluster]}]\n",
        encoding="utf-8",
    )
    on_an_edge = POD_SCHEDULING.replace("threshold: 5", "threshold: 5.12")
    code, problems = validate(tree(tmp_path, **{"pod-scheduling": on_an_edge}))
    assert code == 1
    assert problems == [
        "specs/network/pod-scheduling.yaml:15:11: objective.period is not a Prometheus duration (write e.g. 30s, "
        '5m, 1h30m, 30d): "30days"'
    ]
