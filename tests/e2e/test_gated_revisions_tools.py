"""What withheld nodes make of public ones, read through a real MCP client on both backends.

Two gaps in the classification gate (memory/gates.py), each tried on every read a caller
could make, as a reader granted nothing and as a granted one, over one store:

- A public version revised by a withheld one is superseded to every reader: it is no live
  head on any path (search, find_by_name by name and by id, re-entry, orient, conflicts,
  infusion, as_of at the present), and where it is shown (find_by_name, trace_provenance,
  chain_history) it says "withheld" where the successor's id would be, with no reason,
  author or count of that successor.
- A status moved by a relation (a hypothesis supported or challenged, a question
  resolved) reads, to a caller not granted the relation's source, as the relations it may
  see give it: a withheld challenge neither shows nor moves a public hypothesis.

The store is the contract suite's (embedded, and Neo4j when one answers); the servers
are real in-process servers over it, their calls a real MCP client's.
"""

from __future__ import annotations

import contextlib
import json
from collections.abc import AsyncGenerator
from pathlib import Path
from typing import Any, Final, cast

import pytest
from mcp import Client

from kenning_encounter.server.app import build_server
from kenning_encounter.server.context import Runtime
from kenning_encounter.store.port import GraphStore
from tests.e2e.conftest import call_ok, make_settings
from tests.support.classified import MARK
from tests.support.handles import signed

pytestmark = pytest.mark.anyio

WRITER: Final = "gated-revisions-writer"
READER: Final = "gated-revisions-reader"
WHY: Final = f"the {MARK} details added"  # the withheld revision's reason


class _Lent:
    """The fixture's store lent to a server: all of it the store's own, except that the
    server's close leaves it open for the other server (the fixture closes it), which
    gives up its GDS leases over a live driver."""

    def __init__(self, store: GraphStore) -> None:
        self._store = store

    def __getattr__(self, name: str) -> Any:
        return getattr(self._store, name)

    def close(self) -> None:
        pass


@contextlib.asynccontextmanager
async def _served(store: GraphStore, data_dir: Path, **values: Any) -> AsyncGenerator[Client]:
    """A real server over ``store``."""
    settings = make_settings(data_dir, **values)
    lent = cast(GraphStore, _Lent(store))
    runtime = Runtime(settings, store_factory=lambda _settings: lent)
    async with Client(build_server(settings, runtime)) as client:
        yield client


async def _said(client: Client, tool: str, arguments: dict[str, Any]) -> tuple[str, Any]:
    """A call that must succeed: its whole answer as text (text and structure), and its
    structured content."""
    result = await client.call_tool(tool, signed(arguments))
    text = " ".join(getattr(c, "text", "") for c in result.content)
    assert not result.is_error, f"{tool} failed: {text}"
    return text + json.dumps(result.structured_content), result.structured_content


async def _write(client: Client) -> dict[str, Any]:
    """The scenario, written by a granted writer: name -> id, and the ticks that matter."""
    await call_ok(client, "advance_encounter", {"session_id": WRITER, "purpose": "lanterns"})

    async def make(entities: list[dict[str, Any]]) -> dict[str, Any]:
        made = await call_ok(
            client, "create_entities", {"session_id": WRITER, "entities": entities}
        )
        return made

    async def link(relations: list[dict[str, Any]]) -> int:
        done = await call_ok(
            client, "create_relations", {"session_id": WRITER, "relations": relations}
        )
        return int(done["tick"])

    made = await make(
        [
            {"type": "Concept", "name": "lantern plan", "description": "lantern plan public"},
            {"type": "Observation", "name": "plain lantern", "description": "lantern at dusk"},
            {"type": "Observation", "name": "oil smell", "description": "lantern oil smells"},
            {
                "type": "Observation",
                "name": f"ward note {MARK}",
                "description": f"lantern ward record {MARK}",
                "classification": "phi",
            },
            {"type": "Hypothesis", "name": "lantern guess", "description": "lantern oil burns"},
            {"type": "Hypothesis", "name": "lantern hunch", "description": "lantern wicks fray"},
            {"type": "Question", "name": "lantern why", "description": "why do lanterns glow"},
        ]
    )
    ids = {m["name"]: m["id"] for m in made["created"]}
    # A public challenge of the plan, standing while the plan is live and after.
    await link([{"source": "oil smell", "type": "CHALLENGES", "target": "lantern plan"}])
    ids["supported"] = await link(
        [{"source": "plain lantern", "type": "SUPPORTS", "target": "lantern guess"}]
    )
    ward = f"ward note {MARK}"
    ids["withheld evidence"] = await link(
        [
            {"source": ward, "type": "CHALLENGES", "target": "lantern guess"},
            {"source": ward, "type": "CHALLENGES", "target": "lantern hunch"},
            {"source": ward, "type": "RESOLVES", "target": "lantern why"},
        ]
    )
    revised = await make(
        [
            {
                "type": "Concept",
                "name": "lantern plan",
                "description": f"lantern plan {MARK} secret",
                "classification": "secret",
                "supersedes": "lantern plan",
                "revision_why": WHY,
            }
        ]
    )
    ids["secret plan"] = revised["created"][0]["id"]
    ids["now"] = int(revised["tick"])
    return ids


