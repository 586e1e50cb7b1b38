"""Deterministic synthetic memories shaped like real ones.

Many loci each work through encounters; observations ground concepts, questions
are raised and some resolved, hypotheses are supported or challenged, and a few
concepts are revised. The same seed gives the same memory, byte for byte.
"""

from __future__ import annotations

import random
from collections.abc import Iterator
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from kenning_encounter.memory.service import Memory
    from kenning_encounter.store.embedded.backend import EmbeddedStore

_TOPICS = (
    "retry storm", "cache eviction", "schema drift", "auth token expiry", "deploy window",
    "queue backlog", "index rebuild", "memory leak", "rate limiter", "dns failover",
    "billing export", "search ranking", "session replay", "feature flag", "log sampling",
    "batch import", "payment webhook", "cold start", "lock contention", "clock skew",
)  # fmt: skip
_VERBS = ("spikes", "stalls", "recovers", "fails", "drifts", "doubles", "halves", "times out")
_PLACES = ("api gateway", "worker pool", "primary db", "edge cache", "scheduler", "ingest path")
_WORDS = (
    "after", "before", "during", "whenever", "because", "although", "unless", "until",
    "latency", "throughput", "errors", "retries", "timeouts", "connections", "threads",
    "morning", "evening", "weekend", "release", "rollback", "migration", "customer",
)  # fmt: skip


@dataclass
class Step:
    """One call an agent would make."""

    kind: str  # advance | entities | relations | close
    session: str
    payload: Any = None


@dataclass
class SynthMemory:
    steps: list[Step] = field(default_factory=list)
    names: list[str] = field(default_factory=list)
    queries: list[str] = field(default_factory=list)


def _sentence(rng: random.Random, topic: str) -> str:
    words = rng.sample(_WORDS, 6)
    return (
        f"The {topic} {rng.choice(_VERBS)} at the {rng.choice(_PLACES)} "
        f"{' '.join(words)} (run {rng.randint(1, 9999)})."
    )


def generate(nodes: int, *, seed: int = 7, loci: int = 12, batch: int = 50) -> SynthMemory:
    """A memory of about ``nodes`` authored nodes, as the calls that would record it."""
    rng = random.Random(seed)
    mem = SynthMemory()
    made = 0
    serial = 0
    concepts: list[str] = []
    questions: list[str] = []
    hypotheses: list[str] = []
    encounter_no = 0
    while made < nodes:
        session = f"locus-{rng.randrange(loci)}"
        encounter_no += 1
        mem.steps.append(Step("advance", session, f"encounter {encounter_no}"))
        for _ in range(rng.randint(1, 4)):
            if made >= nodes:
                break
            entities: list[dict[str, Any]] = []
            relations: list[dict[str, Any]] = []
            size = min(batch, nodes - made)
            revised: set[str] = set()
            for _ in range(size):
                serial += 1
                topic = rng.choice(_TOPICS)
                roll = rng.random()
                name = f"{topic} #{serial}"
                if roll < 0.6 and concepts:
                    entities.append(
                        {"type": "Observation", "name": name, "description": _sentence(rng, topic)}
                    )
                    if concepts:
                        relations.append(
                            {"source": name, "type": "GROUNDS", "target": rng.choice(concepts)}
                        )
                    if hypotheses and rng.random() < 0.3:
                        rel = "SUPPORTS" if rng.random() < 0.7 else "CHALLENGES"
                        relations.append(
                            {"source": name, "type": rel, "target": rng.choice(hypotheses)}
                        )
                    if questions and rng.random() < 0.1:
                        relations.append(
                            {"source": name, "type": "RESOLVES", "target": rng.choice(questions)}
                        )
                elif roll < 0.78 and concepts and len(concepts) > 3 and rng.random() < 0.2:
                    old = rng.choice(concepts[:-2])
                    if old in revised or any(e["name"] == old for e in entities):
                        entities.append(
                            {"type": "Note", "name": name, "description": _sentence(rng, topic)}
                        )
                    else:
                        revised.add(old)
                        entities.append(
                            {
                                "type": "Concept",
                                "name": old,
                                "description": _sentence(rng, topic),
                                "supersedes": old,
                                "revision_why": "new evidence changed the picture",
                            }
                        )
                        continue
                elif roll < 0.75 or not concepts:
                    entities.append(
                        {"type": "Concept", "name": name, "description": _sentence(rng, topic)}
                    )
                    if concepts and rng.random() < 0.5:
                        relations.append(
                            {"source": name, "type": "INFORMS", "target": rng.choice(concepts)}
                        )
                    concepts.append(name)
                elif roll < 0.85:
                    entities.append(
                        {
                            "type": "Question",
                            "name": name,
                            "description": f"Why does the {topic} {rng.choice(_VERBS)}?",
                        }
                    )
                    if concepts:
                        relations.append(
                            {"source": rng.choice(concepts), "type": "RAISES", "target": name}
                        )
                    questions.append(name)
                elif roll < 0.95:
                    entities.append(
                        {
                            "type": "Hypothesis",
                            "name": name,
                            "description": f"The {topic} is caused by the {rng.choice(_PLACES)}.",
                        }
                    )
                    hypotheses.append(name)
                else:
                    entities.append(
                        {"type": "Note", "name": name, "description": _sentence(rng, topic)}
                    )
                mem.names.append(name)
            made += size
            mem.steps.append(Step("entities", session, entities))
            if relations:
                mem.steps.append(Step("relations", session, relations))
        mem.steps.append(Step("close", session, f"summary of encounter {encounter_no}"))
    for _ in range(200):
        topic = rng.choice(_TOPICS)
        mem.queries.append(f"{topic} {rng.choice(_VERBS)} {rng.choice(_PLACES)}")
    return mem


def replay(memory: Any, synth: SynthMemory) -> Iterator[tuple[Step, float]]:
    """Apply every step to a Memory service, yielding each step with its seconds."""
    import time

    for step in synth.steps:
        started = time.perf_counter()
        if step.kind == "advance":
            memory.advance_encounter(step.session, str(step.payload))
        elif step.kind == "entities":
            memory.create_entities(step.session, step.payload)
        elif step.kind == "relations":
            memory.create_relations(step.session, step.payload)
        else:
            memory.close_encounter(step.session, str(step.payload))
        yield step, time.perf_counter() - started


def creation_time(memory: Any, synth: SynthMemory) -> tuple[float, int]:
    """Replay the whole history; the seconds spent creating entities, and how many."""
    seconds, created = 0.0, 0
    for step, took in replay(memory, synth):
        if step.kind == "entities":
            seconds += took
            created += len(step.payload)
    return seconds, created


def record(store: EmbeddedStore, synth: SynthMemory) -> Memory:
    """A Memory over an embedded store holding the whole history, its text index flushed."""
    from kenning_encounter.memory.service import Memory

    memory = Memory(store)
    for _ in replay(memory, synth):
        pass
    store.flush_index()
    return memory
