"""The closed vocabulary of the memory: the single source every layer reads.

Node types fall in three layers. The *process* layer (Locus, Encounter) is the
spine, written only by advance_encounter and close_encounter. The *semantic*
layer holds what the agent understood; the *reference* layer bookmarks the
sources it read. Relations are either *authored* (the agent's own links, made
with create_relations) or *process* (written by the spine tools).

Labels and relation types reach query text only from here: they are an
allow-list, never user text.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from enum import StrEnum
from typing import Final


class Layer(StrEnum):
    PROCESS = "process"
    SEMANTIC = "semantic"
    REFERENCE = "reference"


class PropKind(StrEnum):
    TEXT = "text"
    TIME = "time"  # ISO-8601 string, UTC unless an offset is given
    STATUS = "status"
    CLASSES = "classes"  # some of CLASSIFICATIONS, comma-joined
    RETENTION = "period"  # how long to keep: an ISO-8601 duration (P30D) or date/time


@dataclass(frozen=True)
class Prop:
    name: str
    kind: PropKind
    doc: str
    required: bool = False
    since: int = 1  # the embedded schema version whose migration adds its column
    derived: bool = False  # set by the store from other properties, never by the agent


@dataclass(frozen=True)
class NodeType:
    name: str
    layer: Layer
    doc: str
    id_prefix: str
    props: tuple[Prop, ...] = ()
    statuses: tuple[str, ...] = ()
    default_status: str | None = None
    when: str = ""
    since: int = 1  # the embedded schema version whose migration adds its table

    @property
    def authored(self) -> bool:
        return self.layer is not Layer.PROCESS

    def prop_names(self) -> frozenset[str]:
        return frozenset(p.name for p in self.props)


# Properties every authored node carries; the agent sets name and description, and,
# when the node states something true for a while, the world time it held: record
# time (the tick and its timestamp) says when it was written, this says when it was so.
COMMON_AUTHORED_PROPS: Final = (
    Prop("name", PropKind.TEXT, "short unique handle for the node", required=True),
    Prop("description", PropKind.TEXT, "what the node says, in full"),
    Prop("valid_from", PropKind.TIME, "when it began to hold in the world (ISO-8601)", since=6),
    Prop("valid_until", PropKind.TIME, "when it stopped holding (ISO-8601), if it did", since=6),
    Prop(
        "classification",
        PropKind.CLASSES,
        "what is sensitive in it, some of: pii, phi, pci, secret (gated from reads unless granted)",
        since=9,
    ),
    Prop(
        "retention",
        PropKind.RETENTION,
        "how long to keep it: an ISO-8601 duration from now (P30D) or a date (2027-01-31)",
        since=9,
    ),
    Prop(
        "retain_until",
        PropKind.TIME,
        "when retention runs out (UTC), computed from retention at write time",
        since=9,
        derived=True,
    ),
)

# A fact in triple form (KNDL's predicate and object; its subject is what it is ABOUT):
# what an Observation or a Concept states, kept so the triple leaves as it came.
OBJECT_TYPES: Final = ("string", "number", "boolean", "iri")
TRIPLE_PROPS: Final = (
    Prop(
        "predicate",
        PropKind.TEXT,
        "in triple form, what the node states of its subject: a term or IRI (creditScore)",
        since=12,
    ),
    Prop(
        "object",
        PropKind.TEXT,
        "in triple form, the value stated for the predicate, as text (720, Acme, an IRI)",
        since=12,
    ),
    Prop(
        "object_type",
        PropKind.TEXT,
        "what the object is: string (the default), number, boolean or iri",
        since=12,
    ),
)

# The closed vocabulary of classification; a node may carry several, or none (unclassified).
CLASSIFICATIONS: Final = ("pii", "phi", "pci", "secret")
# Standing's half-life in days of the memory's work (memory/activation.py), the server's
# and the library's default alike; config.py says why it is counted in working time.
ACTIVATION_HALF_LIFE_DAYS: Final = 30.0

QUESTION_STATUSES: Final = ("open", "resolved", "retired")
HYPOTHESIS_STATUSES: Final = ("untested", "supported", "challenged", "falsified", "retired")

LOCUS: Final = NodeType(
    "Locus",
    Layer.PROCESS,
    "one agent session's identity: the harness session id",
    "loc",
)
ENCOUNTER: Final = NodeType(
    "Encounter",
    Layer.PROCESS,
    "one unit of work inside a locus, opened by advance_encounter and sealed by close_encounter",
    "enc",
)
# Who directed a session (#17): the person whose knowledge the memory holds. A Person
# is met again only through its key (memory/identity.py), never through its name.
PERSON: Final = NodeType(
    "Person",
    Layer.PROCESS,
    "the director of a session: who the work was done for, named and, when known, keyed",
    "per",
    since=8,
)

OBSERVATION: Final = NodeType(
    "Observation",
    Layer.SEMANTIC,
    "a noticing: something seen, read, measured or said",
    "obs",
    props=(
        *COMMON_AUTHORED_PROPS,
        Prop("t_observed", PropKind.TIME, "when it held in the world (ISO-8601), if known"),
        *TRIPLE_PROPS,
    ),
    when="you saw, read, measured or were told something concrete",
)
QUESTION: Final = NodeType(
    "Question",
    Layer.SEMANTIC,
    "an open thread: something not yet known",
    "que",
    props=(*COMMON_AUTHORED_PROPS, Prop("status", PropKind.STATUS, "open, resolved or retired")),
    statuses=QUESTION_STATUSES,
    default_status="open",
    when="you need to find something out and cannot yet",
)
HYPOTHESIS: Final = NodeType(
    "Hypothesis",
    Layer.SEMANTIC,
    "a working explanation awaiting evidence",
    "hyp",
    props=(
        *COMMON_AUTHORED_PROPS,
        Prop("status", PropKind.STATUS, "untested, supported, challenged, falsified or retired"),
    ),
    statuses=HYPOTHESIS_STATUSES,
    default_status="untested",
    when="you have a candidate explanation you want to test",
)
CONCEPT: Final = NodeType(
    "Concept",
    Layer.SEMANTIC,
    "a synthesis: an understanding built from several observations",
    "con",
    props=(*COMMON_AUTHORED_PROPS, *TRIPLE_PROPS),
    when="several observations add up to an idea worth naming",
)
NOTE: Final = NodeType(
    "Note",
    Layer.SEMANTIC,
    "a remark that fits no other type: a plan, a caveat, a decision",
    "not",
    props=COMMON_AUTHORED_PROPS,
    when="nothing else fits; prefer a more specific type",
)
COMPONENT: Final = NodeType(
    "Component",
    Layer.REFERENCE,
    "a bookmark into a source (a file, a table, a page); the triple of source fields is unique",
    "cmp",
    props=(
        *COMMON_AUTHORED_PROPS,
        Prop("source_kind", PropKind.TEXT, "kind of source, e.g. file, url, table", required=True),
        Prop(
            "source_label", PropKind.TEXT, "which source, e.g. a repository or site", required=True
        ),
        Prop(
            "source_key", PropKind.TEXT, "where inside it, e.g. a path or an anchor", required=True
        ),
    ),
    when="you want to point at a place in a source without copying it",
)
CITATION: Final = NodeType(
    "Citation",
    Layer.REFERENCE,
    "provenance: where a claim came from and when",
    "cit",
    props=(
        *COMMON_AUTHORED_PROPS,
        Prop(
            "kind",
            PropKind.TEXT,
            "kind of provenance, e.g. web, paper, query, conversation",
            required=True,
        ),
        Prop("uri", PropKind.TEXT, "address of the source"),
        Prop("query", PropKind.TEXT, "the query that produced it, when there is no address"),
        Prop("snapshot", PropKind.TIME, "when the source was read (ISO-8601)"),
    ),
    when="a claim rests on a source you can name",
)

NODE_TYPES: Final[dict[str, NodeType]] = {
    t.name: t
    for t in (
        LOCUS,
        ENCOUNTER,
        PERSON,
        OBSERVATION,
        QUESTION,
        HYPOTHESIS,
        CONCEPT,
        NOTE,
        COMPONENT,
        CITATION,
    )
}
AUTHORED_NODE_TYPES: Final = tuple(n for n, t in NODE_TYPES.items() if t.authored)
PROCESS_NODE_TYPES: Final = tuple(n for n, t in NODE_TYPES.items() if not t.authored)


@dataclass(frozen=True)
class RelationType:
    name: str
    authored: bool
    doc: str
    sources: tuple[str, ...]
    targets: tuple[str, ...]
    same_type: bool = False  # SUPERSEDES: both ends of one type
    coherence: bool = False  # carries meaning between ideas (used by infusion and orient)
    provenance: bool = False  # walked by trace_provenance toward the evidence
    props: tuple[Prop, ...] = field(default_factory=tuple)
    when: str = ""
    since: int = 1  # the embedded schema version whose migration adds its table
    tool: str = ""  # a process edge the spine tools do not write: the tool that does

    def pairs(self) -> tuple[tuple[str, str], ...]:
        if self.same_type:
            return tuple((s, s) for s in self.sources)
        return tuple(
            (s, t)
            for s in self.sources
            for t in self.targets
            if not (s == "Component" and t == "Component")
        )

    def allows(self, source: str, target: str) -> bool:
        return (source, target) in self.pairs()


_SEM = ("Observation", "Question", "Hypothesis", "Concept", "Note")
_ALL_AUTHORED = (*_SEM, "Component", "Citation")
# What may stand in a referent claim: things that refer to something in the world (a
# source's place, a named idea, a source). Observations, questions, hypotheses and notes
# are acts of thinking about a referent, not referents; claims join like with like.
REFERENT_TYPES: Final = ("Component", "Concept", "Citation")
REFERENT_RESOLUTIONS: Final = ("proposed", "confirmed", "distinct")

RELATION_TYPES: Final[dict[str, RelationType]] = {
    r.name: r
    for r in (
        RelationType(
            "ABOUT",
            True,
            "the source node is about the target (a concept or a bookmarked source)",
            (*_SEM, "Citation"),
            ("Concept", "Component"),
            coherence=True,
            when="tie a node to the subject or the place it concerns",
        ),
        RelationType(
            "OBSERVED_AT",
            True,
            "an observation was made at this place or source",
            ("Observation",),
            ("Component", "Citation"),
            provenance=True,
            when="say where an observation was made",
        ),
        RelationType(
            "RAISES",
            True,
            "the source opens the target question",
            ("Observation", "Hypothesis", "Concept", "Note", "Question"),
            ("Question",),
            coherence=True,
            when="a finding leads to a new question",
        ),
        RelationType(
            "RESOLVES",
            True,
            "the source answers the target question (marks it resolved)",
            ("Observation", "Hypothesis", "Concept", "Note", "Citation"),
            ("Question",),
            coherence=True,
            provenance=True,
            when="a finding answers an open question",
        ),
        RelationType(
            "SUPPORTS",
            True,
            "the source is evidence for the target",
            ("Observation", "Citation", "Concept"),
            ("Hypothesis", "Concept"),
            coherence=True,
            provenance=True,
            when="evidence favours a hypothesis or concept (an untested hypothesis becomes supported)",
        ),
        RelationType(
            "CHALLENGES",
            True,
            "the source is evidence against the target",
            ("Observation", "Citation", "Concept", "Hypothesis"),
            ("Hypothesis", "Concept"),
            coherence=True,
            provenance=True,
            when="evidence contradicts a hypothesis or concept (a hypothesis becomes challenged)",
        ),
        RelationType(
            "GROUNDS",
            True,
            "the source is evidence the target is built on",
            ("Observation", "Citation"),
            ("Concept", "Hypothesis", "Note"),
            coherence=True,
            provenance=True,
            when="an observation or citation is what a concept rests on",
        ),
        RelationType(
            "INFORMS",
            True,
            "the source shaped the target without proving it",
            ("Observation", "Concept", "Hypothesis", "Note"),
            ("Concept", "Hypothesis", "Question", "Note"),
            coherence=True,
            provenance=True,
            when="one idea fed into another",
        ),
        RelationType(
            "COMPOSES",
            True,
            "the source is a part of the target whole",
            ("Concept", "Hypothesis"),
            ("Concept", "Hypothesis"),
            coherence=True,
            provenance=True,
            when="a smaller idea is a part of a larger one",
        ),
        RelationType(
            "DECOMPOSES",
            True,
            "the source whole breaks down into the target part",
            ("Concept", "Hypothesis"),
            ("Concept", "Hypothesis"),
            coherence=True,
            when="a larger idea breaks down into parts",
        ),
        RelationType(
            "SUPERSEDES",
            True,
            "the source is the revision of the target (same type, one successor)",
            _ALL_AUTHORED,
            _ALL_AUTHORED,
            same_type=True,
            props=(Prop("revision_why", PropKind.TEXT, "what changed and why", required=True),),
            when="you revise a node: never overwrite, supersede",
        ),
        RelationType(
            "OPENED",
            False,
            "a locus opened this encounter",
            ("Locus",),
            ("Encounter",),
        ),
        RelationType(
            "NEXT_ENCOUNTER",
            False,
            "the next encounter of the same locus",
            ("Encounter",),
            ("Encounter",),
        ),
        RelationType(
            "INSTANTIATED_AFTER",
            False,
            "a locus's first encounter, anchored to the latest encounter when it began",
            ("Encounter",),
            ("Encounter",),
        ),
        RelationType(
            "RECORDED",
            False,
            "the encounter in which a node was created",
            ("Encounter",),
            _ALL_AUTHORED,
        ),
        # --- #17: directors, confirmations, referent claims (memory/identity.py) ---
        RelationType(
            "DIRECTED_BY",
            False,
            "a locus and the one person who directs it, set at its first advance",
            ("Locus",),
            ("Person",),
            since=8,
        ),
        RelationType(
            "CONFIRMED",
            False,
            "an encounter reviewed the node and found it still true (confirm_entities)",
            ("Encounter",),
            _ALL_AUTHORED,
            since=8,
            tool="confirm_entities",
        ),
        # --- #16: relevance over time (memory/activation.py) ---
        RelationType(
            "CONSULTED",
            False,
            "an encounter deliberately read the node (find_by_name, trace_provenance, "
            "chain_history): one edge per encounter and node, its time the latest read",
            ("Encounter",),
            _ALL_AUTHORED,
            since=11,
            tool="find_by_name, trace_provenance or chain_history with your session_id",
        ),
        RelationType(
            "PINNED",
            False,
            "an encounter pinned the node (or unpinned it): a pinned node never fades",
            ("Encounter",),
            _ALL_AUTHORED,
            since=11,
            tool="pin_entities",
        ),
        RelationType(
            "REFERENT_CLAIM",
            False,
            "a claim, made in an encounter, that two referents are one thing or are not",
            REFERENT_TYPES,
            REFERENT_TYPES,
            same_type=True,
            props=(
                Prop("resolution", PropKind.STATUS, "proposed, confirmed or distinct", True),
                Prop("why", PropKind.TEXT, "what the claim rests on"),
            ),
            when="say two references are one thing, or definitely not (claim_referents)",
            since=8,
            tool="claim_referents",
        ),
    )
}
AUTHORED_RELATION_TYPES: Final = tuple(n for n, r in RELATION_TYPES.items() if r.authored)
PROCESS_RELATION_TYPES: Final = tuple(n for n, r in RELATION_TYPES.items() if not r.authored)
COHERENCE_RELATION_TYPES: Final = tuple(n for n, r in RELATION_TYPES.items() if r.coherence)
PROVENANCE_RELATION_TYPES: Final = tuple(n for n, r in RELATION_TYPES.items() if r.provenance)

# Fact-state changes a relation makes on its target when it is created.
STATUS_EFFECTS: Final[dict[str, dict[str, tuple[tuple[str, ...], str]]]] = {
    # relation -> target type -> (statuses it moves from, status it sets)
    "RESOLVES": {"Question": (("open",), "resolved")},
    "SUPPORTS": {"Hypothesis": (("untested",), "supported")},
    "CHALLENGES": {"Hypothesis": (("untested", "supported"), "challenged")},
}

# "Open frontier": the statuses that mark unresolved work.
FRONTIER_STATUSES: Final[dict[str, tuple[str, ...]]] = {
    "Question": ("open",),
    "Hypothesis": ("untested", "challenged"),
}


def node_type(name: str) -> NodeType | None:
    return NODE_TYPES.get(name)


def describe() -> dict[str, object]:
    """The vocabulary as plain data, for get_schema and list_vocabulary."""
    return {
        "node_types": [
            {
                "name": t.name,
                "layer": t.layer.value,
                "doc": t.doc,
                "when": t.when,
                "writable": t.authored,
                "properties": [
                    {"name": p.name, "kind": p.kind.value, "required": p.required, "doc": p.doc}
                    for p in t.props
                ],
                "statuses": list(t.statuses),
                "default_status": t.default_status,
            }
            for t in NODE_TYPES.values()
        ],
        "relation_types": [
            {
                "name": r.name,
                "authored": r.authored,
                "doc": r.doc,
                "when": r.when,
                "sources": list(r.sources),
                "targets": list(r.targets),
                "same_type": r.same_type,
                "properties": [
                    {"name": p.name, "kind": p.kind.value, "required": p.required, "doc": p.doc}
                    for p in r.props
                ],
            }
            for r in RELATION_TYPES.values()
        ],
        "status_effects": {
            rel: {t: {"from": list(f), "to": to} for t, (f, to) in m.items()}
            for rel, m in STATUS_EFFECTS.items()
        },
    }
