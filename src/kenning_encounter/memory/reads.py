"""Asked-for recall: search, lookup by name, and provenance."""

from __future__ import annotations

import re
from collections.abc import Callable, Mapping, Sequence
from datetime import UTC, datetime, timedelta
from typing import Final

from kenning_encounter.errors import InvalidInput, NotFound
from kenning_encounter.memory import asof, directors, identity, validate
from kenning_encounter.memory.activation import Activation, Present, WorkTime, last_use, tiers_shown
from kenning_encounter.memory.models import (
    EdgeOut,
    EncounterOut,
    Hit,
    NameLookup,
    NodeOut,
    Provenance,
    Revision,
    SearchResult,
)
from kenning_encounter.memory.seen import named, where_it_stands
from kenning_encounter.memory.writes import is_node_id
from kenning_encounter.store.port import (
    MAX_CHAIN,
    ChainLink,
    GraphStore,
    ReadTx,
    SearchHit,
    TermStatsSnapshot,
)
from kenning_encounter.store.records import HIDDEN_SUCCESSOR, WITHHELD_SUCCESSOR, NodeRecord
from kenning_encounter.textproc_bm25 import Bm25, query_terms
from kenning_encounter.textproc_time import (
    EVENT_CERTAINTY,
    EventRef,
    TimeWindow,
    event_window,
    find_event,
    find_times,
    node_time,
    read_range,
    read_time,
    record_keys,
    swappable_date,
)
from kenning_encounter.vocabulary import PROVENANCE_RELATION_TYPES

MAX_LIMIT = 100
MAX_DEPTH = 10
# Older revisions find_by_name lists (the newest of them); chain_history pages the rest.
HISTORY_LIMIT = 20
_SEARCH_PREVIEW = 400
# Candidates the text index is asked for at least, each scored again by the caller's
# statistics: while the query's words match no more heads than this (of the caller's
# memory, that it may see), every match is a candidate and the page is exactly the best
# of them; past it, one near the pool's edge may come in or stay out by the index's order.
POOL = 50
# Hits read before a ``when`` filter: the index ranks by words, not by time.
_WHEN_FETCH = 1_000
_EVENT_HITS = 50  # records read to place an event named in when
WHEN_HELP = (
    "use an ISO date or range ('2023-05-07', '2023-05-01..2023-05-31', '2023-05-01..' "
    "for open-ended), a time phrase ('yesterday', 'last week', 'in May 2023', "
    "'two hours ago', 'December', '2024'), or two joined as a range ('March to May 2024')"
)


def _visible(node: NodeRecord, hidden: frozenset[str]) -> bool:
    return node.locus not in hidden


def with_standing(out: NodeOut, node: NodeRecord, standing: Activation, now: Present) -> NodeOut:
    """``out`` with the node's standing as it is read (before this read renews it)."""
    out.tier = standing.tier(node, now)
    out.last_used_at = last_use(node)
    out.pinned = node.pinned is not None
    return out


def _standing_now(
    tx: ReadTx,
    out: NodeOut,
    node: NodeRecord,
    activation: Activation | None,
    now: datetime | None,
    work_time: WorkTime | None,
) -> None:
    policy = activation or Activation()
    present = (work_time or WorkTime()).present(tx, policy, now or datetime.now(UTC))
    with_standing(out, node, policy, present)


def when_window(
    when: str, now: datetime, place: Callable[[EventRef], TimeWindow | None] | None = None
) -> TimeWindow:
    """The ``when`` filter's window, or the error naming the field and the fix. With
    ``place``, an event and nothing else ("before the migration") is placed by it (the
    memory's record of the event)."""
    raw = validate.text(when, "when", required=True, limit=200)
    window = read_range(raw, now=now)
    if window is None and place is not None:
        window = _date_and_event(raw, now, place)
    if window is None and place is not None:
        ref = find_event(raw, now=now, whole=True)
        if ref is not None and not raw[: ref.span[0]].strip() and not raw[ref.span[1] :].strip():
            window = place(ref)
            if window is None:
                what = (
                    f"no record names {ref.phrase!r}"
                    if ref.then is None
                    else f"the records do not place {ref.phrase!r} before {ref.then.phrase!r}"
                )
                raise InvalidInput(
                    "when",
                    f"{what}, so {raw!r} places no time; "
                    f"name the event in other words, or {WHEN_HELP}",
                    value=raw,
                )
    if window is None:
        swapped = swappable_date(raw, now=now)
        if swapped is not None:
            raise InvalidInput(
                "when",
                f"{raw!r} is {swapped[0]} written day first and {swapped[1]} month first; "
                "give the one meant as an ISO date (YYYY-MM-DD)",
                value=raw,
            )
        raise InvalidInput("when", f"could not read {raw!r} as a time; {WHEN_HELP}", value=raw)
    return window


