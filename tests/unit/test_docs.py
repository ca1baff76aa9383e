"""The README stays one screen or two and the manual's links, pages and examples stay right.

- README.md has at most 250 lines, and its quick start and command table say what the manual does;
- every relative link in README.md and docs/*.md names a file that exists, and a heading of it when
  it has an anchor (mkdocs build --strict checks docs/ again in tests/cli/test_docs_site.py, but
  not the README, which is no page of the site);
- mkdocs.yml's nav lists every page of docs/ and nothing else;
- every example the pages include (``--8<--``, from docs/examples/) compiles: each example tree
  is validated and generated in a temp dir, and every file under docs/examples/ is shown on a page;
- a message of the compiler that points into the manual names a page and a heading it has.
"""

from __future__ import annotations

import re
import shutil
import unicodedata
from pathlib import Path
from typing import Any

import pytest
import yaml
from markdown_it import MarkdownIt

from compiler.cli import COMMANDS
from tests.conftest import RunCli
from tests.docs import DOCS, EXAMPLES, README, REPO_ROOT, included, section

README_MAX_LINES = 250
PAGES = sorted(path.name for path in DOCS.glob("*.md"))
MARKDOWN = MarkdownIt("commonmark").enable("table")


def slug(text: str) -> str:
    """A heading's anchor as MkDocs writes it (Python-Markdown's toc ``slugify``; GitHub agrees on ours)."""
    text = unicodedata.normalize("NFKD", text.replace("`", "")).encode("ascii", "ignore").decode("ascii")
    return re.sub(r"[-\s]+", "-", re.sub(r"[^\w\s-]", "", text).strip().lower())


def anchors(path: Path) -> set[str]:
    tokens = MARKDOWN.parse(path.read_text(encoding="utf-8"))
    return {slug(tokens[i + 1].content) for i, token in enumerate(tokens) if token.type == "heading_open"}


def links(path: Path) -> list[str]:
    """The targets of the Markdown links in ``path`` (not those shown inside code)."""
    found: list[str] = []
    for token in MARKDOWN.parse(path.read_text(encoding="utf-8")):
        for child in token.children or ():
            if child.type == "link_open":
                found.append(str(child.attrs["href"]))
    return found


def test_readme_is_at_most_250_lines() -> None:
    lines = README.read_text(encoding="utf-8").count("\n")
    assert lines <= README_MAX_LINES, f"README.md has {lines} lines; move the detail to a page of docs/"


@pytest.mark.parametrize("name", ["README.md", *(f"docs/{page}" for page in PAGES)])
def test_every_relative_link_names_a_file_and_a_heading_that_exist(name: str) -> None:
    source = REPO_ROOT / name
    broken = []
    for href in links(source):
        if re.match(r"^[a-z][a-z0-9+.-]*:", href):  # https:, mailto:
            continue
        target, _, anchor = href.partition("#")
        path = (source.parent / target).resolve() if target else source
        if not path.exists():
            broken.append(f"{href}: no file {path.relative_to(REPO_ROOT)}")
        elif anchor and (path.suffix != ".md" or anchor not in anchors(path)):
            broken.append(f"{href}: no heading #{anchor} in {path.relative_to(REPO_ROOT)}")
    assert not broken, broken
    assert links(source) or name != "README.md"


def test_the_links_check_catches_a_missing_page_and_a_missing_heading(tmp_path: Path) -> None:
    page = tmp_path / "page.md"
    page.write_text("# Title\n\n[a](other.md) [b](#title) [c](#nowhere) [d](page.md#title)\n", encoding="utf-8")
    assert anchors(page) == {"title"}
    assert links(page) == ["other.md", "#title", "#nowhere", "page.md#title"]
    assert slug("Reviewing a change: `diff`") == "reviewing-a-change-diff"
    assert slug("kubernetes-mixin (57 alerts)") == "kubernetes-mixin-57-alerts"


def _nav_pages(nav: Any) -> list[str]:
    if isinstance(nav, str):
        return [nav]
    if isinstance(nav, list):
        return [page for entry in nav for page in _nav_pages(entry)]
    if isinstance(nav, dict):
        return [page for value in nav.values() for page in _nav_pages(value)]
    return []


def test_the_nav_lists_every_page_once() -> None:
    config = yaml.safe_load((REPO_ROOT / "mkdocs.yml").read_text(encoding="utf-8"))
    listed = _nav_pages(config["nav"])
    assert sorted(listed) == PAGES
    assert "index.md" in listed


def test_the_readme_quick_start_is_the_one_the_suite_runs() -> None:
    """tests/engines/test_no_traps.py runs the quick start of docs/getting-started.md; the README shows the same."""
    title = "Quick start: a first team and spec"
    (ours,) = [text for info, text in section("README.md", title)[0] if info == "sh"]
    (run,) = [text for info, text in section("getting-started.md", title)[0] if info == "sh"]
    assert ours == run


