"""Plain records the store hands to the services: no engine types leak past the port."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any, Final

# What a version's ``superseded_by`` holds, for a reader not granted its successor's class
# (memory/gates.py): it was revised, and by what is not said. No id has this form.
WITHHELD_SUCCESSOR: Final = "withheld"
# The same for a reader face hiding loci, when every version after it was written in a
# hidden session (memory/reads.py ``shown_successors``): revised, but not in a session it
# may see. Neither is an id: no id has either form.
HIDDEN_SUCCESSOR: Final = "hidden"


@dataclass(frozen=True, slots=True)
class NodeRecord:
    """An authored node as the services see it."""

    id: str
    type: str
    name: str
    description: str
    tick: int
    created_at: str  # ISO-8601 UTC
    status: str | None = None
    props: dict[str, Any] = field(default_factory=dict)  # type-specific properties
    encounter: str | None = None  # name of the encounter that recorded it
    locus: str | None = None  # session id of that encounter's locus
    superseded_by: str | None = None  # id of the successor, when not a head
    ord: int = 0  # place within the write that created it: (tick, ord) is the creation order
    # Mirrors of process edges (memory/activation.py): the latest use (a link, a
    # consultation, a confirmation; None: only its creation) and the pin in force.
    used_at: str | None = None
    pinned: str | None = None  # the encounter that pinned it, while the pin stands
    # The latest use by a link to a classified node, by the other end's classification,
    # and the latest other use then (store/uses.py): what lets a reader not granted a
    # class see the ``used_at`` its own view gives. None: no classified node linked it.
    used_marks: str | None = None
    # The store's own tokens of name and description, space-separated, when it keeps them
    # (Neo4j's ``_terms``, made by the one tokenizer): the lexical path reads them
    # instead of tokenizing the text again. Derived, so not part of what the record is.
    terms: str | None = field(default=None, compare=False, repr=False)

    @property
    def is_head(self) -> bool:
        return self.superseded_by is None

    def outline(self) -> NodeRecord:
        """This record without its words: no description, and of its properties only the
        classification (the read gate's question). What whole-graph analytics read."""
        mark = self.props.get("classification")
        return self._copy(self.tick, "", {} if mark is None else {"classification": mark})

    def _copy(self, tick: int, description: str, props: dict[str, Any]) -> NodeRecord:
        return NodeRecord(
            self.id,
            self.type,
            self.name,
            description,
            tick,
            self.created_at,
            self.status,
            props,
            self.encounter,
            self.locus,
            self.superseded_by,
            self.ord,
            self.used_at,
            self.pinned,
            self.used_marks,
        )


@dataclass(frozen=True, slots=True)
class EdgeRecord:
    """An authored relation."""

    source: str  # node id
    target: str  # node id
    type: str
    tick: int
    encounter: str | None = None
    revision_why: str | None = None


@dataclass(frozen=True, slots=True)
class EncounterRecord:
    name: str
    locus: str
    purpose: str
    opened_tick: int
    opened_at: str
    sealed_tick: int | None = None
    sealed_at: str | None = None
    summary: str | None = None
    dissolved_at: str | None = None
    last_activity_at: str | None = None
    tombstones: int = 0
    # The tick of the write that dissolved it; None on a store from before dissolutions
    # kept theirs (memory/asof.py then places the dissolution by its time).
    dissolved_tick: int | None = None
    # Of ``tombstones``, how many carried each classification (store/uses.py): what a
    # reader not granted a class leaves out of the count. None: no classified one.
    tombstones_marked: str | None = None

    @property
    def is_open(self) -> bool:
        return self.sealed_at is None and self.dissolved_at is None


_RECORD_OVERHEAD = 400  # a record, its dict slot and its short strings, roughly


def approx_bytes(node: NodeRecord) -> int:
    """Roughly what a record holds in memory: what bounds the node caches."""
    held = len(node.description) + len(node.terms or "")
    return _RECORD_OVERHEAD + held + sum(len(str(v)) for v in node.props.values())
