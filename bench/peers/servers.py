"""The servers compared, each as one recipe: how to start it and how to ask it the workload.

Every server is started as a subprocess speaking MCP over stdio and driven by
the same client, so what differs between rows is only the server. A peer that
is not installed is not an error: its recipe says why it cannot run and the
command that installs it, and the benchmark reports it as skipped.
"""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import kenning_encounter
from bench.peers.workload import Entity, Link
from kenning_encounter.server.info import package_version

REPO = Path(__file__).resolve().parents[2]
SRC = Path(kenning_encounter.__file__).resolve().parents[1]
DEFAULT_PEERS_DIR = REPO / "bench" / ".peers"

REFERENCE_PACKAGE = "@modelcontextprotocol/server-memory"
REFERENCE_LABEL = f"{REFERENCE_PACKAGE} (node)"
REFERENCE_VERSION = "2026.8.31"
NEO4J_MEMORY_PACKAGE = "mcp-neo4j-memory"
NEO4J_MEMORY_VERSION = "0.4.5"
NEO4J_MEMORY_VENV = "venv-neo4j-memory"
# Ours opens a new encounter this often, as an agent would between units of work;
# those calls count in its write time.
ENTITIES_PER_ENCOUNTER = 1_000

OURS_LABEL = "kenning-encounter (embedded)"
OURS_NEO4J_LABEL = "kenning-encounter (neo4j)"

ToolCall = tuple[str, dict[str, Any], int]  # tool, arguments, entities it records


@dataclass(frozen=True)
class Neo4jTarget:
    uri: str
    username: str
    password: str
    database: str = "neo4j"


@dataclass
class Recipe:
    """One server: its command, the calls that record a batch, the call that searches."""

    key: str
    label: str
    command: str
    args: list[str]
    env: dict[str, str]
    # (entities recorded before this batch, the batch) -> the calls that record it
    write_calls: Callable[[int, list[Entity]], list[ToolCall]]
    link_call: Callable[[list[Link]], ToolCall]
    search_call: Callable[[str], tuple[str, dict[str, Any]]]
    hits: Callable[[Any], int]
    open_call: Callable[[str], tuple[str, dict[str, Any]]]  # a recorded name -> the call
    opened: Callable[[Any], int]  # the entities an open's structured result holds
    versions: dict[str, str] = field(default_factory=lambda: {})
    neo4j: Neo4jTarget | None = None
    notes: str = ""


@dataclass(frozen=True)
class Unavailable:
    key: str
    label: str
    reason: str


def _ours_opened(structured: Any) -> int:
    return 1 if isinstance(structured, dict) and isinstance(structured.get("node"), dict) else 0


def _listed(structured: Any, key: str) -> int:
    if isinstance(structured, dict) and isinstance(structured.get(key), list):
        return len(structured[key])  # pyright: ignore[reportUnknownArgumentType]
    return 0


def _ours_write_calls(done_before: int, batch: list[Entity]) -> list[ToolCall]:
    calls: list[ToolCall] = []
    if done_before % ENTITIES_PER_ENCOUNTER < len(batch):
        advance: dict[str, Any] = {
            "session_id": "peers-bench",
            "purpose": f"record entities from {done_before} on",
        }
        if done_before:
            advance["close_summary"] = f"recorded entities up to {done_before}"
        calls.append(("advance_encounter", advance, 0))
    entities = [{"type": e.type, "name": e.name, "description": e.text} for e in batch]
    calls.append(
        ("create_entities", {"session_id": "peers-bench", "entities": entities}, len(batch))
    )
    return calls


def _ours_link_call(batch: list[Link]) -> ToolCall:
    relations = [{"source": k.source, "type": k.type, "target": k.target} for k in batch]
    return ("create_relations", {"session_id": "peers-bench", "relations": relations}, len(batch))


def _ours_env(data_dir: Path) -> dict[str, str]:
    # The client starts servers with a minimal environment; ours runs from the source tree,
    # and keeps its quick-start answers (server/front.py) beside the bench's memory, not
    # in the user's cache.
    return {
        "PYTHONPATH": os.pathsep.join(filter(None, [str(SRC), os.environ.get("PYTHONPATH")])),
        "KENNING_ENCOUNTER_CACHE_DIR": str(data_dir.parent / f"{data_dir.name}-cache"),
    }


