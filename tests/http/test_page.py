"""The page in a real browser: Debian's Chromium, driven by Playwright, against a real
``rifflux serve``. A person types a query, sees hits, moves with the keyboard, opens
one and reads its lines with the note's backlinks, and watches a reindex's progress;
narrows the hits by folder, tag and age, which the address keeps; and the page asks
nothing of any host but the server.

Chromium comes from the system (``apt-get install chromium``; Playwright's own
download does not work here). Without it the tests are skipped, unless
``RIFFLUX_REQUIRE_BROWSER=1`` (set by ``.ci/run``), when they fail.
"""

from __future__ import annotations

import os
import shutil
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any
from urllib.parse import parse_qs, urlsplit

import httpx2
import pytest

from ..helpers import write, write_pdf
from ..serving import Served, serving, until

CHROMIUM = os.environ.get("RIFFLUX_CHROMIUM") or shutil.which("chromium") or "/usr/bin/chromium"
ARGS = ["--headless", "--no-sandbox", "--disable-gpu", "--disable-background-networking",
        "--disable-component-update", "--disable-sync", "--no-first-run"]
BIG = 2500  # files in the folder whose reindex the progress bar follows


def _no_browser(why: str) -> None:
    if os.environ.get("RIFFLUX_REQUIRE_BROWSER") == "1":
        pytest.fail(f"RIFFLUX_REQUIRE_BROWSER=1 but {why}: apt-get install chromium, and pip "
                    "install -e '.[test]' (playwright)")
    pytest.skip(f"{why} (apt-get install chromium to run the page tests)")


@pytest.fixture(scope="module")
def browser() -> Iterator[Any]:
    if not Path(CHROMIUM).exists():
        _no_browser(f"no Chromium at {CHROMIUM}")
    try:
        from playwright.sync_api import sync_playwright
    except ImportError:
        _no_browser("the playwright package is not installed")
    with sync_playwright() as p:
        chromium = p.chromium.launch(executable_path=CHROMIUM, args=ARGS)
        try:
            yield chromium
        finally:
            chromium.close()


@pytest.fixture(scope="module")
def server(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Served]:
    root = tmp_path_factory.mktemp("page")
    notes = root / "notes"
    write(notes, "retry.md", "# Retry policy\n\nIntro line.\n\n## Backoff\n\n"
          "Wait twice as long after every failure, with jitter.\nThen give up after five.\n")
    write(notes, "incident.md", "# Incident 42\n\nThe outage came from a retry storm; see "
          "[[retry]] for the backoff we use now.\n")
    write(notes, "lunch.md", "# Lunch\n\nSoup on Mondays. #food\n")
    write_pdf(notes / "birds.pdf", ["Owls of the valley\nThe barn owl hunts at dusk.",
                                    "Falcons\nThe kestrel hovers over the verge,\n"
                                    "then drops on a vole."], outline=["Owls", "Falcons"])
    for i in range(BIG):
        write(root / "big", f"b{i:04d}.md", f"# Big {i}\n\nFiller text number {i}.\n")
    with serving(root / "index.db", "--watch", str(notes)) as served:
        with httpx2.Client(base_url=served.url) as http:
            until(lambda: http.get("/api/status").json()["files"] == 4)
        yield served


@pytest.fixture
def page(browser: Any) -> Iterator[Any]:
    context = browser.new_context(viewport={"width": 1280, "height": 800})
    tab = context.new_page()
    tab.set_default_timeout(20_000)
    try:
        yield tab
    finally:
        context.close()


def test_typing_a_query_shows_hits_and_enter_opens_one_in_context(
        page: Any, server: Served) -> None:
    page.goto(server.url)
    page.locator("#results").click()  # (away from the box, which has the focus at first)
    page.keyboard.press("/")
    assert page.evaluate("document.activeElement.id") == "q"
    page.keyboard.type("retry backoff")
    first = page.locator(".hit").first
    first.wait_for()
    assert "retry.md:" in first.locator(".where").inner_text()
    assert first.locator(".snippet mark").count() >= 1
    assert "selected" in (first.get_attribute("class") or "")
    assert page.evaluate("document.activeElement.id") == "q"
    page.keyboard.press("ArrowDown")  # (the first hit is selected already: the second)
    second = page.locator(".hit").nth(1)
    assert "selected" in (second.get_attribute("class") or "")
    assert "selected" not in (first.get_attribute("class") or "")
    page.keyboard.press("ArrowUp")
    assert "selected" in (first.get_attribute("class") or "")
    page.keyboard.press("Enter")
    lines = page.locator("#lines .ln.in")
    lines.first.wait_for()
    assert "twice as long" in page.locator("#lines").inner_text()
    page.locator("#backlinks li a").first.wait_for()
    assert "incident.md" in page.locator("#backlinks").inner_text()
    assert "retry storm" in page.locator("#backlinks").inner_text()
    assert "incident.md" in page.locator("#neighbors").inner_text()


