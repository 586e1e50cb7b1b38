"""Issue #17 end to end, as one story through a real MCP client and the operator's CLI.

Two people direct two sessions. Each records a referent under its own name; one claims
the two are the same, the other later that they are distinct, and search follows the
claim only while it stands. A PHI observation about one of them is invisible on every
read a caller without consent can make, and visible to a caller granted PHI. Then the
operator erases the referent: afterwards nothing of it is on any read or in any file of
the data directory, and what remains on the spine is the tombstone count.
"""

from __future__ import annotations

import json
import subprocess
from pathlib import Path
from typing import Any

import pytest
from mcp import Client

from kenning_encounter.server.app import build_server
from kenning_encounter.server.context import Runtime
from tests.e2e.conftest import (
    call_ok,
    clean_environ,
    make_settings,
    run_server,
    server_command,
)
from tests.support.handles import signed

pytestmark = [pytest.mark.anyio, pytest.mark.usefixtures("clean_env")]

ADA, GRACE = "story-ada", "story-grace"
MARK = "qxvlorpatient"  # one made-up word, found in nothing but the PHI note
PHI_NOTE = f"ward record {MARK}"
UNDONE = "zyqtakenback"  # in a note about her that its session deleted again


def server_for(data_dir: Path, **values: Any) -> Any:
    settings = make_settings(data_dir, **values)
    return build_server(settings, Runtime(settings))


async def _text(client: Client, tool: str, arguments: dict[str, Any]) -> str:
    """What a call said, less the caller's own words echoed back (a refusal names them)."""
    result = await client.call_tool(tool, signed(arguments))
    said = " ".join(getattr(c, "text", "") for c in result.content)
    said += json.dumps(result.structured_content)
    for value in arguments.values():
        if isinstance(value, str):
            said = said.replace(value, "").replace(json.dumps(value)[1:-1], "")
    return said


async def _reads(client: Client) -> list[str]:
    """Every read a caller could make that might show the PHI note; the first three name
    it, so a caller granted PHI sees it there."""
    return [
        await _text(client, "search", {"query": f"ward {MARK}", "include_superseded": True}),
        await _text(client, "find_by_name", {"name": PHI_NOTE}),
        await _text(client, "read_cypher", {"query": "MATCH (n) RETURN n.name, n.description"}),
        await _text(client, "trace_provenance", {"ref": "billing alice", "depth": 5}),
        await _text(client, "orient", {"top_k": 50}),
        await _text(client, "infuse", {"session_id": "story-viewer", "prompt": f"the {MARK} ward"}),
    ]


async def _story(data: Path) -> None:
    async with Client(server_for(data, grant="phi")) as client:
        ada = await call_ok(
            client,
            "advance_encounter",
            {"session_id": ADA, "purpose": "billing", "director": "Ada", "director_key": "ada@x"},
        )
        assert ada["encounter"]["director"]["name"] == "Ada"
        await call_ok(
            client,
            "create_entities",
            {
                "session_id": ADA,
                "entities": [
                    {"type": "Concept", "name": "billing alice", "description": "pays invoices"},
                    {
                        "type": "Observation",
                        "name": PHI_NOTE,
                        "description": f"alice was admitted to ward seven {MARK}",
                        "classification": ["phi"],
                    },
                ],
            },
        )
        await call_ok(
            client,
            "create_relations",
            {
                "session_id": ADA,
                "relations": [{"source": PHI_NOTE, "type": "ABOUT", "target": "billing alice"}],
            },
        )
        # A note about her that Ada took back: the memory keeps it for reads of the past.
        await call_ok(
            client,
            "create_entities",
            {
                "session_id": ADA,
                "entities": [
                    {"type": "Observation", "name": "taken back", "description": f"{UNDONE} x"}
                ],
            },
        )
        await call_ok(
            client,
            "create_relations",
            {
                "session_id": ADA,
                "relations": [{"source": "taken back", "type": "ABOUT", "target": "billing alice"}],
            },
        )
        await call_ok(client, "delete_entities", {"session_id": ADA, "refs": ["taken back"]})
        grace = await call_ok(
            client,
            "advance_encounter",
            {"session_id": GRACE, "purpose": "infra", "director": "Grace", "director_key": "g@x"},
        )
        assert grace["encounter"]["director"]["name"] == "Grace"
        await call_ok(
            client,
            "create_entities",
            {
                "session_id": GRACE,
                "entities": [
                    {"type": "Concept", "name": "infra alice", "description": "runs invoices db"}
                ],
            },
        )
        # The same, then distinct: search follows the claim only while it stands.
        same = {"source": "billing alice", "target": "infra alice", "resolution": "confirmed"}
        await call_ok(client, "claim_referents", {"session_id": GRACE, "claims": [same]})
        joined = await call_ok(client, "search", {"query": "pays", "same_as": True})
        assert {h["name"] for h in joined["hits"]} == {"billing alice", "infra alice"}
        apart = {**same, "resolution": "distinct", "why": "two people"}
        await call_ok(client, "claim_referents", {"session_id": ADA, "claims": [apart]})
        after = await call_ok(client, "search", {"query": "pays", "same_as": True})
        assert [h["name"] for h in after["hits"]] == ["billing alice"]
        traced = await call_ok(client, "trace_provenance", {"ref": "infra alice"})
        assert traced["node"]["director"]["name"] == "Grace"
        # Granted PHI, this caller sees the note where it is.
        assert all(MARK in answer for answer in (await _reads(client))[:3])
        await call_ok(client, "close_encounter", {"session_id": ADA, "summary": "billing seen"})
        await call_ok(client, "close_encounter", {"session_id": GRACE, "summary": "infra seen"})

    # Without consent, no read shows it.
    async with Client(server_for(data)) as client:
        for answer in await _reads(client):
            assert MARK not in answer


