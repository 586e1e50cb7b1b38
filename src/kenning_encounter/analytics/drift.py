"""Drift: the mass ranking now against the baseline of an earlier encounter.

- *new*: nodes whose oldest revision was recorded after the baseline's tick,
  most massive first.
- *risers*: nodes now in the top ranks (as many as the baseline kept) whose rank
  improved by a fifth or more, and by at least three places; a node below the
  baseline's kept ranks counts as having stood just below them.
- *fallers*: baseline nodes whose rank worsened by a quarter or more, and by at
  least three places, or that are gone (deleted); a revised node is followed to
  its head.

The absolute floor keeps the top ranks quiet when one newcomer pushes everyone
down a place or two.
"""

from __future__ import annotations

from collections.abc import Callable

import numpy as np

from kenning_encounter.analytics.baseline import Baseline, BaselineEntry
from kenning_encounter.analytics.engine import FloatArray, IntArray
from kenning_encounter.analytics.panel import DriftSection, Listing, NodeRef, Ranked, Shift
from kenning_encounter.analytics.projection import Projection

RISE_FACTOR = 0.8
FALL_FACTOR = 1.25
MIN_MOVE = 3


def mass_ranks(mass: FloatArray) -> IntArray:
    """Rank 1 is the most massive; ties go to the older node (lower position)."""
    order = np.lexsort((np.arange(mass.shape[0]), -mass))
    ranks = np.empty(mass.shape[0], dtype=np.int64)
    ranks[order] = np.arange(1, mass.shape[0] + 1, dtype=np.int64)
    return ranks


def take_baseline(
    projection: Projection,
    mass: FloatArray,
    *,
    encounter: str | None,
    tick: int,
    saved_at: str,
    keep: int,
) -> Baseline:
    order = np.lexsort((np.arange(mass.shape[0]), -mass))[:keep]
    # A classified node is kept out of every reading saved (memory/gates.py): a baseline
    # outlives its reader, and a later one not granted the class would list it as gone.
    entries = tuple(
        BaselineEntry(
            id=projection.nodes[i].id,
            name=projection.nodes[i].name,
            type=projection.nodes[i].type,
            rank=rank,
            score=float(mass[i]),
        )
        for rank, i in enumerate(order.tolist(), start=1)
        if not projection.nodes[i].props.get("classification")
    )
    return Baseline(
        encounter=encounter,
        saved_at=saved_at,
        tick=tick,
        node_count=projection.node_count,
        entries=entries,
    )


def compute_drift(
    projection: Projection,
    mass: FloatArray,
    baseline: Baseline | None,
    ref: Callable[[int], NodeRef],
    k: int,
) -> DriftSection:
    if baseline is None:
        return DriftSection(
            baseline_encounter=None,
            baseline_saved_at=None,
            note="no reading from an earlier encounter to compare with yet",
            risers=Listing(total=0),
            fallers=Listing(total=0),
            new=Listing(total=0),
        )
    ranks = mass_ranks(mass)
    kept = len(baseline.entries)
    before: dict[int, int] = {}  # position now -> best rank at the baseline
    gone: list[BaselineEntry] = []
    for entry in baseline.entries:
        pos = projection.position(entry.id)
        if pos is None:
            gone.append(entry)
        elif pos not in before or entry.rank < before[pos]:
            before[pos] = entry.rank

    is_new = projection.first_tick > baseline.tick
    is_new[list(before)] = False
    new = np.flatnonzero(is_new)
    new = new[np.lexsort((new, -mass[new]))]

    top_now = np.flatnonzero((ranks <= kept) & ~is_new)
    rising: list[tuple[int, int, int]] = []
    for pos in top_now.tolist():
        was = before.get(pos, kept + 1)
        now = int(ranks[pos])
        if now < was * RISE_FACTOR and was - now >= MIN_MOVE:
            rising.append((was - now, now, pos))
    rising.sort(key=lambda r: (-r[0], r[1]))

    falling: list[tuple[float, int, Shift]] = []
    for pos, was in before.items():
        now = int(ranks[pos])
        if now > was * FALL_FACTOR and now - was >= MIN_MOVE:
            falling.append((now - was, was, Shift(node=ref(pos), before=was, after=now)))
    for entry in gone:
        node = NodeRef(id=entry.id, name=entry.name, type=entry.type)
        falling.append((float("inf"), entry.rank, Shift(node=node, before=entry.rank, after=None)))
    falling.sort(key=lambda f: (-f[0], f[1]))

    return DriftSection(
        baseline_encounter=baseline.encounter,
        baseline_saved_at=baseline.saved_at,
        note=(
            f"against the reading of encounter {baseline.encounter!r} at tick {baseline.tick} "
            f"({baseline.node_count} nodes then, {projection.node_count} now"
            + (f"; ranks below #{kept} were not kept)" if baseline.node_count > kept else ")")
        ),
        risers=Listing(
            total=len(rising),
            items=tuple(
                Shift(node=ref(pos), before=before.get(pos), after=now)
                for _, now, pos in rising[:k]
            ),
        ),
        fallers=Listing(total=len(falling), items=tuple(f[2] for f in falling[:k])),
        new=Listing(
            total=int(new.shape[0]),
            items=tuple(Ranked(node=ref(i), score=float(mass[i])) for i in new[:k].tolist()),
        ),
    )
