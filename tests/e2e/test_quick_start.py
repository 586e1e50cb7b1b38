"""The stdio quick start (server/front.py): a launch answers from the last one's answers.

Every server is a real subprocess with the quick-start files in this test's own
directory; the clients are the SDK's ``Client`` and raw JSON-RPC lines.
"""

from __future__ import annotations

import codecs
import contextlib
import json
import subprocess
import threading
import time
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest
from mcp import ClientSession, StdioServerParameters
from mcp.client.stdio import stdio_client

from kenning_encounter.server.front import MAX_LINE
from tests.e2e.conftest import clean_environ, modules_after_import, server_command

pytestmark = [pytest.mark.usefixtures("clean_env")]

# What the server imports before its quick start can answer: none of these.
LATE = ("pydantic", "pydantic_settings", "mcp", "mcp_types", "anyio", "httpx", "starlette")
LATE += ("uvicorn", "platformdirs", "numpy", "scipy", "igraph", "google.genai", "openai")
LATE += ("ladybug", "tantivy", "importlib.metadata", "kenning_encounter.config")
LATE += ("kenning_encounter.store", "kenning_encounter.memory", "kenning_encounter.server.app")


def _request(ident: int | str, method: str, params: dict[str, Any] | None = None) -> dict[str, Any]:
    message: dict[str, Any] = {"jsonrpc": "2.0", "id": ident, "method": method}
    if params is not None:
        message["params"] = params
    return message


def _initialize(ident: int | str = 1, version: str = "2025-11-25") -> dict[str, Any]:
    return _request(
        ident,
        "initialize",
        {
            "protocolVersion": version,
            "capabilities": {},
            "clientInfo": {"name": "quick start check", "version": "1"},
        },
    )


INITIALIZED = {"jsonrpc": "2.0", "method": "notifications/initialized"}
SEARCH = _request(3, "tools/call", {"name": "search", "arguments": {"query": "retry"}})


class Launches:
    """One command line, launched as often as asked, its quick-start files kept apart."""

    def __init__(self, tmp_path: Path, *, cwd: Path | None = None, **env: str) -> None:
        self.cache = tmp_path / "cache"
        self.command = server_command(
            "serve", "--transport", "stdio", "--data-dir", str(tmp_path / "memory")
        )
        self.env = clean_environ(KENNING_ENCOUNTER_CACHE_DIR=str(self.cache), **env)
        self.cwd = cwd  # None: the test's own folder (clean_env)

    def files(self) -> list[Path]:
        return sorted((self.cache / "quick-start").glob("*.json"))

    def run(self, *messages: dict[str, Any] | bytes) -> tuple[list[dict[str, Any]], str]:
        """The lines the server wrote on stdout for ``messages`` (each a line as it is, when
        given as bytes) piped in, and its stderr."""
        lines = (m if isinstance(m, bytes) else json.dumps(m).encode() for m in messages)
        done = subprocess.run(
            self.command,
            input=b"".join(line + b"\n" for line in lines),
            capture_output=True,
            env=self.env,
            cwd=self.cwd,
            timeout=180,
        )
        stderr = done.stderr.decode(errors="replace")
        assert done.returncode == 0, stderr[-4_000:]
        return [json.loads(line) for line in done.stdout.splitlines()], stderr


def _kept_answer(kept: dict[str, Any], prefix: str) -> dict[str, Any]:
    [answer] = [a for key, a in kept["answers"].items() if key.startswith(prefix)]
    return answer


def _modern(ident: int | str, method: str, **params: Any) -> dict[str, Any]:
    """A 2026-era request: every one carries the version and the client in ``_meta``."""
    meta = {
        "io.modelcontextprotocol/protocolVersion": "2026-07-28",
        "io.modelcontextprotocol/clientInfo": {"name": "quick start check", "version": "1"},
        "io.modelcontextprotocol/clientCapabilities": {},
    }
    return _request(ident, method, {"_meta": meta, **params})


