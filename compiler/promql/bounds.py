"""How big a PromQL expression from a spec may be, measured before it is parsed.

The parser (``promql_parser``, Rust) needs memory that grows with the square of an
expression's nesting and operator count, and recurses once per level: 3,000 nested
parentheses take 635 MB, 2,000 ``or`` terms 629 MB, 8,000 unary minus signs 4.4 GB and
35 s, and about 5,400 nested calls (``abs(abs(...))``) or 5,000 ``^`` terms overflow its
stack (SIGSEGV, the process dies). The compiler's own walks over the tree recurse too.
So a spec's expression is measured with a lexer that only counts, and refused past these
bounds (``SPEC``), which are far above anything in ``slo_specs/`` (at most 306 characters,
4 levels and 6 terms there; 1,325 characters, 6 levels and 28 terms in the rules generated
from them). At these bounds the parser takes under 0.4 s and 130 MB.
"""

from __future__ import annotations

import re
from typing import NamedTuple


class Limits(NamedTuple):
    chars: int
    depth: int  # parentheses, brackets and braces, counted together
    terms: int  # operands joined by operators: binary ones, and unary signs


# What a spec may write in one expression, selector or matcher set.
SPEC = Limits(chars=16_384, depth=64, terms=256)
# A list of selectors (a ratio's bad, good and total, a latency SLI's errors and total) is summed
# in one expression: at most this many, and together, the slice's matchers added to each, within
# SPEC.chars (3,000 selectors took 80 s and 7.7 GB before the compiler gave up).
MAX_SELECTORS = 64

# What the parser accepts at all: room for what the compiler wraps around spec text
# (a spec's expression with the slice's matchers added, a recorded rule over it), and a
# backstop should a derived text ever grow past that. At it the parser takes about 1 s and
# 400 MB (256 levels of parentheses around 1,024 ``or`` terms).
BACKSTOP = Limits(chars=65_536, depth=256, terms=1_024)

# One token per match; anything the lexer does not know is one character, so the scan is
# linear and never fails (the parser reports the syntax error afterwards).
_TOKEN = re.compile(
    r"""
    (?P<string>"(?:[^"\\]|\\.)*"|'(?:[^'\\]|\\.)*'|`[^`]*`)
    |(?P<comment>\#[^\n]*)
    |(?P<number>(?:0[xX][0-9a-fA-F]+|(?:[0-9]+\.?[0-9]*|\.[0-9]+)(?:[eE][+-]?[0-9]+)?)[a-zA-Z0-9]*)
    |(?P<word>[a-zA-Z_:][a-zA-Z0-9_:]*)
    |(?P<operator>==|!=|<=|>=|=~|!~|[-+*/%^<>])
    |(?P<open>[(\[{])
    |(?P<close>[)\]}])
    |(?P<other>.)
    """,
    re.VERBOSE | re.DOTALL,
)
_WORD_OPERATORS = frozenset({"and", "or", "unless", "atan2"})


def measure(text: str) -> tuple[int, int]:
    """The deepest nesting of ``()``, ``[]`` and ``{}`` in ``text``, and its number of terms.

    Terms are one more than the operators outside braces (inside, ``=~`` and ``!=`` are
    matchers); a unary sign counts as an operator, as it nests the tree like one.
    """
    depth = deepest = operators = braces = 0
    for match in _TOKEN.finditer(text):
        kind = match.lastgroup
        if kind == "open":
            depth += 1
            deepest = max(deepest, depth)
            braces += match.group() == "{"
        elif kind == "close":
            depth = max(0, depth - 1)
            braces = max(0, braces - (match.group() == "}"))
        elif not braces and (kind == "operator" or (kind == "word" and match.group().lower() in _WORD_OPERATORS)):
            operators += 1
    return deepest, operators + 1


def problem(text: str, limits: Limits = SPEC) -> str | None:
    """Why ``text`` is too big to parse, with the bound; None when it is within every bound."""
    if len(text) > limits.chars:
        return f"the expression is {len(text):,} characters long, longer than the {limits.chars:,}-character limit"
    depth, terms = measure(text)
    if depth > limits.depth:
        return (
            f"the expression nests parentheses, brackets and braces {depth:,} levels deep, deeper than the "
            f"limit of {limits.depth:,}"
        )
    if terms > limits.terms:
        return (
            f"the expression joins {terms:,} terms with operators (unary signs included), more than the "
            f"limit of {limits.terms:,}"
        )
    return None


# The compiler's walks over a tree recurse (a few frames per level). Trees of spec text within
# SPEC fit Python's default of 1,000 frames; those at BACKSTOP (derived text) need about 5,000,
# so the command line allows this many (Python frames live on the heap, not the C stack).
RECURSION_LIMIT = 10_000
