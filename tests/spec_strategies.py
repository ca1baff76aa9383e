"""Hypothesis strategies for hostile and careless spec trees (issue 17), used by tests/engines/test_property.py.

A tree is an Owners and a Project document plus one to three SLO specs in one or two files. Each spec starts
from a valid base of its SLI kind, then *shapes* bend it: the extreme numbers, zero durations, label-name
edge cases, YAML tags, template braces, relative bands, scenarios and cross-spec links (``explains``
cycles, shared alert names) that issue 17 lists. ``spec_trees(primary)`` builds a tree around one shape
of ``ALL_SHAPES`` and adds up to two random ones per spec, so the test can give every shape its share of
examples. Each shape draws a valid value two times in three and a hostile one otherwise, so that about
two trees in five compile and their output reaches promtool and amtool.

The generated tests of an accepted tree run in promtool, so the valid values are chosen cheap to test:
burn windows of a few hours, waits up to 1h, scenarios up to 6h. The limits themselves (waits of a day, the
default policy's 3d window) cost seconds per spec and are covered by tests/engines/test_hostile_crashes.py.

Specs are built as Python data and written as YAML by ``to_yaml``: strings are double-quoted (JSON is YAML),
and ``Raw`` scalars (``.nan``, ``!!str 123``) are written as they are.
"""

from __future__ import annotations

import json
import math
import re
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

from hypothesis import strategies as st


class Raw(str):
    """A YAML scalar written verbatim: a tag, ``.nan``, ``.inf``."""


# -- writing YAML ------------------------------------------------------------------------------------------

_PLAIN_KEY = re.compile(r"[A-Za-z_][A-Za-z0-9_]*")
# Characters a YAML stream may not hold raw (escaped in double quotes, they are part of the value).
_UNPRINTABLE = re.compile("[\x7f-\x9f\u2028\u2029\ufeff\ufffe\uffff]")


def scalar(value: Any) -> str:
    """One value as a YAML 1.2 scalar that reads back as exactly that value."""
    if isinstance(value, Raw):
        return str(value)
    if value is None:
        return "null"
    if isinstance(value, bool):
        return "true" if value else "false"
    if isinstance(value, int):
        return str(value)
    if isinstance(value, float):
        if math.isnan(value):
            return ".nan"
        if math.isinf(value):
            return ".inf" if value > 0 else "-.inf"
        return repr(value)
    return _UNPRINTABLE.sub(lambda match: f"\\u{ord(match[0]):04x}", json.dumps(str(value), ensure_ascii=False))


def flow(value: Any) -> str:
    """A value in YAML flow style (``{a: 1, b: [x]}``)."""
    if isinstance(value, dict):
        return "{" + ", ".join(f"{key(k)}: {flow(v)}" for k, v in value.items()) + "}"
    if isinstance(value, list):
        return "[" + ", ".join(flow(item) for item in value) + "]"
    return scalar(value)


def key(name: str) -> str:
    return name if _PLAIN_KEY.fullmatch(name) else scalar(name)


def to_yaml(document: dict[str, Any], indent: int = 0) -> str:
    """Block mappings down to lists, which are block sequences of flow items."""
    pad = "  " * indent
    lines = []
    for name, value in document.items():
        if isinstance(value, dict) and value:
            lines.append(f"{pad}{key(name)}:\n{to_yaml(value, indent + 1)}")
        elif isinstance(value, list) and value and isinstance(value[0], dict):
            items = "".join(f"{pad}  - {flow(item)}\n" for item in value)
            lines.append(f"{pad}{key(name)}:\n{items}")
        else:
            lines.append(f"{pad}{key(name)}: {flow(value)}\n")
    return "".join(lines)


# -- values ---------------------------------------------------------------------------------------------------

# Numbers at the edges of what YAML, Python and Go read alike.
EXTREME_NUMBERS: list[Any] = [
    Raw(".nan"),
    Raw(".inf"),
    Raw("-.inf"),
    1e308,
    -1e308,
    1e-300,
    5e-324,
    -0.0,
    0,
    -1,
    10**30,
    2**63,
    Raw("!!str 123"),
    Raw("!!float 1"),
    Raw("!!int 7"),
    Raw("0x1F"),
    Raw("0o17"),
    "1e-300%",
    "NaN%",
    "",
]
ZERO_AND_ODD_DURATIONS = ["0s", "0d", "0m", "1ms", "999ms", "1s", "30s", "90s", "7m", "1y", "365d", "100y"]
# Label names Prometheus 2 refuses, Prometheus 3 quotes, or the compiler reserves.
LABEL_NAMES = [
    "cluster",
    "zone",
    "resource",
    "ñandú",
    "a.b",
    "1abc",
    "",
    "__x",
    "le",
    "burn_factor",
    "alertstate",
    "shadow",
    "automation",
    "datasource",
    "slo",
    "severity",
    "Cluster",
    "_",
    "x-y",
    "a b",
]
TRICKY_TEXT = [
    "{{ $labels.cluster }}",
    '{{ template "x" }}',
    "}}{{",
    "`code` ``",
    "<script>alert(1)</script>",
    "| a | b |\n| - | - |",
    "# heading\n---\n",
    "line\nbreak\r\nand\ttab",
    "$value %s %d \\",
    "\"quoted\" 'single'",
    "ünïcödé ✓ 🚨",
    "\u0000\u0007",
    "\u2028\u2029",
    "a" * 300,
    "@here <!channel>",
    "&amp; &lt;",
    "#",
    " ",
]
texts = st.one_of(st.sampled_from(TRICKY_TEXT), st.text(st.characters(blacklist_categories=["Cs"]), max_size=30))
label_values = st.one_of(
    st.sampled_from(["", 'a"b', "\\", "{}", "x\ny", "ünï", ".*", "a|b", "$1", "\u0000"]),
    st.text(st.characters(blacklist_categories=["Cs"]), max_size=8),
)

TEAMS = ["platform-network", "platform-nodes"]
CHEAP_PAIRS: list[dict[str, Any]] = [
    {"severity": "page", "long": "1h", "short": "5m", "factor": 10, "for": "2m"},
    {"severity": "page", "long": "30m", "short": "5m", "factor": 14.4, "for": "1m"},
    {"severity": "ticket", "long": "1h", "short": "10m", "budget_share": "1%", "for": "5m"},
    {"severity": "ticket", "long": "1h", "short": "5m", "factor": 3},
    {"severity": "info", "long": "30m", "short": "10m", "factor": 2, "for": "2m"},
]


