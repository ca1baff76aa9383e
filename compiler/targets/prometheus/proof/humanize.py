"""Python ports of Prometheus's template functions ``humanize*`` (Prometheus 2.42, template.go).

Generated promtool tests assert alert annotations exactly, and annotations show
``{{ $value | humanize... }}``; the test generator must therefore format a value exactly as
Prometheus will. Go's ``%.4g`` and Python's agree for finite values.
"""

from __future__ import annotations

import math

_BIG = ("k", "M", "G", "T", "P", "E", "Z", "Y")
_SMALL = ("m", "u", "n", "p", "f", "a", "z", "y")
_BIG_1024 = ("ki", "Mi", "Gi", "Ti", "Pi", "Ei", "Zi", "Yi")


def _g4(value: float) -> str:
    if math.isnan(value):
        return "NaN"
    if math.isinf(value):
        return "+Inf" if value > 0 else "-Inf"
    return f"{value:.4g}"


def humanize(value: float) -> str:
    if value == 0 or math.isnan(value) or math.isinf(value):
        return _g4(value)
    prefix = ""
    if abs(value) >= 1:
        for candidate in _BIG:
            if abs(value) < 1000:
                break
            prefix = candidate
            value /= 1000
        return f"{_g4(value)}{prefix}"
    for candidate in _SMALL:
        if abs(value) >= 1:
            break
        prefix = candidate
        value *= 1000
    return f"{_g4(value)}{prefix}"


def humanize1024(value: float) -> str:
    if abs(value) <= 1 or math.isnan(value) or math.isinf(value):
        return _g4(value)
    prefix = ""
    for candidate in _BIG_1024:
        if abs(value) < 1024:
            break
        prefix = candidate
        value /= 1024
    return f"{_g4(value)}{prefix}"


def humanize_duration(value: float) -> str:
    if math.isnan(value) or math.isinf(value):
        return _g4(value)
    if value == 0:
        return f"{_g4(value)}s"
    if abs(value) >= 1:
        sign = "-" if value < 0 else ""
        value = abs(value)
        whole = int(value)
        seconds = whole % 60
        minutes = (whole // 60) % 60
        hours = (whole // 3600) % 24
        days = whole // 86400
        if days:
            return f"{sign}{days}d {hours}h {minutes}m {seconds}s"
        if hours:
            return f"{sign}{hours}h {minutes}m {seconds}s"
        if minutes:
            return f"{sign}{minutes}m {seconds}s"
        return f"{sign}{_g4(value)}s"
    prefix = ""
    for candidate in _SMALL:
        if abs(value) >= 1:
            break
        prefix = candidate
        value *= 1000
    return f"{_g4(value)}{prefix}s"


def humanize_percentage(value: float) -> str:
    return f"{_g4(value * 100)}%"
