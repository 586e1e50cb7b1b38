"""A memory 0.1.0 made opens and works in this release (tests/fixtures/stores/).

The store was made by 0.1.0's own server through its MCP tools
(``make_0_1_0_store.py``): its schema is migrated on open, its text index rebuilt, and
its sessions, opened before handles existed, are continued once the operator gives
the handle back (``kenning-encounter handle``).
"""

from __future__ import annotations

import json
import tarfile
from pathlib import Path

import anyio
from mcp import Client

from kenning_encounter.config import MAX_IDLE_S
from tests.e2e.conftest import call_ok, call_refused, run_server
from tests.support.cli import run_cli

FIXTURE = Path(__file__).resolve().parents[1] / "fixtures" / "stores" / "made-by-0.1.0.tgz"
OPEN_BY_0_1_0 = "alpha-session"  # its second encounter was left open


def _unpack(tmp_path: Path) -> Path:
    with tarfile.open(FIXTURE) as archive:
        archive.extractall(tmp_path, filter="data")
    return tmp_path / "memory"


def test_a_memory_made_by_0_1_0_is_read_and_continued(tmp_path: Path) -> None:
    data = _unpack(tmp_path)
    checked = run_cli("doctor", "--data-dir", str(data))
    assert checked.returncode == 0 and "all good" in checked.stdout, checked.stdout
    recovered = run_cli("handle", OPEN_BY_0_1_0, "--data-dir", str(data))
    assert recovered.returncode == 0, recovered.stderr
    held = recovered.stdout.strip()

    async def use(url: str) -> None:
        async with Client(url) as client:
            hits = await call_ok(client, "search", {"query": "kiln glaze crackle", "limit": 40})
            sessions = {h["name"].split(" ")[1] for h in hits["hits"]}
            assert sessions == {"alpha-session", "beta-session"}
            history = await call_ok(client, "chain_history", {"node": "Note alpha-session v2"})
            assert [v["name"] for v in history["versions"]] == [
                "Note alpha-session",
                "Note alpha-session v2",
            ]
            first = history["versions"][0]["tick"]
            was = await call_ok(
                client, "find_by_name", {"name": "Note alpha-session", "as_of": first}
            )
            assert was["node"]["name"] == "Note alpha-session"
            # Opened before handles: its plain id is held, its recovered handle acts for it.
            note = {"type": "Note", "name": "after the upgrade", "description": "kiln notes"}
            refused = await call_refused(
                client,
                "create_entities",
                {"session_id": OPEN_BY_0_1_0, "entities": [note]},
                sign=False,
            )
            assert "kenning-encounter handle alpha-session" in refused
            made = await call_ok(
                client, "create_entities", {"session_id": held, "entities": [note]}, sign=False
            )
            assert made["created"][0]["name"] == "after the upgrade"
            infused = await call_ok(
                client,
                "infuse",
                {"session_id": held, "prompt": "why does kiln glaze crackle?"},
                sign=False,
            )
            assert "glaze" in infused["payload"]
            await call_ok(
                client, "close_encounter", {"session_id": held, "summary": "done"}, sign=False
            )

    # The fixture was made on a past day: an idle horizon of a day would find its open
    # encounter dissolved once the fixture is a day old (it was, from 2026-12-06 15:41).
    with run_server(
        data, test_key=False, env={"KENNING_ENCOUNTER_IDLE_HORIZON": str(MAX_IDLE_S)}
    ) as running:
        anyio.run(use, running.url)
    dumped = run_cli("export", "-", "--data-dir", str(data))
    assert dumped.returncode == 0, dumped.stderr
    kinds = [json.loads(line).get("kind") for line in dumped.stdout.splitlines()[1:]]
    assert kinds.count("encounter") == 3 and kinds.count("locus") == 2
