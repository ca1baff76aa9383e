"""Load spec files into plain data with the source position of every key and value.

PyYAML composes the node graph (it keeps line and column marks); this module then
builds plain Python values itself, with YAML 1.2 core-schema scalars. That choice is
deliberate: YAML 1.1 would turn ``severity: no`` into ``False`` and ``010`` into 8, while
Prometheus and Alertmanager (Go, yaml.v2) keep such text as written.

The loader knows nothing about SLOs or Prometheus: it yields ``Document`` objects and
reports syntax problems, duplicate keys and resource abuse (alias bombs, deep nesting,
huge files) as diagnostics.
"""

from __future__ import annotations

import hashlib
import json
import math
import re
from collections.abc import Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import yaml

from compiler.diagnostics import Diagnostics, Position

try:  # libyaml is much faster; fall back to the pure-Python composer when absent.
    _Loader: type[Any] = yaml.CSafeLoader
except AttributeError:  # pragma: no cover - depends on the PyYAML build
    _Loader = yaml.SafeLoader

MAX_FILE_BYTES = 2 * 1024 * 1024
MAX_NODES_PER_DOCUMENT = 20_000  # a real spec has a few hundred; this stops alias bombs fast
MAX_DEPTH = 64
SPEC_SUFFIXES = (".yaml", ".yml", ".jsonnet")

PathKey = tuple[str | int, ...]

_NULL = re.compile(r"^(?:~|null|Null|NULL|)$")
_BOOL_TRUE = re.compile(r"^(?:true|True|TRUE)$")
_BOOL_FALSE = re.compile(r"^(?:false|False|FALSE)$")
_INT_DEC = re.compile(r"^[-+]?[0-9]+$")
_INT_OCT = re.compile(r"^0o[0-7]+$")
_INT_HEX = re.compile(r"^0x[0-9a-fA-F]+$")
_FLOAT = re.compile(r"^[-+]?(?:\.[0-9]+|[0-9]+(?:\.[0-9]*)?)(?:[eE][-+]?[0-9]+)?$")
_INF = re.compile(r"^[-+]?\.(?:inf|Inf|INF)$")
_NAN = re.compile(r"^\.(?:nan|NaN|NAN)$")


@dataclass
class Document:
    """One YAML document: its data and where each part of it came from."""

    path: str
    index: int
    data: Any
    value_positions: dict[PathKey, Position] = field(default_factory=dict)
    key_positions: dict[PathKey, Position] = field(default_factory=dict)

    def position(self, key: PathKey) -> Position:
        """The position of the value at ``key``, or of its nearest ancestor."""
        probe = tuple(key)
        while probe:
            if probe in self.value_positions:
                return self.value_positions[probe]
            probe = probe[:-1]
        return self.value_positions.get((), Position(self.path, 1, 1))

    def key_position(self, key: PathKey) -> Position:
        """The position of the mapping key that names ``key`` (falls back to the value)."""
        return self.key_positions.get(tuple(key), self.position(key))

    @property
    def content_hash(self) -> str:
        """A hash of the meaning, not the bytes: comments and formatting do not change it."""
        canonical = json.dumps(self.data, sort_keys=True, separators=(",", ":"), ensure_ascii=False)
        return hashlib.sha256(canonical.encode("utf-8")).hexdigest()


class _TooLargeError(Exception):
    pass


