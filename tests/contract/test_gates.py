"""Classification gates on both backends: one test per gate per read surface of the services.

A memory not granted a class reads as if its nodes were not there; the same store read
with the grant shows them. (The served tools, enumerated from the registry, are in
tests/e2e/test_classification_gates.py.)
"""

from __future__ import annotations

import io
import json
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest

from kenning_encounter.errors import KenningError, NotFound
from kenning_encounter.infusion.config import InfusionConfig
from kenning_encounter.infusion.meaning_bridge import MeaningRuntime
from kenning_encounter.infusion.pipeline import Infuser
from kenning_encounter.meaning import MatcherOptions, make_provider
from kenning_encounter.memory import conflicts, history, load
from kenning_encounter.memory.dump import export
from kenning_encounter.memory.gates import Gate, GatedReads, GatedStore, view
from kenning_encounter.memory.models import Created, RecordedNode
from kenning_encounter.memory.service import Memory
from kenning_encounter.store.embedded.backend import EmbeddedStore
from kenning_encounter.store.port import GraphStore, HeadsAsk, ReadTx
from kenning_encounter.store.records import WITHHELD_SUCCESSOR
from kenning_encounter.vocabulary import CLASSIFICATIONS
from tests.support import classified as plan
from tests.support.classified import MARK
from tests.support.fake_llm import FakeGemini, Seen, echo_meaning, handle_of

ALL = tuple(CLASSIFICATIONS)


@pytest.fixture
def planted(store: GraphStore) -> dict[str, str]:
    """The scenario written by a granted writer; name -> id of every node."""
    writer = Memory(store, granted=ALL)
    writer.advance_encounter(plan.WRITER, "lanterns and patients")
    made = writer.create_entities(plan.WRITER, plan.entities()).created
    made += writer.create_entities(plan.WRITER, plan.revision()).created
    writer.create_relations(plan.WRITER, plan.relations())
    return {m.name: m.id for m in made}


def _withheld_ids(planted: dict[str, str], granted: tuple[str, ...] = ()) -> set[str]:
    return {
        planted[name]
        for name, classes in plan.CLASSIFIED.items()
        if set(classes.split(",")) - set(granted)
    }


def _leaks(answer: Any, planted: dict[str, str], granted: tuple[str, ...] = ()) -> set[str]:
    """What of the withheld nodes an answer carries: their mark or their ids."""
    text = answer if isinstance(answer, str) else json.dumps(_plain(answer), default=str)
    found = {i for i in _withheld_ids(planted, granted) if i in text}
    if not granted and MARK in text:
        found.add(MARK)
    return found


def _plain(value: Any) -> Any:
    dump = getattr(value, "model_dump", None)
    if callable(dump):
        return dump()
    if hasattr(value, "__dataclass_fields__"):
        return {k: _plain(getattr(value, k)) for k in value.__dataclass_fields__}
    if isinstance(value, list | tuple):
        return [_plain(v) for v in value]  # pyright: ignore[reportUnknownVariableType]
    return value


def _both(store: GraphStore, read: Callable[[Memory], Any]) -> tuple[Any, Any]:
    """The same read through a memory granted nothing and one granted every class."""
    return read(Memory(store)), read(Memory(store, granted=ALL))


def test_search_leaves_withheld_nodes_out(store: GraphStore, planted: dict[str, str]) -> None:
    gated, granted = _both(
        store, lambda m: m.search(f"lantern {MARK}", limit=50, include_superseded=True)
    )
    assert _leaks(gated, planted) == set() and gated.hits  # the public lanterns still come
    assert _leaks(granted, planted) == _withheld_ids(planted) | {MARK}


def test_find_by_name_and_by_id_say_not_found(store: GraphStore, planted: dict[str, str]) -> None:
    gated = Memory(store)
    for name in plan.CLASSIFIED:
        for ref in (name, planted[name]):
            with pytest.raises(NotFound) as info:
                gated.find_by_name(ref)
            assert MARK not in str(info.value).replace(ref, "")
    assert Memory(store, granted=ALL).find_by_name(f"ward note {MARK}").node.name


