"""as_of reads (issue #16 item 2): the memory as it stood right after a past tick.

The property: replay a random history (creations, one or several to a write,
supersessions, relations that move a status, relation deletions, deletions of what the
open encounter recorded, new encounters), take the memory's own present reads at random
ticks along the way, and at the end ask every read again with ``as_of`` that tick: each
answer is the one taken then.
Both backends; every example opens a store of its own.
"""

from __future__ import annotations

import logging
import tempfile
import time
from collections.abc import Iterator
from dataclasses import dataclass, field
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any

import pytest
from hypothesis import HealthCheck, example, given, settings
from hypothesis import strategies as st

from kenning_encounter.errors import InvalidInput, KenningError, NotFound
from kenning_encounter.memory import asof, operator
from kenning_encounter.memory.models import EncounterOut, ReEntry
from kenning_encounter.memory.service import Memory
from kenning_encounter.memory.spine import REENTRY_LIMIT
from kenning_encounter.store.embedded.backend import EmbeddedStore
from kenning_encounter.store.port import GraphStore, ReadTx
from tests.support.backends import BACKENDS, neo4j_target, neo4j_unavailable, open_neo4j_store
from tests.support.embedded_store import open_fresh_embedded

S = "as-of-writer"
OTHER = "as-of-other"  # a session whose encounters are dissolved
NAMES = ("alpha", "bravo", "charlie", "delta", "echo", "foxtrot")
WORDS = ("cache", "retry", "token", "queue")
TYPES = ("Question", "Hypothesis", "Observation", "Note", "Concept")
RELATIONS = ("SUPPORTS", "CHALLENGES", "RESOLVES", "GROUNDS", "INFORMS", "RAISES", "ABOUT")


class Stores:
    """Fresh stores of one backend, one per example."""

    def __init__(self, backend: str, pristine: Path) -> None:
        self.backend = backend
        self._pristine = pristine
        self._dirs: list[tempfile.TemporaryDirectory[str]] = []

    def fresh(self) -> GraphStore:
        if self.backend == "embedded":
            holder = tempfile.TemporaryDirectory(prefix="kenning-asof-")
            self._dirs.append(holder)
            return open_fresh_embedded(self._pristine, Path(holder.name) / "memory")
        opened = open_neo4j_store()
        if isinstance(opened, str):
            raise AssertionError(opened)
        return opened

    def cleanup(self) -> None:
        for holder in self._dirs:
            holder.cleanup()


@pytest.fixture(params=BACKENDS)
def stores(request: pytest.FixtureRequest, pristine_embedded: Path) -> Iterator[Stores]:
    if request.param != "embedded":
        probe = open_neo4j_store()
        if isinstance(probe, str):
            neo4j_unavailable(probe)
        probe.close()
    chosen = Stores(request.param, pristine_embedded)
    try:
        yield chosen
    finally:
        chosen.cleanup()


# --- the reads compared --------------------------------------------------------------


# Standing (memory/activation.py) is a present fact: a read of the past does not carry it.
_PRESENT_ONLY = ("tier", "last_used_at", "pinned")


def _node(out: Any) -> dict[str, Any]:
    return {k: v for k, v in out.model_dump().items() if k not in _PRESENT_ONLY}


def by_name(memory: Memory, ref: str, as_of: int | None) -> Any:
    try:
        found = memory.find_by_name(ref, as_of=as_of)
    except NotFound:
        return None
    return (_node(found.node), found.resolved_from, [_node(h) for h in found.history])


def provenance(memory: Memory, ref: str, as_of: int | None) -> Any:
    try:
        traced = memory.trace_provenance(ref, depth=3, as_of=as_of, same_as=True)
    except NotFound:
        return None
    edges = sorted((e.source, e.type, e.target, e.tick) for e in traced.edges)
    revisions = [(r.id, r.revision_why) for r in traced.revisions]
    sealed = traced.recorded_in.sealed_at if traced.recorded_in else None
    grounding = [_node(g) for g in traced.grounding]
    joined = [_node(j) for j in traced.same_as]
    return (_node(traced.node), grounding, edges, revisions, sealed, joined)


def found_by_words(
    memory: Memory, word: str, as_of: int | None, *, old: bool, same_as: bool = False
) -> Any:
    found = memory.search(word, limit=100, include_superseded=old, as_of=as_of, same_as=same_as)
    return sorted((h.id, h.status) for h in found.hits), found.same_as