# "between May 3 and the launch", "from the migration until June": one end a date, the
# other an event (two dates, or two events, are the time reader's own to read).
_BETWEEN_ENDS: Final = re.compile(
    r"\s*(?:between|from)\s+(?P<a>.+?)\s+(?:and|to|until|till|through)\s+(?P<b>.+?)\s*", re.I
)


def _date_and_event(
    raw: str, now: datetime, place: Callable[[EventRef], TimeWindow | None]
) -> TimeWindow | None:
    """The time between a date and an event the memory records, either way round; None
    unless exactly one end reads as a date and the other as an event. Refused (``when``)
    when the event is in no record, or the time would run backwards."""
    m = _BETWEEN_ENDS.fullmatch(raw)
    if m is None:
        return None
    sides = (("after", m["a"]), ("before", m["b"]))
    dates = [read_range(text, now=now) for _, text in sides]
    if (dates[0] is None) == (dates[1] is None):
        return None
    side, text = sides[0] if dates[0] is None else sides[1]
    ref = find_event(f"{side} {text}", now=now, whole=True)
    if ref is None or ref.then is not None or ref.span != (0, len(side) + 1 + len(text)):
        return None
    placed = place(ref)
    if placed is None:
        raise InvalidInput(
            "when",
            f"no record names {ref.phrase!r}, so {raw!r} places no time; "
            f"name the event in other words, or {WHEN_HELP}",
            value=raw,
        )
    ends: list[tuple[str, datetime | None]] = []
    for (end_side, _), dated in zip(sides, dates, strict=True):
        window = placed if dated is None else dated
        bound = window.start if end_side == "after" else window.end
        if dated is not None:
            ends.append((dated.label, bound))
        else:  # the event, with the day its records place it at
            ends.append(
                (f"{ref.phrase} ({bound.date().isoformat()})" if bound else ref.phrase, bound)
            )
    (first, start), (last, end) = ends
    if start is not None and end is not None and start >= end:
        raise InvalidInput(
            "when",
            f"{raw!r} runs backwards: {first} is not before {last}; give the earlier end first",
            value=raw,
        )
    return TimeWindow(
        start, end, timedelta(0), EVENT_CERTAINTY, f"between {first} and {last}", (0, len(raw))
    )


def describe(window: TimeWindow) -> str:
    """A window in words and bounds, for a result's note."""
    lo = window.start.isoformat() if window.start is not None else ""
    hi = window.end.isoformat() if window.end is not None else ""
    bounds = f"month {window.month} of any year" if window.month else f"{lo}..{hi}"
    return window.label if window.label == bounds else f"{window.label} [{bounds})"


def _fit(node: NodeRecord, window: TimeWindow) -> float:
    held = node_time(node)
    return window.fit(held) if held is not None else 0.0


def rescored(
    words: str,
    hits: Sequence[SearchHit],
    stats_of: Callable[[], TermStatsSnapshot],
    nodes: Callable[[list[str]], Mapping[str, NodeRecord]],
) -> list[SearchHit]:
    """``hits`` scored by BM25 over the statistics ``stats_of`` gives (the caller's: what
    it may see of its own memory), best first, in place of the index's own scores: those
    count every document the index holds (withheld ones, another memory's on a shared
    Neo4j), and would tell a caller of words it may not see. A hit is scored from the
    tokens the index handed back with it, else from its node (``nodes`` reads those);
    a hit without either is left out. Equal scores keep the index's order."""
    if not hits:
        return []
    score = Bm25(query_terms(words), stats_of())
    read = (
        nodes([h.id for h in hits if h.terms is None]) if any(h.terms is None for h in hits) else {}
    )
    scored: list[SearchHit] = []
    for hit in hits:
        if hit.terms is not None:
            tokens: Sequence[str] = hit.terms.split()
        elif (node := read.get(hit.id)) is not None:
            tokens = record_keys(node)
        else:
            continue
        scored.append(SearchHit(hit.id, score(tokens)))
    scored.sort(key=lambda h: -h.score)
    return scored


