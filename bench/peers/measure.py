"""Drive servers through the workload with the MCP Python client, timing every call.

Times are taken on the client side around each ``call_tool``: what an agent
waits for, including the stdio round trip and the client's own checks of the
result. Every server gets the initialize handshake (mode "legacy"), so all
speak the same protocol version over the same code path.

Servers measured together are all started first and then asked in turn: batch
by batch, query by query, the order swapped every round. On a shared machine
the load moves by the minute; taking turns gives every server the same load,
so their ratios hold even when the absolute times do not.
"""

from __future__ import annotations

import os
import statistics
import time
from contextlib import AsyncExitStack
from pathlib import Path
from typing import Any

from mcp import Client, StdioServerParameters
from mcp.client.stdio import stdio_client

from bench.keyring import Keyring
from bench.peers.servers import Recipe
from bench.peers.workload import Link, Workload
from bench.stats import pct

CALL_TIMEOUT_S = 300.0


def _text_chars(result: Any) -> int:
    return sum(len(getattr(block, "text", "")) for block in result.content)


def _tail(path: Path, lines: int = 8) -> str:
    try:
        return " | ".join(path.read_text(encoding="utf-8", errors="replace").splitlines()[-lines:])
    except OSError:
        return ""


class ServerFailed(RuntimeError):
    """One of our own servers failed: the benchmark stops, as a test would."""


class _Run:
    """One server's client and what was measured on it so far."""

    def __init__(
        self, recipe: Recipe, log_path: Path, *, ours: bool, budget_s: float | None = None
    ) -> None:
        self.recipe = recipe
        self.log_path = log_path
        self.ours = ours
        self.budget_s = budget_s  # seconds of its own calls before it is stopped
        self.stopped = False  # the budget ran out: it takes no more calls
        self.client: Client | None = None
        self.keyring = Keyring()
        self.failure: str | None = None
        self.start_ms = 0.0
        self.write_ms: list[float] = []
        self.batch_ms: list[float] = []
        self.recorded = 0
        self.link_ms: list[float] = []
        self.linked = 0
        self.search_ms: list[float] = []
        self.hits: list[int] = []
        self.chars: list[int] = []
        self.open_ms: list[float] = []
        self.opened: list[int] = []

    @property
    def live(self) -> bool:
        return self.client is not None and self.failure is None and not self.stopped

    @property
    def spent_s(self) -> float:
        spent = sum(self.write_ms) + sum(self.link_ms) + sum(self.search_ms) + sum(self.open_ms)
        return spent / 1000

    def fail(self, exc: BaseException) -> None:
        self.failure = f"{type(exc).__name__}: {exc}; its stderr: {_tail(self.log_path)}"
        if self.ours:
            raise ServerFailed(f"{self.recipe.label} failed: {self.failure}") from exc

    async def open(self, stack: AsyncExitStack) -> None:
        recipe = self.recipe
        params = StdioServerParameters(command=recipe.command, args=recipe.args, env=recipe.env)
        errlog = stack.enter_context(self.log_path.open("w", encoding="utf-8"))
        started = time.perf_counter()
        try:
            self.client = await stack.enter_async_context(
                Client(
                    stdio_client(params, errlog=errlog),
                    mode="legacy",
                    read_timeout_seconds=CALL_TIMEOUT_S,
                )
            )
        except Exception as exc:
            self.fail(exc)
        self.start_ms = (time.perf_counter() - started) * 1000

    async def call(self, tool: str, arguments: dict[str, Any]) -> tuple[Any, float] | None:
        """The result and its milliseconds, or None once the server has failed or used
        up its budget (the call that passes the budget still counts)."""
        if not self.live or self.client is None:
            return None
        began = time.perf_counter()
        try:
            result = await self.keyring.call(self.client, tool, arguments)
            if result.is_error:
                text = " ".join(getattr(b, "text", "") for b in result.content)[:500]
                raise RuntimeError(f"{tool} answered with an error: {text}")
        except Exception as exc:
            self.fail(exc)
            return None
        ms = (time.perf_counter() - began) * 1000
        budget = self.budget_s
        if budget is not None and self.spent_s + ms / 1000 > budget:
            self.stopped = True
        return result, ms

    async def write(self, batch: Any) -> None:
        for tool, arguments, count in self.recipe.write_calls(self.recorded, batch):
            done = await self.call(tool, arguments)
            if done is None:
                return
            self.write_ms.append(done[1])
            if count:
                self.batch_ms.append(done[1])
            self.recorded += count

    async def link(self, batch: list[Link]) -> None:
        tool, arguments, count = self.recipe.link_call(batch)
        done = await self.call(tool, arguments)
        if done is not None:
            self.link_ms.append(done[1])
            self.linked += count

    async def search(self, query: str, *, keep: bool) -> None:
        done = await self.call(*self.recipe.search_call(query))
        if done is None or not keep:
            return
        result, ms = done
        self.search_ms.append(ms)
        self.hits.append(self.recipe.hits(result.structured_content))
        self.chars.append(_text_chars(result))

    async def open_one(self, name: str) -> None:
        done = await self.call(*self.recipe.open_call(name))
        if done is None:
            return
        result, ms = done
        self.open_ms.append(ms)
        self.opened.append(self.recipe.opened(result.structured_content))

    def figures(self, workload: Workload) -> dict[str, Any]:
        """What was measured. A server stopped by its budget is "partial": its figures
        cover the calls it made, and a phase it never reached is left out."""
        recipe = self.recipe
        if self.failure is not None:
            return {"status": "failed", "label": recipe.label, "reason": self.failure}
        found: dict[str, Any] = {
            "status": "partial" if self.stopped else "ok",
            "label": recipe.label,
            "versions": recipe.versions,
            "notes": recipe.notes,
            "start_ms": round(self.start_ms, 1),
        }
        if self.stopped:
            found["reason"] = (
                f"stopped after {self.budget_s:g} s of its own calls: {self.recorded:,} of "
                f"{len(workload.entities):,} entities recorded, {self.linked:,} of "
                f"{len(workload.links):,} links made, {len(self.search_ms)} of "
                f"{len(workload.queries)} searches, {len(self.open_ms)} of "
                f"{len(workload.opens)} opens"
            )
        if self.batch_ms:
            found["write"] = _rate("entities", self.recorded, self.write_ms, self.batch_ms)
        if self.link_ms:
            found["link"] = _rate("relations", self.linked, self.link_ms, self.link_ms)
        if self.search_ms:
            found["search"] = _latency(self.search_ms) | {
                "mean_ms": round(statistics.fmean(self.search_ms), 2),
                "mean_hits": round(statistics.fmean(self.hits), 1),
                "mean_chars": round(statistics.fmean(self.chars)),
            }
        if self.open_ms:
            found["open"] = _latency(self.open_ms) | {
                "mean_found": round(statistics.fmean(self.opened), 2)
            }
        return found


