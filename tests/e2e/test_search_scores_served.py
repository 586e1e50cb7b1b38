"""The scores the served ``search`` tool hands a gated caller, through a real MCP client:
the same, score for score and in order, whether or not a node the caller may not see
holds the word it searched (two memories, alike but for the withheld nodes' words)."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest
from mcp import Client

from kenning_encounter.server.app import build_server
from kenning_encounter.server.context import Runtime
from tests.contract.test_search_scores import QUERY, VISIBLE, WITH_WORD, WITHOUT_WORD, WRITER
from tests.e2e.conftest import call_ok, make_settings

pytestmark = [pytest.mark.anyio, pytest.mark.usefixtures("clean_env")]

# A standing that barely moves while the test runs: only the words may move a score.
SETTINGS: dict[str, Any] = {"activation_half_life_days": 36_500}


def _server(data_dir: Path, **values: Any) -> Any:
    settings = make_settings(data_dir, **SETTINGS, **values)
    return build_server(settings, Runtime(settings))


async def _record(data_dir: Path, withheld: list[tuple[str, str]]) -> None:
    async with Client(_server(data_dir, grant="all")) as writer:
        await call_ok(writer, "advance_encounter", {"session_id": WRITER, "purpose": "w"})
        notes = [{"type": "Note", "name": n, "description": d} for n, d in VISIBLE]
        notes += [
            {"type": "Note", "name": n, "description": d, "classification": ["phi"]}
            for n, d in withheld
        ]
        await call_ok(writer, "create_entities", {"session_id": WRITER, "entities": notes})


async def _page(data_dir: Path, **values: Any) -> list[tuple[str, float]]:
    async with Client(_server(data_dir, **values)) as client:
        found = await call_ok(client, "search", {"query": QUERY, "limit": 10}, sign=False)
    return [(h["name"], h["score"]) for h in found["hits"]]


async def test_a_gated_caller_s_served_scores_say_nothing_of_withheld_words(
    tmp_path: Path,
) -> None:
    await _record(tmp_path / "holds", WITH_WORD)
    await _record(tmp_path / "lacks", WITHOUT_WORD)
    for face in ({}, {"face": "reader"}):  # neither face is granted phi
        holds, lacks = (
            await _page(tmp_path / "holds", **face),
            await _page(tmp_path / "lacks", **face),
        )
        assert holds == lacks
        assert [n for n, _ in holds] == ["heron sighting", "marsh walk"]
    # Granted, the caller sees the withheld nodes, and its scores count their words.
    granted = await _page(tmp_path / "holds", grant="all")
    assert len(granted) == len(VISIBLE) - 1 + len(WITH_WORD)
    assert granted != await _page(tmp_path / "lacks", grant="all")
