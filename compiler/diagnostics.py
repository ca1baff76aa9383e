"""Diagnostics: every problem a user must fix, reported as ``path:line:col: message``.

The compiler never stops at the first problem: every stage appends to one
``Diagnostics`` collection so a pull request shows all of its mistakes at once.
"""

from __future__ import annotations

from dataclasses import dataclass, field


@dataclass(frozen=True, order=True)
class Position:
    """A 1-based line and column in a source file, as editors count them."""

    path: str
    line: int
    col: int

    def __str__(self) -> str:
        return f"{self.path}:{self.line}:{self.col}"


@dataclass(frozen=True, order=True)
class Diagnostic:
    position: Position
    message: str

    def __str__(self) -> str:
        return f"{self.position}: {self.message}"


@dataclass
class Diagnostics:
    """An ordered, de-duplicated collection of problems."""

    items: list[Diagnostic] = field(default_factory=list)

    def error(self, position: Position, message: str) -> None:
        diagnostic = Diagnostic(position, message)
        if diagnostic not in self.items:
            self.items.append(diagnostic)

    def extend(self, other: Diagnostics) -> None:
        for item in other.items:
            self.error(item.position, item.message)

    def __bool__(self) -> bool:
        return bool(self.items)

    def __len__(self) -> int:
        return len(self.items)

    def sorted(self) -> list[Diagnostic]:
        return sorted(self.items)

    def render(self) -> str:
        return "".join(f"{item}\n" for item in self.sorted())

