"""Meanings and mass baselines kept in Neo4j, shared by every replica (issue #15 item 2).

Two store objects on one database stand for two server processes: what one puts, drops
or saves the other reads, under the same handles; a meaning both want is paid for once;
a replica that died holding a claim delays a node, never blocks it. A meaning is kept only
for a node the memory holds, so the nodes meant here are written through the memory.
"""

from __future__ import annotations

import threading
import time
from collections.abc import Callable, Iterator
from typing import Any, cast

import pytest

from kenning_encounter.analytics.baseline import Baseline, BaselineEntry, BaselineStore
from kenning_encounter.meaning.maintainer import MeaningMaintainer
from kenning_encounter.meaning.providers.openai_compat import OpenAICompatProvider
from kenning_encounter.meaning.source import source_hash
from kenning_encounter.meaning.stored import StoredMeanings
from kenning_encounter.memory.service import Memory
from kenning_encounter.store.records import NodeRecord
from tests.support.backends import neo4j_target
from tests.support.fake_llm import FakeOpenAI, Reply, Seen, echo_meaning

pytestmark = pytest.mark.neo4j


def _open(memory: str = "default", tracer: Any = None) -> Any:
    from kenning_encounter.store.neo4j import Neo4jStore

    t = neo4j_target()
    return Neo4jStore.open(t.uri, t.username, t.password, t.database, memory=memory, tracer=tracer)


@pytest.fixture
def replica(neo4j_store: Any) -> Iterator[Any]:
    """A second server's store on the emptied database ``neo4j_store`` opened."""
    other = _open()
    try:
        yield other
    finally:
        other.close()


def _written(store: Any, count: int, prefix: str = "note") -> list[NodeRecord]:
    """``count`` nodes written through the memory, in one encounter of their own."""
    memory = Memory(store)
    session = f"meanings-{prefix}"
    memory.advance_encounter(session, f"{prefix}s to mean")
    made = memory.create_entities(
        session,
        [
            {"type": "Observation", "name": f"{prefix} {i}", "description": f"what {i} says"}
            for i in range(count)
        ],
    ).created
    ids = [m.id for m in made]
    found = store.read(lambda tx: tx.get_nodes(ids))
    return [found[i] for i in ids]


def _ids(store: Any, count: int, prefix: str = "note") -> list[str]:
    return [n.id for n in _written(store, count, prefix)]


# --- the meanings, read and written from two replicas -----------------------------------


def test_two_replicas_read_one_set_of_meanings_under_one_set_of_handles(
    neo4j_store: Any, replica: Any
) -> None:
    obs_a, obs_b, obs_c = _ids(neo4j_store, 3)
    a, b = StoredMeanings(neo4j_store.meanings), StoredMeanings(replica.meanings)
    a.put(obs_b, "second made, first created", "h1", order=5)
    a.put(obs_a, "first made, later created", "h2", order=9)
    b.put(obs_c, "same tick as obs_b", "h3", order=5)
    listed = b.snapshot()
    assert [e.id for e in listed.entries] == [obs_b, obs_c, obs_a]
    assert a.snapshot() == listed, "the replicas list different meanings or versions"
    assert [e.seq for e in listed.entries] == [1, 3, 2], "seqs are not handed out by the store"
    assert listed.text_chars == sum(len(e.meaning) + len(str(e.seq)) for e in listed.entries)

    again = b.put(obs_b, "re-made on the other replica", "h9")
    assert again is not None
    assert (again.seq, again.order) == (1, 5), "a re-made meaning moved or changed handle"
    assert a.snapshot().entries[0].meaning == "re-made on the other replica"
    assert a.get(obs_b) == again

    assert a.drop(obs_c) is True
    assert b.version == a.version and obs_c not in b
    assert b.drop(obs_c) is False, "a drop seen by the other replica was not seen"
    fresh = b.put(obs_c, "back again", "h3")
    assert fresh is not None
    assert fresh.seq == 4 and fresh.order == 10, "a seq was reused or the order not after all"
    assert [e.id for e in a.entries()] == [obs_b, obs_a, obs_c]
    assert len(a) == 3 and len(b) == 3


