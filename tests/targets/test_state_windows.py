"""A state SLI's windows as the rules build them: 5-minute blocks of the unit counts, summed.

The generated tests place each burn pair's recovery from this simulation, so it must read what
Prometheus reads: ``avg_over_time(counts[4m59s])`` at offsets of 5 minutes, a block with no sample
as no events. In a test's first minutes the oldest block is partial and weighs as much as a full
one; the minutes' plain average cleared too early and the generated tests of a state SLI without
``for`` (``burn_policy: sloth``) failed in promtool.
"""

from __future__ import annotations

import pytest

from compiler.targets.prometheus.proof.timeline import Timeline


def test_windows_sum_five_minute_blocks_the_oldest_partial() -> None:
    # One unit of 100 bad at minutes 0-3, then good: at minute 16 the 2h window's blocks end at 16, 11,
    # 6 and 1; the block at 1 holds two samples, both bad (average 1), the block at 6 two bad of five (0.4):
    # 1.4 bad units in 400, where the minutes' average says 4 in 1,700.
    events = Timeline.constant(0.01, 3).then(0.0, 20).state_events(100)
    assert events.window_ratio(120, 16) == pytest.approx((1 + 0.4) / 400)
    # The 5m window is one block: the last five samples' average.
    assert events.window_ratio(5, 5) == pytest.approx((3 / 5) / 100)
    assert events.window_ratio(5, 8) == 0


def test_a_window_that_dips_under_the_threshold_and_rises_again_has_not_cleared() -> None:
    # A 6h window over the first minutes: at 39 the blocks (39, 34, ..., 4) read exactly 0.001, at 41
    # the block at 1 holds two bad samples again and the ratio is back over it.
    events = Timeline.constant(0.01, 3).then(0.0, 80).state_events(100)
    assert not events.window_ratio(360, 39) > 0.001  # type: ignore[operator]
    assert events.window_ratio(360, 41) > 0.001  # type: ignore[operator]
    cleared = events.clears_at(360, 0.001, 3)
    assert cleared is not None and cleared > 41
    assert all(not events.window_ratio(360, m) > 0.001 for m in range(cleared, 84))  # type: ignore[operator]
