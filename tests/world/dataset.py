"""A data set: the world's series plus what must (and must not) happen, as a promtool test file.

Every assertion reads ``ALERTS``, the series the rule engine writes for each pending and firing
alert, so "nothing fires or is pending" is one query per window and needs no list of alert
names: an alert added to the library later is covered the day it is generated.
"""

from __future__ import annotations

import hashlib
import json
import pickle
import tempfile
import zlib
from dataclasses import dataclass, field, replace
from pathlib import Path

from tests.world import (
    apiserver_extra,
    autoscaler,
    client_requests,
    control_plane,
    controller_manager,
    coredns_forward,
    daemonsets,
    etcd_health,
    gpus,
    groups,
    kube_proxy,
    kubelet_agents,
    monitoring,
    node_basics,
    node_lifecycle,
    nodes,
    pod_images,
    static_pods,
    untouched,
)
from tests.world.stack import StackView
from tests.world.timeline import Series
from tests.world.topology import World

# ALERTS is read in windows this long: a window of every minute's samples, small enough that
# a storm of per-node alerts stays under promtool's 10,000-sample limit per query.
WINDOW_MIN = 30


_REPO = Path(__file__).resolve().parents[2]
# Everything a data set is built from: the world's modules and the compiler's stack and bucket tables.
_SOURCES = (_REPO / "tests" / "world", _REPO / "compiler" / "model")
# The world's modules that only judge data, never build it: editing them keeps the data sets.
_JUDGES_ONLY = frozenset({"groups.py", "promtool.py", "untouched.py"})
CACHE = _REPO / ".cache" / "world-data"


def _sources_digest() -> str:
    digest = hashlib.sha256()
    for directory in _SOURCES:
        for path in sorted(directory.glob("*.py")):
            if path.name not in _JUDGES_ONLY and not path.name.startswith("test_"):
                digest.update(path.name.encode() + b"\0" + path.read_bytes() + b"\0")
    return digest.hexdigest()


def every_series(world: World, stack: StackView) -> list[Series]:
    """The whole world as one stack scrapes it, from .cache/world-data/ when built before.

    The cache key is the content of every module the data is built from, the world (its
    clusters, minutes and faults) and the stack: any change to them builds the data again.
    Entries built from other sources are removed when a new one is written.
    """
    sources = _sources_digest()
    key = hashlib.sha256(f"{sources}\n{world!r}\n{stack!r}".encode()).hexdigest()
    path = CACHE / f"{sources[:16]}-{key[:40]}.pickle.z"
    try:
        found: list[Series] = pickle.loads(zlib.decompress(path.read_bytes()))
        return found
    except (OSError, EOFError, zlib.error, pickle.UnpicklingError):
        pass
    out = with_shared_samples(build_series(world, stack))
    try:
        CACHE.mkdir(parents=True, exist_ok=True)
        for old in CACHE.glob("*.pickle.z"):
            if not old.name.startswith(sources[:16]):
                old.unlink(missing_ok=True)
        with tempfile.NamedTemporaryFile(dir=CACHE, suffix=".tmp", delete=False) as temporary:
            temporary.write(zlib.compress(pickle.dumps(out, protocol=pickle.HIGHEST_PROTOCOL), 1))
        Path(temporary.name).replace(path)  # atomic: a parallel worker reads a whole file or none
    except OSError:
        pass  # a read-only checkout builds the data every time
    return out


def with_shared_samples(data: list[Series]) -> list[Series]:
    """``data`` with equal samples held once, and each series' notation worked out (``Series.text``).

    Most series repeat another's samples (day one: 4,489 distinct among 35,956 series, the many flat
    gauges and idle counters), and pickle writes an object shared by several series once: the cache
    file of day one went from 37 MB to 8.5 MB and its load from 1.1 s to 0.44 s. The notations are
    pickled with the series, so a test writing the data set does not work them out again.
    """
    first: dict[tuple[float | None, ...], Series] = {}
    out = []
    for item in data:
        kept = first.setdefault(item.samples, item)
        if kept is item:
            _ = item.text
            out.append(item)
            continue
        twin = replace(item, samples=kept.samples)
        twin.__dict__["text"] = kept.text  # Series.text is a cached_property: the same samples, the same notation
        out.append(twin)
    return out


