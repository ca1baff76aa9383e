"""Tune: propose a spec's normal range, critical range and persistence from the history a Prometheus holds.

A view over the backtest's model. The spec's own signal (the recorded value its range alerts compare,
asked of the server as the backtest asks its raw-reading rules: range queries at the group's interval,
bounded in steps and points) gives the distribution the candidates come from: for an upper bound the
p99, p99.9 and largest value seen times a headroom, for a lower bound the p1, p0.1 and smallest divided
by it, for a relative bound the same quantiles of the value over itself ``offset`` ago, each rounded to
two significant digits away from the data (a number a person writes, in the spec's unit), next to the
value the spec has now. The critical range gets the higher quantiles and more headroom. Persistence
(``for``) gets the current value and the shortest longer wait that halves the firings.

Every candidate is judged by replaying the spec's rules with the backtest engine, the candidate's value
put into the model (nothing else changes) and the rules rendered again by the caller; the server is
asked once (``Remembering`` keeps its answers), so the candidates after the first replay in memory.
"""

from __future__ import annotations

import dataclasses
import math
import threading
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any, Literal

from compiler.live import CONCURRENCY
from compiler.live.backtest import Backtest, _signal, _signal_names, inline_for_server, needed, rules_of, warmup_ms
from compiler.live.client import Client, Labels, QueryError
from compiler.live.coverage import when
from compiler.live.memory import keep_freed_memory
from compiler.live.steps import StepError, Store
from compiler.live.summary import clipped
from compiler.model import SLO, Range
from compiler.model.warmup import change_shows_ms
from compiler.model.windows import DAY, HOUR, MAX_WAIT_MS, MINUTE
from compiler.plan import SpecPlan
from compiler.promql import format_duration
from compiler.text.numbers import go_float
from compiler.text.terminal import printable

Section = Literal["normal_range", "critical_range"]
Side = Literal["Above", "Below"]
Field = Literal["maximum", "minimum", "max_factor", "min_factor", "for_ms"]
WEEK_MS = 7 * DAY
HEADROOM = {"normal_range": 1.2, "critical_range": 1.5}  # how far past the quantile a bound sits
# The quantiles each band's candidates start from: (name, quantile of the upper tail); a lower bound
# reads the mirrored quantile (p99 -> p1), a factor the quantiles of value / value offset ago.
QUANTILES: dict[Section, tuple[tuple[str, float], ...]] = {
    "normal_range": (("p99", 0.99), ("p99.9", 0.999), ("max", 1.0)),
    "critical_range": (("p99.9", 0.999), ("max", 1.0)),
}
SUMMARY_QUANTILES = (("min", 0.0), ("p1", 0.01), ("p50", 0.5), ("p99", 0.99), ("p99.9", 0.999), ("max", 1.0))
# The waits a persistence candidate is chosen from (whole minutes, at most MAX_WAIT_MS).
FOR_LADDER_MS = tuple(m * MINUTE for m in (1, 2, 3, 5, 10, 15, 20, 30, 45, 60, 90, 120, 180, 240, 360, 480, 720, 1440))
MAX_FOR_REPLAYS = 8  # persistence candidates replayed at most, besides the current wait
DEFAULT_PICK: dict[str, str] = {"normal_range": "p99.9", "critical_range": "max", "persistence": "current"}


