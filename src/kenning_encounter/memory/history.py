"""A chain's whole history: every version of a node, oldest first, and who revised it why.

A chain is the line SUPERSEDES makes (DESIGN §3: one successor, no cycle), so it is read
both ways from the version asked about in one store read (``ReadTx.chain``: a few
statements, whatever the chain's length). An answer is one page of at most
``MAX_VERSIONS``: by default the versions nearest the one asked about (``around``), or the
page before it (``older``) or after it (``newer``). Each says how many versions lie beyond
either end and the call that reads the next page, so a chain of any length is read in order
page by page.

Deletion leaves no version behind: an agent's undo or an operator's ``forget`` removes the
node with its edges, and only the encounter that recorded it keeps a tombstone count. So a
chain may have lost versions without a trace in the chain itself; the answer names the
encounters of its versions that have removed something, which is all the memory holds.

A hidden locus's versions are walked through, never shown: not their text, their ids, nor
the reasons on the edges they stand at.
"""

from __future__ import annotations

from typing import Final

from pydantic import Field

from kenning_encounter.errors import InvalidInput
from kenning_encounter.lazymodel import LazyModel
from kenning_encounter.memory import validate
from kenning_encounter.memory.directors import director_out
from kenning_encounter.memory.models import DirectorOut, shown_session
from kenning_encounter.memory.seen import named
from kenning_encounter.store.port import MAX_CHAIN, ChainLink, GraphStore, ReadTx
from kenning_encounter.store.records import EdgeRecord, EncounterRecord, NodeRecord

MAX_VERSIONS: Final = 100


class Version(LazyModel):
    id: str
    name: str
    description: str
    status: str | None = None
    created_at: str
    tick: int = Field(description="The memory's write order: a later version has a larger tick")
    encounter: str | None = Field(default=None, description="The encounter that recorded it")
    session: str | None = Field(
        default=None, description="The session of that encounter (cut short: not a handle)"
    )
    director: DirectorOut | None = Field(
        default=None, description="Who directed that session: the version's author"
    )
    revision_why: str | None = Field(
        default=None, description="Why this version replaced the one before it"
    )
    revised_at_tick: int | None = Field(
        default=None, description="Tick of that revision, when it was linked after creation"
    )
    head: bool = Field(default=False, description="True for the live version (the chain's head)")


class Tombstones(LazyModel):
    encounter: str
    removed: int = Field(description="Nodes deleted from that encounter, of any chain")


class ChainHistory(LazyModel):
    type: str
    head: str | None = Field(default=None, description="Id of the live version")
    asked: str | None = Field(
        default=None, description="The version the request named, when it is not the head"
    )
    versions: list[Version] = Field(
        description="Every version, oldest first (one page of them: at most 100)"
    )
    cut: str | None = Field(
        default=None,
        description="Sent when the chain is longer than one answer holds: which end was cut "
        "and the call that reads the page past it",
    )
    older_left: int = Field(
        default=0, description="Versions older than the oldest shown: the pages before this"
    )
    newer_left: int = Field(
        default=0, description="Versions newer than the newest shown: the pages after this"
    )
    tombstones: list[Tombstones] = Field(
        default_factory=list[Tombstones],
        description="Encounters of these versions that had nodes deleted: a deleted version "
        "leaves no node and no edge, only this count",
    )


DIRECTIONS: Final = ("around", "older", "newer")