def build_series(world: World, stack: StackView) -> list[Series]:
    """The whole world as one stack scrapes it (no cache)."""
    out: list[Series] = []
    for cluster in world.clusters:
        for exporter in (control_plane.apiserver, control_plane.etcd, control_plane.scheduler, control_plane.coredns):
            out += exporter(world, cluster, stack)
        out += apiserver_extra.apiserver_extra(world, cluster, stack)
        out += etcd_health.etcd_health(world, cluster, stack)
        out += controller_manager.controller_manager(world, cluster, stack)
        out += client_requests.clients(world, cluster, stack)
        out += nodes.kube_state_metrics(world, cluster, stack)
        out += static_pods.series_for(world, cluster, stack)
        out += pod_images.series_for(world, cluster, stack)
        out += autoscaler.series_for(world, cluster, stack)
        for node in world.nodes(cluster):
            out += nodes.kubelet(world, node, stack) + nodes.node_exporter(world, node, stack)
        out += node_basics.series_for(world, cluster, stack)
        out += gpus.series_for(world, cluster, stack)
        out += kubelet_agents.series_for(world, cluster, stack)
        out += kube_proxy.series_for(world, cluster, stack)
        out += node_lifecycle.series_for(world, cluster, stack)
        out += daemonsets.series_for(world, cluster, stack)
        out += coredns_forward.series_for(world, cluster, stack)
    out += monitoring.self_health(world, stack, out)  # last: it derives the scrape series from every `up`
    return out


@dataclass(frozen=True)
class Fires:
    """An alert that must be firing at ``by_minute`` for ``team``, on the slice ``matchers`` name.

    ``alertname`` None accepts any name of the team, severity and slice; the incidents all name theirs
    (``test_every_incident_names_the_alert_it_expects``): with any name, every file with an alert for
    the team could raise it and is judged, none left to day one (bad-nic: 13 files, not 1).
    ``alternatives`` are extra matcher sets of which one must hold (node-exporter's ``instance``
    is an address on one stack and the node name on the other; a joined alert carries ``node``).
    """

    team: str
    by_minute: int
    alertname: str | None = None
    severity: str | None = None
    matchers: tuple[tuple[str, str], ...] = ()
    alternatives: tuple[tuple[tuple[str, str], ...], ...] = ((),)

    def selector(self) -> str:
        common = {"alertstate": "firing", "team": self.team, **dict(self.matchers)}
        if self.alertname:
            common["alertname"] = self.alertname
        if self.severity:
            common["severity"] = self.severity
        parts = []
        for extra in self.alternatives:
            labels = {**common, **dict(extra)}
            parts.append("ALERTS{" + ",".join(f'{key}="{value}"' for key, value in labels.items()) + "}")
        return " or ".join(parts)


@dataclass(frozen=True)
class Expected:
    """An alert a deployment of the data set raises on purpose, and why it is right there.

    It must be firing at ``by_minute`` (``pending_only``: it must pend at some minute and never
    fire), and the quiet and page checks leave exactly it out (its alert name and slice; with
    ``pending_only`` only its pending series), so every other alert still fails them.
    """

    alertname: str
    why: str
    matchers: tuple[tuple[str, str], ...]
    by_minute: int = 0
    pending_only: bool = False

    def selector(self, state: str | None = None) -> str:
        labels = {"alertname": self.alertname, **dict(self.matchers)}
        if state is not None:
            labels["alertstate"] = state
        return "ALERTS{" + ",".join(f'{key}="{value}"' for key, value in labels.items()) + "}"

    def excused(self) -> str:
        """The ALERTS series the quiet and page checks leave out."""
        return self.selector("pending" if self.pending_only else None)


@dataclass(frozen=True)
class Expectations:
    """What a data set asserts about ALERTS between ``quiet_from`` and the end of the data."""

    quiet_from: int  # minutes of warm-up not judged by the quiet check
    quiet_except: tuple[str, ...] = ()  # slo values the quiet check leaves out (known failures)
    fires: tuple[Fires, ...] = ()
    pages_only: tuple[str, ...] | None = None  # when set: no page except ALERTS matching these selectors
    raising: tuple[str, ...] = field(default=())  # slo values that must raise something (keeps lists honest)
    premises: tuple[tuple[str, int, float], ...] = ()  # (raw-series expr, minute, value): the data is what it claims
    # No page (pending counts) from minute 0, warm-up included: day one says so for every file, which is
    # what lets an incident leave out the files its fault cannot change (tests/world/untouched.py).
    no_pages: bool = False
    expected: tuple[Expected, ...] = ()  # alerts the data set raises on purpose (checked both ways)


