"""Start-up: from launching a server to its first answers, over stdio and over HTTP.

What every stdio client (Claude Desktop, a per-call CLI) pays on each launch.
Servers, each launched as a fresh process per round:

- ours, ``kenning-encounter serve`` on the embedded store (default settings: with
  no key the matcher is off), over stdio and over streamable HTTP; over stdio both
  as a client launches it again (the quick start, server/front.py, answers from the
  launch before) and "cold" (``KENNING_ENCOUNTER_QUICK_START=off``: what the first
  launch of a command line pays); and with a 2026-era client, as Claude Code opens
  (``server/discover``, the list-change stream and its acknowledgement, then the
  tools, every request in the 2026 envelope; "initialize" is then discovery);
- the floor: a bare MCP server on the same SDK with one tool (bench/startup_floor.py),
  over stdio and HTTP: what the SDK and the interpreter cost before any of ours;
- the reference memory server (npm @modelcontextprotocol/server-memory), over
  stdio (it serves nothing else).

The client is raw JSON-RPC, the same for every server: over stdio it writes
``initialize`` the moment the process exists and reads the answer; over HTTP it
posts ``initialize`` to the port until the server answers. Then ``tools/list``
and one tool call (a search on ours and the reference, ``echo`` on the floor).
Each time is milliseconds from the launch. Every server runs once unmeasured
(which also creates our store and keeps the quick start's answers), then
``rounds`` times, the order reversed every round so load falls on all alike; the
medians are reported. Our source trees are byte-compiled first, as an install
leaves them.

    PYTHONPATH=src python -m bench.startup_bench [--quick] [--rounds N] [--json OUT]
    git worktree add /tmp/before HEAD~1 && \\
        PYTHONPATH=src python -m bench.startup_bench --before /tmp/before/src

Goal (issue 19): ours answers its first request within 0.8 s over stdio (cold: without
the quick start) and over HTTP.
"""

from __future__ import annotations

import argparse
import compileall
import json
import os
import shutil
import socket
import statistics
import subprocess
import sys
import tempfile
import time
from dataclasses import dataclass
from pathlib import Path
from typing import IO, Any

import httpx

import kenning_encounter
from bench.peers.servers import DEFAULT_PEERS_DIR, REFERENCE_PACKAGE

GOAL_FIRST_ANSWER_MS = 800.0
PROTOCOL = "2025-11-25"
SRC = Path(kenning_encounter.__file__).resolve().parents[1]
FLOOR = Path(__file__).resolve().with_name("startup_floor.py")
DEADLINE_S = 120.0
PHASES = ("initialize", "tools_list", "first_call")


@dataclass(frozen=True)
class Target:
    key: str
    label: str
    transport: str  # "stdio" | "http"
    command: list[str]  # "{port}" is replaced by the port for HTTP
    env: dict[str, str]
    call: tuple[str, dict[str, Any]]
    path: str = "/mcp"
    era: str = "2025"  # "2026": discovery and the list-change stream, as Claude Code opens


def _env(src: Path = SRC) -> dict[str, str]:
    # Our defaults, not whatever this shell configured; no key, so no matcher.
    env = {
        k: v
        for k, v in os.environ.items()
        if not k.startswith("KENNING_ENCOUNTER_") and k != "GEMINI_API_KEY"
    }
    env["PYTHONPATH"] = os.pathsep.join(filter(None, [str(src), env.get("PYTHONPATH", "")]))
    return env


