"""Classification on Neo4j: the indexes retention and the read gate seek, the gate's one
question to the store (memory/gates.py), and the class labels read_cypher is held by.

read_cypher text reaches the database as written, and a caller's projection of a property
carries no id a filter could test afterwards. So every classified node also carries one
label per class it names (``KenningClass_phi``...), set in the statement that creates it
(a revision is a new node, an erasure deletes the node with its labels; a classification
never changes in place), and given to older stores' nodes once by ``MIGRATE``. The scope
rewrite (scope.py) then writes ``&!KenningClass_<c>`` for every class the caller is not
granted into every node pattern of the query: a withheld node matches no pattern at all.
"""

from __future__ import annotations

from typing import Final, LiteralString, cast

from kenning_encounter.vocabulary import AUTHORED_NODE_TYPES, CLASSIFICATIONS, STATUS_EFFECTS

CLASS_LABEL_PREFIX: Final = "KenningClass_"
CLASS_LABELS: Final = frozenset(f"{CLASS_LABEL_PREFIX}{c}" for c in CLASSIFICATIONS)

# A node a classified node resolves, supports or challenges carries a status that node may
# have moved (memory/status.py), stored as the whole memory gives it: the other tools read
# it as the caller's evidence gives it, read_cypher cannot. So such a node carries one
# label per class of those sources (``KenningMoved_phi``...), set by the statement that
# makes the relation (or imports it), and the scope rewrite keeps it out of a query's
# reach for a caller not granted the class, as it keeps the source out. A label is not
# taken back when its relation goes (an undo, an erasure): a node then stays out of reach
# of that caller's queries, which tells of nothing; the other tools show it.
MOVED_LABEL_PREFIX: Final = "KenningMoved_"
MOVED_LABELS: Final = frozenset(f"{MOVED_LABEL_PREFIX}{c}" for c in CLASSIFICATIONS)
# A node a classified node used (a link, store/uses.py) keeps that use in ``used_marks``
# while it is its latest, and its ``used_at`` is that use; an encounter an erasure took
# classified nodes from counts them in ``tombstones``, and by class in
# ``tombstones_marked``. read_cypher cannot restate these, so such a record carries one
# label per class its marks name (``KenningUsed_phi``...), set by the statement that
# writes the marks (a node's go with them), and the scope rewrite keeps it out of the
# reach of a caller not granted the class, as the moved labels do.
USED_LABEL_PREFIX: Final = "KenningUsed_"
USED_LABELS: Final = frozenset(f"{USED_LABEL_PREFIX}{c}" for c in CLASSIFICATIONS)


# What every other use of a node writes beside its used_at (store/uses.py): the marks go,
# and their labels; rendered after a SET whose nodes are bound to ``a`` and ``b``, or ``n``.
def _unused(*names: str) -> LiteralString:
    labels = ":".join(sorted(USED_LABELS))
    return cast(LiteralString, "REMOVE " + ", ".join(f"{v}:{labels}" for v in names) + " ")


UNUSED_AB: Final = _unused("a", "b")
UNUSED_N: Final = _unused("n")
_MOVING: Final = ", ".join(f"'{r}'" for r in sorted(STATUS_EFFECTS))
# Rendered into a relation statement whose {rel} is a type of the vocabulary, with the
# relation's ends bound to ``a`` and ``b``: no label for a relation that moves nothing.
MOVED_BY_SOURCE: Final = cast(
    LiteralString,
    f"SET b:$(CASE WHEN '{{rel}}' IN [{_MOVING}] THEN "
    f"[x IN labels(a) WHERE x STARTS WITH '{CLASS_LABEL_PREFIX}' | "
    f"'{MOVED_LABEL_PREFIX}' + substring(x, {len(CLASS_LABEL_PREFIX)})] ELSE [] END) ",
)


def class_label(cls: str) -> str:
    """The label of one class, from the closed vocabulary only (labels are no parameters)."""
    if cls not in CLASSIFICATIONS:
        raise ValueError(f"internal: {cls!r} is not a classification")
    return f"{CLASS_LABEL_PREFIX}{cls}"


def moved_label(cls: str) -> str:
    """The label of a node a node of class ``cls`` moved a status of (closed vocabulary)."""
    if cls not in CLASSIFICATIONS:
        raise ValueError(f"internal: {cls!r} is not a classification")
    return f"{MOVED_LABEL_PREFIX}{cls}"


def used_label(cls: str) -> str:
    """The label of a node a node of class ``cls`` used (closed vocabulary)."""
    if cls not in CLASSIFICATIONS:
        raise ValueError(f"internal: {cls!r} is not a classification")
    return f"{USED_LABEL_PREFIX}{cls}"


def class_labels(classification: object) -> list[str]:
    """The labels a node of this stored classification carries (a dynamic label list)."""
    if not isinstance(classification, str):
        return []
    named = {c for c in classification.split(",") if c in CLASSIFICATIONS}
    return [class_label(c) for c in sorted(named)]


# Schema < 4 -> 4: the class labels on the classified nodes made before them. Each class
# is a literal of the closed vocabulary, matched whole within the comma-joined set.
MIGRATE: Final[tuple[LiteralString, ...]] = tuple(
    "MATCH (n:KenningMemory) WHERE n.classification IS NOT NULL "
    f"AND '{c}' IN split(n.classification, ',') AND NOT n:{CLASS_LABEL_PREFIX}{c} "
    f"SET n:{CLASS_LABEL_PREFIX}{c}"
    for c in CLASSIFICATIONS
)

# Schema < 7 -> 7: the moved labels of the relations made before them.
MIGRATE_MOVED: Final[tuple[LiteralString, ...]] = tuple(
    cast(
        LiteralString,
        f"MATCH (a:{CLASS_LABEL_PREFIX}{c}:KenningMemory)-[:{'|'.join(sorted(STATUS_EFFECTS))}]"
        f"->(b:KenningMemory) WHERE NOT b:{MOVED_LABEL_PREFIX}{c} SET b:{MOVED_LABEL_PREFIX}{c}",
    )
    for c in CLASSIFICATIONS
)


def schema() -> list[tuple[str, LiteralString]]:
    """Range indexes on (_memory, retain_until), which purge --due seeks, and on
    (_memory, classification), which the gate's question seeks, per authored type."""
    out: list[tuple[str, LiteralString]] = []
    for label in AUTHORED_NODE_TYPES:
        for prop in ("retain_until", "classification"):
            name = f"kenning_{label.lower()}_memory_{prop}"
            statement = (
                f"CREATE INDEX {name} IF NOT EXISTS FOR (n:{label}) ON (n._memory, n.{prop})"
            )
            out.append((name, cast(LiteralString, statement)))
    return out
