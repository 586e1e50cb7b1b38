"""Directors (#17 item 1): every locus is directed by exactly one Person.

The Person is tied at the session's first advance, in the same transaction that makes
the locus, so node -> encounter -> locus -> director is always answerable. The director
comes from the advance (a name, optionally a key), else from the server's configuration,
whose default is the operating-system user, keyed by user and host, so one user is never
asked. A Person is met again only by its key (store/persons.py): two sessions naming one
key meet one Person; a name without a key is a Person of that session alone, because a
name is an act of reference, not an identity.
"""

from __future__ import annotations

import getpass
import socket
from collections.abc import Iterable
from dataclasses import dataclass
from typing import Final

from kenning_encounter.config import Settings
from kenning_encounter.errors import ConfigError, InvalidInput
from kenning_encounter.memory import validate
from kenning_encounter.memory.models import DirectorOut, EncounterOut, NodeOut
from kenning_encounter.store.persons import UNDIRECTED, PersonRecord, person_id
from kenning_encounter.store.port import ReadTx, WriteTx

MAX_KEY: Final = 500


@dataclass(frozen=True, slots=True)
class Director:
    name: str
    key: str | None = None


def local_director() -> Director:
    """The operating-system user: the default director, keyed by user and host, so every
    session of one user on one machine meets one Person and no one is asked. The user's
    name comes from the environment (LOGNAME, USER) before the password file, so it is
    held to a name's rules like any other."""
    user = getpass.getuser()
    try:
        return checked(user, f"os-user:{user}@{socket.gethostname()}", "director")
    except InvalidInput as exc:
        raise ConfigError(
            f"the operating-system user {user[:80]!r} cannot name the default director "
            f"({exc}); set KENNING_ENCOUNTER_DIRECTOR to the name of who directs sessions"
        ) from None


def checked(name: object, key: object, field: str) -> Director:
    """A director's name and key as a write keeps them: each one line of visible text in
    its composed form (a key spelt two ways would be two people), the key optional."""
    shown = validate.name(name, field)
    blank = key is None or (isinstance(key, str) and not key.strip())
    keyed = None if blank else validate.name(key, f"{field}_key", limit=MAX_KEY)
    return Director(shown, keyed)


@dataclass(frozen=True, slots=True)
class DirectorPolicy:
    default: Director | None
    required: bool = True


def director_policy(settings: Settings) -> DirectorPolicy:
    """The configured default director: ``director`` unset means the operating-system
    user; set empty, no one (then ``require_director`` decides)."""
    if settings.director is None:
        default = local_director() if settings.director_key is None else None
        if default is None:
            raise ConfigError(
                "director_key is set without director: set KENNING_ENCOUNTER_DIRECTOR too"
            )
    elif not settings.director.strip():
        default = None
    else:
        default = checked(settings.director, settings.director_key, "director")
    return DirectorPolicy(default, required=settings.require_director)


def director_in(name: object, key: object, field: str = "director") -> Director | None:
    """A director as a caller named it, checked; None when nothing was named."""
    if name is None and key is None:
        return None
    if name is None:
        raise InvalidInput(
            field, "a director_key needs a name: pass director too (the key alone names no one)"
        )
    return checked(name, key, field)


def _person(director: Director, locus: str) -> PersonRecord:
    return PersonRecord(person_id(director.key, locus), director.name, director.key)


def direct(
    tx: WriteTx,
    locus: str,
    asked: Director | None,
    policy: DirectorPolicy,
    *,
    made_now: bool = False,
) -> None:
    """Tie the locus to its director at its first advance; later advances keep it.
    ``made_now``: the locus was made in this write, so it has no director to ask for."""
    held = None if made_now else tx.director_of(locus)
    if held is not None:
        if asked is not None and _person(asked, locus).id != held.id:
            raise InvalidInput(
                "director",
                f"this session is directed by {held.name!r} since its first advance, and a "
                "session has one director: omit director, or start a new session",
            )
        return
    chosen = asked or policy.default
    if chosen is None:
        if policy.required:
            raise InvalidInput(
                "director",
                "this server requires a director and none is configured: pass director "
                "(a name) and director_key (e.g. an email address), or set "
                "KENNING_ENCOUNTER_DIRECTOR and KENNING_ENCOUNTER_DIRECTOR_KEY",
            )
        tx.direct_locus(locus, UNDIRECTED)
        return
    tx.direct_locus(locus, _person(chosen, locus))


def director_out(person: PersonRecord | None) -> DirectorOut | None:
    if person is None:
        return None
    return DirectorOut(id=person.id, name=person.name, key=person.key)


def fill_directors(
    tx: ReadTx,
    nodes: Iterable[NodeOut] = (),
    encounters: Iterable[tuple[EncounterOut, str]] = (),
) -> None:
    """Fill each node's director from its locus, and each encounter's from the locus given
    with it (its output shows the locus only cut short): one lookup for all of them, a
    round trip on Neo4j."""
    items, sessions = list(nodes), list(encounters)
    loci = [n.locus for n in items if n.locus] + [locus for _, locus in sessions]
    directors = tx.directors_of(loci)
    for n in items:
        if n.locus:
            n.director = director_out(directors.get(n.locus))
    for out, locus in sessions:
        out.director = director_out(directors.get(locus))


def with_directors(tx: ReadTx, outs: Iterable[NodeOut]) -> None:
    """Fill each node's director from its locus (one lookup for all)."""
    fill_directors(tx, outs)
