"""One workload for every server: the same entities, batches and queries, seeded.

Entity texts come from the shared synthetic generator (bench.synth), minus its
revisions: the peers have no notion of one node superseding another, so a
revision would be a duplicate name to them and a different operation to us.
Each query is the subject of a recorded text (its first run of three content
words, e.g. "retry storm spikes"), as an agent would look a matter up again, so
every server has something to find: the reference server matches a query as one
substring, the Neo4j peer as Lucene terms, ours as ranked words.
"""

from __future__ import annotations

import random
from dataclasses import dataclass, field
from typing import Any

from bench.synth import generate

BATCH = 50
QUERY_WORDS = 3
# A run that starts or ends on one of these finds almost everything or nothing.
_EDGE_WORDS = frozenset({"the", "a", "an", "at", "by", "is", "of", "to", "in", "does", "why"})


@dataclass(frozen=True)
class Entity:
    type: str
    name: str
    text: str


@dataclass(frozen=True)
class Link:
    """A relation between two recorded entities, by name (every peer links by name)."""

    source: str
    type: str
    target: str


@dataclass(frozen=True)
class Workload:
    entities: list[Entity]
    queries: list[str]
    warmup: list[str]
    seed: int
    links: list[Link] = field(default_factory=lambda: [])
    opens: list[str] = field(default_factory=lambda: [])  # names to open, one call each

    def batches(self) -> list[list[Entity]]:
        return [self.entities[i : i + BATCH] for i in range(0, len(self.entities), BATCH)]

    def link_batches(self) -> list[list[Link]]:
        return [self.links[i : i + BATCH] for i in range(0, len(self.links), BATCH)]


def _recorded(count: int, seed: int) -> tuple[list[Entity], list[Link]]:
    """The generator's first ``count`` entities and the relations among them."""
    # Revisions are dropped, so ask the generator for a margin more than needed.
    synth = generate(count + count // 5 + 10, seed=seed)
    found: list[Entity] = []
    relations: list[dict[str, Any]] = []
    for step in synth.steps:
        if step.kind == "relations":
            relations += step.payload
        if step.kind != "entities" or len(found) == count:
            continue
        payload: list[dict[str, Any]] = step.payload
        for item in payload:
            if "supersedes" in item:
                continue
            found.append(Entity(item["type"], item["name"], item["description"]))
            if len(found) == count:
                break
    if len(found) < count:
        raise RuntimeError(f"the generator gave {len(found)} entities, {count} were asked for")
    names = {e.name for e in found}
    links = [
        Link(r["source"], r["type"], r["target"])
        for r in relations
        if r["source"] in names and r["target"] in names and r["type"] != "SUPERSEDES"
    ]
    return found, links


def subject(text: str) -> str | None:
    """The first run of QUERY_WORDS words that neither starts nor ends on a filler word."""
    words = [w.strip(".,?!") for w in text.lower().split()]
    for start in range(len(words) - QUERY_WORDS + 1):
        run = words[start : start + QUERY_WORDS]
        if not all(w.isalpha() for w in run) or run[0] in _EDGE_WORDS or run[-1] in _EDGE_WORDS:
            continue
        phrase = " ".join(run)
        if phrase in text.lower():  # the reference server needs the exact substring
            return phrase
    return None


def _queries(entities: list[Entity], count: int, rng: random.Random) -> list[str]:
    queries: list[str] = []
    for _ in range(100 * count):
        if len(queries) == count:
            return queries
        phrase = subject(rng.choice(entities).text)
        if phrase is not None:
            queries.append(phrase)
    raise RuntimeError(f"found {len(queries)} query phrases in the texts, {count} were asked for")


def build(entities: int, searches: int, *, seed: int = 11, warmup: int = 5) -> Workload:
    """``entities`` texts in batches of BATCH, ``searches`` measured queries, a few to warm up,
    and as many recorded names to open one by one."""
    made, links = _recorded(entities, seed)
    rng = random.Random(seed)
    queries, warm = _queries(made, searches, rng), _queries(made, warmup, rng)
    return Workload(
        entities=made,
        queries=queries,
        warmup=warm,
        seed=seed,
        links=links,
        opens=[rng.choice(made).name for _ in range(searches)],
    )
