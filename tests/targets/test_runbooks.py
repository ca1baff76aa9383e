"""Runbooks: every alert links to a heading that exists, spec text is shown verbatim but can
neither inject HTML nor change the page's structure, and every PromQL block parses.

Markdown is checked as a reader sees it: parsed with markdown-it (CommonMark plus tables),
never by searching the raw text for what the generator meant to write.
"""

from __future__ import annotations

import functools
import itertools
import re
import shutil
from pathlib import Path
from typing import Any

import pytest
import yaml
from markdown_it import MarkdownIt
from markdown_it.token import Token

from compiler.model import Model, heartbeat, links
from compiler.plan import plan, plan_spec
from compiler.promql import parse_expr
from compiler.targets import prometheus, runbooks
from compiler.text import markdown
from tests.support import compile_tree

REPO_ROOT = Path(__file__).resolve().parents[2]
LIBRARY_SPECS = REPO_ROOT / "slo_specs"
FIXTURE_SPECS = REPO_ROOT / "tests" / "fixtures" / "specs"
TREES = {"library": LIBRARY_SPECS, "fixtures": FIXTURE_SPECS}
THRESHOLD_COLUMNS = 11

MARKDOWN = MarkdownIt("commonmark").enable("table")


# -- helpers ----------------------------------------------------------------------------


@functools.cache
def library_model(tree: str) -> Model:
    return compile_tree(TREES[tree])


@functools.cache
def rendered(tree: str) -> dict[str, str]:
    return {path: content.decode("utf-8") for path, content in runbooks.render(plan(library_model(tree))).items()}


def github_slug(text: str) -> str:
    """GitHub's heading anchor (github-slugger): lower case, punctuation dropped, spaces to '-'."""
    return re.sub(r"[^\w\- ]", "", text.lower()).replace(" ", "-")


def inline_text(token: Token) -> str:
    """What a reader sees of an inline token, with the Markdown it was written in put back.

    Code spans, emphasis and links keep their markers so the result can be compared with
    the spec text; entities and backslash escapes are already resolved by the parser.
    """
    out = []
    hrefs = []
    for child in token.children or []:
        if child.type in ("text", "html_inline") and child.content.lower() != "<br>":
            out.append(child.content)
        elif child.type == "code_inline":
            out.append(child.markup + child.content + child.markup)
        elif child.type in ("softbreak", "hardbreak") or child.type == "html_inline":
            out.append("\n")
        elif child.type in ("em_open", "em_close", "strong_open", "strong_close"):
            out.append(child.markup)
        elif child.type == "link_open":
            hrefs.append(str(child.attrs["href"]))
            out.append("[")
        elif child.type == "link_close":
            out.append(f"]({hrefs.pop()})")
        elif child.type == "image":
            out.append(f"![{child.content}]")
        else:  # pragma: no cover - a token the runbooks never produce
            raise AssertionError(f"unexpected inline token {child.type}")
    return "".join(out)


def heading_text(token: Token) -> str:
    """A heading's text content, as GitHub slugs it (no Markdown markers)."""
    return "".join(child.content for child in token.children or [] if child.type in ("text", "code_inline"))


def headings(markdown: str) -> list[tuple[str, str]]:
    """(tag, text) of every heading, in order."""
    tokens = MARKDOWN.parse(markdown)
    return [(tokens[i].tag, heading_text(tokens[i + 1])) for i, t in enumerate(tokens) if t.type == "heading_open"]


def section(tokens: list[Token], title: str) -> list[Token]:
    """The tokens after the heading ``title`` up to the next heading of the same or higher level."""
    for index, token in enumerate(tokens):
        if token.type == "heading_open" and heading_text(tokens[index + 1]) == title:
            level = int(token.tag[1])
            end = next(
                (
                    j
                    for j in range(index + 3, len(tokens))
                    if tokens[j].type == "heading_open" and int(tokens[j].tag[1]) <= level
                ),
                len(tokens),
            )
            return tokens[index + 3 : end]
    raise AssertionError(f"no heading {title!r}")


