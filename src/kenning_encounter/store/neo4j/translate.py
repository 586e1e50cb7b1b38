"""Driver failures as our errors, in one place for the store and its GDS door."""

from __future__ import annotations

import contextlib
from collections.abc import Generator

from kenning_encounter.errors import EngineError, KenningError, StoreUnavailable


@contextlib.contextmanager
def translated(uri: str, doing: str) -> Generator[None]:
    """Driver failures while ``doing`` as our errors; our own errors pass through.

    ``uri`` must be the redacted one: these messages reach the model.
    """
    from neo4j.exceptions import AuthError, DriverError, Neo4jError, ServiceUnavailable

    try:
        yield
    except KenningError:
        raise
    except AuthError as exc:
        raise StoreUnavailable(
            f"Neo4j at {uri} refused the credentials while {doing}: {exc.message}; "
            "check NEO4J_USERNAME and NEO4J_PASSWORD"
        ) from exc
    except ServiceUnavailable as exc:
        raise StoreUnavailable(
            f"no Neo4j answered at {uri} while {doing} ({exc}); start the server "
            "or point NEO4J_URI at a running one"
        ) from exc
    except Neo4jError as exc:
        code, message = exc.code or "", exc.message or ""
        raise EngineError(
            f"Neo4j failed while {doing}: {code}: {message}", code=code, detail=message
        ) from exc
    except DriverError as exc:
        raise StoreUnavailable(f"the Neo4j driver failed while {doing}: {exc}") from exc
