"""``kenning-encounter export``: a whole memory as a stream of lines (dump_format.py).

The memory is read in pages, each its own read transaction, so neither the store
nor this process ever holds it whole: loci and encounters by name, the spine by
encounter, the nodes of every type merged into one creation order (tick, ord, id),
the relations out of each type's nodes by id. Pages are not one snapshot, so the
clock and the counts are read again at the end: if a write landed meanwhile the
export fails (stop the servers writing to the memory and export again) rather
than hand over a dump that no single moment of the memory matches.
"""

from __future__ import annotations

import hashlib
import heapq
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from datetime import UTC, datetime
from typing import BinaryIO, Final, TypeVar, cast

from kenning_encounter.errors import Conflict
from kenning_encounter.memory import dump_format as fmt
from kenning_encounter.memory.classification import split
from kenning_encounter.store.port import DumpedEdge, DumpedNode, DumpTx, GraphStore, ReadTx
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


def bulk_read(store: GraphStore, work: Callable[[DumpTx], T]) -> T:
    """A read unit with the dump's pages: every backend's read transaction has them
    (store/ops/load.py), which the port's ReadTx does not promise."""

    def run(tx: ReadTx) -> T:
        return work(cast(DumpTx, tx))

    return store.read(run)


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


def records(store: GraphStore, page: int = PAGE) -> Iterator[fmt.Record]:
    """Every record of the memory, in the dump's order."""
    after = ""
    while True:
        key = after
        loci = bulk_read(store, lambda tx, k=key: tx.dump_loci(k, page))
        yield from loci
        if len(loci) < page:
            break
        after = loci[-1].id
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
    for label in AUTHORED_NODE_TYPES:
        after = ""
        while True:
            key = after
            ids = bulk_read(store, lambda tx, t=label, k=key: tx.dump_node_ids(t, k, page))
            if ids:
                yield from bulk_read(store, lambda tx, t=label, i=ids: tx.dump_relations(t, i))
            if len(ids) < page:
                break
            after = ids[-1]


def _classified_ids(store: GraphStore, withheld: frozenset[str], page: int) -> set[str]:
    """Ids of the nodes an export not granted ``withheld`` holds back (memory/gates.py)."""
    if not withheld:
        return set()
    return {
        d.node.id
        for label in AUTHORED_NODE_TYPES
        for d in _nodes_of(store, label, page)
        if split(d.node.props.get("classification")) & withheld
    }


def _shown(records: Iterator[fmt.Record], held_back: set[str]) -> Iterator[fmt.Record]:
    """The records without the held-back nodes and the relations that touch them."""
    for record in records:
        if isinstance(record, DumpedNode) and record.node.id in held_back:
            continue
        if isinstance(record, DumpedEdge) and held_back & {record.edge.source, record.edge.target}:
            continue
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

    Nodes classified with a ``withheld`` class stay out, with their relations; the
    header then counts what the dump holds, so an import checks it as any other."""
    clock, stored = _state(store)
    held_back = _classified_ids(store, withheld, page)
    counts = stored
    if held_back:
        counts = dict.fromkeys(stored, 0)
        for record in _shown(records(store, page), held_back):
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
    for record in _shown(records(store, page), held_back):
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
