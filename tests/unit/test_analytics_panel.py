"""The orient panel: what each section shows, the budget, the empty memory, and
concurrent calls."""

from __future__ import annotations

import json
import threading
from dataclasses import replace

import numpy as np
import pytest

from kenning_encounter.analytics.orient import GUIDE_EMPTY, GUIDE_NO_EDGES, build_panel
from kenning_encounter.analytics.panel import (
    SECTION_ORDER,
    Leaning,
    Listing,
    Panel,
    Ranked,
    Waiting,
)
from kenning_encounter.analytics.render import sent_chars
from kenning_encounter.errors import InvalidInput
from kenning_encounter.store.records import EdgeRecord, NodeRecord

STATUSES = {
    "Question": ("open", "resolved", "retired"),
    "Hypothesis": ("untested", "supported", "challenged", "falsified"),
}


def node(
    node_id: str,
    kind: str,
    tick: int,
    status: str | None = None,
    *,
    superseded_by: str | None = None,
) -> NodeRecord:
    return NodeRecord(
        id=node_id,
        type=kind,
        name=f"{kind.lower()} {node_id}",
        description="",
        tick=tick,
        created_at="2025-01-01T00:00:00+00:00",
        status=status,
        encounter="enc-1",
        superseded_by=superseded_by,
    )


def random_memory(n: int, seed: int) -> tuple[list[NodeRecord], list[EdgeRecord]]:
    """Random types, statuses and relations; long names to strain the budget."""
    rng = np.random.default_rng(seed)
    kinds = ("Observation", "Concept", "Question", "Hypothesis", "Note", "Component")
    nodes: list[NodeRecord] = []
    for i in range(n):
        kind = kinds[int(rng.integers(len(kinds)))]
        options = STATUSES.get(kind)
        status = options[int(rng.integers(len(options)))] if options else None
        nodes.append(
            NodeRecord(
                id=f"x{i:05d}",
                type=kind,
                name=f"{kind} {i} " + "with a rather long descriptive name " * 3,
                description="",
                tick=i + 1,
                created_at="2025-01-01T00:00:00+00:00",
                status=status,
                encounter=f"enc-{i // 100}",
            )
        )
    relations = ("GROUNDS", "INFORMS", "ABOUT", "RAISES", "SUPPORTS")
    edges = [
        EdgeRecord(f"x{a:05d}", f"x{b:05d}", relations[int(r)], n + j + 1)
        for j, (a, b, r) in enumerate(rng.integers(0, [n, n, len(relations)], size=(3 * n, 3)))
        if a != b
    ]
    return nodes, edges


def small_memory() -> tuple[list[NodeRecord], list[EdgeRecord]]:
    """An open question and hypothesis with their evidence, and far from them a
    heavily grounded concept nobody's open work touches."""
    nodes = [
        node("hub", "Concept", 1),
        *(node(f"o{i}", "Observation", 2 + i) for i in range(8)),
        node("q_open", "Question", 20, "open"),
        node("q_done", "Question", 21, "resolved"),
        node("h_new", "Hypothesis", 22, "untested"),
        node("h_hit", "Hypothesis", 23, "challenged"),
        node("h_ok", "Hypothesis", 24, "supported"),
        node("lean", "Observation", 25),
        node("bare", "Concept", 26),
        node("old_c", "Concept", 27, superseded_by="new_c"),
        node("new_c", "Concept", 28),
        node("o_old", "Observation", 29),
    ]
    edges = [
        *(EdgeRecord(f"o{i}", "hub", "GROUNDS", 40 + i) for i in range(8)),
        EdgeRecord("lean", "q_open", "RAISES", 50),
        EdgeRecord("lean", "h_new", "SUPPORTS", 51),
        EdgeRecord("lean", "h_hit", "CHALLENGES", 52),
        EdgeRecord("h_ok", "q_done", "RESOLVES", 53),
        EdgeRecord("new_c", "old_c", "SUPERSEDES", 54),
        EdgeRecord("o_old", "old_c", "GROUNDS", 55),  # grounds the head through its revision
        EdgeRecord("h_new", "bare", "ABOUT", 56),
    ]
    return nodes, edges