def list_items(tokens: list[Token], kind: str) -> list[str]:
    """The text of each top-level item of the first list of ``kind`` (bullet|ordered)."""
    start = next(i for i, t in enumerate(tokens) if t.type == f"{kind}_list_open")
    items, depth = [], 0
    for token in tokens[start:]:
        if token.type.endswith("_list_open"):
            depth += 1
        elif token.type.endswith("_list_close"):
            depth -= 1
            if depth == 0:
                break
        elif token.type == "inline" and depth == 1:
            items.append(inline_text(token))
    return items


def normalise(text: str) -> str:
    """Spec text as the runbook may reshape it: each line trimmed, blank lines dropped."""
    return "\n".join(line.strip() for line in text.strip().split("\n") if line.strip())


def untick(text: str) -> str:
    """Text without code-span backticks: the runbook puts commands written as plain text in code spans."""
    return text.replace("`", "")


def table_after(tokens: list[Token], title: str) -> list[list[str]]:
    """Rows (header first) of the first table under the heading ``title``, cell by cell."""
    rows: list[list[str]] = []
    inside = False
    for token in section(tokens, title):
        if token.type == "table_open":
            inside = True
        elif token.type == "table_close":
            break
        elif inside and token.type == "tr_open":
            rows.append([])
        elif inside and token.type == "inline":
            rows[-1].append(inline_text(token))
    return rows


# -- (a) links from alerts resolve --------------------------------------------------------


def test_github_slug_matches_githubs_algorithm() -> None:
    assert github_slug("APIServerListStormAboveNormalRange") == "apiserverliststormabovenormalrange"
    assert github_slug("1. Find the earliest known-bad timestamp") == "1-find-the-earliest-known-bad-timestamp"
    assert github_slug("Slice, ranges and objective") == "slice-ranges-and-objective"
    assert github_slug("snake_case & more") == "snake_case--more"


@pytest.mark.parametrize("tree", sorted(TREES))
def test_every_runbook_url_resolves_to_a_file_and_a_heading(tree: str) -> None:
    model = library_model(tree)
    files = rendered(tree)
    base = model.project.runbook_base_url + "/"
    checked = 0
    for slo in model.slos:
        for rule in prometheus.alert_rules(model, plan_spec(slo)):
            url = rule.annotations["runbook_url"]
            assert url.startswith(base), url
            name, _, fragment = url[len(base) :].partition("#")
            path = f"{links.RUNBOOKS_DIR}/{name}"
            assert path in files, f"{rule.name}: {url} names no rendered runbook"
            found = headings(files[path])
            assert fragment in [github_slug(text) for _, text in found], f"{url}: no heading with that anchor"
            assert ("h3", rule.name) in found, f"{rule.name}: no heading that is exactly the alert name"
            checked += 1
    assert checked >= len(model.slos)


@pytest.mark.parametrize("tree", sorted(TREES))
def test_headings_are_unique_in_every_file(tree: str) -> None:
    for path, text in rendered(tree).items():
        slugs = [github_slug(title) for _, title in headings(text)]
        duplicates = sorted({slug for slug in slugs if slugs.count(slug) > 1})
        assert not duplicates, f"{path}: headings share the anchors {duplicates}"
        assert len(slugs) > 3, path


@pytest.mark.parametrize("tree", sorted(TREES))
def test_index_links_every_runbook_and_nothing_else(tree: str) -> None:
    files = rendered(tree)
    tokens = MARKDOWN.parse(files[runbooks.INDEX_PATH])
    hrefs = {
        str(child.attrs["href"])
        for token in tokens
        if token.type == "inline"
        for child in token.children or []
        if child.type == "link_open"
    }
    local = {href for href in hrefs if not href.startswith("http")}
    expected = {links.runbook_path(slo) for slo in library_model(tree).slos}
    if library_model(tree).project.heartbeat is not None:  # and the heartbeat's, which no spec owns
        expected.add(heartbeat.RUNBOOK_PATH)
    assert {f"{links.RUNBOOKS_DIR}/{href}" for href in local} == expected
    assert expected <= set(files)
    families = {title for tag, title in headings(files[runbooks.INDEX_PATH]) if tag == "h3"}
    assert {slo.owner.name for slo in library_model(tree).slos} <= families


# -- (b) mitigation verbatim and in order --------------------------------------------------


