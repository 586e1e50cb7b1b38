"""The uses a reader may see: standing and tombstones without what its gate withholds.

A link is a use of both its ends (memory/activation.py), so a node linked by a withheld
one has its ``used_at`` moved by a write its reader may not see; and an erasure counts
the nodes it removed on their encounter whatever their class. A reader not granted the
class would learn from either that such a node was there. So both keep, beside the
count every reader saw before, the part of it classified nodes made, by the other
node's stored classification (``phi,pii``: a node of two classes is withheld from a
reader not granted either):

- ``NodeRecord.used_marks``: for each classification, the latest use of this node by a
  link to (or from) a node carrying it; and under the empty key, the latest use
  by anything else as it stood when the latest of those was written. A reader's
  ``used_at`` is the stored one unless that one is a use it may not see, and then the
  latest of the uses it may see.
- ``EncounterRecord.tombstones_marked``: for each classification, how many of the
  encounter's erased nodes carried it. A reader's count leaves out those it would not
  have been shown.

Kept as one short string each (``key=value;...``), written only by the writes that
involve a classified node, and read with the record: a memory that never held one
pays nothing, and a gate restates a record without asking the store anything.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from dataclasses import replace

from kenning_encounter.memory.classification import split
from kenning_encounter.store.records import EncounterRecord, NodeRecord

BARE = ""  # the key of the uses by no classified node


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
    classifications (None: unclassified); None when no link is to a classified node
    (the stored marks then stand: ``used_at`` moves past every mark)."""
    classes = list(others)
    marked = sorted({c for c in classes if c})
    if not marked:
        return None
    marks = parsed(node.used_marks)
    latest = node.used_at or node.created_at
    earlier = {v for k, v in marks.items() if k != BARE}
    # The latest use by nothing classified so far: the stored use, unless that was a
    # marked one (then the bare use the marks kept when it was written).
    bare = latest if latest not in earlier or marks.get(BARE) == latest else marks[BARE]
    if any(not c for c in classes):
        bare = at
    marks.update(dict.fromkeys(marked, at))
    marks[BARE] = bare
    return joined(marks)


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


def tombstones_after(encounter: EncounterRecord | None, erased: Iterable[str | None]) -> str | None:
    """An encounter's ``tombstones_marked`` after an erasure of nodes of these
    classifications (None: unclassified); None when none is classified."""
    counts: dict[str, int] = {}
    for c in erased:
        if c:
            counts[c] = counts.get(c, 0) + 1
    if not counts:
        return None
    held = {k: int(v) for k, v in parsed(encounter.tombstones_marked if encounter else None).items()}
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
