"""Session handles for tests that drive the real server as a client that holds its sessions.

Test servers are given ``TEST_SESSION_KEY`` (settings or environment), so a test
can compute the handle of any session id it opens, as a client that kept the
handle advance_encounter or SessionStart gave it would pass it. Tests of the
refusal itself (DESIGN §3, invariant 9) pass plain ids, or handles under another key.
"""

from __future__ import annotations

from typing import Any, Final

from kenning_encounter.server.holds import SessionKey, split_handle

TEST_SESSION_KEY: Final = "kenning-encounter-test-session-key"
SESSION_KEY_ENV: Final = {"KENNING_ENCOUNTER_SESSION_KEY": TEST_SESSION_KEY}
_KEY: Final = SessionKey(TEST_SESSION_KEY.encode())


def handle(session_id: str) -> str:
    """The handle of ``session_id`` under the test key (a handle is returned as is)."""
    locus, proof = split_handle(session_id)
    return session_id if proof is not None else _KEY.handle(locus)


def signed(arguments: dict[str, Any]) -> dict[str, Any]:
    """``arguments`` with a string session_id replaced by its handle."""
    session = arguments.get("session_id")
    if isinstance(session, str) and session.strip():
        return {**arguments, "session_id": handle(session.strip())}
    return arguments
