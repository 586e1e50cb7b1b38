"""The operator's command line as a real subprocess, with none of our settings inherited."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]


def run_cli(
    *args: str, timeout: float = 180, env: dict[str, str] | None = None
) -> subprocess.CompletedProcess[str]:
    """``kenning-encounter ARGS`` from the checkout, stdin closed, text out; ``env`` is
    laid over the environment (which keeps none of our settings)."""
    base = {k: v for k, v in os.environ.items() if not k.startswith("KENNING_ENCOUNTER_")}
    env = base | (env or {})
    return subprocess.run(
        [sys.executable, "-m", "kenning_encounter", *args],
        capture_output=True,
        text=True,
        stdin=subprocess.DEVNULL,
        env=env,
        cwd=ROOT,
        timeout=timeout,
        check=False,
    )


def held_memory(data_dir: Path) -> Path:
    """A memory made at ``data_dir`` holding one note ("kept"), for a command to act on."""
    from kenning_encounter.memory.service import Memory
    from kenning_encounter.store.embedded.backend import EmbeddedStore

    store = EmbeddedStore.open(data_dir)
    try:
        memory = Memory(store)
        memory.advance_encounter("s", "p")
        memory.create_entities("s", [{"type": "Note", "name": "kept", "description": "d"}])
    finally:
        store.close()
    return data_dir
