"""security.py's parsing and policy, called in process: Host and Origin values at their
edges, the allow-list entries, the policy a Settings gives, the Accept rules. The e2e tests
prove the guards on a listening server; these pin each part, and are what its mutation run
can reach (a server subprocess is out of mutmut's sight)."""

from __future__ import annotations

import os
from pathlib import Path
from typing import Any

import pytest

from kenning_encounter.config import Settings, load_settings
from kenning_encounter.errors import ConfigError
from kenning_encounter.server import security as s
from kenning_encounter.server.security import Origin

LOOPBACK_ANY_PORT = {("127.0.0.1", None), ("localhost", None), ("::1", None)}


@pytest.fixture
def settings(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> Any:
    """Settings from the given values only: no environment, no .env of the checkout."""
    for key in list(os.environ):
        if key.startswith("KENNING_ENCOUNTER_"):
            monkeypatch.delenv(key)
    monkeypatch.chdir(tmp_path)

    def make(**values: Any) -> Settings:
        return load_settings(data_dir=tmp_path / "m", matcher="off", **values)

    return make


@pytest.mark.parametrize(
    ("value", "parsed"),
    [
        ("localhost", ("localhost", None)),
        ("LOCALHOST:8765", ("localhost", 8765)),
        ("  Example.ORG:80  ", ("example.org", 80)),
        ("127.0.0.1:0", ("127.0.0.1", 0)),
        ("127.0.0.1:65535", ("127.0.0.1", 65535)),
        ("[::1]", ("::1", None)),
        ("[::1]:8765", ("::1", 8765)),
        ("[0:0:0:0:0:0:0:1]:9", ("::1", 9)),  # one spelling per address
        ("[FE80::A]", ("fe80::a", None)),
        ("my_host-1.internal", ("my_host-1.internal", None)),
        ("localhost.", ("localhost.", None)),  # a trailing dot is another name
        ("127.000.0.1", ("127.000.0.1", None)),  # not an address, so only a name
    ],
)
def test_a_host_parses_to_a_name_and_a_port(value: str, parsed: tuple[str, int | None]) -> None:
    assert s.parse_host(value) == parsed


@pytest.mark.parametrize(
    "value",
    [
        "",
        "localhost:",
        "localhost:65536",
        "localhost:123456",
        "localhost:-1",
        "localhost:80x",
        "localhost:8765.evil.com",
        "::1",  # a bare IPv6 address needs brackets in a Host header
        "[::1",
        "[example.org]:80",
        "user@localhost",
        "localhost/path",
        "local host",
    ],
)
def test_a_malformed_host_parses_to_nothing(value: str) -> None:
    assert s.parse_host(value) is None


@pytest.mark.parametrize(
    ("value", "origin"),
    [
        ("http://localhost:8765", Origin("http", "localhost", 8765)),
        ("HTTP://LocalHost:8765", Origin("http", "localhost", 8765)),
        ("  https://app.example  ", Origin("https", "app.example", 443)),
        ("http://app.example", Origin("http", "app.example", 80)),
        ("https://app.example:80", Origin("https", "app.example", 80)),
        ("http://[::1]:8765", Origin("http", "::1", 8765)),
        ("http://[0::1]", Origin("http", "::1", 80)),
        ("http://127.0.0.1:65535", Origin("http", "127.0.0.1", 65535)),
        ("chrome-extension://abcdef", Origin("chrome-extension", "abcdef", None)),
        ("app+x.y-z://h:7", Origin("app+x.y-z", "h", 7)),
    ],
)
def test_an_origin_parses_with_the_default_port_filled_in(value: str, origin: Origin) -> None:
    assert s.parse_origin(value) == origin


@pytest.mark.parametrize(
    "value",
    [
        "",
        "null",
        "localhost:8765",
        "http//localhost",
        "http://",
        "http://localhost:",
        "http://localhost:65536",
        "http://localhost:8765/",
        "http://localhost:8765.evil.com",
        "http://user@localhost",
        "1http://localhost",
        "://localhost",
    ],
)
def test_a_malformed_origin_parses_to_nothing(value: str) -> None:
    assert s.parse_origin(value) is None


@pytest.mark.parametrize(
    ("origin", "text"),
    [
        (Origin("http", "localhost", 8765), "http://localhost:8765"),
        (Origin("http", "localhost", 80), "http://localhost"),
        (Origin("https", "app.example", 443), "https://app.example"),
        (Origin("https", "app.example", 80), "https://app.example:80"),
        (Origin("http", "app.example", 443), "http://app.example:443"),
        (Origin("http", "::1", 8765), "http://[::1]:8765"),
        (Origin("http", "::1", 80), "http://[::1]"),
        (Origin("chrome-extension", "abcdef", None), "chrome-extension://abcdef"),
        (Origin("chrome-extension", "abcdef", 9), "chrome-extension://abcdef:9"),
    ],
)
def test_an_origin_prints_as_a_browser_sends_it(origin: Origin, text: str) -> None:
    assert str(origin) == text


def policy(hosts: set[tuple[str, int | None]], origins: set[Origin] | None = None) -> s.HostPolicy:
    return s.HostPolicy(True, frozenset(hosts), frozenset(origins or ()))


def test_a_host_is_allowed_by_its_name_and_port() -> None:
    any_port = policy({("example.org", None)})
    assert any_port.host_allowed("example.org")
    assert any_port.host_allowed("EXAMPLE.org:8765")
    assert not any_port.host_allowed("example.org.evil.com")
    assert not any_port.host_allowed("example.org:junk")
    one_port = policy({("example.org", 8765)})
    assert one_port.host_allowed("example.org:8765")
    assert not one_port.host_allowed("example.org:8766")
    assert not one_port.host_allowed("example.org")
    port_80 = policy({("example.org", 80)})
    assert port_80.host_allowed("example.org")  # no port in Host means 80
    assert port_80.host_allowed("example.org:80")
    assert not port_80.host_allowed("example.org:81")
    assert not port_80.host_allowed("example.org:443")


def test_an_origin_is_allowed_exactly_or_as_loopback_on_this_port() -> None:
    listed = policy(set(), {Origin("https", "app.example", 443)})
    assert listed.origin_allowed("https://app.example", None)
    assert listed.origin_allowed("https://APP.example:443", 8765)
    assert not listed.origin_allowed("http://app.example", None)
    assert not listed.origin_allowed("https://app.example:8443", None)
    assert not listed.origin_allowed("https://app.example.evil.com", None)
    assert not listed.origin_allowed("not an origin", None)
    for host in ("localhost", "127.0.0.1", "[::1]", "LOCALHOST"):
        assert listed.origin_allowed(f"http://{host}:8765", 8765), host
        assert not listed.origin_allowed(f"http://{host}:8766", 8765), host
        assert not listed.origin_allowed(f"https://{host}:8765", 8765), host
        assert not listed.origin_allowed(f"http://{host}:8765", None), host
    assert listed.origin_allowed("http://localhost", 80)
    assert not listed.origin_allowed("http://localhost", None)
    assert not listed.origin_allowed("http://10.0.0.1:8765", 8765)


@pytest.mark.parametrize(
    ("entry", "parsed"),
    [
        ("example.org", ("example.org", None)),
        (" Example.org:8765 ", ("example.org", 8765)),
        ("::1", ("::1", None)),  # bare IPv6 addresses are bracketed for the parser
        ("fe80::1", ("fe80::1", None)),
        ("[::1]:8765", ("::1", 8765)),
        ("10.0.0.5", ("10.0.0.5", None)),
    ],
)
def test_an_allowed_host_entry_parses(entry: str, parsed: tuple[str, int | None]) -> None:
    assert s.allowed_host(entry) == parsed


@pytest.mark.parametrize("entry", ["", "a b", "example.org:99999", "[::1", "http://x"])
def test_a_bad_allowed_host_entry_names_the_option_and_the_forms(entry: str) -> None:
    with pytest.raises(ConfigError) as caught:
        s.allowed_host(entry)
    assert str(caught.value) == (
        f"allowed_hosts: {entry!r} is not a host name; write name, name:port or [ipv6]:port"
    )


def test_an_allowed_origin_entry_parses_with_a_trailing_slash_forgiven() -> None:
    assert s.allowed_origin(" https://app.example/ ") == Origin("https", "app.example", 443)
    assert s.allowed_origin("http://localhost:3000") == Origin("http", "localhost", 3000)
    assert s.allowed_origin("https://APP.X") == Origin("https", "app.x", 443)  # only "/" goes
    with pytest.raises(ConfigError) as caught:
        s.allowed_origin("app.example")
    assert str(caught.value) == (
        "allowed_origins: 'app.example' is not an origin; list each one exactly as "
        "scheme://host[:port], e.g. https://app.example"
    )


def test_the_default_policy_serves_loopback_names_on_any_port(settings: Any) -> None:
    got = s.host_policy(settings())
    assert got == s.HostPolicy(True, frozenset(LOOPBACK_ANY_PORT), frozenset())


def test_a_concrete_bind_address_and_the_allowed_hosts_join_the_loopback_names(
    settings: Any,
) -> None:
    got = s.host_policy(settings(host="10.0.0.5", allowed_hosts=[" ", "Example.org:8765", "::2"]))
    assert got.check_hosts
    assert got.hosts == {
        *LOOPBACK_ANY_PORT,
        ("10.0.0.5", None),
        ("example.org", 8765),
        ("::2", None),
    }
    on_loopback = s.host_policy(settings(host="localhost", allowed_hosts=["example.org"]))
    assert on_loopback.hosts == {*LOOPBACK_ANY_PORT, ("example.org", None)}


@pytest.mark.parametrize("bind", ["0.0.0.0", "::"])
def test_a_wildcard_bind_checks_hosts_only_when_some_are_named(settings: Any, bind: str) -> None:
    unnamed = s.host_policy(settings(host=bind, allowed_hosts=[" "]))
    assert not unnamed.check_hosts
    named = s.host_policy(settings(host=bind, allowed_hosts=["example.org"]))
    assert named.check_hosts
    assert named.hosts == {*LOOPBACK_ANY_PORT, ("example.org", None)}  # not the bind itself


def test_a_star_turns_the_host_check_off(settings: Any) -> None:
    got = s.host_policy(settings(host="10.0.0.5", allowed_hosts=["example.org", "*"]))
    assert got == s.HostPolicy(False, frozenset(LOOPBACK_ANY_PORT), frozenset())


def test_allowed_origins_enter_the_policy_and_blank_ones_are_skipped(settings: Any) -> None:
    got = s.host_policy(settings(allowed_origins=["https://app.example/", " ", "http://x:3000"]))
    assert got.origins == {Origin("https", "app.example", 443), Origin("http", "x", 3000)}


JSON = "application/json"
SSE = "text/event-stream"


@pytest.mark.parametrize(
    ("accept", "media", "admitted"),
    [
        (None, JSON, True),
        ("", JSON, False),
        (JSON, JSON, True),
        ("Application/JSON", JSON, True),
        (" application/json ; charset=utf-8 ", JSON, True),
        ("text/html, application/json", JSON, True),  # a range that does not match is skipped
        ("text/html", JSON, False),
        ("application/*", JSON, True),
        ("application/*", SSE, False),
        ("text/*", SSE, True),
        ("*/*", SSE, True),
        ("application/json;q=0", JSON, False),
        ("application/json;Q=0", JSON, False),
        ("application/json; q = 0", JSON, False),
        ("application/json;q=0.001", JSON, True),
        ("application/json;q=1", JSON, True),
        ("application/json;q=0.5;level=1", JSON, True),
        ("application/json;q=never", JSON, False),  # an unreadable weight refuses
        ("application/json;level=0", JSON, True),
        ("application/json;q", JSON, False),
        # the most specific matching range decides, whichever comes first
        ("*/*;q=0, application/json", JSON, True),
        ("application/json, */*;q=0", JSON, True),
        ("application/json;q=0, */*", JSON, False),
        ("*/*, application/json;q=0", JSON, False),
        ("application/*;q=0, application/json", JSON, True),
        ("*/*;q=0, application/*", JSON, True),
        ("application/*, */*;q=0", JSON, True),
        ("application/*;q=0, */*", JSON, False),
        # of two equally specific ranges the first decides
        ("application/json;q=0, application/json", JSON, False),
        ("application/json, application/json;q=0", JSON, True),
    ],
)
def test_accepts_follows_the_most_specific_range(
    accept: str | None, media: str, admitted: bool
) -> None:
    assert s.accepts(accept, media) is admitted
