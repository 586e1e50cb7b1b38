"""The conflict definitions infusion and the conflicts tool share (memory/contested.py)."""

from __future__ import annotations

from kenning_encounter.memory import contested
from kenning_encounter.store.records import EdgeRecord, NodeRecord


def _node(node_id: str, name: str, type_: str = "Hypothesis") -> NodeRecord:
    return NodeRecord(node_id, type_, name, "", 1, "2026-01-01T00:00:00Z")


NODES = {
    i: _node(i, n)
    for i, n in [("a", "alpha"), ("b", "beta"), ("c", "gamma"), ("d", "delta"), ("e", "eps")]
}


def _edge(source: str, type_: str, target: str) -> EdgeRecord:
    return EdgeRecord(source, target, type_, 1)


def test_only_challenges_touching_what_surfaced_and_load_bearing_first() -> None:
    edges = [
        _edge("a", "CHALLENGES", "b"),  # touches b, not the focus
        _edge("c", "CHALLENGES", "d"),  # touches nothing shown
        _edge("e", "CHALLENGES", "a"),  # touches the focus
        _edge("a", "SUPPORTS", "e"),  # no challenge
    ]
    found = contested.challenge_conflicts(
        edges, NODES, touching={"a", "b"}, focus={"e"}, revised={"a"}
    )
    assert [(c.source.id, c.target.id, c.kind, c.load_bearing) for c in found] == [
        ("e", "a", contested.CONTESTED_REVISION, True),
        ("a", "b", contested.CHALLENGES, False),
    ]


def test_the_kinds_are_the_ones_the_tools_teach() -> None:
    assert set(contested.KINDS) == {
        contested.CHALLENGES,
        contested.CONTESTED_REVISION,
        contested.SUPPORTED_AND_CHALLENGED,
        contested.COMPETING_ANSWERS,
        contested.LOST_SUPPORT,
    }
    assert "CHALLENGES" not in contested.LEAN_RELATIONS
    assert contested.lost_support({"x"}, ["x", "y", "z"]) == ["y", "z"]