def _erase(data: Path, *refs: str) -> subprocess.CompletedProcess[str]:
    env = clean_environ(KENNING_ENCOUNTER_DATA_DIR=str(data), KENNING_ENCOUNTER_MATCHER="off")
    return subprocess.run(
        server_command("erase", *refs, "--yes", "--json"),
        env=env,
        capture_output=True,
        text=True,
        timeout=300,
        check=False,
    )


def _files_holding(folder: Path, needle: bytes) -> list[Path]:
    return [p for p in folder.rglob("*") if p.is_file() and needle in p.read_bytes()]


def _words_on_disk(folder: Path) -> dict[str, list[str]]:
    """Each of the two words, where a file holds it: the file and the bytes around its
    first place (what a failure needs to tell a row's text from a query's)."""
    found: dict[str, list[str]] = {}
    for word in (MARK, UNDONE):
        for path in _files_holding(folder, word.encode()):
            data = path.read_bytes()
            at = data.index(word.encode())
            around = data[max(0, at - 80) : at + 80]
            found.setdefault(word, []).append(f"{path.relative_to(folder)}: {around!r}")
    return found


def test_directors_claims_a_gated_phi_note_and_an_erasure(tmp_path: Path) -> None:
    import anyio

    data = tmp_path / "memory"
    anyio.run(_story, data)
    assert _files_holding(data, MARK.encode())  # the note is on disk before the erasure
    assert _files_holding(data, UNDONE.encode())  # and the deleted one's past

    erased = _erase(data, "billing alice")
    assert erased.returncode == 0, erased.stderr
    report = json.loads(erased.stdout)
    assert report, report
    # The erasure's own promise, before anything opens the memory again: no file of the
    # data directory holds the note's word, nor the past of a note about her that Ada
    # deleted (it went with her too).
    assert _words_on_disk(data) == {}

    # The operator starts the server again, as a new process (the erasure ran with it
    # stopped), and a caller granted everything looks everywhere the note could be.
    async def after(url: str) -> None:
        async with Client(url) as client:
            for answer in await _reads(client):
                assert MARK not in answer
            gone = await client.call_tool("find_by_name", {"name": "billing alice"})
            assert gone.is_error
            # Grace's referent, claimed distinct, is not about the erased one: it stays.
            kept = await call_ok(client, "find_by_name", {"name": "infra alice"})
            assert kept["node"]["name"] == "infra alice"
            cypher = await call_ok(
                client,
                "read_cypher",
                {"query": "MATCH (e:Encounter) RETURN sum(e.tombstones) AS t"},
            )
            # the concept and the note only about it, counted on Ada's encounter
            assert int(cypher["rows"][0][0]) == 2

    with run_server(data, "--grant", "all") as server:
        anyio.run(after, server.url)
    # Reading for it brought nothing of it back.
    assert _words_on_disk(data) == {}