def test_an_identical_put_changes_no_version(neo4j_store: Any, replica: Any) -> None:
    [obs_a] = _ids(neo4j_store, 1)
    a, b = StoredMeanings(neo4j_store.meanings), StoredMeanings(replica.meanings)
    a.put(obs_a, "one meaning", "h1", order=1)
    held = b.version
    b.put(obs_a, "one meaning", "h1", order=1)
    assert a.version == held, "a put that changed nothing moved the version"


@pytest.fixture
def traced(neo4j_store: Any) -> Iterator[tuple[Any, list[str]]]:
    """A replica whose every statement is recorded."""
    seen: list[str] = []

    def record(statement: str, params: Any, seconds: float) -> None:
        seen.append(f"{statement} since={(params or {}).get('since')}")

    store = _open(tracer=record)
    try:
        yield store, seen
    finally:
        store.close()


def test_an_unchanged_store_costs_one_small_read_per_use(
    neo4j_store: Any, traced: tuple[Any, list[str]]
) -> None:
    *ids, new = _ids(neo4j_store, 51)
    a = StoredMeanings(neo4j_store.meanings)
    a.put_many([(i, f"meaning {n}", "h", n) for n, i in enumerate(ids)])
    store, seen = traced
    b = StoredMeanings(store.meanings)
    assert len(b.snapshot().entries) == 50
    seen.clear()
    for _ in range(3):
        b.snapshot()
        assert b.version == a.version
    assert len(seen) == 6, seen
    assert all(s.startswith("OPTIONAL MATCH (s:KenningMeanings") for s in seen), seen
    held = b.version
    a.put(new, "one more", "h", order=99)
    seen.clear()
    assert [e.id for e in b.snapshot().entries][-1] == new
    assert len(seen) == 3 and "m.v > $since" in seen[2], seen
    assert "SET s.version = s.version" in seen[1], "the changes were read without the lock"
    assert seen[2].endswith(f"since={held}"), "a change was read from further back than held"


def _waits_for_a_put_in_flight(node_id: str, act: Callable[[], None]) -> bool:
    """Run ``act`` on a thread while another connection holds the meanings' lock with a
    put of ``node_id`` written and not yet committed; commit it after a second. Whether
    ``act`` was still waiting then (it then ends once the put is committed)."""
    import neo4j

    t = neo4j_target()
    with (
        neo4j.GraphDatabase.driver(t.uri, auth=(t.username, t.password)) as driver,
        driver.session(database=t.database) as session,
    ):
        held = session.begin_transaction()
        held.run(
            "MATCH (s:KenningMeanings) SET s.version = s.version + 1 "
            "CREATE (:KenningMeaning {_memory: s._memory, id: $id, meaning: 'being put', "
            "source_hash: 'h', order: 2, seq: s.next_seq, v: s.version}) "
            "SET s.next_seq = s.next_seq + 1",
            id=node_id,
        ).consume()
        acting = threading.Thread(target=act)
        acting.start()
        acting.join(1.0)
        still_waiting = acting.is_alive()
        held.commit()
        acting.join(30)
    return still_waiting


def test_a_reader_that_finds_the_version_moved_waits_for_the_writer_still_applying(
    neo4j_store: Any,
) -> None:
    # Neo4j shows a committed transaction's records before its index entries: a reader
    # that read the new version and then the changes through the index, lock-free, lost
    # a whole batch for good. One writer has committed (the version moved); another
    # holds the lock. The reader must wait for it and read both, not move past either.

    from kenning_encounter.store.neo4j import Neo4jStore

    table = cast(Neo4jStore, neo4j_store).meanings
    first, second = _ids(neo4j_store, 2)
    StoredMeanings(table).put(first, "committed", "h", order=1)
    answers: list[Any] = []
    still_waiting = _waits_for_a_put_in_flight(second, lambda: answers.append(table.changes(0)))
    assert still_waiting, "the reader read the changes while a writer held the lock"
    assert answers and answers[0].version == 2
    assert {e.id for e in answers[0].put} == {first, second}


