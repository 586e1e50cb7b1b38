"""Bad input through the MCP layer: isError with the field named, and nothing written."""

from __future__ import annotations

from collections.abc import AsyncGenerator
from contextlib import asynccontextmanager
from pathlib import Path
from typing import Any

import anyio
import pytest
from mcp import Client

from kenning_encounter.server.app import build_server
from kenning_encounter.server.context import Runtime
from tests.e2e.conftest import SESSION, call_ok, call_refused, make_settings

pytestmark = [pytest.mark.anyio, pytest.mark.usefixtures("clean_env")]


@asynccontextmanager
async def opened(tmp_path: Path, **settings: Any) -> AsyncGenerator[Client]:
    config = make_settings(tmp_path / "memory", **settings)
    async with Client(build_server(config, Runtime(config))) as client:
        await call_ok(client, "advance_encounter", {"session_id": SESSION, "purpose": "testing"})
        yield client


async def assert_nothing_named(client: Client, *names: str) -> None:
    for name in names:
        refusal = await call_refused(client, "find_by_name", {"name": name})
        assert "no node" in refusal


CASES: list[tuple[str, dict[str, Any], list[str]]] = [
    (
        "unknown node type",
        {"entities": [{"type": "Observation", "name": "fine"}, {"type": "Fact", "name": "bad"}]},
        ["entities[1].type", "Observation", "Hypothesis"],
    ),
    (
        "unknown property, beside a good item",
        {
            "entities": [
                {"type": "Note", "name": "fine"},
                {"type": "Note", "name": "bad", "priority": "high"},
            ]
        },
        ["entities[1].priority", "description"],
    ),
    (
        "process type",
        {"entities": [{"type": "Encounter", "name": "E999"}]},
        ["entities[0].type", "advance_encounter"],
    ),
    (
        "missing required field (schema level)",
        {
            "entities": [
                {"type": "Note", "name": "fine"},
                {"type": "Note", "description": "no name"},
            ]
        },
        ["entities[1].name", "required"],
    ),
    (
        "bad status",
        {"entities": [{"type": "Question", "name": "fine", "status": "maybe"}]},
        ["entities[0].status", "open"],
    ),
    (
        "bad time",
        {"entities": [{"type": "Observation", "name": "fine", "t_observed": "last tuesday"}]},
        ["entities[0].t_observed", "ISO-8601"],
    ),
    (
        "missing required type property",
        {"entities": [{"type": "Component", "name": "fine", "source_kind": "file"}]},
        ["entities[0].source_label"],
    ),
    ("empty list", {"entities": []}, ["entities"]),
]


@pytest.mark.parametrize(("case", "arguments", "named"), CASES, ids=[c[0] for c in CASES])
async def test_create_entities_refuses_and_writes_nothing(
    tmp_path: Path, case: str, arguments: dict[str, Any], named: list[str]
) -> None:
    async with opened(tmp_path) as client:
        before = await call_ok(client, "search", {"query": "fine bad"})
        refusal = await call_refused(
            client, "create_entities", {"session_id": SESSION, **arguments}
        )
        for text in named:
            assert text in refusal, f"{case}: {text!r} not in {refusal!r}"
        await assert_nothing_named(client, "fine", "bad")
        after = await call_ok(client, "search", {"query": "fine bad"})
        assert after["hits"] == before["hits"] == []


async def test_relation_refusals_name_the_rule_and_write_nothing(tmp_path: Path) -> None:
    async with opened(tmp_path) as client:
        await call_ok(
            client,
            "create_entities",
            {
                "session_id": SESSION,
                "entities": [
                    {"type": "Question", "name": "q"},
                    {"type": "Concept", "name": "c"},
                    {"type": "Observation", "name": "o"},
                ],
            },
        )
        refusal = await call_refused(
            client,
            "create_relations",
            {
                "session_id": SESSION,
                "relations": [
                    {"source": "o", "type": "GROUNDS", "target": "c"},
                    {"source": "q", "type": "SUPPORTS", "target": "c"},
                ],
            },
        )
        assert "relations[1]" in refusal and "SUPPORTS" in refusal and "Question" in refusal
        trace = await call_ok(client, "trace_provenance", {"ref": "c"})
        assert trace.get("edges", []) == []  # the good GROUNDS was not written either

        unknown = await call_refused(
            client,
            "create_relations",
            {
                "session_id": SESSION,
                "relations": [{"source": "o", "type": "CAUSES", "target": "c"}],
            },
        )
        assert "relations[0].type" in unknown and "GROUNDS" in unknown

        why = await call_refused(
            client,
            "create_relations",
            {
                "session_id": SESSION,
                "relations": [{"source": "o", "type": "SUPPORTS", "target": "c", "weight": 3}],
            },
        )
        assert "weight" in why


