"""The Claude Code hook's own overhead: process start, transcript tail, HTTP.

The hook runs as ``python3 -S infuse_hook.py`` once per typed prompt, so its
cost is a fresh interpreter, a read of the transcript's tail and one HTTP round
trip. Measured against a local server that answers at once (its own handling
time is recorded and reported, so what remains is the hook's), with the
interpreter running this benchmark.

    python bench/hook_bench.py [--quick]

Goal (issue 7): under 60 ms beyond the server's time, with a 100 MB transcript.
"""

from __future__ import annotations

import argparse
import importlib.util
import json
import os
import resource
import socket
import statistics
import subprocess
import sys
import tempfile
import threading
import time
from collections.abc import Callable
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from types import ModuleType

from bench.stats import pct

HOOK = (
    Path(__file__).resolve().parents[1] / "src" / "kenning_encounter" / "hooks" / "infuse_hook.py"
)
BIG_BYTES = 100 * 1024 * 1024
ANSWER = json.dumps(
    {
        "payload": "## held\n" + "- a node that bears on this, with its description\n" * 40,
        "meta": {"channel": "meaning", "degraded": False, "degraded_reason": None},
    }
).encode()


class InstantServer:
    """Answers /infuse at once and records how long each answer took it."""

    def __init__(self) -> None:
        self.handling: list[float] = []
        bench = self

        class Handler(BaseHTTPRequestHandler):
            protocol_version = "HTTP/1.1"

            def setup(self) -> None:
                super().setup()
                # As asyncio servers (uvicorn) do: without it, Nagle holds the
                # body behind the headers until the client's delayed ACK.
                self.connection.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)

            def do_POST(self) -> None:
                started = time.perf_counter()
                self.rfile.read(int(self.headers.get("Content-Length", "0")))
                self.send_response(200)
                self.send_header("Content-Type", "application/json")
                self.send_header("Content-Length", str(len(ANSWER)))
                self.send_header("Connection", "close")
                self.end_headers()
                self.wfile.write(ANSWER)
                bench.handling.append(time.perf_counter() - started)

            def log_message(self, format: str, *args: object) -> None:
                pass

        self.server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self.server.daemon_threads = True
        self.url = f"http://127.0.0.1:{self.server.server_address[1]}"
        threading.Thread(
            target=self.server.serve_forever, kwargs={"poll_interval": 0.05}, daemon=True
        ).start()

    def close(self) -> None:
        self.server.shutdown()
        self.server.server_close()


def line(kind: str, content: object) -> str:
    role = "assistant" if kind == "assistant" else "user"
    record = {
        "isSidechain": False,
        "type": kind,
        "message": {"role": role, "content": content},
        "uuid": "u",
        "timestamp": "2025-01-01T00:00:00Z",
    }
    return json.dumps(record) + "\n"


def session_block() -> str:
    """One stretch of a working session: a prompt, tool traffic, answers."""
    return (
        line("user", "please look at the failing test and fix it")
        + line("assistant", [{"type": "text", "text": "reading the file " * 30}])
        + line(
            "user",
            [{"type": "tool_result", "tool_use_id": "t", "content": "source line\n" * 1500}],
        )
        + line("assistant", [{"type": "text", "text": "the fix is " * 60}])
    )


def write_transcripts(folder: Path) -> tuple[Path, Path]:
    small = folder / "small.jsonl"
    small.write_text(session_block() * 3, encoding="utf-8")
    big = folder / "big.jsonl"
    block = (session_block() * 50).encode()
    with big.open("wb") as out:
        written = 0
        while written < BIG_BYTES:
            out.write(block)
            written += len(block)
    return small, big


def percentiles(samples: list[float]) -> dict[str, float]:
    ordered = sorted(samples)
    p95 = pct(ordered, 0.95)
    return {
        # The minimum is the cost with no interference from other processes.
        "min_ms": round(ordered[0] * 1000, 2),
        "p50_ms": round(statistics.median(ordered) * 1000, 2),
        "p95_ms": round(p95 * 1000, 2),
        "n": len(ordered),
    }


def summary(measured: tuple[list[float], list[float]]) -> dict[str, float]:
    wall, cpu = measured
    stats = percentiles(wall)
    if any(cpu):
        stats["cpu_p50_ms"] = round(statistics.median(cpu) * 1000, 2)
    return stats


def child_cpu() -> float:
    usage = resource.getrusage(resource.RUSAGE_CHILDREN)
    return usage.ru_utime + usage.ru_stime


