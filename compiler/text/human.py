"""Numbers for people: what every runbook, catalog page, diff, explain, backtest and preflight text,
and every comment or annotation in a generated file, writes where a person reads.

* Factors and derived ratios to the precision that matters: the fewest significant digits (at most
  three) within 1% of the value (``factor``: ``0.93x``, ``14.4x``; ``share``: ``0.47%``, ``14.3%``).
* A ratio a person wrote, exactly and never in exponent notation (``percent``: ``99.999%``).
* Durations in their largest units with a space between (``14d``, ``3d 6h``, ``56m 18s``); parts under
  a second only when the whole is under a second (``250ms``).
* Counts with thousands separators (``1,209,600``), values in the spec's unit (``value``: seconds as
  durations, ``250ms``, ``1.5s``; bytes as ``16 MiB`` or ``100 MB``; ratios as percents).

PromQL thresholds are not written here: they stay exact (``numbers.go_float``). JSON keeps the raw
number beside any text made here.
"""

from __future__ import annotations

import functools
import math
from decimal import Decimal

from compiler.text.numbers import clean_number, go_float

_TOLERANCE = 0.01  # how far a rounded factor or share may be from the value
_MOST_DIGITS = 3
_SMALLEST, _LARGEST = 1e-9, 1e18  # beyond these a number is written as Prometheus writes it
_DAY, _HOUR, _MINUTE, _SECOND = 86_400_000, 3_600_000, 60_000, 1000
_UNITS_MS = (("d", _DAY), ("h", _HOUR), ("m", _MINUTE), ("s", _SECOND))
# ``decimal``, ``approx`` and ``duration`` are memoised: every runbook, dashboard and rule annotation writes
# the same few windows, factors and thresholds, thousands of times in a big library. An int and a float
# are told apart (``typed``); 0.0 and -0.0 share a key, and each of these writes both the same way.
_CACHE_SIZE = 16_384


def _plain(text: str) -> str:
    """A decimal string (any form Python's ``Decimal`` reads) without exponent, trailing zeros or a
    trailing point, with thousands separators in its whole part."""
    number = Decimal(text)
    if number == 0:
        return "0"
    written = format(number.normalize(), "f")
    sign = "-" if written.startswith("-") else ""
    whole, _, frac = written.lstrip("-").partition(".")
    whole = f"{int(whole):,}"
    return f"{sign}{whole}.{frac}" if frac else f"{sign}{whole}"


def _absurd(value: float) -> bool:
    """Not finite, or so large or small that a plain decimal would be a wall of digits: such a number keeps
    Prometheus's form (``1e+300``, ``+Inf``)."""
    return not math.isfinite(value) or (value != 0 and not _SMALLEST <= abs(value) < _LARGEST)


@functools.lru_cache(maxsize=_CACHE_SIZE, typed=True)
def decimal(value: float) -> str:
    """A number exactly as written (binary noise rounded away), never in exponent notation:
    ``1209600`` -> ``1,209,600``, ``2e-05`` -> ``0.00002``."""
    if math.isnan(value):
        return "NaN"
    if math.isinf(value):
        return "+Inf" if value > 0 else "-Inf"
    if _absurd(value):
        return go_float(value)
    return _plain(repr(clean_number(value)))


@functools.lru_cache(maxsize=_CACHE_SIZE, typed=True)
def approx(value: float) -> str:
    """The fewest significant digits (at most three) within 1% of ``value``; whole numbers of three
    or more digits stay whole: ``0.9333`` -> ``0.93``, ``14.4`` -> ``14.4``, ``1234.5`` -> ``1,235``."""
    if value == 0 or _absurd(value):
        return decimal(value)
    if abs(value) >= 10 ** (_MOST_DIGITS - 1):
        return _plain(str(round(value)))
    for digits in range(1, _MOST_DIGITS + 1):
        text = f"{value:.{digits}g}"
        if abs(float(text) - value) <= _TOLERANCE * abs(value):
            return _plain(text)
    return _plain(f"{value:.{_MOST_DIGITS}g}")


def factor(value: float) -> str:
    """A burn rate or any multiple: as written when it has at most two decimals (``14.4x``, ``13.44x``,
    ``1,000x``), else to the digits that matter (a derived ``0.9333`` is ``0.93x``)."""
    written = clean_number(value)
    return f"{decimal(written) if round(written, 2) == written else approx(value)}x"


def share(ratio: float) -> str:
    """A derived ratio as a percent to the digits that matter: ``0.0046667`` -> ``0.47%``."""
    return f"{approx(ratio * 100)}%"