# -- base specs -------------------------------------------------------------------------------------------------


filled_texts = texts.filter(bool)  # built once: hypothesis validates each new strategy object it is given
_steps = st.lists(filled_texts, min_size=1, max_size=2)


def _mitigation(draw: st.DrawFn) -> dict[str, Any]:
    return {
        "summary": draw(filled_texts),
        "steps": draw(_steps),
        "stop_conditions": [draw(filled_texts)],
        "escalation": draw(filled_texts),
    }


def _objective(draw: st.DrawFn) -> dict[str, Any]:
    pairs = draw(
        st.lists(
            st.sampled_from(CHEAP_PAIRS),
            min_size=1,
            max_size=2,
            unique_by=lambda p: (p["long"], p["short"], p["severity"]),
        )
    )
    return {
        "target": draw(st.sampled_from(["99%", "99.9%", "95%", 99.5])),
        "period": draw(st.sampled_from(["7d", "28d", "30d", "1d"])),
        "burn_alerts": [dict(pair) for pair in pairs],
    }


def _sli(kind: str) -> dict[str, Any]:
    """A valid SLI of ``kind`` on the slice label ``cluster``."""
    if kind == "ratio":
        return {
            "ratio": {"bad": 'coredns_dns_responses_total{rcode="SERVFAIL"}', "total": "coredns_dns_responses_total"}
        }
    if kind == "ratio-good":
        return {
            "ratio": {
                "good": "node_network_receive_packets_total",
                "total": ["node_network_receive_packets_total", "node_network_receive_errs_total"],
            }
        }
    if kind == "latency":
        return {
            "latency": {
                "histogram": "apiserver_request_sli_duration_seconds",
                "selector": '{verb=~"LIST|GET"}',
                "threshold": 1,
                "errors": 'apiserver_request_total{verb=~"LIST|GET",code=~"5.."}',
            }
        }
    if kind == "state":
        return {"state": {"expr": 'kube_node_status_condition{condition="Ready",status="true"}'}}
    if kind == "gauge":
        return {"gauge": {"expr": "sum by (cluster) (apiserver_longrunning_requests)"}}
    return {"quantile": {"histogram": "etcd_disk_wal_fsync_duration_seconds", "quantile": 0.99}}


KINDS = ["ratio", "ratio-good", "latency", "state", "gauge", "quantile"]
EVENT_KINDS = {"ratio", "ratio-good", "latency", "state"}


@dataclass
class SpecDraft:
    """One SLO spec being drawn, with the kind of its SLI and the shapes applied to it."""

    kind: str
    data: dict[str, Any]
    shapes: list[str] = field(default_factory=list)
    scenario_forms: list[tuple[str, str]] = field(default_factory=list)
    # The scrape profile stack the project gets for a spec naming a slice.component (None: no profile).
    scrape_stack: str | None = None

    @property
    def sli(self) -> dict[str, Any]:
        inner: dict[str, Any] = next(iter(self.data["sli"].values()))
        return inner

    def become(self, kind: str) -> None:
        """Switch to a valid SLI of ``kind``; ranges drawn for another kind of value go."""
        if (kind in EVENT_KINDS) != (self.kind in EVENT_KINDS):
            self.data.pop("normal_range", None)
            self.data.pop("critical_range", None)
        if self.kind == "staleness":
            self.data.pop("unit", None)  # seconds, which only a staleness SLI must have
        self.kind = kind
        self.data["sli"] = _sli(kind)
        if kind in EVENT_KINDS:
            self.data.setdefault("objective", {"target": "99%", "period": "7d"})
        else:
            self.data.pop("objective", None)
            self.data.setdefault("normal_range", {"max": 0.5 if kind == "quantile" else 100})

    def burn_pairs(self) -> list[dict[str, Any]]:
        """The spec's burn pairs (an objective with one cheap pair is added when it has none; a gauge or
        quantile spec becomes a ratio spec, since only event SLIs have a budget)."""
        if self.kind not in EVENT_KINDS:
            self.become("ratio")
        objective = self.data.setdefault("objective", {"target": "99%", "period": "7d"})
        if not isinstance(objective.get("burn_alerts"), list) or not objective["burn_alerts"]:
            objective["burn_alerts"] = [dict(CHEAP_PAIRS[0])]
        pairs: list[dict[str, Any]] = objective["burn_alerts"]
        return pairs

    def normal(self) -> dict[str, Any]:
        band: dict[str, Any] = self.data.setdefault("normal_range", {})
        return band


def base_spec(draw: st.DrawFn, name: str, kind: str) -> SpecDraft:
    """A valid spec of ``kind`` named ``name``."""
    data: dict[str, Any] = {
        "apiVersion": "slo-compiler/v1",
        "kind": "SLO",
        "name": name,
        "family": draw(st.sampled_from(["scheduling-api-latency", "watch-list-volume", "node-network-errors"])),
        "owner": draw(st.sampled_from(TEAMS)),
        "description": draw(filled_texts),
        "slice": {"by": ["cluster"], "selector": '{job="' + name + '"}'},
        "sli": _sli(kind),
    }
    if kind in EVENT_KINDS:
        data["objective"] = _objective(draw)
    if kind == "gauge":
        data["normal_range"] = {"max": draw(st.sampled_from([100, 5, 0.5, 1e6]))}
    if kind == "quantile":
        data["normal_range"] = {"max": draw(st.sampled_from([0.5, 0.1, 1]))}
    data["persistence"] = {"for": draw(st.sampled_from(["1m", "5m", "10m"]))}
    data["mitigation"] = _mitigation(draw)
    return SpecDraft(kind, data)


# -- shapes: one careless or hostile edit of a spec -------------------------------------------------------------

Shape = Callable[[st.DrawFn, SpecDraft], None]


def sometimes(draw: st.DrawFn, one_in: int) -> bool:
    """True about once in ``one_in`` draws. Not at either end of the range: hypothesis draws the ends (and
    the first of sampled_from) more often than the rest, so the benign choice sits there."""
    return draw(st.integers(0, one_in - 1)) == one_in // 2


def pick(draw: st.DrawFn, valid: list[Any], hostile: list[Any]) -> Any:
    """A valid value two times in three, a hostile one otherwise: each shape then reaches the engines too,
    even next to another shape that the compiler refuses half the time."""
    return draw(st.sampled_from(valid if not sometimes(draw, 3) else hostile))


