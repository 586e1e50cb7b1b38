"""What a node's id says, on every backend: its type is in its prefix (``obs_…`` is an
Observation), so a lookup goes straight to one type's table or label."""

from __future__ import annotations

from collections.abc import Sequence

from kenning_encounter.store.records import NodeRecord
from kenning_encounter.vocabulary import NODE_TYPES

PREFIX_TO_TYPE = {t.id_prefix: name for name, t in NODE_TYPES.items() if t.authored}


def type_of_id(node_id: str) -> str | None:
    return PREFIX_TO_TYPE.get(node_id.split("_", 1)[0]) if "_" in node_id else None


def group_by_type(node_ids: Sequence[str]) -> dict[str, list[str]]:
    """Ids by the type their prefix names; ids of no authored type are left out."""
    groups: dict[str, list[str]] = {}
    for node_id in node_ids:
        label = type_of_id(node_id)
        if label is not None:
            groups.setdefault(label, []).append(node_id)
    return groups


def source_key(kind: str, label: str, key: str) -> str:
    """The one key of a Component's source triple (kind, label, key)."""
    return "\x1f".join((kind, label, key))


def component_key(node: NodeRecord) -> str:
    return source_key(
        str(node.props.get("source_kind")),
        str(node.props.get("source_label")),
        str(node.props.get("source_key")),
    )
