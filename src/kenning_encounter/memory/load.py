"""``kenning-encounter import``: a dump into an empty memory, all of it or nothing usable.

Two passes over the file. The first reads every line and checks it (dump_format.py,
dump_checks.py), the trailer's counts and its SHA-256: a damaged, truncated or
edited dump is refused with nothing written. The second writes the records in
batches, one transaction each, through the store's load operations; each batch
also moves the import's marker (the dump's digest and how many of its records are
in), so an interrupted import is recognised and resumed where its last batch
ended by running the same command again with the same dump. A different dump is
refused until ``restart`` empties what the interrupted import wrote. The last
transaction sets the clock to the dump's and drops the marker.

The target must be empty: no locus, no encounter, no node. Every record keeps its
own ticks; derived data is made again (the registries of names and sources as the
nodes load; the embedded text index when the store next opens; meanings by the
sidecar's reconcile sweep).

A version 1 dump (written before directors, claims, confirmations and the record of
the past were carried) is read too: its loci are directed by the Person the store
migration gives loci made before directors, and its record of the past is empty, as
that version's dump never held one. A version 2 dump written before standing travelled
(dump_format.py) is read as well: its nodes stand from their creation, none pinned. A
dump before version 4 carried none of the gate's marks (store/uses.py): its nodes and
encounters load with none. A version 4 dump's marks load with their records (on Neo4j
with the ``KenningUsed_`` labels a live write gives them, store/neo4j/classified.py), so
a reader not granted a class reads the import as it read the memory exported.
"""

from __future__ import annotations

import hashlib
from collections.abc import Callable, Iterator
from dataclasses import dataclass, replace
from pathlib import Path
from typing import Any, Final, TypeVar, cast

from kenning_encounter.errors import Conflict, InvalidInput
from kenning_encounter.memory import dump_format as fmt
from kenning_encounter.memory.dump import Progress
from kenning_encounter.memory.dump_checks import Checks
from kenning_encounter.store.persons import BEFORE_DIRECTORS, ClaimRecord, PersonRecord
from kenning_encounter.store.port import (
    ConfirmationRecord,
    ConsultationRecord,
    DumpedEdge,
    DumpedEndedEdge,
    DumpedEndedNode,
    DumpedMove,
    DumpedNode,
    DumpTx,
    GraphStore,
    LoadMarker,
    LoadTx,
    LocusRecord,
    PinRecord,
    SpineEdge,
    WriteTx,
    bulk_read,
)
from kenning_encounter.store.records import EncounterRecord

BATCH: Final = 5_000
# What makes a memory non-empty (the spine and relations need them).
_HOLDERS: Final = ("locus", "encounter", "node")
T = TypeVar("T")


@dataclass(frozen=True, slots=True)
class Verified:
    """A dump that passed every check: what the writing pass needs from it."""

    path: Path
    digest: str
    clock: int
    backend: str
    counts: dict[str, int]
    loci_of: dict[str, str]  # encounter -> its locus (a node's locus comes from there)
    version: int = fmt.VERSION
    standing: bool = True  # False: written before standing travelled (dump_format.py)


@dataclass(frozen=True, slots=True)
class Imported:
    clock: int
    counts: dict[str, int]
    resumed_at: int  # records found in by an interrupted import (0: a fresh start)
    cleared: int  # nodes an interrupted import left, removed by ``restart``


def bulk_write(store: GraphStore, work: Callable[[LoadTx], T]) -> T:
    """A write unit with the load operations: every backend's write transaction has
    them (store/ops/load.py), which the port's WriteTx does not promise."""

    def run(tx: WriteTx) -> T:
        return work(cast(LoadTx, tx))

    return store.write(run)


# Longer than any record a memory holds (a node's text is 20,000 characters, six bytes
# each at most as JSON escapes them), so a line past it is no dump's: a file of no line
# breaks (or /dev/zero) is refused there, not read whole into memory.
MAX_LINE: Final = 64 * 1024 * 1024


def _lines(path: Path) -> Iterator[tuple[int, bytes]]:
    with path.open("rb") as f:
        number = 0
        while raw := f.readline(MAX_LINE + 1):
            number += 1
            if len(raw) > MAX_LINE:
                raise InvalidInput(
                    f"line {number}",
                    f"is longer than any record ({MAX_LINE // 1024 // 1024} MiB) without a "
                    f"line end; {fmt.FIX}",
                )
            yield number, raw


