"""Governed erasure on every backend: the plan, the deletion, the tombstones, and no trace
of the erased text left in the memory, its text index or its meanings."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

from kenning_encounter.analytics.baseline import Baseline, BaselineEntry, BaselineStore
from kenning_encounter.errors import Conflict, InvalidInput, NotFound
from kenning_encounter.memory import erasure, operator, scrub
from kenning_encounter.memory.service import Memory
from kenning_encounter.store.meanings import KeepsDerived
from kenning_encounter.store.port import GraphStore
from tests.support.snapshot import snapshot

MARKER = "qwxzmarker"


def seed(memory: Memory) -> dict[str, str]:
    """A referent with a revision, what is only about it, and what is not."""
    # The encounter's own words speak of her too: they go with her (test_erasure_free_text.py).
    memory.advance_encounter("s", f"private work on {MARKER}")
    memory.create_entities(
        "s",
        [
            {"type": "Concept", "name": "Jane", "description": f"a person {MARKER}"},
            {"type": "Observation", "name": "jane lives", "description": f"{MARKER} at 1 Road"},
            {
                "type": "Citation",
                "name": "jane registry",
                "description": f"{MARKER} registry",
                "kind": "web",
                "uri": f"https://registry.example/{MARKER}",
            },
            {"type": "Observation", "name": "shared", "description": "jane and the project"},
            {"type": "Concept", "name": "project", "description": "the project itself"},
            {"type": "Note", "name": "lonely", "description": "linked to nothing"},
        ],
    )
    memory.create_relations(
        "s",
        [
            {"source": "jane lives", "type": "ABOUT", "target": "Jane"},
            {"source": "jane registry", "type": "GROUNDS", "target": "Jane"},
            {"source": "shared", "type": "ABOUT", "target": "Jane"},
            {"source": "shared", "type": "ABOUT", "target": "project"},
        ],
    )
    memory.create_entities(
        "s",
        [
            {
                "type": "Concept",
                "name": "Jane Doe",
                "description": f"the same person {MARKER} revised",
                "supersedes": "Jane",
                "revision_why": "full name",
            }
        ],
    )
    ids = {name: memory.find_by_name(name).node.id for name in ("Jane Doe", "shared", "project")}
    memory.close_encounter("s", f"done with {MARKER}")
    return ids


def _names(plan: erasure.Plan) -> list[str]:
    return sorted(i.node.name for i in plan.items)


def test_the_plan_covers_the_chain_and_what_is_only_about_it(
    store: GraphStore, memory: Memory
) -> None:
    seed(memory)
    before = snapshot(store)
    plan = erasure.plan(store, ["Jane Doe"])
    assert _names(plan) == ["Jane", "Jane Doe", "jane lives", "jane registry"]
    why = {i.node.name: i.why for i in plan.items}
    assert why["Jane Doe"].startswith("the referent")
    assert "chain" in why["Jane"]
    assert "ABOUT -> Jane" in why["jane lives"] and "GROUNDS -> Jane" in why["jane registry"]
    assert plan.tombstones == {plan.items[0].node.encounter: 4}
    # An older version's id names the same chain.
    old = next(i.node.id for i in plan.items if i.node.name == "Jane")
    assert _names(erasure.plan(store, [old])) == _names(plan)
    assert snapshot(store) == before  # a plan writes nothing


def test_what_only_grounds_the_erased_goes_too_transitively(
    store: GraphStore, memory: Memory
) -> None:
    seed(memory)
    memory.advance_encounter("s", "more")
    memory.create_entities(
        "s",
        [{"type": "Question", "name": "where does she live", "description": "open"}],
    )
    memory.create_relations(
        "s", [{"source": "jane lives", "type": "RAISES", "target": "where does she live"}]
    )
    plan = erasure.plan(store, ["Jane Doe"])
    # The observation raises the question and the question is raised only by it: both go.
    assert {"jane lives", "where does she live"} <= set(_names(plan))
    assert {"shared", "project", "lonely"}.isdisjoint(_names(plan))
    # What touches something staying stays, and the plan says so.
    assert [(i.node.name, i.why) for i in plan.kept] == [
        ("shared", "also linked to what stays: project")
    ]


def test_erase_deletes_the_plan_and_leaves_tombstones(store: GraphStore, memory: Memory) -> None:
    ids = seed(memory)
    plan = erasure.plan(store, ["Jane Doe"])
    encounter = plan.items[0].node.encounter or ""
    done = erasure.erase(store, plan)
    assert done.tombstones == {encounter: 4}
    graph = store.read(lambda tx: tx.authored_graph())
    assert sorted(n.name for n in graph.nodes) == ["lonely", "project", "shared"]
    assert [(e.source, e.target) for e in graph.edges] == [(ids["shared"], ids["project"])]
    sealed = store.read(lambda tx: tx.get_encounter(encounter))
    assert sealed is not None and sealed.tombstones == 4
    assert sealed.purpose == sealed.summary == erasure.WITHDRAWN
    assert store.fulltext(MARKER, heads_only=False) == []
    assert store.fulltext_stats([MARKER]).doc_freq(MARKER) == 0
    with pytest.raises(NotFound):
        erasure.plan(store, ["Jane Doe"])


def test_erase_refuses_a_plan_the_memory_moved_past(store: GraphStore, memory: Memory) -> None:
    seed(memory)
    plan = erasure.plan(store, ["Jane Doe"])
    memory.advance_encounter("s", "later")
    memory.create_entities("s", [{"type": "Observation", "name": "new", "description": "x"}])
    memory.create_relations("s", [{"source": "new", "type": "ABOUT", "target": "Jane Doe"}])
    before = snapshot(store)
    with pytest.raises(Conflict, match="changed since the plan"):
        erasure.erase(store, plan)
    assert snapshot(store) == before


def test_meanings_and_baselines_lose_the_erased(
    store: GraphStore, memory: Memory, tmp_path: Path
) -> None:
    seed(memory)
    plan = erasure.plan(store, ["Jane Doe"])
    keep = memory.find_by_name("project").node
    going = plan.items[0].node
    meanings: Any
    if isinstance(store, KeepsDerived):
        meanings = store.meanings
        meanings.put_many([(going.id, f"{MARKER} meaning", "h1", 1), (keep.id, "kept", "h2", 2)])
    else:
        from kenning_encounter.meaning.sidecar import SidecarStore

        with SidecarStore(tmp_path / scrub.SIDECAR_DIR) as sidecar:
            sidecar.put(going.id, f"{MARKER} meaning", "h1")
            sidecar.put(keep.id, "kept", "h2")
    table = store.baselines if isinstance(store, KeepsDerived) else None
    baselines = BaselineStore(tmp_path / scrub.ANALYTICS_DIR, table=table)
    entries = (
        BaselineEntry(id=going.id, name=going.name, type=going.type, rank=1, score=0.5),
        BaselineEntry(id=keep.id, name=keep.name, type=keep.type, rank=2, score=0.4),
    )
    baselines.save(Baseline(encounter="E1", saved_at="t", tick=3, node_count=7, entries=entries))
    erasure.erase(store, plan)
    lines = scrub.beside_store(store, tmp_path, plan.ids)
    assert any("1 dropped" in line for line in lines), lines
    assert [e.id for b in baselines.all() for e in b.entries] == [keep.id]
    if isinstance(store, KeepsDerived):
        changes = store.meanings.changes(0)
        assert [e.id for e in changes.put] == [keep.id]
    else:
        log = (tmp_path / scrub.SIDECAR_DIR / "meanings.log").read_bytes()
        assert MARKER.encode() not in log and keep.id.encode() in log
        assert (
            going.id.encode() not in (tmp_path / "analytics" / "mass-baselines.json").read_bytes()
        )


def test_a_meaning_being_made_while_its_node_is_erased_is_not_kept(
    store: GraphStore, memory: Memory, tmp_path: Path
) -> None:
    """The model is still making the meaning when the erasure and its scrub run; the put
    that follows must keep nothing of the erased node (on Neo4j the servers keep serving
    through an erasure; an embedded store's server is stopped for one, and its sidecar
    holds to the same rule for a node deleted while its meaning was made)."""
    import threading

    from kenning_encounter.infusion.meaning_bridge import MeaningRuntime
    from kenning_encounter.meaning import MatcherOptions
    from kenning_encounter.meaning.providers.openai_compat import OpenAICompatProvider
    from kenning_encounter.meaning.stored import StoredMeanings
    from tests.support.fake_llm import FakeOpenAI, Seen, echo_meaning

    seed(memory)
    plan = erasure.plan(store, ["Jane Doe"])
    going = plan.items[0].node
    asked, answer = threading.Event(), threading.Event()

    def held_answer(seen: Seen) -> str:
        asked.set()
        assert answer.wait(30), "the test never let the model answer"
        return echo_meaning(seen)

    home: Any = (
        StoredMeanings(store.meanings) if isinstance(store, KeepsDerived) else tmp_path / "home"
    )
    with FakeOpenAI(responder=held_answer) as fake:
        provider = OpenAICompatProvider(
            base_url=fake.url + "/v1", model="m", timeout_s=30.0, max_attempts=1
        )
        runtime = MeaningRuntime(store, home, provider, MatcherOptions())
        try:
            runtime.maintainer.start()
            runtime.nodes_created([going])
            assert asked.wait(30), "the meaning was never asked for"
            erasure.erase(store, plan)
            scrub.beside_store(store, tmp_path / "operator", plan.ids)
            answer.set()
            assert runtime.maintainer.wait_idle(30)
            assert fake.hits == 1 and MARKER in fake.requests[0].user
            assert runtime.sidecar.get(going.id) is None, "the erased node's meaning was kept"
            assert len(runtime.sidecar) == 0
        finally:
            answer.set()
            runtime.close()
    if isinstance(store, KeepsDerived):
        assert store.meanings.changes(0).put == ()
        assert _found_on_neo4j(MARKER) == []
    else:
        assert MARKER.encode() not in (tmp_path / "home" / "meanings.log").read_bytes()


def test_nothing_of_the_marker_is_left_on_neo4j(store: GraphStore, memory: Memory) -> None:
    if store.backend != "neo4j":
        pytest.skip("the embedded store's files are searched by the CLI tests")
    seed(memory)
    plan = erasure.plan(store, ["Jane Doe"])
    assert _found_on_neo4j(MARKER)  # the search would see it
    store.meanings.put_many([(plan.items[0].node.id, f"{MARKER} meaning", "h", 1)])  # type: ignore[attr-defined]
    erasure.erase(store, plan)
    scrub.beside_store(store, Path("unused"), plan.ids)
    assert _found_on_neo4j(MARKER) == []


def _found_on_neo4j(marker: str) -> list[str]:
    """Every node and relation property of the database holding the marker, and the
    fulltext index's hits for it."""
    import neo4j

    from kenning_encounter.store.neo4j.queries import FULLTEXT_INDEX
    from tests.support.backends import neo4j_target

    target = neo4j_target()
    found: list[str] = []
    with (
        neo4j.GraphDatabase.driver(target.uri, auth=target.auth) as driver,
        driver.session(database=target.database) as s,
    ):
        for row in s.run("MATCH (n) RETURN labels(n) AS l, properties(n) AS p"):
            if marker in repr(row["p"]).lower():
                found.append(f"node {row['l']}")
        for row in s.run("MATCH ()-[r]->() RETURN type(r) AS t, properties(r) AS p"):
            if marker in repr(row["p"]).lower():
                found.append(f"relation {row['t']}")
        hits = s.run(
            "CALL db.index.fulltext.queryNodes($index, $q) YIELD node RETURN count(node) AS n",
            index=FULLTEXT_INDEX,
            q=marker,
        ).single()
        if hits is not None and hits["n"]:
            found.append(f"fulltext {hits['n']}")
    return found


