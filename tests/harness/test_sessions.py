"""One session of real Claude Code: its id, its infusions, its tool calls, its end.

Each test wires a temporary project with our installer, starts a real memory
server for it and runs ``claude -p`` against the stand-in Messages API; what
is asserted is what the model was sent and what the memory holds afterwards.
"""

from __future__ import annotations

import itertools
from typing import Any

from tests.harness.claude import (
    START_CONTEXT,
    TOOL_PREFIX,
    Agent,
    Step,
    Workspace,
    call_memory,
    infusion_of,
    notices,
    print_args,
    stream_message,
    tool,
)
from tests.support.fake_anthropic import ToolUse, Turn
from tests.support.handles import handle

FALCON = "The peregrine falcon dives at 390 km/h when hunting pigeons over the estuary."


def advance(purpose: str, prefix: str = TOOL_PREFIX) -> Step:
    def step(session: str) -> Turn:
        arguments = {"session_id": session, "purpose": purpose}
        return Turn.call(tool("advance_encounter", prefix), arguments)

    return step


def record(*entities: dict[str, Any], prefix: str = TOOL_PREFIX) -> Step:
    def step(session: str) -> Turn:
        arguments = {"session_id": session, "entities": list(entities)}
        return Turn.call(tool("create_entities", prefix), arguments)

    return step


def observation(name: str, description: str, **more: str) -> dict[str, Any]:
    return {"type": "Observation", "name": name, "description": description, **more}


def seed_falcon(space: Workspace) -> None:
    """A first session that records what later prompts will touch."""
    space.fake.responder = Agent(
        advance("raptor notes"), record(observation("peregrine dive", FALCON))
    )
    space.print_run("note the falcon")
    errors = [r for r in space.fake.tool_results() if r.is_error]
    assert not errors, errors


def test_session_id_reaches_the_model(space: Workspace) -> None:
    agent = Agent()
    space.fake.responder = agent
    run = space.print_run("hello")
    session = run.session_id()
    [request] = space.fake.agent_requests()
    text = request.text()
    assert START_CONTEXT in text
    assert f"kenning-encounter session_id is {session}" in text
    assert agent.seen == [session]


def test_the_infusion_reaches_the_request(space: Workspace) -> None:
    seed_falcon(space)
    before = len(space.fake.agent_requests())
    space.print_run("how fast does the peregrine falcon dive?")
    [request] = space.fake.agent_requests()[before:]
    infusion = infusion_of(request)
    assert infusion is not None, request.text()[-3000:]
    assert "peregrine dive" in infusion
    assert "390 km/h" in infusion
    # The prompt the user typed is still there, and nothing said the memory failed.
    assert "how fast does the peregrine falcon dive?" in request.text()
    assert not [n for n in notices(infusion) if "fail" in n or "unreachable" in n]


def test_mcp_tools_run_and_refusals_arrive_as_errors(space: Workspace) -> None:
    space.fake.responder = Agent(
        advance("tool round trip"),
        record(observation("estuary count", "Forty curlews fed on the mudflats at low tide.")),
        lambda s: Turn.call(tool("search"), {"query": "curlews mudflats"}),
        # A node type the memory does not have: the server's refusal, not the CLI's.
        record({"type": "Spaceship", "name": "bad one", "description": "refused"}),
    )
    space.print_run("record the curlews and look them up")
    results = {
        r.name.removeprefix("mcp__kenning-encounter__"): r for r in space.fake.tool_results()
    }
    assert set(results) == {"advance_encounter", "create_entities", "search"}, results
    assert not results["advance_encounter"].is_error, results["advance_encounter"].text
    assert not results["search"].is_error, results["search"].text
    assert "estuary count" in results["search"].text
    refused = [r for r in space.fake.tool_results() if r.is_error]
    assert len(refused) == 1, space.fake.tool_results()
    assert "Spaceship" in refused[0].text and "type" in refused[0].text, refused[0].text
    # Each call's result came back in the very next request the model got.
    requests = space.fake.agent_requests()
    for asked, following in itertools.pairwise(requests):
        assert asked.answer is not None
        for call in asked.answer.blocks:
            if isinstance(call, ToolUse):
                returned = [
                    b
                    for b in following.blocks()
                    if b.get("type") == "tool_result" and b.get("tool_use_id") == call.id
                ]
                assert len(returned) == 1, f"no result for {call.name} in the next request"


def test_session_end_dissolves_the_encounter(space: Workspace) -> None:
    space.fake.responder = Agent(
        advance("dissolved by the harness"), record(observation("tide", "High tide at 09:12."))
    )
    run = space.print_run("note the tide")
    session = run.session_id()
    assert space.server is not None
    after = call_memory(
        space.server.url,
        "create_entities",
        {"session_id": handle(session), "entities": [observation("late", "written after the end")]},
    )
    assert after.is_error, f"the session's encounter took a write after SessionEnd: {after.text}"
    assert "dissolved" in after.text, after.text


def test_a_prompt_after_a_supersession_still_infuses(space: Workspace) -> None:
    # Several revisions of nodes sharing common words: the text index's statistics
    # must stay consistent with deleted documents counted once.
    common = "falcon dive speed over the estuary"
    space.fake.responder = Agent(
        advance("revisions"),
        record(*(observation(f"note {i}", f"{common}, note {i}.") for i in range(3))),
        record(
            *(
                observation(
                    f"note {i}",
                    f"{common}, revised note {i}.",
                    supersedes=f"note {i}",
                    revision_why="measured again",
                )
                for i in range(3)
            )
        ),
        record(
            observation(
                "note 0",
                f"{common}, third take on note 0: 390 km/h.",
                supersedes="note 0",
                revision_why="measured once more",
            )
        ),
    )
    space.print_run("record and revise the dive notes")
    errors = [r for r in space.fake.tool_results() if r.is_error]
    assert not errors, errors
    before = len(space.fake.agent_requests())
    space.print_run("what do we know about the falcon dive speed over the estuary?")
    [request] = space.fake.agent_requests()[before:]
    infusion = infusion_of(request)
    assert infusion is not None, request.text()[-3000:]
    assert "third take on note 0" in infusion, infusion
    assert not [n for n in notices(infusion) if "fail" in n], infusion


def test_stream_json_input_infuses_every_turn(space: Workspace) -> None:
    seed_falcon(space)
    before = len(space.fake.agent_requests())
    stdin = stream_message("how fast does the peregrine falcon dive?") + stream_message(
        "and the peregrine falcon hunting pigeons?"
    )
    run = space.run(*print_args("--input-format", "stream-json"), stdin=stdin)
    assert run.returncode == 0, run.explain()
    first, second = space.fake.agent_requests()[before:]
    assert "390 km/h" in (infusion_of(first) or ""), first.text()[-3000:]
    # The second turn got its own infusion (the body is standing by then).
    assert infusion_of(second) is not None
    assert infusion_of(second) != infusion_of(first)
    assert "peregrine dive" in (infusion_of(second) or "")
