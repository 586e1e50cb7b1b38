"""A chain's whole history: every version of a node, oldest first, and who revised it why.

A chain is the line SUPERSEDES makes (DESIGN §3: one successor, no cycle), so it is walked
one link at a time both ways from the version asked about. The walk is bounded: past
``MAX_VERSIONS`` it stops, keeps the versions nearest the one asked about, and says which
end was cut and where to ask again.

Deletion leaves no version behind: an agent's undo or an operator's ``forget`` removes the
node with its edges, and only the encounter that recorded it keeps a tombstone count. So a
chain may have lost versions without a trace in the chain itself; the answer names the
encounters of its versions that have removed something, which is all the memory holds.

A hidden locus's versions are walked through, never shown: not their text, their ids, nor
the reasons on the edges they stand at.
"""

from __future__ import annotations

from typing import Final

from pydantic import BaseModel, Field

from kenning_encounter.errors import NotFound
from kenning_encounter.memory import validate
from kenning_encounter.memory.directors import director_out
from kenning_encounter.memory.models import DirectorOut, shown_session
from kenning_encounter.memory.writes import resolve
from kenning_encounter.store.port import GraphStore, ReadTx
from kenning_encounter.store.records import EdgeRecord, EncounterRecord, NodeRecord

MAX_VERSIONS: Final = 100


class Version(BaseModel):
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


class Tombstones(BaseModel):
    encounter: str
    removed: int = Field(description="Nodes deleted from that encounter, of any chain")


class ChainHistory(BaseModel):
    type: str
    head: str | None = Field(default=None, description="Id of the live version")
    asked: str | None = Field(
        default=None, description="The version the request named, when it is not the head"
    )
    versions: list[Version] = Field(description="Every version, oldest first")
    cut: str | None = Field(
        default=None,
        description="Sent when the chain is longer than one answer holds: which end was cut "
        "and the id to ask from to see past it",
    )
    tombstones: list[Tombstones] = Field(
        default_factory=list[Tombstones],
        description="Encounters of these versions that had nodes deleted: a deleted version "
        "leaves no node and no edge, only this count",
    )


def _back(tx: ReadTx, node: NodeRecord, limit: int) -> tuple[list[NodeRecord], bool]:
    """Older versions, nearest first; True when more were left unwalked."""
    older: list[NodeRecord] = []
    current = node
    while True:
        preds = tx.predecessors(current.id)
        pred = tx.get_node(preds[0][0]) if preds else None
        if pred is None:
            return older, False
        if len(older) == limit:
            return older, True
        older.append(pred)
        current = pred


def _forward(tx: ReadTx, node: NodeRecord, limit: int) -> tuple[list[NodeRecord], bool]:
    """Newer versions, nearest first; True when more were left unwalked."""
    newer: list[NodeRecord] = []
    current = node
    while current.superseded_by is not None:
        nxt = tx.get_node(current.superseded_by)
        if nxt is None:
            break
        if len(newer) == limit:
            return newer, True
        newer.append(nxt)
        current = nxt
    return newer, False


def _cut_note(shown: list[Version], older_cut: bool, newer_cut: bool) -> str | None:
    ends: list[str] = []
    if older_cut:
        ends.append(f"older versions left out: ask chain_history({shown[0].id!r}) for them")
    if newer_cut:
        ends.append(f"newer versions left out: ask chain_history({shown[-1].id!r}) for them")
    return f"showing {len(shown)} versions; " + "; ".join(ends) if ends else None


def chain_history(
    store: GraphStore, ref: str, *, hidden_loci: frozenset[str] = frozenset()
) -> ChainHistory:
    target = validate.text(ref, "node", required=True, limit=validate.MAX_NAME)

    def work(tx: ReadTx) -> ChainHistory:
        node = resolve(tx, target, "node")
        if node.locus in hidden_loci:
            raise NotFound("node", target, "node must name or id an existing node; try search")
        # Half the room behind the version asked about, the rest ahead; a short side
        # lends what it leaves to the other.
        older, older_cut = _back(tx, node, (MAX_VERSIONS - 1) // 2)
        newer, newer_cut = _forward(tx, node, MAX_VERSIONS - 1 - len(older))
        if older_cut and not newer_cut:
            more, older_cut = _back(tx, older[-1], MAX_VERSIONS - 1 - len(older) - len(newer))
            older += more
        chain = [*reversed(older), node, *newer]
        edges = tx.neighbourhood([n.id for n in chain], ["SUPERSEDES"]).edges
        encounters = tx.get_encounters(
            sorted(
                {n.encounter for n in chain if n.encounter}
                | {e.encounter for e in edges if e.encounter}
            )
        )
        found = _history(chain, node, edges, encounters, hidden_loci, (older_cut, newer_cut))
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
    edges: list[EdgeRecord],
    encounters: dict[str, EncounterRecord],
    hidden: frozenset[str],
    cuts: tuple[bool, bool],
) -> ChainHistory:
    def seen(locus: str | None) -> bool:
        return locus not in hidden

    def authored_seen(edge: EdgeRecord) -> bool:
        enc = encounters.get(edge.encounter) if edge.encounter else None
        return enc is None or seen(enc.locus)

    by_id = {n.id: n for n in chain}
    # The edge by which each version revised the one before it.
    revising = {
        e.source: e
        for e in edges
        if e.type == "SUPERSEDES" and e.source in by_id and e.target in by_id
    }
    last = chain[-1]
    head = last if last.is_head else None  # a cut newer end leaves no head shown
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
        cut=_cut_note(versions, *cuts),
        tombstones=[Tombstones(encounter=name, removed=count) for name, count in marks],
    )
