"""Evaluate one jsonnet file under a memory and CPU limit; ``compiler.load`` runs this as a child.

jsonnet has no limit of its own: a non-terminating function runs forever and a 60-byte
comprehension can allocate tens of gigabytes, and when its allocator fails the C++ library
aborts the whole process. So the evaluation runs in a separate process that caps its own
address space and CPU time first; the parent adds a wall-clock timeout and turns an abort
into a positioned error. This file is run as a script (``python -P -S jsonnet_child.py ...``)
and imports nothing from the compiler, so it works however the compiler was installed.

Arguments: FILE ROOT MEMORY_BYTES CPU_SECONDS MAX_SOURCE_BYTES MAX_OUTPUT_BYTES [JSONNET_FOLDER]. Prints one
JSON object: ``{"output": text}`` or ``{"error": message}``; exits 3 when Python itself runs
out of memory.
"""

from __future__ import annotations

import json
import resource
import sys
from pathlib import Path
from typing import Any

EXIT_OUT_OF_MEMORY = 3


def _cap(kind: int, value: int) -> None:
    _, hard = resource.getrlimit(kind)
    limit = value if hard == resource.RLIM_INFINITY else min(value, hard)
    resource.setrlimit(kind, (limit, limit))


def _importer(root: Path, max_source: int) -> Any:
    """Serve imports only from inside the spec directory, with the limits of spec files."""

    def import_callback(base: str, relative: str) -> tuple[str, bytes]:
        target = (Path(base) / relative).resolve()
        if root != target and root not in target.parents:
            raise RuntimeError(f"import of {relative!r} leaves the spec directory")
        try:
            size = target.stat().st_size
            if size > max_source:
                raise RuntimeError(f"import {relative!r} is {size} bytes; spec files are limited to {max_source}")
            data = target.read_bytes()
        except OSError as exc:
            raise RuntimeError(f"cannot read import {relative!r}: {exc.strerror}") from None
        if b"\x00" in data:
            raise RuntimeError(f"import {relative!r} contains NUL bytes; is it binary?")
        return str(target), data

    return import_callback


def main(argv: list[str]) -> int:
    file, root = argv[1], Path(argv[2])
    memory, cpu, max_source, max_output = (int(arg) for arg in argv[3:7])
    _cap(resource.RLIMIT_AS, memory)
    _cap(resource.RLIMIT_CPU, cpu)
    if len(argv) > 7 and argv[7]:
        sys.path.append(argv[7])  # run without site (-S): the library's folder, as the compiler found it
    import _jsonnet

    try:
        output = _jsonnet.evaluate_file(file, import_callback=_importer(root, max_source), max_stack=200, max_trace=10)
        if len(output) > max_output:
            result = {"error": f"output is {len(output)} bytes; a jsonnet spec file may produce at most {max_output}"}
        else:
            result = {"output": output}
        sys.stdout.write(json.dumps(result))
    except RuntimeError as exc:
        sys.stdout.write(json.dumps({"error": str(exc)}))
    except MemoryError:
        return EXIT_OUT_OF_MEMORY
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv))