def _unseen(ids: dict[str, Any]) -> set[str]:
    return {MARK, ids["secret plan"], ids[f"ward note {MARK}"]}


async def test_a_version_revised_by_a_withheld_one_is_superseded_on_every_path(
    store: GraphStore, tmp_path: Path
) -> None:
    data = tmp_path / "m"
    async with (
        _served(store, data, grant="all") as granted,
        _served(store, data) as reader,
    ):
        ids = await _write(granted)
        plan, now = ids["lantern plan"], ids["now"]
        unseen = _unseen(ids)
        answers: list[str] = []

        async def read(tool: str, arguments: dict[str, Any]) -> Any:
            text, found = await _said(reader, tool, arguments)
            answers.append(text)
            return found

        await call_ok(reader, "advance_encounter", {"session_id": READER, "purpose": "back"})
        # No live head: not found by words, not listed on re-entry, no side of a conflict.
        for as_of in (None, now):
            at: dict[str, Any] = {} if as_of is None else {"as_of": as_of}
            hits = await read("search", {"query": "lantern plan", **at})
            assert plan not in {h["id"] for h in hits["hits"]}, as_of
            old = await read("search", {"query": "lantern plan", "include_superseded": True, **at})
            assert plan in {h["id"] for h in old["hits"]}, as_of
            entry = await read(
                "advance_encounter", {"session_id": f"{READER}-{as_of}", "purpose": "p", **at}
            )
            assert plan not in json.dumps(entry.get("recent_concepts", [])), as_of
            panel = await read("orient", {"top_k": 50, **at})
            assert plan not in json.dumps(panel), as_of
            # Shown where asked for, as superseded, by nothing named, the same now and at now.
            for ref in (plan, "lantern plan"):
                found = await read("find_by_name", {"name": ref, **at})
                assert found["node"]["id"] == plan, (ref, as_of)
                assert found["node"]["superseded_by"] == "withheld", (ref, as_of)
                assert found.get("resolved_from") is None
            traced = await read("trace_provenance", {"ref": plan, **at})
            assert traced["node"]["superseded_by"] == "withheld"
        fought = await read("conflicts", {"limit": 100})
        assert plan not in json.dumps(fought)
        history = await read("chain_history", {"node": plan})
        assert [(v["id"], v.get("head", False)) for v in history["versions"]] == [(plan, False)]
        assert history.get("head") is None and not history.get("newer_left")
        infused = await read("infuse", {"session_id": READER, "prompt": "the lantern plan public"})
        assert plan not in json.dumps(infused)
        for text in answers:
            assert {u for u in unseen if u in text} == set(), text[:600]
        assert WHY not in "".join(answers)
        # The granted reader meets the withheld head where the reader met nothing.
        text, found = await _said(granted, "find_by_name", {"name": plan})
        assert found["node"]["id"] == ids["secret plan"] and found["resolved_from"] == plan
        _, fought = await _said(granted, "conflicts", {"limit": 100})
        assert plan not in json.dumps(fought)  # no live node is challenged: the same for all


