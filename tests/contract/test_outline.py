"""The authored graph's outline: every node without its words, the same on every backend.

Orient reads the whole memory; at a million nodes the descriptions and the type's other
properties were most of that read. ``authored_outline`` leaves them out, and the
embedded store reads only an outline's columns. These tests hold the outline to the
whole graph seen through ``NodeRecord.outline``, on each backend, as of a past tick
too, and behind the read gate.
"""

from __future__ import annotations

from kenning_encounter.memory import asof
from kenning_encounter.memory.service import Memory
from kenning_encounter.store.outline import Outline
from kenning_encounter.store.port import GraphStore, ReadTx, Subgraph
from kenning_encounter.store.records import NodeRecord
from tests.support.dumps import A, seed

Keyed = tuple[list[NodeRecord], list[tuple[str, str, str, int]]]


def _keyed(graph: Subgraph | Outline) -> Keyed:
    """Nodes by id, and each relation as what an outline's columns hold of it."""
    edges = graph.edge_records() if isinstance(graph, Outline) else graph.edges
    return sorted(graph.nodes, key=lambda n: n.id), sorted(
        (e.source, e.target, e.type, e.tick) for e in edges
    )


def _outlined(graph: Subgraph) -> Keyed:
    return _keyed(Subgraph([n.outline() for n in graph.nodes], graph.edges))


def _pinned(store: GraphStore) -> None:
    memory = Memory(store)
    memory.advance_encounter(A, "pins")
    held = store.read(lambda tx: tx.authored_graph().nodes)
    # Neo4j lists nodes in no fixed order: pin one this ungranted reader may see.
    open_ = next(n for n in held if not n.props.get("classification"))
    memory.pin_entities(A, [open_.id], why="keep it near")


def test_the_outline_is_the_whole_graph_without_its_words(store: GraphStore) -> None:
    seed(store)
    _pinned(store)

    def both(tx: ReadTx) -> tuple[Subgraph, Outline]:
        return tx.authored_graph(), tx.authored_outline()

    whole, outline = store.read(both)
    assert _keyed(outline) == _outlined(whole)
    # The seed holds what an outline must carry: statuses, a class, a pin, successors.
    nodes = outline.nodes
    assert any(n.status for n in nodes)
    assert any(n.props.get("classification") for n in nodes)
    assert any(n.pinned for n in nodes) and any(n.used_at for n in nodes)
    assert any(n.superseded_by for n in nodes)
    assert all(n.description == "" and set(n.props) <= {"classification"} for n in nodes)
    assert any(n.description for n in whole.nodes)


def test_an_outline_of_the_past_is_the_past_outlined(store: GraphStore) -> None:
    """The as-of view answers it itself: handed on, it would be the present's."""
    seed(store)
    middle = store.read(lambda tx: tx.clock()) // 2

    def then(tx: ReadTx) -> tuple[Subgraph, Outline]:
        past = asof.view(tx, middle)
        return past.authored_graph(), past.authored_outline()

    whole, outline = store.read(then)
    now = store.read(lambda tx: tx.authored_outline())
    assert _keyed(outline) == _outlined(whole)
    assert _keyed(outline) != _keyed(now)


def test_the_gate_withholds_from_the_outline_what_it_withholds_from_the_graph(
    store: GraphStore,
) -> None:
    seed(store)
    gated = Memory(store).store  # granted nothing: the classified note is withheld

    def both(tx: ReadTx) -> tuple[Subgraph, Outline]:
        return tx.authored_graph(), tx.authored_outline()

    whole, outline = gated.read(both)
    everything = store.read(lambda tx: tx.authored_outline())
    assert _keyed(outline) == _outlined(whole)
    assert len(outline.nodes) < len(everything.nodes)
