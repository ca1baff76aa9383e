"""The case of a staleness SLI that only a frozen timestamp shows: the loop hangs and the gauge stops.

The range cases hold the age still (a timestamp that advances with the clock, a fixed lag
behind it). A hung loop is different: its timestamp stops, so the age grows a minute every
minute. This case feeds exactly that, as the rule sees it in production, and states when the
alert must pend and fire: the first minute the age exceeds the bound, plus ``for``.
"""

from __future__ import annotations

import math

from compiler.model import StalenessSLI, series
from compiler.model.windows import MINUTE, SECOND, minutes
from compiler.targets.prometheus import AlertRule
from compiler.targets.prometheus.proof.asserts import expect, firing_exactly, nothing_until, states_at
from compiler.targets.prometheus.proof.context import SpecContext
from compiler.targets.prometheus.proof.group import Group, duration_text
from compiler.targets.prometheus.proof.inputs import BUSY
from compiler.targets.prometheus.proof.timeline import DEFAULT_RATE, Timeline
from compiler.text.numbers import go_float

FROZEN_AT_MIN = 5  # the timestamp advances with the clock until this minute, then holds: the loop hangs
ADVANCING_AGE = 0.0  # the age of a timestamp set at every sample
MINUTE_SECONDS = MINUTE // SECOND


def applies(ctx: SpecContext, rule: AlertRule) -> bool:
    """A range alert with a max on a staleness SLI (the only bound a staleness may have)."""
    return isinstance(ctx.slo.sli, StalenessSLI) and rule.band is not None and rule.band.maximum is not None


def frozen(ctx: SpecContext, rule: AlertRule) -> Group:
    """Slice a's timestamp freezes at minute 5: silent while the age is within the bound, then pending, then firing."""
    assert rule.band is not None and rule.band.maximum is not None
    first_above = FROZEN_AT_MIN + math.floor(rule.band.maximum / MINUTE_SECONDS) + 1
    fires = first_above + minutes(rule.for_ms)
    ages = tuple(
        ADVANCING_AGE if minute <= FROZEN_AT_MIN else float((minute - FROZEN_AT_MIN) * MINUTE_SECONDS)
        for minute in range(fires + 1)
    )
    active = Timeline(ages, (DEFAULT_RATE,) * len(ages))
    group = Group(
        f"{rule.name}: the timestamp stops advancing at {duration_text(FROZEN_AT_MIN)}, so its age passes "
        f"{go_float(rule.band.maximum)} s at {duration_text(first_above)} and it fires at {duration_text(fires)}",
        ctx.timelines(active, ctx.calm_value()),
        ctx.inputs,
    )
    states_at(ctx, group, first_above - 1, [rule], [None])
    if fires > first_above:
        states_at(ctx, group, first_above, [rule], ["pending"])
        states_at(ctx, group, fires - 1, [rule], ["pending"])
    firing_exactly(ctx, group, fires, [rule], ages[fires], ctx.slice_a)
    return group


def idle(ctx: SpecContext, rule: AlertRule, frozen_case: Group) -> Group | None:
    """With ``while``: the same frozen timestamp on a unit with nothing to do reads 0, and nothing fires."""
    sli = ctx.slo.sli
    if not isinstance(sli, StalenessSLI) or not sli.busy:
        return None
    horizon = max(check["eval_time_m"] for check in frozen_case.alerts)
    group = Group(
        f"{rule.name}: the timestamp stops advancing at {duration_text(FROZEN_AT_MIN)} but {sli.busy} does not "
        f"hold (nothing to do), so the age reads 0 and nothing fires for {duration_text(horizon)}",
        frozen_case.timelines,
        ctx.inputs,
        states={BUSY: "broken"},
    )
    expect(group, f"{series.recorded(series.VALUE, ctx.slo)} > 0", horizon, [])
    nothing_until(group, horizon, {"slo": ctx.slo.name})
    return group
