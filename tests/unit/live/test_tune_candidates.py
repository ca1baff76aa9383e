"""``live.tune`` without a server: the values it proposes from a history, how it writes them, which parts of a
spec it tunes, and which candidate ``--pick`` chooses."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

from compiler.live import tune
from compiler.model import SLO
from compiler.pipeline import compile_specs
from tests import live_data

SPEC = """\
slice: {by: [cluster]}
sli:
  gauge:
    expr: 'max by (cluster) (work_queue_depth)'
    aggregate: max
unit: count
normal_range:
  max: 100
  relative: {offset: 1h, max_factor: 1.5, floor: 10}
critical_range:
  min: 2
  max: 1000
  severity: page
persistence: {for: 5m}
"""


def slo_of(tmp_path: Path, body: str = SPEC) -> tuple[SLO, dict[str, Any]]:
    model, diagnostics = compile_specs(live_data.write_tree(tmp_path / "specs", {"depth": body}))
    assert model is not None and not diagnostics, diagnostics.render()
    return model.slos[0], {key: True for key in ("normal_range", "critical_range")}


@pytest.mark.parametrize(
    ("value", "up", "written"),
    [(108.00000000000001, True, "110"), (120.00000000000001, True, "120"), (144, True, "150"), (0.01234, True, "0.013"),
     (0.01234, False, "0.012"), (75e9, False, "75000000000"), (9.99, True, "10"), (1.3199999999999998, True, "1.4")],
)  # fmt: skip
def test_two_significant_digits_away_from_the_data(value: float, up: bool, written: str) -> None:
    assert tune.number_text(tune.person_number(value, up)) == written


def test_the_knobs_of_a_spec_in_its_order(tmp_path: Path) -> None:
    slo, _ = slo_of(tmp_path)
    found = tune.knobs(slo, {"normal_range": {}, "critical_range": {}})
    assert [(k.name, k.field, k.side, k.sections) for k in found] == [
        ("normal_range.max", "maximum", "Above", ("normal_range",)),
        ("normal_range.relative.max_factor", "max_factor", "Above", ("normal_range",)),
        ("critical_range.max", "maximum", "Above", ("critical_range",)),
        ("critical_range.min", "minimum", "Below", ("critical_range",)),
        ("persistence.for", "for_ms", None, ("normal_range", "critical_range")),  # both bands wait persistence.for
    ]
    own = tune.knobs(slo, {"normal_range": {"for": "5m"}, "critical_range": {}})
    assert (own[-1].name, own[-1].sections) == ("normal_range.for", ("normal_range",))


def test_a_fleets_critical_range_is_not_tuned(tmp_path: Path) -> None:
    """A fleet's critical range judges each unit's value; tune reads the slice's, so it proposes none."""
    fleet = SPEC.replace(
        "slice: {by: [cluster]}",
        "slice: {by: [cluster]}\nfleet: {units: [instance], page: {units: 3}}\nseries_budget: 7504",
    )
    fleet = fleet.replace("max by (cluster) (work_queue_depth)", "max by (cluster, instance) (work_queue_depth)")
    fleet = fleet.replace("  min: 2\n", "").replace("  relative: {offset: 1h, max_factor: 1.5, floor: 10}\n", "")
    slo, data = slo_of(tmp_path, fleet)
    assert slo.fleet is not None and slo.critical_range is not None
    assert [k.name for k in tune.knobs(slo, data)] == ["normal_range.max", "persistence.for"]