def _page(
    tx: ReadTx, node: NodeRecord, direction: str, hidden: frozenset[str]
) -> tuple[list[ChainLink], list[ChainLink], int, int, list[ChainLink]]:
    """The versions of one page either side of ``node`` (nearest first), how many shown
    versions lie beyond each end, and every link read (one past each end, for the
    reason on the edge out of the last version shown)."""
    # With loci hidden the chain is read whole: their versions are passed over, never
    # counted, so what lies beyond a page can only be counted from all of it.
    reach = MAX_CHAIN if hidden else MAX_VERSIONS + 1
    span = tx.chain(
        node.id,
        older=reach if direction in ("around", "older") else 0,
        newer=reach if direction in ("around", "newer") else 0,
    )

    def shown(links: list[ChainLink]) -> int:
        return sum(1 for x in links if x.node.locus not in hidden)

    room = MAX_VERSIONS if direction != "around" else MAX_VERSIONS - 1
    take_old = room if direction == "older" else 0
    take_new = room if direction == "newer" else 0
    if direction == "around":
        # Half the room behind the version asked about, the rest ahead; a short side
        # lends what it leaves to the other.
        take_old = min(shown(span.older), room // 2)
        take_new = min(shown(span.newer), room - take_old)
        take_old = min(shown(span.older), room - take_new)

    def cut(links: list[ChainLink], take: int, beyond: int) -> tuple[list[ChainLink], int]:
        kept: list[ChainLink] = []
        count = 0
        for x in links:
            if count == take:
                break
            kept.append(x)
            count += x.node.locus not in hidden
        return kept, shown(links[len(kept) :]) + beyond

    older, older_left = cut(span.older, take_old, span.older_left)
    newer, newer_left = cut(span.newer, take_new, span.newer_left)
    return older, newer, older_left, newer_left, [*span.older, *span.newer]


def _cut_note(shown: list[Version], older_left: int, newer_left: int) -> str | None:
    if not shown:
        return None
    ends: list[str] = []
    if older_left:
        ends.append(
            f"older versions left out ({older_left}): ask "
            f"chain_history(node={shown[0].id!r}, direction='older') for them"
        )
    if newer_left:
        ends.append(
            f"newer versions left out ({newer_left}): ask "
            f"chain_history(node={shown[-1].id!r}, direction='newer') for them"
        )
    return f"showing {len(shown)} versions; " + "; ".join(ends) if ends else None


def chain_history(
    store: GraphStore,
    ref: str,
    *,
    direction: str = "around",
    hidden_loci: frozenset[str] = frozenset(),
) -> ChainHistory:
    target = validate.text(ref, "node", required=True, limit=validate.MAX_NAME)
    if direction not in DIRECTIONS:
        raise InvalidInput(
            "direction",
            "must be 'around' (the version named and those either side), 'older' (the "
            "versions before it) or 'newer' (the versions after it)",
            value=direction,
        )

    def work(tx: ReadTx) -> ChainHistory:
        node = named(tx, target, "node", hidden_loci)
        older, newer, older_left, newer_left, read = _page(tx, node, direction, hidden_loci)
        itself = [node] if direction == "around" else []
        chain = [*(x.node for x in reversed(older)), *itself, *(x.node for x in newer)]
        known = {node.id: node, **{x.node.id: x.node for x in read}}
        edges = [x.edge for x in read]
        encounters = tx.get_encounters(
            sorted(
                {n.encounter for n in chain if n.encounter}
                | {e.encounter for e in edges if e.encounter}
            )
        )
        found = _history(
            chain, node, known, edges, encounters, hidden_loci, (older_left, newer_left)
        )
        loci = {n.id: n.locus for n in chain}
        held = tx.directors_of([locus for locus in loci.values() if locus])
        for v in found.versions:
            locus = loci.get(v.id)
            v.director = director_out(held.get(locus)) if locus else None
        return found

    return store.read(work)


def _history(
    chain: list[NodeRecord],
    asked: NodeRecord,
    known: dict[str, NodeRecord],
    edges: list[EdgeRecord],
    encounters: dict[str, EncounterRecord],
    hidden: frozenset[str],
    left: tuple[int, int],
) -> ChainHistory:
    def seen(locus: str | None) -> bool:
        return locus not in hidden

    def authored_seen(edge: EdgeRecord) -> bool:
        enc = encounters.get(edge.encounter) if edge.encounter else None
        return enc is None or seen(enc.locus)

    by_id = known
    # The edge by which each version revised the one before it.
    revising = {
        e.source: e
        for e in edges
        if e.type == "SUPERSEDES" and e.source in by_id and e.target in by_id
    }
    last = chain[-1] if chain else None
    head = last if last is not None and last.is_head else None  # only a head shown is named
    versions: list[Version] = []
    for n in chain:
        if not seen(n.locus):
            continue
        edge = revising.get(n.id)
        told = edge is not None and seen(by_id[edge.target].locus) and authored_seen(edge)
        versions.append(
            Version(
                id=n.id,
                name=n.name,
                description=n.description,
                status=n.status,
                created_at=n.created_at,
                tick=n.tick,
                encounter=n.encounter,
                session=shown_session(n.locus, None) if n.locus else None,
                revision_why=(edge.revision_why or None) if told and edge else None,
                revised_at_tick=edge.tick if told and edge and edge.tick != n.tick else None,
                head=n.is_head,
            )
        )
    marks = sorted(
        {
            (e.name, e.tombstones)
            for n in chain
            if seen(n.locus) and n.encounter
            for e in [encounters.get(n.encounter)]
            if e is not None and e.tombstones
        }
    )
    return ChainHistory(
        type=asked.type,
        head=head.id if head is not None and seen(head.locus) else None,
        asked=asked.id if asked is not head else None,
        versions=versions,
        cut=_cut_note(versions, *left),
        older_left=left[0],
        newer_left=left[1],
        tombstones=[Tombstones(encounter=name, removed=count) for name, count in marks],
    )
