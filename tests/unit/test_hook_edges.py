"""The hook's parts at their exact edges: the boundary a comparison draws, the byte a
bound stops at, the odd input an encoding must survive. Each case here is one a
plausible slip in the hook would get wrong; test_hook_parts.py holds the ordinary cases.
"""

from __future__ import annotations

import hashlib
import json
import os
import time
from pathlib import Path

import pytest

from kenning_encounter.hooks import infuse_hook as h


@pytest.mark.parametrize(
    ("url", "parts"),
    [
        ("http://host/x://y", ("http", "host", 80, "/x://y")),
        ("http://host:9/boX", ("http", "host", 9, "/boX")),
        ("http://host:1", ("http", "host", 1, "")),
        ("http://host:65535", ("http", "host", 65535, "")),
        ("http://[::1]]:9", None),
        ("http://host:8\u00b2", None),  # a digit to str.isdigit, not to int
        ("http://host:\uff18\uff10", None),
    ],
)
def test_split_url_edges(url: str, parts: tuple[str, str, int, str] | None) -> None:
    assert h.split_url(url) == parts


# --------------------------------------------------------------- transcript


def test_the_tail_bound_keeps_a_line_that_starts_right_at_it(tmp_path: Path) -> None:
    # The byte MAX_TAIL_BYTES from the end is a newline: the line after it is whole and
    # read; the line before it lies outside the tail and is not.
    body = b"z" * (h.MAX_TAIL_BYTES - 2)
    path = tmp_path / "t.jsonl"
    path.write_bytes(b"old line\n" + body + b"\n")
    assert path.stat().st_size - h.MAX_TAIL_BYTES == len(b"old line")
    assert list(h.lines_backwards(str(path))) == [body]


def test_a_line_cut_by_the_tail_bound_is_not_read(tmp_path: Path) -> None:
    path = tmp_path / "t.jsonl"
    path.write_bytes(b"q" * (h.MAX_TAIL_BYTES + 100) + b"\nlast\n")
    assert list(h.lines_backwards(str(path))) == [b"last"]


def test_the_first_byte_of_a_file_one_past_a_block_is_read(tmp_path: Path) -> None:
    path = tmp_path / "t.jsonl"
    tail = b"c" * (h.FIRST_BLOCK - 3)
    path.write_bytes(b"ab\n" + tail + b"\n")
    assert path.stat().st_size == h.FIRST_BLOCK + 1
    assert list(h.lines_backwards(str(path))) == [tail, b"ab"]


def test_reminders_are_cut_from_where_each_opens() -> None:
    text = "a</system-reminder>b<system-reminder>c</system-reminder>d"
    assert h.strip_reminders(text) == "a</system-reminder>bd"
    three = "1<system-reminder>x</system-reminder>2<system-reminder>y</system-reminder>3"
    three += "<system-reminder>z</system-reminder>4"
    assert h.strip_reminders(three) == "1234"


def _user(content: object) -> dict[str, object]:
    return {"type": "user", "message": {"role": "user", "content": content}}


def test_only_text_blocks_are_typed_text() -> None:
    assert h.typed_text(_user([{"type": "image", "text": "alt text"}])) is None
    mixed = [{"type": "image", "text": "alt"}, {"type": "text", "text": "typed"}]
    assert h.typed_text(_user(mixed)) == "typed"


def test_text_exactly_at_a_limit_is_kept_whole() -> None:
    assert h.clip("a" * 20, 20) == "a" * 20
    assert h.cap("b" * h.PAYLOAD_CAP) == "b" * h.PAYLOAD_CAP


def _transcript(path: Path, records: list[object]) -> str:
    path.write_text("".join(r if isinstance(r, str) else json.dumps(r) + "\n" for r in records))
    return str(path)


def test_the_trajectory_reads_past_what_it_skips(tmp_path: Path) -> None:
    assistant = {"type": "assistant", "message": {"role": "assistant", "content": "x"}}
    tool = _user([{"type": "tool_result", "content": "a log"}])
    records: list[object] = [
        _user("one"),
        assistant,
        _user("two"),
        '{"type": "user", broken\n',
        _user("three"),
        tool,
        _user("now"),
    ]
    path = _transcript(tmp_path / "t.jsonl", records)
    assert h.trajectory(path, "now", 10) == ["one", "two", "three"]


