"""Compact text rendering of the orient panel, and fitting it into a budget.

Each list says "k of N" so the reader knows what was left out. To fit the
budget the builder lowers the number of items per section; if one item per
section is still too much, whole sections go (the frontier last), and as a
last resort the text is cut.

The budget bounds both views: the text, and the structured panel as JSON,
which is what Claude Code hands the model (``sent_chars``).
"""

from __future__ import annotations

import json
from collections.abc import Callable, Iterable
from typing import Any, TypeVar

from kenning_encounter.analytics.panel import (
    DROP_ORDER,
    SECTION_ORDER,
    BetweennessSection,
    Bridge,
    CommunitiesSection,
    Community,
    ComponentsSection,
    DivergenceSection,
    DriftSection,
    Faded,
    FadingSection,
    FragilitySection,
    FrontierMassSection,
    FrontierView,
    Leaning,
    Listing,
    MassSection,
    NodeRef,
    Panel,
    QuietSection,
    Ranked,
    Shift,
    Star,
    Waiting,
    WeaveSection,
)
from kenning_encounter.plaintext import one_line, quoted

T = TypeVar("T")

NAME_CHARS = 60
ELLIPSIS = "…"


def node(ref: NodeRef) -> str:
    # A stored name adds no line to the panel, and between its guillemets cannot pass
    # for the bracket, the "; " or the "—" around it (plaintext.quoted).
    shown = one_line(ref.name)
    name = shown if len(shown) <= NAME_CHARS else shown[: NAME_CHARS - 1] + ELLIPSIS
    status = f" {ref.status}" if ref.status else ""
    return f"{quoted(name)} [{ref.type} {ref.id}{status}]"


def _num(x: float) -> str:
    return f"{x:.3g}"


def _block(
    title: str, listing: Listing[T], line: Callable[[T], str], empty: str = "none"
) -> list[str]:
    head = f"{title} · {len(listing.items)} of {listing.total}"
    if not listing.items:
        return [f"{title} · {empty}" if listing.total == 0 else head]
    return [head, *(f"  {line(item)}" for item in listing.items)]


def _ranked(r: Ranked) -> str:
    return f"{node(r.node)} {_num(r.score)}"


def _leaning(x: Leaning) -> str:
    plural = "s" if x.frontier_links > 1 else ""
    links = f" · {x.frontier_links} frontier link{plural}" if x.frontier_links else ""
    return (
        f"{node(x.node)} mass p{x.mass_pct * 100:.0f} / frontier p{x.frontier_pct * 100:.0f}{links}"
    )


def _rank(r: int | None, missing: str) -> str:
    return missing if r is None else f"#{r}"


def _mass(s: MassSection) -> list[str]:
    return [f"MASS — {s.definition} ({s.detail})", *_block("top", s.top, _ranked)]


def _frontier_mass(s: FrontierMassSection) -> list[str]:
    return [
        f"FRONTIER MASS — {s.definition} ({s.detail})",
        *_block("top", s.top, _ranked),
    ]


def _divergence(s: DivergenceSection) -> list[str]:
    return [
        f"DIVERGENCE — {s.definition}",
        *_block("accumulated_only", s.accumulated_only, _leaning),
        *_block("leaned_on", s.leaned_on, _leaning),
    ]


def _quiet(s: QuietSection) -> list[str]:
    return [f"QUIET — {s.definition}", *_block("nodes", s.nodes, _leaning)]


def _waiting(w: Waiting) -> str:
    where = f" (from {w.encounter})" if w.encounter else ""
    return f"{node(w.node)}{where}"


def _frontier(s: FrontierView) -> list[str]:
    return [
        "FRONTIER — what is still open, longest waiting first",
        *_block("open questions", s.open_questions, _waiting),
        *_block("live hypotheses (untested or challenged)", s.live_hypotheses, _waiting),
        *_block(
            "ungrounded concepts (nothing GROUNDS or SUPPORTS them)",
            s.ungrounded_concepts,
            _waiting,
        ),
    ]


def _shift(x: Shift) -> str:
    return f"{node(x.node)} {_rank(x.before, 'unranked')} → {_rank(x.after, 'gone')}"


def _drift(s: DriftSection) -> list[str]:
    lines = [f"DRIFT — {s.note}"]
    if s.baseline_encounter is None and s.baseline_saved_at is None:
        return lines
    return [
        *lines,
        *_block("risers", s.risers, _shift),
        *_block("fallers", s.fallers, _shift),
        *_block("new", s.new, _ranked),
    ]


def _betweenness(s: BetweennessSection) -> list[str]:
    return [f"BETWEENNESS — {s.detail}", *_block("top", s.top, _ranked)]


def _community(c: Community) -> str:
    return f"{c.size} nodes: " + "; ".join(node(r) for r in c.label)