@pytest.mark.parametrize("spec", [slo.name for slo in library_model("library").slos])
def test_mitigation_appears_verbatim_and_in_order(spec: str) -> None:
    slo = next(slo for slo in library_model("library").slos if slo.name == spec)
    tokens = MARKDOWN.parse(rendered("library")[links.runbook_path(slo)])
    titles = [heading_text(tokens[i + 1]) for i, t in enumerate(tokens) if t.type == "heading_open"]
    assert titles.index("Mitigation") < titles.index("Check before acting") < titles.index("Steps")
    mitigation = section(tokens, "Mitigation")
    assert untick(inline_text(mitigation[1])) == untick(normalise(slo.mitigation.summary))
    assert [untick(item) for item in list_items(section(tokens, "Check before acting"), "bullet")] == [
        untick(normalise(text)) for text in slo.mitigation.stop_conditions
    ]
    assert [untick(item) for item in list_items(section(tokens, "Steps"), "ordered")] == [
        untick(normalise(text)) for text in slo.mitigation.steps
    ]
    owner = [untick(item) for item in list_items(section(tokens, "Owner"), "bullet")]
    assert f"**Escalation for this spec:** {untick(normalise(slo.mitigation.escalation))}" in owner
    assert [untick(item) for item in list_items(section(tokens, "Owner"), "ordered")] == [
        untick(normalise(text)) for text in slo.owner.escalation
    ]


def test_shadow_specs_warn_that_they_do_not_page() -> None:
    files = rendered("fixtures")
    for slo in library_model("fixtures").slos:
        warned = "This spec does not page yet" in files[links.runbook_path(slo)]
        assert warned == (slo.mode == "shadow"), slo.name
    assert any(slo.mode == "shadow" for slo in library_model("fixtures").slos)


def test_error_budget_is_given_as_a_share_and_as_time() -> None:
    text = rendered("library")["runbooks/apiserver-read-latency.md"]
    assert "1% of events over 30d, i.e. 7h 12m of full outage" in text
    text = rendered("library")["runbooks/cluster-dns-servfail.md"]
    assert "0.1% of events over 30d, i.e. 43m 12s of full outage" in text


def test_burn_thresholds_table_lists_every_window_pair() -> None:
    model = library_model("library")
    slo = next(slo for slo in model.slos if slo.name == "node-readiness")
    rows = table_after(MARKDOWN.parse(rendered("library")[links.runbook_path(slo)]), "Thresholds")
    assert len(rows) == 1 + len(prometheus.alert_rules(model, plan_spec(slo)))
    # node-readiness burns are tickets (one node of a small pool is a 20x burn); the fleet page pages
    first_pair = ["NodeReadinessErrorBudgetBurn", "ticket", "error budget burn", "1h", "5m", "14.4x", "7.2%", "—"]
    assert rows[1][:8] == first_pair
    assert rows[-2][:3] == ["NodeReadinessNoData", "ticket", "no data"]
    assert rows[-1][:4] == ["NodeReadinessSliceVanished", "ticket", "slice vanished", "1h"]


def test_no_data_alerts_say_what_to_do_about_the_missing_data() -> None:
    """A NoData alert's section and its rule's mitigation are about the scrape, not the burn."""
    model = library_model("library")
    slo = next(slo for slo in model.slos if slo.name == "node-clock-sync")
    spec = plan(model).of(slo)
    rule = next(rule for rule in prometheus.alert_rules(model, spec) if rule.name.endswith("NoData"))
    tokens = MARKDOWN.parse(rendered("library")[links.runbook_path(slo)])
    steps = list_items(section(tokens, rule.name), "ordered")
    assert steps[0].startswith('Which source is gone: `absent(node_timex_sync_status{job="node-exporter"})`')
    assert steps[1].startswith('Is the target scraped: `up{job="node-exporter"}`')
    assert any("ServiceMonitor" in step for step in steps) and any("renamed" in step for step in steps)
    mitigation = rule.annotations["mitigation"]
    assert slo.mitigation.summary not in mitigation
    assert 'absent(node_timex_sync_status{job="node-exporter"})' in mitigation
    assert 'up{job="node-exporter"}' in mitigation and "/targets" in mitigation
    top = inline_text(section(tokens, "Mitigation")[4])
    assert f"[{rule.name}](#{links.runbook_anchor(rule.name)})" in top


