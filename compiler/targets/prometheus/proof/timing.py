"""When the generated tests look: windows' first points, firing, clearing, and the warm-up.

Inputs hold constant from minute 0, so the first minute a window has a point follows
from which series it reads (``compiler.model.windows.WindowSource``, the same fact the
rules are built from). The one timing that is not exact by construction, when a short
window clears after an incident, is simulated on the recorded series and given a margin.
"""

from __future__ import annotations

from collections.abc import Sequence

from compiler.model import StateSLI
from compiler.model.windows import WindowSource, first_point_minute, minutes
from compiler.targets.prometheus import AlertRule
from compiler.targets.prometheus.proof.inputs import InputError, Inputs
from compiler.targets.prometheus.proof.timeline import EventSeries, Timeline

STEP_MIN = 1  # one sample and one rule evaluation per minute: "+ STEP_MIN" is the next evaluation
INCIDENT_PAST_FIRING_MIN = 3  # an incident goes on this long after its alert fires: "firing" is seen mid-incident
RECOVERY_SLACK_MIN = 10  # a recovery outlasts its short window by the 5m rate and a few evaluations
RECOVERY_SLACK_HOURLY_MIN = 70  # an hourly window also waits up to an hour for the point that shows the recovery
HOURLY_CLEAR_SLACK_MIN = 65  # hourly points step on the hour, plus the 5m rate
CLEAR_ROUNDING_MIN = 2  # float rounding near the crossing: promtool sums the window differently


def steady_minute(inputs: Inputs) -> int:
    """The first minute the SLI value is whole: a gauge's or state's change takes ``settle`` to show."""
    first = inputs.onset
    return max(first, inputs.settle if not inputs.slo.counts_events else first)


def pair_onset(rule: AlertRule, data_start: int) -> int:
    """The first minute both windows of a burn pair have a point, when their input starts at ``data_start``."""
    burn = rule.burn
    assert burn is not None
    return max(first_point_minute(window, data_start, burn.hourly_days) for window in (burn.long_ms, burn.short_ms))


def burn_times(rule: AlertRule, inputs: Inputs) -> tuple[int, int]:
    """(minute the pair's condition first holds, minute it fires) for input constant from 0."""
    onset = pair_onset(rule, inputs.onset)
    return onset, onset + minutes(rule.for_ms)


def recovery_minutes(short_ms: int) -> int:
    """How long a recovery (error ratio 0) runs after an incident so the short window clears."""
    short = minutes(short_ms)
    hourly = WindowSource.of(short_ms) is WindowSource.HOURLY
    return short + (RECOVERY_SLACK_HOURLY_MIN if hourly else RECOVERY_SLACK_MIN)


def clears(inputs: Inputs, timeline: Timeline, short_ms: int, theta: float, stop: int) -> int:
    """The minute the short window's error ratio drops to the threshold after ``stop`` (upper bound)."""
    short_minutes = minutes(short_ms)
    if WindowSource.of(short_ms) is WindowSource.HOURLY:
        return stop + short_minutes + HOURLY_CLEAR_SLACK_MIN
    if isinstance(inputs.sli, StateSLI):
        recorded = EventSeries.from_states(timeline, inputs.units)
    else:
        recorded = EventSeries.from_counters(timeline)
    minute = recorded.clears_at(short_minutes, theta, stop)
    if minute is None:
        raise InputError("the short window never clears in the recovery test")
    if isinstance(inputs.sli, StateSLI):
        minute += inputs.settle  # a state expression's offset or ranges delay every change
    return minute + CLEAR_ROUNDING_MIN


# -- warm-up: inputs start at minute 0, real series have history ---------------------------


def warmup_end(rule: AlertRule, inputs: Inputs) -> int:
    """The minute from which ``rule`` judges the test's input rather than its first partial windows.

    0 when it is judged from the start. The no-data alert fires while an ``offset``
    delays the first value longer than its wait; a lower bound on a gauge whose value
    still builds up from partial rate windows reads as breached. Either may fire, then
    resolve once the value is whole (plus ``keep_firing_for``).
    """
    if rule.kind == "no_data" and minutes(rule.for_ms) < inputs.onset:
        return inputs.onset
    if rule.kind == "range" and rule.spec.side == "Below" and inputs.ramps:
        return steady_minute(inputs) + minutes(rule.keep_firing_for_ms) + STEP_MIN
    return 0


def warming(rules: Sequence[AlertRule], inputs: Inputs) -> dict[str, int]:
    """Alert names that may fire during the warm-up, with the minute each is judged from."""
    found: dict[str, int] = {}
    for rule in rules:
        end = warmup_end(rule, inputs)
        if end and minutes(rule.for_ms) < end:
            found[rule.name] = max(found.get(rule.name, 0), end)
    return found
