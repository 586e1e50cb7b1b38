"""The uses a reader may see: standing and tombstones without what its gate withholds.

A link is a use of both its ends (memory/activation.py), so a node linked by a withheld
one has its ``used_at`` moved by a write its reader may not see; and an erasure counts
the nodes it removed on their encounter whatever their class. A reader not granted the
class would learn from either that such a node was there. So both keep, beside the
count every reader saw before, the part of it classified nodes made, by the other
node's stored classification (``phi,pii``: a node of two classes is withheld from a
reader not granted either):

- ``NodeRecord.used_marks``, held only while the node's latest use is a link to (or
  from) classified nodes: for each classification, the latest such use since the last
  use by anything else, and under the empty key that last other use. Any other use
  (a link to an unclassified node, a consultation, a confirmation, a pin) clears them,
  in the statement that writes it. A reader's ``used_at`` is the stored one unless that
  is a use it may not see, and then the latest of the uses it may see.
- ``EncounterRecord.tombstones_marked``: for each classification, how many of the
  encounter's erased nodes carried it. A reader's count leaves out those it would not
  have been shown.

Kept as one short string each (``key=value;...``), written by one more statement only
in the writes that link or erase a classified node, and read with the record: a memory
that never held one pays nothing, and a gate restates a record without asking the
store anything. read_cypher reads what is stored, so a node whose marks name a class
its caller may not see is out of that caller's reach there (Neo4j: ``KenningUsed_``
labels, store/neo4j/classified.py; embedded: the sandbox's copy leaves it out).
A dump carries both (memory/dump_format.py, version 4), an export not granted a class
without the marks naming it (``carried``), and an import stores them as a live write
leaves them, labels included.
"""

from __future__ import annotations

from bisect import bisect_right
from collections.abc import Iterable, Mapping
from dataclasses import replace
from typing import TYPE_CHECKING, Final, TypeVar

from kenning_encounter.store.records import EncounterRecord, NodeRecord

if TYPE_CHECKING:
    from kenning_encounter.store.port import LociUses, UseRecord

BARE = ""  # the key of the uses by no classified node
PINNED: Final = "PINNED"


def split(stored: object) -> frozenset[str]:
    """The classes a stored classification names (memory/classification.py's form)."""
    if not isinstance(stored, str) or not stored:
        return frozenset()
    return frozenset(p for p in stored.split(",") if p)


def parsed(text: str | None) -> dict[str, str]:
    """A stored ``key=value;...`` as a map (empty for none)."""
    if not text:
        return {}
    out: dict[str, str] = {}
    for part in text.split(";"):
        key, _, value = part.partition("=")
        out[key] = value
    return out


def joined(marks: Mapping[str, object]) -> str:
    return ";".join(f"{k}={v}" for k, v in sorted(marks.items()))


def after_links(node: NodeRecord, others: Iterable[str | None], at: str) -> str | None:
    """``node``'s ``used_marks`` after one write linked it, at ``at``, to nodes of these
    classifications (None: unclassified). None when one of them is unclassified, or none
    is classified: the write's use is then one every reader sees, and the statement that
    links clears the marks (a later use stands before every marked one)."""
    classes = list(others)
    if not classes or any(not c for c in classes):
        return None
    marks = parsed(node.used_marks)
    # Marks stand only while the node's latest use is a marked one: their bare use is
    # then the latest use by nothing classified, and without them it is the stored one.
    bare = marks.get(BARE) if marks else (node.used_at or node.created_at)
    marks.update(dict.fromkeys(sorted({c for c in classes if c}), at))
    marks[BARE] = bare or node.created_at
    return joined(marks)


def classes_of(marks: str | None) -> frozenset[str]:
    """Every class a node's marks name: a caller not granted one of them has read_cypher
    keep the node out of reach (its stored ``used_at`` and marks would tell)."""
    return frozenset(c for k in parsed(marks) for c in split(k))


