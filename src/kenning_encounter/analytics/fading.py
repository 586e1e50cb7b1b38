"""Orient's fading section: standing over the graph the panel reads (memory/activation.py).

Mass says what the memory leans on; fading says which of those the work stopped using.
A massive node gone warm or cold is the one to confirm, revise or let go, before it
freezes into the operator's review queue."""

from __future__ import annotations

import heapq
from collections.abc import Callable

from kenning_encounter.analytics.engine import FloatArray
from kenning_encounter.analytics.panel import Faded, FadingSection, Listing, NodeRef
from kenning_encounter.analytics.projection import Projection
from kenning_encounter.memory.activation import TIERS, Activation, Present

DEFINITION = (
    "standing from each node's latest use (created, linked, consulted, confirmed), "
    "aged in the memory's working time"
)


def fading_section(
    projection: Projection,
    mass: FloatArray,
    standing: Activation,
    now: Present,
    ref: Callable[[int], NodeRef],
    k: int,
) -> FadingSection:
    tiers = standing.tiers(projection.nodes, now)
    counts = {t: 0 for t in TIERS}
    for t in tiers:
        counts[t] += 1
    faded = [i for i, t in enumerate(tiers) if t != "hot"]
    order = heapq.nsmallest(k, faded, key=lambda i: (-float(mass[i]), i))
    items = tuple(
        Faded(
            node=ref(i),
            tier=tiers[i],
            idle_days=round(
                standing.age_in_half_lives(projection.nodes[i], now) * standing.half_life_days, 1
            ),
        )
        for i in order
    )
    return FadingSection(
        definition=DEFINITION,
        half_life_days=standing.half_life_days,
        tiers=counts,
        massive_fading=Listing(total=len(faded), items=items),
    )