async def test_a_status_reads_as_the_evidence_its_reader_may_see(
    store: GraphStore, tmp_path: Path
) -> None:
    data = tmp_path / "m"
    async with (
        _served(store, data, grant="all") as granted,
        _served(store, data) as reader,
    ):
        ids = await _write(granted)
        guess, hunch, why = ids["lantern guess"], ids["lantern hunch"], ids["lantern why"]
        shown = {guess: "supported", hunch: "untested", why: "open"}
        whole = {guess: "challenged", hunch: "challenged", why: "resolved"}
        unseen = _unseen(ids)
        answers: list[str] = []

        async def ask(client: Client, tool: str, arguments: dict[str, Any]) -> Any:
            text, found = await _said(client, tool, arguments)
            if client is reader:
                answers.append(text)
            return found

        async def statuses(client: Client, as_of: int | None = None) -> dict[str, Any]:
            """Each node's status on every read that shows one."""
            at: dict[str, Any] = {} if as_of is None else {"as_of": as_of}
            seen: dict[str, Any] = {}
            for node in (guess, hunch, why):
                found = await ask(client, "find_by_name", {"name": node, **at})
                seen[f"find {node}"] = found["node"]["status"]
                traced = await ask(client, "trace_provenance", {"ref": node, **at})
                seen[f"trace {node}"] = traced["node"]["status"]
                if as_of is None:
                    history = await ask(client, "chain_history", {"node": node})
                    seen[f"history {node}"] = history["versions"][-1]["status"]
            hits = await ask(client, "search", {"query": "lantern", "limit": 50, **at})
            for hit in hits["hits"]:
                if hit["id"] in shown:
                    seen[f"search {hit['id']}"] = hit["status"]
            session = f"{READER}-{as_of}-{client is reader}"
            entry = await ask(
                client, "advance_encounter", {"session_id": session, "purpose": "p", **at}
            )
            for node in [*entry.get("open_questions", []), *entry.get("live_hypotheses", [])]:
                if node["id"] in shown:
                    seen[f"re-entry {node['id']}"] = node["status"]
            panel = await ask(client, "orient", {"top_k": 50, **at})
            for ref in _refs(panel):
                if ref.get("id") in shown and ref.get("status"):
                    seen.setdefault(f"orient {ref['id']}", set()).add(ref["status"])
            return seen

        def expected(want: dict[str, str], seen: dict[str, Any]) -> dict[str, Any]:
            return {
                k: ({want[k.split()[-1]]} if isinstance(v, set) else want[k.split()[-1]])
                for k, v in seen.items()
            }

        now = await statuses(reader)
        assert now == expected(shown, now)
        # The open question a withheld answer resolved is open work, listed on re-entry.
        assert f"re-entry {why}" in now and f"re-entry {hunch}" in now
        at_now = await statuses(reader, ids["now"])  # as_of the present is the present
        assert at_now == {k: v for k, v in now.items() if not k.startswith("history")}
        then = await statuses(reader, ids["supported"])  # before the withheld evidence
        assert then == expected({guess: "supported", hunch: "untested", why: "open"}, then)
        fought = await _said(reader, "conflicts", {"limit": 100})
        answers.append(fought[0])
        assert guess not in fought[0] and hunch not in fought[0]
        infused, _ = await _said(
            reader, "infuse", {"session_id": READER, "prompt": "lantern guess and lantern hunch"}
        )
        answers.append(infused)
        assert "challenged" not in infused, infused
        # read_cypher reads stored statuses: the nodes withheld evidence moved are out of
        # its reach (the other reads above show them).
        query = {"query": "MATCH (n) WHERE n.status IS NOT NULL RETURN n.id, n.status"}
        rows = (await ask(reader, "read_cypher", query))["rows"]
        assert not {str(r[0]) for r in rows} & set(shown), rows
        for text in answers:
            assert {u for u in unseen if u in text} == set(), text[:600]
        # The granted reader reads the whole memory's statuses.
        full = await statuses(granted)
        assert full == expected(whole, full)
        _, cypher = await _said(granted, "read_cypher", query)
        assert {str(r[0]): r[1] for r in cypher["rows"] if r[0] in whole} == whole


def _refs(value: Any) -> list[dict[str, Any]]:
    """Every object in an answer that names a node by id."""
    found: list[dict[str, Any]] = []
    if isinstance(value, dict):
        if "id" in value:
            found.append(value)  # pyright: ignore[reportUnknownArgumentType]
        for v in value.values():  # pyright: ignore[reportUnknownVariableType]
            found += _refs(v)
    elif isinstance(value, list):
        for v in value:  # pyright: ignore[reportUnknownVariableType]
            found += _refs(v)
    return found


