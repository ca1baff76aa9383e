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

import functools
import hashlib
import importlib.util
import json
import math
import os
import re
import signal
import subprocess
import sys
from collections.abc import Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import yaml

from compiler.diagnostics import Diagnostics, Position

try:  # libyaml is much faster; fall back to the pure-Python composer when absent.
    _BaseLoader: type[Any] = yaml.CSafeLoader
except AttributeError:  # pragma: no cover - depends on the PyYAML build
    _BaseLoader = yaml.SafeLoader

MAX_FILE_BYTES = 2 * 1024 * 1024
MAX_NODES_PER_DOCUMENT = 20_000  # a real spec has a few hundred; this stops alias bombs fast
MAX_DEPTH = 64
# A file holds a handful of documents; 20,000 empty ones (120 KB) must not cost minutes.
MAX_DOCUMENTS_PER_FILE = 1_000
# The library's jsonnet evaluates in well under a second; ten gives a loaded CI machine headroom.
JSONNET_TIMEOUT_SECONDS = 10
# The library needs under 100 MiB; a runaway comprehension stops here instead of eating the machine.
JSONNET_MEMORY_MIB = 512
# Hundreds of stamped specs fit in 16 MiB of JSON; the node limits would refuse more anyway.
JSONNET_MAX_OUTPUT_BYTES = 16 * 1024 * 1024
SPEC_SUFFIXES = (".yaml", ".yml", ".jsonnet")

_YAML_TAG = "tag:yaml.org,2002:"
_STR, _SEQ, _MAP, _MERGE = (_YAML_TAG + name for name in ("str", "seq", "map", "merge"))
_UNTAGGED = "?untagged"  # what the loader marks a plain scalar written without a tag
_CORE_TAGS = "!!str, !!int, !!float, !!bool, !!null, !!seq and !!map"
_JSONNET_CHILD = Path(__file__).resolve().with_name("jsonnet_child.py")


class _Loader(_BaseLoader):  # type: ignore[misc]
    """Marks untagged plain scalars instead of resolving them with YAML 1.1 rules.

    PyYAML resolves tags on composition, which would hide whether ``123`` was written as
    ``!!str 123``; marking them lets the builder honour explicit core tags and apply the
    YAML 1.2 core schema to the rest.
    """

    def resolve(self, kind: type[yaml.Node], value: Any, implicit: tuple[bool, bool]) -> str:
        if kind is yaml.ScalarNode:
            if implicit[0]:
                return _MERGE if value == "<<" else _UNTAGGED
            return _STR  # quoted, block, or the non-specific tag "!"
        resolved: str = super().resolve(kind, value, implicit)
        return resolved


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
    # The file as the output names it: the spec directory's name and the path inside it, the
    # same whatever the working directory or the form of --specs (``path`` is for diagnostics).
    source: str = ""

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
            self.check_collection_tag(node, _SEQ, "a list")
            return [self.build(item, (*key, i), depth + 1) for i, item in enumerate(node.value)]
        if isinstance(node, yaml.MappingNode):
            self.check_collection_tag(node, _MAP, "a mapping")
            return self.mapping(node, key, depth)
        raise _TooLargeError(f"unsupported YAML node {type(node).__name__}")  # pragma: no cover

    def check_collection_tag(self, node: yaml.Node, expected: str, what: str) -> None:
        if node.tag != expected:
            self.diagnostics.error(self.pos(node), _tag_message(node.tag, what))

    def mapping(self, node: yaml.MappingNode, key: PathKey, depth: int) -> dict[str, Any]:
        result: dict[str, Any] = {}
        for key_node, value_node in node.value:
            if not isinstance(key_node, yaml.ScalarNode) or key_node.tag not in (_UNTAGGED, _STR, _MERGE):
                self.diagnostics.error(self.pos(key_node), "mapping keys must be plain strings")
                continue
            if key_node.tag == _MERGE:
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

    def scalar(self, node: yaml.ScalarNode) -> Any:
        """An untagged plain scalar by the YAML 1.2 core schema; a tagged one as its tag says."""
        text: str = node.value
        if node.tag == _UNTAGGED:
            return _core_scalar(text)
        if node.tag == _STR:
            return text
        parse = _TAGGED_SCALARS.get(node.tag)
        if parse is None:
            self.diagnostics.error(self.pos(node), _tag_message(node.tag, "a scalar"))
            return text
        value = parse(text)
        if value is _INVALID:
            self.diagnostics.error(self.pos(node), f"{json.dumps(text)} is not a valid {_show_tag(node.tag)}")
            return text
        return value