async def test_read_and_session_arguments_are_checked(tmp_path: Path) -> None:
    async with opened(tmp_path) as client:
        assert "limit" in await call_refused(client, "search", {"query": "x", "limit": 1000})
        assert "types[0]" in await call_refused(client, "search", {"query": "x", "types": ["Fact"]})
        assert "depth" in await call_refused(client, "trace_provenance", {"ref": "x", "depth": 99})
        assert "session_id" in await call_refused(client, "advance_encounter", {"purpose": "p"})
        assert "close_summary" in await call_refused(
            client, "advance_encounter", {"session_id": SESSION, "purpose": "second while open"}
        )
        refusal = await call_refused(
            client, "read_cypher", {"query": "MATCH (n:Note) SET n.name = 'x' RETURN n"}
        )
        assert "read_cypher refused" in refusal
        copy = await call_refused(
            client,
            "read_cypher",
            {"query": f"COPY (MATCH (n) RETURN n) TO '{tmp_path / 'out.csv'}'"},
        )
        assert "COPY" in copy
        assert not (tmp_path / "out.csv").exists()


async def test_writes_without_an_open_encounter_are_refused(tmp_path: Path) -> None:
    config = make_settings(tmp_path / "memory")
    async with Client(build_server(config, Runtime(config))) as client:
        refusal = await call_refused(
            client,
            "create_entities",
            {"session_id": "never-advanced", "entities": [{"type": "Note", "name": "n"}]},
        )
        assert "advance_encounter" in refusal
        assert "no node" in await call_refused(client, "find_by_name", {"name": "n"})


async def test_a_read_past_the_read_timeout_is_an_error_and_writes_are_not_cut(
    tmp_path: Path,
) -> None:
    # A deadline no thread can meet: the read is answered with the timeout, every time.
    async with opened(tmp_path, read_timeout=1e-9) as client:
        refusal = await call_refused(client, "search", {"query": "anything"})
        assert "read timeout" in refusal and "KENNING_ENCOUNTER_READ_TIMEOUT" in refusal
        created = await call_ok(
            client,
            "create_entities",
            {"session_id": SESSION, "entities": [{"type": "Note", "name": "still written"}]},
        )
        assert created["created"][0]["name"] == "still written"


async def test_a_restart_keeps_the_encounter_and_a_dissolved_one_is_sealed_by_name(
    tmp_path: Path,
) -> None:
    async with opened(tmp_path) as client:
        first = await call_ok(client, "search", {"query": "nothing here yet"})
        assert first["hits"] == []
    config = make_settings(tmp_path / "memory")
    runtime = Runtime(config)
    async with Client(build_server(config, runtime)) as client:
        # The restart ended nothing: the session still writes into its encounter.
        created = await call_ok(
            client,
            "create_entities",
            {"session_id": SESSION, "entities": [{"type": "Note", "name": "after the restart"}]},
        )
        name = created["encounter"]
        await anyio.sleep(0.05)
        assert runtime.context.memory.sweep_idle(0.01) == [name]
        refusal = await call_refused(
            client, "close_encounter", {"session_id": SESSION, "summary": "s"}
        )
        assert "dissolved" in refusal and f"encounter={name!r}" in refusal
        sealed = await call_ok(
            client,
            "close_encounter",
            {"session_id": SESSION, "summary": "finished before the sweep", "encounter": name},
        )
        assert sealed["encounter"]["name"] == name and sealed["encounter"]["state"] == "sealed"
        other = await call_refused(
            client,
            "close_encounter",
            {"session_id": "someone-else", "summary": "s", "encounter": name},
        )
        assert "only its own session" in other
