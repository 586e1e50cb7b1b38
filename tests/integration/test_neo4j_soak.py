"""Three replicas on one Neo4j database, sixteen sessions spread over them, one replica
SIGKILLed and restarted mid-run: nothing acknowledged is lost and nothing is corrupted
(issue #15, "Prove it").

Every call goes through a round-robin balancer (tests/support/balancer.py); a call whose
replica died is retried on the next one, so a write may have been done by the dead
replica before its retry; such calls are counted as uncertain, and only their refusals
of the "already done" kind are accepted. The run is bounded by counts of acknowledged
calls (the kill after KILL_AFTER, the end RUN_AFTER_RESTART later), so what it asserts
never depends on timing; each phase lasts some seconds on a 2-core machine.

Afterwards, with the replicas still serving: each session's next call finds its open
encounter, or its sealed one as the previous of the next. Then, on a store opened anew:
every invariant of DESIGN §3, every acknowledged node, relation, revision and seal, and
each session's infusion ledger as the rules of infusion/ledger.py allow.
"""

from __future__ import annotations

import contextlib
import threading
from collections.abc import Generator
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Final
from urllib.parse import urlsplit

import httpx
import pytest

from kenning_encounter.infusion.ledger import Verdict
from tests.e2e.conftest import RunningServer, run_server
from tests.integration.conftest import credentials
from tests.support.backends import neo4j_target, neo4j_uri
from tests.support.balancer import Answer, Balancer
from tests.support.invariants import assert_store_invariants

pytestmark = pytest.mark.neo4j

SESSIONS: Final = 16
REPLICAS: Final = 3
KILLED: Final = 1
KILL_AFTER: Final = 80  # acknowledged calls before the kill
RUN_AFTER_RESTART: Final = 80  # acknowledged calls after the restart before the end
SERVED_AFTER_RESTART: Final = 15  # calls the restarted replica must answer before the end
HORIZON_TURNS: Final = 12  # infusion config's default: a body is due again after this many
STARTUP_S: Final = 120.0  # three servers importing at once on a loaded 2-core machine
SAFETY_S: Final = 150.0  # a run that outlives this has hung: the test fails, naming it
# One distinctive word per session, so its prompts find its own notes.
WORDS: Final = [
    "amber",
    "birch",
    "cedar",
    "dahlia",
    "ember",
    "fjord",
    "garnet",
    "heron",
    "iris",
    "juniper",
    "kelp",
    "lichen",
    "marble",
    "nectar",
    "opal",
    "quartz",
]
# Refusals a retried call may meet when its first attempt was done by a replica that died.
ALREADY_DONE: Final = ("exists already", "is still open", "has no open encounter")


@dataclass
class Acked:
    """What the servers acknowledged to one session."""

    session: str
    word: str
    nodes: dict[str, str] = field(default_factory=dict[str, str])  # id -> name
    edges: set[tuple[str, str, str]] = field(default_factory=set[tuple[str, str, str]])
    revisions: dict[str, str] = field(default_factory=dict[str, str])  # new id -> old id
    sealed: dict[str, str] = field(default_factory=dict[str, str])  # encounter -> summary
    open: str | None = None  # the encounter this session holds open, once known
    has_open: bool = False
    infusions: list[dict[str, Any]] = field(default_factory=list[dict[str, Any]])
    uncertain: int = 0
    retried_infusions: int = 0
    calls: int = 0


class Soak:
    """The sessions' shared state: the balancer, the tally, the stop signal, failures."""

    def __init__(self, balancer: Balancer) -> None:
        self.balancer = balancer
        self.lock = threading.Lock()
        self.acks = 0
        self.stop = threading.Event()
        self.failures: list[str] = []

    def acked(self) -> None:
        with self.lock:
            self.acks += 1

    def fail(self, message: str) -> None:
        with self.lock:
            self.failures.append(message)
        self.stop.set()


