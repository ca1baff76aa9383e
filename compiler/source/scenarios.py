"""The ``scenarios`` section: declared input shapes and what each must make the alerts do."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Literal

from compiler import promql
from compiler.model import (
    SLI,
    AlertKey,
    Expectation,
    GaugeSLI,
    LatencySLI,
    NoData,
    Objective,
    Range,
    RatioSLI,
    Scenario,
    Segment,
    Slice,
    StateSLI,
)
from compiler.model.naming import alert_name_table, default_alert_name
from compiler.model.windows import DAY, MINUTE
from compiler.source.load import PathKey
from compiler.source.reader import SpecReader
from compiler.source.schema import suggest
from compiler.source.spec_types import SLOExpectation, SLOScenario, SLOSegment

# promtool evaluates every rule at every minute of a scenario: 1d of them costs seconds, a year hours.
SCENARIO_LIMIT_MS = DAY


EXPECTATION_KINDS: dict[str, Literal["firing", "silent", "nothing"]] = {
    "fires_by": "firing",
    "silent_until": "silent",
    "nothing_fires_until": "nothing",
}


@dataclass(frozen=True)
class _Context:
    """What every scenario of one spec is checked against."""

    sli: SLI | None
    slice: Slice
    alert_name: str
    alerts: frozenset[str]
    by_default_name: dict[str, str]  # prefix + suffix -> the alert's name (its full name when overridden)
    normal: Range | None
    critical: Range | None

    @property
    def events(self) -> bool:
        return isinstance(self.sli, RatioSLI | LatencySLI | StateSLI)


def read_scenarios(
    r: SpecReader,
    sli: SLI | None,
    slice_: Slice,
    alert_name: str,
    normal: Range | None,
    critical: Range | None,
    objective: Objective | None,
    no_data: NoData,
    alert_names: tuple[tuple[AlertKey, str], ...] = (),
) -> tuple[Scenario, ...]:
    """Declared scenarios: check their shapes fit the SLI and their alerts exist."""
    fleet = "fleet" in r.data
    table = alert_name_table(
        alert_name,
        objective is not None,
        normal,
        critical,
        no_data.enabled,
        dict(alert_names),
        fleet,
        no_data.vanished is not None,
        bool(r.data.get("assumes")),
    )
    by_default = {default_alert_name(alert_name, key): name for key, name in table.items()}
    context = _Context(sli, slice_, alert_name, frozenset(table.values()), by_default, normal, critical)
    result = []
    seen: set[str] = set()
    for index, item in enumerate(r.data.get("scenarios", [])):
        base: PathKey = ("scenarios", index)
        if item["name"] in seen:
            r.error((*base, "name"), f"duplicate scenario name '{item['name']}'")
        seen.add(item["name"])
        result.append(read_scenario(r, base, item, context))
    return tuple(result)


def read_scenario(r: SpecReader, base: PathKey, item: SLOScenario, context: _Context) -> Scenario:
    """One scenario: its slice, its input segments and its expectations."""
    slice_values = []
    for label, value in sorted(item.get("slice", {}).items()):
        if label not in context.slice.by:
            r.error(
                (*base, "slice"),
                f"'{label}' is not a slice label of this spec ({', '.join(context.slice.by) or 'none'})",
            )
        slice_values.append((label, value))
    segments = read_segments(r, base, item["shape"], context)
    total_ms = sum(segment.minutes for segment in segments) * MINUTE
    check_scenario_length(r, base, item, context.normal, context.critical)
    expectations = read_expectations(r, base, item["expect"], total_ms, context)
    return Scenario(
        name=item["name"],
        description=str(item.get("description", "")).strip(),
        slice_values=tuple(slice_values),
        segments=segments,
        expectations=expectations,
    )


def read_segments(r: SpecReader, base: PathKey, shape: list[SLOSegment], context: _Context) -> tuple[Segment, ...]:
    """The scenario's input, stretch by stretch: held, ramped or missing."""
    segments: list[Segment] = []
    for seg_index, seg in enumerate(shape):
        key: PathKey = (*base, "shape", seg_index)
        minutes_ms = r.duration((*key, "for"))
        if minutes_ms <= 0 or minutes_ms % MINUTE:
            r.error((*key, "for"), "a segment lasts a whole, positive number of minutes")
        given = [field for field in ("value", "error_ratio", "ramp_to", "gap") if field in seg]
        if len(given) != 1:
            r.error(key, "a segment needs exactly one of value, error_ratio, ramp_to or gap")
            continue
        _check_segment_fits(r, key, seg, context, first=not segments)
        value = seg.get("value", seg.get("error_ratio", seg.get("ramp_to")))
        segments.append(
            Segment(
                minutes=minutes_ms // MINUTE,
                value=None if value is None else float(value),
                rate=float(seg["rate"]) if "rate" in seg else None,
                ramp="ramp_to" in seg,
                gap="gap" in seg,
            )
        )
    return tuple(segments)