def burn_factor_extreme(draw: st.DrawFn, spec: SpecDraft) -> None:
    pair = draw(st.sampled_from(spec.burn_pairs()))
    pair.pop("budget_share", None)
    pair["factor"] = pick(draw, [0.01, 1, 14.4, 2.5, Raw("!!float 3")], [*EXTREME_NUMBERS, 0.009, 1000])


def budget_share_extreme(draw: st.DrawFn, spec: SpecDraft) -> None:
    pair = draw(st.sampled_from(spec.burn_pairs()))
    pair.pop("factor", None)
    pair["budget_share"] = pick(draw, ["2%", 0.02, "0.5%", "10%"], [*EXTREME_NUMBERS, "100%", "150%", "0%"])


def period_odd(draw: st.DrawFn, spec: SpecDraft) -> None:
    spec.burn_pairs()
    spec.data["objective"]["period"] = pick(draw, ["1d", "1w", "2d", "28d", "30d"], ZERO_AND_ODD_DURATIONS)
    if sometimes(draw, 4):  # the default policy (its tests are the costly ones, so it is seldom valid)
        del spec.data["objective"]["burn_alerts"]
        spec.data["objective"]["period"] = draw(st.sampled_from(["0s", "0d", "1ms", "1h", "12h", "1d"]))


def burn_window_odd(draw: st.DrawFn, spec: SpecDraft) -> None:
    pair = draw(st.sampled_from(spec.burn_pairs()))
    side = draw(st.sampled_from(["short", "long"]))
    valid = ["5m", "15m"] if side == "short" else ["1h", "45m", "3h"]
    pair[side] = pick(draw, valid, [*ZERO_AND_ODD_DURATIONS, pair["long" if side == "short" else "short"]])


def burn_keep_firing_for(draw: st.DrawFn, spec: SpecDraft) -> None:
    pair = draw(st.sampled_from(spec.burn_pairs()))
    pair["keep_firing_for"] = pick(draw, ["1m", "10m", "1h", "0s"], ["2d", "1ms", "25h", Raw("!!int 5")])


def burn_for_odd(draw: st.DrawFn, spec: SpecDraft) -> None:
    pair = draw(st.sampled_from(spec.burn_pairs()))
    pair["for"] = pick(draw, ["0s", "1m", "29m", "30m"], ["1ms", "90s", "59m", "2h", "25h"])


def burn_pairs_repeated(draw: st.DrawFn, spec: SpecDraft) -> None:
    pairs = spec.burn_pairs()
    twin = dict(pairs[0])
    if draw(st.booleans()):  # the same windows, another severity and factor: legal
        twin["severity"] = "ticket" if twin["severity"] != "ticket" else "info"
        twin["factor"] = 2
        twin.pop("budget_share", None)
    pairs.append(twin)


def no_data_odd(draw: st.DrawFn, spec: SpecDraft) -> None:
    spec.data["no_data"] = pick(
        draw,
        [{"for": "5m", "severity": "page"}, {"enabled": False}, {"severity": "info"}, {}, {"for": "1h"}, {"for": "1m"}],
        [{"for": "0s"}, {"for": "1ms"}, {"for": "2d"}, {"enabled": False, "for": "5m"}, {"for": "30s"}],
    )


GAUGE_EXPRS = [
    "sum by (cluster) (x offset 1h)",
    "sum by (cluster) (x offset 5m)",
    "sum by (cluster) (rate(x_total[2m]))",
    "sum by (cluster) (rate(x_total[5m]))",
    "sum by (cluster) (irate(x_total[5m]))",
    "sum by (cluster) (increase(x_total[5m]))",
    "max_over_time(max_over_time(sum by (cluster) (x)[5m:1m])[5m:1m])",
    "max_over_time(sum by (cluster) (x)[5m:])",
    "sum by (cluster) (x) / sum by (cluster) (y)",
    "sum by (cluster) (x) * 5e-324",
    "-sum by (cluster) (x)",
    'sum by (cluster) (x{a=~".*"})',
    "sum by (cluster) (x) > 5",
    "avg by (cluster) (x) + 1e308",
]
HOSTILE_GAUGE_EXPRS = [
    "sum by (cluster) (x offset 1ms)",
    "sum by (cluster) (x offset -5m)",
    "sum by (cluster) (x @ 1000)",
    "sum by (cluster) (x @ start())",
    "sum by (cluster) (rate(x_total[1s]))",
    "sum by (cluster) (increase(x_total[10m]))",
    "max_over_time(sum by (cluster) (x)[1h:])",
    "sum(x)",
    'sum by (cluster) ({"x.y"="1", __name__="x"})',
    'sum by ("cluster") (x)',
    'sum by (cluster) (x{le="1"})',
    "count by (cluster) (x == 1e308)",
    "vector(1)",
    "sum by (cluster) (x[5m])",
]


def gauge_expr(draw: st.DrawFn, spec: SpecDraft) -> None:
    spec.become("gauge")
    spec.sli["expr"] = pick(draw, GAUGE_EXPRS, HOSTILE_GAUGE_EXPRS)
    spec.data["normal_range"] = draw(st.sampled_from([{"max": 100}, {"min": 1}, {"min": 1, "max": 100}, {"max": 0}]))


def band_odd(draw: st.DrawFn, spec: SpecDraft) -> None:
    band = spec.normal()
    side = draw(st.sampled_from(["min", "max"]))
    valid = [0.01, 0.5, -0.0, 5e-324] if spec.kind in EVENT_KINDS else [0.5, 1e6, 0, -0.0, 1e-300]
    band[side] = pick(draw, valid, [*EXTREME_NUMBERS, 1e308, 2])
    if side == "min" and is_number(band.get("max")) and is_number(band["min"]) and band["max"] <= band["min"]:
        del band["max"]


