"""Expand and rank: one biased personalized rank over an ephemeral coherence projection.

The projection is built per call from the focal seeds' neighbourhood along
coherence relations only (supports, challenges, grounds, informs, ...), never
the process spine, and is thrown away afterwards.

Restart weights: focal seeds at their selection weight; Concepts one hop from a
matched Concept at ``expand_bias`` of it; open questions and live hypotheses in
reach at ``frontier_bias``, so unresolved work keeps a voice without taking
over. The same graph is also ranked without bias (ArticleRank: accumulated
mass). A node the focal rank lifts is what this moment leans on; a node only
mass makes prominent is what the memory repeats, and is left out. Conflicts
(CHALLENGES among what surfaced, challenged revisions; memory/contested.py defines
them for the conflicts tool too) are load-bearing when they touch the focus,
peripheral otherwise.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field, replace
from types import MappingProxyType
from typing import Final

import numpy as np

from kenning_encounter.analytics import power
from kenning_encounter.infusion.config import InfusionConfig
from kenning_encounter.infusion.select import Seed
from kenning_encounter.memory.activation import Activation, Present
from kenning_encounter.memory.contested import Conflict, challenge_conflicts
from kenning_encounter.plaintext import quoted
from kenning_encounter.store.port import GraphStore, ReadTx, Subgraph
from kenning_encounter.store.records import NodeRecord
from kenning_encounter.vocabulary import COHERENCE_RELATION_TYPES, FRONTIER_STATUSES


@dataclass(frozen=True, slots=True)
class Standing:
    """Activation as one signal of the rank (memory/activation.py): nodes of a tier not
    shown stay out of the projection, and a focal seed's restart weight is multiplied by
    its activation factor, so what the agent's work keeps using leads among equals."""

    activation: Activation
    now: Present
    tiers: frozenset[str]

    def shows(self, node: NodeRecord) -> bool:
        return self.activation.tier(node, self.now) in self.tiers

    def factor(self, node: NodeRecord) -> float:
        return self.activation.factor(node, self.now)


@dataclass(frozen=True, slots=True)
class Ranked:
    node: NodeRecord
    score: float
    role: str  # focal | expanded | frontier | context
    why: str


@dataclass(frozen=True, slots=True)
class Ranking:
    items: tuple[Ranked, ...]
    conflicts: tuple[Conflict, ...]
    suppressed_mass_only: tuple[str, ...]
    challenged: frozenset[str]
    revised: frozenset[str]
    graph_size: tuple[int, int]
    # node id -> tick of its latest confirmation, for the items that have one (read with
    # the challenges reaching them: one read, not two)
    confirmed: Mapping[str, int] = field(default_factory=lambda: MappingProxyType({}))
    faded: tuple[str, ...] = ()  # seeds left out because their standing faded


# Standing as of the ranking's own read: the working time it is measured in is read there
# (memory/activation.py WorkTime.present), not in a read of its own.
StandingOf = Callable[[ReadTx], Standing]


def _is_frontier(node: NodeRecord) -> bool:
    return node.status in FRONTIER_STATUSES.get(node.type, ())


def fact_state(
    node: NodeRecord, challenged: frozenset[str], confirmed_tick: int | None = None
) -> str:
    """What a delivered body asserted: a change re-delivers it. A confirmation
    (confirm_entities) renews the node's standing, so one made since the delivery counts
    as a change; a node never confirmed keeps the fingerprint it always had."""
    state = (
        f"{node.status or '-'}|{node.superseded_by or '-'}|{'C' if node.id in challenged else '-'}"
    )
    return state if confirmed_tick is None else f"{state}|k{confirmed_tick}"


def rank(
    store: GraphStore,
    seeds: Sequence[Seed],
    cfg: InfusionConfig,
    *,
    hidden: frozenset[str] = frozenset(),
    standing: Standing | StandingOf | None = None,
) -> Ranking:
    """``hidden`` loci are left out of the graph itself, not only of the answer: their nodes
    neither surface (not even as suppressed ids) nor lend rank to what does. So are the
    nodes ``standing`` does not show (faded: seeds among them are listed in ``faded``),
    and it weighs each focal seed. Given as a function of the read, standing is made in
    the ranking's own read."""
    if all(s.node.locus in hidden for s in seeds):
        return _NOTHING
    # One read for the standing, the neighbourhood and what reaches the items it ranks
    # (the ranking itself runs between them, in this process).
    return store.read(lambda tx: rank_in(tx, seeds, cfg, hidden=hidden, standing=standing))


_NOTHING: Final = Ranking((), (), (), frozenset(), frozenset(), (0, 0))


def rank_in(
    tx: ReadTx,
    seeds: Sequence[Seed],
    cfg: InfusionConfig,
    *,
    hidden: frozenset[str] = frozenset(),
    standing: Standing | StandingOf | None = None,
) -> Ranking:
    """``rank`` in a read already open (the lexical selection's: one read for both)."""
    visible = [s for s in seeds if s.node.locus not in hidden]
    return _rank(tx, visible, cfg, hidden, standing) if visible else _NOTHING


