"""The text index beside the embedded graph: a write queues, a search sees it at once.

A write hands its changes to the index inside the store's write lock; a tantivy
commit (the flusher's, or a search's) holds the index's own lock for tens of
milliseconds. The write must not wait for that commit, and a search after the
write must still find what it wrote. Real tantivy, a real index directory.
"""

from __future__ import annotations

import threading
import time
from pathlib import Path

from kenning_encounter.store.embedded.textindex import IndexDoc, TextIndex


def _doc(node_id: str, words: str) -> IndexDoc:
    return IndexDoc(node_id, "Observation", True, words, "")


def test_a_write_does_not_wait_for_a_commit_in_progress(tmp_path: Path) -> None:
    index = TextIndex(tmp_path / "textindex", flush_delay=0.05)
    try:
        index.apply([_doc("obs_000000000001", "retry storm")], [], 1, fresh={"obs_000000000001"})
        index.flush()
        # The index's writer lock held, as a commit in progress holds it.
        held = threading.Event()
        release = threading.Event()

        def committing() -> None:
            with index._lock:  # pyright: ignore[reportPrivateUsage]
                held.set()
                release.wait(10)

        holder = threading.Thread(target=committing)
        holder.start()
        assert held.wait(5)
        started = time.perf_counter()
        index.apply([_doc("obs_000000000002", "cron overlap")], [], 2, fresh={"obs_000000000002"})
        waited = time.perf_counter() - started
        release.set()
        holder.join(10)
        assert waited < 0.5, f"the write waited {waited:.2f}s on the commit"
        hits = index.search("cron overlap", types=None, heads_only=True, limit=5)
        assert [h.id for h in hits] == ["obs_000000000002"]
        assert index.synced_tick() == 2
    finally:
        index.close()


def test_a_replaced_document_is_found_once_with_its_new_state(tmp_path: Path) -> None:
    index = TextIndex(tmp_path / "textindex", flush_delay=0.05)
    try:
        index.apply([_doc("obs_000000000001", "retry storm")], [], 1, fresh={"obs_000000000001"})
        # Superseded later: the same id again, no longer a head (not fresh this time).
        old = IndexDoc("obs_000000000001", "Observation", False, "retry storm", "")
        index.apply([old, _doc("obs_000000000002", "retry storm again")], [], 2,
                    fresh={"obs_000000000002"})  # fmt: skip
        heads = index.search("retry storm", types=None, heads_only=True, limit=5)
        every = index.search("retry storm", types=None, heads_only=False, limit=5)
        assert [h.id for h in heads] == ["obs_000000000002"]
        assert sorted(h.id for h in every) == ["obs_000000000001", "obs_000000000002"]
    finally:
        index.close()


def test_statistics_kept_between_commits_go_with_the_next_one(tmp_path: Path) -> None:
    """The statistics a search counts are kept until the index next commits: asked again
    they cost nothing, and a write, once searchable, is in them (every gate's), a
    deletion out of them."""
    index = TextIndex(tmp_path / "textindex", flush_delay=60)
    phi = frozenset({"phi"})
    try:
        index.apply([_doc("obs_000000000001", "heron marsh")], [], 1, fresh={"obs_000000000001"})
        first = (index.stats(["heron"]), index.stats(["heron"], phi))
        assert [(s.n_docs, s.doc_freq("heron"), s.avg_len) for s in first] == [(1, 1, 2.0)] * 2
        assert (index.stats(["heron"]), index.stats(["heron"], phi)) == first  # kept
        withheld = IndexDoc("obs_000000000003", "Note", True, "heron", "", ("phi",))
        index.apply(
            [_doc("obs_000000000002", "heron heron reeds"), withheld],
            [],
            2,
            fresh={"obs_000000000002", "obs_000000000003"},
        )
        later = (index.stats(["heron"]), index.stats(["heron"], phi))
        assert [(s.n_docs, s.doc_freq("heron")) for s in later] == [(3, 3), (2, 2)]
        index.apply([], ["obs_000000000002"], 3)
        gone = (index.stats(["heron"]), index.stats(["heron"], phi))
        assert [(s.n_docs, s.doc_freq("heron"), s.avg_len) for s in gone] == [
            (2, 2, 1.5),
            (1, 1, 2.0),
        ]
    finally:
        index.close()
