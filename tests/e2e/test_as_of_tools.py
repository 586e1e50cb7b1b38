"""as_of through a real MCP client: find_by_name and search as the memory stood at a past
tick (a status moved since, a version superseded since), a time read as the writes made by
then, and a bad as_of refused naming the field with nothing written."""

from __future__ import annotations

from collections.abc import AsyncGenerator
from contextlib import asynccontextmanager
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

import pytest
from mcp import Client

from kenning_encounter.server.app import build_server
from kenning_encounter.server.context import Runtime
from tests.e2e.conftest import SESSION, call_ok, call_refused, make_settings
from tests.support.snapshot import snapshot

pytestmark = [pytest.mark.anyio, pytest.mark.usefixtures("clean_env")]


@asynccontextmanager
async def history(tmp_path: Path) -> AsyncGenerator[tuple[Client, Runtime, dict[str, Any]]]:
    """A hypothesis, supported, then revised: the ticks of each step."""
    config = make_settings(tmp_path / "memory")
    runtime = Runtime(config)
    async with Client(build_server(config, runtime)) as client:
        await call_ok(client, "advance_encounter", {"session_id": SESSION, "purpose": "retries"})
        made = await call_ok(
            client,
            "create_entities",
            {
                "session_id": SESSION,
                "entities": [
                    {"type": "Hypothesis", "name": "storm", "description": "auth retries storm"},
                    {"type": "Observation", "name": "seen", "description": "retries at 09:00"},
                ],
            },
        )
        moment = datetime.now(UTC).isoformat()
        supported = await call_ok(
            client,
            "create_relations",
            {
                "session_id": SESSION,
                "relations": [{"source": "seen", "type": "SUPPORTS", "target": "storm"}],
            },
        )
        revised = await call_ok(
            client,
            "create_entities",
            {
                "session_id": SESSION,
                "entities": [
                    {
                        "type": "Hypothesis",
                        "name": "storm",
                        "description": "auth retries storm without jitter",
                        "supersedes": "storm",
                        "revision_why": "the jitter was missing",
                    }
                ],
            },
        )
        ticks = {
            "made": made["tick"],
            "moment": moment,
            "supported": supported["tick"],
            "revised": revised["tick"],
        }
        yield client, runtime, ticks


async def test_find_by_name_and_search_read_the_memory_as_it_stood(tmp_path: Path) -> None:
    async with history(tmp_path) as (client, _, ticks):
        now = await call_ok(client, "find_by_name", {"name": "storm"})
        assert "jitter" in now["node"]["description"] and now.get("as_of") is None
        then = await call_ok(client, "find_by_name", {"name": "storm", "as_of": ticks["made"]})
        assert then["node"]["status"] == "untested" and "jitter" not in then["node"]["description"]
        assert then["as_of"] == ticks["made"] and not then.get("history")
        backed = await call_ok(
            client, "find_by_name", {"name": "storm", "as_of": ticks["supported"]}
        )
        assert backed["node"]["status"] == "supported"
        # A time: the writes made by then, here up to the creation.
        timed = await call_ok(client, "find_by_name", {"name": "storm", "as_of": ticks["moment"]})
        assert timed["as_of"] == ticks["made"]
        found = await call_ok(client, "search", {"query": "retries", "as_of": ticks["made"]})
        assert "as of tick" in found["note"]
        assert all("jitter" not in h["description"] for h in found["hits"])
        # orient over the graph of then: at tick 0 nothing was held yet.
        assert (await call_ok(client, "orient", {"as_of": 0})).get("guide")
        assert not (await call_ok(client, "orient", {})).get("guide")
        # The re-entry payload's lists as of then; the encounter itself opens now.
        entry = await call_ok(
            client,
            "advance_encounter",
            {
                "session_id": SESSION,
                "purpose": "look back",
                "close_summary": "revised the storm",
                "as_of": ticks["supported"],
            },
        )
        assert entry["as_of"] == ticks["supported"]
        live = [(h["name"], h["status"], h["description"]) for h in entry["live_hypotheses"]]
        assert live == [("storm", "supported", "auth retries storm")]


@pytest.mark.parametrize(
    ("as_of", "says"),
    [(99_999, "has not happened"), ("yesterday-ish", "neither a tick"), (-3, "0 or more")],
)
async def test_a_bad_as_of_is_refused_and_nothing_is_written(
    tmp_path: Path, as_of: Any, says: str
) -> None:
    async with history(tmp_path) as (client, runtime, _):
        before = snapshot(runtime.context.store)
        for tool, arguments in (
            ("find_by_name", {"name": "storm"}),
            (
                "advance_encounter",
                {"session_id": SESSION, "purpose": "again", "close_summary": "x"},
            ),
        ):
            refusal = await call_refused(client, tool, {**arguments, "as_of": as_of})
            assert "as_of" in refusal and says in refusal and "omit as_of" in refusal, refusal
        assert snapshot(runtime.context.store) == before
