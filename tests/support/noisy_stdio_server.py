"""A server on our stdio wire whose tool writes to stdout behind the protocol's back.

Run as a script by tests/e2e/test_server_stdio.py: the tool prints, writes to
fd 1 directly and to sys.stdout's buffer, as a careless library would; the
client must still get clean JSON-RPC, and the noise must land on stderr.
"""

from __future__ import annotations

import os
import sys

from kenning_encounter.server.stdio import KenningMCPServer


def main() -> None:
    server = KenningMCPServer("noisy")

    @server.tool()
    def shout(word: str) -> str:  # pyright: ignore[reportUnusedFunction]
        print(f"print {word}")
        sys.stdout.flush()
        os.write(1, f"fd1 {word}\n".encode())
        sys.stdout.buffer.write(f"buffer {word}\n".encode())
        sys.stdout.buffer.flush()
        return f"heard {word}"

    server.run("stdio")


if __name__ == "__main__":
    main()
