"""The query text each aggregate needs, one instance per backend (its queries.py).

Labels and relationship types are slots (``{label}``) the backend's ``render`` fills
from the closed vocabulary; every value is a parameter. Both backends' statements take
the same parameters and return the same columns, so the operations never branch on
which engine runs them.
"""

from __future__ import annotations

from dataclasses import dataclass, fields
from types import ModuleType
from typing import TYPE_CHECKING, LiteralString, TypeVar

if TYPE_CHECKING:
    from _typeshed import DataclassInstance

T = TypeVar("T", bound="DataclassInstance")


def text_of(kind: type[T], queries: ModuleType) -> T:
    """An aggregate's text from a backend's queries module: each field is the module's
    constant of the same name in capitals (``enc_get`` is ``ENC_GET``). A missing one
    fails at import, naming it."""
    names = [f.name for f in fields(kind)]
    missing = [n.upper() for n in names if not hasattr(queries, n.upper())]
    if missing:
        raise ImportError(f"{queries.__name__} lacks {', '.join(missing)} for {kind.__name__}")
    return kind(**{n: getattr(queries, n.upper()) for n in names})


@dataclass(frozen=True, slots=True)
class SpineText:
    meta_get: LiteralString  # $key -> ival
    meta_get_many: LiteralString  # $keys -> key, ival (keys held)
    locus_get: LiteralString  # $id -> id
    locus_create: LiteralString  # $id $at $tick
    loci: LiteralString  # -> id, oldest first
    # Opening an encounter: node and OPENED edge, in one statement or several.
    enc_create_steps: tuple[LiteralString, ...]  # $name $locus $purpose $tick $at
    enc_next: LiteralString  # $previous $name $tick
    enc_anchor: LiteralString  # $anchor $name $tick
    enc_get: LiteralString  # $name -> properties
    enc_get_many: LiteralString  # $names -> properties
    enc_open_of: LiteralString  # $locus -> properties of its open ones (any order)
    enc_last_of: LiteralString  # $locus -> properties
    enc_latest: LiteralString  # -> properties
    enc_list: LiteralString  # $unsealed $exclude $offset $limit -> properties
    enc_spans: LiteralString  # $since -> opened_at, last activity, sealed_at (either >= $since)
    enc_spans_hiding: LiteralString  # enc_spans, leaving out the encounters of $loci
    enc_seal: LiteralString  # $name $tick $at $summary
    enc_dissolve: LiteralString  # $name $at
    enc_touch: LiteralString  # $name $at
    enc_tombstones: LiteralString  # $name $count
    enc_tombstones_marked: LiteralString  # $name $marks $labels: store/uses.py
    # {label}; $ids -> names of the encounters that recorded, confirmed, consulted or
    # pinned any of these nodes
    enc_touching: LiteralString
    enc_withdraw: LiteralString  # $names $text: purpose and (when sealed) summary
    erasures_count: LiteralString  # one more erasure committed (Meta 'erasures')
    spine: LiteralString  # -> from, relation, to
    enc_recorded: LiteralString  # $name -> node id
    enc_members: LiteralString  # $names -> encounter, node id (creation order)
    enc_nodes: LiteralString  # $names $limit -> node id, newest first (tick, then ord)


@dataclass(frozen=True, slots=True)
class NodeText:
    nodes_get: LiteralString  # {label}; $ids -> a node row
    nodes_all: LiteralString  # {label} -> node rows
    # The newest first, by creation order (tick, then place in its write): ids.
    heads_by_status: LiteralString  # {label}; $statuses $limit -> node id
    recent_heads: LiteralString  # {label}; $limit -> node id
    predecessors: LiteralString  # {label}; $id -> revised id, revision_why
    predecessors_many: LiteralString  # {label}; $ids -> id, revised id
    # A chain's walks ({hops}: their bound, a number). Each row: a node row, then the id
    # at the edge's other end, its tick, encounter and revision_why; in no order.
    chain_older: LiteralString  # {label} {hops}; $id -> the versions it revised
    chain_newer: LiteralString  # {label} {hops}; $id -> the versions that revised it
    chain_ends: LiteralString  # {label} {hops}; $id -> older count, newer count, head id
    chain_steps: LiteralString  # {label}; $id -> versions it revised, versions revising it
    nodes_set_status: LiteralString  # {label}; $rows of {id, status}
    nodes_delete: LiteralString  # {label}; $ids
    name_get: LiteralString  # $name -> head id
    names_get: LiteralString  # $names -> name, head id
    name_set: LiteralString  # $name $id: set or move (one key)
    names_drop: LiteralString  # $rows of {name, id}: each name's key, if it is the id's
    source_get: LiteralString  # $key -> id
    source_set: LiteralString  # $key $id: set or move (one key)
    source_drop: LiteralString  # $key $id


