"""The manual against the code: one source, every type, every relation, every tool, both ways."""

from __future__ import annotations

import os
import xml.etree.ElementTree as ET
from pathlib import Path

import anyio
import pytest

from kenning_encounter import vocabulary
from kenning_encounter.config import load_settings
from kenning_encounter.server.app import build_server
from kenning_encounter.server.context import Runtime
from kenning_encounter.server.manual import (
    INSTRUCTIONS_LIMIT,
    documented_tools,
    howto_text,
    instructions,
)

ROOT = Path(__file__).resolve().parents[2]
PACKAGED = ROOT / "src" / "kenning_encounter" / "HOWTO.xml"
TOP_LEVEL = ROOT / "HOWTO.xml"

# The groups of HOWTO.xml's <tools> a reader face leaves out: everything that records.
WRITING_GROUPS = frozenset({"session", "write"})


@pytest.fixture(autouse=True)
def clean_env(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    for key in list(os.environ):
        if key.startswith("KENNING_ENCOUNTER_"):
            monkeypatch.delenv(key)
    monkeypatch.chdir(tmp_path)


@pytest.fixture(scope="module")
def root() -> ET.Element:
    return ET.fromstring(howto_text())


def served_tools(tmp_path: Path, face: str = "full", namespace: str = "") -> list[str]:
    settings = load_settings(data_dir=tmp_path, matcher="off", namespace=namespace, face=face)
    server = build_server(settings, Runtime(settings))
    return [t.name for t in anyio.run(server.list_tools)]


def documented_groups(root: ET.Element) -> dict[str, list[str]]:
    return {
        str(group.get("name")): [str(t.get("name")) for t in group.iter("tool")]
        for group in root.iter("group")
    }


def test_one_source_two_copies() -> None:
    assert PACKAGED.read_bytes() == TOP_LEVEL.read_bytes()
    assert howto_text() == PACKAGED.read_text(encoding="utf-8")


def test_every_documented_tool_is_served_and_every_served_tool_documented(tmp_path: Path) -> None:
    documented = documented_tools(howto_text())
    assert len(documented) == len(set(documented)), "a tool is documented twice"
    served = served_tools(tmp_path)
    assert len(served) == len(set(served)), "a tool is served twice"
    assert sorted(documented) == sorted(served), "HOWTO.xml and the served tools differ"


def test_the_reader_face_serves_every_documented_group_but_the_writing_ones(
    root: ET.Element, tmp_path: Path
) -> None:
    groups = documented_groups(root)
    assert set(groups) > WRITING_GROUPS, f"HOWTO.xml's groups are {sorted(groups)}"
    reading = {t for g, tools in groups.items() if g not in WRITING_GROUPS for t in tools}
    assert sorted(served_tools(tmp_path / "reader", face="reader")) == sorted(reading)


def test_a_namespace_prefixes_every_documented_tool(tmp_path: Path) -> None:
    served = served_tools(tmp_path, namespace="myapp")
    assert sorted(served) == sorted(f"myapp-{t}" for t in documented_tools(howto_text()))


def test_every_node_type_is_documented_with_its_layer(root: ET.Element) -> None:
    documented = {el.get("name"): el.get("layer") for el in root.iter("node-type")}
    assert documented == {name: t.layer.value for name, t in vocabulary.NODE_TYPES.items()}
    for el in root.iter("node-type"):
        assert (el.text or "").strip(), f"{el.get('name')} has no explanation"


def test_every_relation_type_is_documented_with_its_endpoints(root: ET.Element) -> None:
    documented = {el.get("name"): el for el in root.iter("relation-type")}
    assert set(documented) == set(vocabulary.RELATION_TYPES)
    for name, rel in vocabulary.RELATION_TYPES.items():
        el = documented[name]
        assert el.get("authored") == str(rel.authored).lower(), name
        assert set((el.get("from") or "").split()) == set(rel.sources), name
        assert set((el.get("to") or "").split()) == set(rel.targets), name
        assert (el.text or "").strip(), f"{name} has no explanation"


def test_the_cycle_and_the_invariants_are_all_there(root: ET.Element) -> None:
    assert [s.get("name") for s in root.iter("step")] == [
        "advance",
        "orient",
        "examine",
        "record",
        "close",
    ]
    assert [i.get("n") for i in root.iter("invariant")] == [str(n) for n in range(1, 11)]
    assert len(list(root.iter("mistake"))) >= 5


@pytest.mark.parametrize(
    "values",
    [{}, {"face": "reader"}, {"namespace": "a-rather-long-application-prefix"}],
)
def test_instructions_are_short_and_point_to_the_manual(
    tmp_path: Path, values: dict[str, str]
) -> None:
    settings = load_settings(data_dir=tmp_path, matcher="off", **values)
    text = instructions(settings)
    assert len(text.encode()) < INSTRUCTIONS_LIMIT
    assert "kenning-encounter://howto" in text
    if values.get("namespace"):
        assert f"{values['namespace']}-search" in text
