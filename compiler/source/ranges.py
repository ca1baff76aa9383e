"""The ``normal_range``, ``critical_range`` and ``no_data`` sections, and the limits on waits."""

from __future__ import annotations

import math
from typing import Any, Literal, TypeGuard

from compiler import promql
from compiler.model import (
    SLI,
    GaugeSLI,
    LatencySLI,
    NoData,
    QuantileSLI,
    Range,
    RatioSLI,
    Relative,
    Severity,
    StalenessSLI,
    StateSLI,
)
from compiler.model.warmup import change_shows_ms
from compiler.model.windows import DAY, MAX_WAIT_MS, MINUTE
from compiler.source.load import PathKey
from compiler.source.objective import MIN_ERROR_RATIO
from compiler.source.reader import SpecReader, dotted
from compiler.source.spec_types import SLORange, SLORangeRelative
from compiler.source.vanished import read_vanished
from compiler.text.numbers import clean_number, go_float

MAX_OFFSET_MS = 7 * DAY  # longest relative.offset: the same time last week
# The largest duration an alert's text may show: Prometheus's humanizeDuration converts seconds to int64,
# which overflows past 2^63 s differently on amd64 and arm64; the generated tests show values past a bound.
MAX_SHOWN_SECONDS = 1e15


def check_wait_limits(r: SpecReader) -> None:
    """Every ``for`` and ``keep_firing_for`` is at most a day: the generated tests simulate each
    minute of the wait (a 100y ``for`` would exhaust memory), and a day-long wait is a report."""
    keys: list[PathKey] = [("no_data", "for"), ("no_data", "vanished", "for")]
    for section in ("persistence", "normal_range", "critical_range"):
        keys += [(section, "for"), (section, "keep_firing_for")]
    burn_alerts = r.get(("objective", "burn_alerts"))
    for index in range(len(burn_alerts) if isinstance(burn_alerts, list) else 0):
        keys += [("objective", "burn_alerts", index, "for"), ("objective", "burn_alerts", index, "keep_firing_for")]
    for key in keys:
        value = r.get(key)
        parsed = promql.parse_duration(value) if isinstance(value, str) else None
        if parsed is not None and parsed > MAX_WAIT_MS:
            r.error(
                key,
                f"{dotted(key)} is {promql.format_duration(parsed)}, longer than "
                f"{promql.format_duration(MAX_WAIT_MS)}: an alert that waits longer is a report, and the "
                "generated tests simulate every minute of the wait",
            )


def relative_offset(r: SpecReader, section: str, band_for_ms: int, shows_ms: int = 0) -> int:
    """How far back a relative bound looks: whole minutes, at most a week, and longer than the
    band's ``for`` plus the time a change takes to show in the SLI's value (a jump past the factor
    lasts only ``offset``, from when it shows, so a shorter one never fires)."""
    key: PathKey = (section, "relative", "offset")
    offset = r.duration(key)
    text = promql.format_duration(offset)
    if offset <= 0 or offset % MINUTE:
        r.error(
            key,
            f"relative.offset must be a whole, positive number of minutes (e.g. 1h), not {text}: the value "
            "is compared with itself that long ago, and the generated tests step by minutes",
        )
    elif offset > MAX_OFFSET_MS:
        r.error(
            key,
            f"relative.offset {text} is longer than 7d (the same time last week): the generated tests "
            "simulate every minute of it",
        )
    elif offset <= band_for_ms:
        r.error(
            key,
            f"relative.offset {text} must be longer than the {section}'s for "
            f"({promql.format_duration(band_for_ms)}): a jump past the factor stays past its value {text} "
            "ago for only that long, so the alert could never wait out its for",
        )
    elif offset <= band_for_ms + shows_ms:
        r.error(
            key,
            f"relative.offset {text} must be longer than the {section}'s for "
            f"({promql.format_duration(band_for_ms)}) plus the {promql.format_duration(shows_ms)} a change "
            f"takes to show in this SLI's value (its ranges): a jump stays past its value {text} ago for only "
            f"{text} from its first sign, so the alert cannot be shown to wait out its for",
        )
    return offset