def test_purge_finds_what_is_due(store: GraphStore, memory: Memory) -> None:
    memory.advance_encounter("s", "kept for a while")
    memory.create_entities(
        "s",
        [
            {"type": "Note", "name": "expired", "description": "x", "retention": "2020-01-01"},
            {"type": "Note", "name": "later", "description": "y", "retention": "2999-01-01"},
            {"type": "Note", "name": "forever", "description": "z"},
        ],
    )
    expired = memory.find_by_name("expired").node.id
    assert erasure.due(store, "2026-12-01T00:00:00.000Z") == [expired]
    assert erasure.due(store, "2019-12-31T23:59:59.999Z") == []
    # Due from the start of the day the retention names.
    assert erasure.due(store, "2020-01-01T00:00:00.000Z") == [expired]


def test_the_infusion_log_loses_the_erased_ids_and_the_prompts_that_drew_them(
    store: GraphStore, memory: Memory, tmp_path: Path
) -> None:
    from kenning_encounter.store.infusion_log import KeepsInfusionLog, LogEntry

    ids = seed(memory)
    plan = erasure.plan(store, ["Jane Doe"])
    assert isinstance(store, KeepsInfusionLog)
    going = plan.items[0].node.id

    def entry(key: str, bodies: tuple[str, ...], prompt: str) -> LogEntry:
        return LogEntry(
            key=key,
            session="sess",
            at=float(len(key)),
            turn=1,
            channel="lexical",
            degraded=False,
            reason=None,
            bodies=bodies,
            standing=(),
            cut=(),
            silent=False,
            prompt_sha256="0" * 64,
            prompt_chars=len(prompt),
            prompt=prompt,
        )

    store.infusion_log.append(entry("k1", (going, ids["project"]), f"where is {MARKER}"), keep=10)
    store.infusion_log.append(entry("k22", (ids["project"],), "the project"), keep=10)
    erasure.erase(store, plan)
    lines = scrub.beside_store(store, tmp_path, plan.ids)
    assert any("infusion log: 1 " in line for line in lines), lines
    tag = entry("k", (), "").tag
    got = {e.key: e for e in store.infusion_log.entries(tag, offset=0, limit=10)}
    assert got["k1"].bodies == (ids["project"],) and got["k1"].prompt is None
    assert got["k22"].bodies == (ids["project"],) and got["k22"].prompt == "the project"
    if store.backend != "neo4j":
        return  # one process owns an embedded store: no erasure comes mid-prompt
    # A replica's prompt that read the node before the erasure logs it after the scrub:
    # the entry keeps nothing of the erased node, nor the prompt that drew it.
    late = entry("k4444", (going, ids["project"]), f"again {MARKER}")
    store.infusion_log.append(late, keep=10)
    got = {e.key: e for e in store.infusion_log.entries(tag, offset=0, limit=10)}
    assert got["k4444"].bodies == (ids["project"],) and got["k4444"].prompt is None


