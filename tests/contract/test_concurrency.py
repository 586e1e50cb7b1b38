"""Eight loci recording at once: chains fork-free, spine connected, ticks exact, nothing lost."""

from __future__ import annotations

import threading
from collections import Counter

from kenning_encounter.memory.service import Memory
from kenning_encounter.store.port import GraphStore, ReadTx

LOCI = 8
ENCOUNTERS = 3
BATCHES = 4
BATCH = 5


def _work(memory: Memory, locus: str, errors: list[BaseException]) -> None:
    try:
        for e in range(ENCOUNTERS):
            summary = f"{locus} encounter {e - 1}" if e else None
            memory.advance_encounter(locus, f"{locus} work {e}", close_summary=summary)
            for b in range(BATCHES):
                memory.create_entities(
                    locus,
                    [
                        {
                            "type": "Observation",
                            "name": f"{locus}-{e}-{b}-{i}",
                            "description": f"noticed by {locus}",
                        }
                        for i in range(BATCH)
                    ],
                )
        memory.close_encounter(locus, f"{locus} done")
    except BaseException as exc:  # surfaced by the assertion below
        errors.append(exc)


def test_eight_loci_at_once(memory: Memory, store: GraphStore) -> None:
    errors: list[BaseException] = []
    threads = [
        threading.Thread(target=_work, args=(memory, f"locus-{i}", errors)) for i in range(LOCI)
    ]
    for t in threads:
        t.start()
    for t in threads:
        t.join(timeout=240)
    assert not errors, errors

    def collect(tx: ReadTx) -> tuple[int, list, list, list]:  # type: ignore[type-arg]
        return tx.clock(), tx.encounters(limit=10_000), tx.spine(), tx.authored_graph().nodes

    clock, encounters, spine, nodes = store.read(collect)

    # no lost write
    assert len(nodes) == LOCI * ENCOUNTERS * BATCHES * BATCH
    per_locus = Counter(n.locus for n in nodes)
    assert set(per_locus.values()) == {ENCOUNTERS * BATCHES * BATCH}

    # ticks: one per write transaction, unique and gapless. advance(close_summary=...)
    # seals the previous encounter and opens the next in one transaction: one tick.
    opened = [e.opened_tick for e in encounters]
    sealed = {e.sealed_tick for e in encounters if e.sealed_tick}
    batch_ticks = {n.tick for n in nodes}
    assert len(set(opened)) == len(opened)
    assert len(batch_ticks) == LOCI * ENCOUNTERS * BATCHES
    assert not batch_ticks & (set(opened) | sealed)
    assert sorted(set(opened) | sealed | batch_ticks) == list(range(1, clock + 1))

    # each locus's chain is one fork-free path in opening order
    by_name = {e.name: e for e in encounters}
    nexts = [(a, b) for a, r, b in spine if r == "NEXT_ENCOUNTER"]
    anchors = [(a, b) for a, r, b in spine if r == "INSTANTIATED_AFTER"]
    assert len({a for a, _ in nexts}) == len(nexts), "an encounter has two successors"
    assert len({b for _, b in nexts}) == len(nexts), "an encounter has two predecessors"
    for a, b in nexts:
        assert by_name[a].locus == by_name[b].locus
        assert by_name[a].opened_tick < by_name[b].opened_tick
    assert len(nexts) == LOCI * (ENCOUNTERS - 1)

    # the spine is connected: every locus's first encounter is anchored, except the very first
    firsts = {
        min((e for e in encounters if e.locus == locus), key=lambda e: e.opened_tick).name
        for locus in per_locus
    }
    anchored = {a for a, _ in anchors}
    very_first = min(encounters, key=lambda e: e.opened_tick).name
    assert anchored == firsts - {very_first}
    for a, b in anchors:
        assert by_name[b].opened_tick < by_name[a].opened_tick
    assert all(e.sealed_at for e in encounters)