def test_automation_is_named_with_its_description() -> None:
    model = library_model("fixtures")
    text = rendered("fixtures")["runbooks/fixture-quantile.md"]
    tokens = MARKDOWN.parse(text)
    automation = "".join(inline_text(t) for t in section(tokens, "Automation") if t.type == "inline")
    assert "`remediator`" in automation
    assert "mitigation_steps" in automation
    assert all(
        slo.name == "fixture-quantile" or "### Automation" not in rendered("fixtures")[links.runbook_path(slo)]
        for slo in model.slos
    )


# -- (c) hostile spec text -----------------------------------------------------------------

HOSTILE_LINES = (
    "<script>alert(1)</script> and <img src=x onerror=y> and {{ .Status }}",
    "# not a heading | pipe || double pipe",
    "```",
    "**bold** with `a|b` in code and <b>raw</b> &amp; entity",
    "---",
    "===",
    "1. not a list",
    "- not an item",
    "* not a star item",
    "+ not a plus item",
    "2) not a list either",
    "***",
    "_ _ _",
    "## not a heading either",
    "> not a quote",
    "    not indented code",
    "~~~",
    "[ref]: https://example.com/not-a-definition",
    "![pixel](https://example.com/p.png)",
    "<!-- not a comment --> trailing backslash \\",
    "",
    "",
    "unbalanced ` backtick",
)


# Block syntax on the first line (where a paragraph or list item starts) and on the last
# (the only line not ended by a hard-break backslash) of each field.
FIRST_LINES = {
    "description": "[ref]: https://example.com/not-a-definition",
    "summary": "# summary: not a heading",
    "step-1": "1. step-1: not a nested list",
    "stop-1": "> stop-1: not a quote",
    "escalation": "- escalation: not an item",
}
LAST_LINES = {
    "description": "---",
    "reason": "===",
    "summary": "* not a star item",
    "step-2": "_ _ _",
    "stop-2": "***",
    "escalation": "~~~",
    "see-also": "    indented",
}


def hostile(tag: str) -> str:
    return "\n".join((FIRST_LINES.get(tag, f"{tag}:"), *HOSTILE_LINES, LAST_LINES.get(tag, "the end")))


def benign(tag: str) -> str:
    return f"{tag}: plain text"


def write_tree(root: Path, text: Any) -> Path:
    """The fixture owners and project plus one SLO whose free text is ``text(field)``."""
    root.mkdir(parents=True)
    for name in ("owners.yaml", "project.yaml"):
        shutil.copy(FIXTURE_SPECS / name, root / name)
    spec = {
        "apiVersion": "slo-compiler/v1",
        "kind": "SLO",
        "name": "hostile",
        "family": "node-network-errors",
        "owner": "team-a",
        "description": text("description"),
        "slice": {"by": ["cluster"], "selector": '{job="kube-dns"}'},
        "sli": {
            "ratio": {"bad": 'coredns_dns_responses_total{rcode="SERVFAIL"}', "total": "coredns_dns_responses_total"}
        },
        "objective": {"target": "99.9%", "period": "30d"},
        "normal_range": {"max": 0.01, "reason": text("reason")},
        "critical_range": {"max": 0.03},
        "persistence": {"for": "10m"},
        "see_also": [text("see-also")],
        "mitigation": {
            "summary": text("summary"),
            "steps": [text("step-1"), text("step-2")],
            "stop_conditions": [text("stop-1"), text("stop-2")],
            "escalation": text("escalation"),
        },
    }
    (root / "hostile.yaml").write_text(yaml.safe_dump(spec, sort_keys=False), encoding="utf-8")
    return root


@pytest.fixture(scope="module")
def hostile_pair(tmp_path_factory: pytest.TempPathFactory) -> tuple[Model, str, str]:
    """The model and runbook of the hostile spec, and the runbook of its benign twin."""
    base = tmp_path_factory.mktemp("runbooks")
    model = compile_tree(write_tree(base / "hostile", hostile))
    twin = compile_tree(write_tree(base / "benign", benign))
    path = "runbooks/hostile.md"
    return model, runbooks.render(plan(model))[path].decode(), runbooks.render(plan(twin))[path].decode()


