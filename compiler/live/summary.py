"""What a backtest found, for people: firing intervals, pages per team and week, the noisiest
alerts, how long after its condition began each alert fired, and the alerts that never fired.
As a table for the terminal, JSON for tools, and Markdown for a pull request."""

from __future__ import annotations

from collections import Counter
from typing import Any

from compiler.live.backtest import NO_DATA_KINDS, Interval, Result
from compiler.live.coverage import Clipped, Span, clip, duration, iso_week, union, week_data, week_text, when
from compiler.text.terminal import printable

NOISIEST = 10


def _when(ms: int | None) -> str:
    return "-" if ms is None else when(ms)


def _duration(ms: int) -> str:
    return duration(ms)


def _spans(interval: Interval, result: Result) -> tuple[Span, ...]:
    """Where the firing is history: the spec's data, or for a no-data alert wherever the server held data."""
    coverage = result.coverage.get(interval.spec)
    if coverage is None:  # not measured: the whole replay
        return ((min(interval.active_ms, result.start_ms), result.end_ms),)
    return coverage.server if interval.no_data else coverage.data


def clipped(result: Result) -> list[tuple[Interval, Clipped]]:
    """Each firing with the part of it inside the window and the data, in order; a firing with no such part
    is left out (it happened where the server holds nothing)."""
    found = []
    for interval in result.intervals:
        shown = clip(interval.fired_ms, interval.resolved_ms, _spans(interval, result), result.start_ms, result.end_ms)
        if shown is not None:
            found.append((interval, shown))
    return sorted(found, key=lambda pair: (pair[1].fired_ms, pair[0].alert, sorted(pair[0].labels.items())))


def _slice_text(labels: dict[str, str]) -> str:
    routing = {"alertname", "severity", "team", "slo", "family", "slo_compiler", "long_window", "short_window"}
    routing |= {"burn_factor", "shadow", "automation"}
    return ", ".join(f"{k}={v}" for k, v in sorted(labels.items()) if k not in routing) or "cluster-wide"


def _weekly(shown: list[tuple[Interval, Clipped]], result: Result) -> list[dict[str, Any]]:
    """Firings per ISO week (of when they are shown firing), team and severity, with how much of the week
    the data covers (the specs' data together): a count is only ever of a week with data."""
    weekly = Counter((iso_week(c.fired_ms), i.labels.get("team", ""), i.labels.get("severity", "")) for i, c in shown)
    data = union(*(coverage.data for coverage in result.coverage.values()))
    weeks = week_data(data if result.coverage else ((result.start_ms, result.end_ms),), result.start_ms, result.end_ms)
    return [
        {
            "week": week,
            "team": team,
            "severity": severity,
            "firings": count,
            "data": week_text(*weeks.get(week, (0, 0))),
            "data_ms": weeks.get(week, (0, 0))[0],
            "asked_ms": weeks.get(week, (0, 0))[1],
        }
        for (week, team, severity), count in sorted(weekly.items())
    ]


def _no_history(result: Result) -> list[dict[str, Any]]:
    """The no-data alerts over a part of the window the server never covered: not judged there."""
    found = []
    for spec, alert in sorted(result.alerts, key=lambda pair: (pair[0], pair[1].name)):
        coverage = result.coverage.get(spec)
        if alert.kind in NO_DATA_KINDS and coverage is not None and coverage.unserved_ms > 0:
            missing = coverage.unserved_ms
            found.append(
                {
                    "spec": spec,
                    "alert": alert.name,
                    "without_history": _duration(missing),
                    "without_history_ms": missing,
                }
            )
    return found


def summarise(result: Result) -> dict[str, Any]:
    """Everything the three formats show, as plain data (the JSON output)."""
    shown = clipped(result)
    noisy: dict[tuple[str, str], list[Clipped]] = {}
    for interval, part in shown:
        noisy.setdefault((interval.spec, interval.alert), []).append(part)
    ranked = sorted(noisy.items(), key=lambda item: (-len(item[1]), -sum(c.firing_ms for c in item[1]), item[0]))
    fired = {(i.spec, i.alert) for i, _ in shown}
    never = sorted({(spec, alert.name) for spec, alert in result.alerts} - fired)
    return {
        "from": _when(result.start_ms),
        "to": _when(result.end_ms),
        "warmup": _duration(result.warmup_ms),
        "warmup_ms": result.warmup_ms,
        "queries": result.queries,
        "samples_read": result.samples_read,
        "problems": result.problems,
        "coverage": [coverage.as_json(spec) for spec, coverage in sorted(result.coverage.items())],
        "intervals": [_interval_json(i, c) for i, c in shown],
        "per_week": _weekly(shown, result),
        "noisiest": [
            {
                "spec": spec,
                "alert": alert,
                "firings": len(items),
                "firing_for": _duration(sum(c.firing_ms for c in items)),
                "firing_for_ms": sum(c.firing_ms for c in items),
            }
            for (spec, alert), items in ranked[:NOISIEST]
        ],
        "never_fired": [{"spec": spec, "alert": alert} for spec, alert in never],
        "no_history": _no_history(result),
    }


def _notes(part: Clipped) -> list[str]:
    notes = ["already firing where the window or the data begins"] if part.before_data else []
    return notes + (["the data ended while it fired"] if part.data_ended else [])


def _interval_json(interval: Interval, part: Clipped) -> dict[str, Any]:
    """One firing as shown: its times clipped to the window and the data (``replayed_*`` keep the replay's
    own), ``firing_for`` inside them."""
    return {
        "spec": interval.spec,
        "alert": interval.alert,
        "labels": dict(sorted(interval.labels.items())),
        "pending_since": _when(interval.active_ms) if not part.before_data else "-",
        "fired": _when(part.fired_ms),
        "resolved": "data ended" if part.data_ended else _when(part.resolved_ms),
        "condition_began": _when(interval.condition_ms) if not part.before_data else "-",
        "time_to_fire": _duration(interval.time_to_fire_ms) if not part.before_data else "-",
        "time_to_fire_ms": interval.time_to_fire_ms if not part.before_data else None,
        "firing_for": _duration(part.firing_ms),
        "firing_for_ms": part.firing_ms,
        "fired_ms": part.fired_ms,
        "resolved_ms": part.resolved_ms,
        "replayed_fired_ms": interval.fired_ms,
        "replayed_resolved_ms": interval.resolved_ms,
        "notes": _notes(part),
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
            "; ".join(i["notes"]),
        ]
        for i in summary["intervals"]
    ]
    data = [[c["spec"], c["text"]] for c in summary["coverage"]]
    weekly = [[w["week"], w["team"], w["severity"], str(w["firings"]), w["data"]] for w in summary["per_week"]]
    noisy = [[n["alert"], n["spec"], str(n["firings"]), n["firing_for"]] for n in summary["noisiest"]]
    never = [[n["alert"], n["spec"]] for n in summary["never_fired"]]
    unjudged = [[n["alert"], n["spec"], n["without_history"]] for n in summary["no_history"]]
    return [
        ("Data the server holds, per spec", ["spec", "data"], data),
        (
            "Firing intervals",
            ["fired", "resolved", "alert", "severity", "slice", "after condition", "firing for", "note"],
            firing,
        ),
        ("Firings per week, team and severity", ["week", "team", "severity", "firings", "data in the week"], weekly),
        ("Noisiest alerts", ["alert", "spec", "firings", "firing for"], noisy),
        ("Never fired", ["alert", "spec"], never),
        (
            "No history (no-data alerts not judged where the server held no data)",
            ["alert", "spec", "not judged"],
            unjudged,
        ),
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