class _Builder:
    """Turns a composed node graph into plain data, counting nodes to stop alias bombs."""

    def __init__(self, path: str, diagnostics: Diagnostics) -> None:
        self.path = path
        self.diagnostics = diagnostics
        self.nodes = 0
        self.document = Document(path=path, index=0, data=None)

    def pos(self, node: yaml.Node) -> Position:
        mark = node.start_mark
        return Position(self.path, mark.line + 1, mark.column + 1)

    def build(self, node: yaml.Node, key: PathKey, depth: int) -> Any:
        self.nodes += 1
        if self.nodes > MAX_NODES_PER_DOCUMENT:
            raise _TooLargeError(f"document expands to more than {MAX_NODES_PER_DOCUMENT} nodes (alias bomb?)")
        if depth > MAX_DEPTH:
            raise _TooLargeError(f"document nests deeper than {MAX_DEPTH} levels")
        self.document.value_positions.setdefault(key, self.pos(node))
        if isinstance(node, yaml.ScalarNode):
            return self.scalar(node)
        if isinstance(node, yaml.SequenceNode):
            return [self.build(item, (*key, i), depth + 1) for i, item in enumerate(node.value)]
        if isinstance(node, yaml.MappingNode):
            return self.mapping(node, key, depth)
        raise _TooLargeError(f"unsupported YAML node {type(node).__name__}")  # pragma: no cover

    def mapping(self, node: yaml.MappingNode, key: PathKey, depth: int) -> dict[str, Any]:
        result: dict[str, Any] = {}
        for key_node, value_node in node.value:
            if not isinstance(key_node, yaml.ScalarNode):
                self.diagnostics.error(self.pos(key_node), "mapping keys must be plain strings")
                continue
            if key_node.tag == "tag:yaml.org,2002:merge":
                self.diagnostics.error(self.pos(key_node), "YAML merge keys (<<) are not supported; write the keys out")
                continue
            name = str(key_node.value)
            child = (*key, name)
            if name in result:
                first = self.document.key_positions[child]
                self.diagnostics.error(
                    self.pos(key_node), f"duplicate key '{name}' (first defined at line {first.line})"
                )
                continue
            self.document.key_positions[child] = self.pos(key_node)
            result[name] = self.build(value_node, child, depth + 1)
        return result

    @staticmethod
    def scalar(node: yaml.ScalarNode) -> Any:
        text: str = node.value
        if node.style:  # quoted or block scalars are always strings (libyaml gives "" for plain)
            return text
        if _NULL.match(text):
            return None
        if _BOOL_TRUE.match(text):
            return True
        if _BOOL_FALSE.match(text):
            return False
        if _INT_DEC.match(text):
            return int(text)
        if _INT_OCT.match(text):
            return int(text[2:], 8)
        if _INT_HEX.match(text):
            return int(text[2:], 16)
        if _FLOAT.match(text):
            return float(text)
        if _INF.match(text):
            return -math.inf if text.startswith("-") else math.inf
        if _NAN.match(text):
            return math.nan
        return text


def load_text(text: str, path: str, diagnostics: Diagnostics) -> list[Document]:
    """Parse every document in ``text``; problems go to ``diagnostics``."""
    documents: list[Document] = []
    try:
        nodes: Iterator[yaml.Node] = yaml.compose_all(text, Loader=_Loader)
        for index, node in enumerate(nodes):
            if node is None:
                continue
            builder = _Builder(path, diagnostics)
            try:
                data = builder.build(node, (), 0)
            except _TooLargeError as exc:
                diagnostics.error(builder.pos(node), str(exc))
                continue
            builder.document.index = index
            builder.document.data = data
            documents.append(builder.document)
    except yaml.MarkedYAMLError as exc:
        mark = exc.problem_mark or exc.context_mark
        line, col = (mark.line + 1, mark.column + 1) if mark else (1, 1)
        problem = exc.problem or exc.context or "invalid YAML"
        diagnostics.error(Position(path, line, col), f"YAML syntax error: {problem}")
    except yaml.reader.ReaderError as exc:
        line = text.count("\n", 0, exc.position) + 1
        col = exc.position - (text.rfind("\n", 0, exc.position) + 1) + 1
        code = exc.character if isinstance(exc.character, int) else ord(exc.character)
        diagnostics.error(Position(path, line, col), f"YAML error: control character U+{code:04X} is not allowed")
    except yaml.YAMLError as exc:
        diagnostics.error(Position(path, 1, 1), "YAML error: " + " ".join(str(exc).split()))
    except RecursionError:
        diagnostics.error(Position(path, 1, 1), f"document nests deeper than {MAX_DEPTH} levels")
    return documents