def test_hostile_text_renders_no_html(hostile_pair: tuple[Model, str, str]) -> None:
    _, text, _ = hostile_pair
    html = MARKDOWN.render(text)
    assert "<script" not in html.lower()
    assert "<img" not in html.lower()
    assert "<b>" not in html
    assert "<!--" not in html
    assert "&lt;script&gt;alert(1)&lt;/script&gt;" in html  # shown, not run
    assert "{{ .Status }}" in html
    assert "<strong>bold</strong>" in html  # the author's inline Markdown still works


def test_hostile_text_cannot_change_the_page_structure(hostile_pair: tuple[Model, str, str]) -> None:
    _, text, twin = hostile_pair
    blocks = [(t.type, t.tag, t.info) for t in MARKDOWN.parse(text) if t.type != "inline"]
    twin_blocks = [(t.type, t.tag, t.info) for t in MARKDOWN.parse(twin) if t.type != "inline"]
    assert blocks == twin_blocks  # no heading, list, quote, rule, fence or code block came from spec text
    assert headings(text) == headings(twin)
    assert not [title for _, title in headings(text) if "not a heading" in title]


def test_hostile_text_keeps_the_thresholds_table_shape(hostile_pair: tuple[Model, str, str]) -> None:
    model, text, _ = hostile_pair
    rows = table_after(MARKDOWN.parse(text), "Thresholds")
    assert len(rows) == 1 + len(prometheus.alert_rules(model, plan_spec(model.slos[0])))
    assert {len(row) for row in rows} == {THRESHOLD_COLUMNS}
    after_heading = text.split("## Thresholds\n", 1)[1].lstrip("\n").split("\n")
    table_lines = list(itertools.takewhile(lambda line: line.startswith("| "), after_heading))
    assert len(table_lines) == len(rows) + 1  # the delimiter row; no row was split over lines
    for line in table_lines:  # markdown-it drops surplus cells silently: count the separators
        assert len(re.findall(r"(?<!\\)\|", line)) == THRESHOLD_COLUMNS + 1, line
    reason_row = next(row for row in rows if row[2] == "normal range")
    assert reason_row[-1] == normalise(hostile("reason"))


def test_hostile_text_is_otherwise_verbatim(hostile_pair: tuple[Model, str, str]) -> None:
    model, text, _ = hostile_pair
    tokens = MARKDOWN.parse(text)
    slo = model.slos[0]
    assert list_items(section(tokens, "Steps"), "ordered") == [normalise(step) for step in slo.mitigation.steps]
    assert list_items(section(tokens, "Check before acting"), "bullet") == [
        normalise(condition) for condition in slo.mitigation.stop_conditions
    ]
    assert inline_text(section(tokens, "Mitigation")[1]) == normalise(slo.mitigation.summary)
    assert normalise(slo.description) in [inline_text(t) for t in tokens if t.type == "inline"]
    see_also = list_items(section(tokens, "Dashboard and links"), "bullet")[-1]
    assert see_also == "See also: " + normalise(hostile("see-also"))


# -- escaping primitives -------------------------------------------------------------------


def test_filters_escape_what_the_context_needs() -> None:
    assert markdown.md("# a\n\n  - b", indent=2) == "\\# a\\\n  \\- b"
    assert markdown.md("1. x 2. y\n1.5 z") == "1\\. x 2. y\\\n1.5 z"
    assert markdown.cell("a|b `c|d`\ne") == "a\\|b `c\\|d`<br>e"
    assert markdown.md("keep `<b>` and <b>") == "keep `<b>` and \\<b>"
    assert markdown.md("one ` two ``") == "one \\` two \\`\\`"
    assert markdown.md("a && b &amp; &#96; c > d\n> e") == "a && b \\&amp; \\&#96; c > d\\\n\\> e"
    assert markdown.inline("a\nb") == "a b"
    assert markdown.md("[x]: /u\n***\n_ _ _\n* y\n~~~") == "\\[x]: /u\\\n\\***\\\n\\_ _ _\\\n\\* y\\\n\\~~~"
    assert markdown.md("**bold** [link](/u) ~~del~~") == "**bold** [link](/u) ~~del~~"  # inline Markdown kept
    assert markdown.code("x `y` z") == "``x `y` z``"
    assert markdown.fence("a ```` b").split("\n")[0] == "`````promql"


