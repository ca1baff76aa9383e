"""Diagnostics: every problem a user must fix, reported as ``path:line:col: message``.

The compiler never stops at the first problem: every stage appends to one
``Diagnostics`` collection so a pull request shows all of its mistakes at once.
Each problem is one line: control characters in a path or a message are written as escapes.
Hostile input can produce a problem per line, so adding one is O(1) (a set, not a list
scan) and each file shows its first ``MAX_DIAGNOSTICS_PER_FILE`` problems, followed by a
line that says how many more there are.
"""

from __future__ import annotations

from collections import Counter
from dataclasses import dataclass, field

from compiler.text.terminal import printable

# Nobody reads more than a screenful per file; past that, fixing the first ones and running
# again is the way forward, and the cap keeps a 2 MB file of mistakes from flooding stderr.
MAX_DIAGNOSTICS_PER_FILE = 200


@dataclass(frozen=True, order=True)
class Position:
    """A 1-based line and column in a source file, as editors count them."""

    path: str
    line: int
    col: int

    def __str__(self) -> str:
        return f"{printable(self.path)}:{self.line}:{self.col}"


@dataclass(frozen=True, order=True)
class Diagnostic:
    position: Position
    message: str

    def __str__(self) -> str:
        """One line: control characters of a file name or a quoted value (a newline, ESC) written as
        escapes (``\\n``, ``\\x1b``), so a value cannot forge a line of its own or drive the terminal."""
        return f"{self.position}: {printable(self.message)}"


@dataclass
class Diagnostics:
    """An ordered, de-duplicated collection of problems; at most a screenful per file is shown."""

    items: list[Diagnostic] = field(default_factory=list)
    _seen: set[Diagnostic] = field(default_factory=set, repr=False, compare=False)
    _per_file: Counter[str] = field(default_factory=Counter, repr=False, compare=False)

    def error(self, position: Position, message: str) -> None:
        diagnostic = Diagnostic(position, message)
        if diagnostic not in self._seen:
            self._seen.add(diagnostic)
            self._per_file[position.path] += 1
            self.items.append(diagnostic)

    def accepts(self, path: str) -> bool:
        """Whether ``path`` is still under the cap, so callers can skip costly hints nobody will see."""
        return self._per_file[path] < MAX_DIAGNOSTICS_PER_FILE

    def extend(self, other: Diagnostics) -> None:
        for item in other.items:
            self.error(item.position, item.message)

    def __bool__(self) -> bool:
        return bool(self.items)

    def __len__(self) -> int:
        """Every problem found, including those not shown."""
        return len(self.items)

    def sorted(self) -> list[Diagnostic]:
        """The problems shown, by file and position: the first of each file up to the cap, then a count of the rest."""
        shown: list[Diagnostic] = []
        by_file: dict[str, list[Diagnostic]] = {}
        for item in self.items:
            by_file.setdefault(item.position.path, []).append(item)
        for path in sorted(by_file):
            items = sorted(by_file[path])
            shown.extend(items[:MAX_DIAGNOSTICS_PER_FILE])
            if len(items) > MAX_DIAGNOSTICS_PER_FILE:
                rest = len(items) - MAX_DIAGNOSTICS_PER_FILE
                shown.append(
                    Diagnostic(
                        items[MAX_DIAGNOSTICS_PER_FILE].position,
                        f"{rest} more problem(s) from here on not shown (at most {MAX_DIAGNOSTICS_PER_FILE} "
                        "are reported per file); fix the ones above and run again",
                    )
                )
        return shown

    def render(self) -> str:
        return "".join(f"{item}\n" for item in self.sorted())