def relative_odd(draw: st.DrawFn, spec: SpecDraft) -> None:
    """A relative band, valid but for at most one field."""
    relative: dict[str, Any] = {"offset": draw(st.sampled_from(["10m", "1h", "30m"]))}
    if spec.kind not in EVENT_KINDS and spec.kind != "quantile":
        spec.data["persistence"]["for"] = draw(st.sampled_from(["1m", "5m"]))
    sides = draw(st.sampled_from([["max_factor"], ["min_factor"], ["max_factor", "min_factor"]]))
    for side in sides:
        relative[side] = draw(st.sampled_from([1.5, 3, 2] if side == "max_factor" else [0.5, 0.1, 0.8]))
    if draw(st.booleans()):
        relative["floor"] = draw(st.sampled_from([0, 10, 0.01] if spec.kind in EVENT_KINDS else [0, 10, 1000]))
    if draw(st.booleans()):
        field_name, value = draw(
            st.sampled_from(
                [
                    ("offset", "1ms"),
                    ("offset", "90s"),
                    ("offset", "0s"),
                    ("offset", "8d"),
                    ("offset", "1m"),
                    (sides[0], 0.5),
                    (sides[0], 1),
                    (sides[0], 2),
                    (sides[0], Raw(".nan")),
                    (sides[0], -0.0),
                    (sides[0], 1e308),
                    (sides[0], 5e-324),
                    ("floor", Raw(".inf")),
                    ("floor", -1),
                    ("floor", 1e308),
                ]
            )
        )
        relative[field_name] = value
    spec.normal()["relative"] = relative


def critical_odd(draw: st.DrawFn, spec: SpecDraft) -> None:
    band = spec.normal()
    event = spec.kind in EVENT_KINDS | {"quantile"}
    if not is_number(band.get("max")):
        band["max"] = 0.5 if event else 100
    wider = [0.9, 1.0, 0.75] if event else [200, 1e308, band["max"] * 2 + 1]
    spec.data["critical_range"] = {
        "max": pick(draw, wider, [band["max"], band["max"] / 2, Raw(".inf"), Raw(".nan")]),
        **draw(st.sampled_from([{}, {"for": "1m"}, {"severity": "ticket"}, {"keep_firing_for": "5m"}])),
    }


def persistence_odd(draw: st.DrawFn, spec: SpecDraft) -> None:
    persistence = spec.data["persistence"]
    persistence["for"] = pick(draw, ["0s", "1m", "30s", "1h", Raw("!!str 5m")], ["1ms", "25h", 5, "1y", ""])
    if draw(st.booleans()):
        persistence["keep_firing_for"] = pick(draw, ["0s", "5m", "30m"], ["2d", "1ms", "-1m"])


def scenario_shape(draw: st.DrawFn, spec: SpecDraft) -> None:
    """A scenario whose expectation holds by construction (written once every shape is applied, from the
    final spec: see ``finish_scenarios``), or one the compiler must refuse."""
    form = draw(st.sampled_from(["calm", "gap", "incident", "calm", "refused"]))
    if form != "refused":
        spec.scenario_forms.append((form, draw(st.sampled_from(["30m", "2h", "30m", "6h"]))))
        return
    segment: dict[str, Any] = draw(
        st.sampled_from([{"for": "0s"}, {"for": "2d"}, {"for": "365d"}, {"for": "90s"}, {"for": "1ms"}])
    )
    segment["error_ratio" if spec.kind in EVENT_KINDS else "value"] = 0
    expect = draw(
        st.sampled_from(
            [{"alert": "Nonexistent", "fires_by": "1m"}, {"nothing_fires_until": "0s"}, {"nothing_fires_until": "3d"}]
        )
    )
    name = draw(st.sampled_from(["refused", "Bad Name", "", "x" * 64]))
    spec.data.setdefault("scenarios", []).append({"name": name, "shape": [segment], "expect": [expect]})


def minutes(value: Any) -> int | None:
    """A duration in whole minutes, None unless it is a plain string of s/m/h/d parts."""
    if isinstance(value, Raw) or not isinstance(value, str):
        return None
    parts = re.fullmatch(r"((\d+)d)?((\d+)h)?((\d+)m)?", value)
    if not value or parts is None:
        return None
    return int(parts[2] or 0) * 1440 + int(parts[4] or 0) * 60 + int(parts[6] or 0)


def delay_minutes(spec: SpecDraft) -> int:
    """The minutes an ``offset`` in the SLI's expression delays what the rules see."""
    expr = spec.sli.get("expr", "")
    found = re.findall(r"offset (\d+)([mh])", expr) if isinstance(expr, str) else []
    return sum(int(amount) * (60 if unit == "h" else 1) for amount, unit in found)


def warms_up(spec: SpecDraft) -> bool:
    """Whether the SLI's expression reads ranges or offsets, whose first minutes of input are partial."""
    expr = spec.sli.get("expr", "")
    return isinstance(expr, str) and (delay_minutes(spec) > 0 or "[" in expr)


def is_number(value: Any) -> bool:
    """A finite plain int or float (not a bool, not a tagged or special YAML scalar)."""
    return type(value) in (int, float) and math.isfinite(value)


def calm_value(spec: SpecDraft) -> float | None:
    """A value inside every band of a gauge or quantile spec, None when the bands are not plain numbers."""
    band = spec.data.get("normal_range", {})
    low, high = band.get("min"), band.get("max")
    numbers = [v for v in (low, high) if v is not None]
    if not all(is_number(v) for v in numbers):
        return None
    if low is not None and high is not None:
        return float(low + high) / 2
    if high is not None:
        return float(high) / 2 if high > 0 else float(high) - 1
    return float(low) * 2 + 1 if low is not None else 1.0


def incident(spec: SpecDraft, level: str) -> tuple[list[dict[str, Any]], dict[str, Any]] | None:
    """A breach long enough for an alert to fire: every burn pair's long window and ``for`` filled with
    errors, or a gauge twice its upper bound past its persistence."""
    if spec.kind in EVENT_KINDS:
        pairs = spec.data.get("objective", {}).get("burn_alerts")
        if not isinstance(pairs, list):
            return None
        waits = [(minutes(p.get("long")), minutes(p.get("for", "0m"))) for p in pairs]
        if any(long is None or wait is None for long, wait in waits):
            return None
        length = max(long + wait for long, wait in waits if long is not None and wait is not None) + 10
        length += delay_minutes(spec)
        return [{"for": f"{length}m", "error_ratio": 1}], {"alert": "ErrorBudgetBurn", "fires_by": f"{length + 10}m"}
    high, wait = spec.data.get("normal_range", {}).get("max"), minutes(spec.data["persistence"].get("for"))
    if not is_number(high) or high <= 0 or wait is None:
        return None
    length = wait + delay_minutes(spec) + 15
    return [{"for": f"{length}m", level: high * 2}], {"alert": "AboveNormalRange", "fires_by": f"{length + 10}m"}


