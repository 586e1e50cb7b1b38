"""Characters per tool result, as text and as structured JSON, on a seeded memory.

Claude Code hands the model a tool's structuredContent (serialized JSON), not
its text block, so a budget only bounds what the model reads when it bounds
the JSON. This drives every served tool once through a real in-process MCP
client over a memory recorded by ``bench.synth`` and reports, per tool, the
length of the text rendering and of the compact JSON.

``python -m bench.tool_chars [--nodes N] [--json OUT] [--compare BEFORE.json]``
"""

from __future__ import annotations

import argparse
import json
import shutil
import tempfile
from collections.abc import Awaitable, Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import anyio

from bench.keyring import Keyring
from bench.synth import generate

SESSION = "bench-tool-chars"
DEFAULT_NODES = 400


def wire_json(value: Any) -> str:
    """The JSON a client sends on to the model: compact, non-ASCII kept."""
    return json.dumps(value, separators=(",", ":"), ensure_ascii=False)


@dataclass
class Measured:
    tool: str
    text: int
    json: int
    error: str = ""


async def seed(
    client: Any, nodes: int, *, seed_no: int = 7, keyring: Keyring | None = None
) -> list[str]:
    """Record a synthetic history through the tools; the names it created."""
    keyring = keyring or Keyring()
    synth = generate(nodes, seed=seed_no, loci=4, batch=40)
    for step in synth.steps:
        if step.kind == "advance":
            args = {"session_id": step.session, "purpose": str(step.payload)}
            name = "advance_encounter"
        elif step.kind == "entities":
            args = {"session_id": step.session, "entities": step.payload}
            name = "create_entities"
        elif step.kind == "relations":
            args = {"session_id": step.session, "relations": step.payload}
            name = "create_relations"
        else:
            args = {"session_id": step.session, "summary": str(step.payload)}
            name = "close_encounter"
        result = await keyring.call(client, name, args)
        if result.is_error:
            raise RuntimeError(f"seeding failed at {name}: {result.content}")
    return synth.names


def _text_of(result: Any) -> str:
    return "".join(getattr(c, "text", "") for c in result.content)


Call = tuple[str, dict[str, Any]]


def calls(names: list[str]) -> list[Call]:
    """One representative call per tool, in an order where each has what it needs."""
    concept = next(n for n in names if n.startswith(names[0].split(" #")[0]))
    note_a, note_b = "bench note a", "bench note b"
    return [
        ("advance_encounter", {"session_id": SESSION, "purpose": "measure every tool result"}),
        (
            "create_entities",
            {
                "session_id": SESSION,
                "entities": [
                    {"type": "Note", "name": note_a, "description": "A note to link and undo."},
                    {"type": "Note", "name": note_b, "description": "Another note to link."},
                    {"type": "Question", "name": "bench question", "description": "Why?"},
                    {"type": "Concept", "name": "bench concept", "description": "The same?"},
                ],
            },
        ),
        ("confirm_entities", {"session_id": SESSION, "refs": [concept], "why": "re-read"}),
        ("pin_entities", {"session_id": SESSION, "refs": [concept], "why": "keep near"}),
        (
            "claim_referents",
            {
                "session_id": SESSION,
                "claims": [
                    {"source": concept, "target": "bench concept", "resolution": "proposed"}
                ],
            },
        ),
        (
            "create_relations",
            {
                "session_id": SESSION,
                "relations": [
                    {"source": note_a, "type": "INFORMS", "target": concept},
                    {"source": note_b, "type": "INFORMS", "target": concept},
                ],
            },
        ),
        ("search", {"query": "retry storm deploy window", "limit": 10}),
        ("find_by_name", {"name": concept}),
        ("trace_provenance", {"ref": concept}),
        ("chain_history", {"node": concept}),
        ("conflicts", {"limit": 10}),
        (
            "read_cypher",
            {"query": "MATCH (n:Concept) RETURN n.name, n.description LIMIT 50"},
        ),
        ("get_schema", {}),
        ("list_node_types", {}),
        ("list_relation_types", {}),
        ("list_vocabulary", {}),
        ("orient", {"session_id": SESSION}),
        ("gds_create_projection", {"name": "bench"}),
        ("gds_pagerank", {"name": "bench"}),
        ("gds_articlerank", {"name": "bench"}),
        ("gds_betweenness", {"name": "bench"}),
        ("gds_leiden", {"name": "bench"}),
        ("gds_wcc", {"name": "bench"}),
        ("gds_drop_projection", {"name": "bench"}),
        (
            "infuse",
            {"session_id": SESSION, "prompt": "why does the retry storm stall the gateway?"},
        ),
        ("infuse_meaning", {"prompt": "why does the retry storm stall the gateway?"}),
        (
            "delete_relations",
            {
                "session_id": SESSION,
                "relations": [{"source": note_b, "type": "INFORMS", "target": concept}],
            },
        ),
        ("delete_entities", {"session_id": SESSION, "refs": [note_b]}),
        ("close_encounter", {"session_id": SESSION, "summary": "measured every tool"}),
    ]


