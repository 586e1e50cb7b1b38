"""Every tool's published input schema is the one pydantic generates for its closed model.

The registrar derives the closed schema from the SDK's (registry.closed_schema)
instead of generating it a third time per tool at every start; this holds the
derivation to what generation gives, key order included, for every tool of
both faces and with a namespace.
"""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from kenning_encounter.config import load_settings
from kenning_encounter.server.app import build_server
from kenning_encounter.server.context import Runtime
from kenning_encounter.server.registry import closed_model


@pytest.mark.parametrize("values", [{}, {"face": "reader"}, {"namespace": "myapp"}])
def test_the_derived_schema_is_the_generated_one(tmp_path: Path, values: dict[str, str]) -> None:
    settings = load_settings(data_dir=tmp_path / "memory", matcher="off", **values)
    # Generated, not listed from schemas an earlier start kept (tests/unit/test_app_tools.py).
    server = build_server(settings, Runtime(settings), kept_schemas=False)  # opens nothing
    tools = server._tool_manager.list_tools()  # pyright: ignore[reportPrivateUsage]
    assert len(tools) >= 10
    for tool in tools:
        generated = closed_model(tool.fn_metadata.arg_model).model_json_schema(by_alias=True)
        assert json.dumps(tool.parameters) == json.dumps(generated), tool.name
