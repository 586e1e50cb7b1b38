"""Tools listed from the schemas an earlier start generated; each built on its first call.

Registering a tool the SDK's way (``Tool.from_function``) builds its argument model
and generates two JSON schemas from pydantic models: the input and the output. For
26 tools that is most of what our start-up adds to the SDK's own, and all of it
depends only on the code and the libraries: the same source tree, SDK and pydantic
give the same schemas every time. So a start that generated them keeps them
(``KeptSchemas``: one file in the user cache directory, stamped with our source tree,
the libraries and the interpreter), and the next start lists each tool from that file
(``DeferredTool``) and builds the tool the SDK's way the first time it is called.

A tool's schemas must therefore follow from its code alone, never from settings
(its public name does, and is applied at every start; the face only chooses tools).
A kept schema is checked against the generated one when the tool is built; a
difference (which the stamps should never let through) is logged and the file
dropped, so a stale file is wrong for one start at most.
tests/unit/test_app_tools.py holds listed and generated equal for every tool.

``KENNING_ENCOUNTER_QUICK_START=off`` does not turn this off (the answers it keeps are
per command line; these are per code version); ``KENNING_ENCOUNTER_TOOL_SCHEMAS=off``
does, and ``KENNING_ENCOUNTER_CACHE_DIR`` moves the file.
"""

from __future__ import annotations

import contextlib
import json
import logging
import os
import sys
from collections.abc import Callable
from typing import Any, Final, cast

from mcp.server.mcpserver.tools import Tool
from mcp.shared.tool_name_validation import validate_and_warn_tool_name
from mcp_types import ToolAnnotations
from pydantic import PrivateAttr

from kenning_encounter.server.front import ENV_PREFIX, cache_root, file_stamps, source_stamp

log = logging.getLogger(__name__)

FORMAT: Final = 1
OFF_ENV: Final = ENV_PREFIX + "TOOL_SCHEMAS"
# Whose upgrade changes a schema: the SDK (how it derives them), pydantic (how it
# generates them) and the protocol's types.
LIBRARIES: Final = ("mcp", "mcp_types", "pydantic", "pydantic_core")

Json = dict[str, Any]
Build = Callable[[], Tool]


def _stamp() -> Json:
    files = [str(getattr(sys.modules[n], "__file__", "")) for n in LIBRARIES if n in sys.modules]
    return {
        "format": FORMAT,
        "python": sys.version,
        "files": file_stamps(sorted(files)),
        "source": source_stamp(),
    }


class KeptSchemas:
    """The input and output schema of every tool an earlier start built, by base name."""

    def __init__(self, path: str | None) -> None:
        self.path = path  # None: keep nothing (turned off)
        self._stamp: Json = _stamp() if path is not None else {}
        self._tools: dict[str, Json] = {}
        self._changed = False
        if path is not None:
            self._tools = self._read(path)

    @classmethod
    def for_this_process(cls) -> KeptSchemas:
        if os.environ.get(OFF_ENV, "").strip().lower() in ("off", "0", "false", "no"):
            return cls(None)
        return cls(os.path.join(cache_root(), "tool-schemas.json"))

    def _read(self, path: str) -> dict[str, Json]:
        try:
            with open(path, encoding="utf-8") as f:
                kept: Any = json.load(f)
        except (OSError, ValueError):
            return {}
        if not isinstance(kept, dict) or cast(Json, kept).get("stamp") != self._stamp:
            return {}
        tools = cast(Json, kept).get("tools")
        return cast(dict[str, Json], tools) if isinstance(tools, dict) else {}

    def get(self, name: str) -> Json | None:
        """The kept ``parameters`` and ``output_schema`` of tool ``name``, if any."""
        found = self._tools.get(name)
        if found is None or not isinstance(found.get("parameters"), dict):
            return None
        return found

    def keep(self, name: str, tool: Tool) -> None:
        if self.path is None:
            return
        self._tools[name] = {"parameters": tool.parameters, "output_schema": tool.output_schema}
        self._changed = True

    def save(self) -> None:
        """Write the file if this start generated anything it did not hold."""
        if self.path is None or not self._changed:
            return
        self._changed = False
        folder = os.path.dirname(self.path)
        partial = f"{self.path}.{os.getpid()}.partial"
        try:
            os.makedirs(folder, exist_ok=True)
            with open(partial, "w", encoding="utf-8") as f:
                json.dump({"stamp": self._stamp, "tools": self._tools}, f, ensure_ascii=False)
            os.replace(partial, self.path)
        except OSError as exc:
            log.debug("could not keep the tool schemas in %s: %s", self.path, exc)
            with contextlib.suppress(OSError):
                os.unlink(partial)

    def drop(self) -> None:
        """Forget the file: a kept schema differed from the generated one."""
        self._tools = {}
        if self.path is not None:
            with contextlib.suppress(OSError):
                os.unlink(self.path)


class DeferredTool(Tool):
    """A tool listed from kept schemas; the SDK's tool is built on the first call.

    Only what a listing reads is set here (name, title, description, annotations,
    the input and output schemas); ``run`` builds the tool and hands it the call.
    """

    _build: Build | None = PrivateAttr(default=None)
    _built: Tool | None = PrivateAttr(default=None)
    _kept: KeptSchemas | None = PrivateAttr(default=None)
    _output: Json | None = PrivateAttr(default=None)

    @classmethod
    def listed(
        cls,
        build: Build,
        kept: KeptSchemas,
        schemas: Json,
        *,
        fn: Callable[..., Any],
        name: str,
        title: str,
        description: str,
        annotations: ToolAnnotations,
    ) -> DeferredTool:
        validate_and_warn_tool_name(name)
        tool = cls.model_construct(
            fn=fn,
            name=name,
            title=title,
            description=description,
            parameters=schemas["parameters"],
            is_async=True,
            context_kwarg=None,
            annotations=annotations,
            icons=None,
            meta=None,
        )
        tool._build = build
        tool._kept = kept
        tool._output = cast(Json | None, schemas.get("output_schema"))
        return tool

    @property
    def output_schema(self) -> Json | None:  # pyright: ignore[reportIncompatibleVariableOverride]
        return self._output

    def built(self) -> Tool:
        """The SDK's tool, built the first time; its schemas checked against the listed."""
        if self._built is None:
            if self._build is None:  # pragma: no cover - listed() always sets it
                raise RuntimeError(f"tool {self.name!r} has nothing to build it from")
            tool = self._build()
            if tool.parameters != self.parameters or tool.output_schema != self._output:
                log.warning(
                    "tool %s: its kept schemas differ from the generated ones; they are "
                    "generated again at the next start",
                    self.name,
                )
                if self._kept is not None:
                    self._kept.drop()
            self._built = tool
        return self._built

    async def run(self, arguments: Json, context: Any, convert_result: bool = False) -> Any:
        return await self.built().run(arguments, context, convert_result=convert_result)
