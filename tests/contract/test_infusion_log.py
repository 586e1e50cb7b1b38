"""The infusion log on every backend: bounded per session and by age, newest first,
no tick taken, out of read_cypher's sight; the recorder keeps a prompt's hash and
length, its text only when asked. Entries name nodes the memory holds (on Neo4j an
entry appended after its nodes were erased keeps none of them: test_erasure.py)."""

from __future__ import annotations

import hashlib

import pytest

from kenning_encounter.infusion.log import PRUNE_EVERY, InfusionRecorder
from kenning_encounter.memory.service import Memory
from kenning_encounter.store.infusion_log import KeepsInfusionLog, LogEntry, session_tag
from kenning_encounter.store.port import GraphStore


@pytest.fixture
def held(store: GraphStore) -> dict[str, str]:
    """Nodes the log's entries name, by name."""
    memory = Memory(store)
    memory.advance_encounter("logged", "nodes to deliver")
    made = memory.create_entities(
        "logged",
        [
            {"type": "Observation", "name": "obs_a"},
            {"type": "Concept", "name": "con_b"},
            {"type": "Hypothesis", "name": "hyp_c"},
            {"type": "Concept", "name": "con_z"},
        ],
    ).created
    return {m.name: m.id for m in made}


def _entry(session: str, at: float, turn: int, **changes: object) -> LogEntry:
    values: dict[str, object] = {
        "key": f"{session}-{turn}",
        "session": session,
        "at": at,
        "turn": turn,
        "channel": "lexical",
        "degraded": False,
        "reason": "matcher off",
        "bodies": (),
        "standing": (),
        "cut": (),
        "silent": False,
        "prompt_sha256": "0" * 64,
        "prompt_chars": 10,
    }
    values.update(changes)
    return LogEntry(**values)  # type: ignore[arg-type]


def test_a_session_keeps_its_newest_entries_newest_first(
    store: GraphStore, held: dict[str, str]
) -> None:
    assert isinstance(store, KeepsInfusionLog)
    log = store.infusion_log
    clock = store.read(lambda tx: tx.clock())
    bodies, standing = (held["obs_a"], held["con_b"]), (held["hyp_c"],)
    for turn in range(1, 7):
        entry = _entry("s-one", 1_000.0 + turn, turn, bodies=bodies, standing=standing)
        log.append(entry, keep=4)
    log.append(_entry("s-two", 5_000.0, 1, silent=True, bodies=(), degraded=True), keep=4)
    got = log.entries(session_tag("s-one"), offset=0, limit=10)
    assert [e.turn for e in got] == [6, 5, 4, 3]
    assert got[0].bodies == bodies and got[0].standing == standing
    assert [e.turn for e in log.entries(session_tag("s-one"), offset=1, limit=2)] == [5, 4]
    two = log.entries(session_tag("s-two"), offset=0, limit=10)
    assert len(two) == 1 and two[0].silent and two[0].degraded and two[0].bodies == ()
    listed = log.sessions(offset=0, limit=10)
    assert [(s.session, s.entries) for s in listed] == [("s-two", 1), ("s-one", 4)]
    assert store.read(lambda tx: tx.clock()) == clock, "the log took a tick"


def test_prune_drops_what_is_older_than_the_cutoff(store: GraphStore) -> None:
    assert isinstance(store, KeepsInfusionLog)
    log = store.infusion_log
    for turn in range(1, 5):
        log.append(_entry("s-old", 100.0 * turn, turn), keep=100)
    assert log.prune(250.0, limit=100) == 2
    assert [e.turn for e in log.entries(session_tag("s-old"), offset=0, limit=10)] == [4, 3]


def test_read_cypher_never_sees_the_log(store: GraphStore) -> None:
    assert isinstance(store, KeepsInfusionLog)
    store.infusion_log.append(_entry("s-hidden", 1.0, 1), keep=10)
    found = store.read_cypher(
        "MATCH (n) RETURN count(n) AS n", None, row_cap=10, char_cap=10_000, timeout_s=10
    )
    assert found.rows == [[0]]


def test_the_recorder_keeps_a_hash_unless_prompts_are_kept(
    store: GraphStore, held: dict[str, str]
) -> None:
    assert isinstance(store, KeepsInfusionLog)
    prompt = "what did we learn about the kiln?"
    for keep_prompts, session in ((False, "s-hash"), (True, "s-text")):
        recorder = InfusionRecorder(
            store.infusion_log,
            keep_per_session=10,
            retention_s=60.0,
            keep_prompts=keep_prompts,
            wall_clock=lambda: 1_000.0,
        )
        recorder.record(
            session,
            turn=1,
            at=1_000.0,
            prompt=prompt,
            channel="lexical",
            degraded=False,
            reason=None,
            bodies=[held["obs_a"]],
            standing=[],
            cut=[held["con_z"]],
            silent=False,
        )
    hashed = store.infusion_log.entries(session_tag("s-hash"), offset=0, limit=1)[0]
    assert hashed.prompt is None and hashed.prompt_chars == len(prompt)
    assert hashed.prompt_sha256 == hashlib.sha256(prompt.encode()).hexdigest()
    assert hashed.cut == (held["con_z"],)
    kept = store.infusion_log.entries(session_tag("s-text"), offset=0, limit=1)[0]
    assert kept.prompt == prompt


def test_the_recorder_prunes_past_the_retention(store: GraphStore) -> None:
    assert isinstance(store, KeepsInfusionLog)
    now = [10_000.0]
    recorder = InfusionRecorder(
        store.infusion_log, keep_per_session=1_000, retention_s=100.0, wall_clock=lambda: now[0]
    )

    def one(at: float) -> None:
        recorder.record(
            "s-aging",
            turn=1,
            at=at,
            prompt="p",
            channel="lexical",
            degraded=False,
            reason=None,
            bodies=[],
            standing=[],
            cut=[],
            silent=True,
        )

    one(1.0)  # long past the retention: the first write prunes it away
    assert store.infusion_log.entries(session_tag("s-aging"), offset=0, limit=5) == []
    for _ in range(PRUNE_EVERY - 1):
        one(now[0])
    now[0] += 1_000.0
    one(now[0])  # the hundredth since the last prune: the older ones go
    left = store.infusion_log.entries(session_tag("s-aging"), offset=0, limit=500)
    assert [e.at for e in left] == [now[0]]