def finish_scenarios(spec: SpecDraft) -> None:
    """The scenarios of the forms drawn, from the spec as it ended up; skipped where it is no plain number."""
    level = "error_ratio" if spec.kind in EVENT_KINDS else "value"
    calm = calm_value(spec)
    if spec.kind in EVENT_KINDS:  # no errors, unless a lower bound on the error ratio makes that a breach
        calm = None if "min" in spec.data.get("normal_range", {}) else 0.0
    for index, (form, length) in enumerate(spec.scenario_forms):
        if calm is None:
            return
        shape: list[dict[str, Any]] = [{"for": "10m", level: calm}]
        if form == "calm" and warms_up(spec):
            continue  # inputs start at minute 0: no data (an offset) or partial ranges at first may alert
        if form == "calm":
            shape, expect = [{"for": length, level: calm}], {"nothing_fires_until": length}
        elif form == "gap":
            wait = minutes(spec.data.get("no_data", {}).get("for", "15m"))
            if wait is None:
                continue
            # The last sample counts for 5m (Prometheus's lookback), an offset delays the gap, and an
            # evaluation interval of up to 2m rounds the wait up: the gap outlasts them all.
            gap = wait + delay_minutes(spec) + 25
            shape.append({"for": f"{gap}m", "gap": True})
            expect = {"alert": "NoData", "fires_by": f"{10 + gap}m"}
        else:
            breach = incident(spec, level)
            if breach is None:
                continue
            shape, expect = shape + breach[0], breach[1]
        spec.data.setdefault("scenarios", []).append({"name": f"{form}-{index}", "shape": shape, "expect": [expect]})


STATE_EXPRS = [
    'kube_node_status_condition{condition="Ready",status="true"}',
    'min by (cluster) (kube_node_status_condition{condition="Ready",status="true"})',
    'max by (cluster, node) (kube_node_status_condition{condition="Ready",status="true"})',
    "up offset 10m",
    'up{instance=~".+"}',
    "up == bool 1",
]
HOSTILE_STATE_EXPRS = ["vector(1)", "1 - up", "up == 1", "up @ 100", "up offset 1ms", "rate(up[1s])", "sum(up)"]


def state_expr(draw: st.DrawFn, spec: SpecDraft) -> None:
    spec.become("state")
    spec.burn_pairs()
    spec.sli["expr"] = pick(draw, STATE_EXPRS, HOSTILE_STATE_EXPRS)


THRESHOLDS: list[Any] = [
    5,
    0.05,
    60,
    [{"when": '{scope=~"resource|"}', "le": 1}, {"when": '{scope!~"resource|"}', "le": 30}],
    [{"when": '{scope="namespace"}', "le": 1}, {"when": '{scope!="namespace"}', "le": 0.4}],
]
HOSTILE_THRESHOLDS: list[Any] = [
    Raw(".inf"),
    5.12,
    1e308,
    [{"when": '{scope=~"resource|"}', "le": 1}, {"when": '{scope="namespace"}', "le": 30}],
    [{"when": '{scope=~"resource|namespace|"}', "le": 1}, {"when": '{scope!~"resource|"}', "le": 30}],
    [{"le": 1}],
    [{"when": '{le="1"}', "le": 1}],
    [{"when": '{scope="x"}', "le": Raw(".nan")}, {"when": '{scope!="x"}', "le": 1}],
]


def latency_threshold(draw: st.DrawFn, spec: SpecDraft) -> None:
    spec.become("latency")
    spec.burn_pairs()
    spec.data["slice"]["by"] = ["cluster", "scope"]
    spec.sli["threshold"] = pick(draw, THRESHOLDS, HOSTILE_THRESHOLDS)
    if sometimes(draw, 3):
        valid = [[0.05, 0.4, 1, 5, 30, 60]]
        spec.sli["buckets"] = pick(draw, valid, [[0.1, 1, Raw(".inf")], [1, 0.1], [5e-324, 1e308], []])


RATIOS = [
    {"bad": 'x_total{code=~"5.."}', "total": "x_total"},
    {"good": 'x_total{code=~"2.."}', "total": 'x_total{code!="500"}'},
    {"bad": 'x_total{code="500"}', "total": ["x_total", "y_total"]},
    {"bad": ['x_total{code="500"}', 'x_total{code="503"}'], "total": "x_total"},
]
HOSTILE_RATIOS = [
    {"bad": 'x_total{code="500"}', "total": 'x_total{code="200"}'},
    {"bad": "y_total", "total": "x_total"},
    {"bad": ["x_total", "x_total"], "total": "x_total"},
    {"bad": 'x_total{le="1"}', "total": "x_total"},
    {"bad": "rate(x_total[5m])", "total": "x_total"},
    {"good": "x_total", "bad": "x_total", "total": "x_total"},
]


def ratio_subsets(draw: st.DrawFn, spec: SpecDraft) -> None:
    spec.become("ratio")
    spec.burn_pairs()
    spec.data["sli"] = {"ratio": dict(pick(draw, RATIOS, HOSTILE_RATIOS))}


def selector_on_le(draw: st.DrawFn, spec: SpecDraft) -> None:
    """Matchers on ``le``, quoted (Prometheus 3) label names, ``__name__``, an empty selector."""
    matcher = pick(
        draw,
        ['{"job"="x"}', "{}", '{job=~".+"}'],
        ['{le="1"}', '{le=~".+"}', '{"le"="1"}', '{"a.b"="1"}', '{__name__="x"}'],
    )
    if draw(st.booleans()) and spec.kind in ("latency", "quantile"):
        spec.sli["selector"] = matcher
    else:
        spec.data["slice"]["selector"] = matcher


def slice_labels(draw: st.DrawFn, spec: SpecDraft) -> None:
    """Slice labels valid in Prometheus 2 or not, reserved by the compiler or not, with their cardinality."""
    if draw(st.booleans()):
        extra = draw(st.sampled_from(["zone", "Cluster", "_", "datasource", "a1", "x" * 100]))
        spec.data["slice"]["by"] = by = ["cluster", extra]
        if spec.kind == "gauge":
            spec.sli["expr"] = f"sum by ({', '.join(by)}) (apiserver_longrunning_requests)"
    else:
        spec.data["slice"]["by"] = draw(st.lists(st.sampled_from(LABEL_NAMES), max_size=3, unique=True))
    if sometimes(draw, 3):
        label = draw(st.sampled_from([*spec.data["slice"]["by"], *LABEL_NAMES[:4]]))
        spec.data["slice"]["cardinality"] = {label: draw(st.sampled_from([1, 5, 10**30, 0, 2**63]))}