HOLD_OFFSETS = 3  # default relative.hold: a storm is judged against its pre-storm level for 3x the offset
MIN_HOLD_OFFSETS = 2  # a hold shorter than 2x the offset would not keep a storm that outlasts the offset


def relative_hold(r: SpecReader, section: str, offset_ms: int, given: bool = True) -> int:
    """How long a crossing is judged against its pre-crossing baseline: whole minutes, 2x to 4 weeks.

    A default hold (3x the offset) is only as wrong as the offset it follows: the offset's own
    error says what to fix, so the default is not judged again.
    """
    key: PathKey = (section, "relative", "hold")
    hold = r.duration(key, HOLD_OFFSETS * offset_ms)
    if offset_ms <= 0 or not given:
        return hold
    text = promql.format_duration(hold)
    if hold % MINUTE or hold < MIN_HOLD_OFFSETS * offset_ms:
        r.error(
            key,
            f"relative.hold {text} must be whole minutes and at least twice the offset "
            f"({promql.format_duration(MIN_HOLD_OFFSETS * offset_ms)}): a storm that outlasts the offset "
            f"is held against its pre-storm level only that long (default {HOLD_OFFSETS}x the offset)",
        )
    elif hold > HOLD_OFFSETS * MAX_OFFSET_MS:
        r.error(key, f"relative.hold {text} is longer than 4w: a storm that long is the new normal")
    return hold


def read_relative(r: SpecReader, section: str, rel: SLORangeRelative, band_for_ms: int, shows_ms: int = 0) -> Relative:
    offset = relative_offset(r, section, band_for_ms, shows_ms)
    return Relative(
        offset,
        rel.get("max_factor"),
        rel.get("min_factor"),
        float(rel.get("floor", 0)),
        hold_ms=relative_hold(r, section, offset, given=rel.get("hold") is not None),
        normal=None if rel.get("normal") is None else float(rel["normal"]),
    )


BandSection = Literal["normal_range", "critical_range"]


def read_range(
    r: SpecReader, section: BandSection, sli: SLI | None, severity: Severity, for_ms: int, keep_ms: int
) -> Range | None:
    raw = r.data.get(section)
    if raw is None or not r.readable(section):
        return None
    check_range_numbers(r, section, raw)
    check_reachable_bounds(r, section, raw, sli)
    check_gauge_unit_bounds(r, section, raw, sli)
    check_band_wait(r, section, raw)
    minimum = raw.get("min")
    maximum = raw.get("max")
    relative = None
    if "relative" in raw:
        rel = raw["relative"]
        if "max_factor" not in rel and "min_factor" not in rel:
            r.error((section, "relative"), f"{section}.relative needs max_factor, min_factor or both")
        if (
            rel.get("max_factor") is not None
            and rel.get("min_factor") is not None
            and rel["min_factor"] >= rel["max_factor"]
        ):
            r.error((section, "relative", "min_factor"), "min_factor must be below max_factor")
        band_for = r.duration((section, "for"), for_ms)
        relative = read_relative(r, section, rel, band_for, change_shows_ms(sli))
    if minimum is None and maximum is None and relative is None:
        r.error((section,), f"{section} needs at least one of min, max or relative", at_key=True)
        return None
    if minimum is not None and maximum is not None and minimum >= maximum:
        r.error((section, "min"), f"{section}.min ({minimum}) must be below max ({maximum})")
    if isinstance(sli, QuantileSLI) and sli.buckets:
        top = max(sli.buckets)
        if maximum is not None and maximum >= top:
            r.error(
                (section, "max"),
                f"{section}.max {go_float(maximum)} can never be exceeded: the quantile of {sli.histogram} "
                f"is at most its top finite bucket edge {go_float(top)}",
            )
    ratio_value = sli is not None and isinstance(sli, RatioSLI | LatencySLI | StateSLI)
    for bound, value in (("min", minimum), ("max", maximum)):
        if ratio_value and value is not None and not 0 <= value <= 1:
            r.error(
                (section, bound),
                f"{section}.{bound} is an error ratio for this SLI and must be within 0..1",
            )
    min_bad = read_min_bad_events(r, section, raw, sli, relative is not None)
    return Range(
        minimum=None if minimum is None else float(minimum),
        maximum=None if maximum is None else float(maximum),
        relative=relative,
        severity=raw.get("severity", severity),
        for_ms=r.duration((section, "for"), for_ms),
        keep_firing_for_ms=r.duration((section, "keep_firing_for"), keep_ms),
        reason=str(raw.get("reason", "")).strip(),
        min_bad_events=min_bad,
    )