def test_a_meaning_of_a_node_the_memory_no_longer_holds_is_not_kept(neo4j_store: Any) -> None:
    # A meaning is made from a node's text, off the write path: the node may be deleted
    # (or erased by an operator) before the meaning is put.
    kept, undone = _ids(neo4j_store, 2)
    Memory(neo4j_store).delete_entities("meanings-note", [undone])
    a = StoredMeanings(neo4j_store.meanings)
    made = a.put_many([(undone, "of a node undone", "h", 1), (kept, "of a node kept", "h", 2)])
    assert [e.id for e in made] == [kept]
    assert a.put(undone, "again", "h") is None
    assert [e.id for e in StoredMeanings(neo4j_store.meanings).entries()] == [kept]


def test_a_drop_waits_for_a_put_holding_the_lock_and_drops_what_it_wrote(
    neo4j_store: Any,
) -> None:
    # An erasure's scrub drops the erased nodes' meanings. A put that found its node still
    # there, before the erasure committed, may still be writing when the drop comes: the
    # drop must wait for it and then drop its meaning, not find nothing yet and leave it.

    from kenning_encounter.store.neo4j import Neo4jStore

    table = cast(Neo4jStore, neo4j_store).meanings
    first, second = _ids(neo4j_store, 2)
    StoredMeanings(table).put(first, "committed", "h", order=1)
    answers: list[bool] = []
    still_waiting = _waits_for_a_put_in_flight(second, lambda: answers.append(table.drop(second)))
    assert still_waiting, "the drop looked for the meaning while a put held the lock"
    assert answers == [True], "the drop missed the meaning the put was writing"
    assert [e.id for e in StoredMeanings(table).entries()] == [first]


def test_a_reader_past_the_tombstones_reloads_everything(neo4j_store: Any, replica: Any) -> None:
    from kenning_encounter.store.neo4j.meanings import Neo4jMeanings

    table = Neo4jMeanings(
        neo4j_store._ledger_unit,  # pyright: ignore[reportPrivateUsage]
        neo4j_store._tracer,  # pyright: ignore[reportPrivateUsage]
        neo4j_store.ns,
        keep_tombstones=2,
    )
    ids = _ids(neo4j_store, 8)
    a = StoredMeanings(table)
    a.put_many([(i, f"meaning {n}", "h", n) for n, i in enumerate(ids)])
    behind = StoredMeanings(replica.meanings)
    assert len(behind.snapshot().entries) == 8
    for i in ids[:6]:
        assert a.drop(i)
    assert [e.id for e in behind.snapshot().entries] == ids[6:], (
        "drops whose tombstones were purged never reached a reader that was behind"
    )


def test_memories_on_one_database_keep_their_own_meanings(neo4j_store: Any) -> None:
    [obs_a] = _ids(neo4j_store, 1)
    StoredMeanings(neo4j_store.meanings).put(obs_a, "of the default memory", "h", order=1)
    other = _open(memory="team_notes")
    try:
        [theirs_a] = _ids(other, 1)
        theirs = StoredMeanings(other.meanings)
        assert len(theirs.snapshot().entries) == 0
        assert theirs.put(obs_a, "the other memory's node", "h", order=1) is None, (
            "a memory kept a meaning of a node it does not hold"
        )
        made = theirs.put(theirs_a, "of team_notes", "h", order=1)
        assert made is not None and made.seq == 1
    finally:
        other.close()
    ours = StoredMeanings(neo4j_store.meanings)
    found = ours.get(obs_a)
    assert found is not None and found.meaning == "of the default memory"
    assert [e.id for e in ours.entries()] == [obs_a]


def test_concurrent_puts_from_two_replicas_all_land_with_distinct_seqs(
    neo4j_store: Any, replica: Any
) -> None:
    ids = _ids(neo4j_store, 60)
    stores = [StoredMeanings(neo4j_store.meanings), StoredMeanings(replica.meanings)]
    start = threading.Barrier(4)
    failures: list[BaseException] = []

    def writer(k: int) -> None:
        start.wait()
        try:
            for i in range(15):
                stores[k % 2].put(ids[15 * k + i], f"meaning {k} {i}", "h")
        except BaseException as exc:
            failures.append(exc)

    threads = [threading.Thread(target=writer, args=(k,)) for k in range(4)]
    for t in threads:
        t.start()
    for t in threads:
        t.join(60)
    assert failures == []
    listed = stores[1].snapshot().entries
    assert len(listed) == 60 and sorted(e.seq for e in listed) == list(range(1, 61))
    assert len({e.order for e in listed}) == 60, "two new entries took one order"