def search(
    store: GraphStore,
    query: str,
    *,
    types: Sequence[str] | None = None,
    limit: int = 10,
    include_superseded: bool = False,
    when: str | None = None,
    now: datetime | None = None,
    hidden_loci: frozenset[str] = frozenset(),
    same_as: bool = False,
    as_of: int | str | None = None,
    include_cold: bool = False,
    activation: Activation | None = None,
    work_time: WorkTime | None = None,
) -> SearchResult:
    """Nodes by their words, best first. ``when`` keeps only nodes whose time (world time
    where the node states it, else record time) falls in it; without ``when``, a time the
    query names ("last week", read against ``now``) ranks hits of that time first and
    filters nothing. Standing (memory/activation.py) is one declared signal: a hit's
    score is weighed by its activation, and cold nodes are left out unless
    ``include_cold`` (frozen ones always: they wait in the operator's review). A read of
    the past (``as_of``) shows what stood then, every tier, unweighed."""
    text = validate.text(query, "query", required=True, limit=2_000)
    if not 1 <= limit <= MAX_LIMIT:
        raise InvalidInput("limit", f"must be between 1 and {MAX_LIMIT}", value=limit)
    for i, t in enumerate(types or []):
        validate.node_type(t, f"types[{i}]")
    if as_of is not None:
        asof.check(as_of)
    moment = now or datetime.now(UTC)
    if as_of is not None and (
        when is not None or find_times(text, now=moment) or find_event(text, now=moment)
    ):
        # A time relative to a moment ("last week") is read against the moment asked for.
        moment = asof.wall_time(store, as_of) or moment

    def place(ref: EventRef) -> TimeWindow | None:
        """An event named in ``when``, placed by the hits that record it (then, as_of);
        two events ("between the migration and the launch"), by each one's hits."""
        found: dict[str, NodeRecord] = {}
        for words in ref.phrases:
            if as_of is None:
                found |= store.search_read(
                    words,
                    lambda tx, hits, _stats: tx.get_nodes([h.id for h in hits]),
                    limit=_EVENT_HITS,
                    hidden_loci=hidden_loci,
                )
            else:
                found |= asof.search_hits(
                    store,
                    as_of,
                    words,
                    types=None,
                    include_superseded=False,
                    limit=_EVENT_HITS,
                    hidden_loci=hidden_loci,
                )[1]
        return event_window(ref, [n for n in found.values() if _visible(n, hidden_loci)])

    window = when_window(when, moment, place) if when is not None else None
    boost = read_time(text, now=moment) if window is None else None
    # A time named by an event ("before the migration") is placed by the hits that
    # record the event, once they are read.
    event = find_event(text, now=moment) if window is None and boost is None else None
    words = text
    if boost is not None:
        # The time is matched against when nodes hold, not against their words.
        for found in reversed(find_times(text, now=moment)):
            words = f"{words[: found.span[0]]} {words[found.span[1] :]}"
        words = words.strip() or text
    # Over-fetch when time filters or reorders, so it does not starve the result. A hidden
    # locus's nodes are left out by the index's own query (they take no candidate's place
    # and count in no statistic), so hiding loci needs none.
    timed = boost is not None or event is not None
    fetch = _WHEN_FETCH if window is not None else limit * 3 if timed else limit
    standing = (activation or Activation()) if as_of is None else None
    if standing is not None:
        fetch = max(fetch, limit * 3)  # faded hits are left out: fetch past them
    shown_tiers = tiers_shown(include_cold)
    faded = 0
    tiers: dict[str, str] = {}
    past: asof.Moment | None = None
    present = Present.wall(moment)
    if as_of is None:
        clock = work_time or WorkTime()

        def read(
            tx: ReadTx, hits: list[SearchHit], stats_of: Callable[[], TermStatsSnapshot]
        ) -> tuple[list[SearchHit], dict[str, NodeRecord], Present]:
            # The pool scored by the caller's statistics; its best ``fetch`` go on, as the
            # index's best went on before (standing, time and filters rank among them).
            best = rescored(words, hits, stats_of, tx.get_nodes)[:fetch]
            found = tx.get_nodes([h.id for h in best])
            return best, found, clock.present(tx, standing or Activation(), moment)

        # the hits, their nodes and the clock in one read
        # The index proposes by its own scores, which count what the caller may not see;
        # a pool of its best is scored again by the caller's statistics (``rescored``).
        hits, nodes, present = store.search_read(
            words,
            read,
            types=types,
            heads_only=not include_superseded,
            limit=max(fetch, POOL),
            hidden_loci=hidden_loci,
        )
    else:  # the memory as it stood at a past tick (memory/asof.py)
        hits, nodes, past = asof.search_hits(
            store,
            as_of,
            words,
            types=types,
            include_superseded=include_superseded,
            limit=fetch,
            hidden_loci=hidden_loci,
        )
    if event is not None:
        seen = [n for h in hits if (n := nodes.get(h.id)) is not None and _visible(n, hidden_loci)]
        boost = event_window(event, seen)
    scored: list[tuple[NodeRecord, float]] = []
    for hit in hits:
        node = nodes.get(hit.id)
        if node is None or not _visible(node, hidden_loci):
            continue
        if window is not None and _fit(node, window) <= 0:
            continue
        score = hit.score
        if standing is not None:
            tier = standing.tier(node, present)
            if tier not in shown_tiers:
                faded += 1
                continue
            tiers[node.id] = tier
            score *= standing.factor(node, present)
        if boost is not None:
            score *= 1.0 + boost.certainty * _fit(node, boost)
        scored.append((node, score))
    # Equal scores go newest first (tick, then place in its write). The index's own order
    # among them follows how its segments lie, which a rebuild (an import, a crash) changes.
    scored.sort(key=lambda pair: (-pair[1], -pair[0].tick, -pair[0].ord, pair[0].id))
    shown = [
        Hit.of(node, score, max_description=_SEARCH_PREVIEW, tier=tiers.get(node.id, ""))
        for node, score in scored[:limit]
    ]
    joined: dict[str, str] = {}
    if same_as and shown:
        shown, joined = _with_same_as(store, shown, hidden_loci, past)
    note = ""
    if window is not None:
        note = f"when: only what holds in {describe(window)}"
    elif boost is not None:
        note = f"time read from the query: hits of {describe(boost)} ranked higher, none left out"
    if not shown:
        hint = "try other words, fewer type filters or a wider when" if window else ""
        note = f"nothing matched; {hint or 'try other words or fewer type filters'}"
    if faded:
        which = "frozen" if include_cold else "cold or frozen"
        ask = "" if include_cold else "; include_cold=true shows the cold ones"
        gone = (
            f"{faded} faded hit(s) ({which}: unused for a long while) left out{ask}; "
            "find_by_name still reads any of them"
        )
        note = f"{note}; {gone}" if note else gone
    if past is not None:
        note = f"{past.note()}; {note}" if note else past.note()
    return SearchResult(
        query=text,
        hits=shown,
        total_shown=len(shown),
        note=note,
        as_of=past.tick if past is not None else None,
        same_as=joined,
    )