def test_a_partial_grant_shows_only_what_it_covers(
    store: GraphStore, planted: dict[str, str]
) -> None:
    pii = Memory(store, granted=("pii",))
    assert pii.find_by_name(f"open ask {MARK}").node  # pii alone
    with pytest.raises(NotFound):
        pii.find_by_name(f"card number {MARK}")  # pci and pii: both must be granted
    answer = pii.search(f"lantern {MARK}", limit=50)
    assert _leaks(answer, planted, ("pii",)) == set()


def test_trace_provenance_walks_around_withheld_evidence(
    store: GraphStore, planted: dict[str, str]
) -> None:
    gated, granted = _both(store, lambda m: m.trace_provenance("lantern finding"))
    assert _leaks(gated, planted) == set()
    assert planted["plain lantern"] in json.dumps(_plain(gated))
    assert {planted[f"ward note {MARK}"], planted[f"card number {MARK}"]} <= _leaks(
        granted, planted
    )
    with pytest.raises(NotFound):
        Memory(store).trace_provenance(f"ward note {MARK}")


def test_chain_history_leaves_out_a_withheld_version(
    store: GraphStore, planted: dict[str, str]
) -> None:
    gated, granted = _both(store, lambda m: history.chain_history(m.store, "lantern policy"))
    assert _leaks(gated, planted) == set()
    assert [v.name for v in gated.versions] == ["lantern policy"]
    assert planted[f"old policy {MARK}"] in _leaks(granted, planted)


def test_conflicts_hold_no_withheld_side(store: GraphStore, planted: dict[str, str]) -> None:
    gated, granted = _both(store, lambda m: conflicts.conflicts(m.store, limit=100))
    assert _leaks(gated, planted) == set()
    assert planted[f"ward note {MARK}"] in _leaks(granted, planted)


def test_the_re_entry_payload_lists_no_withheld_node(
    store: GraphStore, planted: dict[str, str]
) -> None:
    gated = Memory(store).advance_encounter("reader-one", "coming back")
    granted = Memory(store, granted=ALL).advance_encounter("reader-two", "coming back")
    assert _leaks(gated, planted) == set()
    assert "lantern open" in json.dumps(_plain(gated))
    assert planted[f"open ask {MARK}"] in _leaks(granted, planted)


def test_the_analytics_projection_holds_no_withheld_node(
    store: GraphStore, planted: dict[str, str]
) -> None:
    gated, granted = _both(store, lambda m: m.store.read(lambda tx: tx.authored_graph()))
    assert _leaks(gated, planted) == set() and gated.nodes
    ids = {n.id for n in gated.nodes}
    assert all(e.source in ids and e.target in ids for e in gated.edges)
    assert _leaks(granted, planted) == _withheld_ids(planted) | {MARK}


def test_an_infusion_carries_no_withheld_node(store: GraphStore, planted: dict[str, str]) -> None:
    prompt = f"lanterns glow at dusk, lantern oil burns: the ward patient record {MARK}?"
    gated = Infuser(Memory(store).store, InfusionConfig()).infuse("infused-one", prompt)
    granted = Infuser(Memory(store, granted=ALL).store, InfusionConfig()).infuse(
        "infused-two", prompt
    )
    assert _leaks(gated, planted) == set()
    assert "lantern" in gated["payload"]  # silence would prove nothing
    assert planted[f"ward note {MARK}"] in _leaks(granted, planted)