def _latency(calls_ms: list[float]) -> dict[str, Any]:
    """A phase of single calls: how many, and their p50 and p95."""
    return {
        "calls": len(calls_ms),
        "p50_ms": round(statistics.median(calls_ms), 2),
        "p95_ms": round(pct(calls_ms, 0.95), 2),
    }


def _rate(unit: str, count: int, calls_ms: list[float], batch_ms: list[float]) -> dict[str, Any]:
    """A phase's throughput over all its calls (``calls_ms``), and the times of the calls
    that carried its items (``batch_ms``: our writes also open encounters)."""
    seconds = sum(calls_ms) / 1000
    return {
        unit: count,
        "calls": len(calls_ms),
        "seconds": round(seconds, 3),
        f"{unit}_per_s": round(count / seconds, 1),
        "batch_p50_ms": round(statistics.median(batch_ms), 2),
        "batch_p95_ms": round(pct(batch_ms, 0.95), 2),
        "max_call_ms": round(max(calls_ms), 2),
    }


def _turns(runs: list[_Run], round_no: int) -> list[_Run]:
    live = [run for run in runs if run.live]
    return live if round_no % 2 == 0 else live[::-1]


async def measure(
    recipes: list[Recipe],
    workload: Workload,
    work: Path,
    ours: frozenset[str],
    budget_s: float | None = None,
) -> dict[str, dict[str, Any]]:
    """Start every server, record the entities, link them, run the searches, open names
    one by one, all in turns; the figures.

    A server in ``ours`` that fails raises ServerFailed; a peer that fails is
    reported as failed with its error and the end of its stderr. With ``budget_s``, a
    server whose own calls have taken that long takes no more (its figures "partial"):
    a peer that slows as it grows can be measured at a size it would take hours at.
    """
    load_before = os.getloadavg()[0]
    runs = [
        _Run(r, work / f"{r.key}.stderr.log", ours=r.key in ours, budget_s=budget_s)
        for r in recipes
    ]
    async with AsyncExitStack() as stack:
        for run in runs:
            await run.open(stack)
        for round_no, batch in enumerate(workload.batches()):
            for run in _turns(runs, round_no):
                await run.write(batch)
        for round_no, links in enumerate(workload.link_batches()):
            for run in _turns(runs, round_no):
                await run.link(links)
        for query in workload.warmup:
            for run in _turns(runs, 0):
                await run.search(query, keep=False)
        for round_no, query in enumerate(workload.queries):
            for run in _turns(runs, round_no):
                await run.search(query, keep=True)
        for round_no, name in enumerate(workload.opens):
            for run in _turns(runs, round_no):
                await run.open_one(name)
    load = [round(load_before, 2), round(os.getloadavg()[0], 2)]
    return {run.recipe.key: run.figures(workload) | {"load_average_1m": load} for run in runs}
