"""search's ``when`` through a real MCP client: a filter by a node's time, and a time named
in the query that ranks without filtering.

A node's time is its world time where it states one (here ``t_observed``), else
when it was recorded (here: now, as the test writes).
"""

from __future__ import annotations

from collections.abc import AsyncGenerator
from contextlib import asynccontextmanager
from pathlib import Path
from typing import Any

import pytest
from mcp import Client

from kenning_encounter.server.app import build_server
from kenning_encounter.server.context import Runtime
from tests.e2e.conftest import SESSION, call_ok, call_refused, make_settings
from tests.support.snapshot import snapshot

pytestmark = [pytest.mark.anyio, pytest.mark.usefixtures("clean_env")]

OBSERVED = {
    "deploy in april": "2023-04-12T10:00:00Z",
    "deploy in may": "2023-05-07T09:30:00Z",
    "deploy in june": "2023-06-20T16:00:00Z",
}


@asynccontextmanager
async def seeded(tmp_path: Path) -> AsyncGenerator[tuple[Client, Runtime]]:
    config = make_settings(tmp_path / "memory")
    runtime = Runtime(config)
    async with Client(build_server(config, runtime)) as client:
        await call_ok(client, "advance_encounter", {"session_id": SESSION, "purpose": "deploys"})
        entities: list[dict[str, Any]] = [
            {
                "type": "Observation",
                "name": name,
                "description": "The deploy rolled back after a canary failure.",
                "t_observed": when,
            }
            for name, when in OBSERVED.items()
        ]
        entities.append(
            {
                "type": "Note",
                "name": "deploy note today",
                "description": "The deploy rolled back after a canary failure.",
            }
        )
        await call_ok(client, "create_entities", {"session_id": SESSION, "entities": entities})
        yield client, runtime


async def _names(client: Client, **arguments: Any) -> tuple[list[str], str]:
    result = await call_ok(client, "search", {"query": "deploy rolled back", **arguments})
    return [h["name"] for h in result["hits"]], result.get("note", "")


async def test_when_keeps_only_the_nodes_of_that_time(tmp_path: Path) -> None:
    async with seeded(tmp_path) as (client, _):
        names, note = await _names(client, when="2023-05-01..2023-05-31")
        assert names == ["deploy in may"]
        assert "when" in note
        names, _ = await _names(client, when="2023-05-07")
        assert names == ["deploy in may"]
        names, _ = await _names(client, when="2023-05-01..")
        assert set(names) == {"deploy in may", "deploy in june", "deploy note today"}
        names, _ = await _names(client, when="in April 2023")
        assert names == ["deploy in april"]
        # Record time where no world time is stated: the note written just now.
        names, _ = await _names(client, when="today")
        assert names == ["deploy note today"]
        names, note = await _names(client, when="1999-01-01..1999-12-31")
        assert names == [] and "nothing matched" in note


async def test_when_takes_a_bare_time_and_two_joined_as_a_range(tmp_path: Path) -> None:
    # The whole value is meant as a time: a bare year or month is one there.
    async with seeded(tmp_path) as (client, _):
        names, _ = await _names(client, when="2023")
        assert set(names) == set(OBSERVED)
        names, _ = await _names(client, when="April to May 2023")
        assert set(names) == {"deploy in april", "deploy in may"}
        names, _ = await _names(client, when="2023-05-01 to 2023-06-30")
        assert set(names) == {"deploy in may", "deploy in june"}
        names, _ = await _names(client, when="the past 2 hours")
        assert names == ["deploy note today"]


async def test_a_time_in_the_query_ranks_first_and_filters_nothing(tmp_path: Path) -> None:
    async with seeded(tmp_path) as (client, _):
        plain, _ = await _names(client)
        names, note = await _names(client, query="deploy rolled back in June 2023")
        assert names[0] == "deploy in june"
        assert set(names) == set(plain)  # nothing left out
        assert "ranked higher" in note
        names, _ = await _names(client, query="deploy rolled back in April 2023")
        assert names[0] == "deploy in april"


@pytest.mark.parametrize("when", ["soon", "2023-05-31..2023-05-01", "2023-13-01..", "bugs in May"])
async def test_an_unreadable_when_is_refused_naming_the_field_and_the_fix(
    tmp_path: Path, when: str
) -> None:
    async with seeded(tmp_path) as (client, runtime):
        before = snapshot(runtime.context.store)
        refusal = await call_refused(client, "search", {"query": "deploy", "when": when})
        assert "when:" in refusal and "2023-05-01..2023-05-31" in refusal, refusal
        assert "last week" in refusal
        assert snapshot(runtime.context.store) == before


async def test_a_date_in_numbers_is_read_only_where_day_and_month_cannot_swap(
    tmp_path: Path,
) -> None:
    async with seeded(tmp_path) as (client, runtime):
        names, _ = await _names(client, when="20/06/2023")
        assert names == ["deploy in june"]
        before = snapshot(runtime.context.store)
        refusal = await call_refused(client, "search", {"query": "deploy", "when": "07/05/2023"})
        assert "when:" in refusal and "2023-05-07" in refusal and "2023-07-05" in refusal
        assert "ISO" in refusal, refusal
        assert snapshot(runtime.context.store) == before


async def test_a_time_named_by_an_event_is_placed_by_its_record(tmp_path: Path) -> None:
    """ "before the migration": the memory's record of the migration says when it was."""
    config = make_settings(tmp_path / "memory")
    async with Client(build_server(config, Runtime(config))) as client:
        await call_ok(client, "advance_encounter", {"session_id": SESSION, "purpose": "db"})
        written = [
            ("sharding", "We decided to shard the orders tables.", "2026-07-01"),
            ("mysql", "We decided to keep the orders tables on MySQL.", "2026-03-02"),
            ("migration", "The Postgres migration finished.", "2026-05-10"),
        ]
        entities: list[dict[str, Any]] = [
            {"type": "Observation", "name": n, "description": d, "t_observed": f"{t}T09:00:00Z"}
            for n, d, t in written
        ]
        await call_ok(client, "create_entities", {"session_id": SESSION, "entities": entities})
        for side, first in (("before", "mysql"), ("after", "sharding")):
            result = await call_ok(
                client, "search", {"query": f"what did we decide {side} the migration"}
            )
            names = [h["name"] for h in result["hits"]]
            assert {"mysql", "sharding"} <= set(names)
            assert min(("mysql", "sharding"), key=names.index) == first, side
            assert f"{side} the migration (2026-05-10)" in result["note"]
        # As a filter: only that side of it.
        kept = await call_ok(
            client, "search", {"query": "we decided", "when": "before the migration"}
        )
        assert [h["name"] for h in kept["hits"]] == ["mysql"]


async def test_each_hit_says_the_time_it_states(tmp_path: Path) -> None:
    async with seeded(tmp_path) as (client, _):
        result = await call_ok(client, "search", {"query": "deploy rolled back"})
        when = {h["name"]: h.get("when") for h in result["hits"]}
        assert when == {**OBSERVED, "deploy note today": None}  # the note states none
