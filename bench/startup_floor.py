"""The floor for start-up: a bare MCP server on the same SDK, one tool, nothing else.

Whatever this costs to answer its first request is what the SDK and the
interpreter cost; the rest of our start-up is ours. Run as a script (not as
part of the ``bench`` package) so nothing else is imported first:

    python bench/startup_floor.py stdio
    python bench/startup_floor.py http PORT
"""

from __future__ import annotations

import sys

from mcp.server.mcpserver import MCPServer


def build() -> MCPServer:
    server = MCPServer("startup-floor")

    @server.tool()
    def echo(text: str) -> str:  # pyright: ignore[reportUnusedFunction]
        """Answer with the text given."""
        return text

    return server


def main(argv: list[str]) -> int:
    server = build()
    if argv[:1] == ["stdio"]:
        server.run("stdio")
        return 0
    if argv[:1] == ["http"] and len(argv) == 2:
        import uvicorn

        uvicorn.run(
            server.streamable_http_app(),
            host="127.0.0.1",
            port=int(argv[1]),
            log_level="warning",
        )
        return 0
    sys.stderr.write("usage: startup_floor.py stdio | http PORT\n")
    return 2


if __name__ == "__main__":
    raise SystemExit(main(sys.argv[1:]))
