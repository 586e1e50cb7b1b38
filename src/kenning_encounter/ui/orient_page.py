"""The orient page: the panel the orient tool builds, read once per state of the memory.

The panel is the tool's own (``build_panel`` over the authored graph, hidden loci
left out, drift against the latest baseline the tool saved), read without saving
a baseline: the inspector never writes. A reading costs what orient costs, so it is
kept until the memory's clock moves; asking the page again is then a render only.
"""

from __future__ import annotations

import threading
from collections.abc import Callable
from dataclasses import dataclass
from typing import TYPE_CHECKING, Protocol

from kenning_encounter import abandon
from kenning_encounter.memory.service import Memory
from kenning_encounter.store.outline import Outline
from kenning_encounter.store.port import ReadTx

if TYPE_CHECKING:
    from kenning_encounter.analytics.baseline import BaselineStore
    from kenning_encounter.analytics.engine import Engine
    from kenning_encounter.analytics.panel import Panel
    from kenning_encounter.ui.pictures import Pictures

BUDGET_CHARS = 100_000  # the page shows every item top_k allows; the text is not sent
TOP_K = 10


class OrientSources(Protocol):
    """What the server's services lend the page: the tool's baselines and engine."""

    @property
    def baselines(self) -> BaselineStore: ...

    @property
    def engine(self) -> Engine | None: ...


@dataclass(frozen=True)
class OrientView:
    panel: Panel
    pictures: Pictures
    clock: int
    baseline: str | None  # the encounter drift is read against, when there is a baseline


def _graph(tx: ReadTx) -> tuple[Outline, int]:
    return tx.authored_outline(), tx.clock()


class OrientReadings:
    """The latest reading, by clock; one reading at a time."""

    def __init__(self, sources_of: Callable[[], OrientSources | None]) -> None:
        self._sources_of = sources_of
        self._kept: tuple[tuple[int, frozenset[str]], OrientView] | None = None
        self._lock = threading.Lock()

    def view(self, memory: Memory) -> OrientView:
        # Waited for as long as the page's browser is there (kenning_encounter.abandon).
        with abandon.turn(self._lock):
            hidden = memory.hidden_loci
            clock = memory.store.read(lambda tx: tx.clock())
            if self._kept is not None and self._kept[0] == (clock, hidden):
                return self._kept[1]
            with memory.whole_reading():  # the orient tool's turn too
                made = self._read(memory, hidden)
            self._kept = ((made.clock, hidden), made)
            return made

    def _read(self, memory: Memory, hidden: frozenset[str]) -> OrientView:
        # Imported on the first reading: numpy, scipy and igraph come with it.
        from kenning_encounter.analytics.orient import build_panel
        from kenning_encounter.ui.pictures import pictures

        whole, clock = memory.store.read(_graph)
        seen = whole.without_loci(hidden)
        sources = self._sources_of()
        baseline = sources.baselines.previous(None) if sources is not None else None
        panel = build_panel(
            seen.nodes,
            seen.relations,
            baseline=baseline,
            budget_chars=BUDGET_CHARS,
            top_k=TOP_K,
            engine=sources.engine if sources is not None else None,
        )
        if hidden and panel.drift is not None:
            # A baseline read over the whole memory may name a hidden locus's node.
            keep = {n.id for n in seen.nodes}
            drift = panel.drift
            update = {
                name: listing.model_copy(
                    update={"items": tuple(s for s in listing.items if s.node.id in keep)}
                )
                for name, listing in (
                    ("risers", drift.risers),
                    ("fallers", drift.fallers),
                    ("new", drift.new),
                )
            }
            panel = panel.model_copy(update={"drift": drift.model_copy(update=update)})
        return OrientView(
            panel, pictures(panel), clock, baseline.encounter if baseline is not None else None
        )
