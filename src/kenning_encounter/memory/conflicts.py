"""What the memory contests, sharpest first (the ``conflicts`` tool).

The kinds are memory/contested.py's, the ones an infusion's conflict sections use. Each
contested live node is one entry, with every kind that applies to it and the nodes on each
side. Ranking: load-bearing first (something leans on the contested node), then by how
many nodes lean on it, then the newest evidence first. Standing comes from the edges and
their ticks, never from a number an author typed.

The whole authored graph is read once (as orient reads it): a conflict can sit anywhere,
and what leans on it is counted over the same graph. A hidden locus's nodes are taken out
before anything is counted, so they neither show nor lend weight.
"""

from __future__ import annotations

from collections import defaultdict
from collections.abc import Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any, Final

from pydantic import Field

from kenning_encounter.errors import InvalidInput, UnknownType
from kenning_encounter.lazymodel import LazyModel
from kenning_encounter.memory import contested, validate
from kenning_encounter.memory.seen import named
from kenning_encounter.store.bulk import collector_paused
from kenning_encounter.store.outline import OUTSIDE, Outline, as_numpy
from kenning_encounter.store.port import GraphStore, ReadTx
from kenning_encounter.store.records import NodeRecord

if TYPE_CHECKING:
    import numpy as np
    import numpy.typing as npt

MAX_LIMIT: Final = 100
# How far "leans on" is followed: far enough to see a concept built on a hypothesis built
# on the contested one, near enough that a hub does not count the whole memory.
LEAN_DEPTH: Final = 3
_PREVIEW: Final = 300


class Party(LazyModel):
    """A node on one side of a conflict: its id (whose prefix says its type) and name."""

    id: str
    name: str

    @classmethod
    def of(cls, node: NodeRecord) -> Party:
        return cls.model_construct(id=node.id, name=node.name)  # a record's fields: no check


class Contested(LazyModel):
    id: str
    type: str
    name: str
    status: str | None = None
    description: str = Field(default="", description="Cut at 300 characters")
    encounter: str | None = None
    kinds: list[str] = Field(description="Why it is contested (one or more conflict kinds)")
    challengers: list[Party] = Field(default_factory=list[Party])
    supporters: list[Party] = Field(
        default_factory=list[Party], description="Sent with 'supported and challenged'"
    )
    answers: list[Party] = Field(
        default_factory=list[Party], description="Sent with 'competing answers'"
    )
    revises: str | None = Field(
        default=None,
        description="Id of the version this node replaced, when that matters here "
        "(chain_history shows both)",
    )
    lost_support: list[Party] = Field(
        default_factory=list[Party],
        description="Supported or grounded the replaced version, not this one",
    )
    leaning: int = Field(default=0, description="Live nodes that rest on it, within 3 steps")
    load_bearing: bool = Field(default=False, description="True when something leans on it")
    latest_tick: int = Field(description="Tick of the newest edge in the conflict")


class ConflictsResult(LazyModel):
    conflicts: list[Contested]
    total: int | None = Field(default=None, description="Sent when limit cut the list")
    note: str = ""


def _check(
    kinds: Sequence[str] | None, types: Sequence[str] | None, limit: int
) -> tuple[frozenset[str], frozenset[str]]:
    if not 1 <= limit <= MAX_LIMIT:
        raise InvalidInput("limit", f"must be between 1 and {MAX_LIMIT}", value=limit)
    for i, kind in enumerate(kinds or []):
        if kind not in contested.KINDS:
            raise UnknownType(f"kinds[{i}]", kind, contested.KINDS)
    for i, t in enumerate(types or []):
        validate.node_type(t, f"types[{i}]")
    return frozenset(kinds or contested.KINDS), frozenset(types or [])


def conflicts(
    store: GraphStore,
    *,
    kinds: Sequence[str] | None = None,
    types: Sequence[str] | None = None,
    about: str | None = None,
    limit: int = 20,
    hidden_loci: frozenset[str] = frozenset(),
) -> ConflictsResult:
    wanted, typed = _check(kinds, types, limit)
    ref = validate.text(about, "about", required=False, limit=validate.MAX_NAME) or None

    def work(tx: ReadTx) -> tuple[list[Contested], int]:
        focus = named(tx, ref, "about", hidden_loci) if ref else None
        # The outline (no words, relations as columns) is what ranking needs; the words
        # are read for the entries shown alone, in the same snapshot.
        outline = tx.authored_outline()
        with collector_paused():  # the ranking makes no cycles; the outline's records are many
            every = _contests(outline, hidden_loci)
        found = [
            f
            for f in every
            if wanted.intersection(f.kinds)
            and (not typed or f.node.type in typed)
            and (focus is None or focus.id in f.ids())
        ]
        found.sort(key=_Found.rank)
        # Entries are built for the ones shown: 80,000 contested nodes at a million.
        shown = found[:limit]
        worded = tx.get_nodes([f.node.id for f in shown])
        entries = [f.entry(worded.get(f.node.id)) for f in shown]
        return entries, len(found)

    shown, total = store.read(work)
    if total:
        note = ""
    elif kinds or types or about:
        note = "nothing contested matches these filters"
    else:
        note = "nothing is contested: no open challenge, rival answer or lost support"
    return ConflictsResult(conflicts=shown, total=total if total > limit else None, note=note)


