"""Tool-call fuzzing over a real MCP client session, shared by the fuzz test and its bench.

Arguments are drawn from each served tool's inputSchema (so a new tool or field
is fuzzed without a change here), with domain pools for the values that make
calls meet each other: a few session ids, so advances, writes and seals of one
session interleave with the others'; a few node names, so relations, deletions
and supersessions resolve. About half the calls are then mutated (a wrong type,
an unknown key, a huge or NUL-bearing string, deep nesting, a missing field ...).

After every call: a success, or an MCP tool error in our words (never the SDK's
bare "Error executing tool X", which is what an unhandled exception becomes);
after every failed call, the store's fingerprint unchanged.
"""

from __future__ import annotations

import re
import reprlib
import tempfile
from collections import Counter
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, TypeVar, cast

from hypothesis import strategies as st
from mcp import Client

from kenning_encounter.config import load_settings
from kenning_encounter.server.app import build_server
from kenning_encounter.server.context import Runtime
from kenning_encounter.server.holds import split_handle
from kenning_encounter.store.port import GraphStore
from kenning_encounter.vocabulary import (
    AUTHORED_NODE_TYPES,
    AUTHORED_RELATION_TYPES,
    HYPOTHESIS_STATUSES,
    NODE_TYPES,
    PROCESS_NODE_TYPES,
    PROCESS_RELATION_TYPES,
    QUESTION_STATUSES,
    RELATION_TYPES,
)
from tests.support.handles import TEST_SESSION_KEY, handle
from tests.support.invariants import StoreView, assert_store_invariants
from tests.support.snapshot import snapshot

T = TypeVar("T")
Draw = Callable[[st.SearchStrategy[T]], T]

