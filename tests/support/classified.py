"""A small memory with classified nodes on every kind of read surface, for the gate tests.

Every withheld node carries MARK in its name and its description, so "nothing of it came
back" is one substring test over a whole answer (text and structure) plus its ids.
"""

from __future__ import annotations

from typing import Any, Final

MARK: Final = "zqxmark"  # lexically findable, in every withheld node's text
WRITER: Final = "classified-writer"

# name -> classes; the unclassified nodes carry no MARK.
CLASSIFIED: Final[dict[str, str]] = {
    f"ward note {MARK}": "phi",
    f"open ask {MARK}": "pii",
    f"old policy {MARK}": "secret",
    f"card number {MARK}": "pci,pii",
}


def entities() -> list[dict[str, Any]]:
    return [
        {
            "type": "Observation",
            "name": f"ward note {MARK}",
            "description": f"lantern ward patient record {MARK} diagnosis",
            "classification": ["phi"],
            "retention": "P30D",
        },
        {
            "type": "Question",
            "name": f"open ask {MARK}",
            "description": f"lantern who is the patient {MARK}",
            "classification": "pii",
        },
        {
            "type": "Concept",
            "name": f"old policy {MARK}",
            "description": f"lantern policy draft {MARK}",
            "classification": ["secret"],
            "retention": "2030-01-31",
        },
        {
            "type": "Observation",
            "name": f"card number {MARK}",
            "description": f"lantern card 4111 {MARK}",
            "classification": ["pii", "pci"],
        },
        {"type": "Observation", "name": "plain lantern", "description": "lantern seen at dusk"},
        {"type": "Concept", "name": "lantern finding", "description": "lanterns glow at dusk"},
        {"type": "Hypothesis", "name": "lantern guess", "description": "lantern oil burns"},
        {"type": "Question", "name": "lantern open", "description": "why do lanterns glow?"},
    ]


def revision() -> list[dict[str, Any]]:
    """The public revision of a secret concept: its chain holds a withheld version."""
    return [
        {
            "type": "Concept",
            "name": "lantern policy",
            "description": "lantern policy, the public version",
            "supersedes": f"old policy {MARK}",
            "revision_why": "published without the draft's details",
        }
    ]


def relations() -> list[dict[str, Any]]:
    return [
        {"source": f"ward note {MARK}", "type": "GROUNDS", "target": "lantern finding"},
        {"source": "plain lantern", "type": "GROUNDS", "target": "lantern finding"},
        {"source": "plain lantern", "type": "SUPPORTS", "target": "lantern guess"},
        {"source": f"ward note {MARK}", "type": "CHALLENGES", "target": "lantern guess"},
        {"source": f"card number {MARK}", "type": "GROUNDS", "target": "lantern finding"},
        {"source": "lantern finding", "type": "RAISES", "target": f"open ask {MARK}"},
    ]