@dataclass(slots=True)
class _Found:
    """A contested node as ranked: the live nodes on each side, its entry built only if
    shown."""

    node: NodeRecord
    kinds: list[str]
    challengers: list[NodeRecord]
    supporters: list[NodeRecord]
    answers: list[NodeRecord]
    revises: str | None
    lost: list[NodeRecord]
    latest_tick: int
    leaning: int = 0
    load_bearing: bool = False

    def ids(self) -> set[str]:
        parties = [*self.challengers, *self.supporters, *self.answers, *self.lost]
        return {self.node.id, *(p.id for p in parties), *([self.revises] if self.revises else [])}

    def rank(self) -> tuple[bool, int, int, str]:
        return (not self.load_bearing, -self.leaning, -self.latest_tick, self.node.name)

    def entry(self, worded: NodeRecord | None) -> Contested:
        node = self.node
        # Built from records without a check: the output schema is checked where it is sent.
        return Contested.model_construct(
            id=node.id,
            type=node.type,
            name=node.name,
            status=node.status,
            description=_clip(worded.description) if worded is not None else "",
            encounter=node.encounter,
            kinds=self.kinds,
            challengers=[Party.of(p) for p in self.challengers],
            supporters=[Party.of(p) for p in self.supporters],
            answers=[Party.of(p) for p in self.answers],
            revises=self.revises,
            lost_support=[Party.of(p) for p in self.lost],
            leaning=self.leaning,
            load_bearing=self.load_bearing,
            latest_tick=self.latest_tick,
        )


def _contests(outline: Outline, hidden: frozenset[str]) -> list[_Found]:
    """Every contested live node (an outline's nodes carry no description: the caller
    reads the words of those it shows).

    Worked on the outline's columns (node places, not ids): only a node challenged,
    answered or revised can be contested, so only the relations into those and into the
    versions they replaced are gathered, and the leaning is walked over the lean
    relations as one sorted array. At a million nodes and three million relations the
    relations gathered by id, one by one, took most of the call."""
    import numpy as np  # with the outline's columns; no part of a start-up

    nodes, rel = outline.nodes, outline.relations
    n = len(nodes)
    if not n:  # no node to contest, and no place for an end outside to stand on
        return []
    every = (
        np.fromiter((x.locus not in hidden for x in nodes), dtype=np.bool_, count=n)
        if hidden
        else np.ones(n, dtype=np.bool_)
    )
    live = every & np.fromiter((x.is_head for x in nodes), dtype=np.bool_, count=n)
    code = {name: i for i, name in enumerate(rel.names)}

    def of(*names: str) -> npt.NDArray[np.bool_]:
        return np.isin(kind, [code[name] for name in names if name in code])

    source, target = as_numpy(rel.source), as_numpy(rel.target)
    kind, tick = as_numpy(rel.kind), as_numpy(rel.tick)
    inside = (source != OUTSIDE) & (target != OUTSIDE)
    source, target = np.where(inside, source, 0), np.where(inside, target, 0)
    inside &= every[source] & every[target]
    # revision -> (the version it replaced, tick): a later relation wins, as read in order
    chosen = inside & of("SUPERSEDES")
    revised = dict(
        zip(
            source[chosen].tolist(),
            zip(target[chosen].tolist(), tick[chosen].tolist(), strict=True),
            strict=True,
        )
    )
    from_live = inside & live[source]
    # Who can be contested: a node challenged or answered by a live node, or a revision.
    suspect = np.zeros(n, dtype=np.bool_)
    suspect[target[from_live & of("CHALLENGES", "RESOLVES")]] = True
    suspect[list(revised)] = True
    suspect &= live
    # The relations a contest reads: into a suspect, and the support of what it replaced.
    asked = suspect.copy()
    asked[[before for at, (before, _) in revised.items() if suspect[at]]] = True
    into: dict[int, dict[str, list[tuple[int, int]]]] = defaultdict(lambda: defaultdict(list))
    read = from_live & asked[target] & of("CHALLENGES", "RESOLVES", *contested.SUPPORT_RELATIONS)
    names = rel.names
    for at, k, by, t in zip(
        target[read].tolist(),
        kind[read].tolist(),
        source[read].tolist(),
        tick[read].tolist(),
        strict=True,
    ):
        into[at][names[k]].append((by, t))
    lean = _Lean.of(source, target, from_live & live[target] & of(*contested.LEAN_RELATIONS), n)
    revisions = {nodes[at].id for at in revised}
    found: list[_Found] = []
    for at in np.flatnonzero(suspect).tolist():
        node = nodes[at]
        if node.status in contested.SETTLED_STATUSES:
            continue
        entry = _contest(at, nodes, into, revised, revisions)
        if entry is not None:
            entry.leaning = lean.leaning(at)
            entry.load_bearing = contested.load_bearing([node.id], _bearing(entry))
            found.append(entry)
    return found