def ids(listing: Listing[Ranked] | Listing[Leaning] | Listing[Waiting]) -> list[str]:
    return [item.node.id for item in listing.items]


def test_an_empty_memory_gets_a_guide_not_an_error() -> None:
    panel = build_panel([], [])
    assert panel.guide == GUIDE_EMPTY
    assert all(getattr(panel, name) is None for name in SECTION_ORDER)
    assert "nothing recorded yet" in panel.text
    assert "advance_encounter" in panel.text
    json.dumps(panel.model_dump(mode="json"))


def test_nodes_without_relations_are_read_and_say_so() -> None:
    nodes = [node("a", "Concept", 1), node("q", "Question", 2, "open")]
    panel = build_panel(nodes, [])
    assert panel.guide == GUIDE_NO_EDGES
    assert panel.components is not None
    assert panel.components.isolated.total == 2
    assert panel.frontier is not None
    assert ids(panel.frontier.open_questions) == ["q"]


def test_frontier_view_lists_what_is_still_open() -> None:
    panel = build_panel(*small_memory())
    assert panel.frontier is not None
    assert ids(panel.frontier.open_questions) == ["q_open"]
    assert ids(panel.frontier.live_hypotheses) == ["h_new", "h_hit"]
    # new_c is grounded through the revision it replaced; hub is grounded directly.
    assert ids(panel.frontier.ungrounded_concepts) == ["bare"]
    assert panel.summary.frontier_seeds == 3
    assert panel.summary.folded == 1


def test_mass_and_frontier_mass_read_different_things() -> None:
    panel = build_panel(*small_memory())
    assert panel.mass is not None and panel.frontier_mass is not None
    assert ids(panel.mass.top)[0] == "hub"
    leaned = ids(panel.frontier_mass.top)
    assert leaned[0] == "lean"
    assert "hub" not in leaned  # nothing open reaches it
    assert not {"q_open", "h_new", "h_hit"} & set(leaned)  # the seeds themselves are left out


def test_divergence_and_quiet_point_past_mass() -> None:
    panel = build_panel(*small_memory())
    assert panel.divergence is not None and panel.quiet is not None
    assert "hub" in ids(panel.divergence.accumulated_only)
    assert "lean" in ids(panel.divergence.leaned_on)
    quiet = panel.quiet.nodes.items
    assert quiet[0].node.id == "lean"
    assert quiet[0].frontier_links == 3
    assert quiet[0].mass_pct < 0.5


def test_a_name_cannot_pass_for_the_type_and_id_shown_after_it() -> None:
    """A name is shown between guillemets: one that spells out another node's type and
    id ("[Concept hub]") or the "; " between a community's members stays one name."""
    nodes, edges = small_memory()
    forged = "hub [Concept hub] degree 9, clustering 1.00; «concept q_open"
    nodes = [replace(n, name=forged) if n.id == "hub" else n for n in nodes]
    text = build_panel(nodes, edges).text
    assert "«hub [Concept hub] degree 9, clustering 1.00; ‹concept q_open» [Concept hub]" in text
    for line in text.splitlines():
        assert line.count("«") == line.count("»"), line


def test_sections_name_their_engines_and_nodes_show_name_type_and_id() -> None:
    panel = build_panel(*small_memory())
    assert panel.summary.engines["mass"] == "scipy"
    assert panel.summary.engines["frontier_mass"] == "scipy"
    assert panel.summary.engines["communities"] == "igraph"
    assert "«concept hub» [Concept hub]" in panel.text
    assert "«question q_open» [Question q_open open]" in panel.text
    assert "engines: scipy for frontier_mass, mass, igraph for the rest" in panel.text


