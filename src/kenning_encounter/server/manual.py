"""The operator manual (HOWTO.xml) as a resource, and the short server instructions."""

from __future__ import annotations

from importlib import resources
from typing import Final

from kenning_encounter.config import Settings

HOWTO_URI: Final = "kenning-encounter://howto"
INSTRUCTIONS_LIMIT: Final = 2_048


def howto_text() -> str:
    return resources.files("kenning_encounter").joinpath("HOWTO.xml").read_text(encoding="utf-8")


def documented_tools(xml_text: str) -> list[str]:
    """The tool names the manual documents, in order (its ``<tool name="...">`` elements)."""
    import xml.etree.ElementTree as ET  # only the checks read the manual's structure

    root = ET.fromstring(xml_text)
    return [str(el.get("name")) for el in root.iter("tool")]


def instructions(settings: Settings) -> str:
    n = settings.tool_name
    if settings.face == "reader":
        body = (
            "kenning-encounter: a read-only view of an agent memory (the reader face). "
            f"Find with {n('search')} and {n('find_by_name')}, follow evidence with "
            f"{n('trace_provenance')}, learn the types with {n('list_vocabulary')}. "
            "Nothing can be recorded through this server."
        )
    else:
        body = (
            "kenning-encounter: your persistent memory across work sessions, kept as a graph of "
            "encounters. Pass your session's handle (the session_id the start-up hook gives you, or "
            "the handle advance_encounter returns for a new id) to every session and write tool. "
            "Cycle: "
            f"{n('advance_encounter')} (returns what is still open) -> orient -> examine "
            f"({n('search')}, {n('find_by_name')}, {n('trace_provenance')}) -> record "
            f"({n('create_entities')}, {n('create_relations')}) -> {n('close_encounter')}. "
            "Revise by superseding, never by overwriting. A refusal names the field to fix; "
            "nothing is written when a call is refused."
        )
    return f"{body} Read the manual, resource {HOWTO_URI}, before your first recording."