def test_candidates_from_quantiles_with_headroom(tmp_path: Path) -> None:
    slo, data = slo_of(tmp_path)
    knobs = {k.name: k for k in tune.knobs(slo, data)}
    # one slice, a minute apart: 100 values 1..100, then a jump to 300 an hour after a value of 100
    values: list[float | None] = [float(v) for v in range(1, 101)]
    history = tune.History(0, 60_000, {(("cluster", "west"),): [*values, 300.0]})
    upper = tune.candidates(slo, knobs["normal_range.max"], history)
    # sorted 1..100, 300: the p99 is at rank 99 (100), the p99.9 at 99.9 (100 + 0.9 x 200 = 280), the max 300
    assert [(c.pick, c.basis, c.value) for c in upper] == [
        ("current", None, 100),
        ("p99", 100, 120),
        ("p99.9", pytest.approx(280), 340),  # 336, up to two significant digits
        ("max", 300, 360),
    ]
    lower = tune.candidates(slo, knobs["critical_range.min"], history)
    # the critical band: the p0.1 at rank 0.1 (1.1) and the min (1), over a headroom of 1.5, rounded down
    assert [(c.pick, c.basis, c.value, c.headroom) for c in lower] == [
        ("current", None, 2, None),
        ("p0.1", pytest.approx(1.1), 0.73, 1.5),
        ("min", 1, 0.66, 1.5),
    ]
    factor = tune.candidates(slo, knobs["normal_range.relative.max_factor"], history)
    # the value over itself an hour (60 steps) earlier where the value is at the floor (10) or more: 61 / 1
    # is the largest (the floor is on the value now, not on the earlier one), x 1.2 = 73.2 -> 74
    assert [(c.pick, c.basis, c.value) for c in factor][-1] == ("max", 61, 74)
    dropping: list[float | None] = [*([100.0] * 60), 50.0, 5.0]
    falling = tune.History(0, 60_000, {(("cluster", "west"),): dropping})
    assert falling.ratios(3_600_000, 10, rising=False) == [0.05, 0.5]  # judged where the earlier value was >= 10


def test_pick_defaults_names_and_errors() -> None:
    def row(key: str, *picks: str) -> dict[str, Any]:
        return {"key": key, "candidates": [{"pick": p, "text": p} for p in ("current", *picks)]}

    knobs = [row("normal_range.max", "p99", "p99.9", "max"), row("critical_range.max", "p99.9", "max")]
    report = {"knobs": [*knobs, row("persistence.for", "halves")]}

    def picked(*picks: str) -> dict[str, str]:
        chosen = tune.choose(report, picks)
        assert isinstance(chosen, dict), chosen
        return {key: candidate["pick"] for key, candidate in chosen.items()}

    def refused(*picks: str) -> str:
        chosen = tune.choose(report, picks)
        assert isinstance(chosen, str)
        return chosen

    assert picked() == {"normal_range.max": "p99.9", "critical_range.max": "max", "persistence.for": "current"}
    assert picked("critical_range.max=p99.9", "halves") == {
        "normal_range.max": "current",  # with picks, what they do not name stays
        "critical_range.max": "p99.9",
        "persistence.for": "halves",
    }
    assert refused("p42") == "--pick p42: no candidate named p42 (candidates: current, halves, max, p99, p99.9)"
    assert refused("persistence.for=p99").startswith("--pick persistence.for=p99: no candidate named p99")
    assert refused("normal_range.min=p1").startswith("--pick normal_range.min=p1: the spec has no normal_range.min")


def test_people_read_durations_and_rates() -> None:
    assert tune.duration_text(3_378_000) == "56m 18s"
    assert tune.duration_text(0) == "0s" and tune.duration_text(90_000_000) == "1d 1h"
    assert tune.per_week_text(3.5) == "3.5/week" and tune.per_week_text(0) == "0/week"
    assert tune.per_week_text(14.2) == "14/week"


def test_headroom_moves_away_from_the_data_on_either_side_of_zero() -> None:
    assert tune.past(100, 1.2, upper=True) == 120 and tune.past(100, 1.2, upper=False) == pytest.approx(83.33, 1e-3)
    assert tune.past(-100, 1.2, upper=True) == pytest.approx(-83.33, 1e-3)  # an upper bound above -100
    assert tune.past(-100, 1.2, upper=False) == -120  # a lower bound below -100
    assert tune.person_number(-83.33, up=True) == -83 and tune.person_number(-120.5, up=False) == -130
