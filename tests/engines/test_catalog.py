"""The catalog in a real browser: every spec, alert and link present, no console error, links resolve.

Headless Chromium (Debian's, installed by the Makefile) loads every page of the catalog
from disk, as a user opening ``generated/catalog/index.html`` would. The rendered DOM must
hold each spec with a link to its page, each alert of a spec on its page, and every
internal link must point at a file (and an element id) that exists; the browser must log
no error; a screenshot of the index must not be blank. Hostile spec text is shown as
text, never as markup.
"""

from __future__ import annotations

import json
import shutil
import urllib.parse
from collections.abc import Iterator
from pathlib import Path

import pytest
from selenium.common.exceptions import NoAlertPresentException
from selenium.webdriver.chrome.webdriver import WebDriver
from selenium.webdriver.common.by import By

from compiler.model import SLO, Model
from compiler.model.queries import source_selectors
from compiler.plan import plan
from compiler.targets import catalog
from tests import browser
from tests.conftest import SLO_RELATIVE, make_spec_tree
from tests.support import FIXTURE_SPECS, LIBRARY_SPECS, REPO_ROOT, compile_tree

CATALOG = REPO_ROOT / "generated" / "catalog"


@pytest.fixture(scope="module")
def library() -> Model:
    return compile_tree(LIBRARY_SPECS)


@pytest.fixture(scope="module")
def driver(tmp_path_factory: pytest.TempPathFactory) -> Iterator[WebDriver]:
    """One headless Chromium for the module's tests (starting one takes seconds)."""
    with browser.chromium(tmp_path_factory.mktemp("profile")) as started:
        yield started