async def measure(client: Any, names: list[str]) -> list[Measured]:
    rows: list[Measured] = []
    keyring = Keyring()
    for tool, args in calls(names):
        result = await keyring.call(client, tool, args)
        text = _text_of(result)
        sent = result.structured_content
        rows.append(
            Measured(
                tool,
                len(text),
                len(wire_json(sent)) if sent is not None else 0,
                text[:200] if result.is_error else "",
            )
        )
    return rows


async def with_client(work: Path, body: Callable[[Any], Awaitable[Any]]) -> Any:
    from mcp import Client

    from kenning_encounter.config import load_settings
    from kenning_encounter.server.app import build_server
    from kenning_encounter.server.context import Runtime

    settings = load_settings(data_dir=work / "memory", matcher="off")
    async with Client(build_server(settings, Runtime(settings))) as client:
        return await body(client)


def run(quick: bool = False, nodes: int | None = None) -> dict[str, Any]:
    size = nodes or (150 if quick else DEFAULT_NODES)
    work = Path(tempfile.mkdtemp(prefix="kenning-chars-"))

    async def body(client: Any) -> list[Measured]:
        return await measure(client, await seed(client, size))

    try:
        rows: list[Measured] = anyio.run(with_client, work, body)
    finally:
        shutil.rmtree(work, ignore_errors=True)
    return {
        "nodes": size,
        "rows": [
            {
                "tool": r.tool,
                "text_chars": r.text,
                "json_chars": r.json,
                **({"error": r.error} if r.error else {}),
            }
            for r in rows
        ],
    }


def format_table(report: dict[str, Any], before: dict[str, Any] | None = None) -> str:
    old = {r["tool"]: r for r in (before or {}).get("rows", [])}
    head = f"tool chars on a seeded memory of {report['nodes']} nodes (JSON = structuredContent)"
    if old:
        lines = [
            head,
            f"{'tool':<22} {'text before':>11} {'json before':>11} {'text after':>10} "
            f"{'json after':>10}",
        ]
    else:
        lines = [head, f"{'tool':<22} {'text':>8} {'json':>8} {'json/text':>9}"]
    for r in report["rows"]:
        flag = f"  ERROR {r['error']}" if r.get("error") else ""
        if old:
            b = old.get(r["tool"], {})
            lines.append(
                f"{r['tool']:<22} {b.get('text_chars', 0):>11} {b.get('json_chars', 0):>11} "
                f"{r['text_chars']:>10} {r['json_chars']:>10}{flag}"
            )
        else:
            ratio = r["json_chars"] / r["text_chars"] if r["text_chars"] else 0.0
            lines.append(
                f"{r['tool']:<22} {r['text_chars']:>8} {r['json_chars']:>8} {ratio:>9.1f}{flag}"
            )
    return "\n".join(lines)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m bench.tool_chars", description=__doc__)
    parser.add_argument("--quick", action="store_true", help="a smaller memory")
    parser.add_argument("--nodes", type=int, default=None, help="size of the seeded memory")
    parser.add_argument("--json", type=Path, default=None, help="write the report here")
    parser.add_argument("--compare", type=Path, default=None, help="an earlier report")
    args = parser.parse_args(argv)
    report = run(args.quick, args.nodes)
    before = json.loads(args.compare.read_text(encoding="utf-8")) if args.compare else None
    print(format_table(report, before))
    if args.json is not None:
        args.json.parent.mkdir(parents=True, exist_ok=True)
        args.json.write_text(json.dumps(report, indent=2) + "\n", encoding="utf-8")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
