"""``slo-compiler import``: specs of this project written from Sloth and OpenSLO SLOs.

A stage of its own beside the pipeline: it reads another tool's files (with positions,
through ``compiler.source.load``), decides per SLO whether it maps onto this spec language
(``draft``), and writes one spec file per SLO (``emit``). What the other format lacks is
written as placeholders that fail validation until filled in
(``compiler.source.placeholders``). It imports no target: the specs it writes are
compiled like any other.
"""

from __future__ import annotations

from compiler.importers.run import import_files

__all__ = ["import_files"]