_INVALID = object()


def _show_tag(tag: str) -> str:
    return "!!" + tag.removeprefix(_YAML_TAG) if tag.startswith(_YAML_TAG) else tag


def _tag_message(tag: str, what: str) -> str:
    if tag in (_STR, _SEQ, _MAP) or tag.removeprefix(_YAML_TAG) in ("int", "float", "bool", "null"):
        return f"YAML tag {_show_tag(tag)} cannot be applied to {what}"
    return f"YAML tag {_show_tag(tag)} is not supported; only the core tags {_CORE_TAGS} are (remove it)"


def _tagged_int(text: str) -> Any:
    value = _core_scalar(text)
    return value if isinstance(value, int) and not isinstance(value, bool) else _INVALID


def _tagged_float(text: str) -> Any:
    value = _core_scalar(text)
    return float(value) if isinstance(value, int | float) and not isinstance(value, bool) else _INVALID


def _tagged_bool(text: str) -> Any:
    value = _core_scalar(text)
    return value if isinstance(value, bool) else _INVALID


def _tagged_null(text: str) -> Any:
    return None if _NULL.match(text) else _INVALID


_TAGGED_SCALARS = {
    _YAML_TAG + "int": _tagged_int,
    _YAML_TAG + "float": _tagged_float,
    _YAML_TAG + "bool": _tagged_bool,
    _YAML_TAG + "null": _tagged_null,
}


def _core_scalar(text: str) -> Any:
    """A plain scalar by the YAML 1.2 core schema (``no`` stays a string, ``010`` is ten)."""
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
            if index >= MAX_DOCUMENTS_PER_FILE:
                where = _Builder(path, diagnostics).pos(node) if node is not None else Position(path, 1, 1)
                diagnostics.error(where, _too_many_documents())
                return []  # the one problem to fix first: checking a thousand documents would bury it
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


def _too_many_documents() -> str:
    return f"file holds more than {MAX_DOCUMENTS_PER_FILE} documents, the limit per file; split it into several files"


def _read_source(file: Path, display: str, diagnostics: Diagnostics) -> str | None:
    """The text of a spec file (YAML or jsonnet), refusing unreadable, binary or oversized input."""
    try:
        size = file.stat().st_size
        if size > MAX_FILE_BYTES:
            diagnostics.error(
                Position(display, 1, 1), f"file is {size} bytes; spec files are limited to {MAX_FILE_BYTES}"
            )
            return None
        raw = file.read_bytes()
    except OSError as exc:
        diagnostics.error(Position(display, 1, 1), f"cannot read file: {exc.strerror}")
        return None
    if b"\x00" in raw:
        diagnostics.error(Position(display, 1, 1), "file contains NUL bytes; is it binary?")
        return None
    try:
        return raw.decode("utf-8")
    except UnicodeDecodeError as exc:
        line = raw[: exc.start].count(b"\n") + 1
        col = exc.start - (raw.rfind(b"\n", 0, exc.start) + 1) + 1
        diagnostics.error(Position(display, line, col), "file is not valid UTF-8")
        return None


def load_file(file: Path, display: str, diagnostics: Diagnostics) -> list[Document]:
    """Read one YAML spec file, refusing binary or oversized input with a clear message."""
    text = _read_source(file, display, diagnostics)
    return [] if text is None else load_text(text, display, diagnostics)


# jsonnet writes a location as ``path:line:col[-col]`` or, over several lines, ``path:(line:col)-(line:col)``:
# after "STATIC ERROR: " on the first line, or at the start of a stack-trace line (innermost frame first).
_JSONNET_LOCATION = re.compile(
    r"(?:^(?:STATIC|RUNTIME) ERROR: |^\t)(?P<path>[^\t\n]+?):(?:(?P<line>\d+):(?P<col>\d+)(?:-\d+)?|"
    r"\((?P<mline>\d+):(?P<mcol>\d+)\)-\(\d+:\d+\))(?=[\t:\n]|$)",
    re.M,
)
_OUT_OF_MEMORY_EXITS = {3, 134, -signal.SIGABRT, -signal.SIGKILL, -signal.SIGSEGV}


@functools.cache
def _jsonnet_folder() -> str:
    """The folder this process imports the jsonnet library (``_jsonnet``) from, for the child to import it
    from too; empty when it is not installed (the child then reports the import failing)."""
    found = importlib.util.find_spec("_jsonnet")
    return str(Path(found.origin).parent) if found is not None and found.origin else ""