def used_labels(marks: str | None) -> list[str]:
    """Neo4j's labels for ``classes_of`` (store/neo4j/classified.py: ``KenningUsed_``)."""
    from kenning_encounter.store.neo4j.classified import used_label

    return [used_label(c) for c in sorted(classes_of(marks))]


def used_at_seen(node: NodeRecord, withheld: frozenset[str]) -> str | None:
    """The ``used_at`` a reader withholding ``withheld`` sees: the stored one unless
    that is a use by a node it may not see, then the latest of the uses it may see
    (None: its creation alone)."""
    marks = parsed(node.used_marks)
    used = node.used_at
    if not marks or used is None:
        return used
    hidden = {v for k, v in marks.items() if k != BARE and split(k) & withheld}
    shown = {v for k, v in marks.items() if k == BARE or not split(k) & withheld}
    if used not in hidden or used in shown:
        return used
    latest = max(shown, default=None)
    return latest if latest is not None and latest > node.created_at else None


def restated(node: NodeRecord, withheld: frozenset[str]) -> NodeRecord:
    """``node`` with the ``used_at`` the reader sees, and none of the marks."""
    if node.used_marks is None:
        return node
    return replace(node, used_at=used_at_seen(node, withheld), used_marks=None)


def carried(node: NodeRecord, withheld: frozenset[str]) -> NodeRecord:
    """``node`` as a dump not granted ``withheld`` carries it (memory/dump.py): the
    ``used_at`` its reader sees, and the marks of the classes it may see, which the
    memory it is imported into gates as this one does (a reader there not granted such a
    class sees what one here sees). Marks naming no class left are none."""
    if node.used_marks is None:
        return node
    kept = {
        k: v for k, v in parsed(node.used_marks).items() if k == BARE or not split(k) & withheld
    }
    marks = joined(kept) if any(k != BARE for k in kept) else None
    return replace(node, used_at=used_at_seen(node, withheld), used_marks=marks)


def tombstones_after(encounter: EncounterRecord | None, erased: Iterable[str | None]) -> str | None:
    """An encounter's ``tombstones_marked`` after an erasure of nodes of these
    classifications (None: unclassified); None when none is classified."""
    counts: dict[str, int] = {}
    for c in erased:
        if c:
            counts[c] = counts.get(c, 0) + 1
    if not counts:
        return None
    held = {
        k: int(v) for k, v in parsed(encounter.tombstones_marked if encounter else None).items()
    }
    for k, n in counts.items():
        held[k] = held.get(k, 0) + n
    return joined(held)


def tombstones_seen(encounter: EncounterRecord, withheld: frozenset[str]) -> EncounterRecord:
    """``encounter`` with the tombstones a reader withholding ``withheld`` could have
    seen, and none of the marks."""
    if encounter.tombstones_marked is None:
        return encounter
    unseen = sum(
        int(n) for k, n in parsed(encounter.tombstones_marked).items() if split(k) & withheld
    )
    return replace(
        encounter, tombstones=max(encounter.tombstones - unseen, 0), tombstones_marked=None
    )


def tombstones_carried(encounter: EncounterRecord, withheld: frozenset[str]) -> EncounterRecord:
    """``encounter`` as a dump not granted ``withheld`` carries it: the tombstones its
    reader could have seen, and the marks of the classes it may see (as ``carried``)."""
    if encounter.tombstones_marked is None:
        return encounter
    kept = {k: n for k, n in parsed(encounter.tombstones_marked).items() if not split(k) & withheld}
    seen = tombstones_seen(encounter, withheld)
    return replace(seen, tombstones_marked=joined(kept) if kept else None)