def _rank(
    tx: ReadTx,
    seeds: list[Seed],
    cfg: InfusionConfig,
    hidden: frozenset[str],
    standing_given: Standing | StandingOf | None,
) -> Ranking:
    standing = standing_given(tx) if callable(standing_given) else standing_given
    faded = tuple(s.node.id for s in seeds if standing is not None and not standing.shows(s.node))
    if faded:
        seeds = [s for s in seeds if s.node.id not in faded]
        if not seeds:
            return replace(_NOTHING, faded=faded)
    focal = {s.node.id: s for s in seeds}
    coherence = list(COHERENCE_RELATION_TYPES)
    concepts = [i for i, s in focal.items() if s.node.type == "Concept"]
    hop = tx.neighbourhood(concepts, coherence) if concepts else Subgraph()
    inner = set(focal) | {
        n.id for n in hop.nodes if n.type == "Concept" and n.is_head and n.locus not in hidden
    }
    context = tx.neighbourhood(sorted(inner), [*coherence, "SUPERSEDES"])
    revised = {e.source for e in context.edges if e.type == "SUPERSEDES"}
    nodes: dict[str, NodeRecord] = {s.node.id: s.node for s in seeds}
    for n in [*hop.nodes, *context.nodes]:
        if n.is_head and n.locus not in hidden and (standing is None or standing.shows(n)):
            nodes.setdefault(n.id, n)
    edges = [
        e
        for e in {(e.source, e.type, e.target): e for e in context.edges}.values()
        if e.type != "SUPERSEDES" and e.source in nodes and e.target in nodes
    ]
    ids = list(nodes)
    index = {node_id: i for i, node_id in enumerate(ids)}
    restart = np.zeros(len(ids))
    roles: dict[str, str] = {}
    whys: dict[str, str] = {}
    expanded_from: dict[str, str] = {}
    for e in hop.edges:
        for a, b in ((e.source, e.target), (e.target, e.source)):
            if a in focal and b in nodes and b not in focal and nodes[b].type == "Concept":
                expanded_from.setdefault(b, a)
    for node_id in ids:
        i = index[node_id]
        if node_id in focal:
            weight = max(focal[node_id].weight, 0.05)
            why = focal[node_id].why
            if standing is not None:
                factor = standing.factor(nodes[node_id])
                weight *= factor
                if factor < 1.0:
                    why = f"{why}; fading (activation ×{factor:.2f}: unused for a while)"
            restart[i] = weight
            roles[node_id], whys[node_id] = "focal", why
        elif node_id in expanded_from:
            base = focal[expanded_from[node_id]]
            restart[i] = cfg.expand_bias * max(base.weight, 0.05)
            roles[node_id] = "expanded"
            whys[node_id] = f"one step from {quoted(base.node.name)}"
        elif _is_frontier(nodes[node_id]):
            restart[i] = cfg.frontier_bias * float(restart.max() or 1.0)
            roles[node_id], whys[node_id] = "frontier", "open work in reach"
        else:
            roles[node_id], whys[node_id] = "context", "linked to the focus"
    src = np.asarray([index[e.source] for e in edges], dtype=np.int64)
    tgt = np.asarray([index[e.target] for e in edges], dtype=np.int64)
    focal_rank, _, _ = power.pagerank(
        len(ids), src, tgt, damping=cfg.damping, restart=restart, directed=False
    )
    mass, _, _ = power.articlerank(len(ids), src, tgt, damping=cfg.damping)
    # Equal scores (symmetric places in the graph; equal up to rounding) go newest first,
    # not in whatever order the store listed the nodes.
    later_in_tick = -np.asarray([nodes[i].ord for i in ids], dtype=np.int64)
    later_tick = -np.asarray([nodes[i].tick for i in ids], dtype=np.int64)
    order = np.lexsort((later_in_tick, later_tick, -np.round(focal_rank, 12)))
    mass_order = np.lexsort((later_in_tick, later_tick, -np.round(mass, 12)))
    focal_pos = {int(i): p for p, i in enumerate(order)}
    mass_pos = {int(i): p for p, i in enumerate(mass_order)}

    items: list[Ranked] = []
    suppressed: list[str] = []
    for i in order:
        node_id = ids[int(i)]
        role = roles[node_id]
        if role == "context" and mass_pos[int(i)] < focal_pos[int(i)]:
            suppressed.append(node_id)  # prominent by accumulation, not by this moment
            continue
        if role == "context" and focal_rank[int(i)] <= 0:
            continue
        items.append(Ranked(nodes[node_id], float(focal_rank[int(i)]), role, whys[node_id]))
        if len(items) == cfg.items:
            break

    shown = {r.node.id for r in items}
    # Challenges reaching what surfaced, from anywhere: tension is never out of reach.
    surfaced = sorted(shown)
    tension, confirmations = tx.tension_of(surfaced)
    for n in tension.nodes:
        if n.locus not in hidden:
            nodes.setdefault(n.id, n)
    tense = [e for e in tension.edges if e.source in nodes and e.target in nodes]
    challenged = frozenset(e.target for e in [*edges, *tense] if e.type == "CHALLENGES")
    unique = {(e.source, e.type, e.target): e for e in [*edges, *tense]}
    conflicts = challenge_conflicts(
        unique.values(), nodes, touching=shown, focus=set(focal), revised=frozenset(revised)
    )
    return Ranking(
        tuple(items),
        conflicts,
        tuple(suppressed),
        challenged,
        frozenset(revised),
        (len(ids), len(edges)),
        MappingProxyType({node: c.tick for node, c in confirmations.items()}),
        faded,
    )
