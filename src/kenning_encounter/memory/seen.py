"""What a reader is shown of a chain when some of its versions are unseen: the version a
ref names, and the newest version it may see.

Two things make a version unseen. A class the server's grant lacks withholds it at the
store port (memory/gates.py): a gated read never returns it, and a name it holds is held,
to that read, by the newest version shown that carries it. A session a reader face hides
(``hidden``) is left to the services, which walk a chain through its versions rather than
end it there. Either way the reader's name for a chain is any name a version it sees
carries, and every read by a name or an id stands at the same place: the newest version
it may see, reading as revised (``superseded_by`` says ``hidden`` or ``withheld``), as
if the unseen versions had never been made. A name only an unseen version carries names
nothing to that reader.
"""

from __future__ import annotations

from kenning_encounter.errors import NotFound
from kenning_encounter.memory.gates import withholds
from kenning_encounter.memory.writes import is_node_id, resolve
from kenning_encounter.store.port import MAX_CHAIN, ReadTx
from kenning_encounter.store.records import WITHHELD_SUCCESSOR, NodeRecord


def visible(node: NodeRecord, hidden: frozenset[str]) -> bool:
    return node.locus not in hidden


def shown_version(
    tx: ReadTx, node: NodeRecord, hidden: frozenset[str], name: str | None = None
) -> NodeRecord | None:
    """``node`` if a reader hiding ``hidden`` may see it, else the newest version before it
    that it may see (one that holds ``name``, when given: a name a hidden version holds
    names, to this reader, the newest version it sees that holds it), or None."""
    if visible(node, hidden):
        return node
    older = tx.chain(node.id, older=MAX_CHAIN, newer=0).older
    return next(
        (
            x.node
            for x in older
            if visible(x.node, hidden) and (name is None or x.node.name == name)
        ),
        None,
    )


def head_of(tx: ReadTx, node: NodeRecord) -> NodeRecord:
    """The newest version of ``node``'s chain that ``tx`` shows: the live one, or, read
    through a gate that withholds the live one, the newest before the first withheld."""
    if node.superseded_by in (None, WITHHELD_SUCCESSOR):
        return node
    if not withholds(tx):
        head = tx.get_node(tx.chain(node.id, older=0, newer=0).head)
        if head is not None:
            return head
    # The gate ends a walk at the first version it withholds: the newest one shown is the
    # walk's last (one walk, where asking the head first would take two).
    newer = tx.chain(node.id, older=0, newer=MAX_CHAIN).newer
    return newer[-1].node if newer else node


def newest_shown(tx: ReadTx, node: NodeRecord, hidden: frozenset[str]) -> NodeRecord:
    """The newest version of ``node``'s chain a reader hiding ``hidden`` may see, ``node``
    being one it may see: where a lookup by any of the chain's names or ids stands."""
    return shown_version(tx, head_of(tx, node), hidden) or node


def where_it_stands(
    tx: ReadTx, asked: NodeRecord, hidden: frozenset[str], name: str | None = None
) -> tuple[NodeRecord, NodeRecord] | None:
    """The version ``asked`` stands for to a reader hiding ``hidden`` (``shown_version``)
    and the newest version of its chain the reader sees (``newest_shown``), or None when
    it sees no such version. One walk of the chain where ``asked`` is hidden."""
    if visible(asked, hidden):
        return asked, newest_shown(tx, asked, hidden)
    head = head_of(tx, asked)
    line = [head, *(x.node for x in tx.chain(head.id, older=MAX_CHAIN, newer=0).older)]
    at = next((i for i, n in enumerate(line) if n.id == asked.id), None)
    if at is None:  # farther back than a walk reaches: from ``asked`` itself
        node = shown_version(tx, asked, hidden, name)
        return None if node is None else (node, newest_shown(tx, node, hidden))
    seen = [n for n in line[at:] if visible(n, hidden) and (name is None or n.name == name)]
    if not seen:
        return None
    return seen[0], next(n for n in line if visible(n, hidden))


def named(tx: ReadTx, ref: str, field: str, hidden: frozenset[str]) -> NodeRecord:
    """The version ``ref`` names to a reader hiding ``hidden`` (``resolve``, which the
    gate answers for a withheld class): by id, that version; by a name, the one holding
    it, or, held by a hidden session's version, the newest version before it that the
    reader sees carrying the name. Not found otherwise, naming nothing unseen."""
    asked = resolve(tx, ref, field)
    by_id = is_node_id(ref)
    node = shown_version(tx, asked, hidden, None if by_id else ref)
    if node is None or (by_id and node is not asked):
        raise NotFound("node", ref, f"{field} must name or id an existing node; try search")
    return node