@pytest.fixture(scope="module")
def pages(driver: WebDriver) -> dict[str, dict[str, object]]:
    """Every catalog page as the browser rendered it: title, text, links, element ids, console log."""
    loaded: dict[str, dict[str, object]] = {}
    for path in sorted(CATALOG.rglob("*.html")):
        driver.get(path.as_uri())
        loaded[path.relative_to(CATALOG).as_posix()] = {
            "title": driver.title,
            "text": driver.find_element(By.TAG_NAME, "body").text,
            # One script per page, not a WebDriver round trip per element: ``a.href`` is the resolved
            # URL, what Selenium's get_attribute("href") returns.
            "links": driver.execute_script("return Array.from(document.querySelectorAll('a'), a => a.href || '')"),
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


def test_hostile_spec_text_is_shown_as_text(tmp_path: Path, driver: WebDriver) -> None:
    """The fixture specs carry <b>bold</b> and {{ templates }} in their text: the browser shows them literally."""
    files = catalog.render(plan(compile_tree(FIXTURE_SPECS)))
    out = tmp_path / "out"
    for path, content in files.items():
        (out / path).parent.mkdir(parents=True, exist_ok=True)
        (out / path).write_bytes(content)
    driver.get((out / "catalog" / "specs" / "fixture-ratio-bad.html").as_uri())
    text = driver.find_element(By.TAG_NAME, "body").text
    assert "<b>bold</b>" in text
    assert "{{ $labels.x }}" in text
    assert driver.find_elements(By.TAG_NAME, "b") == []
    shutil.rmtree(out)


# -- search and sort (issue 28 item 10) --------------------------------------------------------


def visible_rows(driver: WebDriver) -> list[str]:
    """The data-spec of each shown row of the signals table, in the order shown."""
    return list(
        driver.execute_script(
            "return Array.from(document.querySelectorAll('#signals-table tbody tr'))"
            ".filter(r => !r.hidden && r.offsetParent !== null).map(r => r.dataset.spec)"
        )
    )


def column(driver: WebDriver, index: int) -> list[str]:
    return list(
        driver.execute_script(
            "return Array.from(document.querySelectorAll('#signals-table tbody tr'), "
            f"r => r.cells[{index}].textContent.trim())"
        )
    )


def search(driver: WebDriver, text: str) -> None:
    box = driver.find_element(By.ID, "search")
    box.clear()
    box.send_keys(text)


def searched_words(slo: SLO, alerts: tuple[str, ...]) -> str:
    metrics = [s.metric for s in source_selectors(slo) if s.metric]
    return "\n".join([slo.name, slo.owner.name, slo.family, slo.description, *alerts, *metrics]).lower()


def test_typing_in_the_search_box_hides_the_rows_that_do_not_match(
    library: Model, tmp_path: Path, driver: WebDriver
) -> None:
    """A metric, an alert name and a team each leave exactly the specs that carry it, from ``file://``."""
    compiled = plan(library)
    words = {spec.slo.name: searched_words(spec.slo, spec.alert_names) for spec in compiled}
    some = compiled.of("apiserver-write-latency")
    metric = next(s.metric for s in source_selectors(some.slo) if s.metric)
    driver.get((CATALOG / "index.html").as_uri())
    assert len(visible_rows(driver)) == len(words)
    for term in (metric, some.alert_names[0], "platform-observability", "etcd latency"):
        search(driver, term)
        expected = {name for name, text in words.items() if all(t in text for t in term.lower().split())}
        assert 0 < len(expected) < len(words), term
        assert set(visible_rows(driver)) == expected, term
        count = driver.find_element(By.ID, "search-count").text
        assert count == f"{len(expected)} of {len(words)} signals"
    search(driver, "no-such-signal-anywhere")
    assert visible_rows(driver) == []
    driver.find_element(By.ID, "search").clear()
    driver.find_element(By.ID, "search").send_keys(" ")
    assert len(visible_rows(driver)) == len(words)
    errors = [e for e in driver.get_log("browser") if e.get("level") == "SEVERE"]  # type: ignore[no-untyped-call]
    assert errors == []


def test_clicking_a_header_sorts_the_table_and_sets_aria_sort(tmp_path: Path, driver: WebDriver) -> None:
    driver.get((CATALOG / "index.html").as_uri())
    headers = driver.find_elements(By.CSS_SELECTOR, "#signals-table thead th")
    team = next(h for h in headers if h.text.startswith("Team"))
    team.find_element(By.TAG_NAME, "button").click()
    teams = column(driver, 2)
    assert teams == sorted(teams) and len(set(teams)) > 1
    assert team.get_attribute("aria-sort") == "ascending"
    assert {h.get_attribute("aria-sort") for h in headers if h != team} == {"none"}
    team.find_element(By.TAG_NAME, "button").click()
    assert column(driver, 2) == sorted(teams, reverse=True)
    assert team.get_attribute("aria-sort") == "descending"
    signal = headers[0]
    signal.find_element(By.TAG_NAME, "button").click()
    names = column(driver, 0)
    assert names == sorted(names)
    assert signal.get_attribute("aria-sort") == "ascending" and team.get_attribute("aria-sort") == "none"


def test_without_the_script_every_row_shows_and_alert_names_do_not_wrap(tmp_path: Path, driver: WebDriver) -> None:
    """The search box is hidden until the script runs; every row is in the HTML. An alert name is one line,
    in a table that scrolls sideways instead (was: names broke over lines in narrow columns)."""
    html = (CATALOG / "index.html").read_text(encoding="utf-8")
    assert '<div class="search" id="search-box" hidden>' in html
    assert "<tr data-spec=" in html and "<tr hidden" not in html
    driver.set_window_size(800, 1000)
    try:
        driver.get((CATALOG / "index.html").as_uri())
        lines = driver.execute_script(
            "return Array.from(document.querySelectorAll('.alert-name'), e => e.getClientRects().length)"
        )
        assert lines and set(lines) == {1}
        scroll = driver.execute_script(
            "const s = document.querySelector('.scroll'); return [s.scrollWidth, s.clientWidth, "
            "getComputedStyle(s).overflowX]"
        )
        assert scroll[0] > scroll[1] and scroll[2] == "auto"
    finally:
        driver.set_window_size(1280, 1600)


HOSTILE = "</script><script>window.pwned = 1; alert(1)</script><!-- \u2028 \u2029 & done"


def test_hostile_spec_text_neither_breaks_the_index_nor_runs(tmp_path: Path, driver: WebDriver) -> None:
    specs = make_spec_tree(tmp_path / "specs")
    spec = specs / SLO_RELATIVE
    quoted = json.dumps(HOSTILE)  # a YAML double-quoted scalar reads JSON's escapes
    spec.write_text(
        spec.read_text(encoding="utf-8").replace(
            "description: Cluster DNS answers without SERVFAIL.", f"description: {quoted}"
        ),
        encoding="utf-8",
    )
    out = tmp_path / "out"
    for path, content in catalog.render(plan(compile_tree(specs))).items():
        (out / path).parent.mkdir(parents=True, exist_ok=True)
        (out / path).write_bytes(content)
    index = (out / "catalog" / "index.html").read_text(encoding="utf-8")
    assert index.count("</script>") == 2
    driver.get((out / "catalog" / "index.html").as_uri())
    with pytest.raises(NoAlertPresentException):
        driver.switch_to.alert.accept()
    assert driver.execute_script("return window.pwned === undefined")
    embedded = driver.execute_script("return JSON.parse(document.getElementById('catalog-index').textContent)")
    assert embedded[0]["description"] == HOSTILE
    search(driver, "pwned")
    assert visible_rows(driver) == ["dns-errors"]
    search(driver, "not in it")
    assert visible_rows(driver) == []
    errors = [e for e in driver.get_log("browser") if e.get("level") == "SEVERE"]  # type: ignore[no-untyped-call]
    assert errors == []


def test_ranges_carry_the_specs_unit() -> None:
    files = catalog.render(plan(compile_tree(FIXTURE_SPECS)))
    page = files["catalog/specs/fixture-ratio-bad.html"].decode("utf-8")
    assert "<tr><th>Normal range</th><td>at most 1%</td></tr>" in page
    assert "<tr><th>Critical range</th><td>at most 3%</td></tr>" in page