@dataclass(frozen=True, slots=True)
class RelationText:
    edge_create_supersedes: LiteralString  # {source} {target}; $s $t $tick $encounter $at $why
    # {source} {target} {rel}; $rows of {s, t, encounter}, $tick $at (and on Neo4j $touch:
    # the encounter whose last_activity_at it sets, or null)
    edges_create: LiteralString
    edge_count: LiteralString  # {source} {target} {rel}; $s $t -> count
    edge_delete: LiteralString  # {source} {target} {rel}; $s $t
    # Edge rows: source id, target id, type, tick, encounter, revision_why.
    edges_out_many: LiteralString  # {label}; $ids $rels
    edges_in_many: LiteralString  # {label}; $ids $rels
    edges_all: LiteralString  # $rels: the authored types (or typed by its pattern)
    # $encounters $rels: the authored relations those encounters wrote (a hiding reader's
    # outline leaves them out, memory/gates.py ``HidingReads``)
    edges_written_in: LiteralString


@dataclass(frozen=True, slots=True)
class LoadText:
    """A dump's pages and an import's writes (store/ops/load.py)."""

    count_loci: LiteralString  # -> count
    count_encounters: LiteralString  # -> count
    count_spine: LiteralString  # -> count of OPENED, NEXT_ENCOUNTER, INSTANTIATED_AFTER
    count_nodes: LiteralString  # {label} -> count
    count_relations: LiteralString  # {label}; $rels -> count of those out of the type's nodes
    count_persons: LiteralString  # -> count
    count_claims: LiteralString  # -> count of REFERENT_CLAIM edges
    count_confirmations: LiteralString  # -> count of CONFIRMED edges
    count_consultations: LiteralString  # -> count of CONSULTED edges
    count_pins: LiteralString  # -> count of PINNED edges
    count_past: LiteralString  # $kind -> count of the record of the past's rows of a kind
    dump_persons: LiteralString  # $after $limit -> id, name, key, tick, created_at (by id)
    # $after $limit -> id, tick, created_at, director's id, DIRECTED_BY tick (by id)
    dump_loci: LiteralString
    dump_encounters: LiteralString  # $after $limit -> properties (by name)
    dump_spine_into: LiteralString  # $names -> source, type, target, tick (OPENED, NEXT in)
    dump_spine_anchor: LiteralString  # $names -> source, type, target, tick (ANCHOR out)
    # {label}; $tick $ord $id $first $limit -> a node row, then the RECORDED tick
    dump_nodes: LiteralString
    dump_node_ids: LiteralString  # {label}; $after $limit -> id (by id)
    # {label}; $ids $rels -> source, target, type, tick, encounter, revision_why, created_at
    dump_relations: LiteralString
    # {label}; $ids -> source, target, resolution, why, tick, encounter, created_at
    dump_claims: LiteralString
    dump_confirmations: LiteralString  # {label}; $ids -> node, encounter, tick, created_at, why
    dump_consultations: LiteralString  # {label}; $ids -> node, encounter, tick, created_at
    # {label}; $ids -> node, encounter, tick, created_at, why, state
    dump_pins: LiteralString
    # $kind $after $limit -> key, node, source, target, rel, tick, ended, seq, at,
    # moved_from, moved_to, encounter, why, body (by key)
    dump_past: LiteralString
    load_persons: LiteralString  # $rows of {id, name, key, tick, created_at}
    load_loci: LiteralString  # $rows of {id, tick, created_at}
    load_directed: LiteralString  # $rows of {locus, person, tick}
    load_encounters: LiteralString  # $rows of an encounter's properties
    # $rows of {id, marks, labels}: an encounter's tombstones by class (store/uses.py)
    load_tombstones_marked: LiteralString
    load_opened: LiteralString  # $rows of {source, target, tick}
    load_next: LiteralString  # $rows of {source, target, tick}
    load_anchor: LiteralString  # $rows of {source, target, tick}
    load_edges: LiteralString  # {source} {target} {rel}; $rows of {s, t, tick, encounter, at}
    load_supersedes: LiteralString  # {source} {target}; $rows of ... and why
    # {label}; $rows of {s, t, resolution, why, tick, encounter, at}
    load_claims: LiteralString
    load_confirmations: LiteralString  # {label}; $rows of {node, encounter, tick, at, why}
    load_consultations: LiteralString  # {label}; $rows of {node, encounter, tick, at}
    load_pins: LiteralString  # {label}; $rows of {node, encounter, tick, at, why, state}
    load_past: LiteralString  # $rows of a row's every column (dump_past's, and kind, name)
    marker_get: LiteralString  # -> digest, done
    marker_put: LiteralString  # $digest $done
    marker_drop: LiteralString
    clock_set: LiteralString  # $value
    clear_nodes: LiteralString  # {label}; $limit -> the ids deleted
    clear_registries: tuple[LiteralString, ...]  # the registries and the record of the past
