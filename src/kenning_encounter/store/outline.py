"""The authored graph in outline: nodes without their words, relations as columns.

Whole-graph analytics (orient, its page, the as-of panel) read every node and every
relation and need of a relation only its ends, its type and its tick. At a million
nodes three million relations made as records were most of such a read (13 s of
orient's 46 s, and a quarter of its memory); as columns of machine integers, read a
page at a time straight from the store, they are a second or two.

A relation's ends are positions in the outline's own node list, so the columns mean
nothing apart from that list: filtering nodes (the read gate, hidden loci) goes
through ``Outline.keeping``, which moves both together.
"""

from __future__ import annotations

from array import array
from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass, field, replace
from typing import TYPE_CHECKING, Any, Final

from kenning_encounter.store.records import (
    HIDDEN_SUCCESSOR,
    WITHHELD_SUCCESSOR,
    EdgeRecord,
    NodeRecord,
)

if TYPE_CHECKING:
    import numpy as np
    import numpy.typing as npt

OUTSIDE = -1  # an end that is not in the node list


# Ends and type codes in 32 bits (a million-node memory's three million relations: 36
# MiB less than in 64), ticks in 64.
PLACES: Final = "i"
TICKS: Final = "q"


def _places(values: Iterable[int] = ()) -> array[int]:
    return array(PLACES, values)


def _ticks(values: Iterable[int] = ()) -> array[int]:
    return array(TICKS, values)


@dataclass(frozen=True, slots=True, eq=False)
class Relations:
    """Relation ``j`` runs from node ``source[j]`` to node ``target[j]`` (positions in
    a node list held beside it, ``OUTSIDE`` for an end not in it), of type
    ``names[kind[j]]``, made at ``tick[j]``."""

    source: array[int] = field(default_factory=_places)
    target: array[int] = field(default_factory=_places)
    kind: array[int] = field(default_factory=_places)
    tick: array[int] = field(default_factory=_ticks)
    names: tuple[str, ...] = ()

    def __len__(self) -> int:
        return len(self.source)

    @classmethod
    def of_records(cls, nodes: Sequence[NodeRecord], edges: Sequence[EdgeRecord]) -> Relations:
        """Records as columns, their ends looked up among ``nodes`` by id."""
        at = {n.id: i for i, n in enumerate(nodes)}
        names = tuple(sorted({e.type for e in edges}))
        code = {name: i for i, name in enumerate(names)}
        return cls(
            _places(at.get(e.source, OUTSIDE) for e in edges),
            _places(at.get(e.target, OUTSIDE) for e in edges),
            _places(code[e.type] for e in edges),
            _ticks(e.tick for e in edges),
            names,
        )

    def records(self, nodes: Sequence[NodeRecord]) -> list[EdgeRecord]:
        """The relations as records (their ends' ids from ``nodes``; encounter and
        revision reason are not kept in columns). Relations with an end outside are
        left out."""
        return [
            EdgeRecord(nodes[s].id, nodes[t].id, self.names[k], tick)
            for s, t, k, tick in zip(self.source, self.target, self.kind, self.tick, strict=True)
            if s != OUTSIDE and t != OUTSIDE
        ]

    def last_tick(self) -> int:
        return max(self.tick, default=0)


class RelationColumns:
    """Relations gathered in pieces (a page, a pair of node types) into one ``Relations``."""

    def __init__(self) -> None:
        self._source = _places()
        self._target = _places()
        self._kind = _places()
        self._tick = _ticks()
        self._names: dict[str, int] = {}

    def add(
        self, rel: str, sources: Iterable[int], targets: Iterable[int], ticks: Iterable[int]
    ) -> None:
        before = len(self._source)
        self._source.extend(sources)
        self._target.extend(targets)
        self._tick.extend(ticks)
        added = len(self._source) - before
        if len(self._target) != len(self._source) or len(self._tick) != len(self._source):
            raise ValueError("a relation's columns must be of one length")
        code = self._names.setdefault(rel, len(self._names))
        self._kind.extend([code] * added)

    def add_placed(
        self,
        rel: str,
        sources: npt.NDArray[np.signedinteger[Any]],
        targets: npt.NDArray[np.signedinteger[Any]],
        ticks: Iterable[int],
    ) -> None:
        """``add`` with the ends as numpy arrays of places: a page's ends are looked up
        by row offset in one step each, not one element at a time."""
        self.add(rel, _of_numpy(sources, PLACES), _of_numpy(targets, PLACES), ticks)

    def relations(self) -> Relations:
        return Relations(self._source, self._target, self._kind, self._tick, tuple(self._names))


