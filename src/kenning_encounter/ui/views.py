"""What each inspector page shows, read from the memory: plain data for the templates.

Every read goes through the memory service or the store port, read-only, and every
one honours the face's hidden loci: an encounter, node, link, log session or id of a
hidden locus is left out before a template sees it, never filtered in the page.
Session ids are shown cut short (``shown_session``), as the tools show them.

Each listing is a page of a bounded size; nothing here reads the whole graph.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from datetime import UTC, datetime
from typing import Any, Final

from kenning_encounter.errors import InvalidInput, KenningError
from kenning_encounter.memory import gates, history
from kenning_encounter.memory.models import Provenance, SearchResult, shown_session
from kenning_encounter.memory.service import Memory
from kenning_encounter.memory.writes import is_node_id
from kenning_encounter.store.infusion_log import KeepsInfusionLog, LogEntry, LogSession
from kenning_encounter.store.port import ReadTx
from kenning_encounter.store.records import EdgeRecord, EncounterRecord, NodeRecord
from kenning_encounter.ui.author import Author, author_of

PAGE: Final = 20
MAX_PAGE: Final = 500  # past this a page number is refused: pages are for reading
MEMBERS_SHOWN: Final = 30
LINKS_SHOWN: Final = 200  # each way, on a node page
SEARCH_MAX: Final = 100
ECHOED: Final = 40  # characters of an address's value a "not here" message repeats


@dataclass(frozen=True)
class NodeLink:
    id: str
    name: str
    type: str
    head: bool = True


@dataclass(frozen=True)
class EncounterView:
    name: str
    session: str
    purpose: str
    opened_at: str
    sealed_at: str | None
    dissolved_at: str | None
    summary: str | None
    tombstones: int
    state: str
    recorded: list[NodeLink]
    more: int


@dataclass(frozen=True)
class Paged:
    page: int
    has_more: bool

    @property
    def prev(self) -> int | None:
        return self.page - 1 if self.page > 0 else None

    @property
    def next(self) -> int | None:
        return self.page + 1 if self.has_more else None


@dataclass(frozen=True)
class SpineView(Paged):
    encounters: list[EncounterView] = field(default_factory=list[EncounterView])
    loci: int = 0
    clock: int = 0


@dataclass(frozen=True)
class LinkView:
    type: str
    other: NodeLink
    revision_why: str | None


@dataclass(frozen=True)
class NodeView:
    node: NodeRecord
    session: str | None
    encounter: EncounterRecord | None
    chain: history.ChainHistory
    provenance: Provenance
    names: dict[str, NodeLink]
    inbound: list[LinkView]
    outbound: list[LinkView]
    world: dict[str, str]
    author: Author
    inbound_more: int = 0  # links past LINKS_SHOWN, each way
    outbound_more: int = 0


@dataclass(frozen=True)
class LogSessionView(Paged):
    sessions: list[tuple[LogSession, str]] = field(default_factory=list[tuple[LogSession, str]])
    kept: bool = True


@dataclass(frozen=True)
class EntryView:
    entry: LogEntry
    bodies: list[NodeLink]
    standing: list[NodeLink]
    cut: list[NodeLink]


@dataclass(frozen=True)
class LogEntriesView(Paged):
    session: str = ""
    tag: str = ""
    entries: list[EntryView] = field(default_factory=list[EntryView])


class NotShown(KenningError):
    """Nothing to show under that address (absent, or of a hidden locus): a 404."""


def when(value: float | str | None) -> str:
    if value is None:
        return ""
    if isinstance(value, float | int):
        return datetime.fromtimestamp(float(value), UTC).isoformat(timespec="seconds")
    return value


def check_page(page: int) -> int:
    if not 0 <= page <= MAX_PAGE:
        raise InvalidInput("page", f"must be a whole number from 0 to {MAX_PAGE}, e.g. page=2")
    return page


def echoed(value: str) -> str:
    """``value`` as a message repeats it: quoted, escapes shown, cut short. An address
    may be as long as the server lets a request line be."""
    cut = value if len(value) <= ECHOED else value[:ECHOED] + "…"
    return repr(cut)


def _link(node: NodeRecord) -> NodeLink:
    return NodeLink(node.id, node.name, node.type, node.is_head)


def _linker(
    tx: ReadTx, every: Sequence[str], hidden: frozenset[str]
) -> Callable[[Sequence[str]], list[NodeLink]]:
    """Lists of ids as links, in their order, the gate and the nodes read once for all: a
    hidden locus's node is left out, a gone one named so, and one the classification
    gate withholds is left out as if never there."""
    withheld = gates.withheld_among(tx, every)
    nodes = tx.get_nodes([i for i in dict.fromkeys(every) if i not in withheld])

    def links(ids: Sequence[str]) -> list[NodeLink]:
        return _named([i for i in ids if i not in withheld], nodes, hidden)

    return links


def _named(
    ids: Sequence[str], nodes: Mapping[str, NodeRecord], hidden: frozenset[str]
) -> list[NodeLink]:
    out: list[NodeLink] = []
    for i in ids:
        node = nodes.get(i)
        if node is None:
            out.append(NodeLink(i, "(no longer held)", "", head=False))
        elif node.locus not in hidden:
            out.append(_link(node))
    return out


def _state(e: EncounterRecord) -> str:
    if e.dissolved_at is not None:
        return "dissolved"
    return "sealed" if e.sealed_at is not None else "open"


def _spine_window(
    tx: ReadTx, page: int, hidden: frozenset[str]
) -> tuple[list[EncounterRecord], bool]:
    """This page's encounters, newest first, and whether an older page follows.

    The store skips to the page itself, so a page reads PAGE + 1 encounters. Hidden
    loci (the reader face) cannot be skipped by position, so there the listing is
    read from the newest, further back while hidden ones take places.
    """
    start = page * PAGE
    if not hidden:
        got = tx.encounters(limit=PAGE + 1, offset=start)
        return got[:PAGE], len(got) > PAGE
    want = start + PAGE + 1
    asked = want
    while True:
        got = tx.encounters(limit=asked)
        shown = [e for e in got if e.locus not in hidden]
        if len(shown) >= want or len(got) < asked:
            return shown[start : start + PAGE], len(shown) > start + PAGE
        asked *= 2


def spine(memory: Memory, page: int) -> SpineView:
    hidden = memory.hidden_loci
    check_page(page)

    def work(tx: ReadTx) -> SpineView:
        window, more = _spine_window(tx, page, hidden)
        members = tx.encounter_members([e.name for e in window])
        shown = {e.name: members.get(e.name, [])[:MEMBERS_SHOWN] for e in window}
        # One read for every encounter's nodes on the page, not one per encounter.
        nodes = tx.get_nodes(list({i: None for ids in shown.values() for i in ids}))
        views = [
            EncounterView(
                name=e.name,
                session=shown_session(e.locus, None),
                purpose=e.purpose,
                opened_at=e.opened_at,
                sealed_at=e.sealed_at,
                dissolved_at=e.dissolved_at,
                summary=e.summary,
                tombstones=e.tombstones,
                state=_state(e),
                recorded=_named(shown[e.name], nodes, hidden),
                more=max(0, len(members.get(e.name, [])) - MEMBERS_SHOWN),
            )
            for e in window
        ]
        loci = [x for x in tx.loci() if x not in hidden]
        return SpineView(
            page=page, has_more=more, encounters=views, loci=len(loci), clock=tx.clock()
        )

    return memory.store.read(work)


@dataclass(frozen=True)
class Links:
    """One way of a node's links, newest first, at most LINKS_SHOWN; ``more`` left out."""

    shown: list[LinkView]
    more: int