def _bearing(entry: _Found) -> set[str]:
    """The contested node, when something leans on it: what the memory's load rests on."""
    return {entry.node.id} if entry.leaning else set()


def _supporters(into: dict[str, list[tuple[int, int]]]) -> list[int]:
    return list(dict.fromkeys(s for r in contested.SUPPORT_RELATIONS for s, _ in into.get(r, [])))


def _contest(
    at: int,
    nodes: Sequence[NodeRecord],
    edges_into: dict[int, dict[str, list[tuple[int, int]]]],
    revised: dict[int, tuple[int, int]],
    revisions: set[str],
) -> _Found | None:
    node = nodes[at]
    into = edges_into.get(at, {})
    challengers = into.get("CHALLENGES", [])
    supporters = into.get("SUPPORTS", [])
    answers = into.get("RESOLVES", [])
    kinds: list[str] = []
    ticks: list[int] = []
    if challengers:
        kinds.append(contested.challenge_kind(node.id, revisions))
        ticks += [t for _, t in challengers]
    if contested.supported_and_challenged(node, len(supporters), len(challengers)):
        kinds.append(contested.SUPPORTED_AND_CHALLENGED)
        ticks += [t for _, t in supporters]
    if contested.competing_answers(node, len(answers)):
        kinds.append(contested.COMPETING_ANSWERS)
        ticks += [t for _, t in answers]
    lost: list[int] = []
    replaced = revised.get(at)
    if replaced is not None:
        # The replaced version is no head, but the live evidence into it still stands.
        ids = {nodes[p].id: p for p in _supporters(edges_into.get(replaced[0], {}))}
        kept = {nodes[p].id for p in _supporters(into)}
        lost = [ids[i] for i in contested.lost_support(kept, ids)]
        if lost:
            kinds.append(contested.LOST_SUPPORT)
            ticks.append(replaced[1])
    if not kinds:
        return None
    shows_revision = contested.CONTESTED_REVISION in kinds or bool(lost)

    def records(side: list[tuple[int, int]]) -> list[NodeRecord]:
        return [nodes[p] for p, _ in side]

    return _Found(
        node=node,
        kinds=kinds,
        challengers=records(challengers),
        supporters=records(supporters) if contested.SUPPORTED_AND_CHALLENGED in kinds else [],
        answers=records(answers) if contested.COMPETING_ANSWERS in kinds else [],
        revises=nodes[replaced[0]].id if shows_revision and replaced is not None else None,
        lost=[nodes[p] for p in lost],
        latest_tick=max(ticks),
    )


@dataclass(frozen=True, slots=True)
class _Lean:
    """The lean relations between live nodes by source, as one sorted array."""

    starts: list[int]  # a node's first place in ``ends``; node n+1's is the end
    ends: list[int]

    @classmethod
    def of(
        cls,
        source: npt.NDArray[np.signedinteger[Any]],
        target: npt.NDArray[np.signedinteger[Any]],
        chosen: npt.NDArray[np.bool_],
        n: int,
    ) -> _Lean:
        import numpy as np

        order = np.argsort(source[chosen], kind="stable")
        ends = target[chosen][order]
        starts = np.searchsorted(source[chosen][order], np.arange(n + 1))
        return cls(starts.tolist(), ends.tolist())

    def leaning(self, start: int) -> int:
        """How many live nodes lean on ``start``, up to LEAN_DEPTH relations away."""
        starts, ends = self.starts, self.ends
        seen = {start}
        frontier = [start]
        for _ in range(LEAN_DEPTH):
            frontier = [
                m for v in frontier for m in ends[starts[v] : starts[v + 1]] if m not in seen
            ]
            seen.update(frontier)
            if not frontier:
                break
        return len(seen) - 1


def _clip(text: str) -> str:
    text = " ".join(text.split())
    return text if len(text) <= _PREVIEW else text[: _PREVIEW - 1].rstrip() + "…"