def test_every_read_of_the_port_is_gated(store: GraphStore, planted: dict[str, str]) -> None:
    """Each ReadTx operation, asked directly about the withheld nodes, knows none of them."""
    hidden = _withheld_ids(planted)
    ward, finding = planted[f"ward note {MARK}"], planted["lantern finding"]
    Memory(store, granted=ALL).confirm_entities(plan.WRITER, [ward])  # a confirmation withheld

    def work(tx: ReadTx) -> dict[str, Any]:
        return {
            "get_node": tx.get_node(ward),
            "get_nodes": tx.get_nodes(sorted(hidden)),
            "classified": tx.classified(sorted(hidden)),
            "head_id_by_name": tx.head_id_by_name(f"ward note {MARK}"),
            "head_ids_by_names": tx.head_ids_by_names(list(plan.CLASSIFIED)),
            "predecessors": tx.predecessors(planted["lantern policy"]),
            "edges_of": tx.edges_of(finding) + tx.edges_of(ward),
            "edge_exists": tx.edge_exists(ward, finding, "GROUNDS"),
            "provenance": tx.provenance(finding, ["GROUNDS"], 3),
            "neighbourhood": tx.neighbourhood([finding, ward], ["GROUNDS", "RAISES"]),
            "tension_of": tx.tension_of([planted["lantern guess"], ward]),
            "heads_by_status": tx.heads_by_status("Question", ["open"], 10),
            "recent_heads": tx.recent_heads("Observation", 10),
            "recorded_ids": [tx.recorded_ids(e.name) for e in tx.encounters(limit=5)],
            "encounter_members": tx.encounter_members([e.name for e in tx.encounters()]),
            "encounter_nodes": tx.encounter_nodes([e.name for e in tx.encounters()], 50),
        }

    answers = Memory(store).store.read(work)
    answers["fulltext"] = Memory(store).store.fulltext(f"lantern {MARK}", limit=50)

    def searched(tx: ReadTx, hits: list[Any], stats_of: Any) -> Any:
        return hits, tx.get_nodes([h.id for h in hits]), tx.get_nodes(sorted(hidden))

    # The one read infusion makes per prompt: the search, its nodes, and more reads in it.
    words, terms = f"lantern {MARK}", ["lantern", MARK]
    answers["read_text"] = Memory(store).store.read_text(words, terms, searched, limit=50)
    for op, answer in answers.items():
        assert _leaks(answer, planted) == set(), op
    hits = Memory(store, granted=ALL).store.fulltext(f"lantern {MARK}", limit=50)
    assert ward in {h.id for h in hits}
    granted_hits, _, _ = Memory(store, granted=ALL).store.read_text(
        words, terms, searched, limit=50
    )
    assert ward in {h.id for h in granted_hits}
    assert answers["edge_exists"] is False and answers["get_node"] is None
    granted = Memory(store, granted=ALL).store.read(work)
    assert granted["get_node"] is not None and granted["edge_exists"] is True
    assert ward in {n.id for n in granted["tension_of"][0].nodes}  # the challenge it withholds
    assert ward in json.dumps(_plain(granted["edges_of"]))


def test_a_read_added_to_the_port_answers_gated_without_a_method(
    store: GraphStore, planted: dict[str, str]
) -> None:
    """A read GatedReads does not know passes through its generic filter: records out."""

    class Wider:
        def __init__(self, tx: ReadTx) -> None:
            self.tx = tx

        def get_nodes(self, ids: list[str]) -> dict[str, Any]:
            return self.tx.get_nodes(ids)

        def classified(self, ids: list[str]) -> dict[str, str]:
            return self.tx.classified(ids)

        # What the gate asks of a status a relation moved (memory/status.py).
        def edges_into(self, ids: list[str], rels: list[str]) -> list[Any]:
            return self.tx.edges_into(ids, rels)

        def moves_after(self, ids: list[str], tick: int) -> list[Any]:
            return self.tx.moves_after(ids, tick)

        def everything(self) -> list[Any]:
            sub = self.tx.authored_graph()
            return [*sub.nodes, {"by_id": {n.id: n for n in sub.nodes}}, tuple(sub.edges)]

    gate = Gate(())
    answer = store.read(lambda tx: GatedReads(Wider(tx), gate).everything())  # type: ignore[arg-type]
    assert _leaks(answer, planted) == set() and answer
    assert isinstance(Memory(store).store, GatedStore)


def _cypher(memory: Memory, query: str) -> Any:
    return memory.read_cypher(query)


