"""The bearer token from a browser (issue #18): HTTP Basic with the token as the password,
or the cookie a one-time code sets at /ui/login. Off loopback, against a real server.

Neither way opens anything outside /ui/, the token never goes into a URL or the
server's log, and the Host and Origin rules hold for a signed-in browser as well.
"""

from __future__ import annotations

import base64
import time
from collections.abc import Iterator

import httpx
import pytest

from kenning_encounter.ui import access
from tests.e2e.conftest import RunningServer, run_server
from tests.ui.conftest import get

TOKEN = "ui-browser-token-5c1e9a0b7d3f"
HOST = "inspector.example"


def _basic(user: str, password: str) -> str:
    return "Basic " + base64.b64encode(f"{user}:{password}".encode()).decode()


@pytest.fixture(scope="module")
def guarded(tmp_path_factory: pytest.TempPathFactory) -> Iterator[RunningServer]:
    with run_server(
        tmp_path_factory.mktemp("ui-guarded"),
        "--host",
        "0.0.0.0",
        "--allowed-hosts",
        HOST,
        env={"KENNING_ENCOUNTER_TOKEN": TOKEN},
    ) as server:
        yield server


def _login(server: RunningServer, code: str) -> httpx.Response:
    return get(server, f"/ui/login?code={code}")


def test_without_the_token_a_page_asks_the_browser_to_sign_in(guarded: RunningServer) -> None:
    for path in ("/ui/", "/ui/log", "/ui/search?q=x", "/ui/static/ui.css", "/ui/login"):
        refused = get(guarded, path)
        assert refused.status_code == 401, path
        assert refused.headers["www-authenticate"].startswith("Basic realm="), path
    # Outside /ui/ the MCP answer is unchanged: a Bearer challenge, no sign-in prompt.
    assert get(guarded, "/session-start").headers["www-authenticate"] == "Bearer"


def test_basic_takes_the_token_as_the_password_only(guarded: RunningServer) -> None:
    assert get(guarded, "/ui/", authorization=_basic("anyone", TOKEN)).status_code == 200
    assert get(guarded, "/ui/", authorization=_basic("", TOKEN)).status_code == 200
    for wrong in (
        _basic(TOKEN, ""),
        _basic("anyone", TOKEN[:-1]),
        _basic("anyone", TOKEN + "x"),
        f"Basic {TOKEN}",
        "Basic !!!not-base64",
    ):
        assert get(guarded, "/ui/", authorization=wrong).status_code == 401, wrong


def test_a_one_time_code_sets_the_cookie_and_leaves_a_clean_url(guarded: RunningServer) -> None:
    code = access.login_code(TOKEN)
    signed_in = _login(guarded, code)
    assert signed_in.status_code == 303 and signed_in.headers["location"] == "/ui/"
    cookie = signed_in.headers["set-cookie"]
    assert TOKEN not in cookie and code not in cookie
    flags = [f.strip().lower() for f in cookie.split(";")]
    assert {"httponly", "samesite=strict", "path=/ui"} <= set(flags)
    value = cookie.split(";")[0]
    assert get(guarded, "/ui/", cookie=value).status_code == 200
    # Among other sites' cookies on the same host, however odd, it still opens the page.
    crowded = f'theme=dark; odd="x\\y; {value}; other=1'
    assert get(guarded, "/ui/", cookie=crowded).status_code == 200
    assert get(guarded, "/ui/log", cookie=value).status_code == 200
    # A code is taken once.
    assert _login(guarded, code).status_code == 401
    # Only /ui/ is opened by the cookie, not the memory's API.
    api = httpx.post(
        f"{guarded.base}/session-start", json={}, headers={"cookie": value}, timeout=30
    )
    assert api.status_code == 401
    basic = httpx.post(
        f"{guarded.base}/infuse", json={}, headers={"authorization": _basic("u", TOKEN)}, timeout=30
    )
    assert basic.status_code == 401
    assert TOKEN not in guarded.stderr and code not in guarded.stderr


def test_a_head_of_the_login_link_leaves_its_code_unspent(guarded: RunningServer) -> None:
    code = access.login_code(TOKEN)
    for _ in range(2):
        checked = httpx.head(f"{guarded.base}/ui/login?code={code}", timeout=30)
        assert checked.status_code == 401 and "set-cookie" not in checked.headers
    signed_in = _login(guarded, code)
    assert signed_in.status_code == 303 and signed_in.headers["set-cookie"]


def test_forged_stale_and_foreign_codes_and_cookies_are_refused(guarded: RunningServer) -> None:
    good = access.login_code(TOKEN)
    expires, nonce, mac = good.split(".")
    stale = access.login_code(TOKEN, now=time.time() - 2 * access.CODE_TTL_S)
    for code in (
        access.login_code("another-servers-token"),
        stale,
        f"{int(expires) + 3600}.{nonce}.{mac}",  # the MAC covers the expiry
        f"{expires}.{nonce}x.{mac}",
        f"{expires}.{nonce}",
        f"1%C2%B2.{nonce}.{mac}",  # a superscript digit: a digit to str.isdigit, not to int
        "",
    ):
        assert _login(guarded, code).status_code == 401, code
    forged = f"{access.COOKIE}={access.cookie_value('another-servers-token')}"
    assert get(guarded, "/ui/", cookie=forged).status_code == 401
    assert get(guarded, "/ui/", cookie=f"{access.COOKIE}={TOKEN}").status_code == 401


def test_a_signed_in_browser_at_a_spent_code_goes_on_to_the_pages(
    guarded: RunningServer,
) -> None:
    code = access.login_code(TOKEN)
    value = _login(guarded, code).headers["set-cookie"].split(";")[0]
    for path in (f"/ui/login?code={code}", "/ui/login", "/ui/login?code=junk"):
        for held in ({"cookie": value}, {"authorization": _basic("u", TOKEN)}):
            again = get(guarded, path, **held)
            assert again.status_code == 303 and again.headers["location"] == "/ui/", path
            assert "set-cookie" not in again.headers  # nothing minted without a fresh code
        assert get(guarded, path).status_code == 401, path
    forged = f"{access.COOKIE}={access.cookie_value('another-servers-token')}"
    assert get(guarded, f"/ui/login?code={code}", cookie=forged).status_code == 401


def test_the_host_and_origin_rules_hold_for_a_signed_in_browser(guarded: RunningServer) -> None:
    port = guarded.base.rsplit(":", 1)[1]
    basic = _basic("u", TOKEN)
    assert get(guarded, "/ui/", authorization=basic, host=f"{HOST}:{port}").status_code == 200
    assert get(guarded, "/ui/", authorization=basic, host="evil.test").status_code == 421
    signed_in = _login(guarded, access.login_code(TOKEN))
    value = signed_in.headers["set-cookie"].split(";")[0]
    assert get(guarded, "/ui/", cookie=value, host="evil.test").status_code == 421
    assert get(guarded, "/ui/", cookie=value, origin="http://evil.test").status_code == 403
    code = access.login_code(TOKEN)
    rebound = get(guarded, f"/ui/login?code={code}", host="evil.test")
    assert rebound.status_code == 421 and "set-cookie" not in rebound.headers


def test_on_loopback_without_a_token_login_just_goes_to_the_pages(
    tmp_path_factory: pytest.TempPathFactory,
) -> None:
    with run_server(tmp_path_factory.mktemp("ui-open")) as server:
        reply = get(server, "/ui/login?code=whatever")
        assert reply.status_code == 303 and reply.headers["location"] == "/ui/"
        assert "set-cookie" not in reply.headers
        assert get(server, "/ui/").status_code == 200
