"""The compiled half of the local engine's range functions (numba, imported only when a backtest evaluates one;
see ``compiler.live.columns``, which keeps a numpy path for when numba is not installed).

``rate()`` and ``increase()`` of a raw counter over every series and step: per series, a window's first and
last sample are found by two pointers that only move forward (the steps rise), and Prometheus 2.42's
extrapolatedRate (promql/functions.go@v2.42.0) is computed in its order of float operations, as the numpy
path does (``columns._extrapolated_rate``): one pass, no temporaries of series x steps. A window of fewer than
two samples is absent, and its value NaN, as the numpy path leaves it.
"""

from __future__ import annotations

from typing import Any

import numpy as np
from numba import njit

Array = Any  # numba's arrays, untyped for mypy


@njit(cache=True, nogil=True, error_model="numpy")
def _window_total(vs: Array, lo: int, hi: int) -> Any:
    """The increase of a counter from sample lo to hi with its resets added back, in Go's order."""
    total = vs[hi] - vs[lo]
    previous = vs[lo]
    for index in range(lo + 1, hi + 1):
        value = vs[index]
        if value < previous:
            total += previous
        previous = value
    return total


@njit(cache=True, nogil=True, error_model="numpy")
def extrapolated_rates(
    ts: Array,
    vs: Array,
    drops: Array,
    first: Array,
    stop: Array,
    starts: Array,
    ends: Array,
    width_ms: int,
    is_rate: bool,
    values: Array,
    present: Array,
) -> None:
    """Series ``r`` is ``ts``/``vs`` ``[first[r], stop[r])``; step ``j`` reads ``[starts[j], ends[j]]`` (both
    included). ``drops``: how many times the values went down up to each sample. Fills values/present."""
    width_s = width_ms / 1000
    for row in range(first.size):
        lo = first[row]
        hi = first[row]
        last_index = stop[row]
        for step in range(starts.size):
            start, end = starts[step], ends[step]
            while lo < last_index and ts[lo] < start:
                lo += 1
            if hi < lo:
                hi = lo
            while hi < last_index and ts[hi] <= end:
                hi += 1
            high = hi - 1
            count = high - lo + 1
            if count < 2:
                values[row, step] = np.nan
                present[row, step] = False
                continue
            first_value = vs[lo]
            result = _window_total(vs, lo, high) if drops[high] != drops[lo] else vs[high] - first_value
            to_start = np.float64(ts[lo] - start) / 1000
            to_end = np.float64(end - ts[high]) / 1000
            sampled = np.float64(ts[high] - ts[lo]) / 1000
            average = sampled / np.float64(count - 1)
            to_zero = sampled * (first_value / result)
            if result > 0 and first_value >= 0 and to_zero < to_start:
                to_start = to_zero
            threshold = average * 1.1
            interval = sampled + (to_start if to_start < threshold else average / 2)
            interval = interval + (to_end if to_end < threshold else average / 2)
            factor = interval / sampled
            if is_rate:
                factor = factor / width_s
            values[row, step] = result * factor
            present[row, step] = True


@njit(cache=True, nogil=True)
def instants(
    ts: Array,
    vs: Array,
    bits: Array,
    first: Array,
    stop: Array,
    refs: Array,
    lookback_ms: int,
    stale: np.uint64,
    values: Array,
    present: Array,
) -> None:
    """An instant selector at every step: series ``r``'s last sample at or before ``refs[j]``, present when it is
    within the lookback and not the staleness marker (``bits``: the values' bits). An absent cell holds the value
    the numpy path leaves there (the sample before the series' first, or its last). ``stale`` is a uint64: numba
    compares a uint64 with an int64 as floats."""
    last_sample = vs.size - 1
    for row in range(first.size):
        after = first[row]
        for step in range(refs.size):
            ref = refs[step]
            while after < stop[row] and ts[after] <= ref:
                after += 1
            index = after - 1
            clipped = min(max(index, 0), last_sample)
            values[row, step] = vs[clipped]
            present[row, step] = index >= first[row] and ts[clipped] >= ref - lookback_ms and bits[clipped] != stale


FOLD_OPS = {"sum": 0, "max": 1, "min": 2, "avg": 3, "count": 4, "group": 5, "running sum": 6}


@njit(cache=True, nogil=True, error_model="numpy")
def fold_rows(op: int, ids: Array, groups: int, values: Array, present: Array) -> tuple[Array, Array, Array]:
    """``columns._fold``'s row-by-row aggregation (the rows of each group in their order, cell by cell, with the
    same float operations): each group's total, whether any row was present, and how many were, per step. The
    running sum is ``_fold_wide``'s: a group's first row (0 where absent), then each next row added (0 where
    absent), as ``cumsum`` adds them."""
    n = values.shape[1]
    acc = np.zeros((groups, n))
    seen = np.zeros((groups, n), dtype=np.bool_)
    count = np.zeros((groups, n))
    started = np.zeros(groups, dtype=np.bool_)
    for row in range(ids.shape[0]):
        group = ids[row]
        if op == 6:
            for step in range(n):
                here = present[row, step]
                value = values[row, step] if here else 0.0
                acc[group, step] = acc[group, step] + value if started[group] else value
                seen[group, step] = seen[group, step] or here
            started[group] = True
            continue
        for step in range(n):
            if not present[row, step]:
                continue
            value = values[row, step]
            cnt = count[group, step] + 1.0
            count[group, step] = cnt
            if not seen[group, step]:
                seen[group, step] = True
                acc[group, step] = value
                continue
            total = acc[group, step]
            if op == 0:
                total = total + value
            elif op == 1:
                if total < value or np.isnan(total):
                    total = value
            elif op == 2:
                if total > value or np.isnan(total):
                    total = value
            elif op == 3:  # the incremental mean, an Inf kept as Prometheus 2.42 keeps it
                same_inf = np.isinf(value) and ((total > 0) == (value > 0))
                finite_in = not np.isinf(value) and not np.isnan(value)
                if not (np.isinf(total) and (same_inf or finite_in)):
                    total = total + (value / cnt - total / cnt)
            acc[group, step] = total
    return acc, seen, count
