"""Fixtures for the inspector's tests: a memory seeded through a real MCP client, real
server processes over it, and the answers of real /infuse calls.

The embedded store has one owner at a time, so the seeding client closes before a
server starts, and the reader face runs on a copy of the seeded data directory.
"""

from __future__ import annotations

import shutil
from collections.abc import Generator, Iterator
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import anyio
import httpx
import pytest
from mcp import Client

from kenning_encounter.server.app import build_server
from kenning_encounter.server.context import Runtime
from tests.e2e.conftest import RunningServer, call_ok, make_settings, run_server
from tests.support.handles import handle

ALICE, BOB = "session-alice-hidden-7f3a", "session-bob-shown-91c2"
BOB_DIRECTOR = "Bob Potter"
BOB_PROMPT = "why does the kiln glaze crackle after cooling?"
REVISION_WHY = "the second firing showed the cooling rate matters, not the glaze recipe"


@dataclass
class Seeded:
    data_dir: Path
    ids: dict[str, str] = field(default_factory=dict[str, str])  # name -> id (the newest)
    alice_ids: set[str] = field(default_factory=set[str])
    infused: dict[str, dict[str, Any]] = field(default_factory=dict[str, dict[str, Any]])
    reader_dir: Path | None = None  # a copy made while no server had the store open


def _bob_nodes() -> list[dict[str, Any]]:
    return [
        {
            "type": "Observation",
            "name": "bob kiln reading",
            "description": "The kiln glaze crackled after a fast cool-down.",
            "t_observed": "2024-03-02T10:00:00Z",
        },
        {
            "type": "Citation",
            "name": "bob kiln manual",
            "description": "The kiln maker's manual on cooling curves.",
            "kind": "paper",
            "uri": "https://example.org/kiln-manual",
        },
        {
            "type": "Concept",
            "name": "bob kiln theory",
            "description": "Glaze recipe decides whether the kiln glaze crackles.",
        },
        {
            "type": "Hypothesis",
            "name": "bob kiln guess",
            "description": "Slower kiln cooling stops the glaze crackle.",
        },
    ]


async def _seed(data_dir: Path) -> Seeded:
    seeded = Seeded(data_dir)
    settings = make_settings(data_dir)
    async with Client(build_server(settings, Runtime(settings))) as client:
        await call_ok(
            client,
            "advance_encounter",
            {"session_id": BOB, "purpose": "kiln study", "director": BOB_DIRECTOR},
        )
        made = await call_ok(
            client, "create_entities", {"session_id": BOB, "entities": _bob_nodes()}
        )
        seeded.ids.update({n["name"]: n["id"] for n in made["created"]})
        await call_ok(
            client,
            "create_relations",
            {
                "session_id": BOB,
                "relations": [
                    {"source": "bob kiln reading", "type": "GROUNDS", "target": "bob kiln theory"},
                    {"source": "bob kiln manual", "type": "GROUNDS", "target": "bob kiln theory"},
                    {"source": "bob kiln theory", "type": "INFORMS", "target": "bob kiln guess"},
                ],
            },
        )
        seeded.ids["bob kiln theory v1"] = seeded.ids["bob kiln theory"]
        # A reading by the tool, so the orient page has a baseline to read drift against.
        await call_ok(client, "orient", {"session_id": BOB})
        revised = await call_ok(
            client,
            "create_entities",
            {
                "session_id": BOB,
                "entities": [
                    {
                        "type": "Concept",
                        "name": "bob kiln theory",
                        "description": "Cooling rate decides whether the kiln glaze crackles.",
                        "supersedes": "bob kiln theory",
                        "revision_why": REVISION_WHY,
                    }
                ],
            },
        )
        seeded.ids["bob kiln theory"] = revised["created"][0]["id"]
        await call_ok(
            client, "close_encounter", {"session_id": BOB, "summary": "kiln cooling explains it"}
        )
        await call_ok(
            client, "advance_encounter", {"session_id": ALICE, "purpose": "alice furnace"}
        )
        made = await call_ok(
            client,
            "create_entities",
            {
                "session_id": ALICE,
                "entities": [
                    {
                        "type": "Observation",
                        "name": "alice furnace secret",
                        "description": "Alice saw the kiln glaze crackle in the furnace too.",
                    }
                ],
            },
        )
        seeded.alice_ids = {n["id"] for n in made["created"]}
        await call_ok(
            client,
            "create_relations",
            {
                "session_id": ALICE,
                "relations": [
                    {
                        "source": "alice furnace secret",
                        "type": "SUPPORTS",
                        "target": "bob kiln guess",
                    }
                ],
            },
        )
    return seeded


def get(server: RunningServer, path: str, **headers: str) -> httpx.Response:
    return httpx.get(f"{server.base}{path}", headers=headers, timeout=30, follow_redirects=False)


def infuse(server: RunningServer, session: str, prompt: str) -> dict[str, Any]:
    reply = httpx.post(
        f"{server.base}/infuse",
        json={"session_id": handle(session), "prompt": prompt},
        timeout=60,
    )
    reply.raise_for_status()
    answer: dict[str, Any] = reply.json()
    return answer


@pytest.fixture(scope="module")
def seeded(tmp_path_factory: pytest.TempPathFactory) -> Seeded:
    """A seeded memory whose full face has answered one real /infuse per session."""
    data_dir = tmp_path_factory.mktemp("ui-seeded")
    # On a thread of its own: a browser fixture may hold this thread's event loop.
    with ThreadPoolExecutor(1) as pool:
        seeded = pool.submit(anyio.run, _seed, data_dir).result()
    with run_server(data_dir) as server:
        seeded.infused[BOB] = infuse(server, BOB, BOB_PROMPT)
        seeded.infused[ALICE] = infuse(server, ALICE, "what about the kiln glaze crackle?")
    seeded.reader_dir = tmp_path_factory.mktemp("ui-reader") / "data"
    shutil.copytree(data_dir, seeded.reader_dir)
    return seeded


@pytest.fixture(scope="module")
def full(seeded: Seeded) -> Iterator[RunningServer]:
    with run_server(seeded.data_dir) as server:
        yield server


@pytest.fixture(scope="module")
def reader(seeded: Seeded) -> Generator[RunningServer]:
    """The reader face over a copy of the seeded memory, Alice's locus hidden."""
    assert seeded.reader_dir is not None
    with run_server(seeded.reader_dir, "--face", "reader", "--hide-loci", ALICE) as server:
        yield server


@pytest.fixture(scope="module")
def empty(tmp_path_factory: pytest.TempPathFactory) -> Iterator[RunningServer]:
    with run_server(tmp_path_factory.mktemp("ui-empty")) as server:
        yield server
