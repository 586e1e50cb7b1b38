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
    enc_seal: LiteralString  # $name $tick $at $summary
    enc_dissolve: LiteralString  # $name $at
    enc_touch: LiteralString  # $name $at
    enc_tombstones: LiteralString  # $name $count
    spine: LiteralString  # -> from, relation, to
    enc_recorded: LiteralString  # $name -> node id
    enc_members: LiteralString  # $names -> encounter, node id (creation order)
    enc_nodes: LiteralString  # $names $limit -> node id, newest first


@dataclass(frozen=True, slots=True)
class NodeText:
    nodes_get: LiteralString  # {label}; $ids -> a node row
    nodes_all: LiteralString  # {label} -> node rows
    heads_by_status: LiteralString  # {label}; $statuses $limit -> node rows
    recent_heads: LiteralString  # {label}; $limit -> node rows
    predecessors: LiteralString  # {label}; $id -> revised id, revision_why
    node_set_status: LiteralString  # {label}; $id $status
    node_delete: LiteralString  # {label}; $id
    name_get: LiteralString  # $name -> head id
    names_get: LiteralString  # $names -> name, head id
    name_put: LiteralString  # $rows of {name, id}: set or move
    name_drop: LiteralString  # $name $id
    source_get: LiteralString  # $key -> id
    source_put: LiteralString  # $rows of {key, id}: set or move
    source_drop: LiteralString  # $key $id


@dataclass(frozen=True, slots=True)
class RelationText:
    edge_create: LiteralString  # {source} {target} {rel}; $s $t $tick $encounter $at
    edge_create_supersedes: LiteralString  # {source} {target}; ... and $why
    edge_count: LiteralString  # {source} {target} {rel}; $s $t -> count
    edge_delete: LiteralString  # {source} {target} {rel}; $s $t
    # Edge rows: source id, target id, type, tick, encounter, revision_why.
    edges_out_many: LiteralString  # {label}; $ids $rels
    edges_in_many: LiteralString  # {label}; $ids $rels
    edges_all: LiteralString  # $rels: the authored types (or typed by its pattern)


@dataclass(frozen=True, slots=True)
class LoadText:
    """A dump's pages and an import's writes (store/ops/load.py)."""

    count_loci: LiteralString  # -> count
    count_encounters: LiteralString  # -> count
    count_spine: LiteralString  # -> count of OPENED, NEXT_ENCOUNTER, INSTANTIATED_AFTER
    count_nodes: LiteralString  # {label} -> count
    count_relations: LiteralString  # {label}; $rels -> count of those out of the type's nodes
    dump_loci: LiteralString  # $after $limit -> id, tick, created_at (by id)
    dump_encounters: LiteralString  # $after $limit -> properties (by name)
    dump_spine_into: LiteralString  # $names -> source, type, target, tick (OPENED, NEXT in)
    dump_spine_anchor: LiteralString  # $names -> source, type, target, tick (ANCHOR out)
    # {label}; $tick $ord $id $first $limit -> a node row, then the RECORDED tick
    dump_nodes: LiteralString
    dump_node_ids: LiteralString  # {label}; $after $limit -> id (by id)
    # {label}; $ids $rels -> source, target, type, tick, encounter, revision_why, created_at
    dump_relations: LiteralString
    load_loci: LiteralString  # $rows of {id, tick, created_at}
    load_encounters: LiteralString  # $rows of an encounter's properties
    load_opened: LiteralString  # $rows of {source, target, tick}
    load_next: LiteralString  # $rows of {source, target, tick}
    load_anchor: LiteralString  # $rows of {source, target, tick}
    load_edges: LiteralString  # {source} {target} {rel}; $rows of {s, t, tick, encounter, at}
    load_supersedes: LiteralString  # {source} {target}; $rows of ... and why
    marker_get: LiteralString  # -> digest, done
    marker_put: LiteralString  # $digest $done
    marker_drop: LiteralString
    clock_set: LiteralString  # $value
    clear_nodes: LiteralString  # {label}; $limit -> the ids deleted
    clear_registries: tuple[LiteralString, ...]