# --- the uses of sessions a reader face hides (memory/gates.py ``HidingReads``) --------
# A reader face that hides sessions (``--hide-loci``) leaves their nodes out; a node it
# shows may still have been linked, confirmed, consulted or pinned by one of them, and its
# stored ``used_at`` and ``pinned`` say so. Nothing on the record tells such a use apart,
# so the reader reads the node's uses (``UseReads.node_uses``) and restates its standing
# from the ones it may see: a session it shows, and a link to a node of a class it is
# granted. Only a node whose standing the hidden sessions could have moved is asked
# about (``Reach``), and only where sessions are hidden: other readers pay nothing.


_OPEN = "\uffff"  # the end of an encounter still open: after every time
Instant = TypeVar("Instant", str, float)


def merged_spans(spans: Iterable[tuple[Instant, Instant]]) -> list[tuple[Instant, Instant]]:
    """Overlapping and touching spans made one, sorted by start (an end before its start
    is taken as the start)."""
    out: list[tuple[Instant, Instant]] = []
    for start, end in sorted((a, max(a, b)) for a, b in spans):
        if out and start <= out[-1][1]:
            out[-1] = (out[-1][0], max(out[-1][1], end))
        else:
            out.append((start, end))
    return out


class Reach:
    """Which nodes' standing the hidden sessions could have moved (``LociUses``): one
    they pinned or unpinned, one pinned now, and one whose latest use falls while one of
    their encounters was open (a use is written only then, at the write's time). Any other
    node's stored standing is the shown sessions' own."""

    def __init__(self, found: LociUses) -> None:
        merged = merged_spans((a, b or _OPEN) for a, b in found.spans)
        self._starts = [a for a, _ in merged]
        self._ends = [b for _, b in merged]
        self._pinned = found.pinned
        self.encounters = found.encounters  # theirs: what they wrote is theirs too

    def could_move(self, node: NodeRecord) -> bool:
        if node.pinned is not None or node.id in self._pinned:
            return True
        return node.used_at is not None and self.during(node.used_at)

    def during(self, at: str) -> bool:
        """Whether ``at`` falls while one of the hidden sessions' encounters was open."""
        i = bisect_right(self._starts, at) - 1
        return i >= 0 and at <= self._ends[i]


def hiding_restated(
    node: NodeRecord,
    found: Iterable[UseRecord],
    hidden: frozenset[str],
    withheld: frozenset[str],
    reach: Reach | None = None,
) -> NodeRecord:
    """``node`` with the standing the uses shown to a reader hiding ``hidden`` (and
    withholding ``withheld``) give it: as stored where no hidden session used it.

    A stored ``used_at`` no use shown accounts for, that falls while a hidden session's
    encounter was open (``reach``), is taken for that session's too: its edge may be gone
    since (a node it linked, then deleted), and the time alone would tell of it."""
    mine = [u for u in found if u.node == node.id]
    unseen = [u for u in mine if u.locus in hidden]

    def shown(u: UseRecord) -> bool:
        return u.locus not in hidden and not (u.other and split(u.other) & withheld)

    seen = [u for u in mine if shown(u)]
    used, marks = node.used_at, node.used_marks
    hidden_at = {u.at for u in unseen}
    shown_at = {u.at for u in seen if u.at is not None}
    if reach is not None and used is not None and used not in shown_at and reach.during(used):
        hidden_at.add(used)
    if not unseen and used not in hidden_at:
        return node
    if used is not None and used in hidden_at and used not in shown_at:
        latest = max(shown_at, default=None)
        used = latest if latest is not None and latest > node.created_at else None
        marks = None  # worked out from the uses shown, classes included
    pinned = node.pinned
    if any(u.kind == PINNED for u in unseen):
        pins = sorted((u for u in seen if u.kind == PINNED), key=lambda u: (u.tick, u.at or ""))
        last = pins[-1] if pins else None
        pinned = last.encounter if last is not None and last.state == "pinned" else None
    if (used, marks, pinned) == (node.used_at, node.used_marks, node.pinned):
        return node
    return replace(node, used_at=used, used_marks=marks, pinned=pinned)
