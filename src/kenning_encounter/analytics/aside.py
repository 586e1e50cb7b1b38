"""Leiden in a worker process, while this one computes the rest of the panel.

At a million nodes Leiden (one pass) and sampled betweenness are most of a panel's
algorithms (about 10 and 8 s here), and igraph holds the interpreter's lock while it
works, so threads cannot overlap them. A worker process can. It is handed the
projection's edges over a pipe, loads the same graph (``algorithms.load_simple``), runs
the same seeded Leiden (``algorithms.leiden_of``) and sends the membership back: the
same edges in the same order and the same seed give the communities this process would
have found, and a test holds it to that.

Only for a large projection on a machine with a second core (``worth_it``): a worker
costs about a second to start and as much to load. Should it fail in any way, the
panel runs Leiden itself and the log says why. The worker reads its input before it
imports anything heavy, so the writer here is not kept waiting on its start.

Run as ``python -m kenning_encounter.analytics.aside``: the worker's side.
"""

from __future__ import annotations

import contextlib
import json
import logging
import os
import subprocess
import sys
from typing import IO, TYPE_CHECKING, Final

if TYPE_CHECKING:
    from kenning_encounter.analytics.engine import Communities
    from kenning_encounter.analytics.projection import Projection

logger = logging.getLogger(__name__)

# From this many nodes Leiden is run aside (two passes at 200k took about 3 s here).
ASIDE_FROM: Final = 200_000
# A worker that has not answered in this long is stopped and Leiden run here.
ASIDE_TIMEOUT_S: Final = 600.0
_INT: Final = "<i8"  # every integer on the pipe: little-endian, 8 bytes


def worth_it(nodes: int) -> bool:
    """Whether a projection is large enough, and the machine has a core to spare."""
    try:
        cores = len(os.sched_getaffinity(0))
    except AttributeError:  # not on Linux
        cores = os.cpu_count() or 1
    return nodes >= ASIDE_FROM and cores >= 2


class LeidenAside:
    """One worker computing one projection's communities."""

    def __init__(self, process: subprocess.Popen[bytes], nodes: int, iterations: int, seed: int):
        self._process = process
        self._nodes = nodes
        self._iterations = iterations
        self._seed = seed

    @classmethod
    def start(
        cls, projection: Projection, iterations: int, seed: int, *, python: str | None = None
    ) -> LeidenAside | None:
        """A worker started on ``projection``'s edges by ``python`` (this interpreter when
        not given), or None (logged) if it could not be."""
        header = {
            "nodes": projection.node_count,
            "edges": projection.edge_count,
            "iterations": iterations,
            "seed": seed,
        }
        try:
            process = subprocess.Popen(
                [python or sys.executable, "-m", __name__],
                stdin=subprocess.PIPE,
                stdout=subprocess.PIPE,
                stderr=subprocess.PIPE,
            )
        except OSError as exc:
            logger.warning("communities: no worker process (%s); computed here", exc)
            return None
        aside = cls(process, projection.node_count, iterations, seed)
        try:
            feed = _pipe(process.stdin)
            feed.write(json.dumps(header).encode() + b"\n")
            feed.write(projection.sources.astype(_INT).tobytes())
            feed.write(projection.targets.astype(_INT).tobytes())
            feed.close()
            process.stdin = None  # written whole: ``communicate`` only reads from here on
        except OSError as exc:
            logger.warning("communities: the worker took no input (%s); computed here", exc)
            aside.close()
            return None
        return aside

    def result(self, timeout: float = ASIDE_TIMEOUT_S) -> Communities | None:
        """The worker's communities, or None (logged) when it failed or took too long."""
        import numpy as np

        from kenning_encounter.analytics.engine import ENGINE_IGRAPH, Communities

        try:
            out, err = self._process.communicate(timeout=timeout)
        except subprocess.TimeoutExpired:
            logger.warning("communities: the worker took over %.0f s; computed here", timeout)
            self.close()
            return None
        if self._process.returncode != 0:
            tail = err.decode(errors="replace").strip().splitlines()[-1:] or ["no message"]
            logger.warning(
                "communities: the worker failed (exit %s: %s); computed here",
                self._process.returncode,
                tail[0],
            )
            return None
        head, _, body = out.partition(b"\n")
        if len(body) != 8 * self._nodes:
            logger.warning("communities: the worker's answer is short; computed here")
            return None
        membership = np.frombuffer(body, dtype=_INT).astype(np.int64)
        said = json.loads(head)
        modularity = float(said["modularity"])
        logger.debug(
            "communities: found by a worker (%d nodes, peak %s MiB)",
            self._nodes,
            said.get("peak_mib"),
        )
        # The worker numbered the communities by size, largest first (engine.by_size).
        sizes = np.bincount(membership).astype(np.int64)
        return Communities(
            ENGINE_IGRAPH, membership, sizes, modularity, self._iterations, self._seed
        )

    def close(self) -> None:
        """Stop the worker if it still runs (a panel that failed no longer needs it)."""
        process = self._process
        if process.poll() is None:
            process.kill()
            process.wait()
        for stream in (process.stdin, process.stdout, process.stderr):
            if stream is not None:
                # What a worker gone at once left unwritten cannot be flushed: let it go.
                with contextlib.suppress(OSError):
                    stream.close()


def _pipe(stream: IO[bytes] | None) -> IO[bytes]:
    if stream is None:
        raise OSError("no pipe to the worker")
    return stream


def _read_exactly(stream: IO[bytes], size: int) -> bytes:
    data = stream.read(size)
    if len(data) != size:
        raise SystemExit(f"aside: expected {size} bytes of edges, read {len(data)}")
    return data


def _peak_mib() -> int | None:
    """This process's own peak resident memory (``VmHWM``: since its exec, unlike
    ``ru_maxrss``, which keeps the forking parent's), where Linux tells it."""
    try:
        status = open("/proc/self/status", encoding="ascii").read()  # noqa: SIM115
    except OSError:
        return None
    for line in status.splitlines():
        if line.startswith("VmHWM:"):
            return int(line.split()[1]) // 1024
    return None


def main() -> int:
    """The worker: edges in on stdin, membership out on stdout."""
    stdin, stdout = sys.stdin.buffer, sys.stdout.buffer
    header = json.loads(stdin.readline())
    nodes, edges = int(header["nodes"]), int(header["edges"])
    sources = _read_exactly(stdin, 8 * edges)
    targets = _read_exactly(stdin, 8 * edges)
    # Only now the heavy imports: the parent has written everything.
    import numpy as np

    from kenning_encounter.analytics.algorithms import leiden_of, load_simple

    simple = load_simple(
        nodes,
        np.frombuffer(sources, dtype=_INT).astype(np.int64),
        np.frombuffer(targets, dtype=_INT).astype(np.int64),
    )
    found = leiden_of(simple, int(header["iterations"]), int(header["seed"]))
    answer = {"modularity": found.modularity, "peak_mib": _peak_mib()}
    stdout.write(json.dumps(answer).encode() + b"\n")
    stdout.write(found.membership.astype(_INT).tobytes())
    stdout.flush()
    return 0


if __name__ == "__main__":
    sys.exit(main())