def _with_same_as(
    store: GraphStore, hits: list[Hit], hidden: frozenset[str], past: asof.Moment | None
) -> tuple[list[Hit], dict[str, str]]:
    """Each hit followed by the nodes confirmed claims say are the same referent (#17):
    asked for, never merged; each says which hit reached it. With ``past``, the claims
    and nodes as they stood at the tick the hits were read at."""

    def work(tx: ReadTx) -> dict[str, list[NodeRecord]]:
        tx = asof.view(tx, past.tick if past is not None else None)
        reached = identity.same_as(tx, [h.id for h in hits])
        nodes = tx.get_nodes(list(reached))
        by_hit: dict[str, list[NodeRecord]] = {}
        for found, via in reached.items():
            node = nodes.get(found)
            root = via
            while root in reached:  # a chain of claims: credit the hit it began at
                root = reached[root]
            if node is not None and _visible(node, hidden):
                by_hit.setdefault(root, []).append(node)
        return by_hit

    by_hit = store.read(work)
    shown_ids = {h.id for h in hits}
    out: list[Hit] = []
    joined: dict[str, str] = {}
    for hit in hits:
        out.append(hit)
        for node in by_hit.get(hit.id, []):
            if node.id in shown_ids:
                continue
            shown_ids.add(node.id)
            out.append(Hit.of(node, hit.score, max_description=_SEARCH_PREVIEW))
            joined[node.id] = hit.id
    return out, joined


