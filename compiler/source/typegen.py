"""Generate ``compiler/source/spec_types.py``: TypedDicts for every object the JSON Schemas describe.

The schemas in ``compiler/schemas/`` are the one definition of the spec language; the checker reads
schema-valid documents through these TypedDicts, so a misspelt or removed field is a
``mypy`` error rather than a silent ``None``. A test regenerates the module and fails when
the committed file differs: after changing a schema run ``python -m compiler.source.typegen``.

Names: the root object of a schema is named after its ``title`` (``SLOSpec``,
``ProjectSpec``, ``OwnersSpec``); nested objects after their path (``SLOSliRatio``).
"""

from __future__ import annotations

import json
import keyword
import sys
import textwrap
from dataclasses import dataclass, field
from importlib import resources
from pathlib import Path
from typing import Any

# The packaged schemas, read directly: typegen must run even when the modules it feeds do not import.
SCHEMA_DIR = resources.files("compiler").joinpath("schemas")
OUTPUT = Path(__file__).resolve().parent / "spec_types.py"
ROOTS = {"slo.schema.json": "SLO", "project.schema.json": "Project", "owners.schema.json": "Owners"}

HEADER = '''"""TypedDicts of the spec language, generated from ``compiler/schemas/*.json`` by ``typegen``.

Do not edit: change the schema and run ``python -m compiler.source.typegen``.
"""

from __future__ import annotations

from typing import Any, Literal, NotRequired, Required, TypedDict
'''


def _camel(text: str) -> str:
    return "".join(part[:1].upper() + part[1:] for part in text.replace("-", "_").split("_") if part)


def _docstring(description: str) -> str:
    """The schema's description as a class docstring, wrapped to the line length."""
    if not description:
        return ""
    text = description.replace("\\", "\\\\").replace('"', "'")
    lines = textwrap.wrap(text, width=100)
    if len(lines) == 1:
        return f'    """{lines[0]}"""\n'
    return '    """' + "\n    ".join(lines) + '\n    """\n'


@dataclass
class _Generator:
    schema: dict[str, Any]
    prefix: str
    classes: list[str] = field(default_factory=list)
    names: dict[int, str] = field(default_factory=dict)

    def resolve(self, node: dict[str, Any]) -> tuple[dict[str, Any], str | None]:
        """Follow a local ``$ref``; returns the target and the name of the definition."""
        ref = node.get("$ref")
        if not isinstance(ref, str):
            return node, None
        name = ref.rsplit("/", 1)[-1]
        target: dict[str, Any] = self.schema["$defs"][name]
        return target, name

    def type_of(self, node: dict[str, Any], hint: str) -> str:
        node, definition = self.resolve(node)
        if definition is not None:
            hint = self.prefix + _camel(definition)
        for key in ("oneOf", "anyOf"):
            if key in node:
                options = dict.fromkeys(self.type_of(option, f"{hint}{i}") for i, option in enumerate(node[key]))
                return " | ".join(options)
        if "const" in node:
            return f"Literal[{node['const']!r}]"
        if "enum" in node:
            return f"Literal[{', '.join(repr(value) for value in node['enum'])}]"
        kind = node.get("type")
        if isinstance(kind, list):
            return " | ".join(self.type_of({**node, "type": one}, hint) for one in kind)
        if kind == "object":
            if "properties" in node:
                return self.typed_dict(node, hint)
            values = node.get("additionalProperties")
            value_type = self.type_of(values, hint + "Value") if isinstance(values, dict) else "Any"
            return f"dict[str, {value_type}]"
        if kind == "array":
            items = node.get("items")
            return f"list[{self.type_of(items, hint + 'Item') if isinstance(items, dict) else 'Any'}]"
        return {"string": "str", "integer": "int", "number": "int | float", "boolean": "bool", "null": "None"}.get(
            str(kind), "Any"
        )

    def typed_dict(self, node: dict[str, Any], name: str) -> str:
        if id(node) in self.names:
            return self.names[id(node)]
        self.names[id(node)] = name
        required = set(node.get("required", []))
        fields = []
        for key, child in node["properties"].items():
            value = self.type_of(child, name + _camel(key))
            fields.append((key, f"{'Required' if key in required else 'NotRequired'}[{value}]"))
        doc = _docstring(str(node.get("description", "")))
        if all(key.isidentifier() and not keyword.iskeyword(key) for key, _ in fields):
            body = "".join(f"    {key}: {value}\n" for key, value in fields) or ("" if doc else "    pass\n")
            text = f"class {name}(TypedDict, total=False):\n{doc}{body}"
        else:  # keys such as ``for`` and ``from`` need the functional form
            body = "".join(f"        {json.dumps(key)}: {value},\n" for key, value in fields)
            text = f"{name} = TypedDict(\n    {json.dumps(name)},\n    {{\n{body}    }},\n    total=False,\n)\n"
        self.classes.append(text)
        return name


def generate() -> str:
    """The text of ``spec_types.py`` for the schemas as they are now."""
    parts = [HEADER]
    for file, prefix in ROOTS.items():
        schema = json.loads(SCHEMA_DIR.joinpath(file).read_text(encoding="utf-8"))
        generator = _Generator(schema, prefix)
        generator.typed_dict(schema, f"{prefix}Spec")
        parts.extend(f"\n\n{text}" for text in generator.classes)
    return "".join(parts).rstrip("\n") + "\n"


def main() -> int:
    OUTPUT.write_text(generate(), encoding="utf-8")
    print(f"wrote {OUTPUT}", file=sys.stderr)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