def _windows(start: int, end: int) -> list[int]:
    """Window end times covering (start, end] in WINDOW_MIN steps."""
    return [*list(range(start + WINDOW_MIN, end, WINDOW_MIN)), end]


def _excused(expect: Expectations, window: str) -> str:
    return "".join(f" unless max_over_time({item.excused()}{window})" for item in expect.expected)


def _quiet_tests(world: World, expect: Expectations) -> list[dict[str, object]]:
    if expect.pages_only is not None:
        return []
    skip = f',slo!~"{"|".join(expect.quiet_except)}"' if expect.quiet_except else ""
    tests: list[dict[str, object]] = []
    previous = expect.quiet_from
    for end in _windows(expect.quiet_from, world.minutes):
        window = f"[{end - previous}m]"
        expr = f'max_over_time(ALERTS{{alertstate=~"pending|firing"{skip}}}{window})' + _excused(expect, window)
        tests.append({"expr": expr, "eval_time": f"{end}m", "exp_samples": []})
        previous = end
    return tests


def _page_tests(world: World, expect: Expectations) -> list[dict[str, object]]:
    if expect.pages_only is None and not expect.no_pages:
        return []
    skip = f',slo!~"{"|".join(expect.quiet_except)}"' if expect.quiet_except else ""
    tests: list[dict[str, object]] = []
    previous = 0
    for end in _windows(0, world.minutes):
        window = f"[{end - previous}m]"
        expr = f'max_over_time(ALERTS{{severity="page",shadow!="true"{skip}}}{window})'
        for allowed in expect.pages_only or ():
            expr += f" unless max_over_time({allowed}{window})"
        expr += _excused(expect, window)
        tests.append({"expr": expr, "eval_time": f"{end}m", "exp_samples": []})
        previous = end
    return tests


def _fires_tests(expect: Expectations) -> list[dict[str, object]]:
    return [
        {
            "expr": f"clamp_max(count({fires.selector()}), 1)",
            "eval_time": f"{fires.by_minute}m",
            "exp_samples": [{"labels": "{}", "value": 1}],
        }
        for fires in expect.fires
    ]


def _expected_tests(world: World, expect: Expectations) -> list[dict[str, object]]:
    """Each expected alert fires by its minute, or (pending only) pends at some minute and never fires."""
    tests: list[dict[str, object]] = []
    one = [{"labels": "{}", "value": 1}]
    span, end = f"[{world.minutes}m:1m]", f"{world.minutes}m"
    for item in expect.expected:
        if item.pending_only:
            pended = f"clamp_max(count(max_over_time({item.selector('pending')}{span})), 1)"
            tests.append({"expr": pended, "eval_time": end, "exp_samples": one})
            fired = f"count(max_over_time({item.selector('firing')}{span}))"
            tests.append({"expr": fired, "eval_time": end, "exp_samples": []})
        else:
            fires = f"clamp_max(count({item.selector('firing')}), 1)"
            tests.append({"expr": fires, "eval_time": f"{item.by_minute}m", "exp_samples": one})
    return tests


def _raising_tests(world: World, expect: Expectations) -> list[dict[str, object]]:
    if not expect.raising:
        return []
    span = world.minutes - expect.quiet_from
    expr = f'group by (slo) (max_over_time(ALERTS{{slo=~"{"|".join(expect.raising)}"}}[{span}m:1m]))'
    samples = [{"labels": f'{{slo="{slo}"}}', "value": 1} for slo in sorted(expect.raising)]
    return [{"expr": expr, "eval_time": f"{world.minutes}m", "exp_samples": samples}]


def _premise_tests(expect: Expectations) -> list[dict[str, object]]:
    return [
        {"expr": expr, "eval_time": f"{minute}m", "exp_samples": [{"labels": "{}", "value": value}]}
        for expr, minute, value in expect.premises
    ]


@dataclass(frozen=True)
class Written:
    """One promtool test file of a data set, and the input series it holds."""

    path: Path
    series: frozenset[str]  # each input series' selector


