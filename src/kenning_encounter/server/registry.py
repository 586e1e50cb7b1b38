"""How tool groups are registered, so faces and the namespace apply to every group.

A group is a module with ``register(tools: ToolRegistrar) -> None``. It
declares each tool with ``@tools.tool(ToolKind.READ, ...)`` (or SESSION /
WRITE); the registrar decides whether the face serves it and under which name.
A new group (analytics, infusion) is one more module and one more entry in the
group list handed to ``build_server``; it needs no face or namespace code of
its own.

Arguments are checked here too, once for every tool. The SDK builds each
tool's argument model from its signature and drops unknown top-level
arguments without a word; its validation errors reach the client as pydantic's
own text. So the registrar closes every argument model (``extra="forbid"``),
publishes the closed schema (``additionalProperties: false`` at every object
level, checked at registration), and validates inside the tool call, where a
refusal can be rewritten in the house style (``refusals.py``) and still reach
the client as an MCP tool error.
"""

from __future__ import annotations

import inspect
import json
from collections.abc import Callable, Mapping
from enum import StrEnum
from typing import Any, Final, TypeVar, cast

from mcp.server.mcpserver.exceptions import ToolError
from mcp.server.mcpserver.tools import Tool
from mcp.server.mcpserver.utilities.func_metadata import ArgModelBase, FuncMetadata
from mcp_types import ToolAnnotations
from pydantic import ConfigDict, ValidationError

from kenning_encounter.config import Settings
from kenning_encounter.server.app_tools import DeferredTool, KeptSchemas
from kenning_encounter.server.refusals import boolean_refusal, close_match, refusal_text

F = TypeVar("F", bound=Callable[..., Any])


class ToolKind(StrEnum):
    SESSION = "session"  # writes the spine (advance, close)
    WRITE = "write"  # writes authored nodes and relations
    READ = "read"  # changes nothing in the memory


FACE_KINDS: Final[dict[str, frozenset[ToolKind]]] = {
    "full": frozenset(ToolKind),
    "reader": frozenset({ToolKind.READ}),
}


class ToolRegistrar:
    """Builds the tools of one server, filtered by the face and named by the namespace.

    With ``kept`` schemas (app_tools.py), a tool they hold is listed from them and built
    on its first call; any other is built now, and its schemas kept for the next start."""

    def __init__(self, settings: Settings, kept: KeptSchemas | None = None) -> None:
        self.settings = settings
        self._kinds = FACE_KINDS[settings.face]
        self._kept = kept
        self.tools: list[Tool] = []  # the server's, in registration order
        self.served: dict[str, ToolKind] = {}  # base name -> kind, in registration order
        self.declared: dict[str, ToolKind] = {}  # including those the face leaves out

    def tool(
        self,
        kind: ToolKind,
        *,
        title: str,
        destructive: bool = False,
        idempotent: bool = False,
        open_world: bool = False,
    ) -> Callable[[F], F]:
        """Declare the decorated function as a tool; its ``__name__`` is the base name."""

        def decorate(fn: F) -> F:
            name = fn.__name__
            if name in self.declared:
                raise ValueError(f"tool {name!r} is declared twice")
            self.declared[name] = kind
            if kind not in self._kinds:
                return fn
            public = self.settings.tool_name(name)
            description = inspect.cleandoc(fn.__doc__ or "")
            annotations = ToolAnnotations(
                title=title,
                read_only_hint=kind is ToolKind.READ,
                destructive_hint=destructive,
                idempotent_hint=idempotent or kind is ToolKind.READ,
                open_world_hint=open_world,
            )

            def build() -> Tool:
                # What MCPServer.add_tool does, then closed to unknown arguments.
                tool = Tool.from_function(
                    fn, name=public, title=title, description=description, annotations=annotations
                )
                close_arguments(tool)
                return tool

            kept = self._kept
            schemas = None if kept is None else kept.get(name)
            if kept is None or schemas is None:
                tool = build()
                if kept is not None:
                    kept.keep(name, tool)
            else:
                tool = DeferredTool.listed(
                    build,
                    kept,
                    schemas,
                    fn=fn,
                    name=public,
                    title=title,
                    description=description,
                    annotations=annotations,
                )
            self.tools.append(tool)
            self.served[name] = kind
            return fn

        return decorate

    def unknown(self, name: str) -> str | None:
        """The refusal of a call to ``name`` when this server does not serve it, with what
        to call instead (the SDK's own names no fix); None for a tool it serves."""
        namespace = self.settings.namespace
        base = name.removeprefix(f"{namespace}-") if namespace else name
        if base in self.served and self.settings.tool_name(base) == name:
            return None
        text = f"Unknown tool: {name}"
        kind = self.declared.get(base)
        if kind is not None and base not in self.served:
            return (
                f"{text}: {base} is a {kind.value} tool, and this server serves the "
                f"{self.settings.face} face, which leaves {kind.value} tools out; call it on "
                "a server with the full face"
            )
        if base in self.served:  # the bare name on a namespaced server
            public = self.settings.tool_name(base)
            return f"{text}; this server names its tools with {namespace!r}: call {public!r}"
        served = [self.settings.tool_name(n) for n in self.served]
        match = close_match(name, served)
        if match is not None:
            return f"{text}; did you mean {match!r}? tools/list names every tool served"
        return f"{text}; tools/list names the {len(served)} tools this server serves"


