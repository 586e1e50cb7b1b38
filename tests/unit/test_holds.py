"""The session-handle check on its own: proofs, the plain-id rule, and the key file."""

from __future__ import annotations

import os
import stat
import threading
from pathlib import Path
from typing import Any

import pytest

from kenning_encounter.config import load_settings
from kenning_encounter.errors import ConfigError, InvalidInput, SessionNotHeld
from kenning_encounter.server.holds import (
    KEY_FILE,
    MAX_HANDLE,
    PROOF_CHARS,
    Holds,
    SessionKey,
    load_session_key,
    split_handle,
)

KEY = SessionKey(b"0123456789abcdef-unit")
USED = "used-session"


def holds(*used: str) -> Holds:
    return Holds(lambda: KEY, lambda locus: locus in used)


def test_a_handle_is_the_id_a_tilde_and_its_proof() -> None:
    handle = KEY.handle(USED)
    locus, proof = split_handle(handle)
    assert locus == USED and proof is not None and len(proof) == PROOF_CHARS
    assert set(proof) <= set("abcdefghijklmnopqrstuvwxyz234567")
    assert KEY.handle(USED) == handle  # deterministic
    assert SessionKey(b"another key of 16+ bytes").handle(USED) != handle


@pytest.mark.parametrize(
    "value",
    ["plain", "with~tilde", "x~short", f"~{'a' * PROOF_CHARS}", f"x~{'A' * PROOF_CHARS}"],
)
def test_what_is_not_a_handle_is_a_plain_id(value: str) -> None:
    assert split_handle(value) == (value, None)


def test_only_the_exact_proof_is_accepted() -> None:
    proof = KEY.proof(USED)
    check = holds(USED)
    assert check.claim(f"{USED}~{proof}") == USED
    near: set[str] = set()
    for i, ch in enumerate(proof):
        for other in "a2z7":
            if other != ch:
                near.add(proof[:i] + other + proof[i + 1 :])
    near |= {proof[:-1] + "a" if proof[-1] != "a" else proof[:-1] + "b", proof[::-1]}
    for forged in sorted(near):
        with pytest.raises(SessionNotHeld, match="not the handle of session"):
            check.claim(f"{USED}~{forged}")
    # A prefix or an extension is not a handle at all: read as a plain id of a new session.
    for cut in (proof[:8], proof[:-1], proof + "a"):
        locus, found = split_handle(f"{USED}~{cut}")
        assert found is None and locus != USED


def test_a_plain_id_opens_only_an_unused_session() -> None:
    check = holds(USED)
    assert check.claim("fresh-session") == "fresh-session"
    with pytest.raises(SessionNotHeld, match="held by the client that opened it") as refused:
        check.claim(USED)
    assert refused.value.field == "session_id"
    assert f"session_id='{USED}~...'" in str(refused.value)
    assert check.claim(f"  {KEY.handle(USED)}  ") == USED  # surrounding blanks are trimmed


def test_a_handle_of_a_long_id_fits_and_a_longer_value_is_refused() -> None:
    longest = "s" * 200
    assert holds(longest).claim(KEY.handle(longest)) == longest
    with pytest.raises(InvalidInput, match="longer than"):
        holds().claim("s" * (MAX_HANDLE + 1))
    with pytest.raises(InvalidInput, match="is required"):
        holds().claim("   ")


def test_the_key_file_is_minted_once_and_private(tmp_path: Path) -> None:
    settings = load_settings(data_dir=tmp_path / "memory", session_key=None)
    first = load_session_key(settings)
    path = tmp_path / "memory" / KEY_FILE
    assert stat.S_IMODE(os.stat(path).st_mode) == 0o600
    assert load_session_key(settings).handle(USED) == first.handle(USED)
    path.write_text("not hex\n")
    with pytest.raises(ConfigError, match="delete it to mint a new one"):
        load_session_key(settings)


def test_a_configured_key_wins_and_must_be_long_enough(tmp_path: Path) -> None:
    settings = load_settings(data_dir=tmp_path / "memory", session_key="k" * 16)
    assert load_session_key(settings).handle(USED) == SessionKey(b"k" * 16).handle(USED)
    assert not (tmp_path / "memory" / KEY_FILE).exists()
    with pytest.raises(ConfigError, match="session_key"):
        load_settings(data_dir=tmp_path / "memory", session_key="short")


@pytest.mark.parametrize(
    ("make", "says"),
    [
        (lambda p: p.write_text(""), "it is empty"),
        (lambda p: p.write_text("not hex"), "it is not a hex key"),
        (lambda p: p.write_text("ab" * 8 + "\n"), "it holds 8 bytes, not 16 or more"),
        (lambda p: p.mkdir(), "Is a directory"),
        (lambda p: p.write_bytes(b"\xff\xfe"), "cannot be used"),
    ],
)
def test_a_key_file_that_cannot_be_used_is_named_with_its_fix(
    tmp_path: Path, make: Any, says: str
) -> None:
    settings = load_settings(data_dir=tmp_path / "memory", session_key=None)
    path = tmp_path / "memory" / KEY_FILE
    path.parent.mkdir()
    make(path)
    with pytest.raises(ConfigError) as refused:
        load_session_key(settings)
    message = str(refused.value)
    assert str(path) in message and says in message and "delete it to mint a new one" in message


def test_a_key_is_minted_whole_or_not_at_all(tmp_path: Path) -> None:
    settings = load_settings(data_dir=tmp_path / "memory", session_key=None)
    folder = tmp_path / "memory"
    folder.mkdir()
    # What a mint killed before its link leaves: a temporary file, never the key file.
    (folder / f".{KEY_FILE}.4242.deadbeef").write_text("")
    keys: list[str] = []
    threads = [
        threading.Thread(target=lambda: keys.append(load_session_key(settings).handle(USED)))
        for _ in range(8)
    ]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert len(keys) == 8 and len(set(keys)) == 1  # every racer reads the one minted key
    assert len(bytes.fromhex((folder / KEY_FILE).read_text().strip())) == 32
    assert sorted(p.name for p in folder.iterdir()) == sorted(
        [KEY_FILE, f".{KEY_FILE}.4242.deadbeef"]
    )