def _by_id(lines: list[dict[str, Any]]) -> dict[Any, dict[str, Any]]:
    found: dict[Any, dict[str, Any]] = {}
    for message in lines:
        assert message["id"] not in found, f"answered twice: {message['id']}"
        found[message["id"]] = message
    return found


LISTINGS = ("resources/list", "prompts/list", "resources/templates/list", "ping")


def test_a_second_launch_gives_the_same_answers_and_each_once(tmp_path: Path) -> None:
    launches = Launches(tmp_path)
    listings = [_request(f"l{i}", method) for i, method in enumerate(LISTINGS)]
    script = (_initialize(), INITIALIZED, *listings, _request(2, "tools/list"), SEARCH)
    first, _ = launches.run(*script)
    assert len(launches.files()) == 1  # kept from the SDK's answers
    second, stderr = launches.run(*script)
    assert "quick start" not in stderr  # nothing was stale
    a, b = _by_id(first), _by_id(second)
    assert set(a) == set(b) == {1, 2, 3, "l0", "l1", "l2", "l3"}
    assert {k: v for k, v in a.items() if k != 3} == {k: v for k, v in b.items() if k != 3}
    assert b[3]["result"]["structuredContent"]["hits"] == []
    kept = json.loads(launches.files()[0].read_text(encoding="utf-8"))["answers"]
    assert {key.split(" ")[2] for key in kept if key.startswith("legacy 2025-11-25 ")} == {
        "tools/list",
        *LISTINGS,
    }


def test_kept_answers_are_served_and_a_stale_one_is_corrected(tmp_path: Path) -> None:
    """The front answers from the file (a changed file shows through), the server's
    own answer is compared with it, and the file is corrected for the next launch."""
    launches = Launches(tmp_path)
    script = (_initialize(), INITIALIZED, _request(2, "tools/list"), SEARCH)
    truth = _by_id(launches.run(*script)[0])
    [path] = launches.files()
    kept = json.loads(path.read_text(encoding="utf-8"))
    _kept_answer(kept, "legacy initialize ")["result"]["instructions"] = "stale instructions"
    _kept_answer(kept, "legacy 2025-11-25 tools/list ")["result"]["tools"].pop()
    path.write_text(json.dumps(kept), encoding="utf-8")

    served, stderr = launches.run(*script)
    answers = _by_id(served)
    assert answers[1]["result"]["instructions"] == "stale instructions"  # the front answered
    assert answers[2]["result"]["tools"] == truth[2]["result"]["tools"][:-1]
    assert "error" not in answers[3]
    assert "otherwise than the server does" in stderr
    again = _by_id(launches.run(*script)[0])
    assert again[1] == truth[1] and again[2] == truth[2]


def test_what_the_front_does_not_know_waits_for_the_server_in_order(tmp_path: Path) -> None:
    launches = Launches(tmp_path)
    launches.run(_initialize(), INITIALIZED, _request(2, "tools/list"))
    # A version no launch was asked, then requests the front never answers.
    other = (_initialize(7, "2025-06-18"), INITIALIZED, _request(8, "ping"))
    answers = _by_id(launches.run(*other, _request(9, "tools/list", {"cursor": "x"}))[0])
    assert answers[7]["result"]["protocolVersion"] == "2025-06-18"
    assert answers[8]["result"] == {}
    assert answers[9]["result"]["tools"]  # the SDK's answer (it ignores the cursor)
    # A ping before initialize, on a launch whose answers are kept: the SDK answers all.
    answers = _by_id(launches.run(_request(1, "ping"), _initialize(2), SEARCH)[0])
    assert set(answers) == {1, 2, 3} and "error" not in answers[3]


def _answers_to(lines: list[dict[str, Any]], ident: int) -> list[dict[str, Any]]:
    return sorted((m["result"] for m in lines if m.get("id") == ident), key=len)


