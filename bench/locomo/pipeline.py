"""The real thing: each conversation recorded into a real embedded store through the
memory service, each question put to the infusion pipeline's selection and ranking
(lexical path: no model is reachable here), the ranked observations scored.

Mapping: one memory per conversation; each session is one encounter, opened at the
session's date (the store's clock is set to it); each turn is an Observation named by
its dia_id, described "Speaker: text", observed at the session's date.
"""

from __future__ import annotations

import shutil
import tempfile
from dataclasses import dataclass, field
from datetime import datetime
from pathlib import Path

from bench.locomo.data import Conversation
from bench.locomo.retrievers import Searcher, Selection, asked_at
from kenning_encounter.infusion.config import InfusionConfig
from kenning_encounter.infusion.pipeline import Infuser
from kenning_encounter.memory.service import Memory
from kenning_encounter.store.embedded.backend import EmbeddedStore
from kenning_encounter.store.records import NodeRecord


class _Clock:
    """The store's clock, set to each session's date while it is recorded."""

    def __init__(self) -> None:
        self.now = "1970-01-01T00:00:00"

    def __call__(self) -> str:
        return self.now


@dataclass
class _PipelineSearcher:
    store: EmbeddedStore
    infuser: Infuser
    by_name: dict[str, NodeRecord]
    now: datetime | None
    folder: Path
    asked: int = 0

    def select(self, prompt: str, limit: int) -> Selection:
        self.asked += 1
        result = self.infuser.infuse(f"question-{self.asked}", prompt, now=self.now)
        ranked_ids: list[str] = result["meta"]["ranked"][:limit]
        nodes = self.store.read(lambda tx: tx.get_nodes(ranked_ids))
        ranked = [
            self.by_name[nodes[i].name]
            for i in ranked_ids
            if i in nodes and nodes[i].name in self.by_name
        ]
        return Selection(ranked, result["payload"])

    def close(self) -> None:
        self.store.close()
        shutil.rmtree(self.folder, ignore_errors=True)


@dataclass
class PipelineRetriever:
    """Ours, end to end: the memory service writing, the infusion pipeline reading."""

    config: InfusionConfig = field(
        default_factory=lambda: InfusionConfig(seeds=10, items=10, budget_chars=9_000)
    )
    name: str = "pipeline"
    _open: list[_PipelineSearcher] = field(default_factory=list[_PipelineSearcher])

    def open(self, conversation: Conversation) -> Searcher:
        for old in self._open:
            old.close()
        self._open.clear()
        folder = Path(tempfile.mkdtemp(prefix="kenning-locomo-"))
        clock = _Clock()
        store = EmbeddedStore.open(folder / "memory", clock=clock)
        memory = Memory(store)
        locus = conversation.sample_id
        previous: str | None = None
        for encounter in conversation.encounters:
            clock.now = encounter.opened_at
            memory.advance_encounter(
                locus, encounter.purpose, close_summary=f"{previous} done" if previous else None
            )
            previous = encounter.name
            turns = [o for o in conversation.observations if o.encounter == encounter.name]
            if turns:
                memory.create_entities(
                    locus,
                    [
                        {
                            "type": "Observation",
                            "name": o.name,
                            "description": o.description,
                            "t_observed": str(o.props.get("t_observed") or encounter.opened_at),
                        }
                        for o in turns
                    ],
                )
        if previous:
            memory.close_encounter(locus, "conversation recorded")
        store.flush_index()
        searcher = _PipelineSearcher(
            store,
            Infuser(store, self.config),
            {o.name: o for o in conversation.observations},
            asked_at(conversation),
            folder,
        )
        self._open.append(searcher)
        return searcher
