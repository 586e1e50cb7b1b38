"""Who wrote a node, as every inspector page shows it: the one place to extend.

The session (cut short, as the tools show it), the encounter it was written in, the
person who directed that session (a locus DIRECTED_BY a Person, #17), and the node's
classification and retention marks. The ``author_rows`` macro
(templates/macros.html) shows them on every page that shows an author.
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
    director: str | None = None  # who directed the session (#17)
    marks: tuple[tuple[str, str], ...] = ()  # (label, value) rows: classification, retention


def author_of(tx: ReadTx, node: NodeRecord, encounter: EncounterRecord | None) -> Author:
    """``node``'s author as shown. The page is behind the read gate already: a node it
    shows is one the caller may see, marks and all."""
    person = tx.directors_of([node.locus]).get(node.locus) if node.locus else None
    marks: list[tuple[str, str]] = []
    if classes := node.props.get("classification"):
        marks.append(("classified", ", ".join(str(classes).split(","))))
    if retention := node.props.get("retention"):
        until = node.props.get("retain_until")
        marks.append(("retained", f"{retention} (until {until})" if until else str(retention)))
    return Author(
        session=shown_session(node.locus, None) if node.locus else None,
        encounter=encounter.name if encounter is not None else None,
        purpose=encounter.purpose if encounter is not None else None,
        director=person.name if person is not None else None,
        marks=tuple(marks),
    )
