"""Reads inside one transaction agree with reads made one at a time, on every backend.

A backend may answer a later read of a transaction from what an earlier one brought
back (Neo4j keeps the encounters it met beside their nodes, and reads a neighbourhood's
two directions at once). These tests hold such shortcuts to the plain answer: nothing
missing, nothing stale inside a write, every edge from each of its ends.
"""

from __future__ import annotations

from typing import Any

from kenning_encounter.memory.service import Memory
from kenning_encounter.store.port import ReadTx, WriteTx

A, B = "reader-a", "reader-b"


def _entity(type_: str, name: str) -> dict[str, Any]:
    return {"type": type_, "name": name, "description": f"{name} in words"}


def _two_encounters(memory: Memory) -> tuple[list[str], list[str], str, str]:
    memory.advance_encounter(A, "first")
    first = memory.create_entities(
        A, [_entity("Observation", "pump hums"), _entity("Concept", "pump")]
    )
    memory.advance_encounter(B, "second")
    second = memory.create_entities(B, [_entity("Question", "why hum"), _entity("Note", "hum log")])
    return (
        [n.id for n in first.created],
        [n.id for n in second.created],
        first.encounter,
        second.encounter,
    )


def test_encounters_met_beside_nodes_and_others_all_come_back(memory: Memory) -> None:
    ids_a, _, enc_a, enc_b = _two_encounters(memory)
    alone = memory.store.read(lambda tx: tx.get_encounters([enc_a, enc_b]))

    ids_b = memory.store.read(lambda tx: list(tx.encounter_members([enc_b])[enc_b]))

    def work(tx: ReadTx) -> Any:
        # two types from encounter A, one from B, and ids nothing holds
        found = tx.get_nodes([*ids_a, ids_b[0], "obs-nowhere", "zzz-no-type"])
        assert set(found) == {*ids_a, ids_b[0]}
        assert {n.encounter for n in found.values()} == {enc_a, enc_b}
        return tx.get_encounters([enc_a, enc_b, "E-nowhere"])

    together = memory.store.read(work)
    assert set(together) == {enc_a, enc_b}
    assert together == alone


def test_a_write_reads_an_encounter_it_changed_afresh(memory: Memory) -> None:
    ids_a, _, enc_a, _ = _two_encounters(memory)

    def work(tx: WriteTx) -> Any:
        tx.get_nodes(ids_a)
        read = tx.get_encounter(enc_a)
        assert read is not None
        tx.seal_encounter(read, "done here")
        return tx.get_encounters([enc_a])[enc_a]

    sealed = memory.store.write(work)
    assert sealed.summary == "done here"
    assert sealed.sealed_tick is not None


def test_a_neighbourhood_has_every_edge_from_each_end(memory: Memory) -> None:
    ids_a, ids_b, _, _ = _two_encounters(memory)
    obs, concept = ids_a
    question, note = ids_b
    memory.create_relations(
        B,
        [
            {"source": obs, "type": "ABOUT", "target": concept},
            {"source": note, "type": "ABOUT", "target": concept},
            {"source": question, "type": "ABOUT", "target": concept},
        ],
    )
    rels = ["ABOUT"]
    around = memory.store.read(lambda tx: tx.neighbourhood([obs, concept], rels))
    seen = sorted((e.source, e.type, e.target) for e in around.edges)
    # obs -> concept is met from both of its ends; the two others from the concept's.
    assert seen == sorted(
        [
            (obs, "ABOUT", concept),
            (obs, "ABOUT", concept),
            (note, "ABOUT", concept),
            (question, "ABOUT", concept),
        ]
    )
    assert {n.id for n in around.nodes} == {obs, concept, note, question}


def test_tension_is_the_challenges_and_the_confirmations_asked_apart(memory: Memory) -> None:
    # Infusion asks both of what it surfaced at once (one statement on Neo4j): the
    # challenges either way with their nodes, and each node's latest confirmation.
    ids_a, ids_b, _, _ = _two_encounters(memory)
    obs, concept = ids_a
    question, note = ids_b
    guess = memory.create_entities(B, [_entity("Hypothesis", "pump worn")]).created[0].id
    memory.create_relations(
        B,
        [
            {"source": obs, "type": "CHALLENGES", "target": guess},
            {"source": concept, "type": "CHALLENGES", "target": guess},
            {"source": obs, "type": "ABOUT", "target": concept},
        ],
    )
    memory.confirm_entities(B, [obs, note], "still hums")
    memory.advance_encounter(B, "again", close_summary="heard it")
    memory.confirm_entities(B, [obs], "hums yet")

    for ids in ([guess], [obs, concept, question], [obs, note, guess, concept], []):

        def apart(tx: ReadTx, ids: list[str] = ids) -> Any:
            return tx.neighbourhood(ids, ["CHALLENGES"]), tx.confirmations_of(ids) if ids else {}

        challenges, confirmations = memory.store.read(lambda tx, ids=ids: tx.tension_of(ids))
        plain, latest = memory.store.read(apart)
        assert sorted(map(repr, challenges.edges)) == sorted(map(repr, plain.edges)), ids
        assert sorted(map(repr, challenges.nodes)) == sorted(map(repr, plain.nodes)), ids
        assert confirmations == latest, ids
    challenges, confirmations = memory.store.read(lambda tx: tx.tension_of([guess, obs, note]))
    assert {(e.source, e.target) for e in challenges.edges} == {(obs, guess), (concept, guess)}
    assert set(confirmations) == {obs, note}
    assert confirmations[obs].tick > confirmations[note].tick  # the latest of two


def test_an_encounters_members_come_in_the_order_they_were_recorded(memory: Memory) -> None:
    ids_a, ids_b, enc_a, enc_b = _two_encounters(memory)
    later = memory.create_entities(A, [_entity("Note", "late note"), _entity("Note", "later")])
    ids_a += [n.id for n in later.created]
    members = memory.store.read(lambda tx: tx.encounter_members([enc_a, enc_b, "E-nowhere"]))
    assert members == {enc_a: ids_a, enc_b: ids_b}


def test_what_a_search_read_brings_is_what_a_plain_read_gives(memory: Memory) -> None:
    ids_a, ids_b, _, _ = _two_encounters(memory)
    old = ids_a[0]
    node = memory.store.read(lambda tx: tx.get_node(old))
    assert node is not None
    memory.create_entities(
        A,
        [
            {
                "type": "Observation",
                "name": "pump hums",
                "description": "pump hums at night",
                "supersedes": old,
                "revision_why": "it is only at night",
            }
        ],
    )
    everything = [*ids_a, *ids_b]
    plain = memory.store.read(lambda tx: tx.get_nodes(everything))
    plain_encounters = memory.store.read(
        lambda tx: tx.get_encounters(sorted({n.encounter or "" for n in plain.values()}))
    )

    def work(tx: ReadTx, hits: list[Any], stats_of: Any) -> Any:
        found = [h.id for h in hits]
        nodes = tx.get_nodes([*found, *everything])
        return found, nodes, tx.get_encounters(sorted(plain_encounters)), stats_of()

    found, nodes, encounters, stats = memory.store.read_text("pump hum", ["pump"], work, limit=10)
    assert old not in found  # heads only
    assert len(found) >= 3
    assert all(nodes[i] == plain[i] for i in everything)
    assert nodes[old].superseded_by is not None  # read afresh, not taken from the search
    assert encounters == plain_encounters
    assert stats.n_docs >= 5
