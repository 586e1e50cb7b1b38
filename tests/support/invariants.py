"""The invariants of DESIGN.md §3 that can be read off a store, checked in one place.

A test that drives the memory in any order (the fuzz suite, a concurrency run)
ends with ``assert_store_invariants(store)``: whatever succeeded or failed on
the way, the graph must still be one the tools could have written. Each check
raises ``AssertionError`` naming what broke, so a failure reads as a finding.
"""

from __future__ import annotations

from collections import Counter
from dataclasses import dataclass

from kenning_encounter.store.past import StatusMove
from kenning_encounter.store.port import GraphStore, ReadTx, Subgraph
from kenning_encounter.store.records import EncounterRecord
from kenning_encounter.vocabulary import (
    AUTHORED_NODE_TYPES,
    AUTHORED_RELATION_TYPES,
    PROCESS_NODE_TYPES,
    PROCESS_RELATION_TYPES,
    STATUS_EFFECTS,
)


@dataclass(frozen=True)
class StoreView:
    clock: int
    graph: Subgraph
    encounters: list[EncounterRecord]
    spine: list[tuple[str, str, str]]
    members: dict[str, list[str]]
    loci: list[str]
    moves: list[StatusMove]


def read_view(store: GraphStore) -> StoreView:
    def work(tx: ReadTx) -> StoreView:
        encounters = tx.encounters(limit=1_000_000)
        graph = tx.authored_graph()
        return StoreView(
            clock=tx.clock(),
            graph=graph,
            encounters=encounters,
            spine=tx.spine(),
            members=tx.encounter_members([e.name for e in encounters]),
            loci=tx.loci(),
            moves=tx.moves_after([n.id for n in graph.nodes], -1),
        )

    return store.read(work)


def check_vocabulary(view: StoreView) -> None:
    """1: the authored layer holds only authored types; process types stay on the spine."""
    for node in view.graph.nodes:
        assert node.type in AUTHORED_NODE_TYPES, f"{node.id} has type {node.type!r}"
        assert node.type not in PROCESS_NODE_TYPES, f"process node {node.id} among authored"
    for edge in view.graph.edges:
        assert edge.type in AUTHORED_RELATION_TYPES, f"edge {edge} has type {edge.type!r}"
        assert edge.type not in PROCESS_RELATION_TYPES, f"process edge {edge} among authored"
    kinds = Counter(r for _, r, _ in view.spine)
    assert set(kinds) <= {"NEXT_ENCOUNTER", "INSTANTIATED_AFTER"}, kinds


def check_recorded_once(view: StoreView) -> None:
    """2: every authored node was RECORDED by exactly one encounter, of its own locus."""
    by_name = {e.name: e for e in view.encounters}
    recorders = Counter(node_id for ids in view.members.values() for node_id in ids)
    ids = {n.id for n in view.graph.nodes}
    assert len(ids) == len(view.graph.nodes), "two authored nodes share an id"
    for node in view.graph.nodes:
        assert recorders[node.id] == 1, f"{node.id} recorded by {recorders[node.id]} encounters"
        assert node.encounter in by_name, f"{node.id} recorded by unknown {node.encounter!r}"
        assert node.locus == by_name[node.encounter].locus, f"{node.id}: locus differs"
        assert node.id in view.members[node.encounter], f"{node.id} not in its encounter"
    stray = set(recorders) - ids
    assert not stray, f"encounters record nodes that are not there: {sorted(stray)[:5]}"
    known = {e.name for e in view.encounters}
    for edge in view.graph.edges:
        assert edge.source in ids and edge.target in ids, f"dangling edge {edge}"
        if edge.encounter is not None:
            assert edge.encounter in known, f"edge {edge} from unknown encounter"


def check_supersession(view: StoreView) -> None:
    """4: SUPERSEDES is a line: one successor, one predecessor, same type, no cycle."""
    nodes = {n.id: n for n in view.graph.nodes}
    chain = [e for e in view.graph.edges if e.type == "SUPERSEDES"]
    successors = Counter(e.target for e in chain)
    predecessors = Counter(e.source for e in chain)
    forks = [n for n, c in successors.items() if c > 1]
    merges = [n for n, c in predecessors.items() if c > 1]
    assert not forks, f"nodes with two successors: {forks}"
    assert not merges, f"nodes revising two others: {merges}"
    newer_of = {e.target: e.source for e in chain}
    for edge in chain:
        old, new = nodes[edge.target], nodes[edge.source]
        assert old.type == new.type, f"{new.id} ({new.type}) revises {old.id} ({old.type})"
        assert edge.revision_why, f"{new.id} revises {old.id} without revision_why"
    for node in nodes.values():
        assert node.superseded_by == newer_of.get(node.id), (
            f"{node.id}: superseded_by {node.superseded_by!r}, edge says {newer_of.get(node.id)!r}"
        )
    for start in newer_of:
        seen = {start}
        at = start
        while at in newer_of:
            at = newer_of[at]
            assert at not in seen, f"a SUPERSEDES cycle through {at}"
            seen.add(at)
    heads = Counter(n.name for n in nodes.values() if n.is_head)
    doubled = [name for name, c in heads.items() if c > 1]
    assert not doubled, f"two live nodes hold one name: {doubled}"