ATTACKS = (
    "MATCH (n) RETURN n.description",
    "MATCH (n) RETURN n",
    "MATCH (n:Observation) RETURN collect(n.description) AS everything",
    "MATCH (n) RETURN count(n) AS c, collect(n.name) AS names",
    "MATCH p = (a:Observation)-[*1..2]->(b) RETURN p LIMIT 50",
    "MATCH (a)-[r]->(b) RETURN a.name, b.name, b.description",
    "MATCH (e:Encounter)-[:RECORDED]->(x) RETURN x.name, x.description",
    "MATCH (a:Concept {name: 'lantern finding'})<-[*1..2]-(b) RETURN b.description",
    "MATCH (n:Observation) WITH n ORDER BY n.tick LIMIT 100 RETURN n.name + n.description AS t",
)


@pytest.mark.parametrize("query", ATTACKS)
def test_read_cypher_never_reaches_a_withheld_node(
    store: GraphStore, planted: dict[str, str], query: str
) -> None:
    if store.backend == "neo4j":
        if "[r]" in query:
            query = query.replace("b.description", "type(r) AS t, properties(b) AS p")
        query = query.replace("RETURN n.description", "RETURN properties(n)")
    gated = Memory(store)
    assert _leaks(_cypher(gated, query), planted) == set()
    granted = _cypher(Memory(store, granted=ALL), query)
    assert granted.rows  # the granted reader reads


def test_read_cypher_with_the_grant_sees_the_withheld_text(
    store: GraphStore, planted: dict[str, str]
) -> None:
    rows = (
        Memory(store, granted=ALL)
        .read_cypher("MATCH (n:Observation) RETURN n.description AS d")
        .rows
    )
    assert any(MARK in str(r) for r in rows)
    partial = Memory(store, granted=("phi", "pii", "pci"))
    query = "MATCH (n:Observation) RETURN n.description AS d"
    rows = partial.read_cypher(query).rows
    assert any(MARK in str(r) for r in rows)  # no secret Observation: all of them shown
    assert not any(
        MARK in str(r)
        for r in partial.read_cypher("MATCH (n:Concept) RETURN n.description AS d").rows
    )  # the secret Concept is not


def test_read_cypher_reaches_no_status_a_withheld_node_moved(store: GraphStore) -> None:
    """A stored status is the whole memory's: a hypothesis a withheld observation challenged
    reads "challenged". read_cypher reads what is stored, so a node a withheld node
    resolves, supports or challenges is out of a query's reach, as the withheld node is,
    for a caller not granted its class (the other reads show its status as the relations
    they show give it); back in reach once those relations are gone (an undo), unless a
    withheld node's link is still its latest use (tests/contract/test_gated_standing.py)."""
    writer = Memory(store, granted=ALL)
    writer.advance_encounter(plan.WRITER, "moved statuses")
    writer.create_entities(
        plan.WRITER,
        [
            {"type": "Hypothesis", "name": "wick guess", "description": "wicks burn"},
            {"type": "Question", "name": "wick why", "description": "why wicks burn"},
            {"type": "Observation", "name": "soot seen", "description": "soot"},
            {"type": "Observation", "name": MARK, "description": MARK, "classification": "phi"},
        ],
    )
    challenge = {"source": MARK, "type": "CHALLENGES", "target": "wick guess"}
    writer.create_relations(
        plan.WRITER,
        [
            challenge,
            {"source": MARK, "type": "RESOLVES", "target": "wick why"},
            {"source": "soot seen", "type": "SUPPORTS", "target": "wick guess"},
        ],
    )
    query = "MATCH (n) WHERE n.status IS NOT NULL RETURN n.name AS name, n.status AS status"
    gated, partial = Memory(store), Memory(store, granted=("pii", "pci", "secret"))

    def statuses(memory: Memory) -> dict[str, str]:
        return {str(r[0]): str(r[1]) for r in memory.read_cypher(query).rows}

    assert statuses(gated) == statuses(partial) == {}
    assert statuses(writer) == {"wick guess": "challenged", "wick why": "resolved"}
    assert statuses(Memory(store, granted=("phi",)))["wick guess"] == "challenged"
    writer.delete_relations(plan.WRITER, [challenge])  # its own fresh mistake
    assert statuses(gated) == {"wick guess": "supported"}
    writer.delete_entities(plan.WRITER, [MARK])
    # The question stays out: its latest use is still the withheld node's link, in its
    # used_at (store/uses.py), whatever became of the link.
    assert statuses(gated) == {"wick guess": "supported"}
    assert statuses(writer) == {"wick guess": "supported", "wick why": "open"}


