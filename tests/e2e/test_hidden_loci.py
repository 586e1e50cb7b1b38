"""Hidden loci on the reader face: what one session recorded never reaches orient, the gds_*
tools or an infusion, while the rest of the memory still does.

A mutation run found the suite green with the hidden loci ignored by orient and the gds tools,
and with the infuser built without them; each test here fails on one of those.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest
from mcp import Client

from kenning_encounter.server.app import build_server
from kenning_encounter.server.context import Runtime
from tests.e2e.conftest import call_ok, make_settings

pytestmark = [pytest.mark.anyio, pytest.mark.usefixtures("clean_env")]

ALICE, BOB = "session-alice-hidden", "session-bob-shown"
ALGORITHMS = ("pagerank", "articlerank", "betweenness", "leiden", "wcc")


def server_for(data_dir: Path, **values: Any) -> Any:
    settings = make_settings(data_dir, **values)
    return build_server(settings, Runtime(settings))


def _nodes(who: str) -> list[dict[str, str]]:
    """A hub concept, an open question and observations: every section of orient has them."""
    return [
        {"type": "Concept", "name": f"{who} lantern hub", "description": "lantern light pattern"},
        {"type": "Question", "name": f"{who} lantern question", "description": "why lanterns?"},
        {"type": "Hypothesis", "name": f"{who} lantern guess", "description": "lantern oil"},
        *(
            {"type": "Observation", "name": f"{who} lantern seen {i}", "description": "lantern"}
            for i in range(4)
        ),
    ]


def _links(who: str) -> list[dict[str, str]]:
    hub = f"{who} lantern hub"
    return [
        *(
            {"source": f"{who} lantern seen {i}", "type": "GROUNDS", "target": hub}
            for i in range(4)
        ),
        {"source": hub, "type": "RAISES", "target": f"{who} lantern question"},
        {"source": hub, "type": "INFORMS", "target": f"{who} lantern guess"},
    ]


async def _record(data_dir: Path) -> dict[str, set[str]]:
    """Alice and Bob each record the same shape; the names and ids of each, by session."""
    held: dict[str, set[str]] = {}
    async with Client(server_for(data_dir)) as full:
        for who, session in (("alice", ALICE), ("bob", BOB)):
            await call_ok(full, "advance_encounter", {"session_id": session, "purpose": who})
            created = await call_ok(
                full, "create_entities", {"session_id": session, "entities": _nodes(who)}
            )
            await call_ok(
                full, "create_relations", {"session_id": session, "relations": _links(who)}
            )
            held[who] = {n["id"] for n in created["created"]} | {n["name"] for n in _nodes(who)}
        # Bob's work leans on Alice's: a link across the two, which hiding must cut too.
        await call_ok(
            full,
            "create_relations",
            {
                "session_id": BOB,
                "relations": [
                    {
                        "source": "bob lantern seen 0",
                        "type": "SUPPORTS",
                        "target": "alice lantern guess",
                    }
                ],
            },
        )
    return held


async def _seen(client: Client, tool: str, arguments: dict[str, Any]) -> str:
    """Everything a client gets back from a call: its text and its structured content."""
    result = await client.call_tool(tool, arguments)
    text = " ".join(getattr(c, "text", "") for c in result.content)
    assert not result.is_error, f"{tool} failed: {text}"
    return text + json.dumps(result.structured_content)


def _mentions(answer: str, held: set[str]) -> set[str]:
    return {ref for ref in held if ref in answer}


async def test_orient_never_shows_a_hidden_locus(tmp_path: Path) -> None:
    held = await _record(tmp_path / "memory")
    async with Client(server_for(tmp_path / "memory", face="reader")) as unhidden:
        shown = await _seen(unhidden, "orient", {"top_k": 20})
        assert _mentions(shown, held["alice"]) and _mentions(shown, held["bob"])
    async with Client(server_for(tmp_path / "memory", face="reader", hide_loci=[ALICE])) as reader:
        for arguments in ({"top_k": 20}, {"top_k": 20, "session_id": BOB}):
            answer = await _seen(reader, "orient", arguments)
            assert _mentions(answer, held["alice"]) == set(), arguments
            assert "bob lantern question" in answer  # the open frontier is still read


async def test_the_gds_tools_never_show_a_hidden_locus(tmp_path: Path) -> None:
    held = await _record(tmp_path / "memory")
    async with Client(server_for(tmp_path / "memory", face="reader", hide_loci=[ALICE])) as reader:
        info = await call_ok(reader, "gds_create_projection", {"name": "all"})
        assert (info["nodes"], info["edges"]) == (len(_nodes("bob")), len(_links("bob")))
        for algorithm in ALGORITHMS:
            answer = await _seen(reader, f"gds_{algorithm}", {"name": "all", "top_k": 50})
            assert _mentions(answer, held["alice"]) == set(), algorithm
            if algorithm not in ("wcc", "leiden"):  # these two list groups, not every node
                assert _mentions(answer, held["bob"]), algorithm
        around = await call_ok(
            reader,
            "gds_create_projection",
            {"name": "around", "around": "bob lantern seen 0", "hops": 3},
        )
        assert around["nodes"] == len(_nodes("bob"))
        await call_ok(reader, "gds_drop_projection", {"name": "around"})
        await call_ok(reader, "gds_drop_projection", {"name": "all"})


async def test_an_infusion_never_carries_a_hidden_locus(tmp_path: Path) -> None:
    held = await _record(tmp_path / "memory")
    prompt = {"prompt": "what do we know about the lantern hub, its question and its guess?"}
    async with Client(server_for(tmp_path / "memory", face="reader")) as unhidden:
        shown = await call_ok(unhidden, "infuse", {"session_id": "viewer-one", **prompt})
        assert _mentions(shown["payload"], held["alice"]), "the prompt must reach Alice's work"
    async with Client(server_for(tmp_path / "memory", face="reader", hide_loci=[ALICE])) as reader:
        infused = await call_ok(reader, "infuse", {"session_id": "viewer-two", **prompt})
        assert _mentions(infused["payload"], held["bob"]), "silence would prove nothing"
        assert _mentions(json.dumps(infused), held["alice"]) == set()


async def test_a_version_revised_in_a_hidden_locus_is_no_head_of_orient_or_gds(
    tmp_path: Path,
) -> None:
    """Bob's guess revised by Alice, whose session is hidden: to the reader it is revised
    (superseded_by 'hidden'), so it stands for nothing in the whole-memory reads, with its
    relations, as a version revised by a withheld class does; once Bob revises Alice's
    version, his first folds into his newest, the hidden one walked through."""
    data = tmp_path / "memory"
    await _record(data)
    revision = {
        "type": "Hypothesis",
        "name": "bob lantern guess",
        "description": "alice thinks it is wax",
        "supersedes": "bob lantern guess",
        "revision_why": "alice's view",
    }
    async with Client(server_for(data)) as full:
        await call_ok(full, "create_entities", {"session_id": ALICE, "entities": [revision]})
    hide = {"face": "reader", "hide_loci": [ALICE]}
    async with Client(server_for(data, **hide)) as reader:
        found = await call_ok(reader, "find_by_name", {"name": "bob lantern guess"})
        assert found["node"]["superseded_by"] == "hidden"
        info = await call_ok(reader, "gds_create_projection", {"name": "all"})
        # The guess and the hub's INFORMS into it are gone with it.
        assert (info["nodes"], info["edges"]) == (len(_nodes("bob")) - 1, len(_links("bob")) - 1)
        await call_ok(reader, "gds_drop_projection", {"name": "all"})
        panel = await _seen(reader, "orient", {"top_k": 20})
        assert "bob lantern guess" not in panel and "wax" not in panel
    async with Client(server_for(data)) as full:
        again = {**revision, "description": "bob: it is oil after all", "revision_why": "bob"}
        await call_ok(full, "create_entities", {"session_id": BOB, "entities": [again]})
    async with Client(server_for(data, **hide)) as reader:
        info = await call_ok(reader, "gds_create_projection", {"name": "all"})
        assert (info["nodes"], info["edges"]) == (len(_nodes("bob")), len(_links("bob")))
        panel = await _seen(reader, "orient", {"top_k": 20})
        assert "bob lantern guess" in panel and "wax" not in panel


async def test_a_chain_a_hidden_locus_renamed_is_found_by_the_names_the_reader_sees(
    tmp_path: Path,
) -> None:
    """Bob's plan, renamed by Bob and then by Alice, whose session is hidden: by either of
    Bob's names the reader finds Bob's newest version, revised ('hidden'); Alice's name
    finds nothing, and no refusal names her version or its words."""
    data = tmp_path / "memory"
    first = {"type": "Hypothesis", "name": "bob ferry plan", "description": "ferry at dawn"}
    async with Client(server_for(data)) as full:
        await call_ok(full, "advance_encounter", {"session_id": BOB, "purpose": "plans"})
        made = await call_ok(full, "create_entities", {"session_id": BOB, "entities": [first]})
        ids = [made["created"][0]["id"]]
        for session, name, text in (
            (BOB, "bob harbour plan", "ferry at seven"),
            (ALICE, "alice zqx plan", "alice waxboat"),
        ):
            if session == ALICE:
                await call_ok(full, "advance_encounter", {"session_id": ALICE, "purpose": "hers"})
            revision = {
                "type": "Hypothesis",
                "name": name,
                "description": text,
                "supersedes": ids[-1],
                "revision_why": f"renamed to {name}",
            }
            made = await call_ok(
                full, "create_entities", {"session_id": session, "entities": [revision]}
            )
            ids.append(made["created"][0]["id"])
    hers = {ids[2], "zqx", "waxboat"}
    async with Client(server_for(data, face="reader", hide_loci=[ALICE])) as reader:
        for name in ("bob ferry plan", "bob harbour plan"):
            found = await call_ok(reader, "find_by_name", {"name": name})
            assert (found["node"]["id"], found["node"]["superseded_by"]) == (ids[1], "hidden")
            chain = await call_ok(reader, "chain_history", {"node": name})
            assert [v["id"] for v in chain["versions"]] == ids[:2] and chain.get("head") is None
            assert _mentions(json.dumps([found, chain]), hers) == set(), name
        for tool, arguments in (
            ("find_by_name", {"name": "alice zqx plan"}),
            ("trace_provenance", {"ref": "alice zqx plan"}),
            ("chain_history", {"node": "alice zqx plan"}),
            ("find_by_name", {"name": ids[2]}),
        ):
            result = await reader.call_tool(tool, arguments)
            text = " ".join(getattr(c, "text", "") for c in result.content)
            assert result.is_error, (tool, text)
            told = text.replace(str(next(iter(arguments.values()))), "<given>")
            assert _mentions(told, hers) == set(), (tool, text)


async def test_a_relation_a_hidden_locus_wrote_between_shown_nodes_is_not_seen(
    tmp_path: Path,
) -> None:
    """Alice, hidden, links Bob's nodes: a RESOLVES of his question, a SUPPORTS of his
    hypothesis. The reader hiding her sees neither relation nor the statuses they moved,
    in trace_provenance, orient's open frontier or a gds projection; a reader hiding
    nothing sees them."""
    await _record(tmp_path / "memory")
    async with Client(server_for(tmp_path / "memory")) as full:
        relations = [
            {"source": "bob lantern hub", "type": "RESOLVES", "target": "bob lantern question"},
            {"source": "bob lantern seen 2", "type": "SUPPORTS", "target": "bob lantern guess"},
        ]
        await call_ok(full, "create_relations", {"session_id": ALICE, "relations": relations})

    async def read(client: Client) -> tuple[Any, ...]:
        guess = await call_ok(client, "trace_provenance", {"ref": "bob lantern guess"})
        question = await call_ok(client, "find_by_name", {"name": "bob lantern question"})
        frontier = await _seen(client, "orient", {"top_k": 20})
        info = await call_ok(client, "gds_create_projection", {"name": "all"})
        await call_ok(client, "gds_drop_projection", {"name": "all"})
        return (
            guess["node"]["status"],
            sorted(e["type"] for e in guess["edges"]),
            question["node"]["status"],
            "bob lantern question" in frontier,
            info["edges"],
        )

    async with Client(server_for(tmp_path / "memory", face="reader")) as unhidden:
        status, kinds, asked, open_, edges = await read(unhidden)
        assert (status, asked) == ("supported", "resolved")
        assert "SUPPORTS" in kinds
        assert edges == 2 * len(_links("bob")) + 1 + len(relations)
    async with Client(server_for(tmp_path / "memory", face="reader", hide_loci=[ALICE])) as reader:
        status, kinds, asked, open_, edges = await read(reader)
        assert (status, asked, open_) == ("untested", "open", True)
        assert "SUPPORTS" not in kinds
        assert edges == len(_links("bob"))
