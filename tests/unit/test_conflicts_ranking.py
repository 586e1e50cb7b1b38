"""The conflicts ranking over an outline's columns reads what the plain reading by ids reads.

memory/conflicts.py gathers only the relations a contest needs, by node place, and walks
the leaning over a sorted array. The oracle here reads the same graph the plain way: every
relation by id, every node's relations into it, a breadth-first walk over sets. On random
graphs (chains of revisions, hidden loci, settled statuses, relations to nodes outside the
outline) both must find the same contested nodes with the same sides, ticks and leaning.
"""

from __future__ import annotations

from collections import defaultdict

from hypothesis import given, settings
from hypothesis import strategies as st

from kenning_encounter.memory import contested
from kenning_encounter.memory.conflicts import LEAN_DEPTH, _contests  # pyright: ignore[reportPrivateUsage]
from kenning_encounter.store.outline import Outline
from kenning_encounter.store.records import EdgeRecord, NodeRecord

TYPES = {
    "Hypothesis": ["untested", "supported", "challenged", "falsified", "retired"],
    "Question": ["open", "resolved", "retired"],
    "Concept": [None],
    "Note": [None],
}
KINDS = ["CHALLENGES", "SUPPORTS", "GROUNDS", "RESOLVES", "INFORMS", "COMPOSES", "ABOUT"]


@st.composite
def graphs(draw: st.DrawFn) -> tuple[list[NodeRecord], list[EdgeRecord]]:
    count = draw(st.integers(1, 24))
    heads: set[int] = set(range(count))
    successor: dict[int, int] = {}
    edges: list[EdgeRecord] = []
    tick = 0
    for i in range(count):  # some nodes revise an earlier head
        if i and draw(st.integers(0, 4)) == 0:
            old = draw(st.sampled_from(sorted(heads - {i})))
            heads.discard(old)
            successor[old] = i
            tick += 1
            edges.append(EdgeRecord(f"n{i}", f"n{old}", "SUPERSEDES", tick))
    nodes: list[NodeRecord] = []
    for i in range(count):
        kind = draw(st.sampled_from(sorted(TYPES)))
        nodes.append(
            NodeRecord(
                f"n{i}",
                kind,
                f"node {i % 7}",  # names repeat: ties are ranked alike
                "",
                i,
                "2026-01-01T00:00:00.000Z",
                status=draw(st.sampled_from(TYPES[kind])),
                locus=draw(st.sampled_from(["a", "b", "c"])),
                superseded_by=f"n{successor[i]}" if i in successor else None,
            )
        )
    ends = st.integers(0, count)  # count: a node outside the outline
    for _ in range(draw(st.integers(0, 60))):
        a, b = draw(ends), draw(ends)
        tick += 1
        edges.append(EdgeRecord(f"n{a}", f"n{b}", draw(st.sampled_from(KINDS)), tick))
    return nodes, edges


def _oracle(
    nodes: list[NodeRecord], edges: list[EdgeRecord], hidden: frozenset[str]
) -> list[tuple[object, ...]]:
    every = {n.id: n for n in nodes if n.locus not in hidden}
    live = {i: n for i, n in every.items() if n.is_head}
    into: dict[str, dict[str, list[tuple[str, int]]]] = defaultdict(lambda: defaultdict(list))
    out: dict[str, set[str]] = defaultdict(set)
    revised: dict[str, tuple[str, int]] = {}
    for e in edges:
        if e.source not in every or e.target not in every:
            continue
        if e.type == "SUPERSEDES":
            revised[e.source] = (e.target, e.tick)
        elif e.source in live:
            into[e.target][e.type].append((e.source, e.tick))
            if e.type in contested.LEAN_RELATIONS and e.target in live:
                out[e.source].add(e.target)

    def support(of: dict[str, list[tuple[str, int]]]) -> list[str]:
        return list(dict.fromkeys(s for r in contested.SUPPORT_RELATIONS for s, _ in of.get(r, [])))

    found: list[tuple[object, ...]] = []
    for node in live.values():
        if node.status in contested.SETTLED_STATUSES:
            continue
        mine = into.get(node.id, {})
        ch, su, an = mine.get("CHALLENGES", []), mine.get("SUPPORTS", []), mine.get("RESOLVES", [])
        kinds: list[str] = []
        ticks: list[int] = []
        if ch:
            kinds.append(contested.challenge_kind(node.id, revised))
            ticks += [t for _, t in ch]
        if contested.supported_and_challenged(node, len(su), len(ch)):
            kinds.append(contested.SUPPORTED_AND_CHALLENGED)
            ticks += [t for _, t in su]
        if contested.competing_answers(node, len(an)):
            kinds.append(contested.COMPETING_ANSWERS)
            ticks += [t for _, t in an]
        lost: list[str] = []
        replaced = revised.get(node.id)
        if replaced:
            lost = contested.lost_support(set(support(mine)), support(into.get(replaced[0], {})))
            if lost:
                kinds.append(contested.LOST_SUPPORT)
                ticks.append(replaced[1])
        if not kinds:
            continue
        seen, frontier = {node.id}, [node.id]
        for _ in range(LEAN_DEPTH):
            frontier = [m for v in frontier for m in out.get(v, ()) if m not in seen]
            seen.update(frontier)
        shows = contested.CONTESTED_REVISION in kinds or bool(lost)
        found.append(
            (
                node.id,
                kinds,
                [s for s, _ in ch],
                [s for s, _ in su] if contested.SUPPORTED_AND_CHALLENGED in kinds else [],
                [s for s, _ in an] if contested.COMPETING_ANSWERS in kinds else [],
                replaced[0] if shows and replaced else None,
                lost,
                max(ticks),
                len(seen) - 1,
            )
        )
    return sorted(found, key=repr)


@settings(max_examples=300, deadline=None)
@given(graph=graphs(), hidden=st.sampled_from([frozenset(), frozenset({"b"})]))
def test_the_ranking_reads_what_the_plain_reading_reads(
    graph: tuple[list[NodeRecord], list[EdgeRecord]], hidden: frozenset[str]
) -> None:
    nodes, edges = graph
    found = _contests(Outline.of_records(nodes, edges), hidden)
    got = [
        (
            f.node.id,
            f.kinds,
            [p.id for p in f.challengers],
            [p.id for p in f.supporters],
            [p.id for p in f.answers],
            f.revises,
            [p.id for p in f.lost],
            f.latest_tick,
            f.leaning,
        )
        for f in found
    ]
    assert sorted(got, key=repr) == _oracle(nodes, edges, hidden)
    for f in found:  # every side is a live node the entry can name
        for side in [*f.challengers, *f.supporters, *f.answers, *f.lost]:
            assert side.is_head and side.locus not in hidden
        assert f.load_bearing == (f.leaning > 0)


def test_an_outline_without_nodes_contests_nothing_whatever_its_relations() -> None:
    edges = [EdgeRecord("gone", "away", "CHALLENGES", 1)]
    assert _contests(Outline.of_records([], edges), frozenset()) == []