def _communities(s: CommunitiesSection) -> list[str]:
    return [
        f"COMMUNITIES — {s.detail}; {s.count} in all, {s.singletons} single nodes, "
        f"modularity {s.modularity:.3f}",
        *_block("largest", s.largest, _community),
    ]


def _components(s: ComponentsSection) -> list[str]:
    sizes = ", ".join(str(x) for x in s.sizes.items)
    return [
        f"COMPONENTS — {s.count} weakly connected; the largest holds {s.largest_share:.0%} "
        f"of nodes; sizes {sizes}{', …' if s.sizes.total > len(s.sizes.items) else ''}",
        *_block("isolated (no relation at all), newest first", s.isolated, node),
    ]


def _bridge(b: Bridge) -> str:
    return f"{node(b.a)} — {node(b.b)} cuts off {b.cut_off}"


def _fragility(s: FragilitySection) -> list[str]:
    return [
        f"FRAGILITY — cut points of the undirected graph (bridges holding a single node: "
        f"{s.pendant_bridges}, not listed)",
        *_block("articulation points (by betweenness)", s.articulation_points, _ranked),
        *_block("bridges", s.bridges, _bridge),
    ]


def _star(x: Star) -> str:
    return f"{node(x.node)} degree {x.degree}, clustering {x.clustering:.2f}"


def _weave(s: WeaveSection) -> list[str]:
    return [f"WEAVE AUDIT — {s.definition}", *_block("stars", s.stars, _star)]


def _faded(x: Faded) -> str:
    return f"{node(x.node)} {x.tier}, unused {x.idle_days:g} days"


def _fading(s: FadingSection) -> list[str]:
    counts = ", ".join(f"{n} {tier}" for tier, n in s.tiers.items())
    return [
        f"FADING — {s.definition} (half-life {s.half_life_days:g} days): {counts}",
        *_block("massive but fading", s.massive_fading, _faded),
    ]


_RENDERERS: dict[str, Callable[[Any], list[str]]] = {
    "mass": _mass,
    "frontier_mass": _frontier_mass,
    "divergence": _divergence,
    "quiet": _quiet,
    "frontier": _frontier,
    "drift": _drift,
    "betweenness": _betweenness,
    "communities": _communities,
    "components": _components,
    "fragility": _fragility,
    "weave_audit": _weave,
    "fading": _fading,
}


def _engines(engines: dict[str, str]) -> str:
    by_engine: dict[str, list[str]] = {}
    for section, engine in sorted(engines.items()):
        by_engine.setdefault(engine, []).append(section)
    if not by_engine:
        return ""
    common = max(sorted(by_engine), key=lambda e: len(by_engine[e]))
    named = [f"{e} for {', '.join(s)}" for e, s in sorted(by_engine.items()) if e != common]
    rest = f"{common} for the rest" if named else common
    return "; engines: " + ", ".join([*named, rest])


def render(panel: Panel) -> str:
    s = panel.summary
    if s.nodes == 0:
        return "\n".join(["ORIENT · nothing recorded yet", *([panel.guide] if panel.guide else [])])
    lines = [
        f"ORIENT · {s.nodes} nodes · {s.edges} relations · {s.scope} "
        f"({s.folded} revisions folded) · {s.frontier_seeds} frontier seeds",
        f"up to {s.shown_per_section} per section, 'k of N' = shown of all{_engines(s.engines)}",
    ]
    if panel.guide:
        lines.append(panel.guide)
    for name in SECTION_ORDER:
        section = getattr(panel, name)
        if section is not None:
            lines.append("")
            lines.extend(_RENDERERS[name](section))
    if panel.omitted:
        lines.extend(["", "omitted to fit the budget: " + ", ".join(panel.omitted)])
    return "\n".join(lines)


def sent_chars(panel: Panel) -> int:
    """Characters of the panel as a tool sends it: compact JSON without its text view
    (the same dump as ``server.outputs.wire``)."""
    data = panel.model_dump(mode="json", exclude_defaults=True, exclude={"text"})
    return len(json.dumps(data, separators=(",", ":"), ensure_ascii=False))


def _fits(panel: Panel, text: str, budget: int) -> bool:
    return len(text) <= budget and sent_chars(panel) <= budget


def fit(panel: Panel, budget: int, ks: Iterable[int]) -> Panel:
    """The fullest version of ``panel`` whose rendering and JSON fit ``budget`` characters."""
    attempt = panel
    for k in ks:
        attempt = panel.trim(k)
        text = render(attempt)
        if _fits(attempt, text, budget):
            return attempt.model_copy(update={"text": text})
    omitted: list[str] = []
    for name in DROP_ORDER:
        if getattr(attempt, name) is None:
            continue
        omitted.append(name)
        attempt = attempt.model_copy(update={name: None, "omitted": tuple(omitted)})
        text = render(attempt)
        if _fits(attempt, text, budget):
            return attempt.model_copy(update={"text": text})
    text = render(attempt)
    return attempt.model_copy(update={"text": text[: budget - 1] + ELLIPSIS})
