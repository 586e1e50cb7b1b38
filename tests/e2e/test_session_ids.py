"""No session is shown another session's id whole (DESIGN §3, invariant 9, its reading half).

A session id is what a client names to write into a session, so every answer a
second session can obtain is searched for the first one's id.
"""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from mcp import Client

from kenning_encounter.server.app import build_server
from kenning_encounter.server.context import Runtime
from tests.e2e.conftest import call_ok, call_refused, make_settings
from tests.support.handles import handle

pytestmark = pytest.mark.anyio

VICTIM = "3f9c2b7e-51aa-4c1e-9d0f-victim-session"
PRYING = "8d41e0aa-prying-session"


async def test_other_sessions_ids_are_never_shown_whole(tmp_path: Path) -> None:
    config = make_settings(tmp_path / "memory")
    runtime = Runtime(config)
    async with Client(build_server(config, runtime)) as client:
        own = await call_ok(client, "advance_encounter", {"session_id": VICTIM, "purpose": "p"})
        # The opener itself is told its own id whole.
        assert own["encounter"]["session_id"] == VICTIM
        await call_ok(
            client,
            "create_entities",
            {
                "session_id": VICTIM,
                "entities": [{"type": "Question", "name": "why retries", "description": "open"}],
            },
        )
        seen: list[object] = [
            await call_ok(client, "advance_encounter", {"session_id": PRYING, "purpose": "look"}),
            await call_ok(client, "search", {"query": "why retries"}),
            await call_ok(client, "find_by_name", {"name": "why retries"}),
            await call_ok(client, "trace_provenance", {"ref": "why retries"}),
            await call_ok(client, "orient", {}),
            await call_refused(
                client,
                "close_encounter",
                {"session_id": PRYING, "summary": "s", "encounter": own["encounter"]["name"]},
            ),
        ]
        result = await client.call_tool(
            "advance_encounter", {"session_id": handle(PRYING), "purpose": "x"}
        )
        seen.append([getattr(c, "text", "") for c in result.content])
        from kenning_encounter.server.session_note import session_start_context

        app = runtime.context
        seen.append(session_start_context(app.memory, app.settings, PRYING, handle(PRYING)))
    for answer in seen:
        text = answer if isinstance(answer, str) else json.dumps(answer, ensure_ascii=False)
        assert VICTIM not in text
    # What is shown is still enough to tell the sessions apart.
    unsealed = seen[0]["unsealed"]  # type: ignore[index]
    assert [u["session_id"] for u in unsealed] == [VICTIM[:8] + "…"]
