"""How tool groups are registered, so faces and the namespace apply to every group.

A group is a module with ``register(tools: ToolRegistrar) -> None``. It
declares each tool with ``@tools.tool(ToolKind.READ, ...)`` (or SESSION /
WRITE); the registrar decides whether the face serves it and under which name.
A new group (analytics, infusion) is one more module and one more entry in the
group list handed to ``build_server``; it needs no face or namespace code of
its own.
"""

from __future__ import annotations

import inspect
from collections.abc import Callable
from enum import StrEnum
from typing import Any, Final, TypeVar

from mcp.server.mcpserver import MCPServer
from mcp_types import ToolAnnotations

from kenning_encounter.config import Settings
from kenning_encounter.server.context import AppContext

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
    """Adds tools to one server, filtered by the face and named by the namespace."""

    def __init__(self, server: MCPServer[AppContext], settings: Settings) -> None:
        self.server = server
        self.settings = settings
        self._kinds = FACE_KINDS[settings.face]
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
            self.server.add_tool(
                fn,
                name=self.settings.tool_name(name),
                title=title,
                description=inspect.cleandoc(fn.__doc__ or ""),
                annotations=ToolAnnotations(
                    title=title,
                    read_only_hint=kind is ToolKind.READ,
                    destructive_hint=destructive,
                    idempotent_hint=idempotent or kind is ToolKind.READ,
                    open_world_hint=open_world,
                ),
            )
            self.served[name] = kind
            return fn

        return decorate


ToolGroup = Callable[[ToolRegistrar], None]