def _evaluate_jsonnet(file: Path, spec_root: Path) -> dict[str, str]:
    """Run jsonnet in a bounded child process: ``{"output": json}``, ``{"error": jsonnet's message}``
    or ``{"limit": what was exceeded}``."""
    command = [
        sys.executable,
        "-P",
        "-S",  # no site: the child imports only _jsonnet, from where this process finds it (20 ms of start-up less)
        str(_JSONNET_CHILD),
        str(file),
        str(spec_root.resolve()),
        str(JSONNET_MEMORY_MIB * 1024 * 1024),
        str(JSONNET_TIMEOUT_SECONDS + 1),  # CPU time: the backstop if this process dies first
        str(MAX_FILE_BYTES),
        str(JSONNET_MAX_OUTPUT_BYTES),
        _jsonnet_folder(),
    ]
    exceeded_time = {
        "limit": f"jsonnet evaluation exceeded {JSONNET_TIMEOUT_SECONDS} s, the limit per file; "
        "look for recursion that never ends"
    }
    try:
        child = subprocess.run(
            command, stdin=subprocess.DEVNULL, capture_output=True, timeout=JSONNET_TIMEOUT_SECONDS, check=False
        )
    except subprocess.TimeoutExpired:
        return exceeded_time
    if child.returncode == 0:
        try:
            result: dict[str, str] = json.loads(child.stdout)
            return result
        except ValueError:
            pass
    if child.returncode == -signal.SIGXCPU:
        return exceeded_time
    if child.returncode in _OUT_OF_MEMORY_EXITS or b"memory allocation" in child.stderr:
        return {
            "limit": f"jsonnet evaluation exceeded {JSONNET_MEMORY_MIB} MiB, the limit per file; "
            "look for a comprehension or std.range that grows without bound"
        }
    detail = child.stderr.decode("utf-8", "replace").strip().splitlines()
    return {"limit": f"jsonnet evaluation failed (exit {child.returncode}): {detail[-1] if detail else 'no output'}"}


def _jsonnet_error(message: str, file: Path, display: str, display_root: Path | None) -> tuple[Position, str]:
    """jsonnet's error at the innermost place in a file of ours: the spec file itself or a library it
    imports (not jsonnet's own std.jsonnet, whose lines mean nothing in the spec)."""
    first = message.splitlines()[0] if message else "jsonnet error"
    where, note = Position(display, 1, 1), ""
    for match in _JSONNET_LOCATION.finditer(message):
        path = match["path"]
        line, col = int(match["line"] or match["mline"]), int(match["col"] or match["mcol"])
        if path == str(file) or (Path(path).is_absolute() and Path(path) == file.resolve()):
            where = Position(display, line, col)
        elif Path(path).is_absolute() and Path(path).is_file():  # imports are served by absolute path
            library = _display(Path(path), display_root) if display_root else path
            where, note = Position(library, line, col), f" (evaluating {display})"
        else:
            continue
        break
    text = _JSONNET_LOCATION.sub("", first, count=1) if first.startswith("STATIC ERROR:") else first
    text = text.replace("STATIC ERROR:", "").replace("RUNTIME ERROR:", "")
    return where, f"jsonnet error: {text.strip(' :')}{note}"


def _data_too_large(value: Any) -> str | None:
    """The YAML limits on nodes and nesting, applied to one document that jsonnet produced."""
    nodes, stack = 0, [(value, 0)]
    while stack:
        item, depth = stack.pop()
        nodes += 1
        if nodes > MAX_NODES_PER_DOCUMENT:
            return f"a document jsonnet produced has more than {MAX_NODES_PER_DOCUMENT} nodes"
        if depth > MAX_DEPTH:
            return f"a document jsonnet produced nests deeper than {MAX_DEPTH} levels"
        children = item.values() if isinstance(item, dict) else item if isinstance(item, list) else ()
        stack.extend((child, depth + 1) for child in children)
    return None