def test_a_query_in_the_address_is_searched_at_once(page: Any, server: Served) -> None:
    page.goto(server.url + "?q=soup&mode=lexical")
    page.locator(".hit").first.wait_for()
    assert page.locator(".hit").count() == 1
    assert "lunch.md" in page.locator(".hit .where").inner_text()
    assert page.locator("#mode").input_value() == "lexical"
    page.locator("#status").get_by_text("files").wait_for()


def test_a_pdf_hit_opens_at_its_page_with_the_hit_marked(page: Any, server: Served) -> None:
    page.goto(server.url + "?q=kestrel+hovers&mode=lexical")
    hit = page.locator(".hit").first
    hit.wait_for()
    assert "birds.pdf · page 2" in hit.locator(".where").inner_text()
    hit.click()
    page.locator("#lines .ln.in").first.wait_for()
    shown = page.locator("#lines").inner_text()
    assert "kestrel hovers" in shown and "barn owl" not in shown  # page 2, not page 1
    assert "kestrel" in page.locator("#lines .ln.in").first.inner_text() or \
        "Falcons" in page.locator("#lines .ln.in").first.inner_text()
    link = page.locator("#note-head a.open-file")
    assert "page 2" in link.inner_text()
    href = link.get_attribute("href") or ""
    assert href.endswith("#page=2"), href
    served = page.request.get(server.url.rstrip("/") + href.split("#")[0])
    assert served.status == 200
    assert served.headers["content-type"] == "application/pdf"
    assert served.body().startswith(b"%PDF-")


def test_the_progress_bar_moves_while_a_reindex_runs(page: Any, server: Served) -> None:
    page.goto(server.url)
    page.locator("#status").get_by_text("files").wait_for()
    page.evaluate("""() => {
        window.seen = [];
        const bar = document.getElementById('progress');
        new MutationObserver(() => window.seen.push([bar.hidden,
            Number(bar.getAttribute('aria-valuenow')),
            document.getElementById('progress-text').textContent]))
          .observe(bar, {attributes: true, subtree: true, childList: true});
    }""")
    with httpx2.Client(base_url=server.url) as http:
        started = http.post("/api/reindex", json={"path": str(server.db.parent / "big")})
        assert started.status_code == 202
    page.wait_for_function("window.seen.some(s => !s[0])")  # shown
    page.wait_for_function("window.seen.length > 0 && window.seen[window.seen.length - 1][0]",
                           timeout=120_000)  # and hidden again when the job is done
    seen = page.evaluate("window.seen")
    shown = [(value, text) for hidden, value, text in seen if not hidden]
    values = [value for value, _ in shown]
    assert len(set(values)) >= 3, shown  # it moved
    assert any(0 < v < 100 for v in values)
    assert any("indexing" in text for _, text in shown)
    page.locator("#status").get_by_text(f"{BIG + 4:,} files").wait_for()


# ---------------------------------------------------------------- filters

#: Three notes that each filter tells apart (a folder, a tag, an old modification time).
FILTERED = {"ops/old.md": ("current", True), "ops/new.md": (None, False),
            "dev/client.md": ("current", False)}


@pytest.fixture(scope="module")
def filtered(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Served]:
    root = tmp_path_factory.mktemp("filters")
    notes = root / "notes"
    long_ago = time.time() - 400 * 86400
    for rel, (tag, old) in FILTERED.items():
        tags = f"tags: [{tag}]\n" if tag else ""
        path = write(notes, rel, f"---\n{tags}---\n# {rel}\n\nThe retry rules of {rel}.\n")
        if old:
            os.utime(path, (long_ago, long_ago))
    with serving(root / "index.db", "--watch", str(notes)) as served:
        with httpx2.Client(base_url=served.url) as http:
            until(lambda: http.get("/api/status").json()["files"] == len(FILTERED))
        yield served


def _shown(page: Any, paths: set[str]) -> None:
    """Waits until the hits shown are those of ``paths`` (the answer comes when it comes)."""
    script = """(want) => {
        const shown = [...document.querySelectorAll('.hit .where')]
            .map((n) => n.textContent.split(':')[0]).sort();
        return JSON.stringify(shown) === JSON.stringify(want);
    }"""
    from playwright.sync_api import TimeoutError as NotShown

    try:
        page.wait_for_function(script, arg=sorted(paths))
    except NotShown:  # (say what was shown instead)
        shown = page.locator(".hit .where").all_inner_texts()
        raise AssertionError(f"shown {shown}, expected {sorted(paths)}") from None