def test_two_replicas_putting_the_same_nodes_at_once_agree_on_each_handle(
    neo4j_store: Any, replica: Any
) -> None:
    ids = _ids(neo4j_store, 15)
    stores = [StoredMeanings(neo4j_store.meanings), StoredMeanings(replica.meanings)]
    start = threading.Barrier(4)
    failures: list[BaseException] = []

    def writer(k: int) -> None:
        start.wait()
        try:
            for i in range(15):
                stores[k % 2].put(ids[i], f"meaning {i} as writer {k} made it", "h")
        except BaseException as exc:
            failures.append(exc)

    threads = [threading.Thread(target=writer, args=(k,)) for k in range(4)]
    for t in threads:
        t.start()
    for t in threads:
        t.join(60)
    assert failures == []
    listed = stores[0].snapshot().entries
    assert sorted(e.seq for e in listed) == list(range(1, 16)), "one node took two handles"
    assert stores[1].snapshot().entries == listed


# --- claims: a meaning made once across replicas -------------------------------------------


def test_a_claim_is_granted_to_one_replica_and_found_done_by_the_other(
    neo4j_store: Any, replica: Any
) -> None:
    [obs_a] = _ids(neo4j_store, 1)
    a = StoredMeanings(neo4j_store.meanings, claim_ttl_s=60)
    b = StoredMeanings(replica.meanings, claim_ttl_s=60)
    assert a.claim(obs_a, "h1").verdict == "granted"
    held = b.claim(obs_a, "h1")
    assert held.verdict == "held" and 0 < held.until_s <= 60
    assert a.claim(obs_a, "h1").verdict == "granted", "a holder was refused its own claim"
    a.put(obs_a, "made by a", "h1", order=1)
    a.release(obs_a)
    assert b.claim(obs_a, "h1").verdict == "done"
    assert b.claim(obs_a, "h2").verdict == "granted", "changed text was found done"


def test_a_claim_left_by_a_dead_replica_expires(neo4j_store: Any, replica: Any) -> None:
    [obs_a] = _ids(neo4j_store, 1)
    dead = StoredMeanings(neo4j_store.meanings, claim_ttl_s=0.2)
    alive = StoredMeanings(replica.meanings)
    assert dead.claim(obs_a, "h1").verdict == "granted"
    deadline = time.monotonic() + 30
    while alive.claim(obs_a, "h1").verdict == "held":
        assert time.monotonic() < deadline, "an expired claim still blocks the node"
        time.sleep(0.05)
    alive.release(obs_a)


def _slow_echo(seen: Seen) -> Reply:
    # Slow enough that both replicas' workers are in flight on the same nodes at once.
    return Reply(text=echo_meaning(seen), delay_s=0.05)


@pytest.fixture
def fake() -> Iterator[FakeOpenAI]:
    with FakeOpenAI(responder=_slow_echo) as server:
        yield server


def _provider(fake: FakeOpenAI) -> OpenAICompatProvider:
    return OpenAICompatProvider(
        base_url=fake.url + "/v1", model="m", timeout_s=5.0, max_attempts=1, backoff_s=0.01
    )


def _maintainer(store: StoredMeanings, provider: OpenAICompatProvider) -> MeaningMaintainer:
    return MeaningMaintainer(store, provider, backoff_s=0.02, max_backoff_s=0.1, recheck_s=0.05)


