"""One exception tree for the whole server.

Every refusal carries the data a caller needs to act (the field, the value it
got, what is allowed) and its message says what to do next. MCP tools turn any
``KenningError`` into the SDK's tool error, so a client sees ``isError: true``
with this message.

    KenningError
    ├── ConfigError                  a setting is missing or malformed
    ├── InvalidInput                 a request is malformed; names field, value, fix
    │   ├── UnknownType              a node or relation type outside the vocabulary
    │   ├── UnknownField             a property the type does not carry
    │   ├── EndpointRule             a relation between types its rules forbid
    │   ├── ProcessTypeForbidden     an attempt to write the process layer directly
    │   └── ReadOnlyViolation        read_cypher input refused; ``layer`` names the defence
    ├── NotFound                     a node, encounter or projection does not exist
    ├── Conflict                     the request contradicts what the memory holds
    │   ├── NameTaken                a live node already carries that name
    │   ├── Withheld                 a name or ref held by a node the caller may not see
    │   ├── NoOpenEncounter          a write with no open encounter for the locus
    │   ├── EncounterSealed          a write or seal aimed at a sealed encounter
    │   ├── NotYourEncounter         a seal or deletion across loci
    │   ├── SessionNotHeld           a session acted for without its handle
    │   └── SupersessionRule         a second successor, a cycle, or a type change
    ├── StoreError                   the backend failed
    │   ├── StoreLocked              another process owns the embedded store
    │   ├── SchemaVersionError       the store was written by a newer version
    │   ├── StoreUnavailable         a server backend cannot be reached
    │   └── EngineError              the database engine refused a statement; ``code`` says how
    └── MatcherError                 the meaning matcher failed (always recovered)
"""

from __future__ import annotations

from collections.abc import Iterable
from typing import ClassVar


class KenningError(Exception):
    """Base of every error the server raises on purpose."""


class ConfigError(KenningError):
    pass


class InvalidInput(KenningError):
    """A request is malformed. ``field`` is a dotted path into the request."""

    def __init__(self, field: str, message: str, *, value: object = None) -> None:
        self.field = field
        self.value = value
        super().__init__(f"{field}: {message}")


def _choices(allowed: Iterable[str]) -> str:
    return ", ".join(sorted(allowed))


class UnknownType(InvalidInput):
    def __init__(self, field: str, value: str, allowed: Iterable[str]) -> None:
        self.allowed = tuple(sorted(allowed))
        super().__init__(
            field,
            f"unknown type {value!r}; use one of: {_choices(self.allowed)}",
            value=value,
        )


class UnknownField(InvalidInput):
    def __init__(self, field: str, type_name: str, allowed: Iterable[str]) -> None:
        self.allowed = tuple(sorted(allowed))
        super().__init__(
            field,
            f"{type_name} has no such property; allowed properties: {_choices(self.allowed)}",
        )


class EndpointRule(InvalidInput):
    def __init__(
        self, field: str, relation: str, end: str, got: str, allowed: Iterable[str]
    ) -> None:
        self.relation = relation
        self.allowed = tuple(sorted(allowed))
        super().__init__(
            field,
            f"{relation} cannot have a {got} at its {end} end; allowed: {_choices(self.allowed)}",
            value=got,
        )


class ProcessTypeForbidden(InvalidInput):
    def __init__(self, field: str, value: str) -> None:
        super().__init__(
            field,
            f"{value} belongs to the process layer, which only advance_encounter and "
            "close_encounter write; record semantic or reference nodes instead",
            value=value,
        )


class NotFound(KenningError):
    def __init__(self, what: str, ref: str, hint: str = "") -> None:
        self.what = what
        self.ref = ref
        tail = f"; {hint}" if hint else ""
        super().__init__(f"no {what} {ref!r}{tail}")


class Conflict(KenningError):
    pass


class NameTaken(Conflict):
    def __init__(self, field: str, name: str, existing_id: str, *, head: str | None = None) -> None:
        self.field = field
        self.name = name
        self.existing_id = existing_id
        if head is None or head == existing_id:
            message = (
                f"{field}: a live node named {name!r} exists already ({existing_id}); "
                "choose another name, or revise it by creating a node with "
                f'"supersedes": "{name}" and a revision_why'
            )
        else:  # an earlier version of a chain had the name, and its chain keeps it
            message = (
                f"{field}: {name!r} is the name of an earlier version ({existing_id}) of the "
                f"chain whose live version is {head}, and still finds that chain; choose "
                f'another name, or revise that chain ("supersedes": "{head}") to take it back'
            )
        super().__init__(message)


class Withheld(Conflict):
    """A write met a node its caller is not granted to see (memory/gates.py): refused, as
    integrity asks, but saying nothing of the node (no id, no text) beyond that it is."""

    def __init__(self, field: str, held: str, fix: str) -> None:
        self.field = field
        super().__init__(
            f"{field}: {held} a node this server is not granted to see (it is classified "
            f"with a class the server's grant lacks); {fix}"
        )