def read_min_bad_events(
    r: SpecReader, section: BandSection, raw: SLORange, sli: SLI | None, relative: bool
) -> float | None:
    """A traffic floor: the band's alert also needs this many bad events in its 5m window.

    An error ratio of 100% on two calls is a rarely used path, not an incident; the floor is in
    events, so only SLIs that count events (ratio, latency) have one, and only on static bounds
    (a relative bound already has its own floor, on the value).
    """
    value = raw.get("min_bad_events")
    if value is None:
        return None
    key: PathKey = (section, "min_bad_events")
    if sli is not None and not isinstance(sli, RatioSLI | LatencySLI):
        r.error(key, f"{section}.min_bad_events counts bad events: only a ratio or latency SLI has them")
        return None
    if relative or "min" in raw:
        r.error(
            key,
            f"{section}.min_bad_events floors a max, the share of bad events: not a min (too few bad events) "
            "nor a relative bound",
        )
        return None
    if isinstance(value, float) and not math.isfinite(value):
        r.error(key, f"{section}.min_bad_events must be a finite number of events")
        return None
    return float(value)


def read_no_data(r: SpecReader) -> NoData:
    raw = r.data.get("no_data", {})
    for_ms = r.duration(("no_data", "for"), 15 * MINUTE)
    enabled = bool(raw.get("enabled", True))
    if enabled and for_ms <= 0:
        r.error(
            ("no_data", "for"),
            "no_data.for must be positive (default 15m): with 0s the no-data alert fires whenever the "
            "recorded series is briefly absent, such as before the first rate after every restart",
        )
    return NoData(enabled=enabled, for_ms=for_ms, severity=raw.get("severity", "ticket"), vanished=read_vanished(r))


def check_range_numbers(r: SpecReader, section: BandSection, raw: SLORange) -> None:
    """Bounds that are not finite can never be crossed; relative factors on the wrong side of 1 always are."""
    rel: SLORangeRelative | dict[str, Any] = raw.get("relative") or {}
    numbers: list[tuple[PathKey, Any]] = [((section, name), raw.get(name)) for name in ("min", "max")]
    numbers += [((section, "relative", name), rel.get(name)) for name in ("max_factor", "min_factor", "floor")]
    for key, value in numbers:
        if isinstance(value, float) and not math.isfinite(value):
            r.error(
                key,
                f"{dotted(key)} is {go_float(value)}: a bound that is not a finite number can never be "
                "crossed, so its alert could never fire (and could not be tested); give a finite number or drop it",
            )
    high, low = rel.get("max_factor"), rel.get("min_factor")
    if isinstance(high, int | float) and math.isfinite(high) and high <= 1:
        why = "is above its own past whenever it is steady" if high < 1 else "breaches on any rise, however small"
        r.error(
            (section, "relative", "max_factor"),
            f"max_factor {go_float(high)} must be above 1: at {go_float(high)}x the value {why}, so the alert "
            "fires all the time; a rise is a factor above 1 (e.g. 1.5)",
        )
    if isinstance(low, int | float) and math.isfinite(low) and low >= 1:
        why = "is below its own past whenever it is steady" if low > 1 else "breaches on any fall, however small"
        r.error(
            (section, "relative", "min_factor"),
            f"min_factor {go_float(low)} must be below 1: at {go_float(low)}x the value {why}, so the alert "
            "fires all the time; a drop is a factor below 1 (e.g. 0.5)",
        )


