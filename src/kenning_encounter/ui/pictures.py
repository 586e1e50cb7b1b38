"""The orient panel as pictures: the geometry of small inline SVG charts, no script.

Each chart is plain data (coordinates already in the SVG's own units) that the
template draws; the numbers come from the panel the orient tool builds
(analytics/orient.py), never from a reading of our own, so the picture and the
tool cannot disagree. Every chart has a title and a description for assistive
technology, and the page lists the same facts as text beside it.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Final

from kenning_encounter.analytics.panel import (
    DriftSection,
    Leaning,
    NodeRef,
    Panel,
    Ranked,
    Shift,
)

WIDTH: Final = 640
LABEL_W: Final = 230  # room for a bar's label on its left
BAR_H: Final = 22
GAP: Final = 6
LABEL_CHARS: Final = 30


def short(text: str, limit: int = LABEL_CHARS) -> str:
    return text if len(text) <= limit else text[: limit - 1] + "…"


@dataclass(frozen=True)
class Bar:
    label: str
    full: str  # the whole label, for the tooltip
    value: str  # as shown at the bar's end
    y: float
    width: float
    kind: str = ""  # a CSS class: the bar's colour and pattern


@dataclass(frozen=True)
class BarChart:
    key: str  # unique on the page: ids of title and description
    title: str
    description: str
    bars: list[Bar] = field(default_factory=list[Bar])
    height: float = 0
    x0: float = LABEL_W
    span: float = WIDTH - LABEL_W - 70


def bar_chart(
    key: str, title: str, description: str, rows: Sequence[tuple[str, float, str]]
) -> BarChart:
    """Horizontal bars, longest for the largest value; ``rows`` are (label, value, shown)."""
    top = max((v for _, v, _ in rows), default=0.0)
    span = WIDTH - LABEL_W - 70
    bars = [
        Bar(
            label=short(label),
            full=label,
            value=shown,
            y=GAP + i * (BAR_H + GAP),
            width=max(1.0, span * value / top) if top > 0 else 1.0,
        )
        for i, (label, value, shown) in enumerate(rows)
    ]
    return BarChart(key, title, description, bars, height=GAP + len(bars) * (BAR_H + GAP))


def _ranked(key: str, title: str, what: str, top: Sequence[Ranked]) -> BarChart:
    rows = [(r.node.name, r.score, f"{r.score:.3g}") for r in top]
    described = f"{what}: " + "; ".join(f"{r.node.name} {r.score:.3g}" for r in top)
    return bar_chart(key, title, described if top else f"{what}: nothing to rank.", rows)


@dataclass(frozen=True)
class Point:
    x: float
    y: float
    node: NodeRef
    kind: str  # accumulated, leaned or quiet: a shape and a colour each
    said: str  # the point as words, for its tooltip


@dataclass(frozen=True)
class Scatter:
    """Mass percentile across, frontier-mass percentile up; the diagonal is agreement."""

    key: str
    title: str
    description: str
    points: list[Point]
    size: float = 320
    pad: float = 40

    def at(self, pct: float) -> float:
        return self.pad + pct * self.size


def divergence_scatter(panel: Panel) -> Scatter | None:
    if panel.divergence is None:
        return None
    groups: list[tuple[str, Sequence[Leaning]]] = [
        ("accumulated", panel.divergence.accumulated_only.items),
        ("leaned", panel.divergence.leaned_on.items),
        ("quiet", panel.quiet.nodes.items if panel.quiet else ()),
    ]
    points: list[Point] = []
    size, pad = 320.0, 40.0
    for kind, items in groups:
        for lean in items:
            said = (
                f"{lean.node.name}: mass percentile {lean.mass_pct:.0%}, "
                f"frontier-mass percentile {lean.frontier_pct:.0%}"
            )
            points.append(
                Point(
                    x=pad + lean.mass_pct * size,
                    y=pad + (1 - lean.frontier_pct) * size,
                    node=lean.node,
                    kind=kind,
                    said=said,
                )
            )
    counts = {kind: len(items) for kind, items in groups}
    description = (
        f"{counts['accumulated']} node(s) massive but not leaned on by the open work "
        f"(lower right), {counts['leaned']} leaned on by the open work but not massive "
        f"(upper left), {counts['quiet']} quiet node(s) the open work touches (left)."
    )
    return Scatter("divergence", "Mass against frontier mass", description, points, size, pad)


@dataclass(frozen=True)
class Slope:
    node: NodeRef
    y_before: float
    y_after: float
    before: str
    after: str
    kind: str  # rose, fell


@dataclass(frozen=True)
class SlopeChart:
    key: str
    title: str
    description: str
    slopes: list[Slope]
    height: float
    ticks: list[tuple[float, str]]


def _rank_y(rank: int | None, worst: int, top: float, span: float) -> float:
    # A rank below those kept (None) sits on the bottom line, named "below".
    place = worst + 1 if rank is None else rank
    return top + span * (place - 1) / max(1, worst)


def drift_slopes(drift: DriftSection | None) -> SlopeChart | None:
    if drift is None or not (drift.risers.items or drift.fallers.items):
        return None
    shifts: list[tuple[str, Shift]] = [("rose", s) for s in drift.risers.items] + [
        ("fell", s) for s in drift.fallers.items
    ]
    ranks = [r for _, s in shifts for r in (s.before, s.after) if r is not None]
    worst = max(ranks, default=1)
    top, span = 20.0, 240.0
    slopes = [
        Slope(
            node=s.node,
            y_before=_rank_y(s.before, worst, top, span),
            y_after=_rank_y(s.after, worst, top, span),
            before="below" if s.before is None else f"#{s.before}",
            after="gone" if s.after is None else f"#{s.after}",
            kind=kind,
        )
        for kind, s in shifts
    ]
    ticks = [(_rank_y(r, worst, top, span), f"#{r}") for r in sorted({1, worst})]
    description = "; ".join(f"{s.node.name} {s.before} to {s.after}" for s in slopes)
    return SlopeChart(
        "drift",
        "Mass rank, then and now",
        description or "No node moved in mass rank since the baseline.",
        slopes,
        height=top + span + 30,
        ticks=ticks,
    )


@dataclass(frozen=True)
class Pictures:
    divergence: Scatter | None = None
    mass: BarChart | None = None
    frontier_mass: BarChart | None = None
    communities: BarChart | None = None
    articulation: BarChart | None = None
    bridges: BarChart | None = None
    drift: SlopeChart | None = None
    frontier: BarChart | None = None


def pictures(panel: Panel) -> Pictures:
    """Every chart the panel has the numbers for."""
    communities = articulation = bridges = frontier = None
    if panel.communities is not None:
        largest = panel.communities.largest.items
        rows = [
            (", ".join(m.name for m in c.label) or "(unnamed)", float(c.size), f"{c.size} nodes")
            for c in largest
        ]
        communities = bar_chart(
            "communities",
            "The largest communities",
            f"{panel.communities.count} communities; the largest by size: "
            + "; ".join(f"{label} {shown}" for label, _, shown in rows),
            rows,
        )
    if panel.fragility is not None:
        articulation = _ranked(
            "articulation",
            "Articulation points, by betweenness",
            "Nodes whose removal splits the graph",
            panel.fragility.articulation_points.items,
        )
        rows = [
            (f"{b.a.name} — {b.b.name}", float(b.cut_off), f"cuts off {b.cut_off}")
            for b in panel.fragility.bridges.items
        ]
        bridges = bar_chart(
            "bridges",
            "Bridges, by what they cut off",
            "Relations whose removal cuts nodes off: "
            + ("; ".join(f"{label} {shown}" for label, _, shown in rows) or "none"),
            rows,
        )
    if panel.frontier is not None:
        view = panel.frontier
        rows = [
            ("open questions", float(view.open_questions.total), str(view.open_questions.total)),
            ("live hypotheses", float(view.live_hypotheses.total), str(view.live_hypotheses.total)),
            (
                "ungrounded concepts",
                float(view.ungrounded_concepts.total),
                str(view.ungrounded_concepts.total),
            ),
        ]
        frontier = bar_chart(
            "frontier",
            "The frontier: what is still open",
            "; ".join(f"{label}: {shown}" for label, _, shown in rows),
            rows,
        )
    return Pictures(
        divergence=divergence_scatter(panel),
        mass=_ranked("mass", "Mass (ArticleRank)", "The most massive nodes", panel.mass.top.items)
        if panel.mass
        else None,
        frontier_mass=_ranked(
            "frontier-mass",
            "Frontier mass",
            "The nodes the open work leans on most",
            panel.frontier_mass.top.items,
        )
        if panel.frontier_mass
        else None,
        communities=communities,
        articulation=articulation,
        bridges=bridges,
        drift=drift_slopes(panel.drift),
        frontier=frontier,
    )
