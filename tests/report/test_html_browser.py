"""The HTML report in real headless Chromium, driven by Playwright.

Playwright (dev extra) drives the OS package's Chromium (`apt-get install chromium`; `make
browser` installs it in CI) through `executable_path`, so nothing is downloaded. The reports
are the real M5.2 gate's, passing and failing (see `conftest.py`). Screenshots of the top of
each report, a failing check and the mutation section are written to
`artifacts/screenshots/` (git-ignored) for CI to keep as artifacts.
"""

from __future__ import annotations

import shutil
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from repo_paths import REPO

from tests.report._m52 import GateRun

pytestmark = pytest.mark.browser

CHROMIUM = shutil.which("chromium") or shutil.which("chromium-browser")
SHOTS = REPO / "artifacts" / "screenshots"
FLAGS = [
    "--headless",
    "--no-sandbox",
    "--disable-gpu",
    "--disable-quic",
    "--no-first-run",
    "--disable-background-networking",
    "--disable-component-update",
    "--disable-sync",
]
VIEWPORT = {"width": 1400, "height": 900}

if CHROMIUM is None:
    pytest.skip(
        "headless Chromium is not installed (apt-get install chromium; `make browser` does it"
        " in CI)",
        allow_module_level=True,
    )
sync_api = pytest.importorskip(
    "playwright.sync_api", reason="playwright is not installed (pip install -e '.[dev]')"
)


@pytest.fixture(scope="module")
def chromium() -> Iterator[Any]:
    """One Chromium for the module (Playwright gives it a fresh temporary profile)."""
    with sync_api.sync_playwright() as pw:
        browser = pw.chromium.launch(executable_path=CHROMIUM, headless=True, args=FLAGS)
        yield browser
        browser.close()


@pytest.fixture
def browser(chromium: Any) -> Iterator[Any]:
    """A fresh context (scripts on) at a 1400 px viewport."""
    context = chromium.new_context(viewport=VIEWPORT)
    yield context
    context.close()


@pytest.fixture
def open_report(browser: Any) -> Iterator[Any]:
    pages: list[Any] = []
    errors: list[str] = []

    def _open(run: GateRun) -> Any:
        page = browser.new_page()
        page.on("pageerror", lambda e: errors.append(str(e)))
        page.on(
            "console", lambda m: errors.append(m.text) if m.type in ("error", "warning") else None
        )
        page.goto(run.files["html"].as_uri())
        pages.append(page)
        return page

    yield _open
    for page in pages:
        page.close()
    assert errors == [], "the page logged errors"


def _scroll_width(page: Any) -> tuple[int, int]:
    width: int = page.evaluate("document.scrollingElement.scrollWidth")
    inner: int = page.evaluate("window.innerWidth")
    return width, inner


_VISIBLE_JS = """els => els.map(e => {
    const box = e.getBoundingClientRect();
    return box.width > 0 && box.height > 0 && getComputedStyle(e).visibility !== "hidden";
})"""


def _visible(page: Any, selector: str) -> list[Any]:
    """The matches Playwright's `is_visible` calls visible (a non-empty box, not
    `visibility: hidden`), decided in one round trip for all of them, not one per row."""
    loc = page.locator(selector)
    shown = loc.evaluate_all(_VISIBLE_JS)
    return [loc.nth(i) for i, flag in enumerate(shown) if flag]


@pytest.mark.parametrize("which", ["m52_pass", "m52_fail"])
def test_no_horizontal_scroll_at_1400px(
    which: str, request: pytest.FixtureRequest, open_report: Any
) -> None:
    """Neither report scrolls sideways at 1400 px, as loaded nor with every disclosure open
    (all loops, groups, notes, metrics and the full kill matrices)."""
    run: GateRun = request.getfixturevalue(which)
    page = open_report(run)
    width, inner = _scroll_width(page)
    assert width <= inner, f"{which}: {width} px wide at a {inner} px viewport"
    page.evaluate("document.querySelectorAll('details').forEach(d => d.open = true)")
    width, inner = _scroll_width(page)
    assert width <= inner, f"{which} with everything open: {width} px at {inner} px"