SESSIONS = ("fz-alpha", "fz-beta", "fz-gamma")
# The first eight are seeded at the start of every run; the rest are free until drawn.
NAMES = ("storm", "spike", "idea", "guess", "ask", "note", "client.py", "paper", "later", "aside")
PROJECTIONS = ("p1", "p2")
NODE_TYPE_NAMES = (*AUTHORED_NODE_TYPES, *PROCESS_NODE_TYPES, "Idea")
RELATION_NAMES = (*AUTHORED_RELATION_TYPES, "SUPERSEDES", *PROCESS_RELATION_TYPES, "LIKES")
STATUSES = (*QUESTION_STATUSES, *HYPOTHESIS_STATUSES, "maybe")
NASTY = (
    "",
    " ",
    "\x00",
    "a\x00b",
    "\u202eevil",
    "e\u0301\u0301\u0301",
    "𝔘𝔫𝔦𝔠𝔬𝔡𝔢 🌩️",
    "\udcff",
    "\ufeffbom",
    "name'; DROP",
    "`backtick`",
    "$param",
    "E1",
    "enc_0123456789ab",
    "loc_0123456789ab",
    "\r\n",
)
# World times a node may state, the calendar's ends among them (a record may sit at year 1
# or 9999, and every reader that widens a time by a day must hold there).
TIMES = (
    "2026-03-02T09:00:00Z",
    "2026-03-02",
    "2026-03-02T09:00:00+14:00",
    "0001-01-01T00:00:00Z",
    "0001-01-01",
    "9999-12-31T23:59:59Z",
    "9999-12-31",
    "0001-01-01T00:00:00+14:00",  # year 0 in UTC: refused by field
    "9999-12-31T23:00:00-12:00",  # year 10000 in UTC
)
RETENTIONS = ("P30D", "PT36H", "P200Y", "P3000000D", "2027-01-31", "0001-01-01T00:00:00+14:00")
# ``as_of``: ticks and times, both ends of each.
AS_OF = (0, 1, 3, 2**31, "2026-03-02T09:00:00Z", *TIMES[3:])
# ``when`` and time-shaped prompts: dates, ranges, relative times, events the seeded names make.
WHENS = (
    "last week",
    "in March 2026",
    "2026-03-01..2026-03-03",
    "0001-01-01..9999-12-31",
    "2026-03-01..9999-12-31",
    "..9999-12-31",
    "0001-01-01T00:00:00+14:00..",
    "before 0001-01-01",
    "after 9999-12-31",
    "since 0001-01-01",
    "during the storm",
    "before the spike",
    "after the storm",
    "until the idea",
)
QUERIES = (
    "MATCH (n) RETURN n.name LIMIT 5",
    "MATCH (n:Note) WHERE n.name = $name RETURN n.name",
    "RETURN $x AS x",
    "MATCH (a)-[r]->(b) RETURN a.name, b.name LIMIT 10",
    "MATCH (e:Encounter) RETURN e.name, e.summary",
    "UNWIND range(1, 10) AS i RETURN i",
    "CREATE (n:Note {id: 'not_000000000000', name: 'x'})",
    "MATCH (n) DETACH DELETE n",
    "MATCH (n:Concept) SET n.name = 'pwned'",
    "/* **/ '*/ MATCH (n) DETACH DELETE n //'\nRETURN 1",
    "COMMIT; MATCH (n) DETACH DELETE n",
    "COPY (MATCH (n) RETURN n) TO '/tmp/kenning-fuzz-leak.csv'",
    "LOAD FROM '/etc/passwd' RETURN *",
    "// note\rMATCH (n) DETACH DELETE n",
    "RETURN " + "[" * 1000 + "]" * 1000,
    "UNWIND range(1, 2000000000) AS i RETURN count(i)",
    "RETURN range(1, 20000000)",
    "MATCH (n) RETURN n; MATCH (m) RETURN m",
    "CALL db.labels()",
)
PARAMS: tuple[Any, ...] = (
    None,
    {},
    {"x": "a"},
    {"x": ["a", 0]},
    {"x": [1, "b", None]},
    {"x": [[1], ["a"]]},
    {"x": {"k": [True, 1.5]}},
    {"name": "note"},
    {"x": 2**70},
    {"x": -(2**63) - 1},
    {"x": 1e308},
    {"x": "\x00"},
    {"": 1, "1bad": 2},
)
WRONG_VALUES: tuple[Any, ...] = (
    0,
    -1,
    2**64,
    -(2**63),
    1.5,
    True,
    None,
    [],
    {},
    ["a", 0],
    {"x": 1},
    "text",
)
NUMBERS = (-1, 0, 1, 2**31, -(2**31), 2**63, 2**64, 10**30, -(10**30), 1e308, -0.0, 0.5)
HUGE = (201, 2_001, 20_001, 100_000, 1_000_000)
# Past about 250 levels (with the envelope) the MCP client itself refuses to serialize; the HTTP fault
# tests send deeper bodies over the wire.
DEPTHS = (10, 100, 240)
MUTATIONS = (
    "wrong_type",
    "unknown_key",
    "huge_string",
    "deep_nesting",
    "nul",
    "unicode",
    "number",
    "missing_required",
    "empty",
    "too_many",
)
# Write tools weigh more, so sessions build a graph worth relating, superseding and deleting.
WEIGHTS = {
    "advance_encounter": 8,
    "close_encounter": 2,
    "create_entities": 10,
    "create_relations": 7,
    "delete_entities": 2,
    "delete_relations": 2,
}
BARE = re.compile(r"^(?:\s*Error executing tool \S+?:?)+\s*$")
PYDANTIC_TEXT = ("validation error", "errors.pydantic.dev", "Extra inputs", "Input should be")


SEED_REFERENCES = (
    {
        "type": "Component",
        "name": "client.py",
        "source_kind": "file",
        "source_label": "repo",
        "source_key": "client.py",
    },
    {"type": "Citation", "name": "paper", "kind": "paper", "uri": "https://example.org/paper"},
)
SEED_TYPES = {
    "storm": "Observation",
    "spike": "Observation",
    "idea": "Concept",
    "guess": "Hypothesis",
    "ask": "Question",
    "note": "Note",
}
# What each pooled name is once seeded, so relations can be drawn that the endpoint rules allow.
NAME_TYPES = {**SEED_TYPES, "client.py": "Component", "paper": "Citation"}


