"""What the model actually reads from each tool: characters per tool result under Claude Code.

Claude Code hands the model its own rendering of an MCP result (for our tools,
the structured JSON), so the sizes that matter are measured here, from the
tool_result blocks of the recorded requests. They are written to
``tool_result_chars.json`` in the test's folder and shown in pytest's summary.
"""

from __future__ import annotations

import json
from typing import Any

import pytest

from tests.harness.claude import Agent, Step, Workspace, tool
from tests.harness.test_sessions import advance, observation, record
from tests.support.fake_anthropic import Turn

MEASURED = pytest.StashKey[list[tuple[str, int]]]()


def use(tool_name: str, /, **arguments: Any) -> Step:
    def step(session: str) -> Turn:
        filled = {k: (session if v is SESSION else v) for k, v in arguments.items()}
        return Turn.call(tool(tool_name), filled)

    return step


SESSION = object()  # stands for the session_id the model was given

NOTES = [
    observation(f"survey {i}", f"Survey {i}: {n} curlews fed on the estuary mudflats at low tide.")
    for i, n in enumerate((40, 35, 52, 18, 61, 27))
]


def relate(session: str) -> Turn:
    relations = [{"source": "survey 0", "type": "GROUNDS", "target": "curlew decline"}]
    return Turn.call(tool("create_relations"), {"session_id": session, "relations": relations})


def test_chars_per_tool_result(space: Workspace, request: pytest.FixtureRequest) -> None:
    space.fake.responder = Agent(
        advance("curlew counts"),
        record(*NOTES),
        record({"type": "Hypothesis", "name": "curlew decline",
                "description": "Curlew numbers on the estuary fall year on year."}),
        relate,
        use("search", query="curlews estuary mudflats"),
        use("find_by_name", name="survey 0"),
        use("trace_provenance", ref="curlew decline"),
        use("orient", session_id=SESSION),
        use("get_schema"),
        use("list_node_types"),
        use("list_vocabulary"),
        use("read_cypher", query="MATCH (o:Observation) RETURN o.name LIMIT 5"),
        use("infuse", session_id=SESSION, prompt="how many curlews fed on the mudflats?"),
        use("close_encounter", session_id=SESSION, summary="counts recorded"),
    )  # fmt: skip
    space.print_run("record the curlew counts, then look at them every way")
    results = space.fake.tool_results()
    failed = [r for r in results if r.is_error]
    assert not failed, failed
    sizes = [(r.name.removeprefix("mcp__kenning-encounter__"), r.chars) for r in results]
    assert len(sizes) == 14, sizes
    rows = [{"tool": name, "chars": chars} for name, chars in sizes]
    (space.root / "tool_result_chars.json").write_text(json.dumps(rows, indent=2) + "\n")
    request.config.stash[MEASURED] = sizes
    print("chars per tool result:", json.dumps(rows))


def summary(config: pytest.Config) -> list[str]:
    sizes = config.stash.get(MEASURED, None)
    if not sizes:
        return []
    width = max(len(name) for name, _ in sizes)
    return [f"  {name:<{width}}  {chars:>7,}" for name, chars in sizes]