def test_commands_read_as_written_in_the_source_and_on_the_page() -> None:
    step = "If it stays stale, cordon the node (kubectl cordon <node>) so no new pods land there."
    assert markdown.md(step) == step.replace("(kubectl cordon <node>)", "(`kubectl cordon <node>`)")
    assert "<code>kubectl cordon &lt;node&gt;</code>" in MARKDOWN.render(markdown.md(step))
    restart = "Restart: systemctl restart containerd && systemctl restart kubelet; watch the p99 for 10 minutes."
    assert "`systemctl restart containerd && systemctl restart kubelet`; watch" in markdown.md(restart)
    promql = 'Confirm: sum by (le) (rate(x_bucket{job="<job>"}[5m])) == 0 and kubectl get pods -A -o wide shows it.'
    assert markdown.md(promql) == (
        'Confirm: `sum by (le) (rate(x_bucket{job="<job>"}[5m])) == 0` and `kubectl get pods -A -o wide` shows it.'
    )
    assert markdown.cell("kubectl get x | grep y") == "`kubectl get x \\| grep y`"
    # prose stays prose: a program named alone, numbers and parentheses
    prose = "upgrade kubectl, then retry (default 5) in 1.29"
    assert markdown.md(prose) == prose
    # next to the author's own code span, no backticks are added (they would merge into one run)
    assert markdown.md("`a`kubectl get x") == "`a`kubectl get x"
    # a span starts only where a word does: not inside a word, a path or a name
    inside = "run xkubectl get pods, or /usr/bin/kubectl get pods, a-kubectl get x, my_rate(x) and ké rate(x[5m])"
    assert markdown.md(inside) == inside.replace("ké rate(x[5m])", "ké `rate(x[5m])`")
    several = 'Run kubectl get pods -A, then etcdctl endpoint status --cluster, then check up{job="x"} == 0.'
    assert markdown.md(several) == (
        'Run `kubectl get pods -A`, then `etcdctl endpoint status --cluster`, then check `up{job="x"} == 0`.'
    )


@pytest.mark.parametrize("tree", sorted(TREES))
def test_runbooks_hold_no_html_entities(tree: str) -> None:
    for path, text in rendered(tree).items():
        assert not re.search(r"&(?:lt|gt|amp|quot|#[0-9]+|#x[0-9a-f]+);", text, re.IGNORECASE), path


# -- (d) PromQL blocks ---------------------------------------------------------------------


def promql_blocks(text: str) -> list[str]:
    fences = [t for t in MARKDOWN.parse(text) if t.type in ("fence", "code_block")]
    assert all(t.type == "fence" and t.info == "promql" for t in fences), "a code block that is not PromQL"
    return [t.content for t in fences]


@pytest.mark.parametrize("tree", sorted(TREES))
def test_every_promql_block_parses(tree: str) -> None:
    for slo in library_model(tree).slos:
        blocks = promql_blocks(rendered(tree)[links.runbook_path(slo)])
        assert len(blocks) >= 6, slo.name
        for block in blocks:
            parse_expr(block)


def test_promql_blocks_of_the_hostile_spec_parse(hostile_pair: tuple[Model, str, str]) -> None:
    _, text, _ = hostile_pair
    blocks = promql_blocks(text)
    assert any(block.startswith("topk(5,") for block in blocks)
    assert any("slo:error_budget_remaining:ratio" in block for block in blocks)
    assert any("offset 1h" in block and "unless" in block for block in blocks)
    for block in blocks:
        parse_expr(block)


# -- (e) determinism -----------------------------------------------------------------------


@pytest.mark.parametrize("tree", sorted(TREES))
def test_rendering_is_deterministic(tree: str) -> None:
    again = runbooks.render(plan(compile_tree(TREES[tree])))
    assert {path: content.decode() for path, content in again.items()} == rendered(tree)
    assert runbooks.render(plan(library_model(tree))) == runbooks.render(plan(library_model(tree)))
    for path, text in rendered(tree).items():
        assert not re.search(r"\b20\d\d-\d\d-\d\d", text), f"{path} carries a date"
        assert text.endswith("\n") and not text.endswith("\n\n"), path
