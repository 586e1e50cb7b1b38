"""A derived lexical index (tantivy) beside the embedded graph.

The graph is the truth. The index records the graph tick it reflects in a small
file next to it; on open, an index whose tick differs from the store's is
rebuilt from the graph, so a crash between the graph commit and the index
commit loses nothing.

A tantivy commit costs tens of milliseconds (it syncs files), far more than the
graph write it follows, so changes are staged and committed by a background
flusher shortly after writes go quiet, or at once by a search that finds changes
pending: a search always sees every write acknowledged before it. A write only
queues its changes (``apply``): the flusher hands them to tantivy at once (it
tokenizes them, off the write's path) and commits later, so a write never waits
for a commit in progress, which under the flusher's lock took as long as the
write itself.

The corpus statistics (documents, mean length, document frequencies) are all
read from one searcher and count live documents only. Tantivy's own
``doc_freq`` also counts documents deleted since the last segment merge, and a
supersession deletes and re-adds the old node, so it overcounts until a merge
that may never come; beside the live document count that made a common term's
IDF negative.

The index's own files are checked when it opens (``_damage``): every file its last
commit names must be there and match the checksum tantivy wrote at its end, and the
documents must be as many as the tick file says were saved. Tantivy itself reads a
file's body only when a search needs it, so a damaged file (a bad disk, a copy cut
short, a file deleted by hand) went unnoticed until a search failed, found nothing,
or stopped the process; a missing ``meta.json`` even opened as a new empty index
that the tick file called current. A damaged index is derived again from the graph.
"""

from __future__ import annotations

import contextlib
import json
import logging
import os
import shutil
import struct
import threading
import time
import zlib
from collections.abc import Collection, Generator, Iterable, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import NoReturn

import tantivy

from kenning_encounter.errors import StoreError
from kenning_encounter.store.port import SearchHit, TermStatsSnapshot
from kenning_encounter.textproc import TOKENIZER_VERSION, tokenize
from kenning_encounter.textproc_bm25 import query_terms

log = logging.getLogger(__name__)

# The index is rebuilt when the documents' shape or the tokenizer changes.
# 4: each document carries its classes, so a gated caller's statistics leave them out.
# 5: its terms are stored, so a hit is scored again by the caller's statistics.
# 6: each document carries its session (locus), so a reader hiding loci leaves them out.
_DOCUMENT_SHAPE = 6
INDEX_FORMAT = f"{_DOCUMENT_SHAPE}.{TOKENIZER_VERSION}"
TICK_FILE = "TICK.json"
# Tantivy's files of one segment (the schema indexes positions, stores ids, keeps one
# fast field), and the footer each ends with: JSON holding a CRC-32 of the body, its
# length (u32) and a magic number (u32), both little-endian.
_SEGMENT_PARTS = ("idx", "pos", "term", "store", "fast", "fieldnorm")
_FOOTER_MAGIC = 1337
_CHUNK = 1 << 20
# Term frequencies kept between commits (``TextIndex._stats``), all gates together.
_KEPT_FREQS = 100_000
# How often a search looks whether the index's files were changed in place (``_look``).
LOOK_EVERY_S = 1.0


# What a caller may not see of the index: the classes withheld, the loci hidden.
_Unseen = tuple[frozenset[str], frozenset[str]]


class IndexDamaged(StoreError):
    """The index's files could not be read as they were written (the graph is whole)."""


@dataclass(frozen=True, slots=True)
class _Staged:
    """One graph transaction's changes, waiting to be handed to tantivy."""

    replaced: list[str]  # ids whose document goes (deleted, or written anew)
    docs: list[IndexDoc]
    tick: int


@dataclass(frozen=True, slots=True)
class IndexDoc:
    id: str
    type: str
    head: bool
    name: str
    description: str
    classes: tuple[str, ...] = ()
    locus: str | None = None  # the session that recorded it (a node's never changes)


def classes_of(classification: object) -> tuple[str, ...]:
    """The classes a stored classification names (comma-joined, memory/classification.py)."""
    if not isinstance(classification, str):
        return ()
    return tuple(sorted({c for c in classification.split(",") if c}))


