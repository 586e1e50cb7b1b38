"""A synthetic dump of any size, written straight to a file (no store in between).

Replaying calls through a store (``bench.synth.record``) is how a small memory is
made; at a million nodes it would take hours, so this writes the dump an export of
such a memory would give: a few loci working through many encounters (each opened
after the one before, the first of a locus anchored to the latest), writes of up to
``WRITE`` nodes sharing a tick, relations after each write (observations ground
concepts, raise and resolve questions, support or challenge hypotheses, are made at
components, cite sources), some concepts and hypotheses revised, some nodes deleted
again (their encounter's tombstones), a few encounters dissolved and the last of
some loci still open. The same arguments give the same file, byte for byte.

    python -m bench.synth_dump NODES OUT.jsonl
"""

from __future__ import annotations

import hashlib
import random
import shutil
import sys
import tempfile
from collections.abc import Callable
from dataclasses import dataclass, field
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import IO, Any, Final

from bench.synth import _PLACES, _TOPICS, _VERBS, _sentence  # pyright: ignore[reportPrivateUsage]
from kenning_encounter.memory import dump_format as fmt
from kenning_encounter.store.persons import PersonRecord, person_id
from kenning_encounter.store.port import DumpedEdge, DumpedNode, LocusRecord, SpineEdge
from kenning_encounter.store.records import EdgeRecord, EncounterRecord, NodeRecord
from kenning_encounter.vocabulary import NODE_TYPES, RELATION_TYPES

WRITE: Final = 50  # nodes per create_entities call, as an agent batches them
# Every locus is directed by one Person, as sessions of one configured director are.
DIRECTOR: Final = PersonRecord(person_id("bench:director", ""), "bench director", "bench:director")
_BASE: Final = datetime(2025, 1, 1, tzinfo=UTC)
# (type, share) of the nodes created; the rest of the shape follows from them.
_SHARES: Final = (
    ("Observation", 0.45),
    ("Concept", 0.14),
    ("Question", 0.1),
    ("Hypothesis", 0.08),
    ("Note", 0.07),
    ("Component", 0.09),
    ("Citation", 0.07),
)
# (source type, relation, target type, chance per new source node)
_LINKS: Final = (
    ("Observation", "GROUNDS", "Concept", 0.6),
    ("Observation", "OBSERVED_AT", "Component", 0.4),
    ("Observation", "SUPPORTS", "Hypothesis", 0.2),
    ("Observation", "CHALLENGES", "Hypothesis", 0.08),
    ("Observation", "RESOLVES", "Question", 0.08),
    ("Observation", "RAISES", "Question", 0.05),
    ("Concept", "INFORMS", "Concept", 0.4),
    ("Concept", "ABOUT", "Component", 0.3),
    ("Question", "ABOUT", "Concept", 0.7),
    ("Hypothesis", "ABOUT", "Concept", 0.6),
    ("Hypothesis", "COMPOSES", "Hypothesis", 0.1),
    ("Note", "ABOUT", "Concept", 0.8),
    ("Citation", "SUPPORTS", "Concept", 0.5),
    ("Citation", "GROUNDS", "Hypothesis", 0.3),
)
_STATUSES: Final = {
    "Question": (("open", 0.4), ("resolved", 0.5), ("retired", 0.1)),
    "Hypothesis": (
        ("untested", 0.3),
        ("supported", 0.35),
        ("challenged", 0.2),
        ("falsified", 0.1),
        ("retired", 0.05),
    ),
}
_REVISED: Final = ("Concept", "Hypothesis", "Note")
REVISE_SHARE: Final = 0.03  # of the nodes: a revision of an older head of its type
DELETE_SHARE: Final = 0.01  # of the nodes: created, then deleted in the same encounter
DISSOLVE_SHARE: Final = 0.02  # of the encounters: dissolved, never sealed
_MIX: Final = 0x9E3779B97F4B  # odd: multiplying by it mod 2**48 is a bijection


def _at(tick: int) -> str:
    moment = _BASE + timedelta(seconds=7 * tick)
    return moment.isoformat(timespec="milliseconds").replace("+00:00", "Z")


def _id(kind: str, serial: int) -> str:
    return f"{NODE_TYPES[kind].id_prefix}_{(serial * _MIX) % (1 << 48):012x}"


def _pick_weighted(rng: random.Random, pairs: tuple[tuple[str, float], ...]) -> str:
    roll, acc = rng.random(), 0.0
    for value, share in pairs:
        acc += share
        if roll < acc:
            return value
    return pairs[-1][0]