def older_versions(
    tx: ReadTx, node: NodeRecord, limit: int, hidden: frozenset[str]
) -> tuple[list[ChainLink], int]:
    """Up to ``limit`` versions ``node`` revised, nearest first, and how many more there
    are beyond them. A hidden locus's versions are walked through, never listed or
    counted, so with loci hidden the chain behind is read whole."""
    if not hidden:
        span = tx.chain(node.id, older=limit, newer=0)
        return span.older, span.older_left
    shown = [
        x for x in tx.chain(node.id, older=MAX_CHAIN, newer=0).older if _visible(x.node, hidden)
    ]
    return shown[:limit], max(0, len(shown) - limit)


def shown_successors(tx: ReadTx, outs: Sequence[NodeOut], hidden: frozenset[str]) -> None:
    """A hidden locus's version is walked through, never named: a version it revised names
    the next version shown after it instead, or, when every later version is a hidden
    session's, ``HIDDEN_SUCCESSOR``: it was revised (no head, as the store holds it), by
    what is not said. As the class gate says ``WITHHELD_SUCCESSOR`` (memory/gates.py),
    which is left as it is."""
    if not hidden:
        return
    named = [o for o in outs if o.superseded_by and o.superseded_by != WITHHELD_SUCCESSOR]
    successors = tx.get_nodes(list({o.superseded_by for o in named if o.superseded_by}))
    for out in named:
        successor = successors.get(out.superseded_by or "")
        if successor is not None and _visible(successor, hidden):
            continue
        newer = tx.chain(out.id, older=0, newer=MAX_CHAIN).newer
        shown = (x.node.id for x in newer if _visible(x.node, hidden))
        out.superseded_by = next(shown, HIDDEN_SUCCESSOR)


def find_by_name(
    store: GraphStore,
    name: str,
    *,
    hidden_loci: frozenset[str] = frozenset(),
    as_of: int | str | None = None,
    activation: Activation | None = None,
    now: datetime | None = None,
    work_time: WorkTime | None = None,
) -> NameLookup:
    ref = validate.text(name, "name", required=True, limit=validate.MAX_NAME)
    if as_of is not None:
        asof.check(as_of)

    def work(tx: ReadTx) -> NameLookup | None:
        tx = asof.view(tx, as_of)  # as the memory stood then, when as_of names a past
        # A name first (names are exact), else an id, as the tool promises.
        holder = tx.head_id_by_name(ref)
        node_id = holder or (ref if is_node_id(ref) else None)
        asked = tx.get_node(node_id) if node_id else None
        if asked is None:
            return None
        # The version the reader means (memory/seen.py): by a name a hidden session's
        # version holds, the newest version it sees that carries the name. Whichever of
        # its names or ids, a chain stands at the newest version shown, revised when an
        # unseen one follows (``shown_successors``).
        stands = where_it_stands(tx, asked, hidden_loci, ref if holder else None)
        if stands is None or (holder is None and stands[0] is not asked):
            return None
        node, head = stands
        older, left = older_versions(tx, head, HISTORY_LIMIT, hidden_loci)
        history = [NodeOut.of(x.node) for x in older]
        found = NameLookup(
            node=NodeOut.of(head),
            resolved_from=node.id if head.id != node.id else None,
            history=history,
            history_left_out=left,
            history_next=f"chain_history(node={history[-1].id!r}, direction='older')"
            if left and history
            else None,
        )
        shown_successors(tx, [found.node, *found.history], hidden_loci)
        if as_of is None:
            _standing_now(tx, found.node, head, activation, now, work_time)
        past = asof.moment_of(tx)
        found.as_of = past.tick if past is not None else None
        directors.with_directors(tx, [found.node, *found.history])
        return found

    found = store.read(work)
    if found is None:
        similar = search(store, ref, limit=5, hidden_loci=hidden_loci, as_of=as_of).hits
        hint = (
            "similar names: " + ", ".join(repr(h.name) for h in similar)
            if similar
            else "names are exact; use search for words"
        )
        raise NotFound("node named", ref, hint)
    return found


