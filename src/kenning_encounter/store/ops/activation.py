"""Relevance over time (#16, memory/activation.py): the process edges that say an
encounter consulted a node or pinned it, each kept with its mirror on the node
(``used_at``, ``pinned``) in the same statement. Written once for both backends."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any, Final, LiteralString

from kenning_encounter.store.ids import group_by_type
from kenning_encounter.store.ops.graph import NodeOps
from kenning_encounter.store.port import LociUses, UseRecord
from kenning_encounter.store.uses import used_labels
from kenning_encounter.vocabulary import AUTHORED_NODE_TYPES, AUTHORED_RELATION_TYPES

# The relations a link statement renews both ends of: a revision renews neither.
LINKS: Final = tuple(r for r in AUTHORED_RELATION_TYPES if r != "SUPERSEDES")
PROCESS_USES: Final = ("CONFIRMED", "CONSULTED", "PINNED")


def _text(value: Any) -> str | None:
    return None if value is None else str(value)


# Stored in ``pinned`` when no pin stands: one string type for the column on every engine.
UNPINNED = ""


@dataclass(frozen=True, slots=True)
class ActivationText:
    # {label}; $encounter $ids $tick $at: one CONSULTED edge per encounter and node
    # (its tick and time the latest consultation), and the node's used_at.
    consult: LiteralString
    # {label}; $encounter $ids $tick $at $why $state $pinned: a PINNED edge, the mirror.
    pin: LiteralString
    # {label}; $rows [{id, marks}] $tick: each node's uses by links to classified nodes
    # (store/uses.py), written beside the link statement that moved its used_at.
    mark_uses: LiteralString
    # {label}; $ids $links -> node, enc, locus, tick, at, kind ('link'), state (null),
    # other (the classification at the other end): each relation of ``$links`` at either
    # end of the nodes of that type among ``$ids``, with its encounter and session.
    uses_linked: LiteralString
    # {label}; $ids $process -> the same columns, kind the edge's type and state a pin's:
    # each edge of ``$process`` from an encounter into the nodes.
    uses_process: LiteralString
    # Whether one statement may join the parts of several types (UNION ALL).
    uses_union: bool
    # $loci -> each of their encounters' opening, its seal or dissolution (null while
    # open), the ids of the nodes it pinned or unpinned, and its name.
    loci_uses: LiteralString


class ActivationOps(NodeOps):
    _activation: ActivationText

    def consult_nodes(self, encounter: str, node_ids: Sequence[str]) -> None:
        """``encounter`` read these nodes deliberately: their standing is renewed."""
        self._require_writable()
        for label, ids in group_by_type(node_ids).items():
            for i in ids:
                self._on_changed(i)
            params = {"encounter": encounter, "ids": ids, "tick": self.tick, "at": self.now}
            self.rows(self.render(self._activation.consult, label=label), params)

    def pin_nodes(
        self, encounter: str, node_ids: Sequence[str], *, pinned: bool, why: str = ""
    ) -> None:
        """Pin (or unpin) nodes from ``encounter``; either is a use of them."""
        self._require_writable()
        for label, ids in group_by_type(node_ids).items():
            for i in ids:
                self._on_changed(i)
            params = {
                "encounter": encounter,
                "ids": ids,
                "tick": self.tick,
                "at": self.now,
                "why": why,
                "state": "pinned" if pinned else "unpinned",
                "pinned": encounter if pinned else UNPINNED,
            }
            self.rows(self.render(self._activation.pin, label=label), params)

    def mark_uses(self, marks: Mapping[str, str]) -> None:
        """Each node's ``used_marks`` as given: only a write that linked a classified
        node sends this, so a memory without one never does."""
        self._require_writable()
        for label, ids in group_by_type(list(marks)).items():
            for i in ids:
                self._on_changed(i)
            rows = [{"id": i, "marks": marks[i], "labels": used_labels(marks[i])} for i in ids]
            self.rows(
                self.render(self._activation.mark_uses, label=label),
                {"rows": rows, "tick": self.tick},
            )

    # --- reads -----------------------------------------------------------------------
    def loci_uses(self, loci: Sequence[str]) -> LociUses:
        spans: list[tuple[str, str | None]] = []
        pinned: set[str] = set()
        names: set[str] = set()
        for opened, closed, ids, name in self.rows(
            self._activation.loci_uses, {"loci": list(loci)}
        ):
            spans.append((str(opened), _text(closed)))
            pinned.update(str(i) for i in ids or () if i is not None)
            names.add(str(name))
        return LociUses(spans, frozenset(pinned), frozenset(names))

    def node_uses(self, node_ids: Sequence[str]) -> list[UseRecord]:
        """Every use of these nodes their edges show (port.UseReads): for each type, the
        links and the encounters' own edges; one statement in all where the engine joins
        them (``uses_union``), else two for each type among the ids."""
        text = self._activation
        ids = list(dict.fromkeys(node_ids))
        if not ids:
            return []
        # Joined, every type is asked (each part finds only its own ids): one text, planned
        # once, where a text for each set of types met was planned again for each.
        labels = AUTHORED_NODE_TYPES if text.uses_union else tuple(group_by_type(ids))
        parts: list[LiteralString] = [
            self.render(template, label=label)
            for label in labels
            for template in (text.uses_linked, text.uses_process)
        ]
        statements: list[LiteralString] = parts
        if text.uses_union and parts:
            statements = [" UNION ALL ".join(parts)]
        params = {"ids": ids, "links": list(LINKS), "process": list(PROCESS_USES)}
        return [
            UseRecord(
                str(node),
                str(kind),
                str(enc),
                str(locus),
                int(tick),
                _text(at),
                state=_text(state),
                other=_text(other) or None,
            )
            for statement in statements
            for node, enc, locus, tick, at, kind, state, other in self.rows(statement, params)
        ]
