"""``Activation.tiers``: a tier worked out once per moment of last use is each node's own.

Orient's fading section and the review queue ask the tier of every node; many share a
moment of last use, so ``tiers`` works each moment out once. It must answer what
``tier`` answers node by node, whatever the pins, uses and idle stretches.
"""

from __future__ import annotations

from datetime import UTC, datetime, timedelta

from hypothesis import given, settings
from hypothesis import strategies as st

from kenning_encounter.memory.activation import Activation, Present
from kenning_encounter.store.records import NodeRecord

T0 = datetime(2026, 1, 5, 9, 0, tzinfo=UTC)
DAY_S = 86_400.0


def _stamp(day: float) -> str:
    return (T0 + timedelta(days=day)).isoformat(timespec="milliseconds").replace("+00:00", "Z")


# A few moments, so nodes share them (the case tiers() is for), over a year.
days = st.sampled_from([0.0, 0.5, 3.0, 20.0, 45.0, 100.0, 200.0, 364.0])
nodes = st.lists(
    st.builds(
        lambda i, made, used, pinned: NodeRecord(
            f"n{i}",
            "Note",
            f"note {i}",
            "",
            i,
            _stamp(made),
            used_at=None if used is None else _stamp(used),
            pinned="E1" if pinned else None,
        ),
        st.integers(0, 10_000),
        days,
        st.none() | days,
        st.booleans(),
    ),
    max_size=60,
)
idle = st.lists(st.tuples(st.floats(0, 300), st.floats(0, 60)), max_size=4)


@settings(max_examples=200, deadline=None)
@given(nodes=nodes, idle=idle, half_life=st.sampled_from([7.0, 30.0, 90.0]))
def test_tiers_is_tier_of_each_node(
    nodes: list[NodeRecord], idle: list[tuple[float, float]], half_life: float
) -> None:
    policy = Activation(half_life)
    starts, lengths, before, total = [], [], [], 0.0
    at = T0.timestamp()
    for start, length in sorted(idle):  # disjoint idle stretches, in order
        begin = max(at + start * DAY_S, starts[-1] + lengths[-1] if starts else at)
        starts.append(begin)
        lengths.append(length * DAY_S)
        before.append(total)
        total += length * DAY_S
    now = Present(T0 + timedelta(days=400), tuple(starts), tuple(lengths), tuple(before))
    assert policy.tiers(nodes, now) == [policy.tier(n, now) for n in nodes]
