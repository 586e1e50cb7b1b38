"""``kenning-encounter export``: a whole memory as a stream of lines (dump_format.py).

The memory is read in pages, each its own read transaction, so neither the store
nor this process ever holds it whole: persons, loci and encounters by id, the spine
by encounter, the nodes of every type merged into one creation order (tick, ord, id),
the relations, claims, confirmations, consultations and pins of each type's nodes by
id, the record of the past by kind and key. Pages are not one snapshot, so the
clock and the counts are read again at the end: if a write landed meanwhile the
export fails (stop the servers writing to the memory and export again) rather
than hand over a dump that no single moment of the memory matches.
"""

from __future__ import annotations

import hashlib
import heapq
from collections.abc import Callable, Iterator
from dataclasses import dataclass, replace
from datetime import UTC, datetime
from typing import BinaryIO, Final, TypeVar

from kenning_encounter.errors import Conflict
from kenning_encounter.memory import dump_format as fmt
from kenning_encounter.memory.classification import split
from kenning_encounter.store import uses
from kenning_encounter.store.persons import ClaimRecord
from kenning_encounter.store.port import (
    PAST_KINDS,
    ConfirmationRecord,
    ConsultationRecord,
    DumpedEdge,
    DumpedEndedEdge,
    DumpedEndedNode,
    DumpedMove,
    DumpedNode,
    DumpTx,
    GraphStore,
    PinRecord,
    bulk_read,
)
from kenning_encounter.store.records import EncounterRecord
from kenning_encounter.vocabulary import AUTHORED_NODE_TYPES

PAGE: Final = 5_000
T = TypeVar("T")
# (records done, records in all): called after every page.
Progress = Callable[[int, int], None]


@dataclass(frozen=True, slots=True)
class Exported:
    clock: int
    counts: dict[str, int]
    digest: str
    held_back: int = 0  # classified nodes left out (export's withheld classes)


def _utc_now() -> str:
    return datetime.now(UTC).isoformat(timespec="milliseconds").replace("+00:00", "Z")


def _state(store: GraphStore) -> tuple[int, dict[str, int]]:
    return bulk_read(store, lambda tx: (tx.clock(), tx.dump_counts()))


def _nodes_of(store: GraphStore, label: str, page: int) -> Iterator[DumpedNode]:
    after: tuple[int, int, str] | None = None
    while True:
        key = after
        batch = bulk_read(store, lambda tx, k=key: tx.dump_nodes(label, k, page))
        yield from batch
        if len(batch) < page:
            return
        last = batch[-1].node
        after = (last.tick, last.ord, last.id)


def _keyed(
    store: GraphStore, fetch: Callable[[DumpTx, str], list[T]], key: Callable[[T], str], page: int
) -> Iterator[T]:
    """Every row ``fetch`` pages by a key, one read per page."""
    after = ""
    while True:
        rows = bulk_read(store, lambda tx, k=after: fetch(tx, k))
        yield from rows
        if len(rows) < page:
            return
        after = key(rows[-1])


def _per_node(
    store: GraphStore, fetch: Callable[[DumpTx, str, list[str]], list[T]], page: int
) -> Iterator[T]:
    """``fetch`` over the ids of each type's nodes, a page of ids at a time."""
    for label in AUTHORED_NODE_TYPES:
        after = ""
        while True:
            key = after
            ids = bulk_read(store, lambda tx, t=label, k=key: tx.dump_node_ids(t, k, page))
            if ids:
                yield from bulk_read(store, lambda tx, t=label, i=ids: fetch(tx, t, i))
            if len(ids) < page:
                break
            after = ids[-1]


def records(store: GraphStore, page: int = PAGE) -> Iterator[fmt.Record]:
    """Every record of the memory, in the dump's order."""
    yield from _keyed(store, lambda tx, k: tx.dump_persons(k, page), lambda p: p.id, page)
    yield from _keyed(store, lambda tx, k: tx.dump_loci(k, page), lambda r: r.id, page)
    for spine in (False, True):  # the encounters first, then the edges between them
        after = ""
        while True:
            key = after
            encounters = bulk_read(store, lambda tx, k=key: tx.dump_encounters(k, page))
            if spine:
                names = [e.name for e in encounters]
                yield from bulk_read(store, lambda tx, n=names: tx.dump_spine(n))
            else:
                yield from encounters
            if len(encounters) < page:
                break
            after = encounters[-1].name
    streams = [_nodes_of(store, label, page) for label in AUTHORED_NODE_TYPES]
    yield from heapq.merge(*streams, key=lambda d: (d.node.tick, d.node.ord, d.node.id))
    yield from _per_node(store, lambda tx, t, ids: tx.dump_relations(t, ids), page)
    yield from _per_node(store, lambda tx, t, ids: tx.dump_claims(t, ids), page)
    yield from _per_node(store, lambda tx, t, ids: tx.dump_confirmations(t, ids), page)
    yield from _per_node(store, lambda tx, t, ids: tx.dump_consultations(t, ids), page)
    yield from _per_node(store, lambda tx, t, ids: tx.dump_pins(t, ids), page)
    for kind in PAST_KINDS:
        for _, past in _keyed(
            store, lambda tx, k, w=kind: tx.dump_past(w, k, page), lambda kr: kr[0], page
        ):
            yield past