ToolGroup = Callable[[ToolRegistrar], None]


class _CheckedInCall(FuncMetadata):
    """Hands the raw arguments to the tool body, which validates them itself.

    Validation the SDK runs can only answer in pydantic's words; validation in
    the body can answer in ours and still be an MCP tool error.
    """

    def validate_arguments(self, arguments_to_validate: dict[str, Any]) -> dict[str, Any]:
        return {"arguments": dict(arguments_to_validate)}


def closed_model(model: type[ArgModelBase]) -> type[ArgModelBase]:
    """The same argument model, refusing any argument it does not declare."""
    namespace: dict[str, Any] = {
        "model_config": ConfigDict(extra="forbid"),
        "__module__": model.__module__,
        "__doc__": model.__doc__,
    }
    return cast(type[ArgModelBase], type(model.__name__, (model,), namespace))


def open_objects(schema: Mapping[str, Any], path: str = "") -> list[str]:
    """Paths of object schemas with named properties that still allow others.

    A map (an object with no named properties, such as read_cypher's params)
    has no names to misspell and is left open on purpose.
    """
    found: list[str] = []
    if "properties" in schema and schema.get("additionalProperties") is not False:
        found.append(path or "/")
    for key, value in schema.items():
        if isinstance(value, Mapping):
            found += open_objects(cast(Mapping[str, Any], value), f"{path}/{key}")
        elif isinstance(value, list):
            for i, item in enumerate(cast(list[Any], value)):
                if isinstance(item, Mapping):
                    found += open_objects(cast(Mapping[str, Any], item), f"{path}/{key}/{i}")
    return found


def unencodable_text(value: Any, path: str = "") -> str | None:
    """The path of the first string (key or value) that cannot be encoded as UTF-8.

    JSON lets a client escape a lone surrogate, which Python decodes into a str that
    no store can take: the engines fail on it with an error of their own, so it is
    refused here, before any tool sees it. Nested fields (a list's items, a model's
    fields) are not checked by the models' own string validation.
    """
    if not path:
        # The usual case, whole, in C: the arguments came from JSON, and text that encodes
        # holds no lone surrogate anywhere. Only a refusal walks them to say where.
        try:
            json.dumps(value, ensure_ascii=False, default=str).encode("utf-8")
        except UnicodeEncodeError:
            pass
        else:
            return None
    if isinstance(value, str):
        try:
            value.encode("utf-8")
        except UnicodeEncodeError:
            return path or "arguments"
        return None
    if isinstance(value, Mapping):
        for key, item in cast(Mapping[Any, Any], value).items():
            name = str(key)
            found = unencodable_text(name, path or "arguments") or unencodable_text(
                item, f"{path}.{name}" if path else name
            )
            if found is not None:
                return found
    elif isinstance(value, list):
        for i, item in enumerate(cast(list[Any], value)):
            found = unencodable_text(item, f"{path}[{i}]")
            if found is not None:
                return found
    return None


def closed_schema(schema: Mapping[str, Any]) -> dict[str, Any]:
    """The JSON schema of ``closed_model(m)`` from the SDK's schema of ``m``: the same,
    refusing other properties at the top level, its keys in pydantic's (sorted) order.

    Deriving it spares a third schema generation per tool at every start;
    tests/unit/test_tool_schemas.py holds it equal to the generated one, tool by tool."""
    return dict(sorted({**schema, "additionalProperties": False}.items()))


def close_arguments(tool: Tool) -> None:
    """Make ``tool`` refuse unknown arguments, and say every refusal in the house style."""
    meta = tool.fn_metadata
    strict = meta.model_copy(update={"arg_model": closed_model(meta.arg_model)})
    schema = closed_schema(tool.parameters)
    still_open = open_objects(schema)
    if still_open:
        raise TypeError(
            f"tool {tool.name!r}: these objects of its input schema accept unknown properties: "
            f"{', '.join(still_open)}; give their models extra='forbid'"
        )
    body = tool.fn
    context_kwarg = tool.context_kwarg

    async def checked(arguments: dict[str, Any], **context: Any) -> Any:
        where = unencodable_text(arguments)
        if where is not None:
            raise ToolError(
                f"{where}: holds a lone surrogate (an unpaired \\ud800-\\udfff escape), which "
                "is not Unicode text; send the text as valid UTF-8"
            )
        misfit = boolean_refusal(arguments, schema)
        if misfit is not None:
            raise ToolError(misfit)
        try:
            kwargs = strict.validate_arguments(arguments)
        except ValidationError as exc:
            raise ToolError(refusal_text(exc, schema)) from exc
        if context_kwarg is not None:
            kwargs[context_kwarg] = context[context_kwarg]
        return await body(**kwargs)

    tool.parameters = schema
    tool.fn = checked
    tool.is_async = True
    tool.fn_metadata = _CheckedInCall(
        arg_model=meta.arg_model,
        output_schema=meta.output_schema,
        output_model=meta.output_model,
        wrap_output=meta.wrap_output,
    )