def test_a_repeated_request_id_loses_no_answer_and_spoils_no_kept_one(tmp_path: Path) -> None:
    """A client that sends two requests with one id (MCP forbids it; JSON-RPC allows it
    once the first is answered) got the server's answers matched to its requests by id:
    the ping's answer was kept as the listing's, so the next launch, however sound its
    client, listed no tools; and with the front answering, the ping's answer was dropped
    as the front's copy and the listing answered twice."""
    tools = _request(2, "tools/list")
    ping = _request(2, "ping")
    fresh = Launches(tmp_path / "fresh")
    twice, _ = fresh.run(_initialize(), INITIALIZED, ping, tools)
    [empty, listed] = _answers_to(twice, 2)
    assert empty == {} and listed["tools"]
    sound, stderr = fresh.run(_initialize(), INITIALIZED, tools)
    assert _answers_to(sound, 2) == [listed]
    assert "otherwise than the server does" not in stderr

    launches = Launches(tmp_path / "kept")
    launches.run(_initialize(), INITIALIZED, tools)  # the front answers the listing next
    twice, stderr = launches.run(_initialize(), INITIALIZED, ping, tools)
    assert _answers_to(twice, 2) == [{}, listed]
    sound, stderr = launches.run(_initialize(), INITIALIZED, tools)
    assert _answers_to(sound, 2) == [listed]
    assert "otherwise than the server does" not in stderr

    # A stale kept listing is not given under a repeated id: it would be one answer more.
    stale = Launches(tmp_path / "stale")
    stale.run(_initialize(), INITIALIZED, tools)
    [path] = stale.files()
    kept = json.loads(path.read_text(encoding="utf-8"))
    _kept_answer(kept, "legacy 2025-11-25 tools/list ")["result"]["tools"].pop()
    path.write_text(json.dumps(kept), encoding="utf-8")
    twice, _ = stale.run(_initialize(), INITIALIZED, ping, tools)
    assert _answers_to(twice, 2) == [{}, listed]


@dataclass(frozen=True)
class Kept:
    launches: Launches
    script: tuple[dict[str, Any], ...]
    truth: dict[Any, dict[str, Any]]
    path: Path
    sound: bytes  # the kept file as the first launch wrote it


@pytest.fixture(scope="module")
def kept(tmp_path_factory: pytest.TempPathFactory) -> Kept:
    """One launch's answers and the file it kept, made once for every damage below: each
    puts the sound file back before it spoils it, so none sees another's."""
    folder = tmp_path_factory.mktemp("kept")
    # Run in its own folder: this is made before clean_env moves each test out of the
    # checkout, whose .env a server started there would read.
    launches = Launches(folder, cwd=folder)
    script = (_initialize(), INITIALIZED, _request(2, "tools/list"))
    truth = _by_id(launches.run(*script)[0])
    [path] = launches.files()
    return Kept(launches, script, truth, path, path.read_bytes())


@pytest.mark.parametrize(
    "damage",
    [
        {"env_names": [1]},
        {"env_names": [None, {}]},
        {"files": [[1]]},
        {"salt": 7},
        {"files": {"a\u0000b": [1, 2]}},
        {"answers": "every answer: not one"},
    ],
)
def test_a_damaged_kept_file_is_ignored_and_written_afresh(
    kept: Kept, damage: dict[str, Any]
) -> None:
    """The file is only a cache: whatever a damaged one holds, the launch starts, the
    server answers, and the file is written again. A list of names that were not strings
    stopped every start of that command line with an AttributeError; an answer that was
    no JSON object ended the quick start with a traceback."""
    launches, script, truth, path = kept.launches, kept.script, kept.truth, kept.path
    path.write_bytes(kept.sound)
    assert launches.files() == [path]
    sound = json.loads(kept.sound)
    if isinstance(damage.get("answers"), str):
        damage = {"answers": dict.fromkeys(sound["answers"], damage["answers"])}
    path.write_text(json.dumps({**sound, **damage}), encoding="utf-8")
    served, stderr = launches.run(*script)
    assert _by_id(served) == truth
    assert "Traceback" not in stderr
    assert json.loads(path.read_text(encoding="utf-8")) != {**sound, **damage}
    assert _by_id(launches.run(*script)[0]) == truth