@dataclass(frozen=True, slots=True, eq=False)
class Outline:
    """Every authored node as ``NodeRecord.outline`` gives it, and every authored
    relation between them as columns over this node list."""

    nodes: list[NodeRecord] = field(default_factory=list[NodeRecord])
    relations: Relations = field(default_factory=Relations)

    @classmethod
    def of_records(cls, nodes: Sequence[NodeRecord], edges: Sequence[EdgeRecord]) -> Outline:
        return cls(list(nodes), Relations.of_records(nodes, edges))

    def edge_records(self) -> list[EdgeRecord]:
        return self.relations.records(self.nodes)

    def keeping(self, keep: Callable[[NodeRecord], bool]) -> Outline:
        """The nodes ``keep`` accepts and the relations between them; the outline itself
        when it keeps every node."""
        kept = [keep(n) for n in self.nodes]
        if all(kept):
            return self
        import numpy as np  # only when something is filtered out: it costs a start-up

        mask = np.asarray(kept, dtype=np.bool_)
        moved = np.where(mask, np.cumsum(mask, dtype=np.int64) - 1, OUTSIDE)
        rel = self.relations
        source, target = as_numpy(rel.source), as_numpy(rel.target)
        inside = (source != OUTSIDE) & (target != OUTSIDE)
        inside[inside] = mask[source[inside]] & mask[target[inside]]
        return Outline(
            [n for n, k in zip(self.nodes, kept, strict=True) if k],
            Relations(
                _of_numpy(moved[source[inside]], PLACES),
                _of_numpy(moved[target[inside]], PLACES),
                _of_numpy(as_numpy(rel.kind)[inside], PLACES),
                _of_numpy(as_numpy(rel.tick)[inside], TICKS),
                rel.names,
            ),
        )

    def without_relations(self, gone: Sequence[EdgeRecord]) -> Outline:
        """The outline without the relations ``gone`` names (by ends and type): the nodes
        are the same list."""
        import numpy as np

        at = {n.id: i for i, n in enumerate(self.nodes)}
        rel = self.relations
        code = {name: i for i, name in enumerate(rel.names)}
        width, kinds = max(len(self.nodes), 1), max(len(rel.names), 1)

        def key(s: Any, t: Any, k: Any) -> Any:
            return (s * width + t) * kinds + k

        named = [
            key(at[e.source], at[e.target], code[e.type])
            for e in gone
            if e.source in at and e.target in at and e.type in code
        ]
        if not named:
            return self
        source = as_numpy(rel.source).astype(np.int64)
        target = as_numpy(rel.target).astype(np.int64)
        kind = as_numpy(rel.kind).astype(np.int64)
        keep = ~np.isin(key(source, target, kind), np.asarray(named, dtype=np.int64))
        keep |= (source == OUTSIDE) | (target == OUTSIDE)  # an end outside names none
        return Outline(
            self.nodes,
            Relations(
                _of_numpy(source[keep], PLACES),
                _of_numpy(target[keep], PLACES),
                _of_numpy(kind[keep], PLACES),
                _of_numpy(as_numpy(rel.tick)[keep], TICKS),
                rel.names,
            ),
        )

    def without_loci(self, hidden: frozenset[str]) -> Outline:
        """The outline a reader hiding the sessions ``hidden`` sees: their nodes gone with
        their relations, and a chain walked through a hidden version as the reads walk it
        (memory/reads.py ``shown_successors``): a version it revised is revised by the next
        version kept, or, none being kept, by ``HIDDEN_SUCCESSOR`` (no head: the projection
        folds it into nothing, as a version revised by a withheld class)."""
        outline = self.keeping(lambda n: n.locus not in hidden) if hidden else self
        if outline is self:
            return self
        kept = {n.id for n in outline.nodes}
        after = {n.id: n.superseded_by for n in self.nodes if n.superseded_by is not None}

        def successor(node: NodeRecord) -> str | None:
            found = node.superseded_by
            seen: set[str] = set()
            while found is not None and found not in kept and found not in seen:
                seen.add(found)
                found = after.get(found)
            return found if found in kept else HIDDEN_SUCCESSOR

        nodes = [
            n
            if n.superseded_by in (None, WITHHELD_SUCCESSOR) or n.superseded_by in kept
            else replace(n, superseded_by=successor(n))
            for n in outline.nodes
        ]
        return Outline(nodes, outline.relations)


def as_numpy(column: array[int]) -> npt.NDArray[np.signedinteger[Any]]:
    """A column seen as a numpy array of its own width, without a copy."""
    import numpy as np

    return (
        np.frombuffer(column, dtype=np.dtype(column.typecode))
        if len(column)
        else np.zeros(0, dtype=np.dtype(column.typecode))
    )


def _of_numpy(values: npt.NDArray[np.signedinteger[Any]], typecode: str) -> array[int]:
    column = array(typecode)
    column.frombytes(values.astype(typecode, copy=False).tobytes())
    return column
