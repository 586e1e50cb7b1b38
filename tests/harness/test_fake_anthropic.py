"""The stand-in Messages API on its own: both answer shapes, the script, the record."""

from __future__ import annotations

import json

import httpx

from tests.support.fake_anthropic import FakeAnthropic, Turn

TOOLS = [{"name": "mcp__kenning-encounter__search", "input_schema": {"type": "object"}}]


def ask(fake: FakeAnthropic, *, stream: bool) -> httpx.Response:
    body = {
        "model": "m",
        "max_tokens": 10,
        "stream": stream,
        "tools": TOOLS,
        "messages": [{"role": "user", "content": "find the falcon"}],
    }
    return httpx.post(f"{fake.url}/v1/messages?beta=true", json=body, timeout=10)


def test_a_scripted_tool_call_streamed_then_plain_text() -> None:
    with FakeAnthropic(idle_text="idle") as fake:
        fake.script(Turn.call("mcp__kenning-encounter__search", {"query": "falcon"}), "plain")
        streamed = ask(fake, stream=True)
        assert streamed.headers["content-type"].startswith("text/event-stream")
        events = [
            json.loads(line.removeprefix("data: "))
            for line in streamed.text.splitlines()
            if line.startswith("data: ")
        ]
        kinds = [e["type"] for e in events]
        assert kinds[0] == "message_start" and kinds[-1] == "message_stop"
        [start] = [e for e in events if e["type"] == "content_block_start"]
        assert start["content_block"]["name"] == "mcp__kenning-encounter__search"
        [delta] = [e for e in events if e["type"] == "content_block_delta"]
        assert json.loads(delta["delta"]["partial_json"]) == {"query": "falcon"}
        [stop] = [e for e in events if e["type"] == "message_delta"]
        assert stop["delta"]["stop_reason"] == "tool_use"

        plain = ask(fake, stream=False).json()
        assert plain["content"] == [{"type": "text", "text": "plain"}]
        assert plain["stop_reason"] == "end_turn"
        assert ask(fake, stream=False).json()["content"][0]["text"] == "idle"
        assert len(fake.agent_requests()) == 3


def test_unknown_paths_are_recorded_and_refused() -> None:
    with FakeAnthropic() as fake:
        answer = httpx.get(f"{fake.url}/v1/models/claude-x", timeout=10)
        assert answer.status_code == 404
        assert fake.unknown == ["GET /v1/models/claude-x"]
        counted = httpx.post(f"{fake.url}/v1/messages/count_tokens", json={"a": 1}, timeout=10)
        assert counted.json()["input_tokens"] >= 1


def test_a_failing_responder_is_recorded_and_not_retried() -> None:
    with FakeAnthropic() as fake:

        def broken(_: object) -> Turn:
            raise ValueError("no session")

        fake.responder = broken
        assert ask(fake, stream=True).status_code == 400
        assert fake.errors == ["responder: ValueError: no session"]