def test_what_an_operator_deletes_takes_back_the_statuses_it_moved(
    store: GraphStore, memory: Memory
) -> None:
    """Found by hunting: an erasure or a forget took a node's relations with it but left
    the statuses they had moved, so a question still read resolved and a hypothesis
    supported with nothing left resolving or supporting them. The ends that stay take the
    status their remaining evidence gives (both operator paths, one helper)."""
    memory.advance_encounter("s", "evidence an operator removes")
    memory.create_entities(
        "s",
        [
            {"type": "Question", "name": "why", "description": "open work"},
            {"type": "Hypothesis", "name": "guess", "description": "a guess"},
            {"type": "Hypothesis", "name": "other guess", "description": "another"},
            {"type": "Observation", "name": "answer", "description": f"{MARKER} answer"},
            {"type": "Observation", "name": "doubt", "description": "counter"},
        ],
    )
    memory.create_relations(
        "s",
        [
            {"source": "answer", "type": "RESOLVES", "target": "why"},
            {"source": "answer", "type": "SUPPORTS", "target": "guess"},
            {"source": "doubt", "type": "SUPPORTS", "target": "other guess"},
            {"source": "doubt", "type": "CHALLENGES", "target": "guess"},
        ],
    )
    status = {n: memory.find_by_name(n).node.status for n in ("why", "guess", "other guess")}
    assert status == {"why": "resolved", "guess": "challenged", "other guess": "supported"}
    plan = erasure.plan(store, ["answer"])
    assert [i.node.name for i in plan.items] == ["answer"]
    erasure.erase(store, plan)
    status = {n: memory.find_by_name(n).node.status for n in ("why", "guess", "other guess")}
    assert status == {"why": "open", "guess": "challenged", "other guess": "supported"}
    operator.forget(store, ["doubt"])
    status = {n: memory.find_by_name(n).node.status for n in ("why", "guess", "other guess")}
    assert status == {"why": "open", "guess": "untested", "other guess": "untested"}