def time_runs(runs: int, once: Callable[[], object]) -> tuple[list[float], list[float]]:
    """Wall time of each run, and the CPU time its child process used.

    CPU time barely moves with machine load, so it is the figure to compare
    across runs on a busy machine; wall time is what a user waits.
    """
    once()  # warm the page cache and the interpreter's files
    wall: list[float] = []
    cpu: list[float] = []
    for _ in range(runs):
        cpu_before = child_cpu()
        started = time.perf_counter()
        once()
        wall.append(time.perf_counter() - started)
        cpu.append(child_cpu() - cpu_before)
    return wall, cpu


def hook_once(server: InstantServer, transcript: Path) -> Callable[[], object]:
    event = json.dumps(
        {
            "session_id": "bench",
            "transcript_path": str(transcript),
            "cwd": "/bench",
            "hook_event_name": "UserPromptSubmit",
            "prompt": "why does the test fail?",
        }
    ).encode()
    # Handles the hook keeps go to a folder of the bench's own, never the user's state.
    state = tempfile.mkdtemp(prefix="kenning-encounter-bench-state-")
    env = dict(
        os.environ,
        KENNING_ENCOUNTER_URL=server.url,
        KENNING_ENCOUNTER_INFUSE="on",
        XDG_STATE_HOME=state,
    )

    def once() -> object:
        done = subprocess.run(
            [sys.executable, "-S", str(HOOK), "--mode", "prompt"],
            input=event,
            env=env,
            capture_output=True,
            check=True,
        )
        if b"additionalContext" not in done.stdout:
            raise RuntimeError(f"the hook printed no payload: {done.stdout!r} {done.stderr!r}")
        return done

    return once


def load_hook() -> ModuleType:
    spec = importlib.util.spec_from_file_location("bench_infuse_hook", HOOK)
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def run(quick: bool) -> dict[str, object]:
    runs = 10 if quick else 60
    hook = load_hook()
    server = InstantServer()
    try:
        with tempfile.TemporaryDirectory(prefix="hook-bench-") as folder:
            small, big = write_transcripts(Path(folder))
            start = time_runs(
                runs,
                lambda: subprocess.run([sys.executable, "-S", "-c", "pass"], check=True),
            )
            tail = time_runs(runs, lambda: hook.trajectory(str(big), "why?", 6))
            server.handling.clear()
            small_runs = time_runs(runs, hook_once(server, small))
            big_runs = time_runs(runs, hook_once(server, big))
            handling = list(server.handling)
            size = big.stat().st_size
    finally:
        server.close()
    big_stats = summary(big_runs)
    server_stats = percentiles(handling)
    return {
        "python": sys.executable,
        "python_version": sys.version.split()[0],
        "runs": runs,
        "transcript_bytes": size,
        "process_start": summary(start),
        "tail_parse_100mb_in_process": summary(tail),
        "hook_small_transcript": summary(small_runs),
        "hook_100mb_transcript": big_stats,
        "server_handling": server_stats,
        "overhead_100mb_p50_ms": round(big_stats["p50_ms"] - server_stats["p50_ms"], 2),
        "overhead_100mb_p95_ms": round(big_stats["p95_ms"] - server_stats["p50_ms"], 2),
        # Other processes inflate wall times; the load says how much to trust p95.
        "load_average_1min": round(os.getloadavg()[0], 2),
        "cpus": os.cpu_count(),
        "goal_ms": 60,
    }


def main() -> None:
    parser = argparse.ArgumentParser(description=(__doc__ or "").splitlines()[0])
    parser.add_argument("--quick", action="store_true", help="few runs, for a smoke check")
    result = run(parser.parse_args().quick)
    print(f"python {result['python_version']} ({result['python']}), {result['runs']} runs")
    print(f"{'measure':<32}{'min ms':>10}{'p50 ms':>10}{'p95 ms':>10}{'cpu p50':>10}")
    for key in (
        "process_start",
        "tail_parse_100mb_in_process",
        "hook_small_transcript",
        "hook_100mb_transcript",
        "server_handling",
    ):
        stats = result[key]
        assert isinstance(stats, dict)
        cpu = stats.get("cpu_p50_ms", "")
        print(f"{key:<32}{stats['min_ms']:>10}{stats['p50_ms']:>10}{stats['p95_ms']:>10}{cpu:>10}")
    print(
        f"hook overhead, 100 MB transcript: p50 {result['overhead_100mb_p50_ms']} ms, "
        f"p95 {result['overhead_100mb_p95_ms']} ms (goal < {result['goal_ms']} ms; "
        f"load {result['load_average_1min']} on {result['cpus']} CPUs)"
    )


if __name__ == "__main__":
    main()