@dataclass
class _Heads:
    """The live heads of each type, for links and revisions: mostly recent, sometimes old."""

    ids: dict[str, list[str]] = field(default_factory=dict[str, list[str]])
    names: dict[str, str] = field(default_factory=dict[str, str])
    slot: dict[str, int] = field(default_factory=dict[str, int])

    def add(self, kind: str, node_id: str, name: str) -> None:
        pool = self.ids.setdefault(kind, [])
        self.slot[node_id] = len(pool)
        pool.append(node_id)
        self.names[node_id] = name

    def pick(self, rng: random.Random, kind: str) -> str | None:
        pool = self.ids.get(kind)
        if not pool:
            return None
        if rng.random() < 0.75:  # near the present: regions form
            return pool[max(0, len(pool) - 1 - int(rng.expovariate(1 / 40)))]
        return pool[int(len(pool) * rng.random() ** 3)]  # an old hub

    def replace(self, kind: str, old: str, new: str) -> None:
        """``new`` revises ``old``: it takes the old head's place and name."""
        index = self.slot.pop(old)
        self.ids[kind][index] = new
        self.slot[new] = index
        self.names[new] = self.names.pop(old)


@dataclass
class _Writer:
    """Nodes and relations go to their own files as they are made (a dump holds every
    node before any relation); the spine stays in memory, it is small."""

    nodes: IO[bytes]
    relations: IO[bytes]
    loci: list[LocusRecord] = field(default_factory=list[LocusRecord])
    encounters: list[EncounterRecord] = field(default_factory=list[EncounterRecord])
    spine: list[SpineEdge] = field(default_factory=list[SpineEdge])
    counts: dict[str, int] = field(default_factory=lambda: dict.fromkeys(fmt.KINDS, 0))

    def node(self, record: DumpedNode) -> None:
        self.nodes.write(fmt.encode(fmt.to_line(record)))
        self.counts["node"] += 1

    def relation(self, record: DumpedEdge) -> None:
        self.relations.write(fmt.encode(fmt.to_line(record)))
        self.counts["relation"] += 1


def _props(kind: str, serial: int, rng: random.Random, tick: int) -> dict[str, str]:
    if kind == "Component":
        place = rng.choice(_PLACES).replace(" ", "_")
        return {
            "source_kind": "file",
            "source_label": "repo",
            "source_key": f"src/{place}/m{serial}.py",
        }
    if kind == "Citation":
        return {"kind": "web", "uri": f"https://docs.example/{serial}", "snapshot": _at(tick)}
    return {}


def _description(kind: str, topic: str, rng: random.Random) -> str:
    if kind == "Question":
        return f"Why does the {topic} {rng.choice(_VERBS)} at the {rng.choice(_PLACES)}?"
    if kind == "Hypothesis":
        return f"The {topic} is caused by the {rng.choice(_PLACES)} {rng.choice(_VERBS)}."
    return _sentence(rng, topic)