# --- valid shapes from the schema ------------------------------------------------------
def _text(draw: Draw[Any], words: tuple[str, ...] = NAMES) -> str:
    picked = draw(st.lists(st.sampled_from(words), min_size=1, max_size=4))
    return " ".join(picked)


def _entity(draw: Draw[Any]) -> dict[str, Any]:
    name = draw(st.sampled_from(NAMES))
    revising = name in NAME_TYPES and not _rarely(draw)
    # A seeded name is taken, so mostly a revision of it (same type, same name); others free.
    kind = NAME_TYPES[name] if revising else draw(st.sampled_from(AUTHORED_NODE_TYPES))
    out: dict[str, Any] = {"type": kind, "name": name}
    if draw(st.booleans()):
        out["description"] = _text(draw)
    statuses = NODE_TYPES[kind].statuses
    if statuses and draw(st.booleans()):
        out["status"] = draw(st.sampled_from(statuses))
    if kind == "Observation" and draw(st.booleans()):
        out["t_observed"] = draw(st.sampled_from(TIMES))
    if kind not in ("Component", "Citation") and draw(st.integers(0, 3)) == 0:
        out["valid_from"] = draw(st.sampled_from(TIMES))
        if draw(st.booleans()):
            out["valid_until"] = draw(st.sampled_from(TIMES))  # sometimes before valid_from
    if draw(st.integers(0, 5)) == 0:
        out["retention"] = draw(st.sampled_from(RETENTIONS))
    if kind == "Component":
        out |= {"source_kind": "file", "source_label": "repo"}
        out["source_key"] = draw(st.sampled_from(("a.py", "b.py", "c.py")))
    if kind == "Citation":
        out |= {"kind": "web", "uri": "https://example.org/" + draw(st.sampled_from("abc"))}
    if revising or draw(st.integers(0, 19)) in range(5, 10):
        out["supersedes"] = name if revising else draw(st.sampled_from(NAMES))
        if not _rarely(draw):
            out["revision_why"] = _text(draw)
    return out


def _rarely(draw: Draw[Any]) -> bool:
    # Hypothesis favours the bounds of a range (0 and 19), so the rare case is one inside it.
    return draw(st.integers(0, 19)) == 7


def _relation(draw: Draw[Any]) -> dict[str, Any]:
    kind = draw(st.sampled_from(RELATION_NAMES if _rarely(draw) else AUTHORED_RELATION_TYPES))
    pairs = [
        (a, b)
        for a, ta in NAME_TYPES.items()
        for b, tb in NAME_TYPES.items()
        if a != b and kind in RELATION_TYPES and (ta, tb) in RELATION_TYPES[kind].pairs()
    ]
    if pairs and not _rarely(draw):  # mostly endpoints the rules allow, so links land
        source, target = draw(st.sampled_from(pairs))
    else:
        source, target = draw(st.sampled_from(NAMES)), draw(st.sampled_from(NAMES))
    out: dict[str, Any] = {"source": source, "type": kind, "target": target}
    if (kind == "SUPERSEDES") != _rarely(draw):
        out["revision_why"] = _text(draw)
    return out


