"""Deterministic YAML serialisation: insertion order kept, multi-line text as literal blocks.

libyaml's emitter (bundled with the pinned PyYAML wheel) is eight times faster than the
pure-Python one and writes the same text; a test holds the two to byte equality.
"""

from __future__ import annotations

from typing import Any

import yaml

_BASE: type[yaml.SafeDumper] = getattr(yaml, "CSafeDumper", yaml.SafeDumper)


def _represent_str(dumper: yaml.SafeDumper, value: str) -> yaml.ScalarNode:
    if "\n" in value and all(line == line.rstrip() for line in value.split("\n")):
        return dumper.represent_scalar("tag:yaml.org,2002:str", value, style="|")
    return dumper.represent_scalar("tag:yaml.org,2002:str", value)


def _dumper(base: type[yaml.SafeDumper]) -> type[yaml.SafeDumper]:
    dumper: type[yaml.SafeDumper] = type(f"Slo{base.__name__}", (base,), {})
    dumper.add_representer(str, _represent_str)
    return dumper


FAST_DUMPER = _dumper(_BASE)
PURE_DUMPER = _dumper(yaml.SafeDumper)


def dump(data: Any, *, dumper: type[yaml.SafeDumper] = FAST_DUMPER) -> str:
    """Serialise ``data``; the same input always gives the same text."""
    text: str = yaml.dump(
        data,
        Dumper=dumper,
        sort_keys=False,
        allow_unicode=True,
        default_flow_style=False,
        width=1_000_000,
    )
    return text
