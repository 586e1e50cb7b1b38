"""A human operator's hard deletion (e.g. a privacy request), never an agent's.

The node goes with every edge touching it; its recording encounter keeps a
tombstone count, so the spine still says that something was removed there, and the
encounters that drew on it lose their purpose and summary as an erasure's do
(``erasure.delete``).
The name is freed. Superseded revisions of it are removed too when asked
(``with_history``), or else the chain's previous revision becomes the head.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

from kenning_encounter.errors import InvalidInput
from kenning_encounter.memory import erasure, validate
from kenning_encounter.memory.writes import resolve
from kenning_encounter.store.port import GraphStore, ReadTx, WriteTx
from kenning_encounter.store.records import NodeRecord


@dataclass(frozen=True, slots=True)
class Forgotten:
    ids: list[str]
    tombstones: dict[str, int]  # encounter -> nodes removed from it
    tick: int
    withdrawn: tuple[str, ...] = ()  # encounters whose purpose and summary were withdrawn


def plan(store: GraphStore, refs: Sequence[str], *, with_history: bool) -> list[NodeRecord]:
    """What ``forget`` would remove, for the operator to confirm."""
    items = validate.batch(list(refs), "refs")

    return store.read(lambda tx: _targets(tx, items, with_history))


def _targets(tx: ReadTx, refs: Sequence[str], with_history: bool) -> list[NodeRecord]:
    found: dict[str, NodeRecord] = {}
    named: dict[str, int] = {}  # node id -> the ref that took it
    for i, ref in enumerate(refs):
        node = resolve(tx, validate.text(ref, f"refs[{i}]", required=True), f"refs[{i}]")
        found[node.id] = node
        named.setdefault(node.id, i)
        if with_history:
            frontier = [node.id]
            while frontier:
                older = [pid for nid in frontier for pid, _ in tx.predecessors(nid)]
                for n in tx.get_nodes(older).values():
                    found[n.id] = n
                    named.setdefault(n.id, i)
                frontier = older
    # Gone from the middle of a chain, a version would leave the one before it a second
    # live head beside the newer ones (one name, two heads): the newer go with it.
    for node in found.values():
        if node.superseded_by is not None and node.superseded_by not in found:
            raise InvalidInput(
                f"refs[{named[node.id]}]",
                f"{node.name!r} ({node.id}) was revised by {node.superseded_by}; forget the "
                "newer versions with it (name the head too), or forget the head with "
                "--with-history",
            )
    return list(found.values())


def forget(store: GraphStore, refs: Sequence[str], *, with_history: bool = False) -> Forgotten:
    items = validate.batch(list(refs), "refs")

    def work(tx: WriteTx) -> Forgotten:
        targets = _targets(tx, items, with_history)
        counts, withdrawn = erasure.delete(tx, targets)
        return Forgotten([n.id for n in targets], counts, tx.tick, tuple(withdrawn))

    return store.write(work)
