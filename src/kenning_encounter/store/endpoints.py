"""The endpoint rules, held by the store itself on every backend.

The services refuse a relation the vocabulary forbids before anything is written;
this is the same rule again at the last door, so a service with a bug cannot store
what the rules forbid. The embedded schema would refuse it too, but in the engine's
words; Neo4j would store it. Both backends call ``check_relation`` before they
write an authored edge, so the refusal reads the same on either.
"""

from __future__ import annotations

from kenning_encounter.errors import (
    EndpointRule,
    ProcessTypeForbidden,
    SupersessionRule,
    UnknownType,
)
from kenning_encounter.vocabulary import AUTHORED_RELATION_TYPES, RELATION_TYPES


def check_relation(rel_type: str, source: str, target: str, field: str = "relation") -> None:
    """Refuse an authored relation ``source -rel_type-> target`` (node types) the rules forbid.

    ``field`` is the request path the errors name (``relations[2]`` in a service;
    ``relation`` when a store is called directly).
    """
    spec = RELATION_TYPES.get(rel_type)
    if spec is None:
        raise UnknownType(f"{field}.type", rel_type, AUTHORED_RELATION_TYPES)
    if not spec.authored:
        raise ProcessTypeForbidden(f"{field}.type", rel_type)
    # Two Components are never linked directly: the source is the end named.
    if source not in spec.sources or (not spec.same_type and source == target == "Component"):
        raise EndpointRule(f"{field}.source", rel_type, "source", source, spec.sources)
    if spec.same_type and source != target:
        raise SupersessionRule(
            f"{field}.target",
            f"a {source} cannot supersede a {target}; revisions keep their type",
        )
    if not spec.allows(source, target):
        allowed = [t for t in spec.targets if spec.allows(source, t)]
        raise EndpointRule(f"{field}.target", rel_type, "target", target, allowed)
