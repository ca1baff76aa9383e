"""A small SVG chart per burn alert: minutes to fire against the burn rate, drawn by the compiler.

No charting library and no script: the page must work from disk with no network, and the
bytes must be the same on every machine, so coordinates are rounded to one decimal and
written in a fixed order. The x axis is the burn rate on a log scale, from the alert's
factor (its threshold) to a full outage; the y axis is the time to fire, including ``for``.
"""

from __future__ import annotations

import math
from html import escape

from compiler.model.windows import MINUTE

WIDTH, HEIGHT, LEFT, BOTTOM, TOP, RIGHT = 320, 160, 48, 28, 12, 12


def _x(rate: float, low: float, high: float) -> float:
    span = math.log(high) - math.log(low) if high > low else 1.0
    return LEFT + (math.log(rate) - math.log(low)) / span * (WIDTH - LEFT - RIGHT)


def _y(minutes: float, top: float) -> float:
    return HEIGHT - BOTTOM - (minutes / top if top else 0.0) * (HEIGHT - BOTTOM - TOP)


def _label(value: float) -> str:
    return f"{value:.3g}" if value < 1000 else f"{value:,.0f}"


def _minutes_label(minutes: float) -> str:
    if minutes < 120:
        return f"{minutes:.0f} min"
    return f"{minutes / 60:.1f} h" if minutes < 2880 else f"{minutes / 1440:.1f} d"


def burn_chart(points: tuple[tuple[float, int], ...], title: str) -> str:
    """The inline SVG for ``points`` ((burn rate, detection ms), increasing rate)."""
    if len(points) < 2:
        return ""
    low, high = points[0][0], points[-1][0]
    top = max(ms for _, ms in points) / MINUTE
    path = " ".join(
        f"{'M' if i == 0 else 'L'}{_x(rate, low, high):.1f},{_y(ms / MINUTE, top):.1f}"
        for i, (rate, ms) in enumerate(points)
    )
    base = HEIGHT - BOTTOM
    return (
        f'<svg class="chart" role="img" viewBox="0 0 {WIDTH} {HEIGHT}" width="{WIDTH}" height="{HEIGHT}" '
        f'xmlns="http://www.w3.org/2000/svg"><title>{escape(title)}</title>'
        f'<line x1="{LEFT}" y1="{base}" x2="{WIDTH - RIGHT}" y2="{base}" class="axis"/>'
        f'<line x1="{LEFT}" y1="{TOP}" x2="{LEFT}" y2="{base}" class="axis"/>'
        f'<path d="{path}" class="curve"/>'
        f'<text x="{LEFT}" y="{HEIGHT - 8}" class="tick">{_label(low)}x</text>'
        f'<text x="{WIDTH - RIGHT}" y="{HEIGHT - 8}" class="tick end">{_label(high)}x burn</text>'
        f'<text x="{LEFT - 4}" y="{TOP + 8}" class="tick end">{_minutes_label(top)}</text>'
        f'<text x="{LEFT - 4}" y="{base}" class="tick end">0</text>'
        "</svg>"
    )
