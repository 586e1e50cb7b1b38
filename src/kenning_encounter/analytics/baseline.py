"""Mass baselines: the ArticleRank reading saved at each orient, for drift.

A baseline keeps the top of the mass ranking (ids, names, ranks, scores) and the
tick it was read at, so a later orient can say what rose, what fell and what is
new since. The store keeps one baseline per encounter (the last orient in it)
for the few most recent encounters: in one small JSON file replaced atomically
beside an embedded memory (one process owns it), or in the store where several
server processes serve one memory (``store/meanings.py``), so every replica's
drift reads the same readings and two saving at once lose neither's.
Drift always compares against the latest baseline from a *different* encounter:
re-orienting within one encounter measures change since the previous session,
not since a minute ago.
"""

from __future__ import annotations

import json
import logging
import os
import tempfile
import threading
from pathlib import Path

from pydantic import ConfigDict, ValidationError

from kenning_encounter import abandon
from kenning_encounter.lazymodel import LazyModel
from kenning_encounter.store.meanings import BaselineTable, StoredBaseline

logger = logging.getLogger(__name__)

FILE_NAME = "mass-baselines.json"
FORMAT_VERSION = 1
KEEP_ENCOUNTERS = 4
RANKS_KEPT = 200


class BaselineEntry(LazyModel):
    model_config = ConfigDict(frozen=True, extra="forbid")

    id: str
    name: str
    type: str
    rank: int  # 1 is the most massive
    score: float


class Baseline(LazyModel):
    """One mass reading. ``encounter`` is None for a reading taken outside one."""

    model_config = ConfigDict(frozen=True, extra="forbid")

    encounter: str | None
    saved_at: str  # ISO-8601 UTC
    tick: int  # the memory's tick when it was read: later nodes are new
    node_count: int
    entries: tuple[BaselineEntry, ...]


class _File(LazyModel):
    model_config = ConfigDict(extra="forbid")

    version: int
    baselines: list[Baseline]


class BaselineStore:
    """Baselines of one memory, kept in ``directory`` (created on first save), or in
    ``table`` when the store keeps them (the directory is then unused)."""

    def __init__(
        self,
        directory: Path,
        *,
        keep: int = KEEP_ENCOUNTERS,
        table: BaselineTable | None = None,
        read_only: bool = False,
    ) -> None:
        if keep < 2:
            raise ValueError("keep must be at least 2: the current encounter and one before it")
        self._path = Path(directory) / FILE_NAME
        self._keep = keep
        self._table = table
        self._read_only = read_only  # a reader face: reads the readings, saves none
        self._lock = threading.Lock()

    @property
    def in_store(self) -> bool:
        return self._table is not None

    @property
    def path(self) -> Path:
        return self._path

    def previous(self, current_encounter: str | None) -> Baseline | None:
        """The latest baseline from another encounter than ``current_encounter``
        (any latest baseline when the current encounter is unknown)."""
        with self._lock:
            found = self._load()
        others = [b for b in found if current_encounter is None or b.encounter != current_encounter]
        return max(others, key=lambda b: (b.tick, b.saved_at), default=None)

    def save(self, baseline: Baseline) -> None:
        """Record ``baseline`` as its encounter's reading, replacing an older one. A
        reading its caller gave up is not saved (kenning_encounter.abandon): its last
        step may end after the caller left, and saving is one more step."""
        abandon.check()
        if self._read_only:
            logger.debug("a read-only baseline store saves no reading")
            return
        if self._table is not None:
            stored = StoredBaseline(
                baseline.encounter, baseline.tick, baseline.saved_at, baseline.model_dump_json()
            )
            self._table.save(stored, keep=self._keep)
            return
        with self._lock:
            kept = [b for b in self._load() if b.encounter != baseline.encounter]
            kept.append(baseline)
            kept.sort(key=lambda b: (b.tick, b.saved_at))
            self._write(_File(version=FORMAT_VERSION, baselines=kept[-self._keep :]))

    def all(self) -> list[Baseline]:
        with self._lock:
            return self._load()

    def _load(self) -> list[Baseline]:
        if self._table is not None:
            return self._load_stored(self._table)
        try:
            raw = self._path.read_bytes()
        except FileNotFoundError:
            return []
        try:
            parsed = _File.model_validate_json(raw)
        except (ValidationError, ValueError):
            # A damaged file only costs the drift section one reading; the next
            # save replaces it.
            logger.warning("ignoring unreadable mass baselines at %s", self._path)
            return []
        if parsed.version != FORMAT_VERSION:
            logger.warning(
                "ignoring mass baselines at %s: format %d, expected %d",
                self._path,
                parsed.version,
                FORMAT_VERSION,
            )
            return []
        return parsed.baselines

    def _load_stored(self, table: BaselineTable) -> list[Baseline]:
        found: list[Baseline] = []
        for stored in table.load():
            try:
                found.append(Baseline.model_validate_json(stored.body))
            except (ValidationError, ValueError):
                # As with a damaged file: drift loses one reading; the next save replaces it.
                logger.warning("ignoring an unreadable stored mass baseline")
        found.sort(key=lambda b: (b.tick, b.saved_at))
        return found

    def _write(self, content: _File) -> None:
        self._path.parent.mkdir(parents=True, exist_ok=True)
        data = json.dumps(content.model_dump(mode="json"), separators=(",", ":"))
        fd, tmp = tempfile.mkstemp(prefix=".baselines-", dir=self._path.parent)
        try:
            with os.fdopen(fd, "w", encoding="utf-8") as f:
                f.write(data)
                f.flush()
                os.fsync(f.fileno())
            os.replace(tmp, self._path)
        except BaseException:
            Path(tmp).unlink(missing_ok=True)
            raise
