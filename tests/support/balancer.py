"""A round-robin load balancer in front of real server replicas, as a test client sees it.

Each request goes to the next replica in turn. A request whose replica is gone (the
connection refused, reset or dropped mid-answer) is sent to the next one, as a load
balancer with retries would; the answer then says it was retried, because a write
whose replica died after committing may already be done, and its retry may be
refused for that very reason ("exists already"). Replies that are refusals are not
retried: they are the server's answer.

Replicas keep their URL across a restart (same port), so the balancer never learns
that one died; it only meets a refused connection while it is down.
"""

from __future__ import annotations

import itertools
import json
import threading
import time
from collections import Counter
from dataclasses import dataclass
from typing import Any, Final

import httpx

from tests.support.handles import handle, signed

HEADERS: Final = {
    "accept": "application/json, text/event-stream",
    "content-type": "application/json",
}
# Attempts before a call is given up: enough rounds to outlast a replica's restart.
ATTEMPTS: Final = 120
ROUND_PAUSE_S: Final = 0.25
TIMEOUT_S: Final = 60.0


class AllReplicasDown(RuntimeError):
    """No replica answered a request in ATTEMPTS tries."""


@dataclass(frozen=True)
class Answer:
    """One request's outcome: what came back, from which replica, and whether it was retried."""

    replica: int
    retried: bool
    ok: bool
    body: dict[str, Any]
    text: str


def _jsonrpc_result(answer: httpx.Response) -> dict[str, Any]:
    """The JSON-RPC message of an answer sent as JSON or as one server-sent event."""
    if answer.status_code != 200:
        raise AssertionError(f"HTTP {answer.status_code}: {answer.text[:500]}")
    body = answer.text
    if "text/event-stream" in answer.headers.get("content-type", ""):
        body = next(line[5:] for line in body.splitlines() if line.startswith("data:"))
    message = json.loads(body)
    if "error" in message:
        raise AssertionError(f"JSON-RPC error: {message['error']}")
    return message["result"]


class Balancer:
    """Round-robin over ``bases`` (scheme://host:port of each replica), whose MCP
    endpoint is at ``mcp_path`` (the path a replica announces)."""

    def __init__(self, bases: list[str], mcp_path: str) -> None:
        self.bases = list(bases)
        self.mcp_path = mcp_path
        self._turn = itertools.count()
        self._lock = threading.Lock()
        self.served: Counter[int] = Counter()
        self.refused_connections = 0

    def _next(self) -> int:
        with self._lock:
            return next(self._turn) % len(self.bases)

    def post(
        self, client: httpx.Client, path: str, body: dict[str, Any]
    ) -> tuple[int, bool, httpx.Response]:
        """POST to the next replica, moving on while replicas are unreachable."""
        retried = False
        for attempt in range(ATTEMPTS):
            replica = self._next()
            try:
                answer = client.post(
                    self.bases[replica] + path, json=body, headers=HEADERS, timeout=TIMEOUT_S
                )
            except httpx.TransportError:
                retried = True
                with self._lock:
                    self.refused_connections += 1
                if attempt % len(self.bases) == len(self.bases) - 1:
                    time.sleep(ROUND_PAUSE_S)  # every replica failed this round
                continue
            with self._lock:
                self.served[replica] += 1
            return replica, retried, answer
        raise AllReplicasDown(f"no replica answered {path} in {ATTEMPTS} attempts")

    def tool(self, client: httpx.Client, name: str, arguments: dict[str, Any]) -> Answer:
        request = {
            "jsonrpc": "2.0",
            "id": 1,
            "method": "tools/call",
            "params": {"name": name, "arguments": signed(arguments)},
        }
        replica, retried, answer = self.post(client, self.mcp_path, request)
        result = _jsonrpc_result(answer)
        text = " ".join(c.get("text", "") for c in result.get("content", []))
        ok = not result.get("isError")
        return Answer(replica, retried, ok, result.get("structuredContent") or {}, text)

    def infuse(self, client: httpx.Client, session: str, prompt: str) -> Answer:
        body = {"session_id": handle(session), "prompt": prompt, "trajectory": []}
        replica, retried, answer = self.post(client, "/infuse", body)
        if answer.status_code != 200:
            return Answer(replica, retried, False, {}, answer.text)
        found: dict[str, Any] = answer.json()
        return Answer(replica, retried, found.get("status") != "failed", found, answer.text)