def selector_values(draw: st.DrawFn, spec: SpecDraft) -> None:
    value = json.dumps(draw(label_values), ensure_ascii=False)
    op = draw(st.sampled_from(["=", "!=", "=~", "!~"]))
    spec.data["slice"]["selector"] = "{job" + op + value + "}"


def yaml_tags(draw: st.DrawFn, spec: SpecDraft) -> None:
    where, value = draw(
        st.sampled_from(
            [
                ("name", Raw("!!str 123")),
                ("owner", Raw("!!str platform-nodes")),
                ("description", Raw("!!binary aGVsbG8=")),
                ("description", Raw("!custom x")),
                ("family", Raw("!!int 5")),
                ("description", Raw("!!null ~")),
                ("series_budget", Raw("!!int 100")),
                ("series_budget", Raw("!!float 1e3")),
                ("series_budget", 10**30),
                ("series_budget", Raw("!!str 10")),
            ]
        )
    )
    spec.data[where] = value


JOINS: list[Any] = [
    {"metric": 'kube_node_labels{job="ksm"}', "on": ["cluster", "node"], "labels": ["label_pool"]},
    [
        {"metric": 'kubelet_node_name{job="kubelet"}', "on": ["cluster", "instance"], "labels": ["node"]},
        {"metric": 'kube_node_labels{job="ksm"}', "on": ["cluster", "node"], "labels": ["label_pool"]},
    ],
]
HOSTILE_JOINS: list[Any] = [
    {"metric": 'kube_node_labels{job="ksm"}', "on": ["cluster", "node"], "labels": ["le"]},
    {"metric": "rate(kube_node_labels[5m])", "on": ["cluster", "node"], "labels": ["label_pool"]},
    {"metric": 'kube_node_labels{job="ksm"}', "on": [], "labels": ["label_pool"]},
    {"metric": 'kube_node_labels{job="ksm"}', "on": ["cluster", "node"], "labels": ["cluster"]},
    [],
]


def slice_join(draw: st.DrawFn, spec: SpecDraft) -> None:
    """Slice labels attached from info metrics (one join or a chain of them) on a state SLI per node."""
    spec.become("state")
    spec.burn_pairs()
    spec.data["slice"]["by"] = ["cluster", "label_pool"]
    spec.data["slice"]["join"] = pick(draw, JOINS, HOSTILE_JOINS)


def automation(draw: st.DrawFn, spec: SpecDraft) -> None:
    """A mitigation run by a project automation (its alerts also go to the automation's webhook)."""
    spec.data["mitigation"]["automation"] = pick(draw, ["fixer"], ["nonexistent", "", "Fixer", "{{ x }}"])
    if sometimes(draw, 3):
        spec.data["mode"] = "shadow"


HUMANIZED = [1e300, 1.5e-300, 123456789, 0.000123, 1e21, 999.9995, 1024, -5, 86399.5, 0.5]


def unit_and_value(draw: st.DrawFn, spec: SpecDraft) -> None:
    """A gauge's unit and bound at the edges of Prometheus's humanize functions (the alert text shows the
    value in the unit, and the tests expect it rendered exactly as Prometheus does)."""
    if spec.kind != "gauge":
        spec.become("gauge")
    spec.data["unit"] = draw(st.sampled_from(["ratio", "seconds", "bytes", "bytes_per_second", "per_second", "count"]))
    spec.sli["aggregate"] = draw(st.sampled_from(["sum", "max", "min", "avg"]))
    side = draw(st.sampled_from(["max", "min"]))
    spec.data["normal_range"] = {side: draw(st.sampled_from(HUMANIZED))}


STALENESS_TIMESTAMPS = ["kubelet_pleg_last_seen_seconds", 'kube_job_status_completion_time{job_name!=""}']
HOSTILE_STALENESS_TIMESTAMPS = [
    "time() - kubelet_pleg_last_seen_seconds",
    "rate(kubelet_pleg_last_seen_seconds[5m])",
    "max(kubelet_pleg_last_seen_seconds)",
    "",
]


def staleness_sli(draw: st.DrawFn, spec: SpecDraft) -> None:
    """Seconds since a timestamp gauge advanced, valid but for at most one field: a free-form timestamp
    expression, an aggregate it does not take, another unit, or a band it cannot have (no positive max,
    a min, a relative band) are refused."""
    spec.become("gauge")
    spec.kind = "staleness"
    hostile = draw(st.sampled_from(["timestamp", "aggregate", "unit", "band"])) if sometimes(draw, 3) else None
    timestamps = HOSTILE_STALENESS_TIMESTAMPS if hostile == "timestamp" else STALENESS_TIMESTAMPS
    spec.data["sli"] = {"staleness": {"timestamp": draw(st.sampled_from(timestamps))}}
    if hostile == "aggregate" or draw(st.booleans()):
        aggregates = ["sum", "count"] if hostile == "aggregate" else ["max", "min", "avg"]
        spec.sli["aggregate"] = draw(st.sampled_from(aggregates))
    spec.data["unit"] = draw(st.sampled_from(["bytes", "ratio"])) if hostile == "unit" else "seconds"
    valid: list[Any] = [{"max": 180}, {"max": 60}, {"max": 600, "for": "2m"}]
    refused: list[Any] = [
        {"max": 0},
        {"max": -5},
        {"min": 10, "max": 180},
        {"relative": {"offset": "1h", "max_factor": 2}},
    ]
    spec.data["normal_range"] = dict(draw(st.sampled_from(refused if hostile == "band" else valid)))


COMPONENTS = ["apiserver", "coredns", "kubelet", "kube-state-metrics"]
HOSTILE_COMPONENTS = ["nonexistent", "Apiserver", ""]


def slice_component(draw: st.DrawFn, spec: SpecDraft) -> None:
    """The slice names a component whose job matchers come from the project's scrape profile; hostile: an
    unknown component, a job matcher next to it, or no scrape profile at all."""
    spec.data["slice"]["component"] = pick(draw, COMPONENTS, HOSTILE_COMPONENTS)
    selector = pick(draw, [None, '{instance=~".+"}'], ['{job="x"}'])  # the base's job matcher goes
    if selector is None:
        spec.data["slice"].pop("selector", None)
    else:
        spec.data["slice"]["selector"] = selector
    spec.scrape_stack = pick(draw, ["kube-prometheus-stack", "kube-prometheus"], [None, "nonexistent"])