def test_read_cypher_runs_as_ever_while_nothing_withheld_is_held(store: GraphStore) -> None:
    memory = Memory(store)
    memory.advance_encounter("w", "plain")
    memory.create_entities("w", [{"type": "Note", "name": "public", "description": "open"}])
    assert memory.read_cypher("MATCH (n:Note) RETURN n.name").rows == [["public"]]


def test_an_export_holds_back_what_it_is_not_granted(
    store: GraphStore, planted: dict[str, str]
) -> None:
    out = io.BytesIO()
    done = export(store, out, app_version="test", withheld=frozenset(CLASSIFICATIONS))
    dumped = out.getvalue().decode()
    assert _leaks(dumped, planted) == set()
    assert done.held_back == len(plan.CLASSIFIED)
    header, *_, trailer = (json.loads(line) for line in dumped.splitlines())
    assert header["counts"] == trailer["counts"] == done.counts
    full = io.BytesIO()
    whole = export(store, full, app_version="test")
    assert whole.held_back == 0 and MARK in full.getvalue().decode()
    assert whole.counts["node"] - done.counts["node"] == len(plan.CLASSIFIED)


def test_the_meaning_channel_never_carries_classified_text(
    store: GraphStore, tmp_path: Path
) -> None:
    """Neither the meaning model (compressing) nor the matcher (selecting) is sent a
    classified node, granted or not; the meaning channel still serves the rest."""
    pytest.importorskip("google.genai")

    def pick_a_lantern(seen: Seen) -> str:
        if "MEMORY ITEMS" not in seen.user:
            return echo_meaning(seen)
        return json.dumps({"ids": [handle_of(seen.user, "glow at dusk")]})

    with FakeGemini(pick_a_lantern) as fake:
        provider = make_provider(
            "gemini", api_key="test-key", base_url=fake.url, timeout_s=2.0, max_attempts=1
        )
        writer = Memory(store, granted=ALL)
        runtime = MeaningRuntime(writer.store, tmp_path / "sidecar", provider, MatcherOptions())
        writer.add_listener(runtime)
        runtime.start()
        try:
            writer.advance_encounter(plan.WRITER, "lanterns and patients")
            writer.create_entities(plan.WRITER, plan.entities())
            assert runtime.maintainer.wait_idle(10)
            unclassified = len(plan.entities()) - len(plan.CLASSIFIED)
            assert len(runtime.sidecar) == unclassified
            result = Infuser(writer.store, InfusionConfig(), matcher=runtime).infuse(
                "meaning-one", "the ward patient record and the dusk"
            )
            assert result["meta"]["channel"] == "meaning"
            assert "lantern finding" in result["payload"]
        finally:
            runtime.close()
        assert fake.requests and all(MARK not in s.user + s.system for s in fake.requests)


def test_a_saved_orient_reading_names_no_classified_node(
    store: GraphStore, planted: dict[str, str], tmp_path: Path
) -> None:
    """A reading saved by a granted face is what a later, gated one drifts against."""
    from kenning_encounter.analytics.baseline import BaselineStore
    from kenning_encounter.analytics.orient import orient_panel

    baselines = BaselineStore(tmp_path / "analytics")
    granted = Memory(store, granted=ALL).store.read(lambda tx: tx.authored_graph())
    orient_panel(granted.nodes, granted.edges, baselines=baselines, encounter="E1")
    assert _leaks(baselines.previous(None), planted) == set()
    gated = Memory(store).store.read(lambda tx: tx.authored_graph())
    panel = orient_panel(gated.nodes, gated.edges, baselines=baselines, encounter="E2")
    assert _leaks(panel, planted) == set() and panel.drift is not None