def test_the_folder_tag_and_age_filters_narrow_the_hits_and_stay_in_the_address(
        page: Any, filtered: Served) -> None:
    asked: list[str] = []
    page.on("request", lambda request: asked.append(request.url))
    page.goto(filtered.url)
    page.locator("#q").fill("retry rules")
    _shown(page, set(FILTERED))
    page.locator("#paths").fill("ops/**")
    page.locator("#paths").press("Tab")  # (a filter applies when it changes)
    _shown(page, {"ops/old.md", "ops/new.md"})
    page.locator("#paths").fill("")
    page.locator("#tag").fill("current")
    page.locator("#tag").press("Tab")
    _shown(page, {"ops/old.md", "dev/client.md"})
    page.locator("#tag").fill("")
    page.locator("#since").select_option("30d")
    _shown(page, {"ops/new.md", "dev/client.md"})
    page.locator("#paths").fill("ops/**")
    page.locator("#paths").press("Tab")
    _shown(page, {"ops/new.md"})  # (together: each narrows what the others left)
    assert parse_qs(urlsplit(page.url).query) == {
        "q": ["retry rules"], "paths": ["ops/**"], "modified_after": ["30d"]}
    page.reload()  # the address holds the search and its filters
    _shown(page, {"ops/new.md"})
    assert (page.locator("#paths").input_value(), page.locator("#since").input_value()) == \
        ("ops/**", "30d")
    page.locator("#since").select_option("")
    page.locator("#tag").fill("nosuchtag")
    page.locator("#tag").press("Tab")
    page.locator("#results .empty").get_by_text("filters").wait_for()  # says why: none
    assert asked and all(url.startswith(filtered.url) for url in asked), \
        [url for url in asked if not url.startswith(filtered.url)]  # nothing from elsewhere


def test_what_an_answer_says_of_itself_is_shown_above_its_hits_and_nothing_is_missing(
        page: Any, server: Served) -> None:
    errors: list[str] = []
    page.on("console", lambda m: errors.append(m.text) if m.type == "error" else None)
    page.on("response", lambda r: errors.append(f"{r.status} {r.url}")
            if r.status >= 400 else None)
    page.set_viewport_size({"width": 1280, "height": 900})
    page.goto(server.url + "?q=zzqxj%20florbnax")  # (no note holds these words)
    page.locator(".hit").first.wait_for()
    notice = page.locator("#results .notice")
    assert "only close in meaning" in notice.inner_text()
    first_hit = page.locator(".hit").first.bounding_box()
    box = notice.bounding_box()
    assert box is not None and first_hit is not None
    assert box["y"] + box["height"] <= first_hit["y"] and box["y"] < 900  # seen at once
    page.wait_for_load_state("networkidle")
    assert errors == []  # (a 404 for /favicon.ico was one in every browser)
    with httpx2.Client(base_url=server.url) as http:
        icon = http.get("/favicon.ico")
    assert icon.status_code == 200 and icon.headers["content-type"].startswith("image/svg")


# ---------------------------------------------------------------- the git history


@pytest.fixture(scope="module")
def handbook(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Served]:
    """``rifflux serve`` watching a real git repository: three commits by two authors."""
    from ..gitrepo import handbook as made

    root = tmp_path_factory.mktemp("history")
    repo = made(root)
    with serving(root / "index.db", "--watch", str(repo)) as served:
        with httpx2.Client(base_url=served.url) as http:
            until(lambda: len(http.get("/api/history", params={
                "query": "deployment retry onboarding", "mode": "lexical"}).json()[
                    "results"]) == 3)
        yield served


def _titles(page: Any, titles: set[str]) -> None:
    """Waits until the commits shown are those titled ``titles``."""
    script = """(want) => {
        const shown = [...document.querySelectorAll('.commit-hit .title')]
            .map((n) => n.lastChild.textContent).sort();
        return JSON.stringify(shown) === JSON.stringify(want);
    }"""
    from playwright.sync_api import TimeoutError as NotShown

    try:
        page.wait_for_function(script, arg=sorted(titles))
    except NotShown:
        shown = page.locator(".commit-hit .title").all_inner_texts()
        raise AssertionError(f"shown {shown}, expected {sorted(titles)}") from None


ALL = {"Add the deployment notes", "Introduce a retry policy for uploads",
       "Write the onboarding guide"}