def test_two_replicas_wanting_the_same_meanings_call_the_model_once_each(
    neo4j_store: Any, replica: Any, fake: FakeOpenAI
) -> None:
    nodes = _written(neo4j_store, 12)
    providers = [_provider(fake), _provider(fake)]
    stores = [StoredMeanings(neo4j_store.meanings), StoredMeanings(replica.meanings)]
    maintainers = [_maintainer(s, p) for s, p in zip(stores, providers, strict=True)]
    try:
        for m in maintainers:
            m.reconcile(nodes)  # both start on the same twelve gaps, in the same order
        for m in maintainers:
            m.start()
        assert all(m.wait_idle(60) for m in maintainers)
    finally:
        for m in maintainers:
            m.close()
        for p in providers:
            p.close()
    assert fake.errors == []
    assert fake.hits == len(nodes), "a meaning was paid for by both replicas"
    for s in stores:
        listed = {e.id: e for e in s.snapshot().entries}
        assert set(listed) == {n.id for n in nodes}
        assert all(listed[n.id].source_hash == source_hash(n) for n in nodes)
    stats = [m.stats() for m in maintainers]
    assert sum(s["made"] for s in stats) == len(nodes)
    assert sum(s["deferred"] for s in stats) > 0, "the replicas never met on a node"


def test_a_node_claimed_by_a_dead_replica_is_made_after_its_claim_expires(
    neo4j_store: Any, replica: Any, fake: FakeOpenAI
) -> None:
    [n] = _written(neo4j_store, 1)
    dead = StoredMeanings(neo4j_store.meanings, claim_ttl_s=0.5)
    assert dead.claim(n.id, source_hash(n)).verdict == "granted"  # then it dies
    provider = _provider(fake)
    alive = StoredMeanings(replica.meanings)
    m = _maintainer(alive, provider)
    try:
        m.start()
        m.enqueue(n)
        assert m.wait_idle(60), "the node waited on a dead replica's claim for good"
    finally:
        m.close()
        provider.close()
    made = alive.get(n.id)
    assert made is not None and made.source_hash == source_hash(n)
    assert fake.hits == 1 and m.stats()["deferred"] >= 1


# --- mass baselines -------------------------------------------------------------------


def _reading(encounter: str | None, tick: int, top: str = "obs_a") -> Baseline:
    return Baseline(
        encounter=encounter,
        saved_at=f"2025-01-01T00:00:{tick % 60:02d}Z",
        tick=tick,
        node_count=3,
        entries=(BaselineEntry(id=top, name=top, type="Observation", rank=1, score=0.5),),
    )


def test_two_replicas_read_one_set_of_baselines(
    neo4j_store: Any, replica: Any, tmp_path: Any
) -> None:
    a = BaselineStore(tmp_path / "a", table=neo4j_store.baselines)
    b = BaselineStore(tmp_path / "b", table=replica.baselines)
    a.save(_reading("E1", 10))
    assert b.previous("E2") == _reading("E1", 10)
    assert b.previous("E1") is None, "drift compared an encounter with itself"
    b.save(_reading("E1", 20, top="obs_b"))
    assert a.all() == [_reading("E1", 20, top="obs_b")], "an encounter kept two readings"
    b.save(_reading(None, 25))
    assert [x.encounter for x in a.all()] == ["E1", None]
    assert not (tmp_path / "a").exists() and not (tmp_path / "b").exists()


def test_concurrent_saves_from_two_replicas_keep_the_newest_readings(
    neo4j_store: Any, replica: Any, tmp_path: Any
) -> None:
    stores = [
        BaselineStore(tmp_path, table=neo4j_store.baselines, keep=4),
        BaselineStore(tmp_path, table=replica.baselines, keep=4),
    ]
    start = threading.Barrier(4)
    failures: list[BaseException] = []

    def saver(k: int) -> None:
        start.wait()
        try:
            for i in range(8):
                stores[k % 2].save(_reading(f"E{k}_{i}", 100 * i + k))
        except BaseException as exc:
            failures.append(exc)

    threads = [threading.Thread(target=saver, args=(k,)) for k in range(4)]
    for t in threads:
        t.start()
    for t in threads:
        t.join(60)
    assert failures == []
    kept = stores[0].all()
    assert [x.tick for x in kept] == [700, 701, 702, 703]


def test_a_reader_face_reads_baselines_and_saves_none(neo4j_store: Any, tmp_path: Any) -> None:
    full = BaselineStore(tmp_path, table=neo4j_store.baselines)
    reader = BaselineStore(tmp_path, table=neo4j_store.baselines, read_only=True)
    full.save(_reading("E1", 10))
    reader.save(_reading("E2", 20))
    assert reader.previous("E3") == _reading("E1", 10)
    assert [x.encounter for x in full.all()] == ["E1"]
