"""The spine: opening, sealing and dissolving encounters.

Only these functions write process nodes and edges (invariant 1).
"""

from __future__ import annotations

from datetime import UTC, datetime, timedelta

from kenning_encounter.errors import (
    EncounterSealed,
    InvalidInput,
    NoOpenEncounter,
    NotFound,
    NotYourEncounter,
)
from kenning_encounter.memory import directors, gates, validate
from kenning_encounter.memory.directors import Director, DirectorPolicy, local_director
from kenning_encounter.memory.models import (
    Closed,
    EncounterOut,
    NodeOut,
    ReEntry,
    shown_session,
)
from kenning_encounter.store.port import GraphStore, HeadsAsk, ReadTx, WriteTx
from kenning_encounter.store.records import EncounterRecord
from kenning_encounter.vocabulary import FRONTIER_STATUSES

REENTRY_LIMIT = 10
_DESCRIPTION_PREVIEW = 160


def _preview(nodes: list[NodeOut]) -> list[NodeOut]:
    for n in nodes:
        if len(n.description) > _DESCRIPTION_PREVIEW:
            n.description = n.description[: _DESCRIPTION_PREVIEW - 1].rstrip() + "…"
    return nodes


def _seal(tx: WriteTx, session: str, encounter: EncounterRecord, summary: str) -> EncounterRecord:
    if encounter.locus != session:
        raise NotYourEncounter(
            f"encounter {encounter.name!r} belongs to session "
            f"{shown_session(encounter.locus, session)!r}; only its own session can seal it"
        )
    if encounter.sealed_at is not None:
        raise EncounterSealed(encounter.name)
    return tx.seal_encounter(encounter, summary)


def advance(
    store: GraphStore,
    session_id: str,
    purpose: str,
    *,
    close_summary: str | None = None,
    hidden_loci: frozenset[str] = frozenset(),
    director: Director | None = None,
    policy: DirectorPolicy | None = None,
) -> ReEntry:
    session = validate.session_id(session_id)
    directing = policy or DirectorPolicy(local_director())
    purpose = validate.written(purpose, "purpose", required=True, limit=2_000)
    summary = (
        validate.written(close_summary, "close_summary", required=True, limit=10_000)
        if close_summary is not None
        else None
    )

    def work(tx: WriteTx) -> ReEntry:
        open_now = tx.open_encounter_of(session)
        closed: str | None = None
        if open_now is not None:
            if summary is None:
                raise InvalidInput(
                    "close_summary",
                    f"encounter {open_now.name!r} is still open for this session; pass "
                    "close_summary to seal it in this call, or call close_encounter first",
                )
            _seal(tx, session, open_now, summary)
            closed = open_now.name
        elif summary is not None:
            raise InvalidInput("close_summary", "there is no open encounter to seal; omit it")
        # A locus made now has no encounter before this one: nothing to ask.
        # An open encounter's locus stands: there is nothing to make.
        made = open_now is None and tx.ensure_locus(session)
        previous = None if made else tx.last_encounter_of(session)
        anchor = None if previous is not None else tx.latest_encounter()
        directors.direct(tx, session, director, directing, made_now=made)
        name = f"E{tx.tick}"
        record = EncounterRecord(
            name=name, locus=session, purpose=purpose, opened_tick=tx.tick, opened_at=tx.now
        )
        opened = tx.create_encounter(
            record,
            previous=previous.name if previous else None,
            anchor=anchor.name if anchor else None,
        )
        latest, open_elsewhere = tx.reentry_encounters(
            recent=REENTRY_LIMIT + 1, unsealed=50, exclude_locus=session
        )
        recent = [e for e in latest if e.name != name]
        unsealed = [e for e in open_elsewhere if e.locus not in hidden_loci]
        frontier_h = FRONTIER_STATUSES["Hypothesis"] + ("supported",)
        seen = gates.view(store, tx)  # the payload shows what the caller's reads would

        def visible(nodes: list[NodeOut]) -> list[NodeOut]:
            return _preview([n for n in nodes if n.locus not in hidden_loci])

        shown_recent = [e for e in recent[:REENTRY_LIMIT] if e.locus not in hidden_loci]
        questions, hypotheses, concepts = seen.heads_many(
            [
                HeadsAsk("Question", REENTRY_LIMIT, FRONTIER_STATUSES["Question"]),
                HeadsAsk("Hypothesis", REENTRY_LIMIT, frontier_h),
                HeadsAsk("Concept", REENTRY_LIMIT),
            ]
        )
        entry = ReEntry(
            encounter=EncounterOut.of(opened, session),
            previous=previous.name if previous else None,
            anchored_after=anchor.name if anchor else None,
            closed_previous=closed,
            recent_sessions=[EncounterOut.of(e, session) for e in shown_recent],
            open_questions=visible([NodeOut.of(n) for n in questions]),
            live_hypotheses=visible([NodeOut.of(n) for n in hypotheses]),
            recent_concepts=visible([NodeOut.of(n) for n in concepts]),
            unsealed=[EncounterOut.of(e, session) for e in unsealed],
        )
        # Who directed each session and wrote each node: the re-entry's author fields.
        directors.fill_directors(
            tx,
            [*entry.open_questions, *entry.live_hypotheses, *entry.recent_concepts],
            zip(
                [entry.encounter, *entry.recent_sessions, *entry.unsealed],
                [session, *(e.locus for e in shown_recent), *(e.locus for e in unsealed)],
                strict=True,
            ),
        )
        return entry

    return store.write(work)