def test_the_history_view_searches_commits_with_filters_and_opens_one(
        page: Any, handbook: Served) -> None:
    page.goto(handbook.url)
    page.locator("#view-history").click()
    assert page.locator("#history").is_visible() and not page.locator("#search").is_visible()
    page.locator("#hmode").select_option("lexical")
    page.locator("#hq").fill("retry policy")
    first = page.locator(".commit-hit").first
    first.wait_for()
    assert first.locator(".title").inner_text().endswith("Introduce a retry policy for uploads")
    short = first.locator(".hash").inner_text()
    assert len(short) == 10 and all(c in "0123456789abcdef" for c in short)
    assert first.locator(".who").inner_text() == "Grace Hopper · 2024-03-05"
    assert "M docs/deploy.md +1 −0" in first.locator(".paths").inner_text()
    match = first.locator(".match")
    assert match.locator(".file").inner_text().startswith("docs/deploy.md @@ ")
    assert "Retry" in match.locator("mark").first.inner_text()
    assert first.locator(".scores").inner_text().startswith("score ")
    assert "words #1 (bm25 " in first.locator(".scores").inner_text()

    page.locator("#hq").fill("deployment onboarding retry notes guide")  # (every commit)
    _titles(page, ALL)
    page.locator("#hauthor").fill("grace")
    page.locator("#hauthor").press("Tab")  # (a filter applies when it changes)
    _titles(page, {"Introduce a retry policy for uploads"})
    page.locator("#hauthor").fill("")
    page.locator("#hpaths").fill("docs/onboarding.md")
    page.locator("#hpaths").press("Tab")
    _titles(page, {"Write the onboarding guide"})
    page.locator("#hpaths").fill("")
    page.locator("#hsince").fill("2024-01-03")
    page.locator("#hbefore").fill("2024-05-01")
    page.locator("#hbefore").press("Tab")
    _titles(page, {"Introduce a retry policy for uploads"})
    assert parse_qs(urlsplit(page.url).query) == {
        "view": ["history"], "q": ["deployment onboarding retry notes guide"],
        "mode": ["lexical"], "since": ["2024-01-03"], "before": ["2024-05-01"]}
    page.reload()  # the address holds the history's search and its filters
    _titles(page, {"Introduce a retry policy for uploads"})
    assert page.locator("#hsince").input_value() == "2024-01-03"

    page.locator("#hq").focus()  # the commit, whole: keyboard first, as the notes' hits
    page.keyboard.press("ArrowDown")
    page.keyboard.press("Enter")
    head = page.locator("#commit-head h2")
    head.get_by_text("Introduce a retry policy for uploads").wait_for()
    assert "Grace Hopper <grace@example.org>" in page.locator("#commit-head").inner_text()
    body = page.locator("#commit-body")
    assert "Uploads failed on flaky links" in body.locator(".body").inner_text()
    assert "docs/deploy.md" in body.locator(".paths").inner_text()
    assert page.locator("#change .add").first.inner_text().strip() == \
        "+Retry uploads three times."
    assert page.locator("#change .hunk").count() == 1

    page.locator("#hsince").fill("next tuesday")  # a bad filter says what to give
    page.locator("#hsince").press("Tab")
    page.locator("#results .empty").get_by_text("since").wait_for()


def test_a_note_hit_shows_the_commits_that_last_changed_its_lines(
        page: Any, handbook: Served) -> None:
    page.goto(handbook.url + "?q=retry+uploads&mode=lexical")
    hit = page.locator(".hit").first
    hit.wait_for()
    assert hit.locator(".where").inner_text().startswith("docs/deploy.md:")
    hit.locator("button.lines-history").click()
    items = page.locator("#commit .line-history li")
    items.first.wait_for()
    assert page.locator("#commit-head h2").inner_text().startswith("History of docs/deploy.md:")
    shown = {items.nth(i).locator("a").inner_text(): items.nth(i).inner_text()
             for i in range(items.count())}
    retry = next(text for title, text in shown.items() if "retry policy" in title)
    first = next(text for title, text in shown.items() if "deployment notes" in title)
    assert "Grace Hopper · 2024-03-05 · lines 4" in retry  # (the line it added)
    assert "lines 1, 2, 3" in first
    page.locator("#commit .line-history a", has_text="retry policy").click()
    page.locator("#commit-head h2").get_by_text("Introduce a retry policy").wait_for()
    assert page.locator("#change .add").first.inner_text().strip() == \
        "+Retry uploads three times."
    assert page.locator("#commit .line-history li").count() == len(shown)  # (still there)
    page.locator("#view-history").click()  # the notes' search left for the history's
    assert page.locator("#hq").is_visible() and page.locator("#commit").is_hidden()