ABSENT_AS_ZERO_WHILE = [
    "up == 1",
    "up",
    'up{instance=~".+"} > 0',
    "up offset 5m",
    "rate(process_cpu_seconds_total[5m]) > 0",
]
HOSTILE_ABSENT_AS_ZERO_WHILE = ["sum(up)", "vector(1)", "", "rate(up[1s])", "changes(up[1m])", "1 - up"]


def absent_as_zero(draw: st.DrawFn, spec: SpecDraft) -> None:
    """A "must be zero" gauge over counters created on their first event, read as 0 while up says the
    component is scraped; hostile: a presence expression that drops the slice or reads no series, or a
    gauge that reads no counter."""
    spec.become("gauge")
    expr = pick(draw, ["sum by (cluster) (rate(x_total[5m]))"], ["sum by (cluster) (x)"])
    spec.sli["expr"] = expr
    spec.sli["absent_as_zero_while"] = pick(draw, ABSENT_AS_ZERO_WHILE, HOSTILE_ABSENT_AS_ZERO_WHILE)
    spec.data["normal_range"] = {"max": draw(st.sampled_from([0, 0.5, 10]))}


def name_odd(draw: st.DrawFn, spec: SpecDraft) -> None:
    field_name, value = draw(
        st.sampled_from(
            [
                ("name", "a" * 64),
                ("name", "../x"),
                ("name", "Upper"),
                ("name", "-x"),
                ("alert_name", "X" + "a" * 90),
                ("alert_name", "lower"),
                ("alert_name", "Ok"),
                ("owner", "nobody"),
                ("owner", ""),
                ("mode", "shadow"),
                ("unit", "bytes"),
                ("k8s_versions", "1.28-1.31"),
            ]
        )
    )
    spec.data[field_name] = value


SHAPES: dict[str, Shape] = {
    "burn factor extreme": burn_factor_extreme,
    "budget_share extreme": budget_share_extreme,
    "period zero or odd": period_odd,
    "burn window zero or odd": burn_window_odd,
    "keep_firing_for on a burn pair": burn_keep_firing_for,
    "burn for odd": burn_for_odd,
    "burn pairs repeated": burn_pairs_repeated,
    "no_data odd": no_data_odd,
    "gauge expression": gauge_expr,
    "band bound extreme": band_odd,
    "relative band odd": relative_odd,
    "critical range": critical_odd,
    "persistence odd": persistence_odd,
    "scenario": scenario_shape,
    "state expression": state_expr,
    "latency threshold": latency_threshold,
    "ratio subsets": ratio_subsets,
    "selector on le or quoted": selector_on_le,
    "slice label names": slice_labels,
    "selector label values": selector_values,
    "yaml tags": yaml_tags,
    "names": name_odd,
    "slice join": slice_join,
    "automation": automation,
    "unit and humanized value": unit_and_value,
    "staleness": staleness_sli,
    "slice component": slice_component,
    "absent_as_zero_while": absent_as_zero,
}


def apply_shapes(draw: st.DrawFn, spec: SpecDraft, primary: str | None) -> None:
    """The tree's primary shape when it is a spec's, then up to two more drawn at random."""
    count = draw(st.sampled_from([0, 0, 0, 1, 1, 2]))
    extra = draw(st.lists(st.sampled_from(sorted(SHAPES)), min_size=count, max_size=count))
    chosen = [primary, *extra] if primary is not None and primary in SHAPES else extra
    for shape_name in chosen:
        SHAPES[shape_name](draw, spec)
        spec.shapes.append(shape_name)
    finish_scenarios(spec)


# -- the tree: owners, project and cross-spec shapes ---------------------------------------------------------------


def owners(draw: st.DrawFn, shapes: list[str], smtp: bool, primary: str) -> dict[str, Any]:
    teams: list[dict[str, Any]] = [
        {
            "name": team,
            "contact": f"#{team}",
            "receivers": {
                "page": [{"pagerduty": {"routing_key_file": "/etc/am/pd"}}],
                "ticket": [{"slack": {"api_url_file": "/etc/am/slack", "channel": f"#{team}"}}],
            },
        }
        for team in TEAMS
    ]
    receivers = teams[0]["receivers"]
    if sometimes(draw, 20) or primary == "owners slack channel":
        shapes.append("owners slack channel")
        channels = ["#{{ .GroupLabels.slo }}", "#ok-channel", "@user", "#}}", "#ünï", "#a{b}"]
        receivers["ticket"][0]["slack"]["channel"] = draw(st.sampled_from(channels))
    if sometimes(draw, 20) or primary == "owners email":
        shapes.append("owners email")
        address = draw(st.sampled_from(["a@b.c", "a@b.c", "{{x}}@b.c", "a@{{b}}"]))
        receivers["info"] = [{"email": {"to": address}}] if smtp else [{"webhook": {"url": "http://127.0.0.1:9/i"}}]
    if sometimes(draw, 20) or primary == "owners shadow and timing":
        shapes.append("owners shadow and timing")
        receivers["shadow"] = [{"webhook": {"url": draw(st.sampled_from(["http://127.0.0.1:9/s", "http://x/{{y}}"]))}}]
        teams[1]["timing"] = {"page": {"group_wait": draw(st.sampled_from(["0s", "10s", "1ms", "1d", "30s"]))}}
    return {"apiVersion": "slo-compiler/v1", "kind": "Owners", "teams": teams}