def test_a_2026_client_discovers_and_lists_from_the_kept_answers(tmp_path: Path) -> None:
    """The 2026 era (Claude Code opens with server/discover): each request stands alone,
    so each is answered from the kept answer to the same parameters; an initialize on
    that connection gets the SDK's refusal, kept too."""
    launches = Launches(tmp_path)
    script = (
        _modern("probe", "server/discover"),
        _initialize(0),
        _modern(1, "tools/list"),
        _modern(2, "resources/list"),
        _modern(3, "tools/call", name="search", arguments={"query": "retry"}),
    )
    truth = _by_id(launches.run(*script)[0])
    assert "error" in truth[0] and "result" in truth[1] and "error" not in truth[3]
    [path] = launches.files()
    kept = json.loads(path.read_text(encoding="utf-8"))
    _kept_answer(kept, "modern tools/list ")["result"]["tools"].pop()
    path.write_text(json.dumps(kept), encoding="utf-8")
    served, stderr = launches.run(*script)
    answers = _by_id(served)
    assert answers[1]["result"]["tools"] == truth[1]["result"]["tools"][:-1]  # the front's
    assert {k: answers[k] for k in ("probe", 0, 2)} == {k: truth[k] for k in ("probe", 0, 2)}
    assert "error" not in answers[3] and "otherwise than the server does" in stderr


def test_the_front_follows_the_era_the_server_follows(tmp_path: Path) -> None:
    """The SDK reads a request with an extra envelope member as a request (and so lets it
    open the connection's era); the front skipped it, and followed lines the server
    refuses (params that are no object, a lone surrogate escape). Each time the front
    took the other era and answered what the server refuses: an initialize on a 2026
    connection, a 2026 listing on a handshake connection."""
    launches = Launches(tmp_path / "kept")
    truth = Launches(tmp_path / "truth", KENNING_ENCOUNTER_QUICK_START="off")
    modern_ping = {**_modern(0, "ping"), "trace": "x"}
    legacy_open = {**_initialize(), "trace": "x"}
    scripts = [
        (modern_ping, _initialize(), INITIALIZED, _request(2, "tools/list")),
        (legacy_open, INITIALIZED, _modern(2, "tools/list")),
        (_request(0, "ping", []), _modern(2, "tools/list"), _initialize()),  # type: ignore[arg-type]
        (_request(0, "ping", {"x": "\ud800"}), _modern(2, "tools/list"), _initialize()),
    ]
    launches.run(_initialize(), INITIALIZED, _request(2, "tools/list"))
    launches.run(_modern(1, "tools/list"))
    for i, script in enumerate(scripts):
        assert _by_id(launches.run(*script)[0]) == _by_id(truth.run(*script)[0]), i


