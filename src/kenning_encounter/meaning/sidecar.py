"""The meaning sidecar: node id -> one-sentence meaning, kept in a derived file.

The file is an append-only log (format in ``sidecar/README.md``): every put or
drop is one checksummed line, appended and fsynced before the call returns, so
a put that returned survives a kill at any moment, and a torn last line is
recognised by its checksum and discarded on load. When dead lines outnumber
live entries the log is compacted by writing a fresh snapshot beside it and
renaming it over the old one, so the file on disk is always either the old log
or the new snapshot, never a mixture.

Entries keep their creation order: ``order`` is the node's tick (the memory's
global order) and ``seq`` breaks ties and serves as the entry's short, stable
handle in prompts. Listing meanings in this order keeps a prompt's prefix
identical from call to call, which is what a provider's prefix cache needs.

This is the home of meanings when one process owns the memory (the embedded
store); where several share it, the store keeps them (``meaning/stored.py``).

A meaning is made from a node's text and kept only while the memory holds the node:
given ``held`` (which of some ids the memory still holds), a put asks it holding the
lock its drops take, and records nothing for a node gone meanwhile.
"""

from __future__ import annotations

import json
import logging
import os
import threading
import zlib
from collections.abc import Callable, Collection, Iterable, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any, BinaryIO

from kenning_encounter.meaning.source import source_hash
from kenning_encounter.store.meanings import Claim, MeaningEntry
from kenning_encounter.store.records import NodeRecord

logger = logging.getLogger(__name__)

LOG_NAME = "meanings.log"
FORMAT_NAME = "kenning-encounter-meanings"
FORMAT_VERSION = 1

# One decoder fed str decodes a line about 30% faster than json.loads(bytes),
# which sniffs the encoding on every call; it adds up over a 100k-entry log.
_DECODER = json.JSONDecoder()


@dataclass(frozen=True, slots=True)
class SidecarSnapshot:
    """A consistent view: the entries, the version they belong to, and their text size."""

    entries: tuple[MeaningEntry, ...]  # creation order
    version: int
    text_chars: int  # sum of len(meaning) + len(str(seq)): a listing's size without a scan


class SidecarCorrupt(Exception):
    """The log names a format this code cannot read (never raised for a torn tail)."""


def _text_chars(entry: MeaningEntry) -> int:
    return len(entry.meaning) + len(str(entry.seq))


def _encode(record: dict[str, Any]) -> bytes:
    body = json.dumps(record, ensure_ascii=False, separators=(",", ":")).encode("utf-8")
    return b"%08x %s\n" % (zlib.crc32(body), body)


def _decode(line: bytes) -> dict[str, Any] | None:
    """The record a line holds, or None when the line is torn or damaged."""
    if len(line) < 10 or line[8:9] != b" ":
        return None
    body = line[9:]
    try:
        if int(line[:8], 16) != zlib.crc32(body):
            return None
        record = _DECODER.decode(body.decode("utf-8"))
    except ValueError:  # UnicodeDecodeError and JSONDecodeError included
        return None
    return record if isinstance(record, dict) else None


def _fsync_dir(directory: Path) -> None:
    # Makes a rename durable; some platforms cannot open a directory, and there
    # the rename is as durable as the platform allows anyway.
    try:
        fd = os.open(directory, os.O_RDONLY)
    except OSError:
        return
    try:
        os.fsync(fd)
    finally:
        os.close(fd)