def _ids(nodes: Any) -> list[tuple[str, Any]]:
    return [(n.id, n.status) for n in nodes]


def reentry_lists(memory: Memory, as_of: int | None) -> Any:
    """The re-entry payload's lists: the present's as advance_encounter builds them, the
    past's as advance_encounter(as_of=...) does."""
    store = memory.store
    if as_of is not None:
        entry = ReEntry(encounter=EncounterOut.model_construct())  # only the lists are read
        then = asof.reentry_then(store, entry, S, asof.Moment(as_of, str(as_of)))
        lists = (then.open_questions, then.live_hypotheses, then.recent_concepts)
        return [[(n.id, n.status) for n in nodes] for nodes in lists]

    def now(tx: ReadTx) -> Any:
        hypotheses = ("untested", "challenged", "supported")
        return [
            _ids(tx.heads_by_status("Question", ("open",), REENTRY_LIMIT)),
            _ids(tx.heads_by_status("Hypothesis", hypotheses, REENTRY_LIMIT)),
            _ids(tx.recent_heads("Concept", REENTRY_LIMIT)),
        ]

    return store.read(now)


def orient_input(memory: Memory, as_of: int | None) -> Any:
    """What orient reads: every node standing (with its status and successor) and every
    relation standing."""

    def work(tx: ReadTx) -> Any:
        sub = asof.view(tx, as_of).authored_graph()
        nodes = sorted((n.id, n.status, n.superseded_by) for n in sub.nodes)
        return nodes, sorted((e.source, e.type, e.target, e.tick) for e in sub.edges)

    return memory.store.read(work)


def encounter_states(memory: Memory, as_of: int | None) -> Any:
    """Every encounter opened by then: sealed or dissolved, at which tick and time.
    (Its last activity is not compared: only the newest is kept.)"""

    def work(tx: ReadTx) -> Any:
        every = [e.name for e in tx.encounters(limit=1_000_000)]
        return sorted(
            (e.name, e.sealed_tick, e.sealed_at, e.summary, e.dissolved_tick, e.dissolved_at)
            for e in asof.view(tx, as_of).get_encounters(every).values()
        )

    return memory.store.read(work)


def reads(memory: Memory, ids: list[str], as_of: int | None) -> dict[str, Any]:
    """Every read the property compares, keyed by what was asked."""
    out: dict[str, Any] = {"re-entry": reentry_lists(memory, as_of)}
    out["encounters"] = encounter_states(memory, as_of)
    out["orient"] = orient_input(memory, as_of)
    for name in NAMES:
        out[f"name {name}"] = by_name(memory, name, as_of)
    for node_id in ids:
        out[f"id {node_id}"] = by_name(memory, node_id, as_of)
        out[f"provenance {node_id}"] = provenance(memory, node_id, as_of)
    for word in WORDS:
        out[f"search {word}"] = found_by_words(memory, word, as_of, old=False)
        out[f"search+old {word}"] = found_by_words(memory, word, as_of, old=True)
        out[f"search+same {word}"] = found_by_words(memory, word, as_of, old=False, same_as=True)
    return out


# --- the replay ----------------------------------------------------------------------


