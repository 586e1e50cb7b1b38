"""What withheld nodes leave on public records, through a real MCP client on both
backends (store/uses.py).

A link is a use of both its ends, so a withheld observation grounding a public concept
moved the concept's ``last_used_at`` for every reader; an operator's erasure of a
withheld node counted it in its encounter's tombstones, which ``chain_history`` shows. A
reader not granted the class learnt from either that such a node had been there. Read
here on the reader face granted nothing and on one granted every class, over one store.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any, Final

import pytest

from kenning_encounter.memory import erasure
from kenning_encounter.store.port import GraphStore
from tests.e2e.conftest import call_ok
from tests.e2e.test_gated_revisions_tools import _said, _served

pytestmark = pytest.mark.anyio

WRITER: Final = "gated-uses-writer"


async def _write(store: GraphStore, data_dir: Path) -> None:
    """A public concept and observation, then a secret observation grounding the concept."""
    async with _served(store, data_dir, grant="all") as writer:
        await call_ok(writer, "advance_encounter", {"session_id": WRITER, "purpose": "lamps"})
        await call_ok(
            writer,
            "create_entities",
            {
                "session_id": WRITER,
                "entities": [
                    {"type": "Concept", "name": "lamp theory", "description": "lamps at dusk"},
                    {"type": "Observation", "name": "lamp seen", "description": "a lamp"},
                ],
            },
        )
        await call_ok(
            writer,
            "create_entities",
            {
                "session_id": WRITER,
                "entities": [
                    {
                        "type": "Observation",
                        "name": "ward lamp",
                        "description": "the ward lamp",
                        "classification": "secret",
                    }
                ],
            },
        )
        await call_ok(
            writer,
            "create_relations",
            {
                "session_id": WRITER,
                "relations": [{"source": "ward lamp", "type": "GROUNDS", "target": "lamp theory"}],
            },
        )


async def _uses(store: GraphStore, data_dir: Path, **values: Any) -> dict[str, Any]:
    async with _served(store, data_dir, face="reader", **values) as reader:
        _, found = await _said(reader, "find_by_name", {"name": "lamp theory"})
        _, rows = await _said(
            reader, "read_cypher", {"query": "MATCH (n:Concept) RETURN n.name AS name"}
        )
    return {
        "created": found["node"]["created_at"],
        "find": found["node"]["last_used_at"],
        "cypher": rows["rows"],
    }


async def test_a_withheld_link_moves_no_last_use_a_gated_face_sees(
    store: GraphStore, tmp_path: Path
) -> None:
    await _write(store, tmp_path / "m")
    gated = await _uses(store, tmp_path / "m")
    created = gated["created"]
    assert gated == {"created": created, "find": created, "cypher": []}
    granted = await _uses(store, tmp_path / "m", reader_grant="all")
    assert granted["find"] > created == granted["created"]
    assert granted["cypher"] == [["lamp theory"]]


async def test_chain_history_counts_no_erased_withheld_node_on_a_gated_face(
    store: GraphStore, tmp_path: Path
) -> None:
    """An operator's erasure of a secret note and a public one recorded with a chain's
    version: the gated face's chain_history counts the public one alone."""
    async with _served(store, tmp_path / "m", grant="all") as writer:
        await call_ok(writer, "advance_encounter", {"session_id": WRITER, "purpose": "lamps"})
        await call_ok(
            writer,
            "create_entities",
            {
                "session_id": WRITER,
                "entities": [
                    {"type": "Note", "name": "lamp", "description": "a lamp"},
                    {"type": "Note", "name": "old lamp", "description": "an old lamp"},
                    {"type": "Note", "name": "ward lamp", "classification": "secret"},
                ],
            },
        )
    for name in ("old lamp", "ward lamp"):  # the operator's command, on the store itself
        erasure.erase(store, erasure.plan(store, [name]))

    async def removed(**values: Any) -> list[int]:
        async with _served(store, tmp_path / "m", face="reader", **values) as reader:
            _, history = await _said(reader, "chain_history", {"node": "lamp"})
        return [t["removed"] for t in history["tombstones"]]

    assert await removed() == [1]
    assert await removed(reader_grant="all") == [2]