def ours(data_dir: Path, neo4j: Neo4jTarget | None = None) -> Recipe:
    """``kenning-encounter serve`` on the embedded store, or on Neo4j when a target is given."""
    args = ["-m", "kenning_encounter", "serve", "--transport", "stdio"]
    args += ["--data-dir", str(data_dir), "--matcher", "off"]
    env = _ours_env(data_dir)
    key, label = "ours", OURS_LABEL
    if neo4j is not None:
        args += ["--store", "neo4j", "--neo4j-uri", neo4j.uri]
        args += ["--neo4j-username", neo4j.username, "--neo4j-database", neo4j.database]
        env["NEO4J_PASSWORD"] = neo4j.password
        key, label = "ours_neo4j", OURS_NEO4J_LABEL
    return _asked_as_ours(key, label, args, env, neo4j, "search returns the 10 best-ranked hits")


def _asked_as_ours(
    key: str,
    label: str,
    args: list[str],
    env: dict[str, str],
    neo4j: Neo4jTarget | None,
    notes: str,
) -> Recipe:
    """A server of ours, asked the workload with our tools."""
    return Recipe(
        key=key,
        label=label,
        command=sys.executable,
        args=args,
        env=env,
        write_calls=_ours_write_calls,
        link_call=_ours_link_call,
        search_call=lambda q: ("search", {"query": q, "limit": 10}),
        hits=lambda s: _listed(s, "hits"),
        open_call=lambda n: ("find_by_name", {"name": n}),
        opened=_ours_opened,
        versions={"kenning-encounter": package_version()},
        neo4j=neo4j,
        notes=notes,
    )


FLOOR_LABEL = "floor: ours with no memory"


def floor() -> Recipe:
    """Our wire, SDK and result models with nothing recorded (floor_server.py): what a
    call costs before the memory does anything, asked exactly as ours is."""
    return _asked_as_ours(
        "floor",
        FLOOR_LABEL,
        ["-m", "bench.peers.floor_server"],
        {"PYTHONPATH": os.pathsep.join([str(SRC), str(REPO)])},
        None,
        "records nothing; a search answers with the last ten names sent, an open with "
        "what was sent under the name",
    )


def reference_install(peers_dir: Path) -> list[str]:
    return [
        "npm", "install", "--prefix", str(peers_dir), "--save-exact", "--no-audit", "--no-fund",
        f"{REFERENCE_PACKAGE}@{REFERENCE_VERSION}",
    ]  # fmt: skip


def reference(peers_dir: Path, work_dir: Path) -> Recipe | Unavailable:
    """The reference memory server: a Node process keeping the graph in one JSONL file."""
    key, label = "reference", REFERENCE_LABEL
    install = " ".join(reference_install(peers_dir))
    node = shutil.which("node")
    if node is None:
        return Unavailable(key, label, "node is not on PATH; install Node.js 18 or later")
    package = peers_dir / "node_modules" / REFERENCE_PACKAGE
    entry = package / "dist" / "index.js"
    if not entry.is_file():
        return Unavailable(key, label, f"{entry} is missing; install it with: {install}")
    version = json.loads((package / "package.json").read_text(encoding="utf-8"))["version"]
    sdk = peers_dir / "node_modules" / "@modelcontextprotocol" / "sdk" / "package.json"
    versions = {REFERENCE_PACKAGE: version, "node": _output([node, "--version"])}
    if sdk.is_file():
        versions["@modelcontextprotocol/sdk"] = json.loads(sdk.read_text("utf-8"))["version"]

    def write_calls(_done_before: int, batch: list[Entity]) -> list[ToolCall]:
        entities = [{"name": e.name, "entityType": e.type, "observations": [e.text]} for e in batch]
        return [("create_entities", {"entities": entities}, len(batch))]

    def link_call(batch: list[Link]) -> ToolCall:
        relations = [{"from": k.source, "to": k.target, "relationType": k.type} for k in batch]
        return ("create_relations", {"relations": relations}, len(batch))

    return Recipe(
        key=key,
        label=label,
        command=node,
        args=[str(entry)],
        env={"MEMORY_FILE_PATH": str(work_dir / "memory.jsonl")},
        write_calls=write_calls,
        link_call=link_call,
        search_call=lambda q: ("search_nodes", {"query": q}),
        hits=lambda s: _listed(s, "entities"),
        open_call=lambda n: ("open_nodes", {"names": [n]}),
        opened=lambda s: _listed(s, "entities"),
        versions=versions,
        notes="search returns every entity containing the query as a substring",
    )


