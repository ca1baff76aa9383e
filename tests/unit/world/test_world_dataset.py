"""A world data set packs its series lines into few ``input_series`` entries, and promtool reads the same text;
the cache holds equal samples once, with each series' notation."""

from __future__ import annotations

import dataclasses
import pickle

from tests.world.dataset import packed, with_shared_samples
from tests.world.timeline import notation, series


def _load_text(entries: list[dict[str, str]]) -> str:
    """promtool 2.42's ``seriesLoadingString``: ``"  {series} {values}\\n"`` per entry, after the load line."""
    return "load 30s\n" + "".join(f"  {entry['series']} {entry['values']}\n" for entry in entries)


def test_packed_entries_build_the_load_text_of_one_entry_per_series() -> None:
    inputs = [(f'up{{instance="node-{index}"}}', f"{index}+1x4 _ stale") for index in range(7)]
    one_each = [{"series": series, "values": values} for series, values in inputs]
    for per_entry in (1, 2, 3, 7, 500):
        entries = packed(inputs, per_entry)
        assert len(entries) == -(-len(inputs) // per_entry)
        assert _load_text(entries) == _load_text(one_each), per_entry


def test_no_series_packs_into_no_entry() -> None:
    assert packed([]) == []


def test_shared_samples_keep_every_series_and_its_notation_and_pickle_once() -> None:
    flat = [0.0] * 240
    data = [
        series("up", {"job": "a"}, [1.0] * 240),
        series("up", {"job": "b"}, [1.0] * 240),
        series("errors_total", {"job": "a"}, [*flat[:100], None, *flat[:139]]),
        series("errors_total", {"job": "b"}, flat),
        series("up", {"job": "c"}, [1.0, None, 1.0] * 80),
    ]
    shared = with_shared_samples(data)
    assert shared == data  # the same names, labels and samples, in the same order
    assert shared[0].samples is shared[1].samples and shared[2].samples is not shared[3].samples
    assert [item.text for item in shared] == [notation(item.samples) for item in data]
    assert shared[1].text == "1+0x239"
    back = pickle.loads(pickle.dumps(shared))
    assert back == data and back[0].samples is back[1].samples
    assert [item.__dict__.get("text") for item in back] == [notation(item.samples) for item in data]  # kept, not redone
    other = dataclasses.replace(back[1], samples=(2.0,) * 240)  # other samples: a notation of its own
    assert other.text == "2+0x239"
