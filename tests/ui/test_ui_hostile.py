"""The inspector's addresses as a careless user or an attacker writes them, to a real server.

A value the page cannot use is a 400 whose message names the parameter and says what
to send; a given-twice parameter is refused rather than one of its values guessed at;
an address that names nothing is a 404 that does not repeat the address at length;
and the bare /ui redirects whatever a browser says it accepts.
"""

from __future__ import annotations

import re
from html import unescape

import httpx
import pytest

from kenning_encounter.store.infusion_log import session_tag
from kenning_encounter.ui.app import HEADERS
from kenning_encounter.ui.views import ECHOED, MAX_PAGE
from tests.e2e.conftest import RunningServer
from tests.ui.conftest import BOB, get

# Digits str.isdigit takes and int() refuses or reads as another number, signs,
# numbers past the last page or past int()'s digit limit, NUL, a lone surrogate
# (UTF-8 of U+D800), broken percent-encoding, nothing at all.
BAD_PAGES = (
    "%C2%B2",  # superscript two
    "%D9%A1",  # Arabic-Indic one
    "%EF%BC%91",  # full-width one
    "-1",
    "%2B1",
    "1e3",
    "1_0",
    str(MAX_PAGE + 1),
    "9" * 5_000,
    "%00",
    "1%00",
    "%ED%A0%80",
    "%ZZ",
    "",
)
LISTINGS = ("/ui/?", "/ui/search?q=kiln&", "/ui/search?", "/ui/log?", "/ui/log/{tag}?")


def _message(reply_text: str) -> str:
    found = re.search(r"<main[^>]*>.*?<p>(.*?)</p>", reply_text, re.S)
    assert found is not None, reply_text[:500]
    return unescape(found[1])


def _refused(server: RunningServer, path: str, parameter: str) -> str:
    reply = get(server, path)
    assert reply.status_code == 400, (path, reply.status_code, reply.text[:300])
    assert reply.headers["content-type"].startswith("text/html")
    message = _message(reply.text)
    assert message.startswith(f"{parameter}: "), (path, message)
    return message


@pytest.mark.parametrize("listing", LISTINGS)
def test_a_page_number_the_page_cannot_use_is_a_400_naming_it(
    full: RunningServer, listing: str
) -> None:
    base = listing.format(tag=session_tag(BOB))
    assert get(full, f"{base}page=0").status_code == 200, base
    for value in BAD_PAGES:
        message = _refused(full, f"{base}page={value}", "page")
        assert f"from 0 to {MAX_PAGE}, e.g. page=2" in message, (value, message)


def test_search_refuses_a_page_past_its_best_hits(full: RunningServer) -> None:
    message = _refused(full, "/ui/search?q=kiln&page=5", "page")
    assert "pages 0 to 4" in message


@pytest.mark.parametrize(
    ("path", "parameter"),
    [
        ("/ui/?page=0&page=1", "page"),
        ("/ui/log?page=1&page=1", "page"),
        ("/ui/search?q=kiln&q=glaze", "q"),
        ("/ui/search?q=kiln&history=1&history=0", "history"),
    ],
)
def test_a_parameter_given_twice_is_refused_not_guessed(
    full: RunningServer, path: str, parameter: str
) -> None:
    assert "give it once" in _refused(full, path, parameter)


@pytest.mark.parametrize("value", ["yes", "true", "2", "%00", "", "%C2%B9"])
def test_history_takes_one_or_zero(full: RunningServer, value: str) -> None:
    message = _refused(full, f"/ui/search?q=kiln&history={value}", "history")
    assert "history=1" in message
    assert get(full, "/ui/search?q=kiln&history=0").status_code == 200


def test_too_long_search_words_are_refused_by_the_pages_own_name(full: RunningServer) -> None:
    message = _refused(full, "/ui/search?q=" + "kiln+" * 500, "q")
    assert "the limit is 2000" in message


@pytest.mark.parametrize("where", ["/ui/node/", "/ui/log/"])
def test_an_address_naming_nothing_is_not_echoed_at_length(full: RunningServer, where: str) -> None:
    reply = get(full, where + "x" * 6_000)
    assert reply.status_code == 404
    message = _message(reply.text)
    assert "x" * ECHOED in message and "x" * (ECHOED + 1) not in reply.text


@pytest.mark.parametrize(
    "accept", ["text/html", "text/html,application/xhtml+xml", "application/json", "*/*"]
)
def test_the_bare_ui_redirects_whatever_the_browser_accepts(
    full: RunningServer, accept: str
) -> None:
    reply = get(full, "/ui", accept=accept)
    assert reply.status_code == 308 and reply.headers["location"] == "/ui/", reply.text
    assert get(full, "/ui/", accept=accept).status_code == 200


@pytest.mark.parametrize(
    ("method", "path", "status"),
    [
        ("GET", "/ui/nothing-here", 404),
        ("GET", "/ui/node/", 404),
        ("GET", "/ui/log/a/b", 404),
        ("GET", "/ui/static/other.css", 404),
        ("POST", "/ui/", 405),
        ("PUT", "/ui/search", 405),
        ("DELETE", "/ui/log", 405),
        ("POST", "/ui/login", 405),
    ],
)
def test_an_address_or_method_the_inspector_lacks_is_its_own_refusal(
    full: RunningServer, method: str, path: str, status: int
) -> None:
    # Answered as every other page: HTML that says what happened and leads back, under
    # the same headers (no sniffing, no caching, no framing, no script).
    reply = httpx.request(method, f"{full.base}{path}", timeout=30)
    assert reply.status_code == status, (reply.status_code, reply.text[:200])
    assert reply.headers["content-type"].startswith("text/html"), reply.headers
    for name, value in HEADERS.items():
        assert reply.headers.get(name) == value, (name, reply.headers)
    message = _message(reply.text)
    if status == 405:
        assert reply.headers["allow"] == "GET, HEAD"
        assert message.startswith(f"method: {method} is not taken here"), message
    else:
        assert message.startswith("address: nothing is shown at"), message
