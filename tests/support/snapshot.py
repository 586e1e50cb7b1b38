"""A fingerprint of everything a store holds, to prove a refusal wrote nothing."""

from __future__ import annotations

from typing import Any

from kenning_encounter.store.port import GraphStore, ReadTx


def snapshot(store: GraphStore) -> dict[str, Any]:
    def work(tx: ReadTx) -> dict[str, Any]:
        graph = tx.authored_graph()
        return {
            "clock": tx.clock(),
            "nodes": sorted((n.id, n.name, n.description, n.status or "") for n in graph.nodes),
            "edges": sorted((e.source, e.type, e.target) for e in graph.edges),
            "encounters": sorted(
                (
                    e.name,
                    e.sealed_at or "",
                    e.dissolved_at or "",
                    e.summary or "",
                    e.last_activity_at or "",
                )
                for e in tx.encounters(limit=1_000_000)
            ),
            "loci": sorted(tx.loci()),
        }

    return store.read(work)