def test_the_embedded_store_knows_whether_it_holds_a_withheld_class(
    embedded: EmbeddedStore,
) -> None:
    """Where no sandbox can prune a snapshot (not Linux), read_cypher is refused only
    while this says a node of a withheld class is held."""
    every = frozenset(CLASSIFICATIONS)
    assert not embedded.holds_withheld(every)
    writer = Memory(embedded, granted=ALL)
    writer.advance_encounter("w", "one secret")
    writer.create_entities("w", [{"type": "Note", "name": "n", "classification": "secret"}])
    assert embedded.holds_withheld(every) and embedded.holds_withheld(frozenset({"secret"}))
    assert not embedded.holds_withheld(frozenset({"pii", "phi", "pci"}))
    assert not embedded.holds_withheld(frozenset())


def test_a_gated_list_of_relations_asks_about_their_ends_once(
    counted: tuple[GraphStore, Any],
) -> None:
    """A list of relations is checked against the gate in one question about all their
    ends: asked per relation, it was one statement per relation on Neo4j (an as-of
    provenance walk reads its relations this way). The withheld end still hides its
    relation."""
    store, counter = counted
    writer = Memory(store, granted=ALL)
    writer.advance_encounter("gate-count", "many relations into one node")
    writer.create_entities("gate-count", [{"type": "Concept", "name": "hub", "description": "x"}])
    hub = writer.find_by_name("hub").node.id
    gated = GatedStore(store, Gate(()))

    def into_hub(first: int, count: int, secret: bool = False) -> tuple[int, int]:
        names = [f"o{i}" for i in range(first, first + count)]
        entities: list[dict[str, Any]] = [
            {"type": "Observation", "name": n, "description": "seen"} for n in names
        ]
        if secret:
            entities[0]["classification"] = "pii"
        writer.create_entities("gate-count", entities)
        writer.create_relations(
            "gate-count", [{"source": n, "type": "GROUNDS", "target": "hub"} for n in names]
        )
        gated.read(lambda tx: tx.edges_into([hub], ["GROUNDS"]))  # anything first read, read
        before = counter.sent
        shown = gated.read(lambda tx: tx.edges_into([hub], ["GROUNDS"]))
        return counter.sent - before, len(shown)

    few, shown_few = into_hub(0, 2)
    many, shown_many = into_hub(2, 12, secret=True)
    assert (shown_few, shown_many) == (2, 13), "the withheld observation's relation is hidden"
    assert many == few, (few, many)


def test_lists_of_heads_asked_together_page_past_what_the_gate_withholds(
    store: GraphStore,
) -> None:
    # The newest open question is withheld: a list asked with others still holds as many
    # as were asked for, as the list asked alone does.
    writer = Memory(store, granted=ALL)
    writer.advance_encounter(plan.WRITER, "asks")
    for name, mark in [("ask one", None), ("ask two", None), (f"ask three {MARK}", "pii")]:
        entity: dict[str, Any] = {"type": "Question", "name": name}
        if mark:
            entity["classification"] = mark
        writer.create_entities(plan.WRITER, [entity])
    asks = [HeadsAsk("Question", 2, ("open",)), HeadsAsk("Concept", 2)]

    def read(tx: ReadTx) -> Any:
        return tx.heads_many(asks), tx.heads_by_status("Question", ["open"], 2)

    gated = Memory(store).store
    # A read, and a write's reads as the gate shows them (the re-entry payload's).
    for together, alone in (gated.read(read), gated.write(lambda tx: read(view(gated, tx)))):
        assert [n.name for n in together[0]] == ["ask two", "ask one"] == [n.name for n in alone]
        assert together[1] == []


