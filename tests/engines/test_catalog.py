"""The catalog in a real browser: every spec, alert and link present, no console error, links resolve.

Headless Chromium (Debian's, installed by the Makefile) loads every page of the catalog
from disk, as a user opening ``generated/catalog/index.html`` would. The rendered DOM must
hold each spec with a link to its page, each alert of a spec on its page, and every
internal link must point at a file (and an element id) that exists; the browser must log
no error; a screenshot of the index must not be blank. Hostile spec text is shown as
text, never as markup.
"""

from __future__ import annotations

import shutil
import urllib.parse
from pathlib import Path

import pytest
from selenium.webdriver.common.by import By

from compiler.model import Model
from compiler.plan import plan
from compiler.targets import catalog
from tests import browser
from tests.support import FIXTURE_SPECS, LIBRARY_SPECS, REPO_ROOT, compile_tree

CATALOG = REPO_ROOT / "generated" / "catalog"


@pytest.fixture(scope="module")
def library() -> Model:
    return compile_tree(LIBRARY_SPECS)


@pytest.fixture(scope="module")
def pages(tmp_path_factory: pytest.TempPathFactory) -> dict[str, dict[str, object]]:
    """Every catalog page as the browser rendered it: title, text, links, element ids, console log."""
    loaded: dict[str, dict[str, object]] = {}
    with browser.chromium(tmp_path_factory.mktemp("profile")) as driver:
        for path in sorted(CATALOG.rglob("*.html")):
            driver.get(path.as_uri())
            loaded[path.relative_to(CATALOG).as_posix()] = {
                "title": driver.title,
                "text": driver.find_element(By.TAG_NAME, "body").text,
                # One script per page, not a WebDriver round trip per element: ``a.href`` is the resolved
                # URL, what Selenium's get_attribute("href") returns.
                "links": driver.execute_script(
                    "return Array.from(document.querySelectorAll('a'), a => a.href || '')"
                ),
                "ids": set(driver.execute_script("return Array.from(document.querySelectorAll('[id]'), e => e.id)")),
                "log": driver.get_log("browser"),  # type: ignore[no-untyped-call]
                "styled": driver.execute_script(
                    "return getComputedStyle(document.body).fontFamily.indexOf('system-ui') >= 0"
                ),
            }
        driver.get((CATALOG / "index.html").as_uri())
        loaded["index.html"]["screenshot"] = driver.get_screenshot_as_png()
    return loaded


def test_the_catalog_is_what_the_specs_generate(library: Model) -> None:
    rendered = catalog.render(plan(library))
    on_disk = {
        p.relative_to(REPO_ROOT / "generated").as_posix(): p.read_bytes() for p in CATALOG.rglob("*") if p.is_file()
    }
    assert rendered == on_disk
    assert catalog.render(plan(library)) == rendered  # byte-identical across runs


def test_the_index_lists_every_spec_with_a_link_to_its_page(
    library: Model, pages: dict[str, dict[str, object]]
) -> None:
    index = pages["index.html"]
    links = [str(link) for link in index["links"]]  # type: ignore[attr-defined]
    for slo in library.slos:
        assert slo.name in str(index["text"])
        assert any(link.endswith(f"/specs/{slo.name}.html") for link in links), slo.name


def test_each_spec_page_shows_its_alerts_owner_and_runbook(library: Model, pages: dict[str, dict[str, object]]) -> None:
    compiled = plan(library)
    for spec in compiled:
        page = pages[f"specs/{spec.slo.name}.html"]
        text = str(page["text"])
        assert page["title"] == f"{spec.slo.name}: SLO catalog"
        assert spec.slo.owner.name in text
        for name in spec.alert_names:
            assert name in text, (spec.slo.name, name)
        assert any(str(link).endswith(f"/runbooks/{spec.slo.name}.md") for link in page["links"])  # type: ignore[attr-defined]


def test_no_page_logs_an_error_and_the_stylesheet_applies(pages: dict[str, dict[str, object]]) -> None:
    for name, page in pages.items():
        errors = [entry for entry in page["log"] if entry.get("level") == "SEVERE"]  # type: ignore[attr-defined]
        assert errors == [], (name, errors)
        assert page["styled"] is True, name


def test_every_internal_link_resolves(pages: dict[str, dict[str, object]]) -> None:
    root = (REPO_ROOT / "generated").resolve()
    for name, page in pages.items():
        for link in page["links"]:  # type: ignore[attr-defined]
            parsed = urllib.parse.urlparse(str(link))
            if parsed.scheme != "file":
                continue
            target = Path(urllib.parse.unquote(parsed.path))
            assert target.is_file(), (name, link)
            assert target.resolve().is_relative_to(root), (name, link)
            if parsed.fragment and target.suffix == ".html":
                relative = target.resolve().relative_to(CATALOG.resolve()).as_posix()
                assert parsed.fragment in pages[relative]["ids"], (name, link)  # type: ignore[operator]


def test_the_index_screenshot_is_not_blank(pages: dict[str, dict[str, object]]) -> None:
    width, height, raw = browser.png_pixels(pages["index.html"]["screenshot"])  # type: ignore[arg-type]
    assert (width, height) == (1280, 1600) or width > 0
    assert len(set(raw)) > 20, "the screenshot is a single colour"
    assert raw.count(raw[1:2]) < len(raw) * 0.98


def test_hostile_spec_text_is_shown_as_text(tmp_path: Path) -> None:
    """The fixture specs carry <b>bold</b> and {{ templates }} in their text: the browser shows them literally."""
    files = catalog.render(plan(compile_tree(FIXTURE_SPECS)))
    out = tmp_path / "out"
    for path, content in files.items():
        (out / path).parent.mkdir(parents=True, exist_ok=True)
        (out / path).write_bytes(content)
    with browser.chromium(tmp_path / "profile") as driver:
        driver.get((out / "catalog" / "specs" / "fixture-ratio-bad.html").as_uri())
        text = driver.find_element(By.TAG_NAME, "body").text
        assert "<b>bold</b>" in text
        assert "{{ $labels.x }}" in text
        assert driver.find_elements(By.TAG_NAME, "b") == []
    shutil.rmtree(out)
