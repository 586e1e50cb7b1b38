"""After an erasure: remove the erased nodes from everything kept beside the graph.

Each step says what it did, for the operator's report. (The erasure's own transaction
has already withdrawn the purpose and summary of each encounter that drew on an erased
node: they are in the graph, and go by the rule below for copied free text.) What each
place holds:

- meanings (a node's one-sentence meaning, model-made from its text): the sidecar
  file beside an embedded memory, compacted so no earlier line keeps the text; on
  Neo4j the stored meanings, whose drop removes the text at once;
- mass baselines (ids, names and ranks of the top nodes at each orient): the erased
  entries are taken out of every reading;
- GDS graphs on Neo4j hold positions and relations, never text; graphs left by stopped
  servers are dropped here all the same, as any server's start would. Servers may keep
  serving a Neo4j memory through an erasure: its transaction moved the store's erasure
  count, and each server empties what it caches in process (tokens of node text,
  encounters' member lists, term counts) when it next reads the count moved
  (infusion/select.py, store/neo4j/text.py);
- the infusion log keeps node ids, never names or bodies, but a prompt's text when the
  operator turned ``infusion_log_prompts`` on: an entry that delivered, pinned or cut an
  erased node loses those ids and its prompt (it drew the node, so it may speak of the
  same subject). The ledger keeps only ids and when each was shown: a deleted node's id
  names nothing, and the ledger drops it as sessions move on;
- on the embedded store, the graph file itself: the engine only marks a deleted row,
  so the file is written again from what is live (``store/embedded/rewrite.py``), and
  with it go the text index (rebuilt from the new file when the store next opens), the
  read_cypher sandbox's copy of the file, and write-ahead logs kept aside after a crash.
"""

from __future__ import annotations

import json
import os
import shutil
from collections.abc import Sequence
from pathlib import Path

from kenning_encounter.analytics.baseline import BaselineStore
from kenning_encounter.store.infusion_log import KeepsInfusionLog
from kenning_encounter.store.meanings import KeepsDerived
from kenning_encounter.store.port import GraphStore

SIDECAR_DIR = "sidecar"
ANALYTICS_DIR = "analytics"
TEXT_INDEX_DIR = "textindex"
SNAPSHOT_DIR = "cypher-snapshot"
REWRITE_DIR = ".erasure-rewrite"
# The ids of an erasure whose scrubbing has not finished (ids only, never text): written
# before the deletion commits, removed once everything beside is scrubbed.
PENDING = ".erasure-pending.json"


def pending(data_dir: Path) -> list[str] | None:
    try:
        data = json.loads((data_dir / PENDING).read_text())
    except FileNotFoundError:
        return None
    except (OSError, ValueError):
        return []
    ids = data.get("ids") if isinstance(data, dict) else None
    return [str(i) for i in ids] if isinstance(ids, list) else []


def unfinished(data_dir: Path) -> str | None:
    """What to say when an erasure stopped before it scrubbed what it erased (its nodes
    are gone from every tool; their text may still be in the files on disk)."""
    if pending(data_dir) is None:
        return None
    return (
        f"an erasure in {data_dir} stopped before it finished: what it erased may still "
        "be in the files on disk; stop the server and run kenning-encounter erase "
        f"--resume --data-dir {data_dir}"
    )


def mark_pending(data_dir: Path, ids: Sequence[str]) -> None:
    data_dir.mkdir(parents=True, exist_ok=True)
    tmp = data_dir / (PENDING + ".tmp")
    tmp.write_text(json.dumps({"ids": list(ids)}))
    os.replace(tmp, data_dir / PENDING)


def clear_pending(data_dir: Path) -> None:
    (data_dir / PENDING).unlink(missing_ok=True)


def beside_store(store: GraphStore, data_dir: Path, ids: Sequence[str]) -> list[str]:
    """Meanings, baselines and analytics graphs; the store still open. Report lines."""
    gone = set(ids)
    lines = [_meanings(store, data_dir, gone), _baselines(store, data_dir, gone)]
    if isinstance(store, KeepsInfusionLog):
        changed = store.infusion_log.forget_nodes(sorted(gone))
        lines.append(f"infusion log: {changed} entr(ies) lost the erased ids and their prompt")
    executor = store.analytics_executor()
    if executor is not None:
        from kenning_encounter.analytics.gds_owners import sweep

        dropped = sweep(executor)
        lines.append(
            f"GDS graphs: {len(dropped)} left by stopped servers dropped (graphs hold no text)"
        )
    if store.backend != "embedded":
        # Servers may serve the memory through the erasure: the erasure's transaction
        # moved the store's erasure count, and each drops what it cached of node text
        # (tokens, encounters' member lists, term counts) at its next read of it.
        lines.append(
            "servers serving this memory: each drops what it cached of node text at its "
            "next infusion or search (no restart needed)"
        )
    return lines


def _meanings(store: GraphStore, data_dir: Path, gone: set[str]) -> str:
    if isinstance(store, KeepsDerived):
        dropped = sum(store.meanings.drop(i) for i in sorted(gone))
        return f"meanings (in the store): {dropped} dropped"
    directory = data_dir / SIDECAR_DIR
    if not directory.is_dir():
        return "meanings: no sidecar"
    from kenning_encounter.meaning.sidecar import SidecarStore

    sidecar = SidecarStore(directory)
    try:
        dropped = sum(sidecar.drop(i) for i in sorted(gone))
        sidecar.compact()
    finally:
        sidecar.close()
    return f"meanings (sidecar {directory}): {dropped} dropped, log compacted"


def _baselines(store: GraphStore, data_dir: Path, gone: set[str]) -> str:
    table = store.baselines if isinstance(store, KeepsDerived) else None
    baselines = BaselineStore(data_dir / ANALYTICS_DIR, table=table)
    if table is None and not baselines.path.exists():
        return "mass baselines: none kept"
    removed = 0
    for reading in baselines.all():
        kept = tuple(e for e in reading.entries if e.id not in gone)
        if len(kept) == len(reading.entries):
            continue
        removed += len(reading.entries) - len(kept)
        update = {
            "entries": kept,
            "node_count": reading.node_count - len(reading.entries) + len(kept),
        }
        baselines.save(reading.model_copy(update=update))
    return f"mass baselines: {removed} entr(ies) removed"


def embedded_files(data_dir: Path) -> list[str]:
    """Write the embedded graph file again and drop what was derived from the old one.

    The store must be closed; it is opened once afterwards, which rebuilds the text
    index from the new file."""
    from kenning_encounter.store.embedded.backend import EmbeddedStore
    from kenning_encounter.store.embedded.rewrite import GRAPH, rewrite

    lines: list[str] = []
    damaged = sorted(p.name for p in data_dir.glob(GRAPH + ".wal.damaged-*"))
    fresh = data_dir / REWRITE_DIR
    shutil.rmtree(fresh, ignore_errors=True)
    EmbeddedStore.open(fresh).close()
    copied = rewrite(data_dir, fresh)
    lines.append(f"graph file: written again from what is live ({copied} rows and relations)")
    if damaged:
        lines.append(f"write-ahead logs kept aside after a crash removed: {', '.join(damaged)}")
    for name in (TEXT_INDEX_DIR, SNAPSHOT_DIR):
        shutil.rmtree(data_dir / name, ignore_errors=True)
    EmbeddedStore.open(data_dir).close()
    lines.append("text index: rebuilt from the new file; read_cypher snapshot removed")
    return lines