def load_file(file: Path, display: str, diagnostics: Diagnostics) -> list[Document]:
    """Read one spec file, refusing binary or oversized input with a clear message."""
    try:
        size = file.stat().st_size
        if size > MAX_FILE_BYTES:
            diagnostics.error(
                Position(display, 1, 1), f"file is {size} bytes; spec files are limited to {MAX_FILE_BYTES}"
            )
            return []
        raw = file.read_bytes()
    except OSError as exc:
        diagnostics.error(Position(display, 1, 1), f"cannot read file: {exc.strerror}")
        return []
    if b"\x00" in raw:
        diagnostics.error(Position(display, 1, 1), "file contains NUL bytes; is it binary?")
        return []
    try:
        text = raw.decode("utf-8")
    except UnicodeDecodeError as exc:
        line = raw[: exc.start].count(b"\n") + 1
        col = exc.start - (raw.rfind(b"\n", 0, exc.start) + 1) + 1
        diagnostics.error(Position(display, line, col), "file is not valid UTF-8")
        return []
    return load_text(text, display, diagnostics)


_JSONNET_LOCATION = re.compile(r"(?P<path>[^\s:]+\.(?:jsonnet|libsonnet)):(?P<line>\d+):(?P<col>\d+)")


def load_jsonnet(file: Path, display: str, spec_root: Path, diagnostics: Diagnostics) -> list[Document]:
    """Evaluate a ``.jsonnet`` spec file: one spec object, or a list of documents.

    Imports are served only from inside the spec directory. Evaluation errors keep the
    location jsonnet reports; problems in the produced data point at the line of the
    jsonnet file that names the spec (jsonnet output carries no positions of its own).
    """
    import _jsonnet  # the C++ binding; imported late so YAML-only use does not need it

    root = spec_root.resolve()

    def import_callback(base: str, relative: str) -> tuple[str, bytes]:
        target = (Path(base) / relative).resolve()
        if root != target and root not in target.parents:
            raise RuntimeError(f"import of {relative!r} leaves the spec directory")
        return str(target), target.read_bytes()

    try:
        source = file.read_text(encoding="utf-8")
        output = _jsonnet.evaluate_file(str(file), import_callback=import_callback, max_stack=200, max_trace=10)
    except (OSError, UnicodeDecodeError) as exc:
        diagnostics.error(Position(display, 1, 1), f"cannot read file: {exc}")
        return []
    except RuntimeError as exc:
        message = str(exc).strip()
        first = message.splitlines()[0] if message else "jsonnet error"
        match = _JSONNET_LOCATION.search(message)
        line, col = (int(match["line"]), int(match["col"])) if match else (1, 1)
        text = _JSONNET_LOCATION.sub("", first).replace("STATIC ERROR:", "").replace("RUNTIME ERROR:", "")
        diagnostics.error(Position(display, line, col), f"jsonnet error: {text.strip(' :')}")
        return []
    data = json.loads(output)
    items = data if isinstance(data, list) else [data]
    documents = []
    for index, item in enumerate(items):
        name = item.get("name") if isinstance(item, dict) else None
        line, col = 1, 1
        if isinstance(name, str):
            found = re.search(re.escape(json.dumps(name)) + "|'" + re.escape(name) + "'", source)
            if found:
                line = source.count("\n", 0, found.start()) + 1
                col = found.start() - (source.rfind("\n", 0, found.start()) + 1) + 1
        document = Document(path=display, index=index, data=item)
        document.value_positions[()] = Position(display, line, col)
        documents.append(document)
    return documents


def discover(spec_dir: Path) -> list[Path]:
    """Every spec file below ``spec_dir``, in a stable order (hidden files are skipped)."""
    found = [
        path
        for path in spec_dir.rglob("*")
        if path.suffix in SPEC_SUFFIXES
        and path.is_file()
        and not any(part.startswith(".") for part in path.relative_to(spec_dir).parts)
    ]
    return sorted(found, key=lambda p: p.relative_to(spec_dir).as_posix())


def load_tree(spec_dir: Path, display_root: Path, diagnostics: Diagnostics) -> list[Document]:
    """Load every document under ``spec_dir``; paths are shown relative to ``display_root``."""
    documents: list[Document] = []
    for file in discover(spec_dir):
        try:
            display = file.relative_to(display_root).as_posix()
        except ValueError:
            display = file.as_posix()
        if file.suffix == ".jsonnet":
            documents.extend(load_jsonnet(file, display, spec_dir, diagnostics))
        else:
            documents.extend(load_file(file, display, diagnostics))
    return documents
