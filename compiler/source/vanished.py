"""``no_data.vanished``: a per-slice alert for a slice whose series are gone while others still report.

The spec-wide NoData alert is ``absent(...)`` of the recorded series: it stays silent while
any slice reports, so a pool whose Node objects are all deleted vanishes without a word.
This section turns on a per-slice alert for it. It is off unless enabled: a slice set that
changes by design (nodes under an autoscaler, pods) would page on every scale-down, and the
rule reads ``window`` of samples of every slice at each evaluation.
"""

from __future__ import annotations

from compiler import promql
from compiler.model import Slice, Vanished
from compiler.model.windows import MINUTE
from compiler.source.reader import SpecReader

DEFAULT_WINDOW_MS = 60 * MINUTE
DEFAULT_FOR_MS = 10 * MINUTE
# The slice's series take up to two lookbacks (the raw rate's window, then the recorded
# series' staleness) to disappear; the window must outlast that and the wait.
MIN_WINDOW_PAST_FOR_MS = 15 * MINUTE
MAX_WINDOW_MS = 24 * 60 * MINUTE  # longer windows read a day of every slice's samples at every evaluation
# Samples the rule may read per evaluation on the profiled cluster (slices x window / interval).
MAX_SAMPLES_PER_EVALUATION = 100_000

_KEY = ("no_data", "vanished")


def read_vanished(r: SpecReader) -> Vanished | None:
    """The vanished-slice alert's window, wait and severity, or None when it is not enabled."""
    raw = r.data.get("no_data", {}).get("vanished")
    if raw is None or not raw.get("enabled", False):
        return None
    window = r.duration((*_KEY, "window"), DEFAULT_WINDOW_MS)
    wait = r.duration((*_KEY, "for"), DEFAULT_FOR_MS)
    if wait <= 0:
        r.error(
            (*_KEY, "for"),
            "no_data.vanished.for must be positive (default 10m): a slice is briefly absent whenever its "
            "targets restart, and without a wait every restart would alert",
        )
    if window % MINUTE or window > MAX_WINDOW_MS:
        r.error(
            (*_KEY, "window"),
            f"no_data.vanished.window must be whole minutes up to 1d, not {promql.format_duration(window)}: the "
            "rule reads that much of every slice's samples at each evaluation",
        )
    elif window < wait + MIN_WINDOW_PAST_FOR_MS:
        r.error(
            (*_KEY, "window"),
            f"no_data.vanished.window {promql.format_duration(window)} must be at least 15m longer than its for "
            f"({promql.format_duration(wait)}): the alert resolves once the slice's last sample is older than "
            "the window, so a shorter one resolves before it could fire",
        )
    return Vanished(window_ms=window, for_ms=wait, severity=raw.get("severity", "ticket"))


def check_vanished_slice(r: SpecReader, slice_: Slice | None, vanished: Vanished | None) -> None:
    """A spec with one slice (no ``slice.by``) has nothing to vanish that NoData does not cover."""
    if vanished is not None and slice_ is not None and not slice_.by:
        r.error(
            (*_KEY, "enabled"),
            "no_data.vanished needs slice.by: a spec with a single slice has no slice that can vanish while "
            "others report, and its absence is the NoData alert's job",
        )