@dataclass
class Replay:
    memory: Memory
    ids: list[str] = field(default_factory=list[str])
    edges: list[tuple[str, str, str]] = field(default_factory=list[tuple[str, str, str]])
    snapshots: dict[int, dict[str, Any]] = field(default_factory=dict[int, dict[str, Any]])
    sealed: int = 0
    other_open: bool = False  # another session's encounter, opened and dissolved in turn

    def pick(self, k: int) -> str | None:
        return self.ids[k % len(self.ids)] if self.ids else None

    def step(self, step: tuple[Any, ...]) -> int | None:
        """Run one step; the tick it took, or None when the memory refused it."""
        kind, a, b, c = step
        m = self.memory
        try:
            if kind == "create":
                text = " ".join(WORDS[i % len(WORDS)] for i in c)
                entity = {"type": TYPES[a % len(TYPES)], "name": NAMES[b % len(NAMES)]}
                made = m.create_entities(S, [{**entity, "description": text}])
                self.ids += [n.id for n in made.created]
                return made.tick
            if kind == "create_many":  # one write, one tick: ties the reads must order alike
                text = " ".join(WORDS[i % len(WORDS)] for i in c)
                kind_of = TYPES[a % len(TYPES)]
                batch = [
                    {"type": kind_of, "name": NAMES[(b + i) % len(NAMES)], "description": text}
                    for i in range(2 + a % 3)
                ]
                made = m.create_entities(S, batch)
                self.ids += [n.id for n in made.created]
                return made.tick
            if kind == "supersede":
                old = self.pick(a)
                if old is None:
                    return None
                head = m.find_by_name(old).node
                text = " ".join(WORDS[i % len(WORDS)] for i in c) or "revised"
                name = head.name if b % 2 else NAMES[b % len(NAMES)]
                entity = {"type": head.type, "name": name, "description": text}
                made = m.create_entities(
                    S, [{**entity, "supersedes": head.id, "revision_why": f"step {b}"}]
                )
                self.ids += [n.id for n in made.created]
                return made.tick
            if kind == "relate":
                source, target = self.pick(a), self.pick(b)
                if source is None or target is None:
                    return None
                rel = RELATIONS[c[0] % len(RELATIONS)] if c else "SUPPORTS"
                related = m.create_relations(S, [{"source": source, "type": rel, "target": target}])
                self.edges.append((source, rel, target))
                return related.tick
            if kind == "claim":  # referent claims: same_as reads follow the confirmed ones
                source, target = self.pick(a), self.pick(b)
                if source is None or target is None:
                    return None
                said = ("confirmed", "distinct")[len(c) % 2]
                claim = {"source": source, "target": target, "resolution": said}
                return m.claim_referents(S, [claim]).tick
            if kind == "unrelate":
                if not self.edges:
                    return None
                source, rel, target = self.edges[a % len(self.edges)]
                gone = m.delete_relations(S, [{"source": source, "type": rel, "target": target}])
                return gone.tick
            if kind == "delete":  # one node; with b odd, two in one write
                target = self.pick(a)
                if target is None:
                    return None
                also = [self.pick(a + 1 + b // 2)] if b % 2 else []
                return m.delete_entities(S, list(dict.fromkeys([target, *also]))).tick
            if kind == "dissolve":  # another session opens an encounter, then ends
                self.other_open = not self.other_open
                if self.other_open:
                    return m.advance_encounter(OTHER, "a while").encounter.opened_tick
                assert m.session_end(OTHER) is not None
                return m.store.read(lambda tx: tx.clock())
            self.sealed += 1
            return m.advance_encounter(
                S, "onwards", close_summary=f"part {self.sealed}"
            ).encounter.opened_tick
        except KenningError:
            return None


_K = st.integers(min_value=0, max_value=50)
_WORDS = st.lists(st.integers(min_value=0, max_value=len(WORDS) - 1), max_size=3)
STEP = st.one_of(
    st.tuples(st.just("create"), _K, _K, _WORDS),
    st.tuples(st.just("create"), _K, _K, _WORDS),
    st.tuples(st.just("create_many"), _K, _K, _WORDS),
    st.tuples(st.just("supersede"), _K, _K, _WORDS),
    st.tuples(st.just("relate"), _K, _K, _WORDS),
    st.tuples(st.just("relate"), _K, _K, _WORDS),
    st.tuples(st.just("unrelate"), _K, _K, _WORDS),
    st.tuples(st.just("claim"), _K, _K, _WORDS),
    st.tuples(st.just("delete"), _K, _K, _WORDS),
    st.tuples(st.just("advance"), _K, _K, _WORDS),
    st.tuples(st.just("dissolve"), _K, _K, _WORDS),
)


def replay(memory: Memory, steps: list[tuple[Any, ...]], taken: list[bool]) -> Replay:
    run = Replay(memory)
    memory.advance_encounter(S, "a random history")
    for step, take in zip(steps, taken, strict=False):
        tick = run.step(step)
        if tick is not None and take:
            run.snapshots[tick] = reads(memory, list(run.ids), None)
    return run


def check_against_snapshots(run: Replay) -> None:
    for tick, then in run.snapshots.items():
        # The ids asked about are those the snapshot asked about: none made after it.
        ids = [k.removeprefix("id ") for k in then if k.startswith("id ")]
        now = reads(run.memory, ids, tick)
        for key, value in then.items():
            assert now[key] == value, f"as_of {tick}, {key}"


@settings(
    max_examples=12,
    deadline=None,
    suppress_health_check=[HealthCheck.function_scoped_fixture, HealthCheck.too_slow],
)
@given(
    steps=st.lists(STEP, min_size=1, max_size=12),
    taken=st.lists(st.booleans(), min_size=12, max_size=12),
)
# A status moved by a relation, the relation deleted, the node revised, the revision undone.
@example(
    steps=[
        ("create", 1, 0, [0]),
        ("create", 2, 1, [0, 1]),
        ("relate", 1, 0, [0]),
        ("relate", 1, 0, [1]),
        ("unrelate", 0, 0, []),
        ("supersede", 0, 2, [1]),
        ("advance", 0, 0, []),
        ("supersede", 2, 1, [2]),
        ("delete", 3, 0, []),
    ],
    taken=[True] * 12,
)
# A chain's two newest versions, linked to each other, deleted in one write: the first
# version is the head again, and the past holds both and their link once.
@example(
    steps=[
        ("create", 4, 0, [0]),
        ("supersede", 0, 1, [1]),
        ("supersede", 1, 1, [2]),
        ("relate", 1, 2, [4]),
        ("delete", 1, 1, []),
    ],
    taken=[True] * 12,
)
# Found by hunting: same_as reads of the past followed the claims of the present, so a
# claim made later joined two concepts read as of a tick before it, and a search joined
# a concept made after the tick.
@example(
    steps=[
        ("create", 4, 0, [0]),
        ("create", 4, 1, [0]),
        ("create", 4, 2, [0]),
        ("claim", 0, 1, []),
        ("claim", 0, 2, []),
        ("claim", 0, 1, [0]),
    ],
    taken=[True, True, False, True, True, True],
)
# Two questions made in one write: the present's lists and the past's order them alike.
@example(steps=[("create_many", 0, 0, [0])], taken=[True] * 12)
# Another session's encounter opened, then dissolved while the writer goes on.
@example(
    steps=[
        ("dissolve", 0, 0, []),
        ("create", 0, 0, [0]),
        ("dissolve", 0, 0, []),
        ("create", 1, 1, [1]),
    ],
    taken=[True] * 12,
)
def test_every_as_of_read_is_the_read_taken_at_that_tick(
    stores: Stores, steps: list[tuple[Any, ...]], taken: list[bool]
) -> None:
    store = stores.fresh()
    try:
        check_against_snapshots(replay(Memory(store), steps, taken))
    finally:
        store.close()


# --- bad as_of -----------------------------------------------------------------------


@pytest.fixture
def written(memory: Memory) -> Memory:
    memory.advance_encounter(S, "a little to read")
    memory.create_entities(S, [{"type": "Note", "name": "alpha", "description": "cache"}])
    return memory


@pytest.mark.parametrize(
    ("as_of", "says"),
    [
        (10_000, "has not happened"),
        ("10000", "has not happened"),
        (-1, "0 or more"),
        ("last tuesday-ish", "neither a tick nor an ISO-8601 time"),
        ("2999-01-01T00:00:00Z", "in the future"),
        ("0001-01-01T00:00:00+14:00", "years 1 to 9999"),  # its offset takes it off the calendar
        ("9999-12-31T23:00:00-12:00", "years 1 to 9999"),
        ("9" * 5_000, "more than any tick or time"),  # int() refuses 4,300 digits
    ],
)
def test_a_bad_as_of_is_refused_naming_the_field_and_the_fix(
    written: Memory, as_of: int | str, says: str
) -> None:
    for read in (
        lambda: written.search("cache", as_of=as_of),
        lambda: written.find_by_name("alpha", as_of=as_of),
        lambda: written.trace_provenance("alpha", as_of=as_of),
    ):
        with pytest.raises(InvalidInput) as refused:
            read()
        assert refused.value.field == "as_of"
        assert says in str(refused.value)
        assert "omit as_of" in str(refused.value)


def test_a_time_reads_as_the_last_tick_at_or_before_it(written: Memory) -> None:
    first = written.find_by_name("alpha").node
    later = datetime.now(UTC)
    # Times are kept to the millisecond (asof.stamp): a write within the millisecond of
    # ``later`` reads as at or before it. Bravo must be written in a later one (a store
    # fast enough writes it in the same; seen 3 times in 15 runs).
    while asof.stamp(datetime.now(UTC)) == asof.stamp(later):
        time.sleep(0.0001)
    written.create_entities(S, [{"type": "Note", "name": "bravo", "description": "cache"}])
    before_any = "2001-01-01T00:00:00+00:00"
    assert written.search("cache", as_of=before_any).hits == []
    assert written.search("cache", as_of=before_any).as_of == 0
    seen = written.search("cache", as_of=later.isoformat())
    assert [h.id for h in seen.hits] == [first.id]
    assert seen.as_of == first.tick
    assert "as of tick" in seen.note
    # A time with another zone is the same instant.
    shifted = (later + timedelta(hours=2)).astimezone().replace(tzinfo=None).isoformat()
    assert shifted  # a zoneless time is UTC: later by two hours is still before now only
    # when the clock allows it, so only the instant with its zone is compared here
    east = later.astimezone(UTC).replace(tzinfo=None).isoformat() + "+00:00"
    assert written.find_by_name("alpha", as_of=east).as_of == first.tick


class SetClock:
    """A clock that reads whatever the test sets: it may step back, as a real one does when
    it is corrected (NTP, a resumed virtual machine, a hand-set date)."""

    def __init__(self) -> None:
        self.at = datetime(2026, 1, 1, 12, 0, tzinfo=UTC)

    def __call__(self) -> str:
        return asof.stamp(self.at)


def _clocked(backend: str, where: Path, clock: SetClock) -> GraphStore:
    if backend == "embedded":
        return EmbeddedStore.open(where / "memory", clock=clock)
    opened = open_neo4j_store(clock)
    if isinstance(opened, str):
        neo4j_unavailable(opened)
    return opened


@pytest.mark.parametrize("backend", BACKENDS)
@settings(
    max_examples=10,
    deadline=None,
    suppress_health_check=[HealthCheck.function_scoped_fixture, HealthCheck.too_slow],
)
@given(seconds=st.lists(st.integers(min_value=1, max_value=6), min_size=1, max_size=6))
# The clock stepped back between two writes: the later write is stamped earlier.
@example(seconds=[5, 3, 6])
def test_a_time_reads_as_the_writes_made_by_then_even_when_the_clock_stepped_back(
    backend: str, tmp_path_factory: pytest.TempPathFactory, seconds: list[int]
) -> None:
    """As of a time, the memory is as it stood after the longest run of writes, from its
    first, each stamped at or before that time: a write stamped later is never read into
    it, nor anything written after that write, whatever the stamps of those say."""
    clock = SetClock()
    store = _clocked(backend, tmp_path_factory.mktemp("clock"), clock)
    try:
        memory = Memory(store)
        memory.advance_encounter(S, "a clock that jumps")
        stamped: list[tuple[int, datetime, str]] = []  # tick, stamp, name of each write
        for i, second in enumerate(seconds):
            clock.at = datetime(2026, 1, 1, 12, 0, second, tzinfo=UTC)
            name = f"write {i}"
            made = memory.create_entities(
                S, [{"type": "Note", "name": name, "description": "cache"}]
            )
            stamped.append((made.tick, clock.at, name))
        for second in range(0, 8):
            asked = datetime(2026, 1, 1, 12, 0, second, 500_000, tzinfo=UTC)
            kept: list[str] = []
            for _, at, name in stamped:
                if at > asked:
                    break
                kept.append(name)
            found = memory.search("cache", limit=100, as_of=asked.isoformat())
            assert sorted(h.name for h in found.hits) == sorted(kept), f"as of {asked}"
            for name in kept:
                assert memory.find_by_name(name, as_of=asked.isoformat()).node.name == name
    finally:
        store.close()


def test_what_an_operator_forgot_is_gone_from_every_tick(memory: Memory) -> None:
    memory.advance_encounter(S, "something to forget")
    made = memory.create_entities(
        S,
        [
            {"type": "Hypothesis", "name": "alpha", "description": "cache"},
            {"type": "Observation", "name": "bravo", "description": "cache seen"},
        ],
    )
    related = memory.create_relations(
        S, [{"source": "bravo", "type": "SUPPORTS", "target": "alpha"}]
    )
    memory.delete_relations(S, [{"source": "bravo", "type": "SUPPORTS", "target": "alpha"}])
    operator.forget(memory.store, ["bravo"])
    assert by_name(memory, "bravo", related.tick) is None
    assert [h.name for h in memory.search("cache", as_of=made.tick).hits] == ["alpha"]
    # The status the relation gave still reads at its tick: only the forgotten node went.
    assert memory.find_by_name("alpha", as_of=related.tick).node.status == "supported"
    assert memory.trace_provenance("alpha", as_of=related.tick).grounding == []


# --- a store made before the record: backfilled from the relations it holds ------------


def _without_the_record(store: GraphStore, backend: str, where: Path) -> GraphStore:
    """The same memory as a version before the record of the past would have left it."""
    store.close()
    if backend == "embedded":
        import ladybug

        db = ladybug.Database(str(where / "graph.lbdb"))
        conn = ladybug.Connection(db)
        conn.execute("DROP TABLE Past")
        from kenning_encounter.vocabulary import NODE_TYPES

        for name, t in NODE_TYPES.items():  # and what the migrations after it add
            for p in t.props:
                if p.since > 10:
                    conn.execute(f"ALTER TABLE {name} DROP {p.name}")
            if t.authored:  # standing (v11): its mirrors on the node
                conn.execute(f"ALTER TABLE {name} DROP used_at")
                conn.execute(f"ALTER TABLE {name} DROP pinned")
                conn.execute(f"ALTER TABLE {name} DROP used_marks")  # v14
        conn.execute("DROP TABLE CONSULTED")  # and its process edges
        conn.execute("DROP TABLE PINNED")
        conn.execute("ALTER TABLE Encounter DROP dissolved_tick")  # v13
        conn.execute("ALTER TABLE Encounter DROP tombstones_marked")  # v14
        conn.execute("MATCH (m:Meta {key: 'schema_version'}) SET m.ival = 9")
        conn.close()
        db.close()
        return EmbeddedStore.open(where)
    from kenning_encounter.store.neo4j import Neo4jStore  # type: ignore[import-not-found]

    target = neo4j_target()
    opened: GraphStore = Neo4jStore.open(  # type: ignore[no-any-return]
        target.uri, target.username, target.password, target.database
    )

    def forget(tx: Any) -> None:
        tx.rows("MATCH (p:KenningPast {_memory: $memory}) DELETE p")
        tx.rows("MATCH (m:Meta {_memory: $memory, key: 'past_backfill'}) DELETE m")

    opened.write(forget)
    opened.close()
    return Neo4jStore.open(  # type: ignore[no-any-return]
        target.uri, target.username, target.password, target.database
    )


def test_a_store_made_before_the_record_reads_its_statuses_back_from_its_relations(
    stores: Stores,
) -> None:
    store = stores.fresh()
    where = Path(getattr(store, "data_dir", "."))
    m = Memory(store)
    m.advance_encounter(S, "before the record")
    made = m.create_entities(
        S,
        [
            {"type": "Question", "name": "alpha", "description": "cache"},
            {"type": "Hypothesis", "name": "bravo", "description": "retry"},
            {"type": "Observation", "name": "charlie", "description": "token"},
        ],
    ).tick
    resolved = m.create_relations(S, [{"source": "charlie", "type": "RESOLVES", "target": "alpha"}])
    supported = m.create_relations(
        S, [{"source": "charlie", "type": "SUPPORTS", "target": "bravo"}]
    )
    m.create_entities(S, [{"type": "Observation", "name": "delta", "description": "queue"}])
    challenged = m.create_relations(
        S, [{"source": "delta", "type": "CHALLENGES", "target": "bravo"}]
    )
    store = _without_the_record(store, stores.backend, where)
    try:
        m = Memory(store)
        seen = {
            t: (
                m.find_by_name("alpha", as_of=t).node.status,
                m.find_by_name("bravo", as_of=t).node.status,
            )
            for t in (made, resolved.tick, supported.tick, challenged.tick)
        }
        assert seen == {
            made: ("open", "untested"),
            resolved.tick: ("resolved", "untested"),
            supported.tick: ("resolved", "supported"),
            challenged.tick: ("resolved", "challenged"),
        }
    finally:
        store.close()


def test_the_record_of_the_past_is_no_part_of_what_read_cypher_sees(memory: Memory) -> None:
    memory.advance_encounter(S, "a record to hide")
    memory.create_entities(
        S,
        [
            {"type": "Hypothesis", "name": "alpha", "description": "cache"},
            {"type": "Observation", "name": "bravo", "description": "cache seen"},
        ],
    )
    link = {"source": "bravo", "type": "SUPPORTS", "target": "alpha"}
    memory.create_relations(S, [link])
    memory.delete_relations(S, [link])
    memory.delete_entities(S, ["bravo"])
    seen = memory.read_cypher("MATCH (n) RETURN n").rows
    text = str(seen)
    assert "alpha" in text  # the query reads the memory
    assert "moved_from" not in text and "bravo" not in text and "Past" not in text


def test_a_read_of_the_present_runs_no_statement_of_the_record(
    memory: Memory, caplog: pytest.LogCaptureFixture
) -> None:
    """Why the present's reads cost what they did: none of them reads the record (the
    statements the store runs are logged at DEBUG, without their parameters)."""
    memory.advance_encounter(S, "a record beside the present")
    memory.create_entities(
        S,
        [
            {"type": "Hypothesis", "name": "alpha", "description": "cache"},
            {"type": "Observation", "name": "bravo", "description": "cache seen"},
        ],
    )
    link = {"source": "bravo", "type": "SUPPORTS", "target": "alpha"}
    tick = memory.create_relations(S, [link]).tick
    memory.delete_relations(S, [link])
    caplog.set_level(logging.DEBUG, logger="kenning_encounter.store.queries")

    def record_read() -> bool:
        return any("Past" in r.getMessage() for r in caplog.records)

    caplog.clear()
    memory.search("cache")
    memory.find_by_name("alpha")
    memory.trace_provenance("alpha")
    assert caplog.records and not record_read()
    caplog.clear()
    memory.find_by_name("alpha", as_of=tick)
    assert record_read()


def test_forgetting_a_node_forgets_the_deleted_nodes_that_spoke_of_it(memory: Memory) -> None:
    memory.advance_encounter(S, "a subject")
    memory.create_entities(S, [{"type": "Concept", "name": "subject", "description": "cache"}])
    memory.advance_encounter(S, "a note about it, undone", close_summary="subject named")
    made = memory.create_entities(
        S, [{"type": "Note", "name": "zulu", "description": "quokka about the subject"}]
    )
    memory.create_relations(S, [{"source": "zulu", "type": "ABOUT", "target": "subject"}])
    linked = memory.find_by_name("zulu").node.tick + 1
    memory.delete_entities(S, ["zulu"])
    assert [h.name for h in memory.search("quokka", as_of=linked).hits] == ["zulu"]
    operator.forget(memory.store, ["subject"])
    assert memory.search("quokka", as_of=linked).hits == []
    assert by_name(memory, made.created[0].id, linked) is None


def test_two_moves_of_one_node_in_one_call_read_back_in_their_order(memory: Memory) -> None:
    """One create_relations that supports and then challenges a hypothesis: the record of
    the past keeps both moves in order, so the tick before reads the status before both."""
    memory.advance_encounter(S, "two moves at one tick")
    memory.create_entities(
        S,
        [
            {"type": "Observation", "name": "fast", "description": "retries pile up"},
            {"type": "Observation", "name": "slow", "description": "retries spread out"},
            {"type": "Hypothesis", "name": "backoff", "description": "the backoff is tight"},
            {"type": "Question", "name": "why", "description": "why the storm"},
        ],
    )
    before = memory.find_by_name("backoff").node.tick
    made = memory.create_relations(
        S,
        [
            {"source": "fast", "type": "SUPPORTS", "target": "backoff"},
            {"source": "fast", "type": "RESOLVES", "target": "why"},
            {"source": "slow", "type": "CHALLENGES", "target": "backoff"},
        ],
    )
    assert memory.find_by_name("backoff").node.status == "challenged"
    assert memory.find_by_name("why").node.status == "resolved"
    then = {n: memory.find_by_name(n, as_of=before).node.status for n in ("backoff", "why")}
    assert then == {"backoff": "untested", "why": "open"}
    now = {n: memory.find_by_name(n, as_of=made.tick).node.status for n in ("backoff", "why")}
    assert now == {"backoff": "challenged", "why": "resolved"}


# --- encounters dissolved, and times relative to the moment read ----------------------


def _states(entry: ReEntry) -> dict[str, tuple[str, str | None]]:
    return {e.name: (e.state, e.dissolved_at) for e in [*entry.recent_sessions, *entry.unsealed]}


def test_an_encounter_dissolved_later_reads_open_as_of_before_its_dissolution(
    memory: Memory,
) -> None:
    """A dissolution keeps its tick as a seal does: as of a tick before it the encounter
    was open; as of its own tick and after, dissolved."""
    memory.advance_encounter(S, "the writer's")
    gone = memory.advance_encounter("as-of-idler", "goes quiet").encounter
    memory.create_entities(S, [{"type": "Note", "name": "alpha", "description": "cache"}])
    before = store_clock(memory)
    assert memory.session_end("as-of-idler") == gone.name
    dissolved = store_clock(memory)
    assert dissolved == before + 1  # a write of its own
    memory.create_entities(S, [{"type": "Note", "name": "bravo", "description": "cache"}])

    def state_as_of(as_of: int | str) -> tuple[str, str | None]:
        # As advance_encounter(as_of=...) builds its lists (server/tools_session.py).
        then = memory.store.read(lambda tx: asof.moment(tx, as_of))
        entry = ReEntry(encounter=EncounterOut.model_construct())
        return _states(asof.reentry_then(memory.store, entry, "as-of-reader", then))[gone.name]

    assert state_as_of(before) == ("open", None)
    state, at = state_as_of(dissolved)
    assert state == "dissolved" and at is not None
    assert state_as_of(dissolved + 1) == (state, at)
    # The same by time: the moment of the dissolution's stamp reads it dissolved, the
    # millisecond before it open (no other write of this test shares its millisecond).
    assert state_as_of(at) == (state, at)
    just_before = asof.stamp(datetime.fromisoformat(at) - timedelta(milliseconds=1))
    assert state_as_of(just_before) == ("open", None)


def store_clock(memory: Memory) -> int:
    return memory.store.read(lambda tx: tx.clock())


@pytest.mark.parametrize("backend", BACKENDS)
def test_a_time_relative_to_a_moment_is_read_against_the_moment_asked_for(
    backend: str, tmp_path: Path
) -> None:
    """``when="last week"`` and a query naming last week, as of a past tick or time, mean
    the week before that moment, not before today."""
    clock = SetClock()
    store = _clocked(backend, tmp_path, clock)
    try:
        memory = Memory(store)
        clock.at = datetime(2026, 1, 1, 12, 0, tzinfo=UTC)  # a Thursday
        memory.advance_encounter(S, "a week apart")
        early = memory.create_entities(
            S, [{"type": "Note", "name": "alpha", "description": "deploy of the cache"}]
        ).created[0]
        clock.at = datetime(2026, 1, 9, 12, 0, tzinfo=UTC)  # the Friday after
        later = memory.create_entities(
            S, [{"type": "Note", "name": "bravo", "description": "deploy of the queue"}]
        )
        asked_then: list[int | str] = [later.tick, asof.stamp(clock.at)]
        for as_of in asked_then:
            found = memory.search("deploy", when="last week", as_of=as_of)
            assert [h.id for h in found.hits] == [early.id], f"as of {as_of!r}: {found.note}"
            assert "2025-12-29" in found.note, found.note  # the week began on Monday then
            ranked = memory.search("deploy last week", as_of=as_of)
            assert ranked.hits[0].id == early.id, f"as of {as_of!r}"
        # The present reads last week against now: neither note falls in it.
        assert memory.search("deploy", when="last week").hits == []
    finally:
        store.close()


def test_an_encounter_read_as_of_a_moment_shows_no_activity_after_it(memory: Memory) -> None:
    """Only an encounter's newest activity is kept: as of a moment before a later write of
    its own, that write's time is not shown as its last activity (the moment's own write
    is)."""
    opened = memory.advance_encounter(S, "active twice").encounter
    memory.create_entities(S, [{"type": "Note", "name": "alpha", "description": "cache"}])
    first = store_clock(memory)
    time.sleep(0.002)  # the second write's stamp is later by the millisecond
    memory.create_entities(S, [{"type": "Note", "name": "bravo", "description": "cache"}])
    latest = memory.store.read(lambda tx: tx.get_encounter(opened.name))
    assert latest is not None and latest.last_activity_at is not None

    def activity_as_of(as_of: int | str) -> str | None:
        def work(tx: ReadTx) -> str | None:
            then = asof.view(tx, as_of).get_encounter(opened.name)
            assert then is not None and then.sealed_at is None
            return then.last_activity_at

        return memory.store.read(work)

    at_first = memory.store.read(lambda tx: tx.stamp_at(first))
    assert at_first is not None and at_first < latest.last_activity_at
    for as_of in (first, at_first):
        shown = activity_as_of(as_of)
        assert shown is None or shown <= at_first, (as_of, shown)
    # At the present the newest activity is the one written, by tick or by time.
    assert activity_as_of(first + 1) == latest.last_activity_at
    assert activity_as_of(latest.last_activity_at) == latest.last_activity_at
