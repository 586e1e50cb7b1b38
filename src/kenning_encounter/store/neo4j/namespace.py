"""Which memory a statement belongs to, when several share one Neo4j database.

A memory is known by its name (``Settings.memory``). Its nodes carry two marks:

- a label of their own, ``KenningMemory`` for the memory named ``default`` (the
  label every store had before names existed, so those stores keep it) and
  ``KenningMemory_<name>`` for any other: scans and read_cypher's scope use it;
- the property ``_memory``, the memory's name, on every node of ours, bookkeeping
  included: uniqueness constraints are composite over it (``(_memory, id)``), so
  two memories may both hold an Encounter ``E1`` and another application's
  ``:Encounter {id: 'E1'}`` (no ``_memory``) collides with neither.

The statements in ``queries.py`` are written for the label ``KenningMemory``.
``Namespace.statement`` makes them this memory's: it renames the label, and puts
``_memory: $memory`` into every node pattern that carries it, so a lookup by id
seeks the composite index and a created node is stamped with the name. The engine
does this for every statement it sends on a store's behalf, and supplies
``$memory``. Bookkeeping nodes carry no memory label (read_cypher must not see
them) and say ``_memory: $memory`` in their statements themselves.
"""

from __future__ import annotations

import re
from typing import Any, Final, LiteralString, cast

BASE_LABEL: Final = "KenningMemory"
DEFAULT_MEMORY: Final = "default"
MEMORY_PROPERTY: Final = "_memory"
# A label is an identifier: on Neo4j a memory's name must be one too.
NAME_PATTERN: Final = re.compile(r"[A-Za-z0-9_]{1,64}")
# Every memory label: the default one, and the named ones.
LABEL_PATTERN: Final = re.compile(rf"{BASE_LABEL}(?:_[A-Za-z0-9_]{{1,64}})?")

# A node pattern carrying the memory label: ``(`` variable? labels ``:KenningMemory``
# labels? and, when it has one, the opening of its property map.
_NODE: Final = re.compile(
    r"\((?P<head>\s*\w*(?:\s*:\s*\w+)*?)\s*:\s*KenningMemory\b"
    r"(?P<tail>(?:\s*:\s*\w+)*)\s*(?P<brace>\{\s*)?"
)
_BARE: Final = re.compile(r"\bKenningMemory\b")


def label_of(name: str) -> str:
    return BASE_LABEL if name == DEFAULT_MEMORY else f"{BASE_LABEL}_{name}"


def name_problem(name: str) -> str | None:
    """Why ``name`` cannot name a memory on Neo4j, or None."""
    if NAME_PATTERN.fullmatch(name):
        return None
    return (
        f"memory {name!r}: on Neo4j a memory's name becomes part of a label, so it may "
        "hold only letters, digits and '_' (1 to 64 of them), e.g. 'team_notes'"
    )


def is_memory_label(label: str) -> bool:
    """Whether a label marks the nodes of some memory (this one or another)."""
    return LABEL_PATTERN.fullmatch(label) is not None


class Namespace:
    """One memory's view of the shared statement text. Immutable; safe across threads."""

    __slots__ = ("_cache", "label", "name")

    def __init__(self, name: str = DEFAULT_MEMORY) -> None:
        problem = name_problem(name)
        if problem is not None:
            raise ValueError(problem)
        self.name = name
        self.label = label_of(name)
        self._cache: dict[str, LiteralString] = {}

    def __repr__(self) -> str:
        return f"Namespace({self.name!r})"

    def statement(self, text: LiteralString) -> LiteralString:
        """The statement as this memory's: its label, and ``_memory`` in its node patterns."""
        done = self._cache.get(text)
        if done is None:
            done = cast(LiteralString, _BARE.sub(self.label, _NODE.sub(self._node, text)))
            # The statements are a closed set, so the cache is bounded by their number.
            self._cache[text] = done
        return done

    def params(self, text: str, params: dict[str, Any] | None) -> dict[str, Any]:
        """The parameters, with ``$memory`` when the statement asks for it."""
        out = dict(params) if params else {}
        if "$memory" in text:
            out["memory"] = self.name
        return out

    def _node(self, match: re.Match[str]) -> str:
        # The label is written as the placeholder here and renamed by the second pass.
        opened = f"({match['head']}:KenningMemory{match['tail']} {{_memory: $memory"
        return opened + (", " if match["brace"] else "}")