def test_fail_count_filters_to_failed_rows(m52_fail: GateRun, open_report: Any) -> None:
    """Clicking the FAIL count shows exactly the failed checks (and their loops); clicking it
    again restores the page."""
    page = open_report(m52_fail)
    failed = m52_fail.json()["counts"]["failed"]
    before = len(_visible(page, "tr.check"))
    page.click("a.chip[data-filter=failed]")
    rows = _visible(page, "tr.check")
    assert len(rows) == failed
    assert {r.get_attribute("data-status") for r in rows} == {"failed"}
    assert {r.get_attribute("data-status") for r in _visible(page, ".row")} == {"failed"}
    assert page.locator(".match-count").inner_text() == f"{failed} matching checks"
    assert _visible(page, "details.loop[data-status=passed]") == []
    page.click("a.chip[data-filter=failed]")
    assert len(_visible(page, "tr.check")) == before
    assert page.locator(".match-count").inner_text() == ""


def test_search_finds_checks_by_code(m52_fail: GateRun, open_report: Any) -> None:
    """Typing a finding code shows every check whose row mentions it, and only those; the
    status filter narrows the search further."""
    page = open_report(m52_fail)
    carriers = {
        r["subject"]
        for r in m52_fail.json()["results"]
        if any(f["code"] == "LOAD.SYNTAX" for f in r["findings"])
    }
    total = page.locator("tr.check").count()
    page.fill(".bar input[type=search]", "load.syntax")
    rows = _visible(page, "tr.check")
    assert 1 <= len(rows) < total
    assert all("load.syntax" in r.inner_text().lower() for r in rows)
    mentioning = page.evaluate(
        "[...document.querySelectorAll('tr.check')]"
        ".filter(r => r.textContent.toLowerCase().includes('load.syntax')).length"
    )
    assert mentioning == len(rows)
    shown = {r.locator("td.subject code").inner_text().replace("\u200b", "") for r in rows}
    assert carriers <= shown
    page.click("a.chip[data-filter=error]")
    errored = _visible(page, "tr.check")
    assert {r.get_attribute("data-status") for r in errored} == {"error"}
    assert len(errored) == len(carriers)
    page.click("a.chip[data-filter=error]")
    page.fill(".bar input[type=search]", "")
    assert len(_visible(page, "tr.check")) > len(rows)


def test_page_reads_without_scripts(chromium: Any, m52_fail: GateRun) -> None:
    """With JavaScript off: problem loops are open, script-only controls are hidden, and the
    FAIL count is a link to the failed checks."""
    context = chromium.new_context(viewport=VIEWPORT, java_script_enabled=False)
    try:
        page = context.new_page()
        page.goto(m52_fail.files["html"].as_uri())
        assert _visible(page, ".bar input") == [] and _visible(page, ".bar button") == []
        assert _visible(page, "tr.check[data-status=failed]")
        assert _visible(page, "tr.check[data-status=error]")
        width, inner = _scroll_width(page)
        assert width <= inner
        page.click("a.chip[data-filter=failed]")
        assert page.url.endswith("#blockers-failed")
    finally:
        context.close()


def _shoot(page: Any, name: str) -> Path:
    SHOTS.mkdir(parents=True, exist_ok=True)
    path = SHOTS / name
    page.screenshot(path=str(path))
    return path


def test_screenshots_for_ci_artifacts(
    m52_pass: GateRun, m52_fail: GateRun, open_report: Any
) -> None:
    """Screenshots of the top of both reports, a failing check and the mutation section."""
    shots = []
    page = open_report(m52_pass)
    shots.append(_shoot(page, "pass-top.png"))
    page = open_report(m52_fail)
    shots.append(_shoot(page, "fail-top.png"))
    row = page.locator("tr.check[data-status=failed]").filter(has_text="GATE.EXPECTED.DRIFT")
    row.first.evaluate("e => { e.scrollIntoView(); window.scrollBy(0, -70); }")
    shots.append(_shoot(page, "fail-check.png"))
    page.evaluate("document.getElementById('loop-mutation').open = true")
    page.locator(".killmatrix").first.evaluate(
        "e => { e.scrollIntoView(); window.scrollBy(0, -70); }"
    )
    shots.append(_shoot(page, "fail-mutation.png"))
    page.locator(".killmatrix details.km-full").first.evaluate(
        "e => { e.open = true; e.scrollIntoView(); window.scrollBy(0, -70); }"
    )
    shots.append(_shoot(page, "fail-mutation-matrix.png"))
    for path in shots:
        data = path.read_bytes()
        assert data[:8] == b"\x89PNG\r\n\x1a\n" and len(data) > 10_000, path
