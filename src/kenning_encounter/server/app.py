"""Build the MCP server: tool groups filtered by face, the manual, the lifespan."""

from __future__ import annotations

import gc
import logging
from collections.abc import AsyncGenerator, Generator, Sequence
from contextlib import asynccontextmanager, contextmanager
from typing import Final

import mcp.server.mcpserver.server as sdk_server
from mcp.server.mcpserver import MCPServer

from kenning_encounter.config import Settings
from kenning_encounter.server import (
    tools_analytics,
    tools_identity,
    tools_infusion,
    tools_read,
    tools_session,
    tools_write,
)
from kenning_encounter.server.app_tools import KeptSchemas
from kenning_encounter.server.context import AppContext, Runtime, check_face
from kenning_encounter.server.info import package_version
from kenning_encounter.server.manual import HOWTO_URI, howto_text, instructions
from kenning_encounter.server.registry import ToolGroup, ToolRegistrar
from kenning_encounter.server.stdio import KenningMCPServer

__all__ = ["DEFAULT_TOOL_GROUPS", "SERVER_NAME", "build_server", "check_face"]

SERVER_NAME: Final = "kenning-encounter"

# Later groups (analytics, infusion) are appended here by their own modules.
DEFAULT_TOOL_GROUPS: Final[tuple[ToolGroup, ...]] = (
    tools_session.register,
    tools_write.register,
    tools_identity.register,
    tools_read.register,
    tools_analytics.register,
    tools_infusion.register,
)


def build_server(
    settings: Settings,
    runtime: Runtime,
    groups: Sequence[ToolGroup] = DEFAULT_TOOL_GROUPS,
    *,
    kept_schemas: bool = True,
) -> MCPServer[AppContext]:
    """An MCP server over the runtime's memory, serving the groups the face allows;
    with ``kept_schemas``, its tools are listed from the schemas an earlier start
    generated, where they still hold (app_tools.py), and built when first called."""
    check_face(settings)

    @asynccontextmanager
    async def lifespan(_: MCPServer[AppContext]) -> AsyncGenerator[AppContext]:
        async with runtime.session() as context:
            yield context

    kept = KeptSchemas.for_this_process() if kept_schemas else None
    registrar = ToolRegistrar(settings, kept)
    for register in groups:
        register(registrar)
    if kept is not None:
        kept.save()
    with _logging_configured():
        server: MCPServer[AppContext] = KenningMCPServer(
            SERVER_NAME,
            title="kenning-encounter memory",
            instructions=instructions(settings),
            version=package_version(),
            lifespan=lifespan,
            log_level="DEBUG" if settings.log_level.upper() == "DEBUG" else "INFO",
            tools=registrar.tools,
            unknown=registrar.unknown,
        )
    settle_start()

    @server.resource(
        HOWTO_URI,
        name="howto",
        title="kenning-encounter operator manual",
        description="How to work with this memory: the encounter cycle, the types, the "
        "invariants, the common mistakes, and every tool. Read it before recording.",
        mime_type="application/xml",
    )
    def howto() -> str:
        return howto_text()

    return server


@contextmanager
def _logging_configured() -> Generator[None]:
    """MCPServer() configures logging with ``logging.basicConfig``, which does nothing once
    the root logger has handlers (the command line's: cli.configure_logging), but first
    imports rich for a handler it would then drop (a fiftieth of a start). Once logging is
    configured, that call is skipped; otherwise the SDK configures it as it always has."""
    if not logging.getLogger().handlers:
        yield
        return
    # The name MCPServer.__init__ calls, in the SDK's server module.
    configure = getattr(sdk_server, "configure_logging")  # noqa: B009
    setattr(sdk_server, "configure_logging", _configured)  # noqa: B010
    try:
        yield
    finally:
        setattr(sdk_server, "configure_logging", configure)  # noqa: B010


def _configured(level: str = "INFO") -> None:
    del level  # logging is configured already


def settle_start() -> None:
    """Turn the collector back on if the launch turned it off (cli.main), once the start's
    objects exist: they live as long as the process, so they are first moved where the
    collector never walks them again (``gc.freeze``; the little garbage among them is
    kept). A server built with the collector on (in a test, from Python) is left alone."""
    if not gc.isenabled():
        gc.freeze()
        gc.enable()