class _Generator:
    def __init__(self, nodes: int, seed: int, loci: int, out: _Writer, density: int = 1) -> None:
        self.target = nodes
        self.density = density
        self.rng = random.Random(seed)
        self.locus_count = loci
        self.out = out
        self.tick = 0
        self.serial = 0
        self.made = 0
        self.heads = _Heads()
        self.last_of: dict[str, EncounterRecord] = {}

    def run(self) -> None:
        while self.made < self.target:
            self._encounter()
        # the encounters still open stay open; every other one is sealed or dissolved

    def _encounter(self) -> None:
        rng = self.rng
        locus = f"locus-{rng.randrange(self.locus_count)}"
        self.tick += 1
        opened = self.tick
        if locus not in self.last_of:
            self.out.loci.append(
                LocusRecord(locus, opened, _at(opened), DIRECTOR.id, directed_tick=opened)
            )
        name = f"E{opened}"
        previous = self.last_of.get(locus)
        self.out.spine.append(SpineEdge(locus, "OPENED", name, opened))
        if previous is not None:
            self.out.spine.append(SpineEdge(previous.name, "NEXT_ENCOUNTER", name, opened))
        elif self.out.encounters:
            latest = self.out.encounters[-1]
            self.out.spine.append(SpineEdge(name, "INSTANTIATED_AFTER", latest.name, opened))
        tombstones = 0
        for _ in range(rng.randint(1, 4)):
            if self.made >= self.target:
                break
            tombstones += self._write(name, locus)
        self.tick += 1
        ended = self.tick
        open_still = self.made >= self.target and rng.random() < 0.5
        dissolved = not open_still and rng.random() < DISSOLVE_SHARE
        sealed = not (open_still or dissolved)
        record = EncounterRecord(
            name=name,
            locus=locus,
            purpose=f"work on the {rng.choice(_TOPICS)}",
            opened_tick=opened,
            opened_at=_at(opened),
            sealed_tick=ended if sealed else None,
            sealed_at=_at(ended) if sealed else None,
            summary=f"what encounter {name} found" if sealed else None,
            dissolved_at=_at(ended) if dissolved else None,
            last_activity_at=_at(ended),
            tombstones=tombstones,
        )
        self.out.encounters.append(record)
        self.last_of[locus] = record

    def _write(self, encounter: str, locus: str) -> int:
        """One create_entities call, the relations that follow it, and any deletions;
        the tombstones it leaves."""
        rng = self.rng
        self.tick += 1
        tick = self.tick
        size = min(rng.randint(WRITE // 5, WRITE), self.target - self.made)
        links: list[tuple[str, str, str, str | None]] = []  # source, type, target, why
        made: list[tuple[str, str, str]] = []  # (type, id, name) of this write's new heads
        doomed = 0
        ord_ = 0
        for _ in range(size):
            kind = _pick_weighted(rng, _SHARES)
            self.serial += 1
            node_id = _id(kind, self.serial)
            topic = rng.choice(_TOPICS)
            name = f"{topic} #{self.serial}"
            revised: str | None = None
            if kind in _REVISED and rng.random() < REVISE_SHARE / 0.29:
                old = self.heads.pick(rng, kind)
                if old is not None:  # a head has no successor yet
                    revised, name = old, self.heads.names[old]
            status = None
            if kind in _STATUSES:
                status = _pick_weighted(rng, _STATUSES[kind])
            node = NodeRecord(
                id=node_id,
                type=kind,
                name=name,
                description=_description(kind, topic, rng),
                tick=tick,
                created_at=_at(tick),
                status=status,
                props=_props(kind, self.serial, rng, tick),
                encounter=encounter,
                locus=locus,
                ord=ord_,
            )
            ord_ += 1
            if revised is None and rng.random() < DELETE_SHARE:
                doomed += 1  # created and deleted again: only the tombstone remains
                continue
            self.out.node(DumpedNode(node, tick))
            self.made += 1
            if revised is not None:
                self.heads.replace(kind, revised, node_id)
                links.append((node_id, "SUPERSEDES", revised, "new evidence changed the picture"))
            for _ in range(self.density):  # one round: about one relation per node
                for source, rel, target, chance in _LINKS:
                    if source == kind and rng.random() < chance:
                        other = self.heads.pick(rng, target)
                        if other is not None and other != node_id:
                            links.append((node_id, rel, other, None))
            if kind == "Question" and rng.random() < 0.5:
                raiser = self.heads.pick(rng, "Concept")
                if raiser is not None:
                    links.append((raiser, "RAISES", node_id, None))
            if revised is None:
                made.append((kind, node_id, name))
        for kind, node_id, name in made:  # linked to from the next write on
            self.heads.add(kind, node_id, name)
        self.tick += 1
        seen: set[tuple[str, str, str]] = set()
        for source, rel, target, why in links:
            if (source, rel, target) in seen:
                continue
            seen.add((source, rel, target))
            # a revision is part of the write that made it; the rest come after it
            at = tick if rel == "SUPERSEDES" else self.tick
            edge = EdgeRecord(source, target, rel, at, encounter=encounter, revision_why=why)
            self.out.relation(DumpedEdge(edge, _at(at)))
        if doomed:
            self.tick += 1
        return doomed


def _copy(source: IO[bytes], emit: Callable[[bytes], None]) -> None:
    source.seek(0)
    for line in source:
        emit(line)


def write_dump(
    path: Path, nodes: int, *, seed: int = 11, loci: int = 8, density: int = 1
) -> dict[str, int]:
    """Write a dump of ``nodes`` authored nodes to ``path``; its counts. ``density`` is how
    many rounds of relations each new node draws (one round: about one per node)."""
    for _, rel, _, _ in _LINKS:
        assert rel in RELATION_TYPES
    with tempfile.TemporaryDirectory(prefix="kenning-synth-") as tmp:
        folder = Path(tmp)
        with (folder / "nodes").open("w+b") as node_file, (folder / "rels").open("w+b") as rel_file:
            out = _Writer(node_file, rel_file)
            generator = _Generator(nodes, seed, loci, out, density)
            generator.run()
            out.loci.sort(key=lambda r: r.id)
            out.encounters.sort(key=lambda r: r.name)
            out.counts |= {
                "person": 1,
                "locus": len(out.loci),
                "encounter": len(out.encounters),
                "spine": len(out.spine),
            }
            counts = {k: out.counts[k] for k in fmt.KINDS}
            digest = hashlib.sha256()
            partial = path.with_name(path.name + ".partial")
            with partial.open("wb") as target:

                def emit(line: bytes) -> None:
                    digest.update(line)
                    target.write(line)

                head = fmt.header(
                    app_version="bench", backend="synthetic", clock=generator.tick,
                    counts=counts, at=_at(generator.tick),
                )  # fmt: skip
                emit(fmt.encode(head))
                records: list[Any] = [DIRECTOR, *out.loci, *out.encounters, *out.spine]
                for record in records:
                    emit(fmt.encode(fmt.to_line(record)))
                node_file.flush()
                rel_file.flush()
                _copy(node_file, emit)
                _copy(rel_file, emit)
                target.write(fmt.encode(fmt.trailer(counts, digest.hexdigest())))
            shutil.move(partial, path)
    return counts


if __name__ == "__main__":
    print(write_dump(Path(sys.argv[2]), int(sys.argv[1])))