def test_the_front_answers_nothing_more_after_a_line_the_server_may_read_otherwise(
    tmp_path: Path,
) -> None:
    """The front read lines with json, which takes what the SDK's reader refuses: a
    byte-order mark, values nested deeper than about 200 levels, a line past the wire's
    limit; and the reader takes a request holding an answer's member (``error``) for the
    client's answer. Each such line opened the 2026 era in the front alone (or, an
    initialize, the handshake), so it answered the client's initialize with the kept
    refusal, or an initialize the server refused with success. A line it cannot be sure
    of now silences it for the rest of the connection: the server answers all. (The
    server refused a line led by a byte-order mark as "1 validation error for union";
    it is not JSON as the server reads it, and its parse error now says so.)"""
    launches = Launches(tmp_path / "kept")
    truth = Launches(tmp_path / "truth", KENNING_ENCOUNTER_QUICK_START="off")
    launches.run(_initialize(), INITIALIZED, _request(2, "tools/list"))
    launches.run(_modern("probe", "server/discover"), _initialize(0), _modern(1, "tools/list"))

    def line(message: dict[str, Any], *, before: bytes = b"", inside: str = "") -> bytes:
        text = json.dumps(message)
        return before + (text[:-1] + inside + "}").encode()

    modern_ping = _modern(0, "ping")
    deep = ', "deep": ' + "[" * 300 + "]" * 300
    padding = ', "padding": "' + "x" * MAX_LINE + '"'
    openers = {
        "a byte-order mark": line(modern_ping, before=codecs.BOM_UTF8),
        "deep nesting": line(modern_ping, inside=deep),
        "an answer's member": line(modern_ping, inside=', "error": {"code": 1, "message": "x"}'),
        "a line over the limit": line(modern_ping, inside=padding),
    }
    for name, opener in openers.items():
        script = (opener, _initialize(), INITIALIZED, _request(2, "tools/list"))
        served = _by_id(launches.run(*script)[0])
        assert served == _by_id(truth.run(*script)[0]), name
        assert "result" in served[1] and served[2]["result"]["tools"], name
    marked = line(_initialize(), before=codecs.BOM_UTF8)
    script = (marked, _initialize(2), INITIALIZED, _request(3, "tools/list"))
    served = _by_id(launches.run(*script)[0])
    assert served == _by_id(truth.run(*script)[0])
    # Not JSON as the SDK reads it, so said plainly (it was "1 validation error for union").
    assert served[None]["error"]["code"] == -32700 and "result" in served[2]
    assert "BOM" in served[None]["error"]["message"]


def test_a_client_that_writes_everything_before_it_reads_is_served(tmp_path: Path) -> None:
    """A client may send all its requests before it reads an answer. The front wrote its
    answers blocking, so once they filled the stdout pipe it stopped reading stdin; the
    client, still writing, waited on a full stdin pipe, and the two waited forever (the
    server without a quick start reads on while its answers wait). Here the client reads
    only once the server has taken over, so the front's answers the pipe had no room
    for are handed over unsent, and must come first."""
    launches = Launches(tmp_path)
    listings = (_request(2, "tools/list"), _request(3, "tools/list"))
    launches.run(_initialize(), INITIALIZED, *listings)
    large = _request(4, "tools/call", {"name": "search", "arguments": {"query": "x" * 300_000}})
    script = (_initialize(), INITIALIZED, *listings, large, _request(5, "ping"))
    data = "".join(json.dumps(m) + "\n" for m in script).encode()
    proc = subprocess.Popen(
        launches.command,
        stdin=subprocess.PIPE,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        env=launches.env,
    )
    assert proc.stdin is not None and proc.stdout is not None and proc.stderr is not None
    written = threading.Event()

    def write_all() -> None:
        assert proc.stdin is not None
        with contextlib.suppress(BrokenPipeError):
            proc.stdin.write(data)
            proc.stdin.close()
        written.set()

    writer = threading.Thread(target=write_all, daemon=True)
    writer.start()
    try:
        assert written.wait(60), "the client could not finish writing: the server stopped reading"
        while "serving on stdio" not in proc.stderr.readline().decode():
            pass
        time.sleep(1.0)  # the server takes the wire over right after it says so
        answers = _by_id([json.loads(line) for line in proc.stdout.read().splitlines()])
        assert proc.wait(timeout=60) == 0
    finally:
        if proc.poll() is None:
            proc.kill()
            proc.wait()
        proc.stdout.close()
        proc.stderr.close()
    assert set(answers) == {1, 2, 3, 4, 5}
    assert answers[2]["result"]["tools"] and answers[2]["result"] == answers[3]["result"]
    assert answers[4]["result"]["isError"] and answers[5]["result"] == {}