def close(store: GraphStore, session_id: str, summary: str, encounter: str | None = None) -> Closed:
    session = validate.session_id(session_id)
    text = validate.written(summary, "summary", required=True, limit=10_000)
    name = validate.text(encounter, "encounter", required=False, limit=200) or None

    def work(tx: WriteTx) -> Closed:
        if name is None:
            target = tx.open_encounter_of(session)
            if target is None:
                last = tx.last_encounter_of(session)
                detail = (
                    f"its last encounter {last.name!r} was {DISSOLVED}; "
                    f"pass encounter={last.name!r} to seal it"
                    if last is not None and last.sealed_at is None
                    else ""
                )
                raise NoOpenEncounter(session, detail)
        else:
            target = tx.get_encounter(name)
            if target is None:
                raise NotFound("encounter", name, "names look like 'E42'; see advance_encounter")
        sealed = _seal(tx, session, target, text)
        return Closed(encounter=EncounterOut.of(sealed, session))

    return store.write(work)


DISSOLVED = "dissolved: its session ended or showed no activity for the idle horizon"


def _idle(e: EncounterRecord, cutoff: datetime) -> bool:
    when = e.last_activity_at or e.opened_at
    try:
        moment = datetime.fromisoformat(when)
    except ValueError:  # an unreadable stamp is not evidence of idleness
        return False
    if moment.tzinfo is None:
        moment = moment.replace(tzinfo=UTC)
    return moment < cutoff


def dissolve_idle(store: GraphStore, horizon_s: float, *, now: datetime | None = None) -> list[str]:
    """Dissolve every open encounter idle for longer than ``horizon_s``.

    Session state is durable in the store, so a server start dissolves nothing
    by itself; an encounter goes only when its session is gone. Idempotent and
    decided again inside the write, so any number of processes may sweep at once.
    """
    cutoff = (now or datetime.now(UTC)) - timedelta(seconds=horizon_s)

    def idle(tx: ReadTx) -> list[str]:
        return [
            e.name
            for e in tx.encounters(unsealed_only=True, limit=1_000_000)
            if e.is_open and _idle(e, cutoff)
        ]

    def work(tx: WriteTx) -> list[str]:
        names = idle(tx)
        for name in names:
            tx.dissolve_encounter(name)
        return names

    if not store.read(idle):
        return []
    return store.write(work)


def session_end(store: GraphStore, session_id: str) -> str | None:
    """The harness ended the session: its open encounter is dissolved (a mechanical time,
    no summary), as the idle sweep would; the session may still seal it by name, with a
    summary, if it comes back (``close`` with ``encounter``)."""
    session = validate.session_id(session_id)

    def work(tx: WriteTx) -> str | None:
        target = tx.open_encounter_of(session)
        if target is None:
            return None
        tx.dissolve_encounter(target.name)
        return target.name

    return store.write(work)


def require_open(tx: ReadTx, session: str) -> EncounterRecord:
    """The session's open encounter, or the refusal that says how to get one."""
    return ensure_open(tx, session, tx.open_encounter_of(session))


def ensure_open(tx: ReadTx, session: str, current: EncounterRecord | None) -> EncounterRecord:
    """``current``, the session's open encounter as just read, or the refusal that says
    how to get one."""
    if current is not None:
        return current
    last = tx.last_encounter_of(session)
    if last is not None and last.sealed_at is not None:
        raise EncounterSealed(last.name)
    detail = (
        f"{last.name!r} was {DISSOLVED}; advance_encounter opens the next one"
        if last is not None
        else "this session has never advanced"
    )
    raise NoOpenEncounter(session, detail)
