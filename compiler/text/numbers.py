"""Numbers as Prometheus and Go write them, without binary noise."""

from __future__ import annotations

import functools
from decimal import Decimal


def clean_number(value: float) -> float:
    """Round away binary noise (14.4 * 0.01 = 0.14400000000000002) so rules read as written."""
    return float(f"{value:.12g}")


def complement(value: float) -> float:
    """``1 - value`` in decimal, as the spec's author wrote it: 1 - 0.99999 is 1e-05, not the float
    subtraction's 9.99999999995449e-06, whose error is too large a share of so small a result for
    ``clean_number`` to round away (a 99.999% objective's thresholds read 0.000143999999999)."""
    return float(Decimal(1) - Decimal(repr(float(value))))


def product(left: float, right: float) -> float:
    """``left * right`` in decimal, of the numbers as written: a 14.4x factor of a 1e-05 budget is 0.000144,
    the float the spec means, where the float product is 0.00014400000000000001. Never rounded beyond
    the one rounding to the nearest float, so a threshold stays exact."""
    return float(Decimal(repr(float(left))) * Decimal(repr(float(right))))


@functools.lru_cache(maxsize=16_384)
def go_float(value: float) -> str:
    """Format like Go's strconv.FormatFloat(v, 'g', -1, 64), which writes ``le`` labels."""
    if value == 0:
        return "0"
    digits = repr(float(value))
    mantissa, _, exponent_text = digits.partition("e")
    sign = "-" if mantissa.startswith("-") else ""
    mantissa = mantissa.lstrip("-")
    whole, _, frac = mantissa.partition(".")
    if frac == "0" and not exponent_text:
        frac = ""
    exponent = int(exponent_text) if exponent_text else 0
    significant = (whole + frac).lstrip("0")
    point = len(whole) + exponent if whole != "0" else exponent - (len(frac) - len(frac.lstrip("0")))
    significant = significant.rstrip("0") or "0"
    exp10 = point - 1
    if exp10 < -4 or exp10 >= 6:  # Go switches to %e at 1e+06 for shortest output
        head, tail = significant[0], significant[1:]
        body = f"{head}.{tail}" if tail else head
        return f"{sign}{body}e{'-' if exp10 < 0 else '+'}{abs(exp10):02d}"
    if point <= 0:
        return f"{sign}0.{'0' * -point}{significant}"
    if point >= len(significant):
        return f"{sign}{significant}{'0' * (point - len(significant))}"
    return f"{sign}{significant[:point]}.{significant[point:]}"
