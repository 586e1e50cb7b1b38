"""A read past its deadline is given up and stops, through a real MCP client.

Before: the client had its timeout at once, but the read ran on to its end on its
worker thread. An ``orient`` read, built and saved its reading as the encounter's
baseline for drift, though nobody ever saw it; over a million nodes that was half a
minute of a store reader and a core for every retry.
"""

from __future__ import annotations

import time
from pathlib import Path

import anyio
import pytest
from mcp import Client
from mcp.shared.exceptions import MCPError

from kenning_encounter.server.app import build_server
from kenning_encounter.server.context import Runtime
from tests.e2e.conftest import SESSION, call_ok, call_refused, make_settings, signed

pytestmark = [pytest.mark.anyio, pytest.mark.usefixtures("clean_env")]


async def test_an_orient_past_its_deadline_stops_and_saves_no_reading(tmp_path: Path) -> None:
    config = make_settings(tmp_path / "memory", read_timeout=0.001)
    runtime = Runtime(config)
    async with Client(build_server(config, runtime)) as client:
        opened = await call_ok(
            client, "advance_encounter", {"session_id": SESSION, "purpose": "a reading"}
        )
        entities = [
            {"type": "Note", "name": f"note {i}", "description": f"note number {i}"}
            for i in range(200)
        ]
        await call_ok(client, "create_entities", {"session_id": SESSION, "entities": entities})
        refusal = await call_refused(client, "orient", {"session_id": SESSION})
        assert "read timeout" in refusal and "KENNING_ENCOUNTER_READ_TIMEOUT" in refusal
        # Nothing of an orient narrows but the memory: it says what to do instead.
        assert "whole memory" in refusal and "gds_create_projection" in refusal
        # Time enough for a reading left to run to finish and save itself (about 0.1 s).
        await anyio.sleep(1.5)
        baselines = runtime.context.require_services().baselines
        assert baselines.previous(None) is None, opened


async def test_an_infusion_past_its_deadline_is_no_fault_of_the_server(
    tmp_path: Path, caplog: pytest.LogCaptureFixture
) -> None:
    # Given up, an infusion stops at its next read: that is its caller leaving, not a
    # failure to log with a traceback.
    config = make_settings(tmp_path / "memory", read_timeout=0.001)
    async with Client(build_server(config, Runtime(config))) as client:
        await call_ok(client, "advance_encounter", {"session_id": SESSION, "purpose": "notes"})
        entities = [{"type": "Note", "name": "retry storm", "description": "retries pile up"}]
        await call_ok(client, "create_entities", {"session_id": SESSION, "entities": entities})
        with caplog.at_level("WARNING"):
            refusal = await call_refused(
                client, "infuse", {"session_id": "reader", "prompt": "the retry storm again"}
            )
            await anyio.sleep(0.5)
        assert "read timeout" in refusal
        assert not [r for r in caplog.records if "infusion failed" in r.getMessage()]


async def test_an_orient_its_client_cancels_stops_and_saves_no_reading(tmp_path: Path) -> None:
    # The client gives up first (its own timeout sends notifications/cancelled); the
    # server's deadline is far off.
    config = make_settings(tmp_path / "memory")
    runtime = Runtime(config)
    async with Client(build_server(config, runtime)) as client:
        await call_ok(client, "advance_encounter", {"session_id": SESSION, "purpose": "a reading"})
        for start in range(0, 6_000, 1_000):
            entities = [
                {"type": "Note", "name": f"note {i}", "description": f"note number {i}"}
                for i in range(start, start + 1_000)
            ]
            await call_ok(client, "create_entities", {"session_id": SESSION, "entities": entities})
        began = time.monotonic()
        with pytest.raises(MCPError):
            await client.call_tool(
                "orient", signed({"session_id": SESSION}), read_timeout_seconds=0.01
            )
        assert time.monotonic() - began < 5
        # A reading left to run would have saved itself: about 0.1-0.2 s here once the
        # analytics are imported (as in a whole run; 1 s alone), so the client gives up
        # at 10 ms, and the memory is large enough that the server hears it mid-reading. The wait lets the
        # event loop run: the server, in this process, takes the client's cancellation
        # there (a blocking sleep held it back until the reading had saved itself).
        await anyio.sleep(3)
        assert runtime.context.require_services().baselines.previous(None) is None
        # The next reading is whole, and saved.
        await call_ok(client, "orient", {"session_id": SESSION})
        assert runtime.context.require_services().baselines.previous(None) is not None


WHOLE_READINGS = (
    ("orient", {}),
    ("orient", {"as_of": 1}),
    ("conflicts", {}),
    ("gds_create_projection", {"name": "whole"}),
)


async def test_whole_memory_readings_wait_for_the_one_under_way(tmp_path: Path) -> None:
    # One whole-memory reading at a time: each holds the whole graph (and orient its
    # analytics; at a million nodes 1.4 GiB, conflicts 1.8). While one is under way (here
    # held by the test) each waits its turn, given up with its deadline like any read,
    # and runs once the turn is free.
    config = make_settings(tmp_path / "memory", read_timeout=1.0)
    runtime = Runtime(config)
    async with Client(build_server(config, runtime)) as client:
        await call_ok(client, "advance_encounter", {"session_id": SESSION, "purpose": "a reading"})
        entities = [
            {"type": "Note", "name": "retry storm", "description": "retries pile up"},
            {"type": "Concept", "name": "backoff", "description": "wait longer each time"},
        ]
        await call_ok(client, "create_entities", {"session_id": SESSION, "entities": entities})
        link = {"source": "retry storm", "type": "INFORMS", "target": "backoff"}
        await call_ok(client, "create_relations", {"session_id": SESSION, "relations": [link]})
        memory = runtime.context.memory
        with memory.whole_reading():
            for tool, arguments in WHOLE_READINGS:
                began = time.monotonic()
                refusal = await call_refused(client, tool, arguments)
                assert "read timeout" in refusal, (tool, refusal)
                assert time.monotonic() - began < 5, tool
        for tool, arguments in WHOLE_READINGS:
            await call_ok(client, tool, arguments)
