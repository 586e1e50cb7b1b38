"""Who wrote a node, as every inspector page shows it: the one place to extend.

Today that is the session (cut short, as the tools show it) and the encounter it
was written in. The directors of #17 (a locus DIRECTED_BY a Person) and the
classification marks belong here too: fill ``director`` and ``marks`` in
``author_of`` and the ``author_rows`` macro (templates/macros.html) shows them on
every page that shows an author, with nothing else to change.
"""

from __future__ import annotations

from dataclasses import dataclass

from kenning_encounter.memory.models import shown_session
from kenning_encounter.store.port import ReadTx
from kenning_encounter.store.records import EncounterRecord, NodeRecord


@dataclass(frozen=True)
class Author:
    session: str | None  # cut short; None for a node outside any locus
    encounter: str | None
    purpose: str | None
    director: str | None = None  # who directed the session (#17), when it is known
    marks: tuple[tuple[str, str], ...] = ()  # (label, value) rows, e.g. a classification


def author_of(tx: ReadTx, node: NodeRecord, encounter: EncounterRecord | None) -> Author:
    """``node``'s author as shown; ``tx`` is there for what a later field must read."""
    del tx  # nothing read yet: the director's Person is the first thing that will be
    return Author(
        session=shown_session(node.locus, None) if node.locus else None,
        encounter=encounter.name if encounter is not None else None,
        purpose=encounter.purpose if encounter is not None else None,
    )