def load_jsonnet(
    file: Path, display: str, spec_root: Path, diagnostics: Diagnostics, display_root: Path | None = None
) -> list[Document]:
    """Evaluate a ``.jsonnet`` spec file: one spec object, or a list of documents.

    The source has the limits of a YAML file; evaluation runs in a child process bounded
    in time and memory, and its output has the YAML limits on documents, nodes and nesting.
    Imports are served only from inside the spec directory. Evaluation errors keep the
    location jsonnet reports, in the library it happened in (shown relative to ``display_root``);
    problems in the produced data point at the line of the
    jsonnet file that names the spec (jsonnet output carries no positions of its own).
    """
    source = _read_source(file, display, diagnostics)
    if source is None:
        return []
    result = _evaluate_jsonnet(file, spec_root)
    if "output" not in result:
        if "limit" in result:
            diagnostics.error(Position(display, 1, 1), result["limit"])
        else:
            diagnostics.error(*_jsonnet_error(result.get("error", "").strip(), file, display, display_root))
        return []
    try:
        data = json.loads(result["output"])
    except RecursionError:
        diagnostics.error(Position(display, 1, 1), f"a document jsonnet produced nests deeper than {MAX_DEPTH} levels")
        return []
    items = data if isinstance(data, list) else [data]
    if len(items) > MAX_DOCUMENTS_PER_FILE:
        diagnostics.error(Position(display, 1, 1), _too_many_documents())
        return []
    documents = []
    for index, item in enumerate(items):
        problem = _data_too_large(item)
        if problem:
            diagnostics.error(Position(display, 1, 1), problem)
            return []
        documents.append(_jsonnet_document(item, index, display, source))
    return documents


def _jsonnet_document(item: Any, index: int, display: str, source: str) -> Document:
    name = item.get("name") if isinstance(item, dict) else None
    line, col = 1, 1
    if isinstance(name, str):
        found = re.search(re.escape(json.dumps(name)) + "|'" + re.escape(name) + "'", source)
        if found:
            line = source.count("\n", 0, found.start()) + 1
            col = found.start() - (source.rfind("\n", 0, found.start()) + 1) + 1
    document = Document(path=display, index=index, data=item)
    document.value_positions[()] = Position(display, line, col)
    return document


def discover(spec_dir: Path, problems: list[tuple[Path, str]] | None = None) -> list[Path]:
    """Every spec file below ``spec_dir``, in a stable order (hidden files are skipped).

    Nothing is skipped silently: a directory that cannot be read, a broken symbolic link
    and a spec path that is not a regular file are appended to ``problems``, because a
    spec that goes unseen would have its output deleted by the next ``generate``.
    Symbolic links to directories are followed, each directory once.
    """
    found: list[Path] = []
    problems = [] if problems is None else problems
    seen: set[tuple[int, int]] = set()
    pending = [spec_dir]
    while pending:
        directory = pending.pop()
        try:
            info = directory.stat()
            if (info.st_dev, info.st_ino) in seen:
                continue
            seen.add((info.st_dev, info.st_ino))
            with os.scandir(directory) as listing:
                entries = sorted(listing, key=lambda entry: entry.name)
        except OSError as exc:
            problems.append((directory, f"cannot read directory: {exc.strerror}; specs in it would be missed"))
            continue
        for entry in entries:
            if not entry.name.startswith("."):
                _classify(Path(entry.path), found, pending, problems)
    return sorted(found, key=lambda p: p.relative_to(spec_dir).as_posix())


def _classify(path: Path, found: list[Path], pending: list[Path], problems: list[tuple[Path, str]]) -> None:
    if path.is_symlink() and not path.exists():
        problems.append((path, f"broken symbolic link to {path.readlink()}; fix or remove it, it may hide specs"))
    elif path.is_dir():
        pending.append(path)
    elif path.suffix in SPEC_SUFFIXES:
        if path.is_file():
            found.append(path)
        else:
            problems.append((path, "not a regular file; spec files must be plain files"))


def load_tree(spec_dir: Path, display_root: Path, diagnostics: Diagnostics) -> list[Document]:
    """Load every document under ``spec_dir``; paths are shown relative to ``display_root``."""
    documents: list[Document] = []
    problems: list[tuple[Path, str]] = []
    root_name = spec_dir.resolve().name
    for file in discover(spec_dir, problems):
        display = _display(file, display_root)
        if file.suffix == ".jsonnet":
            loaded = load_jsonnet(file, display, spec_dir, diagnostics, display_root)
        else:
            loaded = load_file(file, display, diagnostics)
        inside = file.relative_to(spec_dir).as_posix()
        for document in loaded:
            document.source = f"{root_name}/{inside}" if root_name else inside
        documents.extend(loaded)
    for path, message in problems:
        diagnostics.error(Position(_display(path, display_root), 1, 1), message)
    return documents


def _display(path: Path, display_root: Path) -> str:
    try:
        return path.relative_to(display_root).as_posix()
    except ValueError:
        return path.as_posix()