async def test_a_past_reads_by_the_same_rules(store: GraphStore, tmp_path: Path) -> None:
    """As of any tick: a withheld revision since undone still revised the public version
    then, unnamed; a status reads as the relations shown that stood then, whatever a
    withheld one had moved it to before them."""
    data = tmp_path / "m"
    async with (
        _served(store, data, grant="all") as granted,
        _served(store, data) as reader,
    ):
        await call_ok(granted, "advance_encounter", {"session_id": WRITER, "purpose": "past"})

        async def write(tool: str, key: str, items: list[dict[str, Any]]) -> dict[str, Any]:
            return await call_ok(granted, tool, {"session_id": WRITER, key: items})

        public = {"type": "Note", "name": "draft", "description": "lantern draft public"}
        made = await write("create_entities", "entities", [public])
        draft = made["created"][0]["id"]
        secret = {
            "type": "Note",
            "name": "draft",
            "description": f"lantern draft {MARK}",
            "classification": "secret",
            "supersedes": draft,
            "revision_why": WHY,
        }
        revised = await write("create_entities", "entities", [secret])
        hidden = revised["created"][0]["id"]
        await call_ok(granted, "delete_entities", {"session_id": WRITER, "refs": [hidden]})
        made = await write(
            "create_entities",
            "entities",
            [
                {"type": "Hypothesis", "name": "wick guess", "description": "wicks burn"},
                {"type": "Observation", "name": "soot seen", "description": "soot on glass"},
                {
                    "type": "Observation",
                    "name": f"chart {MARK}",
                    "description": f"chart {MARK}",
                    "classification": "phi",
                },
            ],
        )
        guess = next(m["id"] for m in made["created"] if m["name"] == "wick guess")
        chart = f"chart {MARK}"
        supported = await write(
            "create_relations",
            "relations",
            [{"source": chart, "type": "SUPPORTS", "target": "wick guess"}],
        )
        challenged = await write(
            "create_relations",
            "relations",
            [{"source": "soot seen", "type": "CHALLENGES", "target": "wick guess"}],
        )
        said: list[str] = []

        async def read(tool: str, arguments: dict[str, Any]) -> Any:
            text, found = await _said(reader, tool, arguments)
            said.append(text)
            return found

        # While the withheld revision stood, the public draft was superseded, by nothing named.
        for ref in (draft, "draft"):
            then = await read("find_by_name", {"name": ref, "as_of": revised["tick"]})
            assert then["node"]["id"] == draft
            assert then["node"]["superseded_by"] == "withheld"
        traced = await read("trace_provenance", {"ref": draft, "as_of": revised["tick"]})
        assert traced["node"]["superseded_by"] == "withheld"
        hits = await read("search", {"query": "lantern draft", "as_of": revised["tick"]})
        assert draft not in json.dumps(hits)
        # Now (the revision undone) it is the head again, to every reader.
        assert "superseded_by" not in (await read("find_by_name", {"name": draft}))["node"]
        # The support was withheld: before the public challenge, nothing shown moved it.
        for tick, want in ((supported["tick"], "untested"), (challenged["tick"], "challenged")):
            then = await read("find_by_name", {"name": guess, "as_of": tick})
            assert then["node"]["status"] == want, tick
            hits = await read("search", {"query": "wick guess", "as_of": tick})
            assert [h["status"] for h in hits["hits"] if h["id"] == guess] == [want], tick
        for text in said:
            assert {u for u in (MARK, hidden) if u in text} == set(), text[:600]
        assert WHY not in "".join(said)
        _, then = await _said(granted, "find_by_name", {"name": guess, "as_of": supported["tick"]})
        assert then["node"]["status"] == "supported"


async def test_a_write_reports_a_status_move_as_its_writer_may_see_it(
    store: GraphStore, tmp_path: Path
) -> None:
    """A writer not granted a class links evidence to a hypothesis a withheld observation
    supported: the status move its answer reports is from what the relations it may see
    gave ("untested"), never from the stored "supported" that would tell of the support."""
    data = tmp_path / "m"
    async with (
        _served(store, data, grant="all") as granted,
        _served(store, data) as reader,
    ):
        await call_ok(granted, "advance_encounter", {"session_id": WRITER, "purpose": "w"})
        entities = [
            {"type": "Hypothesis", "name": "wick guess", "description": "wicks burn"},
            {"type": "Observation", "name": "soot seen", "description": "soot on glass"},
            {"type": "Observation", "name": "ash seen", "description": "ash on glass"},
            {"type": "Observation", "name": MARK, "description": MARK, "classification": "phi"},
        ]
        await call_ok(granted, "create_entities", {"session_id": WRITER, "entities": entities})
        support = {"source": MARK, "type": "SUPPORTS", "target": "wick guess"}
        await call_ok(granted, "create_relations", {"session_id": WRITER, "relations": [support]})
        await call_ok(reader, "advance_encounter", {"session_id": READER, "purpose": "r"})
        challenge = {"source": "soot seen", "type": "CHALLENGES", "target": "wick guess"}
        text, done = await _said(
            reader, "create_relations", {"session_id": READER, "relations": [challenge]}
        )
        moved = [(c["from"], c["to"]) for c in done["status_changes"]]
        assert moved == [("untested", "challenged")], done
        assert "supported" not in text and MARK not in text
        # A link that moves nothing shown (it moves nothing stored either) reports nothing.
        again = {"source": "ash seen", "type": "CHALLENGES", "target": "wick guess"}
        _, done = await _said(
            reader, "create_relations", {"session_id": READER, "relations": [again]}
        )
        assert not done.get("status_changes"), done