class NoOpenEncounter(Conflict):
    def __init__(self, session_id: str, detail: str = "") -> None:
        self.session_id = session_id
        extra = f" ({detail})" if detail else ""
        super().__init__(
            f"session {session_id!r} has no open encounter{extra}; call advance_encounter first"
        )


class EncounterSealed(Conflict):
    def __init__(self, encounter: str) -> None:
        self.encounter = encounter
        super().__init__(
            f"encounter {encounter!r} is sealed and takes no writes; "
            "call advance_encounter to open the next one"
        )


class NotYourEncounter(Conflict):
    def __init__(self, message: str) -> None:
        super().__init__(message)


class SessionNotHeld(Conflict):
    """A write, seal or infusion for a session the caller neither opened nor holds the
    handle of (DESIGN §3, invariant 9)."""

    def __init__(self, field: str, session_id: str, *, forged: bool = False) -> None:
        self.field = field
        self.session_id = session_id
        if forged:
            message = (
                f"{field}: this is not the handle of session {session_id!r}; pass the handle "
                "exactly as it was given (the session id, '~', and 26 letters and digits). "
                "Passed as given, it was signed under another session key: every server of "
                "one memory needs the same KENNING_ENCOUNTER_SESSION_KEY (a server without it "
                "makes its own session.key in its data directory, and a new one when that is "
                f"lost); an operator can print the handle this server takes: "
                f"kenning-encounter handle {session_id}"
            )
        else:
            message = (
                f"{field}: session {session_id!r} is held by the client that opened it; pass "
                f"its handle (session_id='{session_id}~...', given at session start and by "
                "advance_encounter), or start a new session with a new session id; an "
                f"operator can recover a lost handle: kenning-encounter handle {session_id}"
            )
        super().__init__(message)


class SupersessionRule(Conflict):
    def __init__(self, field: str, message: str) -> None:
        self.field = field
        super().__init__(f"{field}: {message}")


class ReadOnlyViolation(InvalidInput):
    """read_cypher input refused. ``layer`` names the defence that refused it: "size",
    "gate", "params", "plan", "engine-readonly", "engine", "memory", "busy" or "timeout"."""

    def __init__(
        self, reason: str, *, layer: str = "gate", field: str = "query", writes: bool = False
    ) -> None:
        self.reason = reason
        self.layer = layer
        # The read-only reminder where the query may write (``writes``: a write clause,
        # a procedure or function off the allow-list); a syntax error, a timeout or a
        # full buffer pool is not helped by it.
        hint = (
            ". It runs read-only queries only (MATCH ... RETURN); use the write tools to "
            "change the memory"
            if writes or layer in ("plan", "engine-readonly")
            else ""
        )
        super().__init__(field, f"read_cypher refused: {reason}{hint}")


class StoreError(KenningError):
    pass


class StoreLocked(StoreError):
    def __init__(self, path: str, pid: int | None, url: str | None) -> None:
        self.path = path
        self.pid = pid
        self.url = url
        owner = f"process {pid}" if pid else "another process"
        where = f"; connect to its server at {url} instead" if url else ""
        super().__init__(f"the store at {path} is owned by {owner}{where}")


class SchemaVersionError(StoreError):
    def __init__(self, found: int, supported: int) -> None:
        self.found = found
        self.supported = supported
        super().__init__(
            f"this store was written with schema version {found}, but this "
            f"kenning-encounter supports up to version {supported}; upgrade "
            "kenning-encounter (pip install -U kenning-encounter) to open it"
        )


class StoreUnavailable(StoreError):
    pass


class EngineError(StoreError):
    """The database engine refused or failed one of our statements.

    ``code`` is the engine's own classification (a Neo4j status code such as
    ``Neo.ClientError.Schema.ConstraintValidationFailed``, or the embedded engine's
    exception kind such as ``Binder``); ``detail`` is the engine's message. Validation
    stops bad requests before they reach the engine, so one of these means the store
    and the server disagree: nothing of the failed unit of work was written.
    """

    def __init__(self, message: str, *, code: str = "", detail: str = "") -> None:
        self.code = code
        self.detail = detail
        super().__init__(message)

    # Kinds the embedded store tells in its own words, never quoting what was read: a
    # read or write of its files that failed (a full disk, a disk gone read-only), and
    # its page memory (the buffer pool) too small for the memory.
    IO_FAULT: ClassVar[str] = "IO"
    POOL_FULL: ClassVar[str] = "BufferPool"


class MatcherError(KenningError):
    """The matcher failed; ``reason`` is a short machine-readable cause."""

    def __init__(self, reason: str, detail: str = "") -> None:
        self.reason = reason
        self.detail = detail
        super().__init__(f"{reason}: {detail}" if detail else reason)