def _ours(
    work: Path, src: Path, key: str, label: str, *, quick: bool = True, first: bool = True
) -> list[Target]:
    serve = [sys.executable, "-m", "kenning_encounter", "serve", "--data-dir", str(work / key)]
    search = ("search", {"query": "start", "limit": 10})
    stdio, http = [*serve, "--transport", "stdio"], [*serve, "--transport", "streamable-http",
                                                     "--port", "{port}"]  # fmt: skip
    # The quick start (server/front.py) answers a launch like the one before it; "cold" is a
    # launch without it (the first with a command line, or KENNING_ENCOUNTER_QUICK_START=off).
    # Every launch but a code version's first lists its tools from the schemas an earlier
    # one kept (server/app_tools.py); "nothing kept" is that first launch, as after an
    # install or an upgrade. Both are kept in the bench's own folder, never the user's cache.
    env = {**_env(src), "KENNING_ENCOUNTER_CACHE_DIR": str(work / f"{key}-cache")}
    off = {**env, "KENNING_ENCOUNTER_QUICK_START": "off"}
    bare = {**off, "KENNING_ENCOUNTER_TOOL_SCHEMAS": "off"}
    found = [
        Target(f"{key}_cold_stdio", f"{label}, cold", "stdio", stdio, off, search),
        Target(f"{key}_http", label, "http", http, env, search, path="/mcp/"),
    ]
    if quick:
        found.insert(0, Target(f"{key}_stdio", label, "stdio", stdio, env, search))
        found.insert(2, Target(f"{key}_2026_stdio", f"{label}, 2026 client", "stdio", stdio,
                               env, search, era="2026"))  # fmt: skip
    if first:
        found.insert(-1, Target(f"{key}_bare_stdio", f"{label}, nothing kept", "stdio", stdio,
                                bare, search))  # fmt: skip
        found.append(Target(f"{key}_bare_http", f"{label}, nothing kept", "http", http, bare,
                            search, path="/mcp/"))  # fmt: skip
    return found


def compiled(src: Path) -> None:
    """Byte-compile a source tree of ours, as pip does when it installs: a shell with
    PYTHONDONTWRITEBYTECODE=1 would otherwise have every launch compile every module."""
    compileall.compile_dir(str(src / "kenning_encounter"), quiet=1)


def targets(
    work: Path, peers_dir: Path, before: Path | None = None
) -> tuple[list[Target], dict[str, str]]:
    """The servers to launch, and those that cannot run with why; ``before`` is another
    source tree of ours (say a worktree at the previous commit), measured beside this one."""
    echo = ("echo", {"text": "start"})
    ours = _ours(work, SRC, "ours", "kenning-encounter (embedded)")
    http_at = next(i for i, t in enumerate(ours) if t.transport == "http")
    found = [
        *ours[:http_at],
        Target("floor_stdio", "bare MCPServer (same SDK)", "stdio",
               [sys.executable, str(FLOOR), "stdio"], _env(), echo),
        *ours[http_at:],
        Target("floor_http", "bare MCPServer (same SDK)", "http",
               [sys.executable, str(FLOOR), "http", "{port}"], _env(), echo),
    ]  # fmt: skip
    if before is not None:
        # A tree from before the kept schemas has nothing to keep: its cold launch is its first.
        found += _ours(work, before.resolve(), "before", "kenning-encounter (embedded), before",
                       quick=False, first=False)  # fmt: skip
    missing: dict[str, str] = {}
    node = shutil.which("node")
    entry = peers_dir / "node_modules" / REFERENCE_PACKAGE / "dist" / "index.js"
    if node is None:
        missing["reference_stdio"] = "node is not on PATH"
    elif not entry.is_file():
        missing["reference_stdio"] = (
            f"{entry} is missing; install it with: python -m bench.peers_bench --install"
        )
    else:
        found.insert(
            1,
            Target(
                "reference_stdio",
                f"{REFERENCE_PACKAGE} (node)",
                "stdio",
                [node, str(entry)],
                {**os.environ, "MEMORY_FILE_PATH": str(work / "reference.jsonl")},
                ("search_nodes", {"query": "start"}),
            ),
        )
    return found, missing


def _message(method: str, params: dict[str, Any], ident: int | str | None) -> dict[str, Any]:
    out: dict[str, Any] = {"jsonrpc": "2.0", "method": method, "params": params}
    if ident is not None:
        out["id"] = ident
    return out


INITIALIZE = {
    "protocolVersion": PROTOCOL,
    "capabilities": {},
    "clientInfo": {"name": "startup-bench", "version": "0"},
}