def check_statuses(view: StoreView) -> None:
    """A status is the one the node was recorded with (the first move's ``before`` in the
    record of the past, else its own), moved by each relation into it in the order they
    were made: no status outlives the relations that set it, or is lost to an undo."""
    first: dict[str, StatusMove] = {}
    for move in view.moves:  # in the order they were made
        first.setdefault(move.node, move)
    evidence: dict[str, list[tuple[int, str]]] = {}
    for edge in view.graph.edges:
        evidence.setdefault(edge.target, []).append((edge.tick, edge.type))
    for node in view.graph.nodes:
        status = first[node.id].before if node.id in first else node.status
        for _, rel in sorted(evidence.get(node.id, ())):
            effect = STATUS_EFFECTS.get(rel, {}).get(node.type)
            if effect is not None and status in effect[0]:
                status = effect[1]
        assert node.status == status, (
            f"{node.id} ({node.type}) reads {node.status!r}; its evidence gives {status!r}"
        )


def check_spine(view: StoreView) -> None:
    """The spine: each locus one fork-free path, firsts anchored earlier, all one component."""
    by_name = {e.name: e for e in view.encounters}
    nexts = [(a, b) for a, r, b in view.spine if r == "NEXT_ENCOUNTER"]
    anchors = [(a, b) for a, r, b in view.spine if r == "INSTANTIATED_AFTER"]
    assert len({a for a, _ in nexts}) == len(nexts), "an encounter has two successors"
    assert len({b for _, b in nexts}) == len(nexts), "an encounter has two predecessors"
    for a, b in nexts:
        assert by_name[a].locus == by_name[b].locus, f"{a} -> {b} crosses loci"
        assert by_name[a].opened_tick < by_name[b].opened_tick, f"{a} -> {b} runs backwards"
    loci = {e.locus for e in view.encounters}
    assert loci <= set(view.loci), f"encounters of unknown loci: {sorted(loci - set(view.loci))}"
    for locus in loci:
        own = [e for e in view.encounters if e.locus == locus]
        links = sum(1 for a, _ in nexts if by_name[a].locus == locus)
        assert links == len(own) - 1, f"{locus}: {len(own)} encounters, {links} links"
        assert sum(1 for e in own if e.is_open) <= 1, f"{locus} has two open encounters"
    if not view.encounters:
        return
    very_first = min(view.encounters, key=lambda e: e.opened_tick).name
    firsts = {
        min((e for e in view.encounters if e.locus == locus), key=lambda e: e.opened_tick).name
        for locus in loci
    }
    assert {a for a, _ in anchors} == firsts - {very_first}, "a locus's first is not anchored"
    for a, b in anchors:
        assert by_name[b].opened_tick < by_name[a].opened_tick, f"{a} anchored to a later {b}"
    # One connected structure: walking the spine's edges either way reaches every encounter.
    neighbours: dict[str, set[str]] = {e.name: set() for e in view.encounters}
    for a, _, b in view.spine:
        neighbours[a].add(b)
        neighbours[b].add(a)
    reached, frontier = {very_first}, [very_first]
    while frontier:
        for other in neighbours[frontier.pop()] - reached:
            reached.add(other)
            frontier.append(other)
    assert reached == set(neighbours), f"spine not connected: {sorted(set(neighbours) - reached)}"


def check_ticks(view: StoreView) -> None:
    """One tick per write transaction: spine ticks unique, apart from authored ones, in range."""
    opened = [e.opened_tick for e in view.encounters]
    sealed = [e.sealed_tick for e in view.encounters if e.sealed_tick is not None]
    assert len(set(opened)) == len(opened), "two encounters opened on one tick"
    assert len(set(sealed)) == len(sealed), "two encounters sealed on one tick"
    for e in view.encounters:
        if e.sealed_tick is not None:
            assert e.sealed_tick >= e.opened_tick, f"{e.name} sealed before it opened"
    authored = {n.tick for n in view.graph.nodes} | {e.tick for e in view.graph.edges}
    spine_ticks = set(opened) | set(sealed)
    assert not authored & spine_ticks, f"authored writes on spine ticks: {authored & spine_ticks}"
    every = authored | spine_ticks
    assert all(1 <= t <= view.clock for t in every), f"a tick outside 1..{view.clock}"
    places = Counter((n.tick, n.ord) for n in view.graph.nodes)
    assert all(c == 1 for c in places.values()), "two nodes share a (tick, ord) place"


def assert_store_invariants(store: GraphStore) -> StoreView:
    view = read_view(store)
    check_vocabulary(view)
    check_recorded_once(view)
    check_supersession(view)
    check_statuses(view)
    check_spine(view)
    check_ticks(view)
    return view