def recorded_tick(directory: Path) -> int | None:
    """The last tick the index at ``directory`` recorded saving, in whatever format: what
    the graph beside it had reached at least."""
    try:
        data = json.loads((directory / TICK_FILE).read_text())
        return int(data["tick"])
    except (OSError, ValueError, KeyError, TypeError):
        return None


def _footer_problem(path: Path) -> str | None:
    """Why tantivy's file at ``path`` is not as it was written, or None."""
    try:
        with path.open("rb") as f:
            size = os.fstat(f.fileno()).st_size
            if size < 8:
                return f"{path.name} is cut short"
            f.seek(size - 8)
            length, magic = struct.unpack("<II", f.read(8))
            if magic != _FOOTER_MAGIC or length > size - 8:
                return f"{path.name} does not end as tantivy ends its files"
            body = size - 8 - length
            f.seek(body)
            footer = json.loads(f.read(length))
            f.seek(0)
            crc, left = 0, body
            while left > 0:
                chunk = f.read(min(_CHUNK, left))
                if not chunk:
                    return f"{path.name} is cut short"
                crc = zlib.crc32(chunk, crc)
                left -= len(chunk)
    except FileNotFoundError:
        return f"{path.name} is missing"
    except OSError as exc:
        return f"{path.name} cannot be read ({exc.strerror or exc})"
    except ValueError:
        return f"{path.name} does not end as tantivy ends its files"
    if not isinstance(footer, dict) or footer.get("crc") != crc:  # pyright: ignore[reportUnknownMemberType]
        return f"{path.name} does not match its checksum"
    return None


def _committed(directory: Path) -> list[str] | str:
    """The files the index's last commit names in ``directory``, or why its meta.json
    cannot say."""
    try:
        meta = json.loads((directory / "meta.json").read_text())
    except FileNotFoundError:
        return "meta.json is missing"
    except OSError as exc:
        return f"meta.json cannot be read ({exc.strerror or exc})"
    except ValueError:
        return "meta.json is not the JSON tantivy writes"
    try:
        segments = [
            (str(g["segment_id"]).replace("-", ""), g.get("deletes")) for g in meta["segments"]
        ]
        names = [f"{sid}.{part}" for sid, _ in segments for part in _SEGMENT_PARTS]
        names += [f"{sid}.{int(d['opstamp'])}.del" for sid, d in segments if d]
    except (KeyError, TypeError, ValueError, AttributeError):
        return "meta.json does not list the segments as tantivy writes them"
    return names


def _damage(directory: Path) -> str | None:
    """Why the index's last commit cannot be read whole from ``directory``, or None."""
    names = _committed(directory)
    if isinstance(names, str):
        return names
    for name in names:
        problem = _footer_problem(directory / name)
        if problem is not None:
            return problem
    return None


def _first_line(exc: BaseException) -> str:
    """Tantivy's own words, one line (a panic's message may run on with a backtrace)."""
    text = str(exc).strip().splitlines()
    return text[0][:300] if text else type(exc).__name__


def _panicked(exc: BaseException) -> bool:
    """Whether ``exc`` is tantivy's own failure (a Rust panic, raised as pyo3's
    PanicException, which is no Exception) rather than an interrupt or an exit."""
    return type(exc).__name__ == "PanicException"


def _schema() -> tantivy.Schema:
    sb = tantivy.SchemaBuilder()
    sb.add_text_field("id", stored=True, tokenizer_name="raw")
    sb.add_text_field("type", stored=False, tokenizer_name="raw")
    sb.add_text_field("head", stored=False, tokenizer_name="raw")
    sb.add_text_field("class", stored=False, tokenizer_name="raw")  # one value per class
    sb.add_text_field("locus", stored=False, tokenizer_name="raw")
    # Pre-tokenized by our own tokenizer, so index terms and query terms always meet
    # and the corpus statistics are the ones the lexical ranking expects.
    # Stored too: a search scores its hits again from them (memory/reads.py ``rescored``).
    sb.add_text_field("terms", stored=True, tokenizer_name="whitespace")
    # A fast field, so the statistics can sum and count over live documents.
    sb.add_integer_field("len", stored=False, indexed=False, fast=True)
    return sb.build()


