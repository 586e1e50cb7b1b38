"""MCP tool-call round trips over streamable HTTP, next to the direct service calls.

One synthetic memory (10k authored nodes; 1k with --quick) is built with the
shared generator. Then, on that same store:

- direct: ``Memory.search`` and ``Memory.create_entities`` (one node per call)
  called in this process;
- http: the same calls as MCP tools, JSON-RPC over one keep-alive HTTP
  connection to ``kenning-encounter serve`` running as a subprocess on a
  loopback port. This is the server-side overhead plus loopback HTTP: framing,
  the SDK's argument validation, the worker-thread hop, the text rendering and
  the output validation. The goal is stated on this column;
- client: the same calls through ``mcp.Client``, which adds what the Python
  client pays on its side (it checks every structured result against the
  tool's output schema with jsonschema).

Searches run first, then the writes, so a search never pays for reloading
the text index after a write (a store cost, measured by store_bench).
Overhead = column - direct, per percentile.

    PYTHONPATH=src python -m bench.server_bench [--quick] [--json OUT]
"""

from __future__ import annotations

import argparse
import json
import os
import re
import shutil
import statistics
import subprocess
import sys
import tempfile
import threading
import time
from collections.abc import Awaitable, Callable
from pathlib import Path
from typing import Any

import anyio
import httpx
from mcp import Client

import kenning_encounter
from bench.keyring import Keyring
from bench.stats import pct
from bench.synth import generate, replay
from kenning_encounter.memory.service import Memory
from kenning_encounter.store.embedded.backend import EmbeddedStore

GOAL_OVERHEAD_P95_MS = 15.0
WARMUP = 5
LISTENING = re.compile(r"listening on (http://\S+)")
PROTOCOL = "2025-11-25"  # the handshake version current clients speak
SRC = Path(kenning_encounter.__file__).resolve().parents[1]


def _note(i: int, where: str) -> dict[str, Any]:
    return {
        "type": "Note",
        "name": f"{where} bench note {i}",
        "description": f"A note recorded by the {where} benchmark, call {i}, about retry storms.",
    }


def _loop(calls: int, one: Callable[[int], Any]) -> list[float]:
    times: list[float] = []
    for i in range(WARMUP + calls):
        started = time.perf_counter()
        one(i)
        if i >= WARMUP:
            times.append((time.perf_counter() - started) * 1000)
    return times


def _direct(data_dir: Path, queries: list[str], calls: int) -> tuple[list[float], list[float]]:
    store = EmbeddedStore.open(data_dir)
    try:
        memory = Memory(store)
        memory.advance_encounter("bench-direct", "measure the direct service calls")
        search = _loop(calls, lambda i: memory.search(queries[i % len(queries)], limit=10))
        create = _loop(
            calls, lambda i: memory.create_entities("bench-direct", [_note(i, "direct")])
        )
        memory.close_encounter("bench-direct", "done")
    finally:
        store.close()
    return search, create


class _RawMcp:
    """A minimal MCP client: JSON-RPC over one keep-alive HTTP connection, nothing else."""

    def __init__(self, url: str) -> None:
        self.url = url
        self.http = httpx.Client(timeout=60)
        self.headers = {
            "accept": "application/json, text/event-stream",
            "content-type": "application/json",
        }
        self._id = 0
        answer = self._post(
            "initialize",
            {
                "protocolVersion": PROTOCOL,
                "capabilities": {},
                "clientInfo": {"name": "server-bench", "version": "0"},
            },
        )
        self.headers["mcp-protocol-version"] = answer["protocolVersion"]
        self.http.post(
            url,
            json={"jsonrpc": "2.0", "method": "notifications/initialized"},
            headers=self.headers,
        ).raise_for_status()

    def _post(self, method: str, params: dict[str, Any]) -> dict[str, Any]:
        self._id += 1
        response = self.http.post(
            self.url,
            json={"jsonrpc": "2.0", "id": self._id, "method": method, "params": params},
            headers=self.headers,
        )
        response.raise_for_status()
        if "mcp-session-id" in response.headers:
            self.headers["mcp-session-id"] = response.headers["mcp-session-id"]
        if response.headers.get("content-type", "").startswith("text/event-stream"):
            data = [ln[5:].strip() for ln in response.text.splitlines() if ln.startswith("data:")]
            message = json.loads(data[-1])
        else:
            message = response.json()
        if "error" in message:
            raise RuntimeError(f"{method} failed: {message['error']}")
        result: dict[str, Any] = message["result"]
        return result

    def call(self, tool: str, arguments: dict[str, Any]) -> dict[str, Any]:
        result = self._post("tools/call", {"name": tool, "arguments": arguments})
        if result.get("isError"):
            raise RuntimeError(f"{tool} failed: {result['content']}")
        return result

    def close(self) -> None:
        self.http.close()