def test_the_readme_and_the_commands_page_name_every_command() -> None:
    readme = README.read_text(encoding="utf-8")
    named = set(re.findall(r"^\| `slo-compiler ([a-z]+)", readme, re.M))
    assert named == set(COMMANDS)
    blocks, _ = section("commands.md", "Command line")
    listed = set(re.findall(r"^slo-compiler ([a-z]+)", blocks[0][1], re.M))
    assert listed == set(COMMANDS)


# -- examples: every file under docs/examples/ is shown on a page and compiles ------------------------------

# How each example tree becomes a project: "init" lays the starter (`slo-compiler init`) and puts
# the example's files over it at the same paths; "library" puts them under slo_specs/<tree>/ next
# to the library's owners.yaml and project.yaml.
EXAMPLE_TREES = {"quick-start": "init", "spec-reference": "library"}


def _example_files(tree: str) -> list[Path]:
    return sorted(path for path in (EXAMPLES / tree).rglob("*") if path.is_file())


def test_every_example_is_shown_and_every_tree_is_compiled() -> None:
    shown = {name for page in PAGES for name in included((DOCS / page).read_text(encoding="utf-8"))}
    files = {path.relative_to(EXAMPLES).as_posix() for path in EXAMPLES.rglob("*") if path.is_file()}
    assert shown == files
    assert {path.name for path in EXAMPLES.iterdir()} == set(EXAMPLE_TREES)


def _lay_out(tree: str, root: Path, run_cli: RunCli) -> list[Path]:
    """The project of example ``tree`` at ``root``; the example files' places in it."""
    if EXAMPLE_TREES[tree] == "init":
        assert run_cli(["init"], root)[0] == 0
        places = [root / path.relative_to(EXAMPLES / tree) for path in _example_files(tree)]
    else:
        (root / "slo_specs").mkdir()
        for name in ("owners.yaml", "project.yaml"):
            shutil.copy(REPO_ROOT / "slo_specs" / name, root / "slo_specs" / name)
        places = [root / "slo_specs" / path.relative_to(EXAMPLES) for path in _example_files(tree)]
    for path, place in zip(_example_files(tree), places, strict=True):
        place.parent.mkdir(parents=True, exist_ok=True)
        shutil.copy(path, place)
    return places


@pytest.mark.parametrize("tree", sorted(EXAMPLE_TREES))
def test_each_example_tree_validates_and_generates(tree: str, tmp_path: Path, run_cli: RunCli) -> None:
    places = _lay_out(tree, tmp_path, run_cli)
    code, _, stderr = run_cli(["validate"], tmp_path)
    assert code == 0, stderr
    code, _, stderr = run_cli(["generate", "--out", "out"], tmp_path)
    assert code == 0, stderr
    for place in places:
        for document in yaml.safe_load_all(place.read_text(encoding="utf-8")):
            if document.get("kind") == "SLO":
                assert (tmp_path / "out/prometheus/rules" / f"{document['name']}.rules.yaml").is_file()


def test_the_quick_start_owners_example_is_what_init_writes(tmp_path: Path, run_cli: RunCli) -> None:
    assert run_cli(["init"], tmp_path)[0] == 0
    shown = yaml.safe_load((EXAMPLES / "quick-start/slo_specs/owners.yaml").read_text(encoding="utf-8"))
    written = yaml.safe_load((tmp_path / "slo_specs/owners.yaml").read_text(encoding="utf-8"))
    assert shown == written


def test_an_example_that_does_not_compile_fails(tmp_path: Path, run_cli: RunCli) -> None:
    """The compile check has teeth: the spec reference's example without its owner is refused."""
    (place,) = _lay_out("spec-reference", tmp_path, run_cli)
    place.write_text(re.sub(r"(?m)^owner: .*\n", "", place.read_text(encoding="utf-8")), encoding="utf-8")
    code, _, stderr = run_cli(["validate"], tmp_path)
    assert code == 1 and "owner" in stderr, stderr


# -- messages that point into the manual ------------------------------------------------------------------


def _pointers() -> list[tuple[Path, str, str]]:
    found = []
    for path in sorted((REPO_ROOT / "compiler").rglob("*")):
        if path.suffix in {".py", ".j2", ".tmpl"}:
            text = re.sub(r'"\s*\n\s*[\'"]|\n#\s*', " ", path.read_text(encoding="utf-8"))  # joined across lines
            found += [(path, page, title) for page, title in re.findall(r'docs/([a-z-]+\.md):? \\?"([^"\\]+)', text)]
    return found


def test_every_pointer_into_the_manual_names_a_page_and_one_of_its_headings() -> None:
    pointers = _pointers()
    assert len(pointers) >= 5, pointers  # quick start, watching the watcher, fleet signals, merging, conventions
    for path, page, title in pointers:
        assert (DOCS / page).is_file(), (path, page)
        headings = (DOCS / page).read_text(encoding="utf-8")
        assert re.search(rf"^#+ {re.escape(title)}", headings, re.M), (path, page, title)
