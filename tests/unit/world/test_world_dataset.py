"""A world data set packs its series lines into few ``input_series`` entries, and promtool reads the same text."""

from __future__ import annotations

from tests.world.dataset import packed


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