def check_reachable_bounds(r: SpecReader, section: BandSection, raw: SLORange, sli: SLI | None) -> None:
    """An error ratio lies within 0..1: a max of 1 is never exceeded, a min of 0 never undercut.

    A quantile is at least its first bucket edge times the quantile (histogram_quantile
    interpolates from 0 within the first bucket), so a min at or under that is never undercut.
    """
    check_shown_durations(r, section, raw, sli)
    if isinstance(sli, QuantileSLI) and sli.buckets and sli.buckets[0] > 0:
        lowest = clean_number(sli.buckets[0] * sli.quantile)
        minimum = raw.get("min")
        if isinstance(minimum, int | float) and not isinstance(minimum, bool) and minimum <= lowest:
            r.error(
                (section, "min"),
                f"{section}.min {go_float(minimum)} can never be undercut: the {go_float(sli.quantile)} quantile "
                f"of {sli.histogram} is at least {go_float(lowest)} (its first bucket edge "
                f"{go_float(sli.buckets[0])} x {go_float(sli.quantile)}), so its alert could never fire",
            )
    if not isinstance(sli, RatioSLI | LatencySLI | StateSLI):
        return
    check_error_ratio_resolvable(r, section, raw)
    rel: SLORangeRelative | dict[str, Any] = raw.get("relative") or {}
    floor = rel.get("floor")
    if rel.get("max_factor") is not None and isinstance(floor, int | float) and floor >= 1:
        r.error(
            (section, "relative", "floor"),
            f"{section}.relative.floor {go_float(floor)} can never be exceeded: this SLI's value is an error "
            "ratio, within 0..1, so the rise alert could never fire; give a floor below 1",
        )
    for bound, edge, word in (("max", 1, "exceeded"), ("min", 0, "undercut")):
        if raw.get(bound) == edge and not isinstance(raw.get(bound), bool):
            r.error(
                (section, bound),
                f"{section}.{bound} {edge} can never be {word}: this SLI's value is an error ratio, within 0..1, "
                "so its alert could never fire; give a bound inside 0..1 or drop it",
            )


def check_shown_durations(r: SpecReader, section: BandSection, raw: SLORange, sli: SLI | None) -> None:
    """Bounds in seconds whose alert text (humanizeDuration) would depend on the platform."""
    unit = r.data.get("unit", "seconds" if isinstance(sli, QuantileSLI) else None)
    if unit != "seconds":
        return
    rel = raw.get("relative")
    places: list[tuple[PathKey, Any]] = [((section, bound), raw.get(bound)) for bound in ("min", "max")]
    places.append(((section, "relative", "floor"), rel.get("floor") if isinstance(rel, dict) else None))
    for key, value in places:
        if isinstance(value, int | float) and not isinstance(value, bool) and abs(value) >= MAX_SHOWN_SECONDS:
            r.error(
                key,
                f"{dotted(key)} {go_float(value)} is {go_float(MAX_SHOWN_SECONDS)} seconds (30 million years) or "
                "more: Prometheus shows durations in whole int64 seconds, which overflow, and the alert text "
                "would differ between platforms; give a smaller bound (or a unit other than seconds)",
            )


def check_error_ratio_resolvable(r: SpecReader, section: BandSection, raw: SLORange) -> None:
    """A bound on an error ratio between 0 and MIN_ERROR_RATIO is lost to floating-point rounding."""
    for bound in ("min", "max"):
        value = raw.get(bound)
        if isinstance(value, int | float) and not isinstance(value, bool) and 0 < value < MIN_ERROR_RATIO:
            r.error(
                (section, bound),
                f"{section}.{bound} {go_float(value)} is an error ratio under {go_float(MIN_ERROR_RATIO)} (one "
                "bad event in a billion), which Prometheus cannot tell from 0: it counts bad events as total "
                f"minus good, in floating point; give a bound of at least {go_float(MIN_ERROR_RATIO)}"
                + (" (or 0: any error at all)" if bound == "max" else ""),
            )