def trace_provenance(
    store: GraphStore,
    ref: str,
    *,
    depth: int = 5,
    hidden_loci: frozenset[str] = frozenset(),
    same_as: bool = False,
    as_of: int | str | None = None,
    activation: Activation | None = None,
    now: datetime | None = None,
    work_time: WorkTime | None = None,
) -> Provenance:
    target = validate.text(ref, "ref", required=True, limit=validate.MAX_NAME)
    if not 1 <= depth <= MAX_DEPTH:
        raise InvalidInput("depth", f"must be between 1 and {MAX_DEPTH}", value=depth)

    if as_of is not None:
        asof.check(as_of)

    def work(tx: ReadTx) -> Provenance:
        tx = asof.view(tx, as_of)  # as the memory stood then, when as_of names a past
        # By name, a hidden session's version stands for the newest version shown that
        # holds the name; by id, a hidden version is not there.
        node = named(tx, target, "ref", hidden_loci)
        # Every version behind it: the revisions, and what grounded each (one walk). Each
        # with the reason its successor gave; a hidden locus's successor is walked through,
        # and the reason it gave goes unsaid (memory/history.py).
        links = tx.chain(node.id, older=MAX_CHAIN, newer=0).older
        met = {node.id: node, **{x.node.id: x.node for x in links}}
        chain = [
            (
                x.node,
                (x.edge.revision_why or "") if _visible(met[x.edge.source], hidden_loci) else "",
            )
            for x in links
            if _visible(x.node, hidden_loci)
        ]
        # Asked for: what confirmed claims say is the same referent stands on its own
        # grounding, which is then this one's too (nothing is merged).
        joined: list[NodeOut] = []
        if same_as:
            reached = identity.same_as(tx, [node.id])
            for other in tx.get_nodes(list(reached)).values():
                if _visible(other, hidden_loci):
                    out = NodeOut.of(other, max_description=_SEARCH_PREVIEW)
                    out.same_as = reached[other.id]
                    joined.append(out)
        # A revision stands on what grounded the versions it revised, too.
        subs = [
            tx.provenance_from(
                [node.id, *(c.id for c, _ in chain), *(j.id for j in joined)],
                PROVENANCE_RELATION_TYPES,
                depth,
            )
        ]
        visible = {n.id: n for sub in subs for n in sub.nodes if _visible(n, hidden_loci)}
        chain_ids = {c.id for c, _ in chain}
        joined_ids = {j.id for j in joined}
        visible = {k: v for k, v in visible.items() if k not in chain_ids | joined_ids}
        # One walk from every version: the store's row order is no order, so these are put
        # in one (oldest first) that every backend gives alike.
        all_edges = sorted(
            (e for sub in subs for e in sub.edges),
            key=lambda e: (e.tick, e.source, e.type, e.target),
        )
        grounding = sorted(
            (n for n in visible.values() if n.id != node.id), key=lambda n: (n.tick, n.ord, n.id)
        )
        edges = [
            EdgeOut(
                source=e.source,
                type=e.type,
                target=e.target,
                tick=e.tick,
                encounter=e.encounter,
                revision_why=e.revision_why,
            )
            for e in all_edges
            if e.source in visible
            and (e.target in visible or e.target in chain_ids or e.target in joined_ids)
        ]
        revisions = [Revision(id=n.id, name=n.name, revision_why=why) for n, why in chain]
        encounter = tx.get_encounter(node.encounter) if node.encounter else None
        traced = Provenance(
            node=NodeOut.of(node),
            grounding=[NodeOut.of(n, max_description=_SEARCH_PREVIEW) for n in grounding],
            edges=edges,
            revisions=revisions,
            recorded_in=EncounterOut.of(encounter) if encounter else None,
            same_as=joined,
            depth=depth,
        )
        shown_successors(tx, [traced.node, *traced.grounding, *traced.same_as], hidden_loci)
        if as_of is None:
            _standing_now(tx, traced.node, node, activation, now, work_time)
        past = asof.moment_of(tx)
        traced.as_of = past.tick if past is not None else None
        # Who said it: the node's director, each grounding node's and joined node's, and
        # the session's that recorded it.
        recorded = traced.recorded_in
        directors.fill_directors(
            tx,
            [traced.node, *traced.grounding, *traced.same_as],
            [(recorded, encounter.locus)] if recorded is not None and encounter is not None else [],
        )
        return traced

    return store.read(work)
