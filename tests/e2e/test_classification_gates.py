"""Every served read, through a real MCP client, leaves out what its face is not granted.

The tools come from the server's own list (the registry), so a read tool added without a
plan here fails the first test; each planned call's whole answer (text and structured
content) is searched for the withheld nodes' mark and ids. The same calls on a face
granted every class show them, so the silence is the gate's and not the plan's. The
exports (``export`` and ``kndl export``) run as the operator runs them, as subprocesses.
"""

from __future__ import annotations

import json
import os
import shutil
import subprocess
from pathlib import Path
from typing import Any, Final

import anyio
import pytest
from mcp import Client

from kenning_encounter.server.app import build_server
from kenning_encounter.server.context import Runtime
from tests.e2e.conftest import call_ok, clean_environ, make_settings, server_command
from tests.support import classified as plan
from tests.support.classified import MARK
from tests.support.handles import signed

pytestmark = [pytest.mark.anyio, pytest.mark.usefixtures("clean_env")]
_OURS = ("KENNING_ENCOUNTER_", "NEO4J_", "GEMINI_", "OPENAI_")  # what clean_env takes out

WARD, ASK, CARD = f"ward note {MARK}", f"open ask {MARK}", f"card number {MARK}"
CYPHER = "MATCH (n) RETURN n.name AS name, n.description AS d, n.classification AS c"
PROMPT = f"lanterns glow at dusk; the lantern ward patient record {MARK} and the card"

# tool -> the calls that could show a withheld node. A name of a withheld node stands
# for "refused as unknown when gated": its answer is then the error's text.
READ_PLAN: Final[dict[str, list[dict[str, Any]]]] = {
    "search": [{"query": f"lantern {MARK}", "limit": 50, "include_superseded": True}],
    "find_by_name": [{"name": WARD}, {"name": "lantern finding"}],
    "trace_provenance": [{"ref": "lantern finding", "depth": 5}, {"ref": CARD}],
    "chain_history": [{"node": "lantern policy"}],
    "conflicts": [{"limit": 100}],
    "read_cypher": [{"query": CYPHER}],
    "orient": [{"top_k": 50}],
    "gds_create_projection": [{"name": "all"}],
    "gds_pagerank": [{"name": "all", "top_k": 50}],
    "gds_articlerank": [{"name": "all", "top_k": 50}],
    "gds_betweenness": [{"name": "all", "top_k": 50}],
    "gds_leiden": [{"name": "all", "top_k": 50}],
    "gds_wcc": [{"name": "all", "top_k": 50}],
    "gds_drop_projection": [{"name": "all"}],
    "infuse": [{"session_id": "gate-viewer", "prompt": PROMPT}],
    "infuse_meaning": [{"prompt": PROMPT}],
    "get_schema": [{}],
    "list_node_types": [{}],
    "list_relation_types": [{}],
    "list_vocabulary": [{}],
}
# What a granted face must show, per tool: the reads that list nodes by what they say.
SHOWN_WHEN_GRANTED: Final = {
    "search",
    "find_by_name",
    "trace_provenance",
    "chain_history",
    "conflicts",
    "read_cypher",
    "orient",
    "gds_pagerank",
    "infuse",
}
# The full face's other tools: each writes, and hands back only what it wrote, except
# advance_encounter, whose re-entry payload lists the memory's open work (tested below).
NOT_READS: Final = {
    "advance_encounter": "re-entry payload",
    "close_encounter": "seals",
    "create_entities": "what it wrote",
    "create_relations": "what it wrote",
    "delete_entities": "what it deleted",
    "delete_relations": "what it deleted",
    "confirm_entities": "what it confirmed",
    "claim_referents": "what it claimed",
    "pin_entities": "what it pinned",
}


def server_for(data_dir: Path, **values: Any) -> Any:
    settings = make_settings(data_dir, **values)
    return build_server(settings, Runtime(settings))


async def _record(data_dir: Path) -> dict[str, str]:
    async with Client(server_for(data_dir, grant="all")) as writer:
        await call_ok(writer, "advance_encounter", {"session_id": plan.WRITER, "purpose": "w"})
        made: list[dict[str, Any]] = []
        for batch in (plan.entities(), plan.revision()):
            answer = await call_ok(
                writer, "create_entities", {"session_id": plan.WRITER, "entities": batch}
            )
            made += answer["created"]
        await call_ok(
            writer,
            "create_relations",
            {"session_id": plan.WRITER, "relations": plan.relations()},
        )
    return {m["name"]: m["id"] for m in made}


