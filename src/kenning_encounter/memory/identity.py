"""Which references are one thing, and what was found still true (#17 items 2-3).

Directors (item 1) are in directors.py.

Referent claims. A claim says two referents of one type are one thing (confirmed), may
be (proposed), or are not (distinct); it is a REFERENT_CLAIM edge with its encounter,
hence its author. Claims accumulate: the latest on a pair is the one in force, so a
later claim revises an earlier without erasing who said what. Reads follow confirmed
claims only when asked (``same_as``); nothing is ever merged, by name or otherwise.

Confirmations. confirm_entities records, from the open encounter, that nodes were
reviewed and found still true: a CONFIRMED edge, never a change to the node.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping, Sequence
from typing import Any, Final, cast

from pydantic import ConfigDict, Field

from kenning_encounter.errors import InvalidInput
from kenning_encounter.lazymodel import LazyModel
from kenning_encounter.memory import validate
from kenning_encounter.memory.spine import require_open
from kenning_encounter.memory.writes import resolve_shown
from kenning_encounter.store.persons import ClaimRecord
from kenning_encounter.store.port import GraphStore, ReadTx, WriteTx
from kenning_encounter.vocabulary import REFERENT_RESOLUTIONS, REFERENT_TYPES

MAX_SAME_AS: Final = 50  # nodes one same_as expansion may add: a claim cluster, not a graph


# --- confirmations ------------------------------------------------------------------
class Confirmed(LazyModel):
    encounter: str
    tick: int
    confirmed: list[dict[str, str]] = Field(description="id and name of each node confirmed")


def confirm_entities(
    store: GraphStore, session_id: str, refs: Sequence[str], why: str | None = None
) -> Confirmed:
    session = validate.session_id(session_id)
    items = validate.batch(list(refs), "refs")
    reason = validate.written(why, "why", required=False, limit=2_000)

    def work(tx: WriteTx) -> Confirmed:
        encounter = require_open(tx, session)
        nodes = [resolve_shown(store, tx, str(ref), f"refs[{i}]") for i, ref in enumerate(items)]
        ids = list(dict.fromkeys(n.id for n in nodes))
        tx.touch_encounter(encounter.name)
        tx.confirm_nodes(encounter.name, ids, reason)
        named = {n.id: n.name for n in nodes}
        return Confirmed(
            encounter=encounter.name,
            tick=tx.tick,
            confirmed=[{"id": i, "name": named[i]} for i in ids],
        )

    return store.write(work)


# --- referent claims ----------------------------------------------------------------
class ClaimIn(LazyModel):
    """One claim about two referents of one type (Component, Concept or Citation)."""

    model_config = ConfigDict(extra="forbid")

    source: str = Field(description="Name or id of one referent.")
    target: str = Field(description="Name or id of the other referent, of the same type.")
    resolution: str = Field(
        description="confirmed (they are one thing), distinct (they are not) or proposed "
        "(they may be). A later claim on the same pair revises this one."
    )
    why: str | None = Field(default=None, description="What the claim rests on.")


class ClaimOut(LazyModel):
    source: str
    target: str
    resolution: str
    why: str | None = None
    revises: str | None = Field(
        default=None, description="The resolution in force on this pair before this claim"
    )


class Claimed(LazyModel):
    encounter: str
    tick: int
    claims: list[ClaimOut]


def _pair(a: str, b: str) -> tuple[str, str]:
    return (a, b) if a <= b else (b, a)


def in_force(claims: Iterable[ClaimRecord]) -> dict[tuple[str, str], ClaimRecord]:
    """The latest claim on each pair, whichever way round it was made."""
    latest: dict[tuple[str, str], ClaimRecord] = {}
    for c in claims:
        key = _pair(c.source, c.target)
        held = latest.get(key)
        if held is None or c.tick >= held.tick:
            latest[key] = c
    return latest


def _claim_in(raw: object, field: str) -> ClaimIn:
    if isinstance(raw, ClaimIn):
        data: dict[str, Any] = raw.model_dump()
    elif isinstance(raw, Mapping):
        data = {str(k): v for k, v in cast(Mapping[object, Any], raw).items()}
    else:
        raise InvalidInput(field, "must be an object with source, target and resolution")
    unknown = sorted(set(data) - set(ClaimIn.model_fields))
    if unknown:
        raise InvalidInput(
            f"{field}.{unknown[0]}", "unknown field; a claim has source, target, resolution, why"
        )
    resolution = data.get("resolution")
    if resolution not in REFERENT_RESOLUTIONS:
        raise InvalidInput(
            f"{field}.resolution",
            f"must be one of: {', '.join(REFERENT_RESOLUTIONS)}",
            value=resolution,
        )
    return ClaimIn(
        source=validate.text(data.get("source"), f"{field}.source", required=True, limit=200),
        target=validate.text(data.get("target"), f"{field}.target", required=True, limit=200),
        resolution=str(resolution),
        why=validate.written(data.get("why"), f"{field}.why", required=False, limit=2_000) or None,
    )


def claim_referents(
    store: GraphStore, session_id: str, claims: Sequence[ClaimIn | Mapping[str, Any]]
) -> Claimed:
    session = validate.session_id(session_id)
    items = validate.batch(list(claims), "claims")
    drafts = [_claim_in(raw, f"claims[{i}]") for i, raw in enumerate(items)]

    def work(tx: WriteTx) -> Claimed:
        encounter = require_open(tx, session)
        planned: list[ClaimRecord] = []
        for i, d in enumerate(drafts):
            field = f"claims[{i}]"
            a = resolve_shown(store, tx, d.source, f"{field}.source")
            b = resolve_shown(store, tx, d.target, f"{field}.target")
            if a.type not in REFERENT_TYPES:
                raise InvalidInput(
                    f"{field}.source",
                    f"a {a.type} is not a referent; claims join {', '.join(REFERENT_TYPES)} "
                    "nodes (claim about what the node is about instead)",
                )
            if b.type != a.type:
                raise InvalidInput(
                    f"{field}.target",
                    f"a claim joins two referents of one type: {a.name!r} is a {a.type}, "
                    f"{b.name!r} a {b.type}",
                )
            if a.id == b.id:
                raise InvalidInput(f"{field}.target", "a node is trivially itself; name another")
            if any(_pair(c.source, c.target) == _pair(a.id, b.id) for c in planned):
                raise InvalidInput(field, "this pair is claimed twice in one call; send one")
            planned.append(
                ClaimRecord(a.id, b.id, d.resolution, d.why or "", tx.tick, encounter.name)
            )
        held = in_force(tx.claims_of([c.source for c in planned]))
        tx.touch_encounter(encounter.name)
        out: list[ClaimOut] = []
        for c in planned:
            tx.create_claim(c)
            before = held.get(_pair(c.source, c.target))
            out.append(
                ClaimOut(
                    source=c.source,
                    target=c.target,
                    resolution=c.resolution,
                    why=c.why or None,
                    revises=before.resolution if before is not None else None,
                )
            )
        return Claimed(encounter=encounter.name, tick=tx.tick, claims=out)

    return store.write(work)


def same_as(tx: ReadTx, node_ids: Sequence[str]) -> dict[str, str]:
    """Nodes joined to ``node_ids`` by confirmed claims in force, followed as far as they
    go (bounded): each found id -> the id it was reached from. The starting ids are not
    in the answer."""
    reached: dict[str, str] = {}
    seen = set(node_ids)
    frontier = list(dict.fromkeys(node_ids))
    while frontier and len(reached) < MAX_SAME_AS:
        step: list[str] = []
        for (x, y), claim in in_force(tx.claims_of(frontier)).items():
            if claim.resolution != "confirmed":
                continue
            for here, there in ((x, y), (y, x)):
                if here in frontier and there not in seen and len(reached) < MAX_SAME_AS:
                    reached[there] = here
                    seen.add(there)
                    step.append(there)
        frontier = step
    return reached