def _hint(draw: Draw[Any], tool: str, key: str) -> Any:
    """A domain value for a string-ish field named ``key``, or ``...`` for the generic one."""
    if key == "session_id":
        return draw(st.sampled_from(SESSIONS))
    if key == "name":
        pool = PROJECTIONS if tool.startswith("gds_") else NAMES
        return draw(st.sampled_from(pool))
    if key in ("source", "target", "ref", "refs", "supersedes", "around"):
        return draw(st.sampled_from(NAMES))
    if key == "type":
        return draw(st.sampled_from(RELATION_NAMES))
    if key in ("types", "node_types"):
        return draw(st.sampled_from(NODE_TYPE_NAMES))
    if key == "status":
        return draw(st.sampled_from(STATUSES))
    if key == "encounter":
        return draw(st.sampled_from(("E1", "E2", "E3", "E4", "E9")))
    if key == "query":
        return draw(st.sampled_from(QUERIES)) if tool == "read_cypher" else _timed(draw)
    if key == "as_of":
        return draw(st.sampled_from(AS_OF))
    if key == "when":
        return draw(st.sampled_from(WHENS))
    if key in ("purpose", "summary", "close_summary", "description", "revision_why"):
        return _text(draw)
    if key in ("prompt", "trajectory"):
        return _timed(draw)
    return ...


def _timed(draw: Draw[Any]) -> str:
    """Words of the pool, sometimes with a time or an event after them."""
    text = _text(draw)
    return f"{text} {draw(st.sampled_from(WHENS))}" if draw(st.booleans()) else text


def _resolve(schema: Mapping[str, Any], defs: Mapping[str, Any]) -> Mapping[str, Any]:
    ref = schema.get("$ref")
    if isinstance(ref, str):
        return cast(Mapping[str, Any], defs[ref.rsplit("/", 1)[-1]])
    return schema


def from_schema(
    draw: Draw[Any], schema: Mapping[str, Any], defs: Mapping[str, Any], tool: str, key: str
) -> Any:
    schema = _resolve(schema, defs)
    if schema.get("title") == "EntityIn":
        return _entity(draw)
    if schema.get("title") == "RelationIn":
        return _relation(draw)
    if "anyOf" in schema:
        options = [s for s in schema["anyOf"] if s.get("type") != "null"]
        if not options or draw(st.integers(0, 5)) == 0:
            return None
        return from_schema(draw, draw(st.sampled_from(options)), defs, tool, key)
    if key == "params" and tool == "read_cypher":
        return draw(st.sampled_from(PARAMS))
    kind = schema.get("type")
    if kind == "object":
        props = cast(Mapping[str, Any], schema.get("properties", {}))
        required = set(schema.get("required", ()))
        out: dict[str, Any] = {}
        for name, sub in props.items():
            if name in required or draw(st.booleans()):
                out[name] = from_schema(draw, sub, defs, tool, name)
        return out
    if kind == "array":
        low = int(schema.get("minItems", 0))
        size = draw(st.integers(low, max(low, 3)))
        return [from_schema(draw, schema["items"], defs, tool, key) for _ in range(size)]
    if kind == "integer":
        return draw(st.integers(int(schema.get("minimum", -5)), int(schema.get("maximum", 50))))
    if kind == "boolean":
        return draw(st.booleans())
    hinted = _hint(draw, tool, key)
    if hinted is not ...:
        return hinted
    return draw(st.text(min_size=int(schema.get("minLength", 0)), max_size=12))


# --- mutations -------------------------------------------------------------------------
Path_ = tuple[str | int, ...]


def _paths(value: Any, at: Path_ = ()) -> list[tuple[Path_, Any]]:
    found: list[tuple[Path_, Any]] = [(at, value)] if at else []
    if isinstance(value, dict):
        for k, v in cast(dict[str, Any], value).items():
            found += _paths(v, (*at, k))
    elif isinstance(value, list):
        for i, v in enumerate(cast(list[Any], value)):
            found += _paths(v, (*at, i))
    return found


def _replace(value: Any, at: Path_, new: Any) -> Any:
    if not at:
        return new
    head, rest = at[0], at[1:]
    if isinstance(value, dict):
        copy = dict(cast(dict[str, Any], value))
        copy[cast(str, head)] = _replace(copy[cast(str, head)], rest, new)
        return copy
    copy_list = list(cast(list[Any], value))
    copy_list[cast(int, head)] = _replace(copy_list[cast(int, head)], rest, new)
    return copy_list


