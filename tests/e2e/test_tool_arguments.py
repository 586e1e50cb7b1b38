"""Every tool's arguments through a real MCP client: closed schemas, refusals in our words.

An unknown argument must be refused, never dropped (a dropped ``type`` where
``types`` was meant answers every type with no word), and the refusal must
name the field, what was wrong and the fix, with a close match for a
misspelt name, in the house style rather than pydantic's text. Nothing may be
written by a refused call: each call is otherwise valid, so a dropped argument
would let a write through, and the store's fingerprint is compared.
"""

from __future__ import annotations

import os
import shutil
from collections.abc import AsyncGenerator, Mapping
from contextlib import asynccontextmanager
from pathlib import Path
from typing import Any, cast

import anyio
import pytest
from mcp import Client
from pydantic import BaseModel

from kenning_encounter.server.app import build_server
from kenning_encounter.server.calls import ToolContext
from kenning_encounter.server.context import Runtime
from kenning_encounter.server.registry import ToolKind, ToolRegistrar
from tests.e2e.conftest import ALL_TOOLS, SESSION, call_ok, call_refused, make_settings
from tests.support.snapshot import snapshot

pytestmark = [pytest.mark.anyio, pytest.mark.usefixtures("clean_env")]
_OURS = ("KENNING_ENCOUNTER_", "NEO4J_", "GEMINI_", "OPENAI_")  # what clean_env takes out

PYDANTIC_TEXT = ("validation error", "errors.pydantic.dev", "Extra inputs", "Input should be")

# One otherwise valid call per tool, against the memory ``_record`` writes.
VALID: dict[str, dict[str, Any]] = {
    "advance_encounter": {"session_id": "another-session", "purpose": "a second line of work"},
    "close_encounter": {"session_id": SESSION, "summary": "done"},
    "create_entities": {
        "session_id": SESSION,
        "entities": [{"type": "Note", "name": "fresh note", "description": "new"}],
    },
    "create_relations": {
        "session_id": SESSION,
        "relations": [{"source": "cpu spike", "type": "SUPPORTS", "target": "cache flush"}],
    },
    "delete_entities": {"session_id": SESSION, "refs": ["cpu spike"]},
    "confirm_entities": {"session_id": SESSION, "refs": ["retry storm"]},
    "pin_entities": {"session_id": SESSION, "refs": ["retry storm"]},
    "claim_referents": {
        "session_id": SESSION,
        "claims": [{"source": "lockstep retries", "target": "lockstep retries", "resolution": "x"}],
    },
    "delete_relations": {
        "session_id": SESSION,
        "relations": [{"source": "retry storm", "type": "GROUNDS", "target": "lockstep retries"}],
    },
    "search": {"query": "retry storm"},
    "find_by_name": {"name": "retry storm"},
    "trace_provenance": {"ref": "lockstep retries"},
    "chain_history": {"node": "lockstep retries"},
    "conflicts": {"kinds": ["challenges"], "about": "cache flush"},
    "read_cypher": {"query": "MATCH (n:Note) RETURN n.name LIMIT 5"},
    "get_schema": {},
    "list_node_types": {},
    "list_relation_types": {},
    "list_vocabulary": {},
    "orient": {"session_id": SESSION},
    "gds_create_projection": {"name": "fresh"},
    "gds_pagerank": {"name": "held"},
    "gds_articlerank": {"name": "held"},
    "gds_betweenness": {"name": "held"},
    "gds_leiden": {"name": "held"},
    "gds_wcc": {"name": "held"},
    "gds_drop_projection": {"name": "held"},
    "infuse": {"session_id": "reader", "prompt": "the retry storm after deploys"},
    "infuse_meaning": {"prompt": "the retry storm"},
}

# Where each tool holds nested objects with named fields, an unknown name to put there.
NESTED: dict[str, tuple[str, str]] = {
    "create_entities": ("entities", "priority"),
    "create_relations": ("relations", "weight"),
    "delete_relations": ("relations", "weight"),
    "claim_referents": ("claims", "weight"),
}


async def _record(data_dir: Path) -> None:
    """The memory every test here starts from, written through a real client."""
    config = make_settings(data_dir)
    async with Client(build_server(config, Runtime(config))) as client:
        await call_ok(client, "advance_encounter", {"session_id": SESSION, "purpose": "deploys"})
        await call_ok(
            client,
            "create_entities",
            {
                "session_id": SESSION,
                "entities": [
                    {"type": "Observation", "name": "retry storm", "description": "A storm."},
                    {"type": "Observation", "name": "cpu spike", "description": "CPU spikes."},
                    {"type": "Concept", "name": "lockstep retries", "description": "Lockstep."},
                    {"type": "Hypothesis", "name": "cache flush", "description": "A flush."},
                ],
            },
        )
        await call_ok(
            client,
            "create_relations",
            {
                "session_id": SESSION,
                "relations": [
                    {"source": "retry storm", "type": "GROUNDS", "target": "lockstep retries"}
                ],
            },
        )