def project(draw: st.DrawFn, shapes: list[str], primary: str) -> dict[str, Any]:
    data: dict[str, Any] = {
        "apiVersion": "slo-compiler/v1",
        "kind": "Project",
        "runbook_base_url": "https://runbooks.example.com/slo",
        "evaluation_interval": "1m",
        "automations": [{"name": "fixer", "url": "http://127.0.0.1:9/fix"}],
    }
    if sometimes(draw, 20) or primary == "project runbook_base_url":
        shapes.append("project runbook_base_url")
        valid = ["https://runbooks.example.com/ünï", "https://x/%7B%7B", "http://127.0.0.1:9/a"]
        data["runbook_base_url"] = pick(draw, valid, ["https://x/{{ .Labels.slo }}", "https://x/", "x"])
    if sometimes(draw, 20) or primary == "project evaluation_interval":
        shapes.append("project evaluation_interval")
        data["evaluation_interval"] = pick(draw, ["30s", "2m", "1m"], ["0s", "1ms", "1d"])
    if sometimes(draw, 20) or primary == "project alertmanager":
        shapes.append("project alertmanager")
        data["alertmanager"] = draw(
            st.sampled_from(
                [
                    {"resolve_timeout": "0s"},
                    {"resolve_timeout": "1m"},
                    {"smtp": {"smarthost": "smtp:25", "from": draw(st.sampled_from(["a@b.c", "{{.x}}@b.c"]))}},
                    {"timing": {"page": {"repeat_interval": "1ms"}}},
                    {"timing": {"ticket": {"group_wait": "0s", "group_interval": "1m"}}},
                ]
            )
        )
    if sometimes(draw, 20) or primary == "project cluster profile":
        shapes.append("project cluster profile")
        profiles = [{"nodes": 10**30}, {"label_cardinality": {"cluster": 2**63}}, {"clusters": 1}, {"zones": 1}]
        data["cluster_profile"] = draw(st.sampled_from(profiles))
    return data


CROSS_SPEC_CASES = [
    "valid",
    "cycle",
    "equal empty",
    "equal odd",
    "unknown",
    "any",
    "duplicate name",
    "ticket",
    "same alert_name",
]


def cross_spec(draw: st.DrawFn, case: str | None, specs: list[SpecDraft], shapes: list[str]) -> None:
    """Links between specs: explains (cycles, empty equal, unknown spec, ticket-only explainers), names."""
    if len(specs) < 2 or case is None:
        return
    first, second = specs[0], specs[1]
    shapes.append(f"cross-spec {case}")
    entry: dict[str, Any] = {"slo": second.data["name"], "equal": ["cluster"]}
    if case == "cycle":
        second.data["explains"] = [{"slo": first.data["name"], "equal": ["cluster"]}]
    elif case == "equal empty":
        entry["equal"] = []
    elif case == "equal odd":
        entry["equal"] = [draw(st.sampled_from(LABEL_NAMES))]
    elif case == "unknown":
        entry["slo"] = "nonexistent"
    elif case == "any":
        entry["severity"] = "any"
    elif case == "duplicate name":
        second.data["name"] = first.data["name"]
    elif case == "same alert_name":
        first.data["alert_name"] = second.data["alert_name"] = draw(st.sampled_from(["Same", "DnsErrors"]))
    elif case == "ticket":
        entry["severity"] = "ticket"
        if isinstance(first.data.get("objective"), dict):
            first.data["objective"]["burn_alerts"] = [dict(CHEAP_PAIRS[3])]
    first.data.setdefault("explains", []).append(entry)


@dataclass
class Tree:
    """Spec files (path under the spec directory -> text) and the shapes drawn into them."""

    files: dict[str, str]
    shapes: list[str]
    specs: int
    # Specs left as drawn from their base, in a tree whose project changes nothing their tests see: their
    # rules are checked, but their tests prove nothing that the same base under a shape does not.
    plain: frozenset[str] = frozenset()

    def describe(self) -> str:
        listing = "".join(f"--- {path}\n{text}" for path, text in sorted(self.files.items()))
        return f"shapes: {', '.join(self.shapes) or 'none'}\n{listing}"


TREE_SHAPES = (
    "owners slack channel",
    "owners email",
    "owners shadow and timing",
    "project runbook_base_url",
    "project evaluation_interval",
    "project alertmanager",
    "project cluster profile",
    *(f"cross-spec {case}" for case in CROSS_SPEC_CASES),
)
ALL_SHAPES = (*SHAPES, *TREE_SHAPES)
# Shapes no tree that holds them can compile with.
ALWAYS_REFUSED = frozenset(
    {
        "cross-spec cycle",
        "cross-spec equal empty",
        "cross-spec unknown",
        "cross-spec duplicate name",
        "cross-spec same alert_name",
    }
)
NAMES = ["dns-errors", "node-ready", "list-latency", "watchers", "etcd-fsync"]


@st.composite
def spec_trees(draw: st.DrawFn, primary: str) -> Tree:
    """A tree around ``primary`` (one of ALL_SHAPES), applied to its first spec, its owners or project, or
    the link between its first two specs, with up to two more shapes per spec and random links."""
    shapes: list[str] = []
    link = primary.removeprefix("cross-spec ") if primary.startswith("cross-spec ") else None
    count = 2 if link else draw(st.sampled_from([1, 1, 1, 2, 2, 3]))
    if count > 1 and link is None and sometimes(draw, 3):
        link = draw(st.sampled_from(CROSS_SPEC_CASES))
    specs = []
    for index, name in enumerate(draw(st.lists(st.sampled_from(NAMES), min_size=count, max_size=count, unique=True))):
        spec = base_spec(draw, name, draw(st.sampled_from(KINDS)))
        apply_shapes(draw, spec, primary if index == 0 else None)
        shapes.extend(f"{index}:{shape}" for shape in spec.shapes)
        specs.append(spec)
    cross_spec(draw, link, specs, shapes)
    settings = project(draw, shapes, primary)
    stacks = [spec.scrape_stack for spec in specs if spec.scrape_stack is not None]
    if stacks:
        settings["scrape_profile"] = {"stack": stacks[0]}
    smtp = "smtp" in settings.get("alertmanager", {})
    files = {"owners.yaml": to_yaml(owners(draw, shapes, smtp, primary)), "project.yaml": to_yaml(settings)}
    together = len(specs) > 1 and draw(st.booleans())
    for index, spec in enumerate(specs):
        path = "slos/together.yaml" if together else f"slos/spec-{index}.yaml"
        text = to_yaml(spec.data)
        files[path] = files[path] + "---\n" + text if path in files else text
    project_shaped = any(shape.startswith("project ") for shape in shapes)
    plain = frozenset() if project_shaped else frozenset(output_name(spec) for spec in specs if not spec.shapes)
    return Tree(files, shapes, len(specs), plain)


def output_name(spec: SpecDraft) -> str:
    """The name the spec's output files carry (``!!str 123`` is ``123``)."""
    name = spec.data["name"]
    return name.removeprefix("!!str ") if isinstance(name, Raw) else str(name)