def test_the_trajectory_stops_at_the_deadline(tmp_path: Path) -> None:
    path = _transcript(tmp_path / "t.jsonl", [_user("one"), _user("now")])
    assert h.trajectory(path, "now", 3, time.monotonic() - 1) == []


# --------------------------------------------------------------------- HTTP


def test_http_edges() -> None:
    assert h.header_value(b"HTTP/1.1 200 OK\r\nX-Time: 12:30", b"x-time") == b"12:30"
    sixteen = b"0123456789abcdef"
    assert h.dechunk(b"10\r\n" + sixteen + b"\r\n0\r\n\r\n") == sixteen
    # Whatever follows the last chunk is a trailer, never more body.
    assert h.dechunk(b"3\r\nabc\r\n0\r\n\r\n3\r\nxyz\r\n") == b"abc"
    assert h.decode_response(b"HTTP/1.1 200\r\n\r\n{}") == {}


# ------------------------------------------------------------------ handles


def _env(tmp_path: Path) -> dict[str, str]:
    return {"XDG_STATE_HOME": str(tmp_path / "state")}


def test_which_session_ids_name_their_handle_file(tmp_path: Path) -> None:
    env = _env(tmp_path)

    def name(session_id: str) -> str:
        return os.path.basename(h.handle_path(env, session_id) or "")

    def hashed(text: bytes) -> str:
        return hashlib.sha256(text).hexdigest()

    every_safe = "".join(sorted(h.SAFE_NAME))
    assert every_safe[0] != "."
    for kept in ("a", "s" * 120, every_safe):
        assert name(kept) == kept
    assert name("s" * 121) == hashed(b"s" * 121)
    assert name("") == hashed(b"")
    # A lone surrogate cannot be UTF-8: it is hashed as "?", not an error.
    assert name("a\ud800") == hashed(b"a?")


def test_a_handle_file_is_read_bounded_and_leniently(tmp_path: Path) -> None:
    env = _env(tmp_path)
    folder = tmp_path / "state" / "kenning-encounter" / "handles"
    folder.mkdir(parents=True)
    (folder / "s1").write_bytes(b"s1~abc\xff")
    assert h.load_handle(env, "s1") == "s1~abc\ufffd"
    (folder / "s2").write_bytes(b"s2~" + b"p" * 3000)
    assert h.load_handle(env, "s2") == "s2~" + "p" * (1024 - 3)


def test_saving_a_handle_truncates_and_never_follows_a_link(tmp_path: Path) -> None:
    env = _env(tmp_path)
    path = h.handle_path(env, "s1")
    assert path is not None
    os.makedirs(os.path.dirname(path))
    stale = f"{path}.{os.getpid()}.tmp"
    Path(stale).write_text("x" * 100)
    h.save_handle(env, "s1", "s1~new")
    assert h.load_handle(env, "s1") == "s1~new"
    victim = tmp_path / "victim"
    victim.write_text("untouched")
    os.symlink(victim, stale)
    with pytest.raises(OSError):
        h.save_handle(env, "s1", "s1~newer")
    assert victim.read_text() == "untouched" and h.load_handle(env, "s1") == "s1~new"


def test_pruning_keeps_the_boundary_and_survives_what_it_cannot_remove(tmp_path: Path) -> None:
    env = _env(tmp_path)
    folder = tmp_path / "state" / "kenning-encounter" / "handles"
    folder.mkdir(parents=True)
    then = 1_000_000_000
    (folder / "edge").write_text("edge~x")
    os.utime(folder / "edge", (then, then))
    (folder / "a-dir").mkdir()
    os.utime(folder / "a-dir", (then, then))
    h.prune_handles(env, then + h.HANDLE_KEEP_S)
    assert (folder / "edge").exists()
    h.prune_handles(env, then + h.HANDLE_KEEP_S + 1)
    assert not (folder / "edge").exists() and (folder / "a-dir").is_dir()


def test_a_handle_that_cannot_be_kept_is_said_in_debug(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    (tmp_path / "state").write_text("a file where the folder would go")
    env = {**_env(tmp_path), "KENNING_ENCOUNTER_HOOK_DEBUG": "1"}
    h.remember(env, "s1", {"handle": "s1~x"})
    folder = tmp_path / "state" / "kenning-encounter"
    assert capsys.readouterr().err == (
        f"kenning-encounter hook: handle not kept: [Errno 20] Not a directory: '{folder}'\n"
    )