class Remembering(Client):
    """A client that asks the server each distinct query once: every candidate's replay reads the same
    raw-reading rules over the same grid, so only the first replay goes to the server."""

    def __init__(self, *args: Any, **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        self._answers: dict[tuple[str, float, float, float], list[tuple[Labels, list[tuple[float, float]]]]] = {}
        self._instant: dict[tuple[str, float | None], list[tuple[Labels, float]]] = {}
        self._raw: dict[tuple[Any, int, int], Sequence[Any]] = {}
        self._lock = threading.Lock()

    def query_range(
        self, expr: str, start: float, end: float, step_s: float
    ) -> list[tuple[Labels, list[tuple[float, float]]]]:
        key = (expr, start, end, step_s)
        with self._lock:
            known = self._answers.get(key)
        if known is None:
            known = super().query_range(expr, start, end, step_s)
            with self._lock:
                self._answers[key] = known
        return known

    def read_raw(self, matchers: Sequence[Any], start_ms: int, end_ms: int) -> Sequence[Any]:
        key = (tuple(matchers), start_ms, end_ms)
        with self._lock:
            known = self._raw.get(key)
        if known is None:
            known = super().read_raw(matchers, start_ms, end_ms)
            with self._lock:
                self._raw[key] = known
        return known

    def query(self, expr: str, at: float | None = None) -> list[tuple[Labels, float]]:
        key = (expr, at)
        with self._lock:
            known = self._instant.get(key)
        if known is None:
            known = super().query(expr, at)
            with self._lock:
                self._instant[key] = known
        return known


@dataclass(frozen=True)
class Window:
    """What every replay of one tune shares: the span, its warm-up, the group's interval and the spec's bounds."""

    start_ms: int
    end_ms: int
    warmup_ms: int | None
    interval_ms: int
    budget: int | None = None
    series: int | None = None
    concurrency: int = CONCURRENCY
    engine: str = "local"  # backtest's engine: "local" (remote read, rules evaluated here) or "server"


@dataclass(frozen=True)
class Knob:
    """One value of the spec that tune proposes: where it is written and what it sets in the model."""

    key: tuple[str, ...]  # its place in the spec, e.g. ("normal_range", "max")
    sections: tuple[Section, ...]  # the bands it sets (persistence.for: every band without its own for)
    field: Field
    current: float
    level: Literal["Normal", "Critical"]
    side: Side | None  # the alerts it judges; None: both sides

    @property
    def name(self) -> str:
        return ".".join(self.key)


@dataclass
class Outcome:
    """One candidate replayed: its alert's firings inside the window and the data."""

    fires: int = 0
    firing_ms: int = 0
    longest_ms: int = 0
    covered_ms: int = 0
    problems: list[str] = field(default_factory=list)

    @property
    def per_week(self) -> float:
        return self.fires * WEEK_MS / self.covered_ms if self.covered_ms else 0.0


@dataclass(frozen=True)
class Candidate:
    pick: str  # p99, p99.9, max, p1, p0.1, min, current, halves
    value: float
    basis: float | None  # the quantile of the history it starts from (None: current, or a wait)
    headroom: float | None


_BOUNDS: tuple[tuple[str, Field, Side], ...] = (
    ("max", "maximum", "Above"),
    ("min", "minimum", "Below"),
    ("max_factor", "max_factor", "Above"),
    ("min_factor", "min_factor", "Below"),
)
SECTIONS: tuple[Section, ...] = ("normal_range", "critical_range")


def knobs(slo: SLO, data: Mapping[str, Any]) -> list[Knob]:
    """The values tune proposes, in the spec's order: each band's static bounds and factors, then its wait."""
    found: list[Knob] = []
    for section in SECTIONS:
        band: Range | None = getattr(slo, section)
        if band is None or (section == "critical_range" and slo.fleet is not None):
            continue  # a fleet's critical range judges each unit's value, not the slice's that tune reads
        level: Literal["Normal", "Critical"] = "Normal" if section == "normal_range" else "Critical"
        for name, fld, side in _BOUNDS:
            factor = fld.endswith("factor")
            value = getattr(band.relative, fld, None) if factor else getattr(band, fld)
            if value is not None:
                key = (section, "relative", name) if factor else (section, name)
                found.append(Knob(key, (section,), fld, value, level, side))
    normal = slo.normal_range
    if normal is not None:
        own = _has_for(data, "normal_range")
        follows = tuple(s for s in SECTIONS if getattr(slo, s) is not None and not _has_for(data, s))
        key = ("normal_range", "for") if own else ("persistence", "for")
        found.append(Knob(key, ("normal_range",) if own else follows, "for_ms", normal.for_ms, "Normal", None))
    return found


def _has_for(data: Mapping[str, Any], section: str) -> bool:
    return isinstance(data.get(section), dict) and "for" in data[section]


def with_value(slo: SLO, knob: Knob, value: float) -> SLO:
    """The spec's model with the knob set to ``value``; nothing else changes."""
    changes: dict[str, Any] = {}
    for section in knob.sections:
        band: Range | None = getattr(slo, section)
        if band is None:
            continue
        if knob.field == "for_ms":
            band = dataclasses.replace(band, for_ms=int(value))
        elif knob.field == "maximum":
            band = dataclasses.replace(band, maximum=value)
        elif knob.field == "minimum":
            band = dataclasses.replace(band, minimum=value)
        elif band.relative is not None and knob.field == "max_factor":
            band = dataclasses.replace(band, relative=dataclasses.replace(band.relative, max_factor=value))
        elif band.relative is not None:
            band = dataclasses.replace(band, relative=dataclasses.replace(band.relative, min_factor=value))
        changes[section] = band
    return dataclasses.replace(slo, **changes)


# -- the history --------------------------------------------------------------------------------


@dataclass(frozen=True)
class History:
    """The spec's value per slice at every step from ``back_ms`` before the window to its end."""

    start_index: int  # the first step inside the window
    step_ms: int
    values: dict[tuple[tuple[str, str], ...], list[float | None]]

    def seen(self) -> list[float]:
        """Every finite value inside the window, sorted."""
        return sorted(
            v for row in self.values.values() for v in row[self.start_index :] if v is not None and math.isfinite(v)
        )

    def ratios(self, offset_ms: int, floor: float, rising: bool) -> list[float]:
        """Each value over itself ``offset_ms`` earlier, where the bound could cross: a rise once the value is at
        the floor or more, a fall when the earlier value was; sorted."""
        back = max(1, round(offset_ms / self.step_ms))
        found = []
        for row in self.values.values():
            for index in range(max(self.start_index, back), len(row)):
                now, then = row[index], row[index - back]
                if now is None or then is None or not then > 0 or not math.isfinite(now / then):
                    continue
                if (now if rising else then) >= floor:
                    found.append(now / then)
        return sorted(found)


def history(bt: Backtest, spec: SpecPlan, rule_file: bytes, window: Window, back_ms: int) -> History:
    """The spec's current value (the recorded gauge, or the 5m error ratio) from the server, over the window
    and ``back_ms`` before it, at the group's interval: the rules that record it, as range queries."""
    interval, rules = rules_of(rule_file)
    step = interval or window.interval_ms
    # from where the replays start (their warm-up), so that their range queries of the value are these
    warm = window.warmup_ms if window.warmup_ms is not None else warmup_ms(needed(rules))
    grid = bt.grid(step, max(back_ms, warm))
    bt.series_limit = window.budget
    names = _signal_names(spec.slo)
    first = max(0, -(-(window.start_ms - grid.start_ms) // step))
    if bt.engine == "local":  # the rules recording it, evaluated here on the raw series the replays read too
        try:
            store = bt.local_history(spec, needed(rules), grid, names)
        except (StepError, QueryError) as exc:
            bt.result.problems.append(f"{spec.slo.name}: the history of the spec's value: {exc}")
            return History(first, step, {})
        return History(first, step, _signal(spec.slo, store))
    store = Store(grid)
    for rule in rules:
        if rule.kind == "record" and rule.name in names:
            try:
                steps = bt.from_server(inline_for_server(rule, rules, spec.slo), grid)
            except StepError as exc:  # more series than the budget, or a rule backtest cannot run
                bt.result.problems.append(f"{spec.slo.name}: the history of {rule.name}: {exc}")
                return History(first, step, {})
            store.put_vectors(rule.name, rule.labels, steps)
    return History(first, step, _signal(spec.slo, store))


def quantile(values: Sequence[float], q: float) -> float:
    """The q-quantile of sorted values, interpolated linearly between the nearest ranks."""
    position = q * (len(values) - 1)
    low = math.floor(position)
    high = min(low + 1, len(values) - 1)
    return values[low] + (values[high] - values[low]) * (position - low)


def person_number(value: float, up: bool) -> float:
    """Two significant digits, rounded away from the data (up for an upper bound, down for a lower one)."""
    if value == 0 or not math.isfinite(value):
        return value
    exponent = math.floor(math.log10(abs(value))) - 1
    scaled = value / 10.0**exponent
    digits = math.ceil(scaled - 1e-9) if up else math.floor(scaled + 1e-9)
    return float(f"{digits}e{exponent}")


def number_text(value: float) -> str:
    """A value as a person writes it in a spec: 72000000000, 1.5, 0.013."""
    if value == int(value) and abs(value) < 1e16:
        return str(int(value))
    return repr(value)


def value_text(knob: Knob, value: float) -> str:
    return format_duration(int(value)) if knob.field == "for_ms" else number_text(value)


# -- candidates -----------------------------------------------------------------------------------

MIRRORED = {"p99": "p1", "p99.9": "p0.1", "max": "min"}


def candidates(slo: SLO, knob: Knob, found: History) -> list[Candidate]:
    """The current value, then one candidate per quantile of the band (none without history); a value
    no bound may take (a factor not past 1, a lower bound not above 0) is left out."""
    section = knob.sections[0]
    headroom = HEADROOM[section]
    band: Range | None = getattr(slo, section)
    rel = band.relative if band is not None else None
    upper = knob.field in ("maximum", "max_factor")
    if knob.field in ("maximum", "minimum"):
        seen = found.seen()
    elif rel is not None:
        seen = found.ratios(rel.offset_ms, rel.floor, rising=upper)
    else:
        seen = []
    listed = [Candidate("current", knob.current, None, None)]
    for name, q in QUANTILES[section] if seen else ():
        basis = quantile(seen, q if upper else 1 - q)
        value = person_number(past(basis, headroom, upper), up=upper)
        if not math.isfinite(value):
            continue
        if knob.field == "max_factor" and not value > 1:
            continue
        if knob.field == "min_factor" and not 0 < value < 1:
            continue
        if knob.field == "minimum" and basis > 0 and not value > 0:
            continue
        listed.append(Candidate(name if upper else MIRRORED[name], value, basis, headroom))
    return listed


def past(basis: float, headroom: float, upper: bool) -> float:
    """``basis`` moved away from the data by the headroom: up for an upper bound, down for a lower one (on
    either side of 0)."""
    return basis * headroom if (basis > 0) == upper else basis / headroom


def for_limit_ms(slo: SLO, knob: Knob) -> int:
    """The longest wait the spec allows the knob: a day, and less than every relative offset it sets the
    wait of, minus the time a change takes to show in the value (the spec's own check)."""
    limit = MAX_WAIT_MS
    for section in knob.sections:
        band: Range | None = getattr(slo, section)
        if band is not None and band.relative is not None:
            limit = min(limit, band.relative.offset_ms - change_shows_ms(slo.sli) - MINUTE)
    return limit


# -- replays ----------------------------------------------------------------------------------------

Compile = Callable[[SLO], tuple[SpecPlan, bytes]]  # a spec's model -> its plan and its rendered rule file


def alert_names(spec: SpecPlan, knob: Knob) -> list[str]:
    return list(
        dict.fromkeys(
            alert.name
            for alert in spec.alerts
            if alert.kind == "range" and alert.level == knob.level and knob.side in (None, alert.side)
        )
    )


def replay(client: Client, compile_spec: Compile, window: Window, slo: SLO, knob: Knob) -> Outcome:
    """The spec with one candidate's value, replayed by the backtest engine: its knob's alerts' firings."""
    spec, rule_file = compile_spec(slo)
    bt = Backtest(
        client, window.start_ms, window.end_ms, window.warmup_ms, concurrency=window.concurrency, engine=window.engine
    )
    bt.run_spec(spec, rule_file, window.interval_ms, window.budget, window.series)
    names = set(alert_names(spec, knob))
    outcome = Outcome(problems=list(bt.result.problems))
    coverage = bt.result.coverage.get(slo.name)
    outcome.covered_ms = coverage.covered_ms if coverage is not None else window.end_ms - window.start_ms
    for interval, part in clipped(bt.result):
        if interval.alert in names:
            outcome.fires += 1
            outcome.firing_ms += part.firing_ms
            outcome.longest_ms = max(outcome.longest_ms, part.firing_ms)
    return outcome


def judged(
    client: Client, compile_spec: Compile, window: Window, slo: SLO, knob: Knob, listed: Sequence[Candidate]
) -> list[tuple[Candidate, Outcome]]:
    """Each candidate with its replay (a value two candidates share is replayed once)."""
    done: dict[float, Outcome] = {}
    for candidate in listed:
        if candidate.value not in done:
            done[candidate.value] = replay(client, compile_spec, window, with_value(slo, knob, candidate.value), knob)
    return [(candidate, done[candidate.value]) for candidate in listed]


def waits(
    client: Client, compile_spec: Compile, window: Window, slo: SLO, knob: Knob
) -> list[tuple[Candidate, Outcome]]:
    """The current wait, and the shortest longer one (of FOR_LADDER_MS, within the spec's limits) that at
    least halves the firings, when the current wait fires at all."""
    now = replay(client, compile_spec, window, slo, knob)
    found = [(Candidate("current", knob.current, None, None), now)]
    if not now.fires:
        return found
    limit = for_limit_ms(slo, knob)
    for wait in [w for w in FOR_LADDER_MS if knob.current < w <= limit][:MAX_FOR_REPLAYS]:
        outcome = replay(client, compile_spec, window, with_value(slo, knob, wait), knob)
        if outcome.fires * 2 <= now.fires:
            found.append((Candidate("halves", wait, None, None), outcome))
            break
    return found


# -- the report -------------------------------------------------------------------------------------


def tune(
    client: Client,
    spec: SpecPlan,
    data: Mapping[str, Any],
    compile_spec: Compile,
    window: Window,
    positions: Mapping[tuple[str | int, ...], tuple[int, int]] | None = None,
) -> dict[str, Any]:
    """Every knob of the spec with its candidates and their replays, as plain data (the JSON output). Freed
    memory is kept in the process (``memory``): the replays allocate as a backtest's do."""
    keep_freed_memory()
    slo = spec.slo
    found_knobs = knobs(slo, data)
    back = max(
        (band.relative.offset_ms for band in (slo.normal_range, slo.critical_range) if band and band.relative),
        default=0,
    )
    _, rule_file = compile_spec(slo)
    bt = Backtest(client, window.start_ms, window.end_ms, 0, concurrency=window.concurrency, engine=window.engine)
    found = history(bt, spec, rule_file, window, back)
    seen = found.seen()
    rows: list[dict[str, Any]] = []
    problems: list[str] = list(bt.result.problems)
    for knob in found_knobs:
        if knob.field == "for_ms":
            pairs = waits(client, compile_spec, window, slo, knob)
        else:
            pairs = judged(client, compile_spec, window, slo, knob, candidates(slo, knob, found))
        problems += [p for _, outcome in pairs for p in outcome.problems if p not in problems]
        line, column = (positions or {}).get(knob.key, (0, 0))
        rows.append(
            {
                "note": "" if len(pairs) > 1 else _why_only_current(slo, knob, seen),
                "key": knob.name,
                "line": line,
                "column": column,
                "current": knob.current,
                "current_text": value_text(knob, knob.current),
                "alerts": alert_names(spec, knob),
                "candidates": [_candidate_json(knob, c, o) for c, o in pairs],
            }
        )
    covered = rows[0]["candidates"][0]["covered_ms"] if rows else window.end_ms - window.start_ms
    return {
        "spec": slo.name,
        "unit": slo.unit,
        "from_ms": window.start_ms,
        "to_ms": window.end_ms,
        "covered_ms": covered,
        "values_seen": len(seen),
        "slices": len(found.values),
        "seen": {name: quantile(seen, q) for name, q in SUMMARY_QUANTILES} if seen else {},
        "knobs": rows,
        "problems": problems,
        "queries": client.requests,
    }


def _why_only_current(slo: SLO, knob: Knob, seen: Sequence[float]) -> str:
    """Why a knob has no candidate but its current value, in words."""
    if knob.field == "for_ms":
        return "the current wait never fires here: nothing to halve"
    if not seen:
        return "no values in the window: nothing to propose from"
    band: Range | None = getattr(slo, knob.sections[0])
    rel = band.relative if band is not None else None
    if knob.field.endswith("factor") and rel is not None:
        return (
            f"no value and its value {format_duration(rel.offset_ms)} earlier at the floor "
            f"({number_text(rel.floor)}) or more in the window: no ratio to propose from"
        )
    return "every quantile gives a value this bound cannot take"


def _candidate_json(knob: Knob, candidate: Candidate, outcome: Outcome) -> dict[str, Any]:
    return {
        "pick": candidate.pick,
        "value": int(candidate.value) if knob.field == "for_ms" else candidate.value,
        "text": value_text(knob, candidate.value),
        "basis": candidate.basis,
        "headroom": candidate.headroom,
        "fires": outcome.fires,
        "fires_per_week": outcome.per_week,
        "per_week": per_week_text(outcome.per_week),
        "firing_ms": outcome.firing_ms,
        "firing": duration_text(outcome.firing_ms),
        "longest_ms": outcome.longest_ms,
        "longest": duration_text(outcome.longest_ms),
        "covered_ms": outcome.covered_ms,
    }


def per_week_text(per_week: float) -> str:
    """``3.5/week``: one decimal under 10, whole numbers above."""
    if per_week == 0:
        return "0/week"
    return f"{per_week:.1f}/week" if per_week < 10 else f"{per_week:.0f}/week"


def duration_text(ms: int) -> str:
    """``56m 18s``, ``2d 3h``, ``0s``: whole seconds, for people."""
    seconds = max(0, round(ms / 1000))
    parts = []
    for unit, size in (("d", DAY // 1000), ("h", HOUR // 1000), ("m", 60), ("s", 1)):
        if seconds >= size:
            parts.append(f"{seconds // size}{unit}")
            seconds %= size
    return " ".join(parts) or "0s"


def render_table(report: Mapping[str, Any], source: str = "") -> str:
    """The report for a terminal: what the history held, then per knob its candidates and their firings."""
    spec = printable(str(report["spec"]))
    lines = [
        f"{spec}: {duration_text(report['covered_ms'])} of history from {when(report['from_ms'])} to "
        f"{when(report['to_ms'])}, {report['values_seen']:,} values of {report['slices']} slice(s)"
    ]
    seen = report["seen"]
    lines.append(
        "seen: " + "  ".join(f"{name} {value:.4g}" for name, value in seen.items())
        if seen
        else "seen: no values in the window: only the current values are replayed"
    )
    for row in report["knobs"]:
        where = f" ({source}:{row['line']}:{row['column']})" if source and row["line"] else ""
        lines += ["", f"{row['key']}{where}, now {row['current_text']}: {', '.join(row['alerts'])}"]
        if row["note"]:
            lines.append(f"  ({row['note']})")
        table = [["pick", "value", "from", "fires", "per week", "firing", "longest"]]
        by = " / " if row["key"].endswith(("min", "min_factor")) else " x "
        for c in row["candidates"]:
            basis = "" if c["basis"] is None else f"{c['basis']:.4g}{by}{go_float(c['headroom'])}"
            table.append([c["pick"], c["text"], basis, str(c["fires"]), c["per_week"], c["firing"], c["longest"]])
        widths = [max(len(r[i]) for r in table) for i in range(len(table[0]))]
        lines += ["  " + "  ".join(cell.ljust(w) for cell, w in zip(r, widths, strict=True)).rstrip() for r in table]
    for problem in report["problems"]:
        lines.append(f"problem: {printable(problem)}")
    return "\n".join(lines) + "\n"


def choose(report: Mapping[str, Any], picks: Sequence[str]) -> dict[str, dict[str, Any]] | str:
    """The candidate to write per knob: ``--pick NAME`` for every knob that has it, ``--pick KEY=NAME`` for one,
    the current value for the rest; without picks the defaults (normal range p99.9, critical range max,
    persistence current). Or why not."""
    rows = {row["key"]: row for row in report["knobs"]}
    wanted: dict[str, str] = {}
    for key in rows:  # with picks given, what they do not name stays as it is
        wanted[key] = "current" if picks else DEFAULT_PICK["persistence" if key.endswith(".for") else key.split(".")[0]]
    for pick in picks:
        key, _, name = pick.rpartition("=")
        if key and key not in rows:
            return f"--pick {pick}: the spec has no {key} (it has {', '.join(rows) or 'nothing to tune'})"
        names = {c["pick"] for row in rows.values() for c in row["candidates"]}
        if name not in names or (key and all(c["pick"] != name for c in rows[key]["candidates"])):
            return f"--pick {pick}: no candidate named {name} (candidates: {', '.join(sorted(names))})"
        for target in [key] if key else list(rows):
            if any(c["pick"] == name for c in rows[target]["candidates"]):
                wanted[target] = name
    chosen = {}
    for key, name in wanted.items():
        found = next((c for c in rows[key]["candidates"] if c["pick"] == name), None)
        chosen[key] = found or rows[key]["candidates"][0]
    return chosen