def percent(ratio: float) -> str:
    """A ratio a person wrote, exactly: ``0.99999`` -> ``99.999%``, ``0.0001`` -> ``0.01%``."""
    return f"{decimal(clean_number(ratio * 100))}%"


@functools.lru_cache(maxsize=_CACHE_SIZE, typed=True)
def duration(ms: int | float) -> str:
    """A duration for people: ``14d``, ``3d 6h``, ``56m 18s``, ``250ms``, ``0s``. Under a second it is
    written in (rounded) milliseconds; otherwise rounded to whole seconds."""
    if ms < 0:
        return f"-{duration(-ms)}"
    if ms < _SECOND:
        whole_ms = round(ms)
        return f"{whole_ms}ms" if whole_ms else ("0s" if ms == 0 else f"{approx(ms)}ms")
    remaining = round(ms / _SECOND) * _SECOND
    parts = []
    for unit, unit_ms in _UNITS_MS:
        count, remaining = divmod(remaining, unit_ms)
        if count:
            parts.append(f"{count:,}{unit}" if unit == "d" else f"{count}{unit}")
    return " ".join(parts)


def seconds(value: float) -> str:
    """A value in seconds for people: ``0.25`` -> ``250ms``, ``1.5`` -> ``1.5s``, ``1209600`` -> ``14d``."""
    if _absurd(value) or abs(value) >= _LARGEST / 1e6:  # beyond 30,000 years: the number of seconds
        return f"{decimal(value)}s"
    if value < 0:
        return f"-{seconds(-value)}"
    if value < 1:
        return f"{decimal(value * 1000)}ms" if value else "0s"
    if value < 60:
        return f"{decimal(value)}s"
    whole = round(value)
    if abs(whole - value) < 0.5:
        return duration(whole * _SECOND)
    return duration(value * _SECOND)


def count(value: float) -> str:
    """A count: ``20000000`` -> ``20,000,000``."""
    return decimal(value)


_IEC = (("PiB", 2**50), ("TiB", 2**40), ("GiB", 2**30), ("MiB", 2**20), ("KiB", 2**10))
_SI = (("PB", 10**15), ("TB", 10**12), ("GB", 10**9), ("MB", 10**6), ("kB", 10**3))


def byte_size(value: float) -> str:
    """Bytes: ``16777216`` -> ``16 MiB`` (exact binary multiples), ``1e8`` -> ``100 MB``, ``512`` -> ``512 B``."""
    if _absurd(value):
        return f"{decimal(value)} B"
    size = abs(value)
    sign = "-" if value < 0 else ""
    for name, scale in _IEC:
        if size >= scale:
            if size / scale == round(size / scale, 2):
                return f"{sign}{decimal(size / scale)} {name}"
            break
    for name, scale in _SI:
        if size >= scale:
            return f"{sign}{approx(size / scale)} {name}"
    return f"{decimal(value)} B"


def value(unit: str, number: float) -> str:
    """A value in a spec's ``unit``, the same way in runbooks, catalog, alerts and dashboards."""
    if unit == "ratio":
        return percent(number)
    if unit == "seconds":
        return seconds(number)
    if unit == "bytes":
        return byte_size(number)
    if unit == "bytes_per_second":
        return f"{byte_size(number)}/s"
    if unit == "per_second":
        return f"{decimal(number)}/s"
    return decimal(number)


def reading(unit: str, number: float) -> str:
    """A measured value in a spec's ``unit``, to the digits that matter (a live ``0.1234567`` ratio is
    ``12.3%``, ``0.2468`` seconds ``247ms``); a written bound goes through ``value`` instead."""
    if _absurd(number):
        return decimal(number)
    if unit == "ratio":
        return share(number)
    if unit == "seconds" and abs(number) < 60:
        return f"{approx(number * 1000)}ms" if abs(number) < 1 else f"{approx(number)}s"
    if unit in ("bytes", "bytes_per_second", "seconds"):
        return value(unit, float(approx(number).replace(",", "")))
    suffix = "/s" if unit == "per_second" else ""
    return f"{approx(number)}{suffix}"


def bound(unit: str, side: str, number: float) -> str:
    """One end of a range in words: ``bound("seconds", "max", 0.25)`` -> ``under 250ms``,
    ``bound("ratio", "min", 0.8)`` -> ``over 80%``."""
    return f"{'under' if side == 'max' else 'over'} {value(unit, number)}"
