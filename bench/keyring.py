"""A client that keeps its session handles, as a bench driver must.

A session is held, not named: once advance_encounter has opened a session,
every later call for it passes the handle that call returned. A keyring does
what a careful client does: it learns each handle from the answer that hands
it out and passes it wherever the plain session id was written.
"""

from __future__ import annotations

from typing import Any


class Keyring:
    def __init__(self) -> None:
        self._handles: dict[str, str] = {}

    def signed(self, arguments: dict[str, Any]) -> dict[str, Any]:
        session = arguments.get("session_id")
        if isinstance(session, str) and session in self._handles:
            return {**arguments, "session_id": self._handles[session]}
        return arguments

    def learn(self, result: Any) -> None:
        content = getattr(result, "structured_content", None)
        handle = content.get("handle") if isinstance(content, dict) else None
        if isinstance(handle, str) and "~" in handle:
            self._handles[handle.rpartition("~")[0]] = handle

    async def call(self, client: Any, name: str, arguments: dict[str, Any]) -> Any:
        result = await client.call_tool(name, self.signed(arguments))
        self.learn(result)
        return result
