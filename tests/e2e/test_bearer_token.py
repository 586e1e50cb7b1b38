"""The bearer token over real sockets: only the whole token opens the server.

A mutation run found the suite green with a check that took any prefix of the right token;
here every prefix, the token with more after it, and near misses are refused with 401.
"""

from __future__ import annotations

from pathlib import Path

import httpx
import pytest

from tests.e2e.conftest import SESSION, run_server

pytestmark = [pytest.mark.anyio, pytest.mark.usefixtures("clean_env")]

TOKEN = "b7f3c2-the-right-token-for-this-server-9a41"
RIGHT = f"Bearer {TOKEN}"


def _near_misses() -> list[str]:
    # "", "B", ... up to all but the last character (a header cannot end in a space).
    prefixes = [RIGHT[:n] for n in range(len(RIGHT)) if not RIGHT[:n].endswith(" ")]
    return [
        *prefixes,
        RIGHT + "0",
        f"Bearer {TOKEN[1:]}",
        f"Bearer {TOKEN[:-1]}x",
        TOKEN,
        f"Basic {TOKEN}",
        f"Bearer{TOKEN}",
        f"Bearer {TOKEN} {TOKEN}",
        f"{TOKEN} {TOKEN}",
    ]


async def test_only_the_whole_token_is_let_in(tmp_path: Path) -> None:
    body = {"session_id": SESSION, "source": "startup"}
    with run_server(tmp_path / "m", "--token", TOKEN) as running:
        route = f"{running.base}/session-start"
        async with httpx.AsyncClient() as http:
            for given in _near_misses():
                refused = await http.post(route, json=body, headers={"authorization": given})
                assert refused.status_code == 401, repr(given)
                assert refused.json() == {"error": "unauthorized"}
            mcp = await http.post(
                running.url,
                json={"jsonrpc": "2.0", "id": 1, "method": "tools/list"},
                headers={"authorization": RIGHT[:-1]},
            )
            assert mcp.status_code == 401
            # HTTP reads the scheme in any case; a client sending "bearer" was refused.
            for given in (RIGHT, f"bearer {TOKEN}", f"BEARER  {TOKEN}"):
                admitted = await http.post(route, json=body, headers={"authorization": given})
                assert admitted.status_code == 200, repr(given)
                assert f"session_id is {SESSION}" in admitted.json()["context"]
