"""The inspector's pages honour the classification gate: a server not granted a class
shows none of its nodes on any page (the infusion log included, whose entries were
written by a granted server that delivered them), and a granted one shows them."""

from __future__ import annotations

from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

import anyio

from kenning_encounter.store.infusion_log import session_tag
from tests.e2e.conftest import run_server
from tests.e2e.test_classification_gates import PROMPT
from tests.e2e.test_classification_gates import _record as record  # pyright: ignore[reportPrivateUsage]
from tests.support import classified as plan
from tests.support.classified import MARK
from tests.ui.conftest import get, infuse

VIEWER = "classified-ui-viewer"


def _pages(ids: dict[str, str]) -> list[str]:
    return [
        "/ui/",
        f"/ui/search?q=lantern+{MARK}",
        f"/ui/search?q=lantern+{MARK}&history=1",
        f"/ui/node/{ids['lantern finding']}",
        f"/ui/node/{ids['lantern policy']}",
        f"/ui/node/{ids['lantern guess']}",
        "/ui/orient",
        "/ui/log",
        f"/ui/log/{session_tag(VIEWER)}",
    ]


def test_no_page_shows_a_withheld_node(tmp_path: Path) -> None:
    data = tmp_path / "m"
    with ThreadPoolExecutor(1) as pool:
        ids = pool.submit(anyio.run, record, data).result()
    withheld = {MARK, *(ids[name] for name in plan.CLASSIFIED)}
    with run_server(data, "--grant", "all") as granted:
        delivered = infuse(granted, VIEWER, PROMPT)
        assert MARK in delivered["payload"]  # the log now lists withheld nodes
        ward = get(granted, f"/ui/node/{ids[f'ward note {MARK}']}").text
        assert MARK in ward
        assert "<dt>classified</dt>" in ward  # a granted page shows the node's marks
        assert MARK in get(granted, f"/ui/log/{session_tag(VIEWER)}").text
    for face in ((), ("--face", "reader", "--grant", "all")):
        with run_server(data, *face) as server:
            for path in _pages(ids):
                reply = get(server, path)
                assert reply.status_code == 200, (face, path)
                # The search page repeats the words it was asked: the caller's own.
                page = reply.text.replace(f"lantern+{MARK}", "").replace(f"lantern {MARK}", "")
                leaked = {w for w in withheld if w in page}
                assert leaked == set(), (face, path)
            for name in plan.CLASSIFIED:
                assert get(server, f"/ui/node/{ids[name]}").status_code == 404, name