def _accept(soak: Soak, acked: Acked, what: str, answer: Answer) -> bool:
    """True for an acknowledged answer; an "already done" refusal of a retried call is
    counted uncertain; any other refusal is a failure."""
    acked.calls += 1
    if answer.retried:
        acked.uncertain += 1
    if answer.ok:
        soak.acked()
        return True
    if answer.retried and any(marker in answer.text for marker in ALREADY_DONE):
        return False
    soak.fail(f"{acked.session} {what} on replica {answer.replica}: {answer.text[:400]}")
    return False


def _cycle(soak: Soak, client: httpx.Client, acked: Acked, k: int) -> None:
    lb, s, word = soak.balancer, acked.session, acked.word
    if not acked.has_open:
        opened = lb.tool(client, "advance_encounter", {"session_id": s, "purpose": f"cycle {k}"})
        if _accept(soak, acked, "advance_encounter", opened):
            acked.open = opened.body["encounter"]["name"]
        acked.has_open = True  # acknowledged, or opened by the replica that died
    alpha, beta = f"{word} {k} alpha", f"{word} {k} beta"
    notes = [
        {"type": "Note", "name": alpha, "description": f"The {word} gauge drifts in cycle {k}."},
        {"type": "Note", "name": beta, "description": f"The {word} valve sticks in cycle {k}."},
    ]
    made = lb.tool(client, "create_entities", {"session_id": s, "entities": notes})
    if _accept(soak, acked, "create_entities", made):
        acked.open = made.body["encounter"]
        acked.nodes |= {n["id"]: n["name"] for n in made.body["created"]}
    linked = lb.tool(
        client,
        "create_relations",
        {"session_id": s, "relations": [{"source": alpha, "type": "INFORMS", "target": beta}]},
    )
    if _accept(soak, acked, "create_relations", linked):
        acked.edges |= {(e["source"], e["type"], e["target"]) for e in linked.body["created"]}
    revision = {
        "type": "Note",
        "name": alpha,
        "description": f"The {word} gauge drifts in cycle {k}, worse after the restart.",
        "supersedes": alpha,
        "revision_why": "measured again",
    }
    revised = lb.tool(client, "create_entities", {"session_id": s, "entities": [revision]})
    if _accept(soak, acked, "revision", revised):
        node = revised.body["created"][0]
        acked.nodes[node["id"]] = node["name"]
        acked.revisions[node["id"]] = node["revises"]
    found = lb.tool(client, "search", {"query": f"{word} gauge"})
    _accept(soak, acked, "search", found)
    infused = lb.infuse(client, s, f"why does the {word} gauge drift again?")
    acked.retried_infusions += infused.retried
    if _accept(soak, acked, "infuse", infused):
        acked.infusions.append({**infused.body["meta"], "retried": acked.retried_infusions})
    if k % 2 == 1:
        summary = f"{s}: cycle {k} sealed"
        sealed = lb.tool(client, "close_encounter", {"session_id": s, "summary": summary})
        if _accept(soak, acked, "close_encounter", sealed):
            acked.sealed[sealed.body["encounter"]["name"]] = summary
        acked.has_open, acked.open = False, None


def _session(soak: Soak, acked: Acked) -> None:
    with httpx.Client() as client:
        k = 0
        try:
            while not soak.stop.is_set():
                _cycle(soak, client, acked, k)
                k += 1
        except Exception as exc:  # a thread's failure must reach the test, not vanish
            soak.fail(f"{acked.session}: {type(exc).__name__}: {exc}")


def _wait_for(soak: Soak, enough: Any) -> None:
    """Until ``enough()`` or a failure; the safety bound only ever stops a hung run."""
    waited = 0.0
    while not enough() and not soak.stop.is_set():
        soak.stop.wait(0.1)
        waited += 0.1
        if waited > SAFETY_S:
            soak.fail(f"the run hung: {soak.acks} calls acknowledged in {SAFETY_S:g} s")