def _checked(answer: dict[str, Any], what: str) -> dict[str, Any]:
    if "error" in answer:
        raise RuntimeError(f"{what} failed: {answer['error']}")
    result: dict[str, Any] = answer["result"]
    if result.get("isError"):
        raise RuntimeError(f"{what} answered with an error: {result.get('content')}")
    return result


def _read_answer(out: IO[str], ident: int | str, method: str | None = None) -> dict[str, Any]:
    """The answer to request ``ident``, or (with ``method``) the first such notification."""
    while True:
        line = out.readline()
        if not line:
            raise RuntimeError("the server closed its stdout before answering")
        message = json.loads(line)
        if (message.get("method") == method) if method else (message.get("id") == ident):
            return message


MODERN_META = {
    "io.modelcontextprotocol/protocolVersion": "2026-07-28",
    "io.modelcontextprotocol/clientInfo": {"name": "startup-bench", "version": "0"},
    "io.modelcontextprotocol/clientCapabilities": {},
}


def _stdio_2026(target: Target, ask: Any, out: IO[str], mark: Any) -> None:
    """What Claude Code sends first: discovery, then the list-change stream (it waits for
    the acknowledgement), then the tools; every request carries the 2026 envelope."""
    meta = {"_meta": MODERN_META}
    ask(1, "server/discover", meta)
    _checked(_read_answer(out, 1), "server/discover")
    mark("initialize")
    ask("listen:0", "subscriptions/listen", {**meta, "notifications": {"toolsListChanged": True}})
    _read_answer(out, "", "notifications/subscriptions/acknowledged")
    ask(2, "tools/list", meta)
    _checked(_read_answer(out, 2), "tools/list")
    mark("tools_list")
    name, arguments = target.call
    ask(3, "tools/call", {**meta, "name": name, "arguments": arguments})
    _checked(_read_answer(out, 3), name)
    mark("first_call")


def _stdio(target: Target, log: IO[str]) -> dict[str, float]:
    started = time.perf_counter()
    proc = subprocess.Popen(
        target.command,
        stdin=subprocess.PIPE,
        stdout=subprocess.PIPE,
        stderr=log,
        text=True,
        env=target.env,
    )
    assert proc.stdin is not None and proc.stdout is not None
    times: dict[str, float] = {}

    def ask(ident: int | str | None, method: str, params: dict[str, Any]) -> None:
        assert proc.stdin is not None
        proc.stdin.write(json.dumps(_message(method, params, ident)) + "\n")
        proc.stdin.flush()

    def mark(phase: str) -> None:
        times[phase] = (time.perf_counter() - started) * 1000

    try:
        if target.era == "2026":
            _stdio_2026(target, ask, proc.stdout, mark)
            proc.terminate()  # the stream stays open until the client leaves
            return times
        ask(1, "initialize", INITIALIZE)
        _checked(_read_answer(proc.stdout, 1), "initialize")
        mark("initialize")
        ask(None, "notifications/initialized", {})
        ask(2, "tools/list", {})
        _checked(_read_answer(proc.stdout, 2), "tools/list")
        mark("tools_list")
        name, arguments = target.call
        ask(3, "tools/call", {"name": name, "arguments": arguments})
        _checked(_read_answer(proc.stdout, 3), name)
        mark("first_call")
    finally:
        proc.stdin.close()
        _stop(proc)
    return times


def _free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        port: int = sock.getsockname()[1]
        return port


def _post(
    http: httpx.Client, url: str, headers: dict[str, str], body: dict[str, Any]
) -> httpx.Response:
    response = http.post(url, json=body, headers=headers)
    response.raise_for_status()
    return response


def _answer(response: httpx.Response) -> dict[str, Any]:
    if response.headers.get("content-type", "").startswith("text/event-stream"):
        data = [ln[5:].strip() for ln in response.text.splitlines() if ln.startswith("data:")]
        message: dict[str, Any] = json.loads(data[-1])
        return message
    found: dict[str, Any] = response.json()
    return found