def _classified_ids(store: GraphStore, withheld: frozenset[str], page: int) -> set[str]:
    """Ids of the nodes an export not granted ``withheld`` holds back (memory/gates.py):
    stored ones, and deleted ones the record of the past keeps."""
    if not withheld:
        return set()
    held = {
        d.node.id
        for label in AUTHORED_NODE_TYPES
        for d in _nodes_of(store, label, page)
        if split(d.node.props.get("classification")) & withheld
    }
    gone = _keyed(store, lambda tx, k: tx.dump_past("node", k, page), lambda kr: kr[0], page)
    for _, past in gone:
        assert isinstance(past, DumpedEndedNode)
        if split(past.node.props.get("classification")) & withheld:
            held.add(past.node.id)
    return held


def _touches(record: fmt.Record) -> set[str]:
    """The node ids a record names."""
    if isinstance(record, DumpedNode | DumpedEndedNode):
        return {record.node.id}
    if isinstance(record, DumpedEdge | DumpedEndedEdge):
        return {record.edge.source, record.edge.target}
    if isinstance(record, ClaimRecord):
        return {record.source, record.target}
    if isinstance(record, ConfirmationRecord | ConsultationRecord | PinRecord):
        return {record.node}
    if isinstance(record, DumpedMove):
        return {record.move.node}
    return set()


def _shown(
    records: Iterator[fmt.Record], held_back: set[str], withheld: frozenset[str] = frozenset()
) -> Iterator[fmt.Record]:
    """The records without the held-back nodes and whatever names them. A deleted version
    revised by a held-back one names no successor: its chain ends there, as the read gate
    shows it (memory/gates.py). A node's last use and an encounter's tombstones are those
    the ``withheld`` classes' nodes did not make, with the marks of the other classes
    (store/uses.py ``carried``): none names a withheld class, and the memory the dump
    is imported into gates the classes it carries as this one does."""
    for record in records:
        if held_back and held_back & _touches(record):
            continue
        if isinstance(record, DumpedEndedNode) and record.node.superseded_by in held_back:
            record = replace(record, node=replace(record.node, superseded_by=None))
        if withheld:
            if isinstance(record, DumpedNode | DumpedEndedNode):
                record = replace(record, node=uses.carried(record.node, withheld))
            elif isinstance(record, EncounterRecord):
                record = uses.tombstones_carried(record, withheld)
        yield record


def export(
    store: GraphStore,
    out: BinaryIO,
    *,
    app_version: str,
    progress: Progress | None = None,
    page: int = PAGE,
    withheld: frozenset[str] = frozenset(),
) -> Exported:
    """Write the memory to ``out``; the digest covers every line before the trailer.

    Nodes classified with a ``withheld`` class stay out, with their relations and their
    standing edges (whatever names them); the
    header then counts what the dump holds, so an import checks it as any other."""
    clock, stored = _state(store)
    held_back = _classified_ids(store, withheld, page)
    counts = stored
    if held_back:
        counts = dict.fromkeys(stored, 0)
        for record in _shown(records(store, page), held_back, withheld):
            counts[fmt.to_line(record)["kind"]] += 1
    digest = hashlib.sha256()

    def emit(line: bytes) -> None:
        digest.update(line)
        out.write(line)

    emit(
        fmt.encode(
            fmt.header(
                app_version=app_version,
                backend=store.backend,
                clock=clock,
                counts=counts,
                at=_utc_now(),
            )
        )
    )
    total = sum(counts.values())
    written: dict[str, int] = dict.fromkeys(fmt.KINDS, 0)
    done = 0
    for record in _shown(records(store, page), held_back, withheld):
        line = fmt.to_line(record)
        emit(fmt.encode(line))
        written[line["kind"]] += 1
        done += 1
        if progress is not None and done % page == 0:
            progress(done, total)
    clock_after, counts_after = _state(store)
    if (clock_after, counts_after) != (clock, stored) or written != counts:
        raise Conflict(
            f"the memory was written during the export (clock {clock} -> {clock_after}); "
            "the dump is incomplete: stop every server writing to this memory and export again"
        )
    if progress is not None:
        progress(done, total)
    out.write(fmt.encode(fmt.trailer(written, digest.hexdigest())))
    out.flush()
    return Exported(clock, written, digest.hexdigest(), len(held_back))
