"""The inspector in a real headless browser: Debian's chromium driven by Playwright.

Every page loads with no console error on an empty and on a seeded memory, is
screenshotted at 1280x800 and 400x800 under build/ui-screenshots/, and passes
axe-core (vendored under tests/support/axe/) with no serious or critical violation.
Without chromium the tests skip, naming the command that installs it; CI installs it.
"""

from __future__ import annotations

import os
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from kenning_encounter.store.infusion_log import session_tag
from kenning_encounter.ui import access
from tests.e2e.conftest import ROOT, RunningServer, run_server
from tests.ui.conftest import BOB, Seeded

CHROMIUM = "/usr/bin/chromium"
INSTALL = "apt-get install -y chromium && .venv/bin/pip install playwright (or make install)"
AXE = ROOT / "tests" / "support" / "axe" / "axe.min.js"
SHOTS = ROOT / "build" / "ui-screenshots"
SIZES = ((1280, 800), (400, 800))

if not Path(CHROMIUM).exists():
    if os.environ.get("CI") == "true":  # CI installs it (make install): a skip there hides a gap
        raise RuntimeError(f"chromium is not installed at {CHROMIUM}: {INSTALL}")
    pytest.skip(f"chromium is not installed at {CHROMIUM}: {INSTALL}", allow_module_level=True)
sync_api = pytest.importorskip("playwright.sync_api", reason=f"playwright is missing: {INSTALL}")


@pytest.fixture(scope="module")
def browser() -> Iterator[Any]:
    with sync_api.sync_playwright() as pw:
        launched = pw.chromium.launch(executable_path=CHROMIUM, args=["--no-sandbox"])
        try:
            yield launched
        finally:
            launched.close()


def _visit(browser: Any, server: RunningServer, path: str, shot: str) -> None:
    """Load the page at each size: no console error, a screenshot, no serious axe finding."""
    for width, height in SIZES:
        # Bypassed only to inject axe: the pages themselves run no script.
        context = browser.new_context(viewport={"width": width, "height": height}, bypass_csp=True)
        page = context.new_page()
        errors: list[str] = []
        page.on(
            "console", lambda m, seen=errors: seen.append(m.text) if m.type == "error" else None
        )
        page.on("pageerror", lambda e, seen=errors: seen.append(str(e)))
        try:
            reply = page.goto(server.base + path, wait_until="load")
            assert reply is not None and reply.status == 200, path
            SHOTS.mkdir(parents=True, exist_ok=True)
            page.screenshot(path=str(SHOTS / f"{shot}-{width}x{height}.png"), full_page=True)
            page.add_script_tag(content=AXE.read_text(encoding="utf-8"))
            found = page.evaluate("async () => (await axe.run(document)).violations")
            bad = [
                f"{v['id']} ({v['impact']}): {v['help']}"
                for v in found
                if v["impact"] in ("serious", "critical")
            ]
            assert not bad, (path, width, bad)
            assert not errors, (path, width, errors)
        finally:
            context.close()


def test_every_page_on_an_empty_memory(browser: Any, empty: RunningServer) -> None:
    for path, shot in (
        ("/ui/", "empty-spine"),
        ("/ui/search", "empty-search"),
        ("/ui/search?q=anything", "empty-search-hits"),
        ("/ui/orient", "empty-orient"),
        ("/ui/log", "empty-log"),
    ):
        _visit(browser, empty, path, shot)


def test_every_page_on_a_seeded_memory(browser: Any, full: RunningServer, seeded: Seeded) -> None:
    for path, shot in (
        ("/ui/", "spine"),
        (f"/ui/node/{seeded.ids['bob kiln theory']}", "node"),
        ("/ui/search?q=kiln+glaze", "search"),
        ("/ui/search?q=kiln+glaze&history=1", "search-history"),
        ("/ui/orient", "orient"),
        ("/ui/log", "log"),
        (f"/ui/log/{session_tag(BOB)}", "log-session"),
    ):
        _visit(browser, full, path, shot)


def test_the_pages_are_keyboard_navigable(browser: Any, full: RunningServer) -> None:
    """Tab reaches the skip link first, Enter on it moves focus into the content, and the
    navigation's links are reached in order."""
    context = browser.new_context(viewport={"width": 1280, "height": 800})
    page = context.new_page()
    try:
        page.goto(full.base + "/ui/")
        page.keyboard.press("Tab")
        assert page.evaluate("document.activeElement.textContent") == "Skip to content"
        page.keyboard.press("Enter")
        assert page.evaluate("document.activeElement.id") == "main"
        labels: list[str] = []
        page.focus("a.skip")
        for _ in range(5):
            page.keyboard.press("Tab")
            labels.append(page.evaluate("document.activeElement.textContent"))
        assert labels == ["kenning-encounter", "Spine", "Search", "Orient", "Infusion log"]
        page.keyboard.press("Enter")  # on the focused "Infusion log"
        page.wait_for_url("**/ui/log")
    finally:
        context.close()


def test_orient_is_keyboard_navigable(browser: Any, full: RunningServer) -> None:
    """From the skip link, Tab goes to the page's first link, a node the panel names; the
    charts take no tab stops of their own."""
    context = browser.new_context(viewport={"width": 1280, "height": 800})
    page = context.new_page()
    try:
        page.goto(full.base + "/ui/orient")
        page.keyboard.press("Tab")
        page.keyboard.press("Enter")
        page.keyboard.press("Tab")
        href = page.evaluate("document.activeElement.getAttribute('href')")
        assert href.startswith("/ui/node/"), href
        assert page.evaluate("document.activeElement.closest('svg')") is None
        page.keyboard.press("Enter")
        page.wait_for_url(f"**{href}")
    finally:
        context.close()


def test_a_browser_signs_in_with_the_token(
    browser: Any, tmp_path_factory: pytest.TempPathFactory
) -> None:
    """Off loopback: refused without it, HTTP Basic with the token as the password, and
    the one-time code that leaves a cookie and the clean /ui/ behind."""
    token = "ui-browser-sign-in-3e7d1c"
    with run_server(
        tmp_path_factory.mktemp("ui-browser-token"),
        "--host",
        "0.0.0.0",
        env={"KENNING_ENCOUNTER_TOKEN": token},
    ) as server:
        plain = browser.new_context()
        try:
            # Asked to sign in and given nothing, headless chromium gives up on the page.
            with pytest.raises(sync_api.Error, match="ERR_INVALID_AUTH_CREDENTIALS"):
                plain.new_page().goto(server.base + "/ui/")
        finally:
            plain.close()
        basic = browser.new_context(http_credentials={"username": "me", "password": token})
        try:
            assert basic.new_page().goto(server.base + "/ui/orient").status == 200
        finally:
            basic.close()
        signed = browser.new_context()
        try:
            page = signed.new_page()
            reply = page.goto(f"{server.base}/ui/login?code={access.login_code(token)}")
            assert reply is not None and reply.status == 200
            assert page.url == f"{server.base}/ui/"
            assert page.goto(server.base + "/ui/orient").status == 200
            cookie = next(c for c in signed.cookies() if c["name"] == access.COOKIE)
            assert cookie["httpOnly"] and cookie["sameSite"] == "Strict"
        finally:
            signed.close()