def _http(target: Target, log: IO[str]) -> dict[str, float]:
    port = _free_port()
    url = f"http://127.0.0.1:{port}{target.path}"
    command = [part.replace("{port}", str(port)) for part in target.command]
    headers = {"accept": "application/json, text/event-stream", "content-type": "application/json"}
    started = time.perf_counter()
    proc = subprocess.Popen(
        command, stdin=subprocess.DEVNULL, stdout=log, stderr=log, text=True, env=target.env
    )
    times: dict[str, float] = {}

    def mark(phase: str) -> None:
        times[phase] = (time.perf_counter() - started) * 1000

    try:
        with httpx.Client(timeout=DEADLINE_S) as http:
            while True:
                if proc.poll() is not None:
                    raise RuntimeError(f"the server exited with {proc.returncode} before answering")
                if time.perf_counter() - started > DEADLINE_S:
                    raise RuntimeError("the server did not answer in time")
                try:
                    response = _post(http, url, headers, _message("initialize", INITIALIZE, 1))
                    break
                except httpx.TransportError:
                    time.sleep(0.005)
            answer = _checked(_answer(response), "initialize")
            mark("initialize")
            headers["mcp-protocol-version"] = answer["protocolVersion"]
            if "mcp-session-id" in response.headers:
                headers["mcp-session-id"] = response.headers["mcp-session-id"]
            _post(http, url, headers, _message("notifications/initialized", {}, None))
            _checked(_answer(_post(http, url, headers, _message("tools/list", {}, 2))), "list")
            mark("tools_list")
            name, arguments = target.call
            body = _message("tools/call", {"name": name, "arguments": arguments}, 3)
            _checked(_answer(_post(http, url, headers, body)), name)
            mark("first_call")
    finally:
        proc.terminate()
        _stop(proc)
    return times


def _stop(proc: subprocess.Popen[str]) -> None:
    try:
        proc.wait(timeout=30)
    except subprocess.TimeoutExpired:
        proc.kill()
        proc.wait()
    if proc.stdout is not None:
        proc.stdout.close()


def _launch(target: Target, work: Path) -> dict[str, float]:
    with (work / f"{target.key}.log").open("a", encoding="utf-8") as log:
        if target.transport == "stdio":
            return _stdio(target, log)
        return _http(target, log)


def _summary(target: Target, rounds: list[dict[str, float]]) -> dict[str, Any]:
    row: dict[str, Any] = {"server": target.label, "transport": target.transport}
    for phase in PHASES:
        values = [r[phase] for r in rounds]
        row[f"{phase}_ms"] = round(statistics.median(values), 1)
        row[f"{phase}_max_ms"] = round(max(values), 1)
    return row


def run(
    quick: bool = False,
    *,
    rounds: int | None = None,
    peers_dir: Path = DEFAULT_PEERS_DIR,
    before: Path | None = None,
) -> dict[str, Any]:
    """Launch every server ``rounds`` times in alternating order; medians per phase."""
    count = rounds or (3 if quick else 7)
    load_start = os.getloadavg()[0]
    work = Path(tempfile.mkdtemp(prefix="kenning-startup-bench-"))
    for tree in (SRC, before):
        if tree is not None:
            compiled(tree)
    try:
        found, missing = targets(work, peers_dir, before)
        for target in found:  # unmeasured: creates our store, warms the file cache
            _launch(target, work)
        times: dict[str, list[dict[str, float]]] = {t.key: [] for t in found}
        for round_no in range(count):
            for target in found if round_no % 2 == 0 else found[::-1]:
                times[target.key].append(_launch(target, work))
    finally:
        shutil.rmtree(work, ignore_errors=True)
    servers = {t.key: _summary(t, times[t.key]) for t in found}
    result: dict[str, Any] = {
        "rounds": count,
        "cpus": os.cpu_count(),
        "load_average_1m": [round(load_start, 2), round(os.getloadavg()[0], 2)],
        "servers": servers,
        "skipped": missing,
        "rows": [{"key": key, **row} for key, row in servers.items()],
    }
    result["goal"] = _goal(servers)
    return result


