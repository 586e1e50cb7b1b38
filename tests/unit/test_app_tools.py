"""Tools listed from kept schemas (server/app_tools.py) are the tools the SDK generates.

A start that generated the tools' schemas keeps them; the next lists every tool from
them and builds the SDK's tool on its first call. These hold the listing equal to
the generated one, byte for byte, for both faces and a namespace; a stale file (other
code or libraries) unused; and a kept schema that differs from generation noticed at
the tool's first call, logged, and dropped.
"""

from __future__ import annotations

import json
import logging
from pathlib import Path
from typing import Any

import anyio
import pytest

from kenning_encounter.config import Settings, load_settings
from kenning_encounter.server.app import build_server
from kenning_encounter.server.app_tools import DeferredTool
from kenning_encounter.server.context import Runtime

CACHE = "KENNING_ENCOUNTER_CACHE_DIR"


@pytest.fixture
def kept_file(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    monkeypatch.setenv(CACHE, str(tmp_path / "cache"))
    monkeypatch.delenv("KENNING_ENCOUNTER_TOOL_SCHEMAS", raising=False)
    return tmp_path / "cache" / "tool-schemas.json"


def _settings(tmp_path: Path, **values: Any) -> Settings:
    return load_settings(data_dir=tmp_path / "memory", matcher="off", **values)


def _tools(settings: Settings, *, kept_schemas: bool = True) -> list[Any]:
    server = build_server(settings, Runtime(settings), kept_schemas=kept_schemas)
    return server._tool_manager.list_tools()  # pyright: ignore[reportPrivateUsage]


def _listing(settings: Settings, *, kept_schemas: bool = True) -> str:
    server = build_server(settings, Runtime(settings), kept_schemas=kept_schemas)
    listed = anyio.run(server.list_tools)
    return json.dumps([t.model_dump(mode="json", by_alias=True) for t in listed])


@pytest.mark.parametrize("values", [{}, {"face": "reader"}, {"namespace": "myapp"}])
def test_the_listing_from_kept_schemas_is_the_generated_one(
    tmp_path: Path, kept_file: Path, values: dict[str, str]
) -> None:
    settings = _settings(tmp_path, **values)
    generated = _listing(settings, kept_schemas=False)
    assert not kept_file.exists()
    first = _tools(settings)
    assert kept_file.is_file()
    assert not any(isinstance(t, DeferredTool) for t in first)
    tools = _tools(settings)
    assert len(tools) >= 10 and all(isinstance(t, DeferredTool) for t in tools)
    assert _listing(settings) == generated
    for tool in tools:
        built = tool.built()
        assert json.dumps(built.parameters) == json.dumps(tool.parameters), tool.name
        assert json.dumps(built.output_schema) == json.dumps(tool.output_schema), tool.name


def test_a_face_keeps_what_it_built_for_the_other(tmp_path: Path, kept_file: Path) -> None:
    _tools(_settings(tmp_path, face="reader"))
    full = _tools(_settings(tmp_path))
    deferred = {t.name for t in full if isinstance(t, DeferredTool)}
    assert deferred and len(deferred) < len(full)  # the reader's were kept, the rest built
    assert all(isinstance(t, DeferredTool) for t in _tools(_settings(tmp_path)))


def test_schemas_kept_for_other_code_are_not_used(tmp_path: Path, kept_file: Path) -> None:
    settings = _settings(tmp_path)
    _tools(settings)
    kept = json.loads(kept_file.read_text())
    kept["stamp"]["source"] = "another tree"
    kept_file.write_text(json.dumps(kept))
    assert not any(isinstance(t, DeferredTool) for t in _tools(settings))
    assert json.loads(kept_file.read_text())["stamp"]["source"] != "another tree"
    assert all(isinstance(t, DeferredTool) for t in _tools(settings))


def test_a_kept_schema_unlike_the_generated_one_is_dropped_at_the_first_call(
    tmp_path: Path, kept_file: Path, caplog: pytest.LogCaptureFixture
) -> None:
    settings = _settings(tmp_path)
    _tools(settings)
    kept = json.loads(kept_file.read_text())
    kept["tools"]["search"]["parameters"]["title"] = "tampered"
    kept_file.write_text(json.dumps(kept))
    search = next(t for t in _tools(settings) if t.name == "search")
    assert isinstance(search, DeferredTool) and search.parameters["title"] == "tampered"
    with caplog.at_level(logging.WARNING):
        built = search.built()
    assert built.parameters["title"] == "searchArguments"
    assert "tool search: its kept schemas differ" in caplog.text
    assert not kept_file.exists()
    assert not any(isinstance(t, DeferredTool) for t in _tools(settings))


def test_turned_off_nothing_is_kept(
    tmp_path: Path, kept_file: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("KENNING_ENCOUNTER_TOOL_SCHEMAS", "off")
    settings = _settings(tmp_path)
    _tools(settings)
    assert not kept_file.exists()
    assert not any(isinstance(t, DeferredTool) for t in _tools(settings))