def test_forgetting_a_version_inside_a_chain_needs_the_newer_ones_too(
    store: GraphStore, memory: Memory
) -> None:
    """Found by hunting: forget of a version that a newer one revises deleted it alone, so
    the version before it became a head again beside the newer one: two live nodes under
    one name, the chain split in two. It is refused now, naming the newer version, as an
    agent's undo is (delete_entities); nothing is planned or deleted."""
    memory.advance_encounter("s", "a chain of three")
    ids = [memory.create_entities("s", [{"type": "Note", "name": "plan"}]).created[0].id]
    for n in (2, 3):
        revision = {"type": "Note", "name": "plan", "description": f"v{n}"}
        revision |= {"supersedes": "plan", "revision_why": "redrafted"}
        ids.append(memory.create_entities("s", [revision]).created[0].id)
    before = snapshot(store)
    for call in (
        lambda: operator.plan(store, [ids[1]], with_history=False),
        lambda: operator.forget(store, [ids[1]]),
        lambda: operator.forget(store, [ids[1], ids[0]]),
        lambda: operator.forget(store, [ids[1]], with_history=True),
    ):
        with pytest.raises(InvalidInput) as info:
            call()
        assert info.value.field == "refs[0]" and ids[2] in str(info.value), str(info.value)
    assert snapshot(store) == before
    # With the newer version named too, the version before them is the one head left.
    operator.forget(store, [ids[1], ids[2]])
    heads = [n for n in store.read(lambda tx: tx.authored_graph()).nodes if n.is_head]
    assert [n.id for n in heads] == [ids[0]]
    assert memory.find_by_name("plan").node.id == ids[0]