def _chaos(
    soak: Soak, replicas: list[RunningServer], restart: Any, stack: contextlib.ExitStack
) -> None:
    """Kill one replica after KILL_AFTER acknowledged calls, restart it on its port,
    and end the run once it has served again and RUN_AFTER_RESTART more were acknowledged."""
    try:
        _wait_for(soak, lambda: soak.acks >= KILL_AFTER)
        if soak.stop.is_set():
            return
        victim = replicas[KILLED]
        victim.proc.kill()  # SIGKILL: in-flight calls die with it
        victim.proc.wait(timeout=30)
        replicas[KILLED] = stack.enter_context(restart())
        if replicas[KILLED].base != victim.base:
            soak.fail(f"restarted at {replicas[KILLED].base}, not at {victim.base}")
        served, acks = soak.balancer.served[KILLED], soak.acks
        _wait_for(
            soak,
            lambda: (
                soak.acks - acks >= RUN_AFTER_RESTART
                and soak.balancer.served[KILLED] - served >= SERVED_AFTER_RESTART
            ),
        )
    except Exception as exc:
        soak.fail(f"the chaos thread: {type(exc).__name__}: {exc}")
    finally:
        soak.stop.set()


@contextlib.contextmanager
def _replicas(tmp_path: Path) -> Generator[tuple[list[RunningServer], Any, contextlib.ExitStack]]:
    user, password = credentials()
    args = ["--store", "neo4j", "--neo4j-uri", neo4j_uri(), "--http-sessions", "stateless"]
    env = {"NEO4J_USERNAME": user, "NEO4J_PASSWORD": password}
    with contextlib.ExitStack() as stack:
        starting = [
            run_server(tmp_path / f"r{i}", *args, env=env, startup=STARTUP_S)
            for i in range(REPLICAS)
        ]
        with ThreadPoolExecutor(REPLICAS) as pool:  # each start imports the package: at once
            entered = [pool.submit(cm.__enter__) for cm in starting]
        for cm in starting:
            stack.push(cm.__exit__)
        replicas = [future.result() for future in entered]
        port = replicas[KILLED].base.rsplit(":", 1)[1]

        def restart() -> contextlib.AbstractContextManager[RunningServer]:
            # the last --port wins: the restarted replica answers where the dead one did
            return run_server(
                tmp_path / f"r{KILLED}", *args, "--port", port, env=env, startup=STARTUP_S
            )

        yield replicas, restart, stack


def _check_reentry(soak: Soak, acked: Acked) -> None:
    """Each session's next call still finds its open encounter, or its sealed history."""
    with httpx.Client() as client:
        s = acked.session
        if acked.has_open:
            note = {"type": "Note", "name": f"{acked.word} last", "description": "after the run"}
            made = soak.balancer.tool(
                client, "create_entities", {"session_id": s, "entities": [note]}
            )
            assert made.ok, f"{s} lost its open encounter: {made.text}"
            if acked.open is not None:
                assert made.body["encounter"] == acked.open, f"{s} found another encounter"
            acked.nodes |= {n["id"]: n["name"] for n in made.body["created"]}
        else:
            opened = soak.balancer.tool(
                client, "advance_encounter", {"session_id": s, "purpose": "after the run"}
            )
            assert opened.ok, f"{s} could not advance after the run: {opened.text}"
            last = max(acked.sealed, key=lambda name: int(name[1:]), default=None)
            if last is not None:
                assert opened.body["previous"] is not None
                assert int(opened.body["previous"][1:]) >= int(last[1:]), (
                    f"{s}: its next encounter follows {opened.body['previous']}, not {last}"
                )