def _records(path: Path) -> Iterator[tuple[int, bytes, dict[str, Any]]]:
    lines = _lines(path)
    for number, raw in lines:
        if not raw.endswith(b"\n"):
            raise InvalidInput(f"line {number}", f"is cut short (no line end); {fmt.FIX}")
        yield number, raw, fmt.parse(raw, number)


def verify(path: Path) -> Verified:
    """Every check of the dump; nothing is written."""
    digest = hashlib.sha256()
    records = _records(path)
    first = next(records, None)
    if first is None:
        raise InvalidInput("line 1", f"the dump is empty; {fmt.FIX}")
    number, raw, data = first
    head = fmt.Fields(data, "line 1: header", fmt.HEADER_FIELDS)
    if data["kind"] != "header" or data["format"] != fmt.FORMAT:
        raise head.refuse("format", f"not a {fmt.FORMAT} (a header line opens one)")
    version = head.int("version", low=1)
    if version not in fmt.KINDS_BY_VERSION:
        readable = ", ".join(str(v) for v in fmt.KINDS_BY_VERSION)
        raise head.refuse(
            "version",
            f"format version {version} is newer than this kenning-encounter reads "
            f"(versions {readable}): upgrade kenning-encounter to the version that wrote "
            "the dump, or a newer one, and import again",
        )
    standing = fmt.carries_standing(version, head.mapping("counts"))
    kinds = fmt.kinds_of(version, standing)
    clock = head.int("clock")
    backend = head.text("backend")
    fmt.counts_of(head, "counts", version, standing)
    digest.update(raw)
    checks = Checks(clock)
    tallies: dict[str, int] = dict.fromkeys(kinds, 0)
    stage = 0
    for number, raw, data in records:
        if data["kind"] == "end":
            layout = (version, standing)
            return _trailer(
                path, records, number, data, digest.hexdigest(), tallies, checks, backend, layout
            )
        digest.update(raw)
        kind, record = fmt.read_record(data, number, version, standing)
        where = f"line {number}: {kind}"
        order = kinds.index(kind)
        if order < stage:
            raise InvalidInput(where, f"comes after the {kinds[stage]} records; {fmt.FIX}")
        stage = order
        checks.record(record, where)
        tallies[kind] += 1
    raise InvalidInput(
        f"line {number + 1}", f"the dump ends before its trailer (truncated); {fmt.FIX}"
    )


def _trailer(
    path: Path,
    rest: Iterator[Any],
    number: int,
    data: dict[str, Any],
    digest: str,
    tallies: dict[str, int],
    checks: Checks,
    backend: str,
    layout: tuple[int, bool],
) -> Verified:
    version, standing = layout
    end = fmt.Fields(data, f"line {number}: end", fmt.TRAILER_FIELDS)
    if fmt.counts_of(end, "counts", version, standing) != tallies:
        raise end.refuse("counts", f"the dump holds {tallies}, not what its trailer counts")
    if end.text("sha256") != digest:
        raise end.refuse("sha256", "the lines before the trailer do not match its checksum")
    if next(rest, None) is not None:
        raise InvalidInput(f"line {number + 1}", f"lines follow the trailer; {fmt.FIX}")
    checks.finish()
    loci_of = {name: e.locus for name, e in checks.encounters.items()}
    return Verified(path, digest, checks.clock, backend, tallies, loci_of, version, standing)


def _write_batch(tx: LoadTx, batch: list[fmt.Record], digest: str, done: int) -> None:
    """Runs of one kind, each through its load operation, and the marker moved on."""
    start = 0
    while start < len(batch):
        kind = type(batch[start])
        end = start
        while end < len(batch) and type(batch[end]) is kind:
            end += 1
        run: list[Any] = batch[start:end]
        if kind in (DumpedEndedNode, DumpedEndedEdge, DumpedMove):
            tx.load_past(run)
        else:
            _LOADERS[kind](tx, run)
        start = end
    tx.mark_loaded(digest, done)


