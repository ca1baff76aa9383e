"""When the generated tests look: windows' first points, firing, clearing, and the warm-up.

Inputs hold constant from minute 0, so the first minute a window has a point follows
from which series it reads (``compiler.model.windows.WindowSource``, the same fact the
rules are built from): every window sums non-overlapping blocks, and blocks from before the
input count as no events, so each has its first point with the 5m rate. The one timing that
is not exact by construction, when a short window clears after an incident, is simulated
on the recorded series (the same blocks) and given a margin.
"""

from __future__ import annotations

from collections.abc import Sequence

from compiler.model import StateSLI
from compiler.model.windows import first_point_minute, minutes
from compiler.targets.prometheus import AlertRule
from compiler.targets.prometheus.proof.inputs import InputError, Inputs
from compiler.targets.prometheus.proof.timeline import EventSeries, Timeline

STEP_MIN = 1  # one sample and one rule evaluation per minute: "+ STEP_MIN" is the next evaluation
INCIDENT_PAST_FIRING_MIN = 3  # an incident goes on this long after its alert fires: "firing" is seen mid-incident
RECOVERY_SLACK_MIN = 10  # a recovery outlasts its short window by the 5m rate and a few evaluations
CLEAR_ROUNDING_MIN = 2  # float rounding near the crossing: promtool sums the window differently
CLAIM_MARGIN = 1e-9  # a window "still over" its threshold by less than this share is float noise, not a witness


def steady_minute(inputs: Inputs) -> int:
    """The first minute the SLI value is whole: a gauge's or state's change takes ``settle`` to show."""
    first = inputs.onset
    return max(first, inputs.settle if not inputs.slo.counts_events else first)


def pair_onset(rule: AlertRule, data_start: int) -> int:
    """The first minute both windows of a burn pair have a point, when their input starts at ``data_start``."""
    burn = rule.burn
    assert burn is not None
    return max(first_point_minute(window, data_start) for window in (burn.long_ms, burn.short_ms))


def burn_times(rule: AlertRule, inputs: Inputs) -> tuple[int, int]:
    """(minute the pair's condition first holds, minute it fires) for input constant from 0."""
    onset = pair_onset(rule, inputs.onset)
    return onset, onset + minutes(rule.for_ms)


def recovery_minutes(short_ms: int) -> int:
    """How long a recovery (error ratio 0) runs after an incident so the short window clears."""
    return minutes(short_ms) + RECOVERY_SLACK_MIN


def clears(inputs: Inputs, timeline: Timeline, short_ms: int, theta: float, stop: int) -> int:
    """The minute the short window's error ratio drops to the threshold after ``stop`` (upper bound)."""
    short_minutes = minutes(short_ms)
    recorded = _recorded(inputs, timeline)
    minute = recorded.clears_at(short_minutes, theta, stop)
    if minute is None:
        raise InputError("the short window never clears in the recovery test")
    if isinstance(inputs.sli, StateSLI):
        minute += inputs.settle  # a state expression's offset or ranges delay every change
    return minute + CLEAR_ROUNDING_MIN


def _recorded(inputs: Inputs, timeline: Timeline) -> EventSeries:
    """The recorded series the SLI's rules make of ``timeline``; every pair of a case reads the same."""
    if isinstance(inputs.sli, StateSLI):
        return timeline.state_events(inputs.units)
    return timeline.counter_events


def long_window_holds(inputs: Inputs, timeline: Timeline, long_ms: int, theta: float, minute: int) -> bool:
    """Whether a pair's long window still reads over its threshold ``theta`` at ``minute`` of ``timeline``.

    Usually it does by far (a 1h window after a few minutes of outage against a threshold of a few
    percent), but a threshold near 100% errors is under the long window's share of the outage as soon as
    the short window clears.
    """
    recorded = _recorded(inputs, timeline)
    if isinstance(inputs.sli, StateSLI):
        minute -= inputs.settle  # a state expression's offset or ranges delay what the window sees
    ratio = recorded.window_ratio(minutes(long_ms), max(minute, 0))
    return ratio is not None and ratio > theta * (1 + CLAIM_MARGIN)


# -- warm-up: inputs start at minute 0, real series have history ---------------------------


def warmup_end(rule: AlertRule, inputs: Inputs) -> int:
    """The minute from which ``rule`` judges the test's input rather than its first partial windows.

    0 when it is judged from the start. The no-data alert fires while an ``offset``
    delays the first value longer than its wait; a lower bound on a gauge whose value
    still builds up from partial rate windows reads as breached, and so does a relative
    upper bound ``offset`` later, against those partial values. Each may fire, then
    resolve once the value is whole (plus ``keep_firing_for``).
    """
    if rule.kind == "no_data" and minutes(rule.for_ms) < inputs.onset:
        return inputs.onset
    if rule.kind == "range" and rule.spec.side == "Below" and inputs.ramps:
        return steady_minute(inputs) + minutes(rule.keep_firing_for_ms) + STEP_MIN
    if rule.kind == "range" and inputs.ramps and compares_with_warmup(rule):
        assert rule.band is not None and rule.band.relative is not None
        offset = minutes(rule.band.relative.offset_ms)
        return offset + steady_minute(inputs) + minutes(rule.keep_firing_for_ms) + STEP_MIN
    return 0


def compares_with_warmup(rule: AlertRule) -> bool:
    """A relative upper bound: ``offset`` after the start it compares the whole value with the partial
    first windows, which read lower, so it trips until the past value is whole too."""
    band = rule.band
    return (
        rule.spec.side == "Above"
        and band is not None
        and band.relative is not None
        and band.relative.max_factor is not None
    )


def warming(rules: Sequence[AlertRule], inputs: Inputs) -> dict[str, int]:
    """Alert names that may fire during the warm-up, with the minute each is judged from."""
    found: dict[str, int] = {}
    for rule in rules:
        end = warmup_end(rule, inputs)
        if end and minutes(rule.for_ms) < end:
            found[rule.name] = max(found.get(rule.name, 0), end)
    return found