def _listening(launches: Launches) -> tuple[list[dict[str, Any]], str]:
    """A 2026 client as Claude Code opens: discovery, the list-change stream (waiting for
    its acknowledgement), then the tools; everything the server wrote, and its stderr."""
    listen = _modern("listen:0", "subscriptions/listen", notifications={"toolsListChanged": True})
    proc = subprocess.Popen(
        launches.command,
        stdin=subprocess.PIPE,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
        env=launches.env,
    )
    assert proc.stdin is not None and proc.stdout is not None and proc.stderr is not None
    seen: list[dict[str, Any]] = []

    def until(done: Any) -> None:
        assert proc.stdout is not None
        while not (seen and done(seen[-1])):
            seen.append(json.loads(proc.stdout.readline()))

    try:
        for message in (_modern("probe", "server/discover"), listen):
            proc.stdin.write(json.dumps(message) + "\n")
        proc.stdin.flush()
        until(lambda m: m.get("method") == "notifications/subscriptions/acknowledged")
        proc.stdin.write(json.dumps(_modern(1, "tools/list")) + "\n")
        proc.stdin.flush()
        until(lambda m: m.get("id") == 1)
        # Only the server answers a call: once it has, it has taken the wire over.
        call = _modern(2, "tools/call", name="search", arguments={"query": "retry"})
        proc.stdin.write(json.dumps(call) + "\n")
        proc.stdin.flush()
        until(lambda m: m.get("id") == 2)
    finally:
        proc.terminate()  # the stream stays open until the client leaves
        proc.wait(timeout=60)
    with proc.stdout, proc.stderr, proc.stdin:
        seen += [json.loads(line) for line in proc.stdout.read().splitlines()]
        return seen, proc.stderr.read()


def test_a_2026_list_stream_is_acknowledged_by_the_front_and_served_by_the_server(
    tmp_path: Path,
) -> None:
    launches = Launches(tmp_path)
    truth, _ = _listening(launches)
    [path] = launches.files()
    kept = json.loads(path.read_text(encoding="utf-8"))
    acknowledgement = _kept_answer(kept, "modern subscriptions/listen ")["notification"]
    acknowledgement["params"]["marked"] = True
    path.write_text(json.dumps(kept), encoding="utf-8")
    served, stderr = _listening(launches)
    acks = [m for m in served if m.get("method") == "notifications/subscriptions/acknowledged"]
    assert [a["params"].get("marked") for a in acks] == [True]  # the front's, and only it
    assert "otherwise than the server does" in stderr
    answers = {m["id"]: m for m in served if "id" in m}
    assert answers == {m["id"]: m for m in truth if "id" in m}
    assert set(answers) == {"probe", 1, 2} and "error" not in answers[2]


def test_a_store_another_server_holds_still_stops_the_start(tmp_path: Path) -> None:
    """The one change a client can see: the front may have answered initialize before the
    store's owner is found; the start then fails as before, saying who holds it."""
    launches = Launches(tmp_path)
    launches.run(_initialize(), INITIALIZED, _request(2, "tools/list"))
    holder = subprocess.Popen(
        launches.command,
        stdin=subprocess.PIPE,
        stdout=subprocess.PIPE,
        stderr=subprocess.DEVNULL,
        text=True,
        env={**launches.env, "KENNING_ENCOUNTER_QUICK_START": "off"},
    )
    assert holder.stdin is not None and holder.stdout is not None
    try:
        holder.stdin.write(json.dumps(_initialize()) + "\n")
        holder.stdin.flush()
        assert json.loads(holder.stdout.readline())["id"] == 1  # it holds the store now
        done = subprocess.run(
            launches.command,
            input=json.dumps(_initialize()) + "\n",
            capture_output=True,
            text=True,
            env=launches.env,
            timeout=180,
        )
    finally:
        holder.stdin.close()
        holder.wait(timeout=60)
        holder.stdout.close()
    assert done.returncode == 1
    assert f"is owned by process {holder.pid}" in done.stderr
    assert [json.loads(line)["id"] for line in done.stdout.splitlines()] in ([], [1])


def test_turned_off_no_file_is_read_or_written(tmp_path: Path) -> None:
    launches = Launches(tmp_path, KENNING_ENCOUNTER_QUICK_START="off")
    answers = _by_id(launches.run(_initialize(), INITIALIZED, _request(2, "tools/list"))[0])
    assert set(answers) == {1, 2}
    assert launches.files() == []


