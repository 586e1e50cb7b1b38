"""The spine in pages (issue #18): the store skips to the page, newer and older links walk it.

45 encounters are opened through a real MCP client, the reader face hides one
session interleaved with the shown one, and each page is read through a real server.
"""

from __future__ import annotations

import re
import shutil
from collections.abc import Iterator
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass
from pathlib import Path

import anyio
import pytest
from mcp import Client

from kenning_encounter.server.app import build_server
from kenning_encounter.server.context import Runtime
from kenning_encounter.ui.views import PAGE
from tests.e2e.conftest import RunningServer, call_ok, make_settings, run_server
from tests.ui.conftest import get

SHOWN, HIDDEN = "session-paging-shown-4d2e", "session-paging-hidden-8b1a"
COUNT = 40  # shown encounters: two full pages, and hidden ones older than the last


@dataclass
class Paging:
    full: RunningServer
    reader: RunningServer


async def _seed(data_dir: Path) -> None:
    settings = make_settings(data_dir)
    async with Client(build_server(settings, Runtime(settings))) as client:
        opened: set[str] = set()

        async def advance(session: str, purpose: str) -> None:
            args = {"session_id": session, "purpose": purpose}
            if session in opened:
                args["close_summary"] = "moved on"
            await call_ok(client, "advance_encounter", args)
            opened.add(session)

        for i in range(COUNT):
            await advance(SHOWN, f"step {i:02d}")
            if i % 3 == 0:  # hidden ones between shown ones, taking places in the listing
                await advance(HIDDEN, f"veiled {i}")


@pytest.fixture(scope="module")
def paging(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Paging]:
    data_dir = tmp_path_factory.mktemp("ui-paging") / "data"
    with ThreadPoolExecutor(1) as pool:
        pool.submit(anyio.run, _seed, data_dir).result()
    reader_dir = tmp_path_factory.mktemp("ui-paging-reader") / "data"
    shutil.copytree(data_dir, reader_dir)
    with (
        run_server(data_dir) as full,
        run_server(reader_dir, "--face", "reader", "--hide-loci", HIDDEN) as reader,
    ):
        yield Paging(full, reader)


def _steps(page: str) -> list[int]:
    return [int(n) for n in re.findall(r'class="purpose">step (\d\d)<', page)]


def _links(page: str) -> dict[str, str]:
    return dict(re.findall(r'<a rel="(prev|next)" href="([^"]+)"', page))


def test_the_reader_pages_walk_every_shown_encounter_once(paging: Paging) -> None:
    seen: list[int] = []
    path: str | None = "/ui/"
    pages = 0
    while path is not None:
        page = get(paging.reader, path.replace("&amp;", "&")).text
        assert "veiled" not in page
        steps = _steps(page)
        assert 0 < len(steps) <= PAGE
        seen.extend(steps)
        links = _links(page)
        assert ("prev" in links) == (pages > 0)
        path = links.get("next")
        pages += 1
    assert seen == list(range(COUNT - 1, -1, -1))  # newest first, none twice, none missed
    assert pages == 2


def test_the_full_face_pages_through_the_store(paging: Paging) -> None:
    first = get(paging.full, "/ui/").text
    assert _links(first) == {"next": "/ui/?page=1"}
    second = get(paging.full, "/ui/?page=1").text
    assert _links(second) == {"prev": "/ui/?page=0", "next": "/ui/?page=2"}
    # Both sessions' encounters, newest first: the second twenty.
    opened: list[str] = []
    for i in range(COUNT):
        opened += [f"step {i:02d}"] + ([f"veiled {i}"] if i % 3 == 0 else [])
    newest_first = opened[::-1]
    purposes = re.findall(r'class="purpose">(step \d\d|veiled \d+)<', second)
    assert purposes == newest_first[PAGE : 2 * PAGE]
    last = get(paging.full, "/ui/?page=2").text
    assert _links(last) == {"prev": "/ui/?page=1"}
    assert re.findall(r'class="purpose">(step \d\d|veiled \d+)<', last) == newest_first[2 * PAGE :]
    assert 'class="purpose"' not in get(paging.full, "/ui/?page=3").text