class SidecarStore:
    """Thread-safe store of meanings in ``directory``; one process owns it at a time."""

    def __init__(
        self,
        directory: str | os.PathLike[str],
        *,
        fsync: bool = True,
        compact_min_dead: int = 1024,
        held: Callable[[Sequence[str]], Collection[str]] | None = None,
    ) -> None:
        self._dir = Path(directory)
        self._held = held
        self._path = self._dir / LOG_NAME
        self._fsync = fsync
        self._compact_min_dead = compact_min_dead
        self._lock = threading.Lock()
        self._entries: dict[str, MeaningEntry] = {}
        self._ordered: tuple[MeaningEntry, ...] | None = None
        self._next_seq = 1
        self._max_order = 0
        self._lines = 0  # records in the log, header excluded
        self._chars = 0  # sum over live entries of len(meaning) + len(str(seq))
        self._version = 0
        self._fh: BinaryIO | None = None
        self._good_size = 0
        self._dir.mkdir(parents=True, exist_ok=True)
        self._load()

    # -- reading -------------------------------------------------------------

    @property
    def path(self) -> Path:
        return self._path

    @property
    def version(self) -> int:
        """Bumped by every change; lets readers cache what they render from the entries."""
        return self._version

    def __len__(self) -> int:
        return len(self._entries)

    def __contains__(self, node_id: object) -> bool:
        return node_id in self._entries

    def get(self, node_id: str) -> MeaningEntry | None:
        return self._entries.get(node_id)

    def entries(self) -> tuple[MeaningEntry, ...]:
        """Every entry in creation order (order, then seq)."""
        return self.snapshot().entries

    def snapshot(self) -> SidecarSnapshot:
        with self._lock:
            if self._ordered is None:
                self._ordered = tuple(
                    sorted(self._entries.values(), key=lambda e: (e.order, e.seq))
                )
            return SidecarSnapshot(self._ordered, self._version, self._chars)

    def missing(self, nodes: Iterable[NodeRecord]) -> list[NodeRecord]:
        """Nodes with no meaning yet."""
        return [n for n in nodes if n.id not in self._entries]

    def stale(self, nodes: Iterable[NodeRecord]) -> list[NodeRecord]:
        """Nodes whose meaning was made from text they no longer carry."""
        out: list[NodeRecord] = []
        for node in nodes:
            entry = self._entries.get(node.id)
            if entry is not None and entry.source_hash != source_hash(node):
                out.append(node)
        return out

    def orphans(self, live_ids: Iterable[str]) -> list[str]:
        """Ids held here whose node no longer exists."""
        live = set(live_ids)
        with self._lock:
            return [node_id for node_id in self._entries if node_id not in live]

    # -- writing -------------------------------------------------------------

    def put(
        self, node_id: str, meaning: str, source_hash: str, *, order: int | None = None
    ) -> MeaningEntry | None:
        """Record a meaning; returns once the line is durable (None: the node is gone).

        A re-made meaning keeps the entry's seq and (unless given) its order,
        so the entry stays where it was in the listing.
        """
        made = self.put_many([(node_id, meaning, source_hash, order)])
        return made[0] if made else None

    def put_many(self, items: Iterable[tuple[str, str, str, int | None]]) -> list[MeaningEntry]:
        """Record several meanings with one write and one fsync. A meaning of a node the
        memory no longer holds is recorded nowhere and left out of the answer."""
        listed = list(items)
        with self._lock:
            if self._held is not None:
                alive = self._held(list(dict.fromkeys(item[0] for item in listed)))
                listed = [item for item in listed if item[0] in alive]
            out: list[MeaningEntry] = []
            lines: list[bytes] = []
            staged: dict[str, MeaningEntry] = {}
            next_seq = self._next_seq
            max_order = self._max_order
            for node_id, meaning, digest, order in listed:
                if not node_id or not meaning.strip():
                    raise ValueError("a sidecar entry needs an id and a non-empty meaning")
                old = staged.get(node_id) or self._entries.get(node_id)
                if old is None:
                    seq = next_seq
                    next_seq += 1
                    chosen_order = order if order is not None else max_order + 1
                else:
                    seq = old.seq
                    chosen_order = order if order is not None else old.order
                entry = MeaningEntry(node_id, meaning, digest, chosen_order, seq)
                max_order = max(max_order, chosen_order)
                out.append(entry)
                if entry == old:
                    continue
                staged[node_id] = entry
                lines.append(
                    _encode(
                        {
                            "op": "put",
                            "id": node_id,
                            "seq": seq,
                            "order": chosen_order,
                            "hash": digest,
                            "meaning": meaning,
                        }
                    )
                )
            if lines:
                self._append(b"".join(lines), len(lines))
                for entry in staged.values():
                    self._apply_put(entry)
                self._next_seq = next_seq
                self._changed()
            return out

    def drop(self, node_id: str) -> bool:
        """Forget a node's meaning; False when there was none."""
        with self._lock:
            if node_id not in self._entries:
                return False
            self._append(_encode({"op": "drop", "id": node_id}), 1)
            self._apply_drop(node_id)
            self._changed()
            return True

    def compact(self) -> None:
        """Write the log again with only the live entries: until then a dropped
        meaning's text stays in the put line before its drop (an erasure needs it gone)."""
        with self._lock:
            self._compact_locked()

    def claim(self, node_id: str, source_hash: str) -> Claim:
        """One process owns the sidecar, so no one else is making a meaning."""
        entry = self._entries.get(node_id)
        if entry is not None and entry.source_hash == source_hash:
            return Claim("done")
        return Claim("granted")

    def release(self, node_id: str) -> None:
        """Nothing to release: a sidecar's claims are never held."""

    def close(self) -> None:
        with self._lock:
            if self._fh is not None:
                self._fh.close()
                self._fh = None

    def __enter__(self) -> SidecarStore:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    # -- internals (lock held) -----------------------------------------------

    def _apply_put(self, entry: MeaningEntry) -> None:
        old = self._entries.get(entry.id)
        if old is not None:
            self._chars -= _text_chars(old)
        self._entries[entry.id] = entry
        self._chars += _text_chars(entry)
        self._max_order = max(self._max_order, entry.order)
        self._next_seq = max(self._next_seq, entry.seq + 1)

    def _apply_drop(self, node_id: str) -> None:
        old = self._entries.pop(node_id, None)
        if old is not None:
            self._chars -= _text_chars(old)

    def _changed(self) -> None:
        self._ordered = None
        self._version += 1
        if self._lines - len(self._entries) > max(self._compact_min_dead, len(self._entries)):
            self._compact_locked()

    def _append(self, data: bytes, count: int) -> None:
        fh = self._fh
        if fh is None:
            raise ValueError("the sidecar is closed")
        try:
            fh.write(data)
            fh.flush()
            if self._fsync:
                os.fsync(fh.fileno())
        except BaseException:
            # A partial line would swallow the next append; cut back to the
            # last complete record so the log stays well formed.
            try:
                fh.truncate(self._good_size)
                fh.seek(self._good_size)
            except OSError:
                logger.exception("could not trim the sidecar log after a failed write")
            raise
        self._good_size += len(data)
        self._lines += count

    def _load(self) -> None:
        tmp = self._path.with_name(LOG_NAME + ".tmp")
        if tmp.exists():
            tmp.unlink()  # an interrupted compaction; the log itself is intact
        if not self._path.exists():
            self._compact_locked()
            return
        data = self._path.read_bytes()
        damaged = 0
        header_seen = False
        for line in data.splitlines(keepends=True):
            record = _decode(line.rstrip(b"\n")) if line.endswith(b"\n") else None
            if record is None:
                damaged += 1
                continue
            op = record.get("op")
            if op == "header":
                if record.get("format") != FORMAT_NAME or record.get("version") != FORMAT_VERSION:
                    raise SidecarCorrupt(
                        f"{self._path} is not a version-{FORMAT_VERSION} meaning log; "
                        "delete it and it will be rebuilt from the graph"
                    )
                header_seen = True
            elif op == "put":
                self._apply_put(
                    MeaningEntry(
                        str(record["id"]),
                        str(record["meaning"]),
                        str(record["hash"]),
                        int(record["order"]),
                        int(record["seq"]),
                    )
                )
                self._lines += 1
            elif op == "drop":
                self._apply_drop(str(record["id"]))
                self._lines += 1
            else:
                damaged += 1
        if damaged or not header_seen:
            if damaged:
                logger.warning(
                    "sidecar log %s had %d damaged line(s) (a torn write); rewriting it",
                    self._path,
                    damaged,
                )
            self._compact_locked()
        else:
            self._open_for_append(len(data))

    def _compact_locked(self) -> None:
        if self._fh is not None:
            self._fh.close()
            self._fh = None
        tmp = self._path.with_name(LOG_NAME + ".tmp")
        ordered = sorted(self._entries.values(), key=lambda e: (e.order, e.seq))
        with tmp.open("wb") as out:
            out.write(_encode({"op": "header", "format": FORMAT_NAME, "version": FORMAT_VERSION}))
            for e in ordered:
                out.write(
                    _encode(
                        {
                            "op": "put",
                            "id": e.id,
                            "seq": e.seq,
                            "order": e.order,
                            "hash": e.source_hash,
                            "meaning": e.meaning,
                        }
                    )
                )
            out.flush()
            os.fsync(out.fileno())
            size = out.tell()
        os.replace(tmp, self._path)
        _fsync_dir(self._dir)
        self._lines = len(ordered)
        self._open_for_append(size)

    def _open_for_append(self, size: int) -> None:
        self._fh = self._path.open("ab")
        self._good_size = size