def _edge_views(
    tx: ReadTx, edges: Sequence[EdgeRecord], node_id: str, hidden: frozenset[str]
) -> tuple[Links, Links]:
    """The links in and out, each way cut to LINKS_SHOWN. Only the shown links' other
    ends are read, so a hub's page reads its thousands of neighbours as edges alone;
    where loci are hidden every end is read, for a hidden one is not even counted."""
    newest = sorted(edges, key=lambda e: (e.tick, e.source, e.target), reverse=True)
    ways: list[Links] = []
    for inward in (True, False):

        def end(e: EdgeRecord, inward: bool = inward) -> str:
            return e.source if inward else e.target

        way = [e for e in newest if (e.target == node_id) == inward]
        ends: dict[str, NodeRecord] | None = None
        if hidden:
            ends = tx.get_nodes([end(e) for e in way])
            way = [e for e in way if (n := ends.get(end(e))) is not None and n.locus not in hidden]
        page = way[:LINKS_SHOWN]
        others = ends if ends is not None else tx.get_nodes([end(e) for e in page])
        shown = [
            LinkView(e.type, _link(others[end(e)]), e.revision_why)
            for e in page
            if end(e) in others
        ]
        ways.append(Links(shown, len(way) - len(page)))
    return ways[0], ways[1]