def write_tests(
    directory: Path,
    rule_files: list[Path],
    world: World,
    stack: StackView,
    expect: Expectations,
    data: list[Series] | None = None,
) -> list[Written]:
    """Write the data set's promtool test files into ``directory``: one per group of rule files, the premises in one
    of their own (tests/world/groups.py says why a group's verdict is the whole one's); JSON is YAML.

    ``data`` is ``every_series(world, stack)`` when the caller has it already.
    """
    data = every_series(world, stack) if data is None else data
    parts = _parts(rule_files, expect)
    written = []
    for index, (files, part) in enumerate(parts):
        checks = _quiet_tests(world, expect) + _page_tests(world, expect) + _fires_tests(part)
        checks += _expected_tests(world, part) + _raising_tests(world, part)
        if len(parts) == 1 or not expect.premises:
            checks += _premise_tests(expect)
        written.append(_write(directory / f"world-{index}.test.json", files, data, checks))
    if len(parts) > 1 and expect.premises:
        written.append(_write(directory / "world-premises.test.json", [], data, _premise_tests(expect)))
    return written


def _parts(rule_files: list[Path], expect: Expectations) -> list[tuple[list[Path], Expectations]]:
    """Each group's files and the alerts it must raise; one group when an alert cannot be placed in exactly one."""
    one = [(rule_files, expect)]
    parts = groups.partition(rule_files)
    if len(parts) < 2 or any(item.alertname is None for item in expect.fires):  # any name: any group may raise it
        return one
    alerts = [groups.alerts(files) for files in parts]
    slos = [{path.name.removesuffix(".rules.yaml") for path in files} for files in parts]

    def where(found: list[int]) -> int | None:
        return found[0] if len(found) == 1 else 0 if not found else None  # nowhere: the first reports it

    fires = [where([i for i, names in enumerate(alerts) if item.alertname in names]) for item in expect.fires]
    expected = [where([i for i, names in enumerate(alerts) if item.alertname in names]) for item in expect.expected]
    raising = [where([i for i, names in enumerate(slos) if slo in names]) for slo in expect.raising]
    if None in fires + expected + raising:
        return one
    return [
        (
            files,
            replace(
                expect,
                fires=tuple(item for item, at in zip(expect.fires, fires, strict=True) if at == index),
                expected=tuple(item for item, at in zip(expect.expected, expected, strict=True) if at == index),
                raising=tuple(slo for slo, at in zip(expect.raising, raising, strict=True) if at == index),
            ),
        )
        for index, files in enumerate(parts)
    ]


def _write(path: Path, rule_files: list[Path], data: list[Series], checks: list[dict[str, object]]) -> Written:
    # Only the series a selector of a rule or a check matches (name and labels): the others cannot
    # change a verdict, and parsing and loading them was most of promtool's time.
    selection = untouched.selected_by(rule_files, [str(check["expr"]) for check in checks])
    inputs = [(item.selector(), item.text) for item in data if selection is None or selection.keeps(item)]
    document = {
        "rule_files": [str(rule) for rule in rule_files],
        "evaluation_interval": "1m",
        "tests": [{"interval": "30s", "input_series": packed(inputs), "promql_expr_test": checks}],
    }
    path.write_text(json.dumps(document, indent=0), encoding="utf-8")
    return Written(path, frozenset(selector for selector, _text in inputs))


# Series lines per ``input_series`` entry (see ``packed``).
SERIES_PER_ENTRY = 500


def packed(inputs: list[tuple[str, str]], per_entry: int = SERIES_PER_ENTRY) -> list[dict[str, str]]:
    """``input_series`` entries holding ``per_entry`` series lines each, for the same load text.

    promtool 2.42 turns a test group's inputs into one ``load`` command by appending
    ``"  {series} {values}\n"`` per entry to a Go string (``result += ...``): each entry copies
    the whole text so far, so the cost grows with entries times text size. Loading day one's 16,330
    series (9.5 MB) took 38 s of promtool's 135 s (2026-12-04, no rules and one check at minute 0;
    half the series loaded in a quarter of the time). An entry whose values go on with ``"\n  {series} {values}"`` lines
    builds the same text, byte for byte, with 500 times fewer copies: day one then took 72 s,
    with the same verdict and the same values read back for every metric name. A promtool that
    read an entry's values alone would reject the second line as a value, so the trick cannot
    pass silently.
    """
    entries = []
    for start in range(0, len(inputs), per_entry):
        (series, values), *rest = inputs[start : start + per_entry]
        entries.append({"series": series, "values": values + "".join(f"\n  {s} {v}" for s, v in rest)})
    return entries
