"""The ``objective`` section: target, period and the burn-rate window pairs (the default policy
of ``compiler.model.windows`` or the spec's own).
"""

from __future__ import annotations

from compiler import promql
from compiler.model import (
    SLI,
    BurnAlert,
    LatencySLI,
    Objective,
    RatioSLI,
    StateSLI,
)
from compiler.model.windows import (
    BURN_POLICIES,
    BURN_WINDOW_STEP_MS,
    DAY,
    DEFAULT_TRAFFIC_GUARD,
    HOUR,
    MAX_WAIT_MS,
    burn_factor,
)
from compiler.source.load import PathKey
from compiler.source.reader import SpecReader, dotted, parse_percent
from compiler.source.spec_types import SLOBurnAlert
from compiler.text.numbers import clean_number, complement, go_float

MIN_BURN_FACTOR = 0.01  # for declared pairs; the default policy's factors are at least 1 (windows.BurnPolicy)
# The smallest error ratio an alert may compare with: latency and good/total SLIs count bad events as
# total minus good, and float arithmetic on rates of ~10/s loses ratios under about 1e-12 to rounding.
MIN_ERROR_RATIO = 1e-9


def read_objective(r: SpecReader, sli: SLI | None) -> Objective | None:
    raw = r.data["objective"]
    if sli is not None and not isinstance(sli, RatioSLI | LatencySLI | StateSLI):
        r.error(
            ("objective",),
            "an objective needs a ratio, latency or state SLI (events to budget)",
            at_key=True,
        )
        return None
    if not target_in_percent(r, raw["target"]):
        return None
    percent = parse_percent(raw["target"])
    if percent is None:
        r.error(
            ("objective", "target"),
            f"objective.target must be a percentage like '99.5%', got {raw['target']!r}",
        )
        return None
    if not 0 < percent < 100:
        r.error(
            ("objective", "target"),
            f"objective {go_float(percent)}% is out of range: it must be above 0% and below 100%",
        )
        return None
    check_budget_resolvable(r, percent)
    target = clean_number(percent / 100)
    period = r.duration(("objective", "period"))
    if period == 0 and promql.parse_duration(str(raw["period"])) == 0:
        r.error(
            ("objective", "period"),
            f"objective.period {raw['period']} is empty: a budget needs a period of at least 1d (e.g. 28d, 30d)",
        )
        return None
    if period < DAY or period % HOUR:
        r.error(
            ("objective", "period"),
            "objective.period must be whole hours and at least 1d (e.g. 7d, 28d, 30d)",
        )
        return None  # every burn factor follows from the period: checking them now is noise
    alerts = read_burn_alerts(r, target, period)
    guard = read_traffic_guard(r)
    return Objective(target=target, period_ms=period, burn_alerts=alerts, traffic_guard=guard)


def read_traffic_guard(r: SpecReader) -> float:
    """``traffic_guard``: true (the default, 100%), false (off) or a share in (0%, 100%].

    A share above 100% would make a pair stricter than its own threshold under steady
    traffic, which is a different policy; say so with a lower factor instead.
    """
    raw = r.data["objective"].get("traffic_guard", True)
    if isinstance(raw, bool):
        return DEFAULT_TRAFFIC_GUARD if raw else 0.0
    percent = parse_percent(raw)
    if percent is None or not 0 < percent <= 100:
        r.error(
            ("objective", "traffic_guard"),
            f"traffic_guard {raw!r} must be true, false or a share in (0%, 100%] such as 50%: the share of each "
            "pair's budget share its long window's bad events must reach, counted in the period's events; "
            "write false to turn the guard off",
        )
        return DEFAULT_TRAFFIC_GUARD
    if 0 < percent < 1 and not isinstance(raw, str):
        r.error(
            ("objective", "traffic_guard"),
            f"traffic_guard {go_float(percent)} is read as {go_float(percent)}%; write it with a % sign "
            f"(did you mean {go_float(clean_number(percent * 100))}%?)",
        )
    return clean_number(percent / 100)