def test_a_changed_setting_is_another_launch(tmp_path: Path) -> None:
    launches = Launches(tmp_path)
    full = _by_id(launches.run(_initialize(), INITIALIZED, _request(2, "tools/list"))[0])
    launches.env["KENNING_ENCOUNTER_FACE"] = "reader"
    reader = _by_id(launches.run(_initialize(), INITIALIZED, _request(2, "tools/list"))[0])
    assert len(reader[2]["result"]["tools"]) < len(full[2]["result"]["tools"])
    assert "read-only" in reader[1]["result"]["instructions"]


def test_the_kept_file_holds_no_secret_and_only_its_owner_reads_it(tmp_path: Path) -> None:
    launches = Launches(tmp_path, KENNING_ENCOUNTER_TOKEN="token-in-the-environment")
    launches.command += ["--token", "token-on-the-command-line"]
    answers = _by_id(launches.run(_initialize(), INITIALIZED, _request(2, "tools/list"))[0])
    assert set(answers) == {1, 2}
    [path] = launches.files()
    text = path.read_text(encoding="utf-8")
    assert "token-in-the-environment" not in text and "token-on-the-command-line" not in text
    assert path.stat().st_mode & 0o777 == 0o600
    assert _by_id(launches.run(_initialize(), INITIALIZED, _request(2, "tools/list"))[0]) == answers


@pytest.mark.anyio
async def test_an_sdk_client_session_is_answered_by_the_front_then_by_the_server(
    tmp_path: Path,
) -> None:
    """The SDK's client session, over the handshake (``initialize``): the second launch's
    initialize comes from the kept file (a marked answer shows it), and the session then
    lists and calls tools on the server that took over."""
    launches = Launches(tmp_path)
    params = StdioServerParameters(
        command=launches.command[0], args=launches.command[1:], env=launches.env
    )

    async def session() -> tuple[str | None, list[dict[str, Any]]]:
        async with stdio_client(params) as (read, write), ClientSession(read, write) as client:
            started = await client.initialize()
            tools = await client.list_tools()
            result = await client.call_tool("search", {"query": "retry"})
            assert not result.is_error
            return started.instructions, [t.model_dump() for t in tools.tools]

    instructions, tools = await session()
    [path] = launches.files()
    kept = json.loads(path.read_text(encoding="utf-8"))
    _kept_answer(kept, "legacy initialize ")["result"]["instructions"] = "marked"
    path.write_text(json.dumps(kept), encoding="utf-8")
    assert await session() == ("marked", tools)
    assert await session() == (instructions, tools)


def test_the_quick_start_runs_before_anything_heavy_is_imported() -> None:
    """The command line's module and the front import the standard library and no more."""
    modules = modules_after_import("kenning_encounter.cli", "kenning_encounter.server.front")
    assert "kenning_encounter.server.front" in modules
    late = sorted(m for m in modules if any(m == x or m.startswith(x + ".") for x in LATE))
    assert late == []


def test_a_launch_lists_and_calls_tools_from_the_schemas_the_last_one_kept(
    tmp_path: Path,
) -> None:
    """Without quick-start answers the SDK answers the listing, from tools listed from the
    schemas the first launch kept (server/app_tools.py) and built when first called."""
    launches = Launches(tmp_path, KENNING_ENCOUNTER_QUICK_START="off")
    unknown = _request(4, "tools/call", {"name": "search", "arguments": {"query": "x", "k": 1}})
    script = (_initialize(), INITIALIZED, _request(2, "tools/list"), SEARCH, unknown)
    first, _ = launches.run(*script)
    kept = launches.cache / "tool-schemas.json"
    assert kept.is_file() and not launches.files()
    stamp = kept.stat().st_mtime_ns
    second, _ = launches.run(*script)
    assert kept.stat().st_mtime_ns == stamp  # used as it was, not written again
    assert _by_id(first) == _by_id(second)
    assert _by_id(second)[3]["result"]["structuredContent"]["hits"] == []
    refused = _by_id(second)[4]["result"]
    assert refused["isError"] and "k" in refused["content"][0]["text"]
