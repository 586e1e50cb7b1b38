"""Driver failures as our errors, in one place for the store and its GDS door."""

from __future__ import annotations

import contextlib
import re
from collections.abc import Generator

from kenning_encounter.errors import EngineError, KenningError, StoreError, StoreUnavailable

# A commit the server failed after logging it: recovery may apply it (a full disk did).
COMMIT_UNKNOWN = ("Neo.DatabaseError.Transaction.TransactionCommitFailed",)


# The server's words for an index or constraint that is not there (dropped under a running
# server: a store makes its schema only when it opens).
_SCHEMA_GONE = re.compile(
    r"(?:no such (?:\w+ )*index|(?:index|constraint) .{0,80}?does not exist)\W*`?(\w*)",
    re.IGNORECASE,
)


def schema_gone(uri: str, doing: str, message: str) -> StoreError | None:
    """The error for a statement that met an index or constraint of ours missing, or None."""
    found = _SCHEMA_GONE.search(message)
    if found is None:
        return None
    name = f" {found.group(1)}" if found.group(1) else ""
    return StoreError(
        f"Neo4j at {uri} has no index{name} while {doing}: it was dropped from the database "
        "while this server ran; restart the server, which makes the memory's indexes and "
        "constraints again (nothing of the memory is lost: an index is built from its nodes)"
    )


def _first(message: str) -> str:
    """A server message's first sentence (the rest lists transaction internals)."""
    head = message.split(": Transaction #", 1)[0].strip()
    return head if len(head) <= 300 else head[:300] + "…"


def unreachable_reason(exc: BaseException) -> str:
    """What the driver met, in a few words (its own text repeats addresses and layers)."""
    text = str(exc)
    lowered = text.lower()
    if "refused" in lowered:
        return "connection refused"
    if "timed out" in lowered or "timeout" in lowered:
        return "no answer in time"
    if "defunct" in lowered or "closed" in lowered or "reset" in lowered:
        return "the connection was lost"
    first = text.strip().splitlines()[0] if text.strip() else type(exc).__name__
    return first[:200]


def not_answering(
    uri: str, why: str, doing: str, *, write: bool, serving: bool = True
) -> StoreUnavailable:
    """The server did not answer: nothing of a write was applied (the server rolls back
    a transaction whose connection is gone), and a ``serving`` store uses it again once
    it answers (one still opening does not open)."""
    written = " Nothing of this write was applied." if write else ""
    again = "; this server uses it again as soon as it answers, no restart needed"
    return StoreUnavailable(
        f"Neo4j at {uri} is not answering ({why}) while {doing}.{written} Start it or "
        f"point NEO4J_URI at a running one{again if serving else ''}"
    )


@contextlib.contextmanager
def translated(
    uri: str, doing: str, *, write: bool = False, serving: bool = True
) -> Generator[None]:
    """Driver failures while ``doing`` as our errors; our own errors pass through.

    ``uri`` must be the redacted one: these messages reach the model. A ``write``
    that failed before its commit was sent says nothing of it was applied (the
    server rolls back a transaction whose connection is gone); one lost while
    committing says it may or may not have been.
    """
    from neo4j.exceptions import (
        AuthError,
        DriverError,
        IncompleteCommit,
        Neo4jError,
        ServiceUnavailable,
        SessionExpired,
    )

    try:
        yield
    except KenningError:
        raise
    except AuthError as exc:
        raise StoreUnavailable(
            f"Neo4j at {uri} refused the credentials while {doing}: {exc.message}; "
            "check NEO4J_USERNAME and NEO4J_PASSWORD"
        ) from exc
    except IncompleteCommit as exc:
        raise StoreUnavailable(
            f"Neo4j at {uri} stopped answering while {doing}, with the commit already "
            "sent: it may or may not have been applied. Once Neo4j answers, look "
            "(find_by_name, search) before doing it again"
        ) from exc
    except (ServiceUnavailable, SessionExpired) as exc:
        raise not_answering(
            uri, unreachable_reason(exc), doing, write=write, serving=serving
        ) from exc
    except Neo4jError as exc:
        code, message = exc.code or "", exc.message or ""
        if write and code in COMMIT_UNKNOWN:
            raise EngineError(
                f"Neo4j at {uri} failed to commit while {doing} ({code}): it may or may not "
                "have been applied (what it logged before failing, it applies when it "
                "recovers). See the Neo4j logs (a full disk is one cause); once it answers, "
                "look (find_by_name, search) before doing it again",
                code=code,
                detail=message,
            ) from exc
        gone = schema_gone(uri, doing, message) if code.startswith("Neo.ClientError.") else None
        if gone is not None:
            raise gone from exc
        if code.startswith("Neo.DatabaseError."):
            raise EngineError(
                f"Neo4j at {uri} failed while {doing}: {code}: {_first(message)}; the "
                "server's own failure, not the request's: see its logs (a full disk is one "
                "cause)",
                code=code,
                detail=message,
            ) from exc
        raise EngineError(
            f"Neo4j failed while {doing}: {code}: {message}", code=code, detail=message
        ) from exc
    except DriverError as exc:
        raise StoreUnavailable(f"the Neo4j driver failed while {doing}: {exc}") from exc
