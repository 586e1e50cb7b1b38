"""What counts as contested: the one definition the infusion's conflict sections and the
``conflicts`` tool both read.

A challenge is a CHALLENGES edge; it is a *contested revision* when the node it challenges
is itself a revision (it superseded an earlier version), since then the memory changed its
mind once already and is being argued with again. Besides challenges the memory holds three
more shapes of disagreement, found from its edges alone (no author-typed confidence):

- a hypothesis that is both supported and challenged: evidence on both sides at once;
- a question with competing answers: more than one live node resolves it;
- a revision that lost support: the version it replaced was supported or grounded by
  nodes that do not support or ground the revision.

A conflict is *load-bearing* when something rests on it. In an infusion that is the
moment's focus (the conflict touches a focal node); over the whole memory it is the nodes
that lean on the contested node through the authored relations that carry evidence
forward (``LEAN_RELATIONS``).
"""

from __future__ import annotations

from collections.abc import Collection, Iterable, Mapping
from dataclasses import dataclass
from typing import Final

from kenning_encounter.store.records import EdgeRecord, NodeRecord

CHALLENGES: Final = "challenges"
CONTESTED_REVISION: Final = "contested revision"
SUPPORTED_AND_CHALLENGED: Final = "supported and challenged"
COMPETING_ANSWERS: Final = "competing answers"
LOST_SUPPORT: Final = "revision lost support"

# Every kind, with what it means, in the words the tools teach.
KINDS: Final[dict[str, str]] = {
    CHALLENGES: "a live node challenges a live node",
    CONTESTED_REVISION: "a revision (a node that superseded another) is challenged",
    SUPPORTED_AND_CHALLENGED: "a hypothesis has live support and a live challenge at once",
    COMPETING_ANSWERS: "more than one live node resolves the same question",
    LOST_SUPPORT: "the version a revision replaced had support the revision lacks",
}

# b leans on a when a -[one of these]-> b: a is evidence b is built on, or an answer b
# rests on. CHALLENGES is evidence too, but against: what a node challenges does not lean
# on it. OBSERVED_AT points from an observation to where it was made, not to what it bears.
LEAN_RELATIONS: Final = ("SUPPORTS", "GROUNDS", "INFORMS", "COMPOSES", "RESOLVES")
SUPPORT_RELATIONS: Final = ("SUPPORTS", "GROUNDS")

# A hypothesis in one of these has been decided; a challenge to it is no longer open.
SETTLED_STATUSES: Final = frozenset({"falsified", "retired"})


@dataclass(frozen=True, slots=True)
class Conflict:
    """One challenge, as an infusion shows it: who challenges whom, and of which kind."""

    source: NodeRecord
    target: NodeRecord
    kind: str  # CHALLENGES | CONTESTED_REVISION
    load_bearing: bool


def challenge_kind(target: str, revised: Collection[str]) -> str:
    """``revised``: the ids of nodes that superseded another."""
    return CONTESTED_REVISION if target in revised else CHALLENGES


def load_bearing(ends: Iterable[str], focus: Collection[str]) -> bool:
    return any(end in focus for end in ends)


def challenge_conflicts(
    edges: Iterable[EdgeRecord],
    nodes: Mapping[str, NodeRecord],
    *,
    touching: Collection[str],
    focus: Collection[str],
    revised: Collection[str],
) -> tuple[Conflict, ...]:
    """The challenges among ``edges`` with an end in ``touching``; load-bearing first."""
    found: list[Conflict] = []
    for e in edges:
        if e.type != "CHALLENGES" or not (e.source in touching or e.target in touching):
            continue
        kind = challenge_kind(e.target, revised)
        bearing = load_bearing((e.source, e.target), focus)
        found.append(Conflict(nodes[e.source], nodes[e.target], kind, bearing))
    found.sort(key=lambda c: (not c.load_bearing, c.target.name))
    return tuple(found)


def supported_and_challenged(node: NodeRecord, supporters: int, challengers: int) -> bool:
    return node.type == "Hypothesis" and supporters > 0 and challengers > 0


def competing_answers(node: NodeRecord, answers: int) -> bool:
    return node.type == "Question" and answers > 1


def lost_support(kept: Collection[str], before: Iterable[str]) -> list[str]:
    """Who supported the replaced version (``before``) and not the revision (``kept``)."""
    return [s for s in before if s not in kept]