def test_without_open_work_the_frontier_sections_stay_and_explain() -> None:
    nodes = [node("a", "Concept", 1), node("b", "Observation", 2)]
    panel = build_panel(nodes, [EdgeRecord("b", "a", "GROUNDS", 3)])
    assert panel.frontier_mass is not None and panel.divergence is not None
    assert panel.frontier_mass.top.total == 0
    assert "no open questions or live hypotheses" in panel.text
    assert "DIVERGENCE" in panel.text and "QUIET" in panel.text


@pytest.mark.parametrize("budget", [500, 900, 2_000, 4_000, 8_000])
def test_the_budget_is_never_exceeded(budget: int) -> None:
    nodes, edges = random_memory(2_500, seed=1)
    panel = build_panel(nodes, edges, budget_chars=budget, top_k=50)
    assert len(panel.text) <= budget
    assert sent_chars(panel) <= budget  # the JSON a tool sends, too
    if budget >= 8_000:
        assert panel.omitted == ()
        assert panel.frontier is not None and panel.divergence is not None
        assert panel.quiet is not None and panel.frontier_mass is not None


def test_a_tight_budget_drops_mass_before_the_frontier() -> None:
    nodes, edges = random_memory(2_500, seed=1)
    panel = build_panel(nodes, edges, budget_chars=1_400)
    assert panel.summary.shown_per_section == 1
    assert "mass" in panel.omitted
    assert panel.frontier is not None
    assert "omitted to fit the budget" in panel.text


def test_lists_say_how_many_they_show_of_how_many() -> None:
    nodes, edges = random_memory(2_500, seed=1)
    panel = build_panel(nodes, edges)
    assert panel.mass is not None and panel.frontier is not None
    k = panel.summary.shown_per_section
    assert 1 <= k <= 10
    assert panel.mass.top.total == panel.summary.nodes
    assert len(panel.mass.top.items) == k
    assert f"top · {k} of {panel.summary.nodes}" in panel.text
    questions = panel.frontier.open_questions
    assert f"open questions · {len(questions.items)} of {questions.total}" in panel.text
    assert panel.betweenness is not None and not panel.betweenness.exact
    assert "estimated from 256 of 2500 sources" in panel.text


def test_the_structured_panel_round_trips_through_json() -> None:
    panel = build_panel(*random_memory(600, seed=2))
    again = Panel.model_validate_json(panel.model_dump_json())
    assert again == panel


def test_bad_budget_and_top_k_are_refused() -> None:
    with pytest.raises(InvalidInput, match="budget_chars: must be at least 500"):
        build_panel([], [], budget_chars=100)
    with pytest.raises(InvalidInput, match="top_k: must be between 1 and 50"):
        build_panel([], [], top_k=0)


def test_concurrent_calls_match_sequential_ones() -> None:
    # Large enough that betweenness samples and Leiden draws random numbers.
    nodes, edges = random_memory(2_500, seed=3)
    expected = build_panel(nodes, edges).model_dump()
    barrier = threading.Barrier(3)
    results: list[dict[str, object]] = []
    errors: list[BaseException] = []

    def call() -> None:
        try:
            barrier.wait()
            results.append(build_panel(nodes, edges).model_dump())
        except BaseException as exc:  # reported below, with the thread's cause
            errors.append(exc)

    threads = [threading.Thread(target=call) for _ in range(3)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert errors == []
    assert len(results) == 3
    assert all(r == expected for r in results)


@pytest.mark.parametrize("seed", range(5))
def test_percentiles_are_average_ranks_like_scipy(seed: int) -> None:
    from scipy.stats import rankdata

    from kenning_encounter.analytics.sections import percentiles

    rng = np.random.default_rng(seed)
    values = rng.integers(0, 6, size=40).astype(np.float64)  # many ties
    expected = (rankdata(values, method="average") - 1.0) / 39
    np.testing.assert_allclose(percentiles(values), expected)
    assert percentiles(np.array([3.0])).tolist() == [1.0]
    assert percentiles(np.array([2.0, 2.0])).tolist() == [0.5, 0.5]