def node(memory: Memory, node_id: str) -> NodeView:
    hidden = memory.hidden_loci
    if not is_node_id(node_id):
        raise NotShown(f"node: {echoed(node_id)} is not a node id")

    def work(tx: ReadTx) -> tuple[NodeRecord, EncounterRecord | None, list[EdgeRecord], Author]:
        found = tx.get_node(node_id)
        if found is None or found.locus in hidden:
            raise NotShown(f"node: no node {node_id} is held here")
        encounter = tx.get_encounter(found.encounter) if found.encounter else None
        return found, encounter, tx.edges_of(node_id), author_of(tx, found, encounter)

    held, encounter, edges, author = memory.store.read(work)
    chain = history.chain_history(memory.store, node_id, hidden_loci=hidden)
    provenance = memory.trace_provenance(node_id)

    def names(tx: ReadTx) -> tuple[dict[str, NodeLink], Links, Links]:
        ids = {e.source for e in provenance.edges} | {e.target for e in provenance.edges}
        found = tx.get_nodes(sorted(ids))
        named = {i: _link(n) for i, n in found.items() if n.locus not in hidden}
        inbound, outbound = _edge_views(tx, edges, node_id, hidden)
        return named, inbound, outbound

    named, inbound, outbound = memory.store.read(names)
    world = {
        k: str(held.props[k])
        for k in ("valid_from", "valid_until", "t_observed")
        if held.props.get(k) not in (None, "")
    }
    return NodeView(
        node=held,
        session=shown_session(held.locus, None) if held.locus else None,
        encounter=encounter,
        chain=chain,
        provenance=provenance,
        names=named,
        inbound=inbound.shown,
        outbound=outbound.shown,
        world=world,
        author=author,
        inbound_more=inbound.more,
        outbound_more=outbound.more,
    )


def search(
    memory: Memory, query: str, *, history_too: bool, page: int
) -> tuple[SearchResult, Paged]:
    check_page(page)
    limit = min(SEARCH_MAX, (page + 1) * PAGE + 1)
    if page * PAGE >= SEARCH_MAX:
        last = (SEARCH_MAX - 1) // PAGE
        raise InvalidInput(
            "page",
            f"search shows its best {SEARCH_MAX} hits, on pages 0 to {last}; try other words",
        )
    try:
        result = memory.search(query, limit=limit, include_superseded=history_too)
    except InvalidInput as exc:
        if exc.field != "query":
            raise
        # The search tool's field is the page's parameter q.
        raise InvalidInput("q", str(exc).removeprefix("query: ")) from exc
    start = page * PAGE
    hits = result.hits[start : start + PAGE]
    shown = result.model_copy(update={"hits": hits, "total_shown": len(hits)})
    return shown, Paged(page, len(result.hits) > start + PAGE)


def _log_store(memory: Memory) -> Any:
    store = memory.store
    return store.infusion_log if isinstance(store, KeepsInfusionLog) else None


def log_sessions(memory: Memory, page: int) -> LogSessionView:
    logs = _log_store(memory)
    if logs is None:
        return LogSessionView(page=0, has_more=False, kept=False)
    hidden = memory.hidden_loci
    start = check_page(page) * PAGE
    found: list[LogSession] = logs.sessions(offset=0, limit=start + PAGE + 1 + len(hidden))
    shown = [s for s in found if s.session not in hidden]
    window = [(s, shown_session(s.session, None)) for s in shown[start : start + PAGE]]
    return LogSessionView(page=page, has_more=len(shown) > start + PAGE, sessions=window)


def log_entries(memory: Memory, tag: str, page: int) -> LogEntriesView:
    logs = _log_store(memory)
    if logs is None or not (len(tag) == 16 and all(c in "0123456789abcdef" for c in tag)):
        raise NotShown(f"session: no infusion log for {echoed(tag)}")
    hidden = memory.hidden_loci
    start = check_page(page) * PAGE
    found: list[LogEntry] = logs.entries(tag, offset=start, limit=PAGE + 1)
    if not found or found[0].session in hidden:
        raise NotShown(f"session: no infusion log for {echoed(tag)}")

    def work(tx: ReadTx) -> list[EntryView]:
        page = found[:PAGE]
        links = _linker(tx, [i for e in page for i in (*e.bodies, *e.standing, *e.cut)], hidden)
        return [EntryView(e, links(e.bodies), links(e.standing), links(e.cut)) for e in page]

    return LogEntriesView(
        page=page,
        has_more=len(found) > PAGE,
        session=shown_session(found[0].session, None),
        tag=tag,
        entries=memory.store.read(work),
    )