def _aggregate(searcher: tantivy.Searcher, query: tantivy.Query, metric: str) -> float:
    """A metric of the ``len`` field over the live documents ``query`` matches.

    An aggregation skips deleted documents and scores nothing, unlike
    ``Searcher.doc_freq`` (deleted ones too) or a counting search (scores every hit).
    """
    result = searcher.aggregate(query, {"m": {metric: {"field": "len"}}})
    value = result.get("m", {}).get("value")
    return float(value) if isinstance(value, int | float) else 0.0


class TextIndex:
    def __init__(self, directory: Path, *, flush_delay: float = 0.25) -> None:
        self._dir = directory
        self._tick_file = directory / TICK_FILE
        self._schema = _schema()
        # _lock holds the tantivy writer; _queue_lock only the queue that writes add to.
        self._lock = threading.Lock()
        self._queue_lock = threading.Lock()
        self._queue: list[_Staged] = []
        # What the graph had reached at least, read before a damaged index is cleared.
        self.seen_tick = recorded_tick(directory)
        self._index = self._open()
        # Each committed file's (size, mtime) when last looked at (``_look``).
        self.look_every = LOOK_EVERY_S
        self._files: dict[str, tuple[int, int]] = {}
        self._looked = float("-inf")
        self._look_lock = threading.Lock()
        self._writer = self._index.writer(heap_size=64_000_000, num_threads=1)
        self._pending_tick: int | None = None
        self._fault: str | None = None  # see _failed
        self._broken: str | None = None  # see _damaged
        with contextlib.suppress(IndexDamaged):  # a search repairs it (``_broken`` is set)
            self._look()  # the files as opened, each one verified (``_open``)
        self._flush_delay = flush_delay
        # Statistics counted since the last commit, by gate: documents and total length,
        # and each term's frequency. ``_era`` is odd while a commit is under way (what a
        # searcher counts then may be of either side of it), and moves at each end, so a
        # count begun before a commit is never read after it.
        # Each is kept with the era it was counted in, and read only in that era.
        self._era = 0
        self._totals: dict[_Unseen, tuple[int, tuple[int, float]]] = {}
        self._freqs: dict[tuple[_Unseen, str], tuple[int, int]] = {}
        self._wake = threading.Event()
        self._stopping = False
        self._flusher = threading.Thread(
            target=self._flush_loop, name="textindex-flush", daemon=True
        )
        self._flusher.start()

    def _open(self) -> tantivy.Index:
        """The index in the directory, or a new empty one where it is damaged (the store
        derives it again from the graph, its tick being gone)."""
        try:
            self._dir.mkdir(parents=True, exist_ok=True)
            held = (self._dir / "meta.json").exists() or self._tick_file.exists()
        except OSError as exc:  # a file in its place, a folder that may not be looked into
            raise StoreError(self._unusable(exc)) from exc
        problem = _damage(self._dir) if held else None
        if problem is None:
            try:
                return tantivy.Index(self._schema, path=str(self._dir))
            except ValueError as exc:
                problem = f"tantivy cannot open it: {_first_line(exc)}"
        # Said once, naming the file and never a document: the graph is whole.
        log.warning(
            "the text index at %s is damaged or of an older shape (%s); it is derived "
            "again from the graph",
            self._dir,
            problem,
        )
        return self._fresh()

    def _fresh(self) -> tantivy.Index:
        try:
            shutil.rmtree(self._dir)
            self._dir.mkdir(parents=True)
        except OSError as exc:
            raise StoreError(self._unusable(exc)) from exc
        return tantivy.Index(self._schema, path=str(self._dir))

    def _unusable(self, exc: OSError) -> str:
        return (
            f"the text index's folder {self._dir} cannot be used ({exc.strerror or exc}); it "
            "holds only what is derived from the graph: remove it, or make it a folder this "
            "user may write, and start again (it is rebuilt from the graph)"
        )

    def synced_tick(self) -> int | None:
        try:
            data = json.loads(self._tick_file.read_text())
            return int(data["tick"]) if data.get("format") == INDEX_FORMAT else None
        except (OSError, ValueError, KeyError, TypeError):
            return None

    def current(self, tick: int) -> bool:
        """Whether the index holds the graph as of ``tick``: saved at that tick, in this
        format, with as many documents as were saved then (a ``meta.json`` of another
        commit, put back by hand or by a backup, holds another number)."""
        if self.synced_tick() != tick:
            return False
        try:
            saved = json.loads(self._tick_file.read_text()).get("docs")
        except (OSError, ValueError, AttributeError):
            return False
        if saved is None:  # saved by a version that did not count them
            return True
        try:
            with self._reading():
                held = int(self._index.searcher().num_docs)
        except IndexDamaged:
            return False
        if held == saved:
            return True
        log.warning(
            "the text index at %s holds %d documents where %d were saved; it is derived "
            "again from the graph",
            self._dir,
            held,
            saved,
        )
        return False

    def _mark(self, tick: int) -> None:
        """Record the tick just committed, and how many documents it left (the index's
        reader reloaded first)."""
        docs = int(self._index.searcher().num_docs)
        tmp = self._tick_file.with_suffix(".tmp")
        tmp.write_text(json.dumps({"tick": tick, "format": INDEX_FORMAT, "docs": docs}))
        os.replace(tmp, self._tick_file)

    @staticmethod
    def _doc(d: IndexDoc) -> tantivy.Document:
        tokens = tokenize(f"{d.name}\n{d.description}")
        doc = tantivy.Document(
            id=d.id,
            type=d.type,
            head="1" if d.head else "0",
            terms=" ".join(tokens),
            len=len(tokens),
        )
        for c in d.classes:
            doc.add_text("class", c)
        if d.locus:
            doc.add_text("locus", d.locus)
        return doc

    def apply(
        self,
        upserts: Sequence[IndexDoc],
        deletes: Iterable[str],
        tick: int,
        *,
        fresh: Collection[str] = (),
    ) -> None:
        """Stage changes made by the graph transaction at ``tick``.

        Only each node's final state is written: a transaction may re-index a node
        twice (its status, then its successor) or restore a node and then delete it
        (forgetting a chain from its head), and either would otherwise leave an extra
        document. Ids are never reused, so a node deleted in a transaction is gone,
        and one the transaction created (``fresh``) has no document to replace."""
        if self._fault is not None:
            # No save can take them (``_failed``): held, they would only grow, each wake
            # of the flusher logging the fault again; the next opening derives them.
            return
        gone = set(deletes)
        final = {d.id: d for d in upserts if d.id not in gone}
        replaced = [*gone, *(i for i in final if i not in fresh)]
        with self._queue_lock:
            self._queue.append(_Staged(replaced, list(final.values()), tick))
        self._wake.set()

    def _take_queue(self) -> None:
        """Hand the queued changes to the writer, in commit order (the caller holds _lock)."""
        with self._queue_lock:
            staged, self._queue = self._queue, []
            # Pending before the queue's lock is let go: a search between the two would
            # find nothing queued and nothing pending, and read the index without them.
            if staged:
                self._pending_tick = staged[-1].tick
        try:
            for entry in staged:
                for node_id in entry.replaced:
                    self._writer.delete_documents_by_term("id", node_id)
                for d in entry.docs:
                    self._writer.add_document(self._doc(d))
        except ValueError as exc:  # the writer's threads died writing its files (a full disk)
            self._failed(exc)

    @property
    def _behind(self) -> bool:
        """Whether some write is not yet searchable (queued, or staged but uncommitted)."""
        return self._pending_tick is not None or bool(self._queue)

    def _failed(self, exc: Exception) -> NoReturn:
        """A commit that failed (a full disk), or a document its writer's threads could not
        take (they died writing a segment), leaves tantivy's writer unfit: a later
        commit, once there is room, saved an index of no documents. So the index takes
        no more changes in this process, its tick is dropped so the next opening derives
        it whole from the graph, and searches say why they cannot answer."""
        self._fault = (
            f"the text index at {self._dir} could not save its changes ({exc}); is the disk "
            "full, or the folder not writable? Search is off until the server is restarted "
            "(with room on the disk and the folder writable), which derives the index again "
            "from the graph"
        )
        with contextlib.suppress(OSError):
            self._tick_file.unlink()
        raise StoreError(self._fault) from exc

    def _check(self) -> None:
        if self._fault is not None:
            raise StoreError(self._fault)

    def _check_reads(self) -> None:
        self._check()
        if self._broken is not None:  # writes still go in: the next reset clears them
            raise IndexDamaged(self._broken)

    def flush(self) -> None:
        with self._lock:
            self._check()
            self._take_queue()
            if self._pending_tick is None:
                return
            with self._changing():
                try:
                    self._writer.commit()
                except ValueError as exc:  # tantivy's error for a failed write of its files
                    self._failed(exc)
                # Reloaded before nothing is pending: a search that finds nothing pending
                # must find it searchable.
                self._index.reload()
            self._mark(self._pending_tick)
            self._pending_tick = None

    @contextlib.contextmanager
    def _changing(self) -> Generator[None]:
        """A commit (or a new index) under way: the statistics counted so far are of
        another era, and none counted meanwhile is kept (``_era``); they are let go too.
        The caller holds ``_lock``."""
        self._era += 1
        self._totals, self._freqs = {}, {}
        try:
            yield
        finally:
            self._totals, self._freqs = {}, {}
            self._era += 1

    def _flush_loop(self) -> None:
        while not self._stopping:
            self._wake.wait()
            self._wake.clear()
            if self._stopping:
                return
            try:
                # What writes queued goes to tantivy at once; the commit waits until
                # writes have been quiet for a moment.
                self._stage()
                while self._wake.wait(self._flush_delay):
                    self._wake.clear()
                    if self._stopping:
                        return
                    self._stage()
                self.flush()
            except Exception:  # the next flush, a search or a restart's rebuild catches up
                log.exception("text index flush failed")

    def _stage(self) -> None:
        with self._lock:
            self._check()
            self._take_queue()

    def rebuild(self, docs: Iterable[IndexDoc], tick: int) -> int:
        n = 0
        with self._lock:
            with self._queue_lock:
                self._queue = []
            self._pending_tick = None
            try:
                self._writer.delete_all_documents()
                for d in docs:
                    self._writer.add_document(self._doc(d))
                    n += 1
            except ValueError as exc:  # as in _take_queue
                self._failed(exc)
            with self._changing():
                try:
                    self._writer.commit()
                except ValueError as exc:
                    self._failed(exc)
                self._index.reload()
            self._mark(tick)
            self._broken = None  # whole again (``reset`` left it set, in case this failed)
        return n

    def reset(self) -> None:
        """Clear a damaged index away and start an empty one, for ``rebuild`` to fill;
        searches refuse until it has (an empty index would answer nothing, silently)."""
        with self._lock:
            with self._queue_lock:
                self._queue = []
            self._pending_tick = None
            with self._changing():
                self._index = self._fresh()
            self._files = {}
            # The old writer goes with the old files (its lock file went with them).
            self._writer = self._index.writer(heap_size=64_000_000, num_threads=1)

    @contextlib.contextmanager
    def _reading(self) -> Generator[None]:
        """Tantivy's failures to read its files, as ``IndexDamaged``: a ValueError, or a
        panic (a damaged term dictionary stopped the whole server with one)."""
        try:
            yield
        except ValueError as exc:
            raise self._damaged(exc) from exc
        except BaseException as exc:
            if not _panicked(exc):
                raise
            raise self._damaged(exc) from exc

    def _look(self) -> None:
        """Damage to the files of the last commit, found by looking at them: a file
        tantivy wrote is never written again, so one whose size or time changed since it
        was last looked at is read against its checksum. A garbled term dictionary may
        read as "no such term" and fail no search; this finds it at the first search
        ``look_every`` seconds after the last look. New files (a commit's, a merge's) are
        noted unread; a file a merge let go is no longer named."""
        now = time.monotonic()
        if now - self._looked < self.look_every or not self._look_lock.acquire(blocking=False):
            return
        try:
            self._looked = now
            names = _committed(self._dir)
            if isinstance(names, str):
                raise self._damaged(names)
            seen: dict[str, tuple[int, int]] = {}
            for name in names:
                try:
                    st = os.stat(self._dir / name)
                except FileNotFoundError:
                    named = _committed(self._dir)  # a merge may have let it go meanwhile
                    if isinstance(named, str) or name in named:
                        raise self._damaged(f"{name} is missing") from None
                    continue
                except OSError as exc:
                    raise self._damaged(f"{name} cannot be read ({exc.strerror or exc})") from exc
                held = (st.st_size, st.st_mtime_ns)
                before = self._files.get(name)
                if before is not None and before != held:
                    problem = _footer_problem(self._dir / name)
                    if problem is not None:
                        raise self._damaged(problem)
                seen[name] = held
            self._files = seen
        finally:
            self._look_lock.release()

    def _damaged(self, why: BaseException | str) -> IndexDamaged:
        """The index found damaged while serving: its tick is dropped, so the next opening
        derives it again even if this process cannot, and searches refuse until
        ``reset``."""
        said = why if isinstance(why, str) else _first_line(why)
        self._broken = (
            f"the text index at {self._dir} could not be read ({said}); it is "
            "derived again from the graph"
        )
        with contextlib.suppress(OSError):
            self._tick_file.unlink()
        return IndexDamaged(self._broken)

    def search(
        self,
        text: str,
        *,
        types: Iterable[str] | None,
        heads_only: bool,
        limit: int,
        withheld: frozenset[str] = frozenset(),
        hidden_loci: frozenset[str] = frozenset(),
    ) -> list[SearchHit]:
        """The best ``limit`` documents for ``text``'s terms by tantivy's own scores (over
        every document, the withheld ones too: candidates, not a score to show), none
        classified with a ``withheld`` class nor recorded in a ``hidden_loci`` session:
        those are left out by the query itself, so they take no place among the
        candidates."""
        self._check_reads()
        self._look()
        terms = query_terms(text)
        if not terms or limit <= 0:
            return []
        if self._behind:
            self.flush()
        should = [
            (tantivy.Occur.Should, tantivy.Query.term_query(self._schema, "terms", t))
            for t in terms
        ]
        type_list = list(types or [])
        clauses: list[tuple[tantivy.Occur, tantivy.Query]]
        if type_list:
            type_q = tantivy.Query.boolean_query(
                [
                    (tantivy.Occur.Should, tantivy.Query.term_query(self._schema, "type", t))
                    for t in type_list
                ]
            )
            clauses = [
                (tantivy.Occur.Must, tantivy.Query.boolean_query(should)),
                (tantivy.Occur.Must, type_q),
            ]
        else:
            clauses = list(should)
        if heads_only:
            # Superseded versions left out, not heads required: a required clause that
            # matches nearly every document, or a union nested under one, kept tantivy from
            # its block-max top-k (at a million nodes 18 ms a search against 6.5 ms); a
            # head's share of the score was the same small amount for every head.
            head_0 = tantivy.Query.term_query(self._schema, "head", "0")
            clauses.append((tantivy.Occur.MustNot, head_0))
        if withheld or hidden_loci:
            clauses.append((tantivy.Occur.MustNot, self._hidden((withheld, hidden_loci))))
        with self._reading():
            searcher = self._index.searcher()
            # Not counted: the count of every matching document is never read, and
            # counting visits each one (at a million nodes about a tenth of a search's time).
            result = searcher.search(tantivy.Query.boolean_query(clauses), limit, count=False)
            hits: list[SearchHit] = []
            for score, address in result.hits:
                doc = searcher.doc(address)
                terms = doc["terms"]
                hits.append(
                    SearchHit(
                        id=str(doc["id"][0]),
                        score=float(score),
                        terms=str(terms[0]) if terms else "",
                    )
                )
        return hits

    def stats(
        self,
        terms: Iterable[str],
        withheld: frozenset[str] = frozenset(),
        hidden_loci: frozenset[str] = frozenset(),
    ) -> TermStatsSnapshot:
        """Document count, mean length and document frequencies, in tokenizer terms,
        counting no document of a ``withheld`` class or a ``hidden_loci`` session.

        Counts include superseded nodes (they are still documents of the memory).
        Every figure comes from one searcher and counts live documents only, so a
        frequency can never exceed the count (see the module docstring)."""
        self._check_reads()
        if self._behind:
            self.flush()
        with self._reading():
            return self._stats(list(dict.fromkeys(terms)), (withheld, hidden_loci))

    def _stats(self, unique: list[str], unseen: _Unseen) -> TermStatsSnapshot:
        era = self._era
        keep = era % 2 == 0  # no commit under way
        held = self._totals.get(unseen) if keep else None
        totals = held[1] if held is not None and held[0] == era else None
        dfs: dict[str, int] = {}
        if keep:
            for t in unique:
                got = self._freqs.get((unseen, t))
                if got is not None and got[0] == era:
                    dfs[t] = got[1]
        missing = [t for t in unique if t not in dfs]
        if totals is not None and not missing:
            n, total = totals
            return TermStatsSnapshot(n, total / n if n else 0.0, dfs)
        searcher = self._index.searcher()
        if totals is None:
            totals = self._count_totals(searcher, unseen)
        n, total = totals
        counted = (
            self._count_freqs(searcher, missing, unseen) if n > 0 else dict.fromkeys(missing, 0)
        )
        if keep:  # counted in this era: a commit since makes it unread
            if len(self._freqs) > _KEPT_FREQS:
                self._freqs = {}
            self._totals[unseen] = (era, totals)
            self._freqs.update({(unseen, t): (era, df) for t, df in counted.items()})
        return TermStatsSnapshot(n, total / n if n else 0.0, {**dfs, **counted})

    def _hidden(self, unseen: _Unseen) -> tantivy.Query:
        """The documents of a withheld class or a hidden locus, each once."""
        classes, loci = unseen
        return tantivy.Query.boolean_query(
            [
                *(
                    (tantivy.Occur.Should, tantivy.Query.term_query(self._schema, "class", c))
                    for c in sorted(classes)
                ),
                *(
                    (tantivy.Occur.Should, tantivy.Query.term_query(self._schema, "locus", x))
                    for x in sorted(loci)
                ),
            ]
        )

    def _count_totals(self, searcher: tantivy.Searcher, unseen: _Unseen) -> tuple[int, float]:
        """Documents and their total length, less the ``unseen`` ones (a withheld
        class's, a hidden locus's)."""
        n = int(searcher.num_docs)
        if n == 0:
            return 0, 0.0
        total = _aggregate(searcher, tantivy.Query.all_query(), "sum")
        if any(unseen):
            # Unseen documents are few (hidden loci's are fewer than the rest, mostly):
            # what they add is counted and taken away (the same figures as counting the
            # others, at a fraction of the cost).
            hidden = self._hidden(unseen)
            n -= int(_aggregate(searcher, hidden, "value_count"))
            total -= _aggregate(searcher, hidden, "sum")
        return (n, total) if n > 0 else (0, 0.0)

    def _count_freqs(
        self, searcher: tantivy.Searcher, terms: list[str], unseen: _Unseen
    ) -> dict[str, int]:
        def term(t: str) -> tantivy.Query:
            return tantivy.Query.term_query(self._schema, "terms", t)

        dfs = {t: int(_aggregate(searcher, term(t), "value_count")) for t in terms}
        if any(unseen):
            hidden = self._hidden(unseen)
            for t in terms:
                both = tantivy.Query.boolean_query(
                    [(tantivy.Occur.Must, term(t)), (tantivy.Occur.Must, hidden)]
                )
                dfs[t] -= int(_aggregate(searcher, both, "value_count"))
        return dfs

    def close(self) -> None:
        self._stopping = True
        self._wake.set()
        self._flusher.join(timeout=10)
        self.flush()
        with self._lock:
            self._writer.wait_merging_threads()