def _made_secret(store: GraphStore, name: str) -> tuple[Memory, RecordedNode, Created]:
    """A granted writer, the public Note ``name`` it wrote, and the write of its revision
    by a secret version."""
    writer = Memory(store, granted=ALL)
    writer.advance_encounter(plan.WRITER, f"a public {name} made secret")
    public = {"type": "Note", "name": name, "description": f"lantern {name} public"}
    first = writer.create_entities(plan.WRITER, [public]).created[0]
    secret = {
        "type": "Note",
        "name": name,
        "description": f"lantern {name} {MARK}",
        "classification": "secret",
        "supersedes": name,
        "revision_why": "details added",
    }
    return writer, first, writer.create_entities(plan.WRITER, [secret])


def test_a_public_version_names_no_withheld_revision(store: GraphStore) -> None:
    """Found by hunting: a public node revised by a withheld one carried the withheld
    version's id in superseded_by through every read that showed it (find_by_name and
    trace_provenance by its id, chain_history, search of older versions, the port's own
    node reads), and a write that named the public version was refused naming that id.
    The public one reads as superseded (tests/contract/test_gated_revisions.py) and names
    no successor; a write refused because of the withheld revision names no id."""
    _, first, revised = _made_secret(store, "plan")
    secret = revised.created[0]
    gated = Memory(store)
    answers: list[Any] = [
        gated.find_by_name(first.id),
        gated.trace_provenance(first.id),
        gated.chain_history(first.id),
        gated.search("lantern plan", include_superseded=True),
        gated.store.read(lambda tx: (tx.get_node(first.id), tx.get_nodes([first.id]))),
        gated.store.read(lambda tx: tx.chain(first.id, older=5, newer=5)),
    ]
    for answer in answers:
        text = json.dumps(_plain(answer), default=str)
        assert secret.id not in text and MARK not in text, text
    assert gated.find_by_name(first.id).node.superseded_by == WITHHELD_SUCCESSOR
    gated.advance_encounter("another", "revise the public version")
    refusals = [
        lambda: gated.create_entities(
            "another",
            [{"type": "Note", "name": "plan b", "supersedes": first.id, "revision_why": "x"}],
        ),
        lambda: gated.create_relations(
            "another",
            [{"source": "plan b", "type": "SUPERSEDES", "target": first.id, "revision_why": "x"}],
        ),
    ]
    gated.create_entities("another", [{"type": "Note", "name": "plan b"}])
    # The writer's own open encounter, undone through a server not granted the class.
    refusals.append(lambda: gated.delete_entities(plan.WRITER, [first.id]))
    for refused in refusals:
        with pytest.raises(KenningError) as info:
            refused()
        assert secret.id not in str(info.value), str(info.value)
    # With the grant the revision is there as ever.
    assert Memory(store, granted=ALL).find_by_name(first.id).node.id == secret.id


def test_an_export_names_no_withheld_revision_of_an_undone_version(
    store: GraphStore, tmp_path: Path
) -> None:
    """Found by hunting: a version an agent undid keeps, in the record of the past, the id
    of the version that had revised it; an export holding back that withheld revision
    still wrote its id on the undone version's line. The line now names no successor, as
    the gate reads it, and the export still imports."""
    writer, first, revised = _made_secret(store, "draft")
    secret = revised.created[0]
    writer.delete_entities(plan.WRITER, [secret.id, first.id])
    out = io.BytesIO()
    export(store, out, app_version="test", withheld=frozenset(CLASSIFICATIONS))
    dumped = out.getvalue().decode()
    assert secret.id not in dumped and MARK not in dumped
    undone = [json.loads(line) for line in dumped.splitlines() if first.id in line]
    assert [(r["kind"], r["superseded_by"]) for r in undone] == [("deleted_node", None)]
    (tmp_path / "held-back.jsonl").write_bytes(out.getvalue())
    copy = EmbeddedStore.open(tmp_path / "imported")
    try:
        load.load(copy, load.verify(tmp_path / "held-back.jsonl"))
        then = Memory(copy).find_by_name(first.id, as_of=revised.tick)
        assert then.node.id == first.id and then.node.superseded_by is None
    finally:
        copy.close()
    full = io.BytesIO()
    export(store, full, app_version="test")
    assert secret.id in full.getvalue().decode()