_LOADERS: dict[type, Callable[[LoadTx, list[Any]], None]] = {
    PersonRecord: lambda tx, run: tx.load_persons(run),
    LocusRecord: lambda tx, run: tx.load_loci(run),
    EncounterRecord: lambda tx, run: tx.load_encounters(run),
    SpineEdge: lambda tx, run: tx.load_spine(run),
    DumpedNode: lambda tx, run: tx.load_nodes(run),
    DumpedEdge: lambda tx, run: tx.load_relations(run),
    ClaimRecord: lambda tx, run: tx.load_claims(run),
    ConfirmationRecord: lambda tx, run: tx.load_confirmations(run),
    ConsultationRecord: lambda tx, run: tx.load_consultations(run),
    PinRecord: lambda tx, run: tx.load_pins(run),
}


def _prepare(store: GraphStore, dump: Verified, restart: bool) -> tuple[int, int]:
    """(records already in, nodes cleared): the target is empty, or holds an
    interrupted import of this dump, or ``restart`` empties an interrupted one."""

    def state(tx: DumpTx) -> tuple[LoadMarker | None, dict[str, int]]:
        return tx.load_marker(), tx.dump_counts()

    marker, counts = bulk_read(store, state)
    cleared = 0
    if marker is not None and restart:
        while gone := bulk_write(store, lambda tx: tx.clear_some(BATCH)):
            cleared += gone
        marker, counts = bulk_read(store, state)
    if marker is not None:
        if marker.digest != dump.digest:
            raise Conflict(
                f"this memory holds an unfinished import of another dump (sha256 "
                f"{marker.digest[:12]}…, {marker.done} records in): import that dump again "
                "to resume it, or pass --restart to remove what it wrote and import this one"
            )
        return marker.done, cleared
    held = {k: counts[k] for k in _HOLDERS if counts[k]}
    if held:
        found = ", ".join(f"{v} {k}(s)" for k, v in held.items())
        raise Conflict(
            f"the target memory is not empty ({found}); an import goes only into an empty "
            "memory: name a new one (--memory or --data-dir), or another Neo4j database"
        )

    def begin(tx: LoadTx) -> None:
        now = tx.dump_counts()
        if tx.load_marker() is not None or any(now[k] for k in _HOLDERS):
            raise Conflict("the target memory was written to while the import began; try again")
        tx.begin_load(dump.digest)

    bulk_write(store, begin)
    return 0, cleared


def load(
    store: GraphStore,
    dump: Verified,
    *,
    restart: bool = False,
    progress: Progress | None = None,
    batch_size: int = BATCH,
) -> Imported:
    """Write a verified dump into the store (``verify`` first)."""
    resumed, cleared = _prepare(store, dump, restart)
    total = sum(dump.counts.values())
    digest = hashlib.sha256()
    batch: list[fmt.Record] = []
    done = 0
    for number, raw, data in _records(dump.path):
        if data["kind"] == "end":
            break
        digest.update(raw)
        if data["kind"] == "header":
            continue
        done += 1
        if done <= resumed:
            continue
        _, record = fmt.read_record(data, number, dump.version, dump.standing)
        if isinstance(record, DumpedNode):
            node = record.node
            locus = dump.loci_of.get(node.encounter or "")
            record = DumpedNode(replace(node, locus=locus), record.recorded_tick)
        batch.append(record)
        if len(batch) >= batch_size:
            bulk_write(store, lambda tx, b=batch, n=done: _write_batch(tx, b, dump.digest, n))
            batch = []
            if progress is not None:
                progress(done, total)
    if digest.hexdigest() != dump.digest:
        raise Conflict(
            "the dump file changed while it was being imported; what was written stays "
            "marked as an unfinished import: pass --restart with an unchanged dump"
        )

    def last(tx: LoadTx) -> None:
        _write_batch(tx, batch, dump.digest, done)
        tx.finish_load(dump.clock)
        if dump.version == 1:
            # Written before directors: its loci get the Person the store migration gives
            # loci made before directors (store/persons.py), never none.
            tx.direct_undirected(BEFORE_DIRECTORS)

    bulk_write(store, last)
    if progress is not None:
        progress(done, total)
    return Imported(dump.clock, dump.counts, resumed, cleared)
