"""The manual as the tests read it: docs/*.md with their included examples, and its sections.

A page includes an example file with a ``--8<-- "path"`` line (pymdownx.snippets, relative to
``docs/examples/``, as mkdocs.yml says); :func:`page` puts the file's text in its place, so a test
reads what the built site shows.
"""

from __future__ import annotations

import re
from pathlib import Path

from markdown_it import MarkdownIt

REPO_ROOT = Path(__file__).resolve().parents[1]
DOCS = REPO_ROOT / "docs"
EXAMPLES = DOCS / "examples"
README = REPO_ROOT / "README.md"
SNIPPET = re.compile(r'^-{1,3}8<-{1,3} "([^"]+)"$', re.M)


def included(text: str) -> list[str]:
    """The example files a page's text includes, in order."""
    return SNIPPET.findall(text)


def expand(text: str) -> str:
    """``text`` with each snippet line replaced by the file it names (its final newline dropped, as snippets does)."""
    return SNIPPET.sub(lambda match: (EXAMPLES / match.group(1)).read_text(encoding="utf-8").rstrip("\n"), text)


def page(name: str) -> str:
    """The text of ``docs/<name>`` with its examples included."""
    return expand((DOCS / name).read_text(encoding="utf-8"))


def section(name: str, title: str, tag: str = "h2") -> tuple[list[tuple[str, str]], str]:
    """(the fenced blocks as (info, text), the prose) of the section of page ``name`` headed ``title``."""
    tokens = MarkdownIt().parse(page(name) if name != "README.md" else README.read_text(encoding="utf-8"))
    blocks: list[tuple[str, str]] = []
    prose: list[str] = []
    inside = False
    for index, token in enumerate(tokens):
        if token.type == "heading_open" and token.tag <= tag:
            inside = token.tag == tag and tokens[index + 1].content == title
        elif inside and token.type == "fence":
            blocks.append((token.info.strip(), token.content))
        elif inside and token.type == "inline":
            prose.append(token.content)
    assert blocks or prose, f"no section {title!r} in {name}"
    return blocks, "\n".join(prose)
