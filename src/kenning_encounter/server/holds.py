"""Sessions are held, not named (DESIGN §3, invariant 9).

A session id is no secret: read_cypher lists every Locus, transcripts carry
it, a re-entry note names the session an unsealed encounter belongs to. What
lets a caller write into a session, seal it or take its infusions is the
session's *handle*: the id, ``~``, and a MAC of the id under the memory's
session key. The handle is handed to whoever opens the session: the
SessionStart hook while the id is still unused, or the MCP client whose
advance_encounter opens it.

Every call that acts for a session shows its handle; the one exception is
the call that opens an id nobody has used yet, which is how every session
starts.

The key is derived, never stored in the graph (read_cypher would show it): it
comes from KENNING_ENCOUNTER_SESSION_KEY, or from a ``session.key`` file the
server creates beside its memory with mode 0600.
"""

from __future__ import annotations

import base64
import contextlib
import hashlib
import hmac
import logging
import os
import secrets
import threading
from collections.abc import Callable
from pathlib import Path
from typing import Final

from kenning_encounter.config import Settings
from kenning_encounter.errors import ConfigError, InvalidInput, SessionNotHeld
from kenning_encounter.memory import validate

log = logging.getLogger(__name__)

SEPARATOR: Final = "~"
PROOF_CHARS: Final = 26  # 128 bits, lower-case base32 without padding
KEY_FILE: Final = "session.key"
_KEY_BYTES: Final = 32
_PROOF_ALPHABET: Final = frozenset("abcdefghijklmnopqrstuvwxyz234567")
MAX_HANDLE: Final = validate.MAX_SESSION_ID + 1 + PROOF_CHARS


class SessionKey:
    """Mints and checks handles. Deterministic: one id has one handle per key."""

    def __init__(self, secret: bytes) -> None:
        if len(secret) < 16:
            raise ConfigError("session key: needs at least 16 bytes of secret")
        self._secret = secret

    def proof(self, locus: str) -> str:
        mac = hmac.new(self._secret, locus.encode(), hashlib.sha256).digest()[:16]
        return base64.b32encode(mac).decode().rstrip("=").lower()

    def handle(self, locus: str) -> str:
        return f"{locus}{SEPARATOR}{self.proof(locus)}"

    def proves(self, locus: str, proof: str) -> bool:
        return hmac.compare_digest(self.proof(locus), proof)


def split_handle(value: str) -> tuple[str, str | None]:
    """``(session id, proof)``; the proof is None for a plain id."""
    head, sep, tail = value.rpartition(SEPARATOR)
    if sep and head and len(tail) == PROOF_CHARS and set(tail) <= _PROOF_ALPHABET:
        return head, tail
    return value, None


def _key_from_file(path: Path) -> bytes:
    """The key in ``path``, minted there first when there is none. Minted whole or not at
    all: written to a file of its own, then linked into place (a process killed while
    writing left an empty key file, and every later session call was refused)."""
    try:
        text = path.read_text(encoding="ascii")
    except FileNotFoundError:
        return _mint(path)
    except (OSError, ValueError) as exc:
        raise ConfigError(_bad_key_file(path, getattr(exc, "strerror", None) or str(exc))) from None
    if not text.strip():
        raise ConfigError(_bad_key_file(path, "it is empty"))
    try:
        secret = bytes.fromhex(text.strip())
    except ValueError:
        raise ConfigError(_bad_key_file(path, "it is not a hex key")) from None
    if len(secret) < 16:
        raise ConfigError(_bad_key_file(path, f"it holds {len(secret)} bytes, not 16 or more"))
    return secret


def _bad_key_file(path: Path, why: str) -> str:
    return (
        f"session key: {path} cannot be used ({why}); delete it to mint a new one (every "
        "handle handed out so far stops working), or set KENNING_ENCOUNTER_SESSION_KEY"
    )


def _mint(path: Path) -> bytes:
    try:
        path.parent.mkdir(parents=True, exist_ok=True, mode=0o700)
        secret = secrets.token_bytes(_KEY_BYTES)
        temp = path.with_name(f".{path.name}.{os.getpid()}.{secrets.token_hex(4)}")
        fd = os.open(temp, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o600)
        try:
            with os.fdopen(fd, "w") as out:
                out.write(secret.hex() + "\n")
                out.flush()
                os.fsync(out.fileno())
            try:
                os.link(temp, path)  # fails if another process minted one first
            except FileExistsError:
                return _key_from_file(path)  # theirs
        finally:
            with contextlib.suppress(OSError):
                os.unlink(temp)
    except OSError as exc:
        raise ConfigError(_bad_key_file(path, exc.strerror or str(exc))) from None
    log.info("minted a session key at %s", path)
    return secret


def load_session_key(settings: Settings) -> SessionKey:
    if settings.session_key is not None:
        return SessionKey(settings.session_key.get_secret_value().encode())
    return SessionKey(_key_from_file(settings.resolved_data_dir / KEY_FILE))


Exists = Callable[[str], bool]


class Holds:
    """The one check every call that acts for a session passes.

    The MCP protocol this server speaks is stateless (every request is its own
    connection), so nothing is remembered per client: each call shows its
    handle, except the one that opens an unused id.
    """

    def __init__(self, key: Callable[[], SessionKey], exists: Exists) -> None:
        self._key_of = key
        self._key: SessionKey | None = None
        self._exists = exists
        self._lock = threading.Lock()

    @property
    def key(self) -> SessionKey:
        # Loaded on first use: a server nobody acts through never creates a key file.
        with self._lock:
            if self._key is None:
                self._key = self._key_of()
            return self._key

    def handle(self, locus: str) -> str:
        return self.key.handle(locus)

    def claim(self, value: str, field: str = "session_id") -> str:
        """The plain session id ``value`` names, once its caller may act for it.

        Refused with ``SessionNotHeld`` for a forged proof, or a plain id of a
        session that exists. Nothing is written either way.
        """
        raw = value.strip()
        if len(raw) > MAX_HANDLE:
            raise InvalidInput(field, f"is longer than {MAX_HANDLE} characters (a handle)")
        locus, proof = split_handle(raw)
        locus = validate.session_id(locus, field)
        if proof is not None:
            if not self.key.proves(locus, proof):
                raise SessionNotHeld(field, locus, forged=True)
            return locus
        if self._exists(locus):
            raise SessionNotHeld(field, locus)
        # Unused: whoever opens it first is its opener (harness ids are random).
        return locus
