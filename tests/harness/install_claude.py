"""Install the pinned Claude Code CLI the harness tests drive, into a folder of this checkout.

    python -m tests.harness.install_claude [--dir DIR]     # what `make claude-code` runs

The CLI comes from npm as ``@anthropic-ai/claude-code`` at one exact version,
so every developer and CI drive the same hooks and MCP client. It lands in
``tests/harness/.claude-code`` (ignored by git, skipped by pytest's
collection), never on the user's PATH or in their home. Installing again when
the pinned version is already there and runs does nothing.
"""

from __future__ import annotations

import argparse
import json
import shutil
import subprocess
import sys
from pathlib import Path

PACKAGE = "@anthropic-ai/claude-code"
VERSION = "2.1.337"
DEFAULT_DIR = Path(__file__).resolve().parent / ".claude-code"
FAILURE_NOTE = "install-failure.txt"


def install_command(folder: Path) -> list[str]:
    return [
        "npm", "install", "--prefix", str(folder), "--save-exact", "--no-audit", "--no-fund",
        "--loglevel", "error", f"{PACKAGE}@{VERSION}",
    ]  # fmt: skip


def installed_version(folder: Path) -> str | None:
    manifest = folder / "node_modules" / PACKAGE / "package.json"
    try:
        return str(json.loads(manifest.read_text(encoding="utf-8"))["version"])
    except (OSError, ValueError, KeyError):
        return None


def candidates(folder: Path) -> list[Path]:
    """The launcher npm links, then the native binaries of the platform packages.

    The launcher is a placeholder until the package's postinstall copies the
    native binary over it; an npm that skips install scripts leaves the
    placeholder, and the platform package's binary is the same program.
    """
    modules = folder / "node_modules"
    natives = sorted((modules / "@anthropic-ai").glob("claude-code-*/claude"))
    return [modules / ".bin" / "claude", *natives]


def runs(binary: Path) -> bool:
    try:
        done = subprocess.run(
            [str(binary), "--version"], capture_output=True, text=True, timeout=60, check=False
        )
    except (OSError, subprocess.TimeoutExpired):
        return False
    return done.returncode == 0 and done.stdout.startswith(VERSION)


def find_binary(folder: Path = DEFAULT_DIR) -> Path | None:
    """The pinned CLI installed in ``folder`` that answers --version, or None."""
    if installed_version(folder) != VERSION:
        return None
    return next((c for c in candidates(folder) if c.is_file() and runs(c)), None)


def unavailable_reason(folder: Path = DEFAULT_DIR) -> str | None:
    """Why the harness cannot run the CLI, in words that say how to fix it; None when it can."""
    if find_binary(folder) is not None:
        return None
    how = f"run `make claude-code` (npm install of {PACKAGE}@{VERSION} into {folder})"
    if shutil.which("npm") is None:
        return f"npm is not on PATH, so {PACKAGE}@{VERSION} could not be installed; {how}"
    found = installed_version(folder)
    if found is None:
        try:
            npm_said = (folder / FAILURE_NOTE).read_text(encoding="utf-8").strip()
        except OSError:
            return f"{PACKAGE} is not installed in {folder}; {how}"
        return f"installing {PACKAGE}@{VERSION} failed (npm: {npm_said}); {how}"
    if found != VERSION:
        return f"{folder} holds {PACKAGE}@{found}, not the pinned {VERSION}; {how}"
    return f"{PACKAGE}@{VERSION} in {folder} does not run (`claude --version` failed); {how}"


def install(folder: Path) -> Path:
    if (binary := find_binary(folder)) is not None:
        print(f"{PACKAGE}@{VERSION} already installed: {binary}")
        return binary
    folder.mkdir(parents=True, exist_ok=True)
    command = install_command(folder)
    print("+", " ".join(command), flush=True)
    done = subprocess.run(command, capture_output=True, text=True, check=False)
    sys.stdout.write(done.stdout)
    sys.stderr.write(done.stderr)
    binary = find_binary(folder)
    if binary is None:
        # Kept for the tests' skip reason: the registry being unreachable reads differently
        # from a broken package.
        said = [
            line.removeprefix("npm error").strip()
            for line in (done.stderr + done.stdout).splitlines()
            if line.removeprefix("npm error").strip()
        ]
        (folder / FAILURE_NOTE).write_text(" / ".join(said[:2]) + "\n", encoding="utf-8")
        raise SystemExit(unavailable_reason(folder))
    (folder / FAILURE_NOTE).unlink(missing_ok=True)
    print(f"{PACKAGE}@{VERSION} installed: {binary}")
    return binary


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m tests.harness.install_claude")
    parser.add_argument("--dir", type=Path, default=DEFAULT_DIR, help="where to install")
    args = parser.parse_args(argv)
    if shutil.which("npm") is None:
        print(f"npm not found: {PACKAGE} is not installed; the harness tests will skip")
        return 1
    install(args.dir)
    return 0


if __name__ == "__main__":
    sys.exit(main())
