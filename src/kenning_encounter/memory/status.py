"""A status relations move is the replay of its evidence: the one rule for what it reads.

A question's or hypothesis's status starts where it was recorded and is then moved by each
relation pointing at it, in the order they were made, as ``STATUS_EFFECTS`` says (a
RESOLVES makes an open question resolved, a CHALLENGES a hypothesis challenged...). The
store keeps the status the whole memory gives, moved at write time. Whoever reads with
less than the whole memory reads the replay of the evidence it may see instead: an unlink
(memory/writes.py) replays what still stands, and a reader not granted a class replays
without the withheld relations (memory/gates.py), so a status never tells of evidence its
reader cannot see.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping, Sequence
from typing import Final

from kenning_encounter.store.past import StatusMove
from kenning_encounter.store.port import ReadTx
from kenning_encounter.store.records import EdgeRecord
from kenning_encounter.vocabulary import STATUS_EFFECTS

# The relations that move a status, and the statuses only a relation sets, per type.
MOVING: Final = tuple(sorted(STATUS_EFFECTS))
MOVED: Final[dict[str, frozenset[str]]] = {}
for _targets in STATUS_EFFECTS.values():
    for _type, (_, _to) in _targets.items():
        MOVED[_type] = MOVED.get(_type, frozenset()) | {_to}


def moved(node_type: str, status: str | None) -> bool:
    """Whether ``status`` is one a relation could have set on a node of this type."""
    return status in MOVED.get(node_type, frozenset())


def replayed(node_type: str, start: str | None, evidence: Iterable[EdgeRecord]) -> str | None:
    """The status ``start`` reaches once each relation of ``evidence`` moves it, oldest
    first, as it moved it when made."""
    status = start
    for edge in sorted(evidence, key=lambda e: e.tick):
        effect = STATUS_EFFECTS.get(edge.type, {}).get(node_type)
        if effect is not None and status in effect[0]:
            status = effect[1]
    return status


def recorded(status: str | None, moves: Sequence[StatusMove]) -> str | None:
    """The status a node was recorded with: its first move's ``before``, else the status
    it holds (nothing ever moved it). ``moves``: the node's moves, oldest first."""
    return moves[0].before if moves else status


def recorded_of(tx: ReadTx, statuses: Mapping[str, str | None]) -> dict[str, str | None]:
    """``recorded`` for each node of ``statuses`` (id -> the status it holds), their moves
    read from the record of the past in one ask."""
    moves: dict[str, list[StatusMove]] = {}
    for move in tx.moves_after(list(statuses), -1):  # oldest first
        moves.setdefault(move.node, []).append(move)
    return {i: recorded(held, moves.get(i, [])) for i, held in statuses.items()}


def widened(node_type: str, statuses: Sequence[str]) -> tuple[str, ...]:
    """The stored statuses a node may hold and still read as one of ``statuses`` once
    relations it may not see are left out: those asked, and every status a relation sets."""
    more = sorted(MOVED.get(node_type, frozenset()) - set(statuses))
    return (*statuses, *more)
