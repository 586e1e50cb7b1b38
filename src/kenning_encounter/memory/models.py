"""Request and result models of the memory services.

The MCP layer serves these same models, so their field descriptions are
written for a model reader: what the field means, what is allowed, an example.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from typing import Annotated, Any, cast

from pydantic import (
    BaseModel,
    ConfigDict,
    Field,
    GetJsonSchemaHandler,
    SerializationInfo,
    SerializerFunctionWrapHandler,
    model_serializer,
)
from pydantic.json_schema import JsonSchemaValue, SkipJsonSchema
from pydantic_core.core_schema import CoreSchema

from kenning_encounter.lazymodel import LazyModel
from kenning_encounter.plaintext import one_line
from kenning_encounter.store.records import EncounterRecord, NodeRecord
from kenning_encounter.textproc_time import written_time


class EntityIn(LazyModel):
    """One node to record. Type-specific properties go beside name and description."""

    # Every property any type carries is declared, so the schema can refuse any other
    # name; which of them a given type takes is the service's check (validate.entity).
    model_config = ConfigDict(extra="forbid")

    type: str = Field(
        description="Node type: Observation, Question, Hypothesis, Concept, Note, Component "
        "or Citation. Example: 'Observation'."
    )
    name: str = Field(
        description="Short unique handle on one line, reused to link the node. Example: "
        "'retry storm on deploy'."
    )
    description: str = Field(
        default="",
        description="What the node says, in full sentences. Example: 'Deploys at 09:00 "
        "triggered a retry storm against the auth service.'",
    )
    status: str | None = Field(
        default=None,
        description="Question: open|resolved|retired (default open). Hypothesis: "
        "untested|supported|challenged|falsified|retired (default untested). Other types: omit.",
    )
    supersedes: str | None = Field(
        default=None,
        description="Name or id of a live node of the same type this one revises. The new "
        "node may reuse its name. Requires revision_why.",
    )
    revision_why: str | None = Field(
        default=None,
        description="With supersedes: what changed and why. Example: 'the error rate "
        "figure was per minute, not per second'.",
    )
    t_observed: str | None = Field(
        default=None,
        description="Observation: when it held in the world (ISO-8601), if known. "
        "Example: '2026-03-02T09:00:00Z'.",
    )
    valid_from: str | None = Field(
        default=None,
        description="Any type, when the node states something true for a while: when it "
        "began to hold in the world (ISO-8601). Example: '2026-05-01'. Omit if unknown.",
    )
    valid_until: str | None = Field(
        default=None,
        description="With valid_from: when it stopped holding (ISO-8601); omit while it "
        "still holds. Example: '2026-06-15T00:00:00Z'.",
    )
    classification: list[str] | str | None = Field(
        default=None,
        description="Any type, when the node holds something sensitive: some of pii, phi, "
        "pci, secret. Reads leave a classified node out unless the server grants its classes. "
        "Example: ['pii']. Omit when nothing in it is sensitive.",
    )
    retention: str | None = Field(
        default=None,
        description="Any type: how long to keep it, an ISO-8601 duration from now or the date "
        "it runs out; an operator's purge --due then deletes it. Example: 'P30D', '2027-01-31'.",
    )
    predicate: str | None = Field(
        default=None,
        description="Observation or Concept stating a fact in triple form: what it states "
        "of its subject (the node it is ABOUT). Example: 'creditScore'.",
    )
    object: str | None = Field(
        default=None,
        description="With predicate: the value stated, as text. Example: '720'.",
    )
    object_type: str | None = Field(
        default=None,
        description="What object is: string (default), number, boolean or iri.",
    )
    source_kind: str | None = Field(
        default=None,
        description="Component (required): kind of source. Example: 'file'.",
    )
    source_label: str | None = Field(
        default=None,
        description="Component (required): which source. Example: 'github.com/acme/api'.",
    )
    source_key: str | None = Field(
        default=None,
        description="Component (required): where inside it. Example: 'src/auth/client.py'.",
    )
    kind: str | None = Field(
        default=None,
        description="Citation (required): kind of provenance. Example: 'web', 'paper'.",
    )
    uri: str | None = Field(default=None, description="Citation: address of the source.")
    query: str | None = Field(
        default=None, description="Citation: the query that produced it, when there is no uri."
    )
    snapshot: str | None = Field(
        default=None, description="Citation: when the source was read (ISO-8601)."
    )


class RelationIn(LazyModel):
    """One authored link between two existing nodes."""

    model_config = ConfigDict(extra="forbid")

    source: str = Field(description="Name or id of the node the relation starts at.")
    type: str = Field(
        description="Relation type: ABOUT, OBSERVED_AT, RAISES, RESOLVES, SUPPORTS, CHALLENGES, "
        "GROUNDS, INFORMS, COMPOSES, DECOMPOSES or SUPERSEDES. Example: 'GROUNDS'."
    )
    target: str = Field(description="Name or id of the node the relation points to.")
    revision_why: str | None = Field(
        default=None, description="Required for SUPERSEDES: what changed and why."
    )


# What a tool sends is read by a model, token by token, so results are dumped with
# exclude_defaults (server/calls.py): a null, an empty list or an empty map is left
# out, since its absence says the same. Fields only the services use (ticks, the
# recording session) are kept on the object but never sent.
Internal = Field(default=0, exclude=True)


class DirectorOut(LazyModel):
    """Who directed the session that wrote something (#17): a Person, met again only by
    its key; a director named without a key is a Person of that one session."""

    id: str
    name: str
    key: str | None = None


class NodeOut(LazyModel):
    id: str
    type: str
    name: str
    description: str
    status: str | None = None
    properties: dict[str, Any] = Field(default_factory=dict)
    created_at: str
    tick: SkipJsonSchema[int] = Internal
    encounter: str | None = None
    locus: SkipJsonSchema[str | None] = Field(default=None, exclude=True)
    superseded_by: str | None = Field(
        default=None,
        description="Id of the version that revised it (not sent for a live node); "
        "'withheld' when that version is of a class this server is not granted; 'hidden' "
        "when every later version was written in a session this reader face hides",
    )
    director: DirectorOut | None = Field(
        default=None, description="Who directed the session that recorded it"
    )
    same_as: str | None = Field(
        default=None,
        description="With same_as: the node a confirmed referent claim reached this one from",
    )
    tier: str | None = Field(
        default=None,
        description="Standing now: hot or warm (default recall), cold (search include_cold), "
        "frozen (the operator's review queue); pinned nodes stay hot. Absent with as_of",
    )
    last_used_at: str | None = Field(
        default=None, description="Its latest use: created, linked, consulted, confirmed, pinned"
    )
    pinned: bool | None = Field(default=None, description="true while a pin holds it hot")

    @classmethod
    def of(cls, node: NodeRecord, *, max_description: int | None = None) -> NodeOut:
        description = node.description
        if max_description is not None and len(description) > max_description:
            description = description[: max_description - 1].rstrip() + "…"
        return cls(
            id=node.id,
            type=node.type,
            name=node.name,
            description=description,
            status=node.status,
            properties=dict(node.props),
            created_at=node.created_at,
            tick=node.tick,
            encounter=node.encounter,
            locus=node.locus,
            superseded_by=node.superseded_by,
        )


class EdgeOut(LazyModel):
    source: str
    type: str
    target: str
    tick: SkipJsonSchema[int] = Internal
    encounter: str | None = None
    revision_why: str | None = None


def shown_session(locus: str, viewer: str | None) -> str:
    """A session id as a reader may see it: whole to its own session, cut short to any other.

    A session id is what a client names to write into a session, so no session
    is ever shown another's in full: enough to tell sessions apart, never enough
    to act as one.
    """
    if locus == viewer:
        return locus
    # One line of what it shows: a session id a dump carried from before the text checks
    # adds no line to the note a session starts with.
    return one_line(locus[: min(8, len(locus) // 3)]) + "…"


class EncounterOut(LazyModel):
    name: str
    session_id: str
    purpose: str
    opened_at: str
    opened_tick: SkipJsonSchema[int] = Internal
    sealed_at: str | None = None
    summary: str | None = None
    dissolved_at: str | None = None
    last_activity_at: str | None = Field(
        default=None, description="Sent only when later than opened_at and sealed_at"
    )
    state: str = Field(description="open, sealed or dissolved")
    director: DirectorOut | None = Field(default=None, description="Who directs the session")

    @model_serializer(mode="wrap")
    def _once(self, handler: SerializerFunctionWrapHandler, info: SerializationInfo) -> Any:
        data = handler(self)
        last = self.last_activity_at
        # A seal no longer moves the last activity (memory/activation.py), so a sealed
        # encounter's is earlier than its seal: it says nothing the seal does not.
        sealed = self.sealed_at
        said = last is not None and (
            last == self.opened_at or (sealed is not None and last <= sealed)
        )
        if isinstance(data, dict) and said:
            cast(dict[str, Any], data).pop("last_activity_at", None)
        return data

    @classmethod
    def of(cls, e: EncounterRecord, viewer: str | None = None) -> EncounterOut:
        """``viewer`` is the session reading it: only its own id is shown whole."""
        state = "sealed" if e.sealed_at else "dissolved" if e.dissolved_at else "open"
        return cls(
            name=e.name,
            session_id=shown_session(e.locus, viewer),
            purpose=e.purpose,
            opened_at=e.opened_at,
            opened_tick=e.opened_tick,
            sealed_at=e.sealed_at,
            summary=e.summary,
            dissolved_at=e.dissolved_at,
            last_activity_at=e.last_activity_at,
            state=state,
        )


class ReEntry(LazyModel):
    """What advance_encounter returns: where you are and what is still open."""

    encounter: EncounterOut
    previous: str | None = Field(
        default=None, description="Your session's previous encounter, if any."
    )
    anchored_after: str | None = Field(
        default=None,
        description="For a session's first encounter: the latest encounter when it began.",
    )
    closed_previous: str | None = Field(
        default=None, description="The encounter this call sealed with close_summary."
    )
    recent_sessions: list[EncounterOut] = Field(default_factory=list[EncounterOut])
    as_of: int | None = Field(
        default=None,
        description="With as_of: the tick the lists below read the memory at (the encounter "
        "itself is opened now).",
    )
    open_questions: list[NodeOut] = Field(default_factory=list[NodeOut])
    live_hypotheses: list[NodeOut] = Field(default_factory=list[NodeOut])
    recent_concepts: list[NodeOut] = Field(default_factory=list[NodeOut])
    unsealed: list[EncounterOut] = Field(
        default_factory=list[EncounterOut],
        description="Encounters of other sessions never sealed, with last-activity times.",
    )
    handle: str | None = Field(
        default=None,
        description="Your session's handle: pass it as session_id from another client or "
        "after a reconnect; whoever has it may write into and seal this session.",
    )


def _kind(prop: Mapping[str, Any]) -> str:
    if "anyOf" in prop:
        return " or ".join(_kind(p) for p in prop["anyOf"])
    return str(prop.get("type", "any"))


@dataclass(frozen=True)
class _Listed:
    """``listed_item``'s annotation: the schema is made when one is asked for, so a model
    listed this way is not built at import (lazymodel.py)."""

    model: type[BaseModel]

    def __get_pydantic_json_schema__(
        self, core_schema: CoreSchema, handler: GetJsonSchemaHandler
    ) -> JsonSchemaValue:
        schema = self.model.model_json_schema()
        props: dict[str, Any] = schema["properties"]
        fields = "; ".join(
            f"{name} ({_kind(p)}{': ' + p['description'] if p.get('description') else ''})"
            for name, p in props.items()
        )
        doc = " ".join((self.model.__doc__ or "").split())
        return {
            "type": "object",
            "title": schema.get("title", self.model.__name__),
            "description": f"{doc} Fields: {fields}.".strip(),
            "required": list(schema.get("required", [])),
        }


def listed_item(model: type[BaseModel]) -> _Listed:
    """The schema of one item of a long list in a tool's result: an object that must carry
    the model's required fields, each named and described in the item's description
    rather than given a schema of its own.

    A client that checks every result against the tool's output schema (the Python SDK
    does, with jsonschema) walks each field's schema in each item: for a batch of 50
    recorded nodes that took 1.4 ms a call, against 0.27 ms for this form, and a write
    may carry 5,000. The result is built from the typed model all the same."""
    return _Listed(model)


class RecordedNode(LazyModel):
    """A node just recorded: what the next call needs to link it. Its text is what the
    caller sent, so it is not sent back; flat and without nulls, like a search hit."""

    id: str
    type: str
    name: str
    status: str = Field(description="Question or Hypothesis status; empty for other types")
    revises: str = Field(description="Id of the node this one supersedes; empty if none")

    @classmethod
    def of(cls, node: NodeRecord, revises: str = "") -> RecordedNode:
        return cls.model_construct(
            id=node.id, type=node.type, name=node.name, status=node.status or "", revises=revises
        )


class Created(LazyModel):
    encounter: str
    tick: int
    created_at: str = Field(description="When the batch was recorded (one time for all)")
    created: list[Annotated[RecordedNode, listed_item(RecordedNode)]]


class Related(LazyModel):
    encounter: str
    tick: int
    created: list[Annotated[EdgeOut, listed_item(EdgeOut)]] = Field(
        description="Each made in this call's encounter"
    )
    status_changes: list[dict[str, str]] = Field(
        default_factory=list, description="Fact-state changes the relations made."
    )

    @model_serializer(mode="wrap")
    def _once(self, handler: SerializerFunctionWrapHandler, info: SerializationInfo) -> Any:
        data = handler(self)
        for edge in cast(dict[str, Any], data).get("created", []):
            if cast(dict[str, Any], edge).get("encounter") == self.encounter:
                del edge["encounter"]
        return data


class Deleted(LazyModel):
    encounter: str
    tick: int
    deleted: list[str]


class Closed(LazyModel):
    encounter: EncounterOut


class Hit(LazyModel):
    """A search hit: enough to recognise and link the node (find_by_name has the rest).

    Flat and without nulls on purpose: clients that validate every result against the
    output schema pay for each optional field and nested object, on every search."""

    id: str
    type: str
    name: str
    description: str = Field(description="Cut at 400 characters")
    status: str = Field(description="Question or Hypothesis status; empty for other types")
    encounter: str
    created_at: str
    when: str = Field(
        default="",
        description="The world time the node states, as written: 'FROM..UNTIL' for a span "
        "it is true (UNTIL empty when open), the moment for an observation; not sent when "
        "it states none (created_at is then its time)",
    )
    score: float
    tier: str = Field(description="hot, warm or cold (see find_by_name); empty with as_of")

    @classmethod
    def of(cls, node: NodeRecord, score: float, *, max_description: int, tier: str = "") -> Hit:
        text = node.description
        if len(text) > max_description:
            text = text[: max_description - 1].rstrip() + "…"
        # Built unchecked: every value comes typed from the store, and a search builds many.
        return cls.model_construct(
            id=node.id,
            type=node.type,
            name=node.name,
            description=text,
            status=node.status or "",
            encounter=node.encounter or "",
            created_at=node.created_at,
            when=_world_time(node),
            score=round(score, 4),
            tier=tier,
        )


def _world_time(node: NodeRecord) -> str:
    """The time a node states, as written; empty where it states none."""
    basis, start, end = written_time(node)
    return f"{start}..{end}" if basis == "valid" else start if basis == "observed" else ""


# The hit's schema in the listed form (``listed_item``): a validating client checks the
# hits of every search.
InlineHit = Annotated[Hit, listed_item(Hit)]


class SearchResult(LazyModel):
    # The caller's own query and the length of hits are not sent back.
    query: SkipJsonSchema[str] = Field(default="", exclude=True)
    hits: list[InlineHit]
    same_as: dict[str, str] = Field(
        default_factory=dict[str, str],
        description="With same_as: each hit a confirmed referent claim added -> the hit it "
        "was reached from (it follows that hit in the list)",
    )
    total_shown: SkipJsonSchema[int] = Internal
    note: str = ""
    as_of: int | None = Field(
        default=None, description="With as_of: the tick this answer reads the memory at."
    )


class NameLookup(LazyModel):
    node: NodeOut
    resolved_from: str | None = Field(
        default=None, description="When the name belonged to an older revision: its id."
    )
    history: list[NodeOut] = Field(
        default_factory=list[NodeOut],
        description="Older revisions, newest first: the 20 newest (history_left_out says "
        "how many older ones there are beyond them).",
    )
    history_left_out: int = Field(
        default=0,
        description="Older revisions beyond the history listed; chain_history pages "
        "through them (history_next says how).",
    )
    history_next: str | None = Field(
        default=None,
        description="Sent with history_left_out: the chain_history call that reads the "
        "revisions before the oldest listed.",
    )
    as_of: int | None = Field(
        default=None, description="With as_of: the tick this answer reads the memory at."
    )


class Revision(LazyModel):
    id: str
    name: str
    revision_why: str


class Provenance(LazyModel):
    node: NodeOut
    grounding: list[NodeOut] = Field(
        default_factory=list[NodeOut], description="What the node rests on, oldest first"
    )
    edges: list[EdgeOut] = Field(default_factory=list[EdgeOut])
    revisions: list[Revision] = Field(
        default_factory=list[Revision], description="The supersession history, newest first."
    )
    recorded_in: EncounterOut | None = None
    as_of: int | None = Field(
        default=None, description="With as_of: the tick this answer reads the memory at."
    )
    same_as: list[NodeOut] = Field(
        default_factory=list[NodeOut],
        description="With same_as: nodes confirmed to be the same referent; their grounding "
        "is included",
    )
    depth: SkipJsonSchema[int] = Internal
    grounding_total: int | None = Field(
        default=None,
        description="Sent when the answer was cut to fit its size limit: how many grounding "
        "nodes there were in all (ask again with a smaller depth, or trace one of them)",
    )
    edges_total: int | None = Field(
        default=None, description="Sent with grounding_total: how many edges there were in all"
    )