def check_budget_resolvable(r: SpecReader, percent: float) -> None:
    """Burn thresholds go down to MIN_BURN_FACTOR x the budget; under MIN_ERROR_RATIO they are error
    ratios Prometheus cannot tell from 0."""
    budget = complement(clean_number(percent / 100))
    if budget * MIN_BURN_FACTOR < MIN_ERROR_RATIO:
        most = go_float(clean_number(100 - 100 * MIN_ERROR_RATIO / MIN_BURN_FACTOR))
        r.error(
            ("objective", "target"),
            f"objective {go_float(percent)}% leaves an error budget of {budget:.3g}: burn "
            f"thresholds (down to {go_float(MIN_BURN_FACTOR)}x the budget) would be error ratios under "
            f"{go_float(MIN_ERROR_RATIO)}, which Prometheus cannot tell from 0 (it counts bad events as total "
            f"minus good, in floating point); give a target of at most {most}%",
        )


def target_in_percent(r: SpecReader, written: object) -> bool:
    """A bare number is a percentage (99.5 is 99.5%); one under 1 is almost surely a fraction.

    ``target: 0.999`` would be read as 0.999%, a budget of 99% errors, and every burn
    threshold past 100%: the spec would fail far from the line at fault.
    """
    if isinstance(written, bool) or not isinstance(written, int | float) or not 0 < written < 1:
        return True
    meant = go_float(clean_number(written * 100))
    r.error(
        ("objective", "target"),
        f"objective {go_float(written)}% is a budget of {go_float(clean_number(100 - written))}% errors: a bare "
        f"number is read as a percentage; did you mean {meant}%? Write target: {meant}%",
    )
    return False


def read_burn_alerts(r: SpecReader, target: float, period: int) -> tuple[BurnAlert, ...]:
    """The window pairs: the default policy (factors from the period) or the spec's own, all checked."""
    raw = r.data.get("objective", {}).get("burn_alerts")
    policy = _policy_name(r, raw is not None)
    steps = _default_steps(period, policy) if raw is None else _declared_steps(r, raw, period)
    budget = complement(target)
    for key, alert in steps:
        for window in (alert.long_ms, alert.short_ms):
            if window % BURN_WINDOW_STEP_MS:
                r.error(key, f"burn window {promql.format_duration(window)} must be a multiple of 5m")
            if period and window > period:
                r.error(key, f"burn window {promql.format_duration(window)} is longer than the period")
        if alert.factor * budget >= 1:
            r.error(
                key,
                f"burn threshold {go_float(alert.factor)}x the {go_float(clean_number(budget * 100))}% budget is "
                f"{go_float(clean_number(alert.factor * budget * 100))}% errors, which can never be exceeded; "
                "lower the factor or the target",
            )
    check_burn_pairs(r, steps)
    return tuple(alert for _, alert in steps)


def _policy_name(r: SpecReader, declared: bool) -> str:
    """``objective.burn_policy`` (default ``default``); it names the pairs, so it cannot sit next to burn_alerts."""
    name = str(r.data.get("objective", {}).get("burn_policy", "default"))
    if declared and "burn_policy" in r.data.get("objective", {}):
        r.error(
            ("objective", "burn_policy"),
            f"burn_policy {name} and burn_alerts both choose the window pairs; keep one: burn_alerts replaces "
            "the policy",
        )
    return name


def _default_steps(period: int, policy: str = "default") -> list[tuple[PathKey, BurnAlert]]:
    """The named policy's pairs; problems with them belong to the period that sets their factors.

    No factor is under the policy's ``min_factor``: the default policy's 3d pair on a 28d period is
    1x (the budget gone at the period's end), not 0.933x (gone in 30d, so the SLO is never breached).
    """
    steps: list[tuple[PathKey, BurnAlert]] = []
    chosen = BURN_POLICIES[policy]
    for step in chosen.steps:
        derived = burn_factor(step.budget_share, period, step.long_ms)
        factor = clean_number(max(derived, chosen.min_factor)) if period else 0.0
        alert = BurnAlert(step.severity, step.long_ms, step.short_ms, factor, step.for_ms, 0)
        steps.append((("objective", "period"), alert))
    return steps