def _goal(servers: dict[str, dict[str, Any]]) -> dict[str, Any]:
    keys = ("ours_cold_stdio", "ours_http")
    ours = {k: servers[k]["initialize_ms"] for k in keys if k in servers}
    return {
        "statement": f"ours answers its first request within {GOAL_FIRST_ANSWER_MS:g} ms "
        "over stdio without the quick start and over HTTP (median)",
        "met": len(ours) == len(keys) and max(ours.values()) <= GOAL_FIRST_ANSWER_MS,
        "first_answer_ms": ours,
        "quick_stdio_ms": servers.get("ours_stdio", {}).get("initialize_ms"),
        "nothing_kept_ms": {
            k: servers[k]["initialize_ms"]
            for k in ("ours_bare_stdio", "ours_bare_http")
            if k in servers
        },
    }


def format_table(result: dict[str, Any]) -> str:
    start, end = result["load_average_1m"]
    lines = [
        f"Start-up, launch to answer (median of {result['rounds']} launches, ms); "
        f"load {start} -> {end} on {result['cpus']} CPUs",
        f"{'server':<46}{'via':>6}{'initialize':>12}{'tools/list':>12}{'first call':>12}"
        f"{'init max':>10}",
    ]
    for row in result["servers"].values():
        lines.append(
            f"{row['server']:<46}{row['transport']:>6}{row['initialize_ms']:>12.0f}"
            f"{row['tools_list_ms']:>12.0f}{row['first_call_ms']:>12.0f}"
            f"{row['initialize_max_ms']:>10.0f}"
        )
    for key, why in result["skipped"].items():
        lines.append(f"skipped: {key}: {why}")
    servers = result["servers"]
    for ours, other in (("ours_stdio", "reference_stdio"), ("ours_2026_stdio", "reference_stdio"),
                        ("ours_stdio", "floor_stdio"),
                        ("ours_cold_stdio", "floor_stdio"), ("ours_http", "floor_http"),
                        ("ours_bare_stdio", "floor_stdio"), ("ours_bare_http", "floor_http"),
                        ("ours_cold_stdio", "reference_stdio"),
                        ("ours_cold_stdio", "before_cold_stdio"),
                        ("ours_http", "before_http")):  # fmt: skip
        if ours in servers and other in servers:
            a, b = servers[ours]["initialize_ms"], servers[other]["initialize_ms"]
            lines.append(f"first answer, {ours} / {other}: {a / b:.2f}x ({a - b:+.0f} ms)")
    goal = result["goal"]
    lines.append(f"goal: {goal['statement']}: {'met' if goal['met'] else 'NOT met'}")
    if goal["quick_stdio_ms"] is not None:
        lines.append(f"  (stdio with the quick start: {goal['quick_stdio_ms']:.0f} ms)")
    for key, ms in goal["nothing_kept_ms"].items():
        lines.append(f"  ({key}, a code version's first launch: {ms:.0f} ms)")
    return "\n".join(lines)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(
        prog="python -m bench.startup_bench", description=(__doc__ or "").split("\n\n")[0]
    )
    parser.add_argument("--quick", action="store_true", help="3 launches of each server")
    parser.add_argument("--rounds", type=int, default=None, help="launches of each server")
    parser.add_argument("--json", type=Path, default=None, help="also write the figures here")
    parser.add_argument(
        "--peers-dir", type=Path, default=DEFAULT_PEERS_DIR, help="where the peers are installed"
    )
    parser.add_argument(
        "--before",
        type=Path,
        default=None,
        help="another source tree of ours to measure beside this one (its src/ directory), "
        "e.g. a worktree at the previous commit",
    )
    args = parser.parse_args(argv)
    result = run(args.quick, rounds=args.rounds, peers_dir=args.peers_dir, before=args.before)
    print(format_table(result))
    if args.json is not None:
        args.json.write_text(json.dumps(result, indent=2) + "\n", encoding="utf-8")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
