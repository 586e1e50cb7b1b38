"""Install the pinned TypeScript MCP client the client tests drive, into this folder.

    python -m tests.clients.install_sdk [--dir DIR]     # what `make ts-client` runs

The client is npm's ``@modelcontextprotocol/sdk`` (the one Claude Desktop, Cursor and
most JavaScript hosts build on) at one exact version, with every package under it
fixed by the ``package-lock.json`` beside this file, so every developer and CI
validate our tools' answers with the same Ajv. ``npm ci`` puts it in
``tests/clients/node_modules`` (ignored by git, skipped by pytest's collection),
never on the user's PATH or in their home. Installing again when the pinned version
is already there does nothing.
"""

from __future__ import annotations

import argparse
import json
import shutil
import subprocess
import sys
from pathlib import Path

PACKAGE = "@modelcontextprotocol/sdk"
VERSION = "1.32.2"
DEFAULT_DIR = Path(__file__).resolve().parent
FAILURE_NOTE = "install-failure.txt"  # kept in node_modules, so git ignores it too
NODE_MAJOR = 20  # the lock holds packages that need it (@hono/node-server)


def install_command(folder: Path) -> list[str]:
    """``npm ci``: exactly the lock's packages, or a failure when the lock is stale."""
    return [
        "npm", "ci", "--prefix", str(folder), "--no-audit", "--no-fund", "--loglevel", "error",
    ]  # fmt: skip


def pinned_version(folder: Path) -> str | None:
    """The version ``folder``'s package.json asks for (it must be ``VERSION``)."""
    try:
        manifest = json.loads((folder / "package.json").read_text(encoding="utf-8"))
        return str(manifest["dependencies"][PACKAGE])
    except (OSError, ValueError, KeyError, TypeError):
        return None


def installed_version(folder: Path) -> str | None:
    manifest = folder / "node_modules" / PACKAGE / "package.json"
    try:
        return str(json.loads(manifest.read_text(encoding="utf-8"))["version"])
    except (OSError, ValueError, KeyError):
        return None


def node_major() -> int | None:
    """The major version of the ``node`` on PATH, or None when there is none that runs."""
    node = shutil.which("node")
    if node is None:
        return None
    try:
        done = subprocess.run(
            [node, "--version"], capture_output=True, text=True, timeout=30, check=False
        )
        return int(done.stdout.strip().removeprefix("v").split(".")[0])
    except (OSError, subprocess.TimeoutExpired, ValueError):
        return None


def unavailable_reason(folder: Path = DEFAULT_DIR) -> str | None:
    """Why the client tests cannot run, in words that say how to fix it; None when they can."""
    how = f"run `make ts-client` (npm ci of {PACKAGE}@{VERSION} into {folder / 'node_modules'})"
    major = node_major()
    if major is None:
        return f"node is not on PATH; install Node.js {NODE_MAJOR} or later, then {how}"
    if major < NODE_MAJOR:
        return f"node {major} is too old for {PACKAGE}@{VERSION}; install Node.js {NODE_MAJOR}+"
    found = installed_version(folder)
    if found == VERSION:
        return None
    if shutil.which("npm") is None:
        return f"npm is not on PATH, so {PACKAGE}@{VERSION} could not be installed; {how}"
    if found is None:
        try:
            npm_said = (folder / "node_modules" / FAILURE_NOTE).read_text(encoding="utf-8").strip()
        except OSError:
            return f"{PACKAGE} is not installed in {folder}; {how}"
        return f"installing {PACKAGE}@{VERSION} failed (npm: {npm_said}); {how}"
    return f"{folder} holds {PACKAGE}@{found}, not the pinned {VERSION}; {how}"


def install(folder: Path) -> None:
    if pinned_version(folder) != VERSION:
        raise SystemExit(
            f"{folder / 'package.json'} must pin {PACKAGE} at exactly {VERSION} "
            f"(it asks for {pinned_version(folder)}); change both, then run "
            "`npm install --package-lock-only` there"
        )
    if installed_version(folder) == VERSION:
        print(f"{PACKAGE}@{VERSION} already installed in {folder / 'node_modules'}")
        return
    command = install_command(folder)
    print("+", " ".join(command), flush=True)
    done = subprocess.run(command, capture_output=True, text=True, check=False)
    sys.stdout.write(done.stdout)
    sys.stderr.write(done.stderr)
    if installed_version(folder) != VERSION:
        # Kept for the tests' skip reason: the registry being unreachable reads differently
        # from a stale lock.
        said = [
            line.removeprefix("npm error").strip()
            for line in (done.stderr + done.stdout).splitlines()
            if line.removeprefix("npm error").strip()
        ]
        note = folder / "node_modules" / FAILURE_NOTE
        note.parent.mkdir(exist_ok=True)
        note.write_text(" / ".join(said[:2]) + "\n", encoding="utf-8")
        raise SystemExit(unavailable_reason(folder))
    (folder / "node_modules" / FAILURE_NOTE).unlink(missing_ok=True)
    print(f"{PACKAGE}@{VERSION} installed in {folder / 'node_modules'}")


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m tests.clients.install_sdk")
    parser.add_argument("--dir", type=Path, default=DEFAULT_DIR, help="where package.json is")
    args = parser.parse_args(argv)
    if shutil.which("npm") is None:
        print(f"npm not found: {PACKAGE} is not installed; the TypeScript client tests will skip")
        return 1
    install(args.dir)
    return 0


if __name__ == "__main__":
    sys.exit(main())