def _declared_steps(r: SpecReader, raw: list[SLOBurnAlert], period: int) -> list[tuple[PathKey, BurnAlert]]:
    """The spec's own pairs, each with exactly one of factor or budget_share."""
    steps: list[tuple[PathKey, BurnAlert]] = []
    for index, item in enumerate(raw):
        key: PathKey = ("objective", "burn_alerts", index)
        long_ms = r.duration((*key, "long"))
        short_ms = r.duration((*key, "short"))
        if ("factor" in item) == ("budget_share" in item):
            r.error(key, "a burn alert needs exactly one of 'factor' or 'budget_share'")
            continue
        if not positive_windows(r, key, long_ms, short_ms):
            continue
        if "factor" in item:
            factor = clean_number(float(item["factor"]))
        else:
            share = parse_percent(item["budget_share"])
            if share is None or not 0 < share <= 100:
                r.error((*key, "budget_share"), "budget_share must be a percentage in (0%, 100%]")
                continue
            factor = clean_number(burn_factor(share / 100, period, long_ms))
        if not factor_in_reach(r, key, item, factor):
            continue
        if short_ms >= long_ms:
            r.error((*key, "short"), "the short window must be shorter than the long window")
        for_ms, keep_ms = r.duration((*key, "for"), 0), r.duration((*key, "keep_firing_for"), 0)
        steps.append((key, BurnAlert(item["severity"], long_ms, short_ms, factor, for_ms, keep_ms)))
    return steps


def positive_windows(r: SpecReader, key: PathKey, long_ms: int, short_ms: int) -> bool:
    """A 0s window would be the PromQL range [0s], which Prometheus rejects."""
    ok = True
    for field, window in (("long", long_ms), ("short", short_ms)):
        if window <= 0:
            r.error((*key, field), f"the {field} window must be a positive multiple of 5m, not 0s")
            ok = False
    return ok


def factor_in_reach(r: SpecReader, key: PathKey, item: SLOBurnAlert, factor: float) -> bool:
    """A burn factor under MIN_BURN_FACTOR alerts while the objective is met a hundred times over,
    and the time to exhaust the budget at that rate overflows every duration."""
    if factor >= MIN_BURN_FACTOR:
        return True
    field = "factor" if "factor" in item else "budget_share"
    given = "" if field == "factor" else " (from this budget_share)"
    r.error(
        (*key, field),
        f"burn factor {go_float(factor)}{given} is below {go_float(MIN_BURN_FACTOR)}: it would fire while the "
        "budget burns at under 1% of the rate the objective allows; raise it or drop this window pair",
    )
    return False


def check_burn_pairs(r: SpecReader, steps: list[tuple[PathKey, BurnAlert]]) -> None:
    """Custom pairs: positive windows, ``for`` within the long window, no pair twice."""
    seen: dict[tuple[str, int, int, float], PathKey] = {}
    for key, alert in steps:
        if key == ("objective", "period"):
            continue  # the default policy
        for name in ("long", "short"):
            if promql.parse_duration(str(r.get((*key, name)))) == 0:
                r.error((*key, name), f"the {name} window must be positive")
        identity = (alert.severity, alert.long_ms, alert.short_ms, alert.factor)
        if identity in seen:
            r.error(
                key,
                f"this burn alert repeats {dotted(seen[identity])} (same severity, windows and factor): it "
                "would be the same rule twice, which promtool rejects as a duplicate; remove one",
            )
        else:
            seen[identity] = key
        if alert.long_ms < alert.for_ms <= MAX_WAIT_MS:  # past the wait limit it is reported once, there
            r.error(
                (*key, "for"),
                f"for {promql.format_duration(alert.for_ms)} is longer than the long window "
                f"{promql.format_duration(alert.long_ms)}: the pair would alert only on burns that outlast the "
                "window it measures, so shorter incidents that spend the same budget never do; keep it well "
                "under the long window (the default policy uses about 1/30 of it)",
            )
