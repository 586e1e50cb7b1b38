"""The meaning matcher seen from the pipeline, and its upkeep beside the store.

``MeaningRuntime`` owns the sidecar, the provider, the maintainer and the
matcher for one server: it reconciles the sidecar with the graph at start, hears
about created and deleted nodes after they commit (a write never waits for a
model), and answers the pipeline's selection with seeds or a fallback.
"""

from __future__ import annotations

import logging
from collections.abc import Sequence
from datetime import datetime
from pathlib import Path

from kenning_encounter.infusion.select import Seed, Selection
from kenning_encounter.meaning import (
    Matcher,
    MatcherOptions,
    MeaningDiagnostic,
    MeaningMaintainer,
    MeaningStore,
    Provider,
    SidecarStore,
    infuse_meaning,
)
from kenning_encounter.store.port import GraphStore, ReadTx
from kenning_encounter.store.records import NodeRecord
from kenning_encounter.textproc_time import written_time

log = logging.getLogger(__name__)
_RECENT_ENCOUNTERS = 3
_ENCOUNTER_PAGE = 1_000


class StoreCandidates:
    """The matcher's candidate window, drawn from the store."""

    def __init__(self, store: GraphStore) -> None:
        self._store = store

    def lexical_hits(self, text: str, limit: int) -> list[str]:
        return [h.id for h in self._store.fulltext(text, limit=limit)]

    def _recent_encounter_nodes(self, encounters: int, limit: int) -> list[str]:
        def work(tx: ReadTx) -> list[str]:
            names = [e.name for e in tx.encounters(limit=encounters)]
            return tx.encounter_nodes(names, limit) if names else []

        return self._store.read(work)

    def recent(self, limit: int) -> list[str]:
        return self._recent_encounter_nodes(limit, limit)

    def neighbourhood(self, limit: int) -> list[str]:
        return self._recent_encounter_nodes(_RECENT_ENCOUNTERS, limit)


class MeaningRuntime:
    def __init__(
        self,
        store: GraphStore,
        sidecar: Path | MeaningStore,
        provider: Provider,
        options: MatcherOptions,
        *,
        hidden_loci: frozenset[str] = frozenset(),
    ) -> None:
        self._store = store
        # A reader face's hidden sessions: their nodes' meanings go to no matcher, so none
        # is chosen, nor shown by infuse_meaning. Their ids, as of a clock (``_unseen``).
        self._hidden_loci = hidden_loci
        self._unseen_at: tuple[int, frozenset[str]] | None = None
        # A directory: the file beside a memory one process owns; else the store's meanings.
        self.sidecar: MeaningStore = (
            SidecarStore(sidecar, held=self._held) if isinstance(sidecar, Path) else sidecar
        )
        self.provider = provider
        self.maintainer = MeaningMaintainer(self.sidecar, provider)
        self.matcher = Matcher(self.sidecar, provider, options, dates=self._dates)
        self._candidates = StoreCandidates(store)

    def start(self) -> None:
        nodes = self._store.read(lambda tx: tx.authored_graph().nodes)
        # A classified node's text never goes to the meaning model, granted or not, and
        # reconciling without it drops a meaning made before it was classified.
        report = self.maintainer.reconcile([n for n in nodes if not _classified(n)])
        log.info("meaning sidecar reconciled: %s", report)
        self.maintainer.start()

    def close(self) -> None:
        self.maintainer.close()
        self.sidecar.close()
        self.provider.close()

    def _held(self, ids: Sequence[str]) -> set[str]:
        """Which of the ids the memory still holds: a meaning of a node deleted while it
        was being made is not kept (the sidecar asks as it writes)."""
        return set(self._store.read(lambda tx: tx.get_nodes(list(ids))))

    # --- the memory's node listener ------------------------------------------------
    def nodes_created(self, nodes: Sequence[NodeRecord]) -> None:
        for node in nodes:
            if not _classified(node):
                self.maintainer.enqueue(node)

    def nodes_deleted(self, node_ids: Sequence[str]) -> None:
        for node_id in node_ids:
            self.maintainer.drop(node_id)

    # --- selection ---------------------------------------------------------------
    def _dates(self, ids: Sequence[str]) -> dict[str, str]:
        """Each node's date as the matcher lists it, as the payload shows it: its world
        time where it states one, else when it was recorded, as written."""
        found = self._store.read(lambda tx: tx.get_nodes(list(ids)))
        return {i: written_time(n)[1][:10] for i, n in found.items()}

    def _unseen(self) -> frozenset[str]:
        """The nodes the hidden sessions recorded, read again only after a write."""
        hidden = self._hidden_loci
        if not hidden:
            return frozenset()
        kept = self._unseen_at

        def work(tx: ReadTx) -> tuple[int, frozenset[str]]:
            clock = tx.clock()
            if kept is not None and kept[0] == clock:
                return kept
            names: list[str] = []
            offset = 0
            while True:  # every encounter's locus, a page at a time
                page = tx.encounters(limit=_ENCOUNTER_PAGE, offset=offset)
                names += [e.name for e in page if e.locus in hidden]
                if len(page) < _ENCOUNTER_PAGE:
                    break
                offset += len(page)
            members = tx.encounter_members(names) if names else {}
            return clock, frozenset(i for ids in members.values() for i in ids)

        self._unseen_at = self._store.read(work)
        return self._unseen_at[1]

    def _heads(self, ids: Sequence[str]) -> dict[str, NodeRecord]:
        """Each picked id's live head: a pick of an old revision stands for its successor."""

        def work(tx: ReadTx) -> dict[str, NodeRecord]:
            out: dict[str, NodeRecord] = {}
            found = tx.get_nodes(list(ids))
            for i in ids:
                node = found.get(i)
                for _ in range(100):
                    if node is None or node.superseded_by is None:
                        break
                    node = tx.get_node(node.superseded_by)
                if node is not None:
                    out[i] = node
            return out

        return self._store.read(work)

    def select_seeds(
        self,
        prompt: str,
        trajectory: Sequence[str],
        limit: int,
        *,
        timeout_s: float | None = None,
        now: datetime | None = None,
    ) -> Selection:
        result = self.matcher.select(
            prompt,
            trajectory,
            candidates=self._candidates,
            exclude=self._unseen(),
            timeout_s=timeout_s,
            now=now,
        )
        window = {
            "used": result.window.used,
            "size": result.window.size,
            "pool": result.window.pool_size,
        }
        if not result.ok:
            return Selection(
                "fallback",
                (),
                fallback_reason=result.fallback_reason,
                fallback_detail=result.fallback_detail,
                match_id=result.match_id,
                provider=result.provider,
                model=result.model,
                window=dict(window),
            )
        ids = list(result.ids)[:limit]
        found = self._heads(ids)
        reasons = result.reasons or {}
        seen: set[str] = set()
        seeds: list[Seed] = []
        for rank, i in enumerate(ids):
            node = found.get(i)
            if node is None or node.id in seen:
                continue
            seen.add(node.id)
            why = "meaning-matched" + (f": {reasons[i]}" if i in reasons else "")
            seeds.append(Seed(node, 1.0 - rank / (2 * max(len(ids), 1)), why))
        return Selection(
            "meaning",
            tuple(seeds),
            match_id=result.match_id,
            provider=result.provider,
            model=result.model,
            window=dict(window),
        )

    def diagnose(self, prompt: str, trajectory: Sequence[str]) -> MeaningDiagnostic:
        return infuse_meaning(
            self.matcher, prompt, trajectory, candidates=self._candidates, exclude=self._unseen()
        )


def _classified(node: NodeRecord) -> bool:
    return bool(node.props.get("classification"))
