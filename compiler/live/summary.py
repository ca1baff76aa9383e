"""What a backtest found, for people: firing intervals, pages per team and week, the noisiest
alerts, how long after its condition began each alert fired, and the alerts that never fired.
As a table for the terminal, JSON for tools, and Markdown for a pull request."""

from __future__ import annotations

from collections import Counter
from datetime import UTC, datetime
from typing import Any

from compiler.live.backtest import Interval, Result
from compiler.promql import format_duration
from compiler.text.terminal import printable

NOISIEST = 10


def _when(ms: int | None) -> str:
    if ms is None:
        return "-"
    return datetime.fromtimestamp(ms / 1000, UTC).strftime("%Y-%m-%d %H:%M:%S")


def _week(ms: int) -> str:
    year, week, _ = datetime.fromtimestamp(ms / 1000, UTC).isocalendar()
    return f"{year}-W{week:02d}"


def _duration(ms: int) -> str:
    return format_duration(max(0, ms)) if ms else "0s"


def firing_ms(interval: Interval, result: Result) -> int:
    end = interval.resolved_ms if interval.resolved_ms is not None else result.end_ms
    return max(0, min(end, result.end_ms) - max(interval.fired_ms, result.start_ms))


def _slice_text(labels: dict[str, str]) -> str:
    routing = {"alertname", "severity", "team", "slo", "family", "slo_compiler", "long_window", "short_window"}
    routing |= {"burn_factor", "shadow", "automation"}
    return ", ".join(f"{k}={v}" for k, v in sorted(labels.items()) if k not in routing) or "cluster-wide"


def summarise(result: Result) -> dict[str, Any]:
    """Everything the three formats show, as plain data (the JSON output)."""
    intervals = sorted(result.intervals, key=lambda i: (i.fired_ms, i.alert, sorted(i.labels.items())))
    weekly = Counter((_week(i.fired_ms), i.labels.get("team", ""), i.labels.get("severity", "")) for i in intervals)
    noisy: dict[tuple[str, str], list[Interval]] = {}
    for interval in intervals:
        noisy.setdefault((interval.spec, interval.alert), []).append(interval)
    ranked = sorted(
        noisy.items(), key=lambda item: (-len(item[1]), -sum(firing_ms(i, result) for i in item[1]), item[0])
    )
    fired = {(i.spec, i.alert) for i in intervals}
    never = sorted({(spec, alert.name) for spec, alert in result.alerts} - fired)
    return {
        "from": _when(result.start_ms),
        "to": _when(result.end_ms),
        "warmup": _duration(result.warmup_ms),
        "queries": result.queries,
        "samples_read": result.samples_read,
        "problems": result.problems,
        "intervals": [_interval_json(i, result) for i in intervals],
        "per_week": [
            {"week": week, "team": team, "severity": severity, "firings": count}
            for (week, team, severity), count in sorted(weekly.items())
        ],
        "noisiest": [
            {
                "spec": spec,
                "alert": alert,
                "firings": len(items),
                "firing_for": _duration(sum(firing_ms(i, result) for i in items)),
            }
            for (spec, alert), items in ranked[:NOISIEST]
        ],
        "never_fired": [{"spec": spec, "alert": alert} for spec, alert in never],
    }


def _interval_json(interval: Interval, result: Result) -> dict[str, Any]:
    return {
        "spec": interval.spec,
        "alert": interval.alert,
        "labels": dict(sorted(interval.labels.items())),
        "pending_since": _when(interval.active_ms),
        "fired": _when(interval.fired_ms),
        "resolved": _when(interval.resolved_ms),
        "condition_began": _when(interval.condition_ms),
        "time_to_fire": _duration(interval.time_to_fire_ms),
        "firing_for": _duration(firing_ms(interval, result)),
        "fired_ms": interval.fired_ms,
        "resolved_ms": interval.resolved_ms,
    }


def _alert_text(alert: str, labels: dict[str, str]) -> str:
    """A burn alert with its window pair (the pairs share one name)."""
    if "long_window" in labels:
        return f"{alert} {labels['long_window']}/{labels.get('short_window', '')}"
    return alert


def _rows(summary: dict[str, Any]) -> list[tuple[str, list[str], list[list[str]]]]:
    """The report's sections as (title, header, rows), shared by the table and Markdown forms."""
    firing = [
        [
            i["fired"],
            i["resolved"],
            _alert_text(i["alert"], i["labels"]),
            i["labels"].get("severity", ""),
            _slice_text(i["labels"]),
            i["time_to_fire"],
            i["firing_for"],
        ]
        for i in summary["intervals"]
    ]
    weekly = [[w["week"], w["team"], w["severity"], str(w["firings"])] for w in summary["per_week"]]
    noisy = [[n["alert"], n["spec"], str(n["firings"]), n["firing_for"]] for n in summary["noisiest"]]
    never = [[n["alert"], n["spec"]] for n in summary["never_fired"]]
    return [
        (
            "Firing intervals",
            ["fired", "resolved", "alert", "severity", "slice", "after condition", "firing for"],
            firing,
        ),
        ("Firings per week, team and severity", ["week", "team", "severity", "firings"], weekly),
        ("Noisiest alerts", ["alert", "spec", "firings", "firing for"], noisy),
        ("Never fired", ["alert", "spec"], never),
    ]


def _heading(summary: dict[str, Any]) -> str:
    return (
        f"backtest {summary['from']} to {summary['to']} UTC (warm-up {summary['warmup']}): "
        f"{len(summary['intervals'])} firing interval(s), {summary['queries']} queries, "
        f"{summary['samples_read']} samples read"
    )


def render_table(summary: dict[str, Any]) -> str:
    """For a terminal: text from the server (label values, its errors) has its control characters escaped."""
    lines = [_heading(summary)]
    lines += [f"problem: {printable(problem)}" for problem in summary["problems"]]
    for title, header, plain in _rows(summary):
        rows = [[printable(cell) for cell in row] for row in plain]
        lines += ["", f"{title}:"]
        if not rows:
            lines.append("  (none)")
            continue
        widths = [max(len(r[c]) for r in [header, *rows]) for c in range(len(header))]
        for row in [header, *rows]:
            lines.append("  " + "  ".join(cell.ljust(width) for cell, width in zip(row, widths, strict=True)).rstrip())
    return "\n".join(lines) + "\n"


_HTML = str.maketrans({"&": "&amp;", "<": "&lt;", ">": "&gt;", "|": "\\|", "\n": " "})


def _cell(text: str) -> str:
    """Server text in a Markdown table cell or list item: no HTML can form (``<``, ``>`` and ``&`` as entities),
    pipes cannot split the cell, a newline is a space, and other control characters are escaped."""
    return printable(text.translate(_HTML))


def render_markdown(summary: dict[str, Any]) -> str:
    lines = [f"### {_cell(_heading(summary))}"]
    lines += [f"- problem: {_cell(problem)}" for problem in summary["problems"]]
    for title, header, rows in _rows(summary):
        lines += ["", f"#### {title}", ""]
        if not rows:
            lines.append("None.")
            continue
        lines.append("| " + " | ".join(header) + " |")
        lines.append("|" + "---|" * len(header))
        lines += ["| " + " | ".join(_cell(cell) for cell in row) + " |" for row in rows]
    return "\n".join(lines) + "\n"