@pytest.fixture(scope="module")
def recorded_once(tmp_path_factory: pytest.TempPathFactory) -> tuple[Path, dict[str, str]]:
    """The plan's memory, written once for the module through a real client, and its
    ids: each test works on a copy of it (``recorded``)."""
    data_dir = tmp_path_factory.mktemp("recorded") / "m"
    with pytest.MonkeyPatch.context() as patch:  # as clean_env leaves a test's settings
        for key in list(os.environ):
            if key.startswith(_OURS):
                patch.delenv(key)
        patch.chdir(data_dir.parent)
        ids = anyio.run(_record, data_dir)
    return data_dir, ids


@pytest.fixture
def recorded(recorded_once: tuple[Path, dict[str, str]], tmp_path: Path) -> dict[str, str]:
    """This test's own copy of the recorded memory, at ``tmp_path / "m"``; its ids."""
    data_dir, ids = recorded_once
    shutil.copytree(data_dir, tmp_path / "m")
    return ids


def _withheld(ids: dict[str, str]) -> set[str]:
    return {MARK, *(ids[name] for name in plan.CLASSIFIED)}


async def _answer(client: Client, tool: str, arguments: dict[str, Any]) -> tuple[bool, str]:
    """Whether it failed, and what it said, less the caller's own words echoed back."""
    result = await client.call_tool(tool, signed(arguments))
    text = " ".join(getattr(c, "text", "") for c in result.content)
    answer = text + json.dumps(result.structured_content)
    for value in arguments.values():
        if isinstance(value, str):
            answer = answer.replace(value, "").replace(json.dumps(value)[1:-1], "")
    return result.is_error, answer


async def test_every_served_read_tool_has_a_plan(tmp_path: Path) -> None:
    async with Client(server_for(tmp_path / "m", face="reader")) as reader:
        served = {t.name for t in (await reader.list_tools()).tools}
    assert served == set(READ_PLAN), "plan every read tool's gated calls here"
    async with Client(server_for(tmp_path / "m")) as full:
        others = {t.name for t in (await full.list_tools()).tools} - served
    # Declared but not served is fine (a tool still on its way); served undeclared is not.
    assert others - set(NOT_READS) == set(), "say what each non-read tool hands back"


@pytest.mark.parametrize("tool", sorted(READ_PLAN))
async def test_a_read_tool_shows_no_withheld_node(
    tmp_path: Path, tool: str, recorded: dict[str, str]
) -> None:
    ids = recorded
    hidden = _withheld(ids)
    for face, values in (("reader", {}), ("full", {}), ("reader", {"grant": "all"})):
        # The reader never inherits the full face's grant: gated there too.
        async with Client(server_for(tmp_path / "m", face=face, **values)) as client:
            for arguments in READ_PLAN[tool]:
                _, answer = await _answer(client, tool, arguments)
                leaked = {h for h in hidden if h in answer}
                assert leaked == set(), (face, values, arguments, answer[:400])


@pytest.mark.parametrize("tool", sorted(SHOWN_WHEN_GRANTED))
async def test_a_granted_face_shows_them(
    tmp_path: Path, tool: str, recorded: dict[str, str]
) -> None:
    ids = recorded
    hidden = _withheld(ids)
    for face, values in (("reader", {"reader_grant": "all"}), ("full", {"grant": "all"})):
        async with Client(server_for(tmp_path / "m", face=face, **values)) as client:
            seen: set[str] = set()
            for arguments in READ_PLAN.get("gds_create_projection", []) if "gds" in tool else []:
                await _answer(client, "gds_create_projection", arguments)
            for arguments in READ_PLAN[tool]:
                failed, answer = await _answer(client, tool, arguments)
                assert not failed, (tool, arguments, answer[:400])
                seen |= {h for h in hidden if h in answer}
            assert seen, (face, tool)


async def test_a_partial_grant_shows_only_its_classes(
    tmp_path: Path, recorded: dict[str, str]
) -> None:
    ids = recorded
    async with Client(server_for(tmp_path / "m", face="reader", reader_grant="pii")) as reader:
        _, answer = await _answer(reader, "search", READ_PLAN["search"][0])
    assert ids[ASK] in answer  # pii alone
    assert ids[CARD] not in answer and ids[WARD] not in answer  # pci+pii, phi