def check_band_wait(r: SpecReader, section: BandSection, raw: SLORange) -> None:
    """A band's alert waits its own ``for`` or the spec's ``persistence.for``; a spec without bands needs neither."""
    if "for" not in raw and "persistence" not in r.data:
        r.error(
            (section,),
            f"{section} has no for: how long the value may be out of range before its alert fires; add "
            f"persistence: {{for: 10m}} (for every band) or {section}.for",
            at_key=True,
        )


NON_NEGATIVE_UNITS = ("ratio", "seconds", "bytes", "bytes_per_second", "per_second", "count")


def check_gauge_unit_bounds(r: SpecReader, section: BandSection, raw: SLORange, sli: SLI | None) -> None:
    """A gauge's declared unit bounds its value: a ratio lies within 0..1, and no unit is negative.

    A max a ratio can never exceed, or a min no such value can undercut, is an alert that can
    never fire; its generated test could only "prove" it by feeding inputs no real series has
    (more hits than requests).
    """
    unit = r.data.get("unit") if r.readable("unit") else None
    if not isinstance(sli, GaugeSLI) or unit not in NON_NEGATIVE_UNITS:
        return
    if isinstance(sli, StalenessSLI):
        return  # its bounds are judged by source/staleness.py: no min at all, not a min above 0
    minimum, maximum = raw.get("min"), raw.get("max")
    if unit == "ratio" and _number(maximum) and maximum >= 1:
        r.error(
            (section, "max"),
            f"{section}.max {go_float(maximum)} can never be exceeded, so its alert can never fire: with unit: ratio "
            "the value is a share within 0..1; give a max below 1 (0.9 is 90%), or drop unit: ratio if the "
            "value is not a share",
        )
    if _number(minimum) and minimum <= 0:
        r.error(
            (section, "min"),
            f"{section}.min {go_float(minimum)} can never be undercut, so its alert can never fire: a value in "
            f"unit {unit} is never below 0; give a min above 0, or drop unit if the value can be negative",
        )
    rel: SLORangeRelative | dict[str, Any] = raw.get("relative") or {}
    floor = rel.get("floor")
    if unit == "ratio" and rel.get("max_factor") is not None and _number(floor) and floor >= 1:
        r.error(
            (section, "relative", "floor"),
            f"{section}.relative.floor {go_float(floor)} can never be exceeded, so the rise alert can never fire: "
            "with unit: ratio the value is a share within 0..1; give a floor below 1",
        )


def _number(value: object) -> TypeGuard[float]:
    return isinstance(value, int | float) and not isinstance(value, bool) and math.isfinite(value)


def check_critical_wider(r: SpecReader, normal: Range | None, critical: Range | None) -> None:
    """The critical band pages, so it must lie outside the normal band that tickets."""
    if normal is None or critical is None:
        return
    if critical.maximum is not None and normal.maximum is not None and critical.maximum <= normal.maximum:
        r.error(
            ("critical_range", "max"),
            f"critical_range.max {go_float(critical.maximum)} is not above normal_range.max "
            f"{go_float(normal.maximum)}: the critical band must be wider than the normal one, or the page "
            "fires before (or with) the ticket",
        )
    if critical.minimum is not None and normal.minimum is not None and critical.minimum >= normal.minimum:
        r.error(
            ("critical_range", "min"),
            f"critical_range.min {go_float(critical.minimum)} is not below normal_range.min "
            f"{go_float(normal.minimum)}: the critical band must be wider than the normal one, or the page "
            "fires before (or with) the ticket",
        )