def test_what_was_undone_two_links_from_the_erased_is_gone_from_the_past_too(
    store: GraphStore, memory: Memory
) -> None:
    """Found by hunting: an observation about the referent and the question it raised, both
    undone by their encounter, live on in the record of the past that as_of reads. The
    erasure dropped the observation (linked to the referent) but not the question (linked
    only to the observation), so a read as of a tick before the undo still showed the
    question's text. What was deleted is now followed outward, as the live graph's is."""
    memory.advance_encounter("s", "a person")
    memory.create_entities("s", [{"type": "Concept", "name": "Jane", "description": "a person"}])
    memory.advance_encounter("s", "a look, then undone", close_summary="one")
    memory.create_entities(
        "s",
        [
            {"type": "Observation", "name": "jane seen", "description": "jane at the road"},
            {"type": "Question", "name": "asked", "description": f"her phone {MARKER}?"},
        ],
    )
    memory.create_relations(
        "s",
        [
            {"source": "jane seen", "type": "ABOUT", "target": "Jane"},
            {"source": "jane seen", "type": "RAISES", "target": "asked"},
        ],
    )
    held = store.read(lambda tx: tx.clock_and_erasures())[0]
    assert [h.name for h in memory.search(MARKER, as_of=held).hits] == ["asked"]
    memory.delete_entities("s", ["asked"])
    memory.delete_entities("s", ["jane seen"])
    memory.close_encounter("s", "done")
    erasure.erase(store, erasure.plan(store, ["Jane"]))
    clock = store.read(lambda tx: tx.clock_and_erasures())[0]
    for tick in range(clock + 1):
        assert memory.search(MARKER, as_of=tick, include_superseded=True).hits == [], tick
    with pytest.raises(NotFound):
        memory.find_by_name("asked", as_of=held)