async def test_the_re_entry_payload_lists_no_withheld_node(
    tmp_path: Path, recorded: dict[str, str]
) -> None:
    ids = recorded
    hidden = _withheld(ids)
    async with Client(server_for(tmp_path / "m")) as full:
        entry = await call_ok(full, "advance_encounter", {"session_id": "back", "purpose": "p"})
    assert {h for h in hidden if h in json.dumps(entry)} == set()
    assert "lantern open" in json.dumps(entry)
    async with Client(server_for(tmp_path / "m", grant="pii")) as granted:
        entry = await call_ok(granted, "advance_encounter", {"session_id": "b2", "purpose": "p"})
    assert ids[ASK] in json.dumps(entry)


def _cli(data_dir: Path, *args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        server_command(*args, "--data-dir", str(data_dir)),
        env=clean_environ(),
        capture_output=True,
        text=True,
        timeout=300,
        check=False,
    )


async def test_the_exports_hold_back_what_they_are_not_granted(
    tmp_path: Path, recorded: dict[str, str]
) -> None:
    ids = recorded
    hidden = _withheld(ids)
    for command, out in (("export", "dump.jsonl"), ("kndl export", "facts.json")):
        words = command.split()
        gated = tmp_path / f"gated-{out}"
        target = [str(gated)] if words[0] == "export" else ["--out", str(gated)]
        done = _cli(tmp_path / "m", *words, *target)
        assert done.returncode == 0, done.stderr
        assert {h for h in hidden if h in gated.read_text()} == set(), command
        granted = tmp_path / f"granted-{out}"
        target = [str(granted)] if words[0] == "export" else ["--out", str(granted)]
        done = _cli(tmp_path / "m", *words, *target, "--export-grant", "all")
        assert done.returncode == 0, done.stderr
        assert MARK in granted.read_text(), command
    assert (
        "held back 4 classified node(s)"
        in _cli(tmp_path / "m", "export", str(tmp_path / "again.jsonl")).stderr
    )


async def test_a_chain_a_withheld_version_renamed_is_found_by_the_names_shown(
    tmp_path: Path,
) -> None:
    """The guess renamed in sight, then revised and renamed by a version of a class the
    reader is not granted: find_by_name and chain_history by either shown name stand at the
    newest shown version, revised ('withheld'); the withheld version's name finds nothing,
    and nothing names it."""
    data = tmp_path / "memory"
    ids = await _record(data)
    public = {
        "type": "Hypothesis",
        "name": "lantern guess, revised",
        "description": "lamp oil burns",
        "supersedes": "lantern guess",
        "revision_why": "a closer look",
    }
    secret = {
        "type": "Hypothesis",
        "name": f"tallow guess {MARK}",
        "description": f"tallow, says the ward {MARK}",
        "supersedes": "lantern guess, revised",
        "revision_why": f"the ward's view {MARK}",
        "classification": ["phi"],
    }
    made: list[str] = []
    async with Client(server_for(data, grant="all")) as writer:
        for entity in (public, secret):
            answer = await call_ok(
                writer, "create_entities", {"session_id": plan.WRITER, "entities": [entity]}
            )
            made.append(answer["created"][0]["id"])
    hidden = {MARK, made[1]}
    versions = [ids["lantern guess"], made[0]]
    async with Client(server_for(data, face="reader")) as reader:
        for ref in ("lantern guess", "lantern guess, revised", *versions):
            found = await call_ok(reader, "find_by_name", {"name": ref})
            assert (found["node"]["id"], found["node"]["superseded_by"]) == (made[0], "withheld")
            chain = await call_ok(reader, "chain_history", {"node": ref})
            assert [v["id"] for v in chain["versions"]] == versions, ref
            assert not {x for x in hidden if x in json.dumps([found, chain])}, ref
        for tool, arguments in (
            ("find_by_name", {"name": secret["name"]}),
            ("chain_history", {"node": secret["name"]}),
            ("trace_provenance", {"ref": made[1]}),
        ):
            failed, said = await _answer(reader, tool, arguments)
            assert failed and not {x for x in hidden if x in said}, (tool, said)