def neo4j_memory_install(peers_dir: Path) -> list[list[str]]:
    venv = peers_dir / NEO4J_MEMORY_VENV
    return [
        [sys.executable, "-m", "venv", str(venv)],
        [str(venv / "bin" / "pip"), "install", "--quiet", f"{NEO4J_MEMORY_PACKAGE}=={NEO4J_MEMORY_VERSION}"],
    ]  # fmt: skip


NEO4J_MEMORY_LABEL = f"{NEO4J_MEMORY_PACKAGE} (python)"


def neo4j_memory_missing(peers_dir: Path) -> Unavailable | None:
    script = peers_dir / NEO4J_MEMORY_VENV / "bin" / NEO4J_MEMORY_PACKAGE
    if script.is_file():
        return None
    install = " && ".join(" ".join(c) for c in neo4j_memory_install(peers_dir))
    return Unavailable(
        "neo4j_memory", NEO4J_MEMORY_LABEL, f"{script} is missing; install it with: {install}"
    )


def neo4j_memory(peers_dir: Path, target: Neo4jTarget) -> Recipe | Unavailable:
    """The Neo4j memory server from PyPI, in its own virtualenv (it needs the 1.x MCP SDK)."""
    missing = neo4j_memory_missing(peers_dir)
    if missing is not None:
        return missing
    venv = peers_dir / NEO4J_MEMORY_VENV
    probe = (
        "import importlib.metadata as m; "
        "print(' '.join(m.version(p) for p in ('mcp-neo4j-memory', 'fastmcp', 'mcp', 'neo4j')))"
    )
    found = _output([str(venv / "bin" / "python"), "-c", probe]).split()
    names = (NEO4J_MEMORY_PACKAGE, "fastmcp", "mcp (python sdk)", "neo4j (driver)")

    def write_calls(_done_before: int, batch: list[Entity]) -> list[ToolCall]:
        entities = [{"name": e.name, "type": e.type, "observations": [e.text]} for e in batch]
        return [("create_entities", {"entities": entities}, len(batch))]

    def link_call(batch: list[Link]) -> ToolCall:
        relations = [
            {"source": k.source, "target": k.target, "relationType": k.type} for k in batch
        ]
        return ("create_relations", {"relations": relations}, len(batch))

    return Recipe(
        key="neo4j_memory",
        label=NEO4J_MEMORY_LABEL,
        command=str(venv / "bin" / NEO4J_MEMORY_PACKAGE),
        args=[],
        env={
            "NEO4J_URL": target.uri,
            "NEO4J_USERNAME": target.username,
            "NEO4J_PASSWORD": target.password,
            "NEO4J_DATABASE": target.database,
            "NEO4J_TRANSPORT": "stdio",
        },
        write_calls=write_calls,
        link_call=link_call,
        search_call=lambda q: ("search_memories", {"query": q}),
        hits=lambda s: _listed(s, "entities"),
        open_call=lambda n: ("find_memories_by_name", {"names": [n]}),
        opened=lambda s: _listed(s, "entities"),
        versions=dict(zip(names, found, strict=False)),
        neo4j=target,
        notes="search returns every entity matching any query word (Lucene fulltext)",
    )


def _output(command: list[str]) -> str:
    try:
        done = subprocess.run(command, capture_output=True, text=True, timeout=60, check=True)
    except (OSError, subprocess.SubprocessError):
        return "unknown"
    return done.stdout.strip()