def _over_http(url: str, queries: list[str], calls: int) -> tuple[list[float], list[float]]:
    raw = _RawMcp(url)
    try:
        opened = raw.call("advance_encounter", {"session_id": "bench-http", "purpose": "raw http"})
        # A client keeps the handle the opening call hands out and passes it from then on.
        session = str(opened["structuredContent"]["handle"])
        search = _loop(
            calls, lambda i: raw.call("search", {"query": queries[i % len(queries)], "limit": 10})
        )
        create = _loop(
            calls,
            lambda i: raw.call(
                "create_entities", {"session_id": session, "entities": [_note(i, "http")]}
            ),
        )
        raw.call("close_encounter", {"session_id": session, "summary": "done"})
    finally:
        raw.close()
    return search, create


class _Server:
    """``kenning-encounter serve`` on a free loopback port, its URL read from stderr."""

    def __init__(self, data_dir: Path) -> None:
        env = {k: v for k, v in os.environ.items() if not k.startswith("KENNING_ENCOUNTER_")}
        env["PYTHONPATH"] = os.pathsep.join(filter(None, [str(SRC), env.get("PYTHONPATH", "")]))
        self.proc = subprocess.Popen(
            [sys.executable, "-m", "kenning_encounter", "serve", "--data-dir", str(data_dir),
             "--port", "0", "--matcher", "off", "--log-level", "WARNING"],
            stdin=subprocess.DEVNULL,
            stdout=subprocess.DEVNULL,
            stderr=subprocess.PIPE,
            text=True,
            env=env,
        )  # fmt: skip
        self.url = ""
        self._lines: list[str] = []
        found = threading.Event()
        self._pump = threading.Thread(target=self._read, args=(found,), daemon=True)
        self._pump.start()
        if not found.wait(120) or not self.url:
            self.stop()
            raise RuntimeError("the server did not start:\n" + "\n".join(self._lines))

    def _read(self, found: threading.Event) -> None:
        assert self.proc.stderr is not None
        for line in self.proc.stderr:
            self._lines.append(line.rstrip())
            match = LISTENING.search(line)
            if match:
                self.url = match.group(1)
                found.set()
        found.set()

    def stop(self) -> None:
        if self.proc.poll() is None:
            self.proc.terminate()
            try:
                self.proc.wait(timeout=30)
            except subprocess.TimeoutExpired:
                self.proc.kill()
                self.proc.wait()
        self._pump.join(timeout=5)
        if self.proc.stderr is not None:
            self.proc.stderr.close()


async def _aloop(calls: int, one: Callable[[int], Awaitable[Any]]) -> list[float]:
    times: list[float] = []
    for i in range(WARMUP + calls):
        started = time.perf_counter()
        result = await one(i)
        if i >= WARMUP:
            times.append((time.perf_counter() - started) * 1000)
        if getattr(result, "is_error", False):
            raise RuntimeError(f"a benchmark call failed: {result.content}")
    return times


async def _through_client(
    url: str, queries: list[str], calls: int
) -> tuple[list[float], list[float]]:
    session = "bench-client"
    keyring = Keyring()
    async with Client(url) as client:
        await keyring.call(
            client,
            "advance_encounter",
            {"session_id": session, "purpose": "measure the mcp client"},
        )
        search = await _aloop(
            calls,
            lambda i: client.call_tool("search", {"query": queries[i % len(queries)], "limit": 10}),
        )
        create = await _aloop(
            calls,
            lambda i: client.call_tool(
                "create_entities",
                keyring.signed({"session_id": session, "entities": [_note(i, "client")]}),
            ),
        )
        await keyring.call(client, "close_encounter", {"session_id": session, "summary": "done"})
    return search, create


