"""Faces and the namespace: what a client is served, under which names, and what it sees."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest
from mcp import Client

from kenning_encounter.errors import ConfigError
from kenning_encounter.server.app import build_server
from kenning_encounter.server.context import Runtime
from tests.e2e.conftest import ALL_TOOLS, READ_TOOLS, call_ok, call_refused, make_settings

pytestmark = [pytest.mark.anyio, pytest.mark.usefixtures("clean_env")]

ALICE, BOB = "session-alice", "session-bob"


def server_for(data_dir: Path, **values: Any) -> Any:
    settings = make_settings(data_dir, **values)
    return build_server(settings, Runtime(settings))


async def record(client: Client, session: str, name: str, words: str) -> str:
    await call_ok(
        client, "advance_encounter", {"session_id": session, "purpose": f"{session} work"}
    )
    created = await call_ok(
        client,
        "create_entities",
        {
            "session_id": session,
            "entities": [{"type": "Observation", "name": name, "description": words}],
        },
    )
    return created["created"][0]["id"]


async def test_reader_face_serves_only_read_tools_and_refuses_writes(tmp_path: Path) -> None:
    data_dir = tmp_path / "memory"
    async with Client(server_for(data_dir)) as full:
        await record(full, ALICE, "alice saw", "shared lantern word")

    async with Client(server_for(data_dir, face="reader")) as reader:
        listed = {t.name for t in (await reader.list_tools()).tools}
        assert listed == READ_TOOLS
        assert all(
            t.annotations and t.annotations.read_only_hint
            for t in (await reader.list_tools()).tools
        )
        for name in sorted(ALL_TOOLS - READ_TOOLS):
            refusal = await call_refused(
                reader,
                name,
                {
                    "session_id": BOB,
                    "purpose": "p",
                    "summary": "s",
                    "entities": [],
                    "relations": [],
                    "refs": [],
                },
            )
            assert "Unknown tool" in refusal
        assert "read-only" in (reader.instructions or "")
        hits = await call_ok(reader, "search", {"query": "lantern"})
        assert [h["name"] for h in hits["hits"]] == ["alice saw"]


async def test_hidden_loci_vanish_from_every_read(tmp_path: Path) -> None:
    data_dir = tmp_path / "memory"
    async with Client(server_for(data_dir)) as full:
        alice_id = await record(full, ALICE, "alice saw", "shared lantern word")
        await record(full, BOB, "bob saw", "shared lantern word too")

    async with Client(server_for(data_dir, face="reader", hide_loci=[ALICE])) as reader:
        hits = await call_ok(reader, "search", {"query": "lantern", "limit": 10})
        assert [h["name"] for h in hits["hits"]] == ["bob saw"]
        assert "no node" in await call_refused(reader, "find_by_name", {"name": "alice saw"})
        assert "no node" in await call_refused(reader, "find_by_name", {"name": alice_id})
        assert "no node" in await call_refused(reader, "trace_provenance", {"ref": "alice saw"})
        refusal = await call_refused(
            reader, "read_cypher", {"query": "MATCH (o:Observation) RETURN o.name"}
        )
        assert "hidden" in refusal
        # Bob's own reads are unchanged.
        assert (await call_ok(reader, "find_by_name", {"name": "bob saw"}))["node"][
            "name"
        ] == "bob saw"

    async with Client(server_for(data_dir, face="reader")) as unhidden:
        hits = await call_ok(unhidden, "search", {"query": "lantern", "limit": 10})
        assert {h["name"] for h in hits["hits"]} == {"alice saw", "bob saw"}


def test_hiding_loci_needs_the_reader_face(tmp_path: Path) -> None:
    with pytest.raises(ConfigError, match="reader"):
        server_for(tmp_path / "memory", hide_loci=[ALICE])


async def test_namespace_prefixes_every_tool(tmp_path: Path) -> None:
    async with Client(server_for(tmp_path / "memory", namespace="myapp")) as client:
        listed = {t.name for t in (await client.list_tools()).tools}
        assert listed == {f"myapp-{n}" for n in ALL_TOOLS}
        assert "myapp-advance_encounter" in (client.instructions or "")
        opened = await call_ok(
            client, "myapp-advance_encounter", {"session_id": ALICE, "purpose": "namespaced"}
        )
        assert opened["encounter"]["state"] == "open"
        assert "Unknown tool" in await call_refused(
            client, "advance_encounter", {"session_id": ALICE, "purpose": "bare name"}
        )


async def test_tools_carry_schemas_written_for_a_model(tmp_path: Path) -> None:
    async with Client(server_for(tmp_path / "memory")) as client:
        tools = {t.name: t for t in (await client.list_tools()).tools}
    for tool in tools.values():
        assert tool.description and tool.output_schema, tool.name
        for name, prop in tool.input_schema.get("properties", {}).items():
            assert prop.get("description"), f"{tool.name}.{name} has no description"
    assert tools["delete_entities"].annotations.destructive_hint  # type: ignore[union-attr]
    entity = tools["create_entities"].input_schema["$defs"]["EntityIn"]["properties"]
    assert "Observation" in entity["type"]["description"]


@pytest.mark.parametrize(
    ("tool", "path", "fields"),
    [
        ("search", "hits", {"id", "type", "name", "description", "status", "encounter",
                            "created_at", "score", "tier"}),
        ("create_entities", "created", {"id", "type", "name", "status", "revises"}),
        ("create_relations", "created", {"source", "type", "target", "encounter",
                                         "revision_why"}),
    ],
)  # fmt: skip
async def test_long_lists_name_their_fields_in_place(
    tmp_path: Path, tool: str, path: str, fields: set[str]
) -> None:
    """A validating client checks each item against the output schema on every call,
    walking each field's own schema (and resolving any $ref) per item: an item of a long
    list is an object whose fields are named and described in its description, and the
    ones always sent are required."""
    async with Client(server_for(tmp_path / "memory")) as client:
        tools = {t.name: t for t in (await client.list_tools()).tools}
    schema = tools[tool].output_schema or {}
    assert "$ref" not in json.dumps(schema)
    item = schema["properties"][path]["items"]
    assert item["type"] == "object"
    assert not {"properties", "anyOf", "additionalProperties"} & set(item), "a field walked"
    assert set(item["required"]) <= fields
    named = item["description"].split("Fields: ", 1)[1]
    assert all(f"{f} (" in named for f in fields), named


async def test_a_call_to_a_tool_not_served_says_what_to_call_instead(tmp_path: Path) -> None:
    """The SDK's "Unknown tool: x" named no fix: a model on the reader face, on a
    namespaced server or with a slip of the pen could only guess. Each now says why and
    what to call; nothing is written."""
    async with Client(server_for(tmp_path / "reader", face="reader")) as reader:
        refusal = await call_refused(
            reader, "create_entities", {"session_id": ALICE, "entities": []}
        )
        assert refusal.startswith("Unknown tool: create_entities")
        assert "reader face" in refusal and "write tool" in refusal and "full face" in refusal
    async with Client(server_for(tmp_path / "named", namespace="myapp")) as named:
        refusal = await call_refused(named, "search", {"query": "x"})
        assert "myapp-search" in refusal
        refusal = await call_refused(named, "myapp-serch", {"query": "x"})
        assert "did you mean 'myapp-search'" in refusal
    async with Client(server_for(tmp_path / "plain")) as plain:
        assert "did you mean 'search'" in await call_refused(plain, "serch", {"query": "x"})
        refusal = await call_refused(plain, "frobnicate", {})
        assert "tools/list" in refusal
        hits = await call_ok(plain, "search", {"query": "x"})
        assert hits["hits"] == []