def _check_segment_fits(r: SpecReader, key: PathKey, seg: SLOSegment, context: _Context, *, first: bool) -> None:
    """A segment's fields must be the ones its SLI kind reads."""
    if context.events and "value" in seg:
        r.error((*key, "value"), "this is an event SLI: give the segment an error_ratio (and optionally a rate)")
    if not context.events and "error_ratio" in seg:
        r.error((*key, "error_ratio"), "this SLI is a gauge: give the segment a value")
    if "rate" in seg and not isinstance(context.sli, RatioSLI | LatencySLI):
        r.error((*key, "rate"), "rate applies to ratio and latency SLIs only")
    if "ramp_to" in seg and first:
        r.error((*key, "ramp_to"), "a scenario cannot start with a ramp: give the first segment a value")
    if "ramp_to" in seg and context.events and not 0 <= seg["ramp_to"] <= 1:
        r.error((*key, "ramp_to"), "an error ratio ramps to a value within 0..1")
    if isinstance(context.sli, GaugeSLI) and r.data.get("unit") == "ratio":
        for field in ("value", "ramp_to"):
            value = seg.get(field)
            if isinstance(value, int | float) and not 0 <= value <= 1:
                r.error(
                    (*key, field),
                    f"{field} {value} is outside 0..1, which a gauge with unit: ratio never leaves (a share: "
                    "no input has more hits than requests); give a value within 0..1",
                )


def read_expectations(
    r: SpecReader, base: PathKey, expect: list[SLOExpectation], total_ms: int, context: _Context
) -> tuple[Expectation, ...]:
    """What the alerts must do during the scenario, each at a whole minute within it."""
    expectations = []
    for exp_index, exp in enumerate(expect):
        key: PathKey = (*base, "expect", exp_index)
        kinds = [field for field in EXPECTATION_KINDS if field in exp]
        if len(kinds) != 1:
            r.error(key, "an expectation needs exactly one of fires_by, silent_until or nothing_fires_until")
            continue
        kind = kinds[0]
        at_ms = r.duration((*key, kind))
        if at_ms <= 0 or at_ms % MINUTE or at_ms > total_ms:
            r.error(
                (*key, kind),
                f"{kind} must be a whole minute within the scenario's {promql.format_duration(total_ms)}",
            )
        if kind == "nothing_fires_until":
            if "alert" in exp:
                r.error((*key, "alert"), "nothing_fires_until applies to every alert of the spec; drop 'alert'")
            expectations.append(Expectation(EXPECTATION_KINDS[kind], None, at_ms))
            continue
        given_name = exp.get("alert")
        if given_name is None:
            r.error(key, f"{kind} needs the alert it is about")
            continue
        expectations.append(Expectation(EXPECTATION_KINDS[kind], _alert(r, key, given_name, context), at_ms))
    return tuple(expectations)


def _alert(r: SpecReader, key: PathKey, given_name: str, context: _Context) -> str:
    """The full alert name an expectation is about: as written, or the spec's prefix plus it.

    A kind whose name ``alert_names`` replaces is still found by its suffix
    (``AboveNormalRange``) or its default name, so scenarios survive a rename.
    """
    name = given_name
    if given_name not in context.alerts:
        default = given_name if given_name in context.by_default_name else context.alert_name + given_name
        name = context.by_default_name.get(default, default)
    if name not in context.alerts:
        hint = suggest(name, sorted(context.alerts))
        r.error(
            (*key, "alert"),
            f"'{given_name}' is not an alert of this spec ({', '.join(sorted(context.alerts))}){hint}",
        )
    return name


def check_scenario_length(
    r: SpecReader, base: PathKey, item: SLOScenario, normal: Range | None, critical: Range | None
) -> None:
    """promtool evaluates every rule at every minute of a scenario: keep it to what tests in seconds.

    A relative bound needs history as old as its offset, so the offset is allowed on top.
    """
    offset = max((band.relative.offset_ms for band in (normal, critical) if band and band.relative), default=0)
    limit = SCENARIO_LIMIT_MS + offset
    allowance = promql.format_duration(SCENARIO_LIMIT_MS) + (
        f" plus the relative offset {promql.format_duration(offset)}" if offset else ""
    )
    elapsed = 0
    for index, segment in enumerate(item["shape"]):
        elapsed += promql.parse_duration(str(segment.get("for"))) or 0
        if elapsed > limit:
            r.error(
                (*base, "shape", index, "for"),
                f"scenario '{item['name']}' runs past {promql.format_duration(limit)} here: promtool evaluates "
                "every rule at every minute of it, so a longer scenario takes minutes to test; keep scenarios "
                f"within {allowance}",
            )
            return