def _compare(direct: list[float], http: list[float], client: list[float]) -> dict[str, float]:
    d50, d95 = statistics.median(direct), pct(direct, 0.95)
    figures = {"direct_p50_ms": d50, "direct_p95_ms": d95}
    for name, times in (("http", http), ("client", client)):
        p50, p95 = statistics.median(times), pct(times, 0.95)
        figures |= {
            f"{name}_p50_ms": p50,
            f"{name}_p95_ms": p95,
            f"{name}_overhead_p50_ms": p50 - d50,
            f"{name}_overhead_p95_ms": p95 - d95,
            f"{name}_ratio_p50": p50 / d50,
            f"{name}_ratio_p95": p95 / d95,
        }
    return {k: round(v, 2) for k, v in figures.items()}


def run(quick: bool = False) -> dict[str, Any]:
    nodes = 1_000 if quick else 10_000
    calls = 50 if quick else 200
    synth = generate(nodes, seed=nodes)
    work = Path(tempfile.mkdtemp(prefix="kenning-server-bench-"))
    data_dir = work / "memory"
    try:
        store = EmbeddedStore.open(data_dir)
        memory = Memory(store)
        started = time.perf_counter()
        for _ in replay(memory, synth):
            pass
        build_s = time.perf_counter() - started
        store.close()

        direct_search, direct_create = _direct(data_dir, synth.queries, calls)
        server = _Server(data_dir)
        try:
            http_search, http_create = _over_http(server.url, synth.queries, calls)
            client_search, client_create = anyio.run(
                _through_client, server.url, synth.queries, calls
            )
        finally:
            server.stop()
    finally:
        shutil.rmtree(work, ignore_errors=True)
    result: dict[str, Any] = {
        "nodes": nodes,
        "calls_per_tool": calls,
        "build_seconds": round(build_s, 1),
        "load_average_1m": round(os.getloadavg()[0], 2),
        "cpus": os.cpu_count(),
        "search": _compare(direct_search, http_search, client_search),
        "create_entities": _compare(direct_create, http_create, client_create),
        "goal_overhead_p95_ms": GOAL_OVERHEAD_P95_MS,
    }
    result["goal_met"] = all(
        result[tool]["http_overhead_p95_ms"] < GOAL_OVERHEAD_P95_MS
        for tool in ("search", "create_entities")
    )
    return result


def format_table(result: dict[str, Any]) -> str:
    lines = [
        f"MCP tool calls vs the direct service call: {result['nodes']} nodes, "
        f"{result['calls_per_tool']} calls per tool, load {result['load_average_1m']} "
        f"on {result['cpus']} CPUs (milliseconds)",
        f"{'tool':<16}{'path':<8}{'p50':>9}{'p95':>9}{'+p50':>9}{'+p95':>9}{'x p50':>8}{'x p95':>8}",
    ]
    for tool in ("search", "create_entities"):
        r = result[tool]
        lines.append(f"{tool:<16}{'direct':<8}{r['direct_p50_ms']:>9.2f}{r['direct_p95_ms']:>9.2f}")
        for path in ("http", "client"):
            lines.append(
                f"{'':<16}{path:<8}{r[f'{path}_p50_ms']:>9.2f}{r[f'{path}_p95_ms']:>9.2f}"
                f"{r[f'{path}_overhead_p50_ms']:>9.2f}{r[f'{path}_overhead_p95_ms']:>9.2f}"
                f"{r[f'{path}_ratio_p50']:>8.2f}{r[f'{path}_ratio_p95']:>8.2f}"
            )
    verdict = "met" if result["goal_met"] else "NOT met"
    lines.append(
        f"goal: server-side overhead (http) p95 < {result['goal_overhead_p95_ms']:g} ms: {verdict}"
    )
    return "\n".join(lines)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m bench.server_bench", description=__doc__)
    parser.add_argument("--quick", action="store_true", help="1k nodes, 50 calls per tool")
    parser.add_argument("--json", type=Path, default=None, help="also write the figures here")
    args = parser.parse_args(argv)
    result = run(quick=args.quick)
    print(format_table(result))
    if args.json is not None:
        args.json.write_text(json.dumps(result, indent=2) + "\n", encoding="utf-8")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