def _nested(depth: int, as_list: bool) -> Any:
    value: Any = "deep"
    for _ in range(depth):
        value = [value] if as_list else {"k": value}
    return value


def mutate(
    draw: Draw[Any], arguments: dict[str, Any], schema: Mapping[str, Any]
) -> tuple[dict[str, Any], str]:
    kind = draw(st.sampled_from(MUTATIONS))
    paths = _paths(arguments)
    strings = [(p, v) for p, v in paths if isinstance(v, str)]
    lists = [(p, v) for p, v in paths if isinstance(v, list)]
    if kind == "missing_required":
        required = [k for k in schema.get("required", ()) if k in arguments]
        if required:
            drop = draw(st.sampled_from(required))
            return {k: v for k, v in arguments.items() if k != drop}, kind
        kind = "unknown_key"
    if kind == "unknown_key":
        # read_cypher's params is a map of free keys: a new key there is no mistake.
        dicts = [((), arguments)] + [
            (p, v) for p, v in paths if isinstance(v, dict) and p[0] != "params"
        ]
        at, target = draw(st.sampled_from(dicts))
        key = draw(st.sampled_from(("colour", "Name", "session", "__proto__", "\x00", "")))
        return _replace(arguments, at, {**cast(dict[str, Any], target), key: "x"}), kind
    if kind == "too_many" and lists:
        at, items = draw(st.sampled_from(lists))
        return _replace(arguments, at, list(items) * (5_001 // max(1, len(items)) + 1)), kind
    if kind == "empty" and (lists or strings):
        at, v = draw(st.sampled_from(lists + strings))
        return _replace(arguments, at, [] if isinstance(v, list) else ""), kind
    if kind in ("huge_string", "nul", "unicode") and strings:
        at, v = draw(st.sampled_from(strings))
        if kind == "huge_string":
            new = "x" * draw(st.sampled_from(HUGE))
        elif kind == "nul":
            cut = draw(st.integers(0, len(v)))
            new = v[:cut] + "\x00" + v[cut:]
        else:
            new = draw(st.sampled_from(NASTY) | st.text(max_size=30))
        return _replace(arguments, at, new), kind
    if not paths:  # a tool without arguments: an unknown key is the only mutation
        return {"colour": draw(st.sampled_from(WRONG_VALUES))}, "unknown_key"
    at, _ = draw(st.sampled_from(paths))
    if kind == "deep_nesting":
        new = _nested(draw(st.sampled_from(DEPTHS)), draw(st.booleans()))
        return _replace(arguments, at, new), kind
    if kind == "number":
        return _replace(arguments, at, draw(st.sampled_from(NUMBERS))), kind
    return _replace(arguments, at, draw(st.sampled_from(WRONG_VALUES))), "wrong_type"


# --- running -------------------------------------------------------------------------
@dataclass
class Tally:
    calls: int = 0
    ok: Counter[str] = field(default_factory=lambda: Counter[str]())
    refused: Counter[str] = field(default_factory=lambda: Counter[str]())
    kinds: Counter[str] = field(default_factory=lambda: Counter[str]())
    unhandled: list[str] = field(default_factory=lambda: list[str]())
    off_style: list[str] = field(default_factory=lambda: list[str]())
    failed_writes: list[str] = field(default_factory=lambda: list[str]())
    accepted_malformed: list[str] = field(default_factory=lambda: list[str]())
    transport: list[str] = field(default_factory=lambda: list[str]())
    advanced: set[str] = field(default_factory=lambda: set[str]())
    open_sessions: set[str] = field(default_factory=lambda: set[str]())
    reasons: Counter[str] = field(default_factory=lambda: Counter[str]())
    opened: int = 0
    # The store's snapshot as the last refused call left it, while no call has succeeded
    # since (only a success may change the store): the next call's "before", not read again.
    unchanged: dict[str, Any] | None = None

    @property
    def findings(self) -> list[str]:
        return [
            *self.unhandled,
            *self.off_style,
            *self.failed_writes,
            *self.accepted_malformed,
            *self.transport,
        ]


_REPR = reprlib.Repr()
_REPR.maxlevel, _REPR.maxstring, _REPR.maxother, _REPR.maxlist = 6, 120, 60, 8


def _show(arguments: Any) -> str:
    return _REPR.repr(arguments)  # depth-limited: a fuzzed argument may nest thousands deep


def _gist(text: str) -> str:
    """The refusal's words with names and numbers blurred, so like refusals count together."""
    text = re.sub(r"^(?:Error executing tool \S+?: )+", "", text)
    return re.sub(r"'[^']*'|\d+", "_", text)[:90]


def refusal_problem(tool: str, text: str) -> str | None:
    """Why a refusal's text is not in the house style, or None when it is."""
    if BARE.match(text):
        return "bare"
    for phrase in PYDANTIC_TEXT:
        if phrase in text:
            return f"pydantic text {phrase!r}"
    if "Traceback" in text:
        return "a traceback"
    return None


async def one_call(
    client: Client, store: GraphStore, tool: str, arguments: dict[str, Any], kind: str, t: Tally
) -> None:
    before = t.unchanged if t.unchanged is not None else snapshot(store)
    t.unchanged = None
    t.calls += 1
    t.kinds[kind] += 1
    where = f"{tool}[{kind}] {_show(arguments)}"
    try:
        result = await client.call_tool(tool, arguments)
    except Exception as exc:  # the client or transport gave up: say so, and check the session
        t.transport.append(f"{where}: {type(exc).__name__}: {str(exc)[:200]}")
        await client.list_tools()
        t.unchanged = snapshot(store)
        if t.unchanged != before:
            t.failed_writes.append(f"{where}: changed the store without an answer")
        return
    text = " ".join(getattr(c, "text", "") for c in result.content)
    if not result.is_error:
        t.ok[tool] += 1
        if kind in ("missing_required", "unknown_key"):
            t.accepted_malformed.append(f"{where}: accepted")
        locus = split_handle(str(arguments.get("session_id", "")).strip())[0]
        if tool == "advance_encounter":
            t.opened += 1
            t.advanced.add(locus)
            t.open_sessions.add(locus)
        elif tool == "close_encounter" and not arguments.get("encounter"):
            t.open_sessions.discard(locus)
        return
    t.refused[tool] += 1
    t.reasons[f"{tool}[{kind}]: {_gist(text)}"] += 1
    problem = refusal_problem(tool, text)
    if problem == "bare":
        t.unhandled.append(f"{where}: {text!r}")
    elif problem is not None:
        t.off_style.append(f"{where}: {problem}: {text[:200]!r}")
    t.unchanged = snapshot(store)
    if t.unchanged != before:
        t.failed_writes.append(f"{where}: refused ({text[:120]!r}) yet changed the store")


def draw_call(
    draw: Draw[Any], schemas: Mapping[str, Mapping[str, Any]], open_sessions: set[str]
) -> tuple[str, dict[str, Any], str]:
    names = sorted(schemas)
    weighted = [n for n in names for _ in range(WEIGHTS.get(n, 1))]
    tool = draw(st.sampled_from(weighted))
    schema = schemas[tool]
    defs = cast(Mapping[str, Any], schema.get("$defs", {}))
    arguments = cast(dict[str, Any], from_schema(draw, schema, defs, tool, ""))
    writes = tool in WEIGHTS and tool != "advance_encounter" and "session_id" in arguments
    if writes and open_sessions and not _rarely(draw):
        # Mostly a session that can write, so writes land and meet each other.
        arguments["session_id"] = draw(st.sampled_from(sorted(open_sessions)))
    if tool == "advance_encounter" and not _rarely(draw):
        # Mostly what the session's state asks for: a summary exactly when one is open.
        arguments.pop("close_summary", None)
        if arguments["session_id"] in open_sessions:
            arguments["close_summary"] = _text(draw)
    if tool == "create_entities" and not _rarely(draw):
        unique = {e["name"]: e for e in arguments["entities"]}  # a batch names each node once
        arguments["entities"] = list(unique.values())
    if arguments.get("session_id") in SESSIONS:
        arguments["session_id"] = _held(draw, arguments["session_id"])
    if draw(st.integers(0, 2)) < 2:
        return tool, arguments, "valid"
    mutated, kind = mutate(draw, arguments, schema)
    return tool, mutated, kind


def _held(draw: Draw[Any], session: str) -> str:
    """Mostly the session's handle, as a client that holds it sends; rarely the plain id or
    a forged proof, which must be refused with nothing written once the session exists."""
    if not _rarely(draw):
        return handle(session)
    return draw(st.sampled_from((session, f"{session}~{'a' * 26}")))


async def _seed(client: Client, store: GraphStore, t: Tally) -> None:
    """Two sessions open and half the name pool recorded, so drawn names resolve at once."""
    landed = sum(t.ok.values())
    for i, session in enumerate(SESSIONS[:2]):
        await one_call(
            client,
            store,
            "advance_encounter",
            {"session_id": handle(session), "purpose": "seed"},
            "seed",
            t,
        )
        mine = list(SEED_TYPES.items())[i::2]
        entities = [
            {"type": kind, "name": name, "description": f"the {name}"} for name, kind in mine
        ]
        entities.append(SEED_REFERENCES[i])
        await one_call(
            client,
            store,
            "create_entities",
            {"session_id": handle(session), "entities": entities},
            "seed",
            t,
        )
    # One link, so projections have an edge to rank from the start.
    link = {"source": "storm", "type": "GROUNDS", "target": "idea"}
    arguments = {"session_id": handle(SESSIONS[0]), "relations": [link]}
    await one_call(client, store, "create_relations", arguments, "seed", t)
    assert sum(t.ok.values()) == landed + 5, f"a seeding call was refused: {t.reasons}"


async def fuzz_session(
    draw: Draw[Any], calls: int, tally: Tally, neo4j: GraphStore | None = None
) -> StoreView:
    """``calls`` drawn calls against a fresh in-process server; the store's final view.

    ``neo4j``, an emptied Neo4j store the caller opened, serves instead of a new
    embedded one (the server closes it at the end).
    """
    with tempfile.TemporaryDirectory(prefix="kenning-fuzz-") as tmp:
        config = load_settings(
            data_dir=Path(tmp) / "memory", matcher="off", session_key=TEST_SESSION_KEY
        )
        if neo4j is None:
            runtime = Runtime(config)
        else:
            served = neo4j
            runtime = Runtime(config, store_factory=lambda _settings: served)
        async with Client(build_server(config, runtime)) as client:
            listed = (await client.list_tools()).tools
            schemas = {t.name: t.input_schema for t in listed}
            store = runtime.context.store
            opened_before, advanced_before = tally.opened, set(tally.advanced)
            tally.advanced, tally.open_sessions = set(), set()
            tally.unchanged = None  # a snapshot of another session's store, if any
            await _seed(client, store, tally)
            for _ in range(calls):
                tool, arguments, kind = draw_call(draw, schemas, tally.open_sessions)
                await one_call(client, store, tool, arguments, kind, tally)
            view = assert_store_invariants(store)
            # Process nodes come only from the spine tools: one encounter per advance that
            # succeeded, and a locus only for a session that advanced.
            opened = tally.opened - opened_before
            assert len(view.encounters) == opened, f"{len(view.encounters)} != {opened} advances"
            assert set(view.loci) <= tally.advanced, f"loci {view.loci} vs {tally.advanced}"
            tally.advanced |= advanced_before
            return view
