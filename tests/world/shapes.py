"""Histograms as exporters write them: cumulative ``_bucket`` counters, ``_count`` and ``_sum``.

A latency shape is a handful of (seconds, share at or below) anchors, interpolated on a log
scale, so every edge a stack keeps gets a plausible cumulative share without a table per
histogram. Only the edges the stack keeps are written: a dropped edge has no series at all.
"""

from __future__ import annotations

import itertools
import math
from collections.abc import Callable, Sequence

from tests.world.timeline import Series, counter, number, series

Shape = tuple[tuple[float, float], ...]


def share_at_or_below(shape: Shape, edge: float) -> float:
    """The cumulative share of observations at or below ``edge``."""
    if edge <= shape[0][0]:
        return shape[0][1] * edge / shape[0][0]
    for (low, low_share), (high, high_share) in itertools.pairwise(shape):
        if edge <= high:
            position = math.log(edge / low) / math.log(high / low)
            return low_share + (high_share - low_share) * position
    return 1.0


def histogram(
    name: str,
    labels: dict[str, str],
    edges: Sequence[float],
    rate: Callable[[int], float | None],
    shape: Shape,
    mean: float,
    count: int,
) -> list[Series]:
    """Bucket, count and sum series of one histogram child observed ``rate(i)`` times a second."""
    out = []
    rates = [rate(index) for index in range(count)]
    for edge in (*edges, math.inf):
        share = share_at_or_below(shape, edge)
        le = "+Inf" if edge == math.inf else number(edge)
        out.append(series(f"{name}_bucket", {**labels, "le": le}, counter(rates, count, factor=share)))
    out.append(series(f"{name}_count", labels, counter(rates, count)))
    out.append(series(f"{name}_sum", labels, counter(rates, count, factor=mean)))
    return out


# Healthy latency shapes (seconds, share at or below), from the normal ranges the specs state.
FAST_REQUEST: Shape = ((0.05, 0.93), (0.1, 0.98), (0.2, 0.993), (1, 0.9992), (5, 0.99995), (60, 1.0))
NAMESPACE_LIST: Shape = ((0.05, 0.6), (0.1, 0.8), (1, 0.97), (5, 0.997), (30, 0.99995), (60, 1.0))
CLUSTER_LIST: Shape = ((0.05, 0.05), (0.1, 0.1), (1, 0.5), (5, 0.95), (10, 0.99), (30, 0.9995), (60, 1.0))
ETCD_REQUEST: Shape = ((0.005, 0.55), (0.025, 0.95), (0.1, 0.9993), (1, 0.99999), (10, 1.0))
SCHEDULING: Shape = ((0.01, 0.2), (0.04, 0.7), (0.16, 0.95), (0.64, 0.99), (5.12, 0.999), (20.48, 0.9998), (5242.88, 1))
DNS_REQUEST: Shape = ((0.00025, 0.3), (0.001, 0.8), (0.004, 0.95), (0.032, 0.99), (0.256, 0.9996), (8.192, 1.0))
PLEG_RELIST: Shape = ((0.005, 0.3), (0.01, 0.7), (0.025, 0.95), (0.05, 0.99), (0.1, 0.999), (1, 0.99999), (10, 1.0))
POD_START: Shape = ((0.5, 0.05), (1, 0.3), (2, 0.8), (5, 0.995), (30, 0.9999), (3600, 1.0))
WATCH_EVENT_BYTES: Shape = ((1024, 0.05), (4096, 0.4), (16384, 0.9), (131072, 1.0))