@pytest.fixture(scope="module")
def recorded_once(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """``_record``'s memory, written once for the module; each test's ``seeded`` copies it."""
    data_dir = tmp_path_factory.mktemp("recorded") / "memory"
    with pytest.MonkeyPatch.context() as patch:  # as clean_env leaves a test's settings
        for key in list(os.environ):
            if key.startswith(_OURS):
                patch.delenv(key)
        patch.chdir(data_dir.parent)
        anyio.run(_record, data_dir)
    return data_dir


@pytest.fixture
def recorded(recorded_once: Path, tmp_path: Path) -> Path:
    """This test's own copy of the recorded memory, at ``tmp_path / "memory"``."""
    return shutil.copytree(recorded_once, tmp_path / "memory")


@asynccontextmanager
async def seeded(data_dir: Path) -> AsyncGenerator[tuple[Client, Runtime]]:
    """A client of a server on ``recorded``'s copy, with the projection "held" made
    (a projection lives in the server, not the store)."""
    config = make_settings(data_dir)
    runtime = Runtime(config)
    async with Client(build_server(config, runtime)) as client:
        await call_ok(client, "gds_create_projection", {"name": "held"})
        yield client, runtime


def assert_house_style(text: str) -> None:
    for phrase in PYDANTIC_TEXT:
        assert phrase not in text, f"pydantic's own text reached the client: {text!r}"


def object_levels(schema: Mapping[str, Any], path: str = "") -> list[tuple[str, Mapping[str, Any]]]:
    """Every object schema inside ``schema`` (in $defs, items, anyOf ... alike), by path."""
    found: list[tuple[str, Mapping[str, Any]]] = []
    if schema.get("type") == "object" or "properties" in schema:
        found.append((path or "/", schema))
    for key, value in schema.items():
        if isinstance(value, Mapping):
            found += object_levels(cast(Mapping[str, Any], value), f"{path}/{key}")
        elif isinstance(value, list):
            for i, item in enumerate(cast(list[Any], value)):
                if isinstance(item, Mapping):
                    found += object_levels(cast(Mapping[str, Any], item), f"{path}/{key}/{i}")
    return found


async def test_every_input_schema_is_closed_at_every_level(recorded: Path) -> None:
    async with seeded(recorded) as (client, _):
        tools = {t.name: t for t in (await client.list_tools()).tools}
    assert set(tools) == ALL_TOOLS
    maps: list[str] = []
    for name, tool in tools.items():
        levels = object_levels(tool.input_schema)
        assert levels[0][0] == "/", name
        for path, level in levels:
            if "properties" in level:
                assert level.get("additionalProperties") is False, f"{name} {path} is open"
            else:  # a map of free keys (read_cypher's params): nothing to misspell
                maps.append(f"{name}{path}")
    assert maps == ["read_cypher/properties/params/anyOf/0"]
    # The nested objects the schema walk found are exactly those NESTED exercises.
    nested = {
        name
        for name, tool in tools.items()
        if any("properties" in level for path, level in object_levels(tool.input_schema)[1:])
    }
    assert nested == set(NESTED)


async def test_an_unknown_argument_is_refused_by_every_tool_and_writes_nothing(
    recorded: Path,
) -> None:
    assert set(VALID) == ALL_TOOLS
    async with seeded(recorded) as (client, runtime):
        store = runtime.context.store
        listed = {t.name: t for t in (await client.list_tools()).tools}
        for tool, arguments in VALID.items():
            before = snapshot(store)
            refusal = await call_refused(client, tool, {**arguments, "colour": "red"})
            assert snapshot(store) == before, f"{tool}: a refused call changed the store"
            assert "colour: unknown field" in refusal, refusal
            assert_house_style(refusal)
            for declared in listed[tool].input_schema.get("properties", {}):
                assert declared in refusal, f"{tool}: {declared!r} not offered in {refusal!r}"


async def test_an_unknown_nested_field_is_refused_and_writes_nothing(recorded: Path) -> None:
    async with seeded(recorded) as (client, runtime):
        store = runtime.context.store
        for tool, (field, unknown) in NESTED.items():
            arguments = dict(VALID[tool])
            items = [dict(x) for x in arguments[field]]
            items[-1][unknown] = "x"
            before = snapshot(store)
            refusal = await call_refused(client, tool, {**arguments, field: items})
            assert snapshot(store) == before, f"{tool}: a refused call changed the store"
            assert f"{field}[0].{unknown}: unknown field" in refusal, refusal
            assert "Allowed here:" in refusal and next(iter(VALID[tool][field][0])) in refusal
            assert_house_style(refusal)


@pytest.mark.parametrize(
    ("tool", "arguments", "said"),
    [
        ("search", {"query": "x", "type": ["Note"]}, "type: unknown field; did you mean 'types'?"),
        ("advance_encounter", {"session_id": "s2", "purpse": "p"}, "did you mean 'purpose'?"),
        ("orient", {"budget": 9000}, "budget: unknown field; did you mean 'budget_chars'?"),
        (
            "create_entities",
            {"session_id": SESSION, "entities": [{"type": "Note", "name": "n", "descripton": "d"}]},
            "entities[0].descripton: unknown field; did you mean 'description'?",
        ),
        (
            "create_relations",
            {
                "session_id": SESSION,
                "relations": [{"source": "cpu spike", "type": "SUPPORTS", "traget": "cache flush"}],
            },
            "relations[0].traget: unknown field; did you mean 'target'?",
        ),
        ("search", {"query": "x", "types": ["Notes"]}, "did you mean 'Note'?"),
    ],
    ids=["search.type", "advance.purpse", "orient.budget", "entity field", "relation", "type name"],
)
async def test_a_misspelt_name_gets_a_suggestion(
    recorded: Path, tool: str, arguments: dict[str, Any], said: str
) -> None:
    async with seeded(recorded) as (client, runtime):
        before = snapshot(runtime.context.store)
        refusal = await call_refused(client, tool, arguments)
        assert said in refusal, refusal
        assert_house_style(refusal)
        assert snapshot(runtime.context.store) == before


@pytest.mark.parametrize(
    ("tool", "arguments", "said"),
    [
        ("search", {"query": "x", "limit": "ten"}, "limit: expected an integer, got a string"),
        ("search", {"query": "x", "types": 7}, "types: expected a list of strings or null"),
        ("search", {"query": "x", "include_superseded": "maybe"}, "expected true or false"),
        (
            "infuse",
            {"session_id": "r", "prompt": "p", "trajectory": [1]},
            "trajectory[0]: expected a string, got a number",
        ),
        (
            "create_entities",
            {"session_id": SESSION, "entities": ["a note"]},
            "entities[0]: expected an object, got a string",
        ),
        (
            "read_cypher",
            {"query": "MATCH (n) RETURN n", "params": [1]},
            "params: expected an object",
        ),
        ("search", {"types": ["Note"]}, "query: required, and missing; add it"),
        ("search", {"query": "x", "limit": 1000}, "limit: must be at most 100"),
        # JSON true is no integer; read as 1 it answered a question never asked.
        ("search", {"query": "x", "limit": True}, "limit: expected an integer, got true or false"),
        (
            "find_by_name",
            {"name": "retry storm", "as_of": True},
            "as_of: expected an integer or a string or null (or leave it out), got true or false",
        ),
        (
            "trace_provenance",
            {"ref": "retry storm", "depth": False},
            "depth: expected an integer, got true or false",
        ),
        (
            "create_entities",
            {"session_id": SESSION, "entities": []},
            "entities: must hold at least",
        ),
    ],
    ids=[
        "int",
        "list",
        "bool",
        "list item",
        "object",
        "map",
        "missing",
        "maximum",
        "true as limit",
        "true as as_of",
        "false as depth",
        "min items",
    ],
)
async def test_a_wrong_type_names_the_field_and_what_it_expects(
    recorded: Path, tool: str, arguments: dict[str, Any], said: str
) -> None:
    async with seeded(recorded) as (client, runtime):
        before = snapshot(runtime.context.store)
        refusal = await call_refused(client, tool, arguments)
        assert said in refusal, refusal
        assert_house_style(refusal)
        assert snapshot(runtime.context.store) == before


async def test_a_json_string_for_a_list_is_still_accepted(recorded: Path) -> None:
    """Some clients send a list as a JSON string; the SDK's pre-parse still applies."""
    async with seeded(recorded) as (client, _):
        found = await call_ok(
            client, "search", {"query": "retry storm", "types": '["Observation"]'}
        )
        assert found["hits"] and all(h["type"] == "Observation" for h in found["hits"])


class LooseItem(BaseModel):
    """A nested model that forgot extra='forbid'."""

    label: str


def loose_group(tools: ToolRegistrar) -> None:
    @tools.tool(ToolKind.READ, title="Loose")
    async def loose(ctx: ToolContext, item: LooseItem) -> str:
        return item.label


def test_a_tool_whose_schema_would_stay_open_is_refused_at_registration(tmp_path: Path) -> None:
    config = make_settings(tmp_path / "memory")
    with pytest.raises(TypeError, match=r"loose.*\$defs/LooseItem.*extra='forbid'"):
        build_server(config, Runtime(config), groups=[loose_group])
