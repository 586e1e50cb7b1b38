"""Directors, confirmations and referent claims as the store holds them (#17).

A Person's id is derived from what identifies it, never from its name alone: from its
key when it has one (an account, an address, the operating-system user), else from the
one locus it directs. So two sessions meet one Person only by naming the same key, and
seventeen sessions that say only "Alice" are seventeen Persons, as they should be: a
name is an act of reference, not an identity.
"""

from __future__ import annotations

import hashlib
from dataclasses import dataclass
from typing import Final


def person_id(key: str | None, locus: str) -> str:
    basis = f"key\x1f{key}" if key else f"locus\x1f{locus}"
    return "per_" + hashlib.sha256(basis.encode()).hexdigest()[:16]


@dataclass(frozen=True, slots=True)
class PersonRecord:
    id: str
    name: str
    key: str | None
    tick: int = 0
    created_at: str = ""


def well_known(key: str, name: str) -> PersonRecord:
    """A Person the memory itself names: the same id on every store."""
    return PersonRecord(person_id(key, ""), name, key)


# Loci made before directors existed: their director was never recorded, and saying so
# is the truth; the configured director of today is no evidence of who directed them.
BEFORE_DIRECTORS: Final = well_known("kenning:before-directors", "unknown (before directors)")
# A server told not to require a director still directs every locus: by this one.
UNDIRECTED: Final = well_known("kenning:undirected", "unknown (no director given)")


@dataclass(frozen=True, slots=True)
class ClaimRecord:
    """One REFERENT_CLAIM: ``source`` and ``target`` are one thing (confirmed), might be
    (proposed), or are not (distinct), as claimed in ``encounter`` at ``tick``."""

    source: str
    target: str
    resolution: str
    why: str
    tick: int
    encounter: str
    created_at: str = ""


@dataclass(frozen=True, slots=True)
class Confirmation:
    """The latest review of a node that found it still true."""

    node: str
    encounter: str
    tick: int
    at: str