def _check_ledger(acked: Acked, stored: Any) -> None:
    """The ledger's rules, read off the acknowledged infusions of one session, in order."""
    s = acked.session
    last_turn, retried = 0, 0
    delivered_at: dict[str, int] = {}
    for meta in acked.infusions:
        turn = meta["turn"]
        # A retried infusion's first attempt may have been made, and saved, by a replica
        # that died before answering: its turn is then skipped, its bodies stand.
        lost = meta["retried"] - retried
        assert last_turn < turn <= last_turn + 1 + lost, f"{s}: turn {last_turn} -> {turn}"
        for node in meta["delivered"]:
            verdict = meta["renewal"][node]
            if node in delivered_at:
                assert verdict != Verdict.BODY_FIRST, f"{s}: {node} delivered twice as new"
                if verdict == Verdict.BODY_STALE:
                    assert turn - delivered_at[node] >= HORIZON_TURNS, f"{s}: {node} early"
            delivered_at[node] = turn
        for node in meta["standing"]:
            assert node in delivered_at or meta["retried"], (
                f"{s}: {node} standing, never delivered to it"
            )
        last_turn, retried = turn, meta["retried"]
    if not acked.infusions:
        return
    assert stored is not None, f"{s}: no ledger in the store"
    assert stored.turn == last_turn, f"{s}: the store's ledger is at turn {stored.turn}"
    for node, turn in delivered_at.items():
        assert node in stored.stamps, f"{s}: {node} was delivered, the ledger forgot it"
        assert stored.stamps[node].turn >= turn, f"{s}: {node} stamped at an older turn"


def test_sixteen_sessions_over_three_replicas_survive_a_sigkill(
    neo4j_store: Any, tmp_path: Path
) -> None:
    from kenning_encounter.store.neo4j import Neo4jStore

    tally = [Acked(f"soak-{i:02d}", WORDS[i]) for i in range(SESSIONS)]
    with _replicas(tmp_path) as (replicas, restart, stack):
        soak = Soak(Balancer([r.base for r in replicas], urlsplit(replicas[0].url).path))
        threads = [threading.Thread(target=_session, args=(soak, a)) for a in tally]
        chaos = threading.Thread(target=_chaos, args=(soak, replicas, restart, stack))
        for thread in [*threads, chaos]:
            thread.start()
        for thread in [chaos, *threads]:
            thread.join(timeout=SAFETY_S + 60)
        assert not any(t.is_alive() for t in [chaos, *threads]), "a session never returned"
        assert soak.failures == [], "\n".join(soak.failures[:10])
        assert soak.balancer.refused_connections > 0, "no call ever met the dead replica"
        with ThreadPoolExecutor(SESSIONS) as pool:
            list(pool.map(_check_reentry, [soak] * len(tally), tally))

    t = neo4j_target()
    store = Neo4jStore.open(t.uri, t.username, t.password, t.database)
    try:
        view = assert_store_invariants(store)
        nodes = {n.id: n for n in view.graph.nodes}
        edges = {(e.source, e.type, e.target) for e in view.graph.edges}
        encounters = {e.name: e for e in view.encounters}
        for acked in tally:
            for node_id, name in acked.nodes.items():
                assert node_id in nodes and nodes[node_id].name == name, f"lost {node_id}"
                assert nodes[node_id].locus == acked.session
            assert acked.edges <= edges, f"{acked.session}: lost {acked.edges - edges}"
            for new, old in acked.revisions.items():
                assert nodes[old].superseded_by == new, f"{old} is not revised by {new}"
            for name, summary in acked.sealed.items():
                sealed = encounters[name]
                assert sealed.locus == acked.session and sealed.sealed_at is not None
                assert sealed.summary == summary
            open_now = [e for e in view.encounters if e.locus == acked.session and e.is_open]
            assert len(open_now) == 1, f"{acked.session}: {len(open_now)} open encounters"
            _check_ledger(acked, store.ledgers.load(acked.session))
        infusions = [m for a in tally for m in a.infusions]
        assert any(m["delivered"] for m in infusions), "no infusion delivered a body"
        assert any(m["standing"] for m in infusions), "no body ever stood: the ledger is unused"
    finally:
        store.close()
