"""Parallel test workers never share a test Neo4j: each empties the database it uses."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest

from tests.support.neo4j_target import URI_VAR, URIS_VAR, worker_uri

ROOT = Path(__file__).resolve().parents[2]
A, B = "bolt://127.0.0.1:1", "bolt://127.0.0.1:2"
PYTEST = [sys.executable, "-m", "pytest", "-p", "tests.conftest", "-p", "no:cacheprovider"]


def test_each_worker_takes_its_own() -> None:
    assert worker_uri("gw0", 2, f"{A}, {B}", "") == A
    assert worker_uri("gw1", 2, f"{A},{B}", A) == B


def test_workers_may_not_share_one() -> None:
    with pytest.raises(ValueError, match=f"cannot share the one Neo4j {URI_VAR} names"):
        worker_uri("gw1", 2, "", A)
    with pytest.raises(ValueError, match="2 test workers need 2 different Neo4j servers"):
        worker_uri("gw0", 2, f"{A},{A}", "")
    with pytest.raises(ValueError, match="need 3 different"):
        worker_uri("gw0", 3, f"{A},{B}", "")


def test_one_worker_may_use_the_one_and_none_named_is_none() -> None:
    assert worker_uri("gw0", 1, "", A) is None  # URI_VAR stands as it is
    assert worker_uri("gw0", 2, "", "") is None  # no Neo4j: the embedded half runs


def _tiny_run(tmp_path: Path, env: dict[str, str]) -> subprocess.CompletedProcess[str]:
    seen = tmp_path / "seen"
    seen.mkdir(exist_ok=True)
    body = (
        f"    w = os.environ['PYTEST_XDIST_WORKER']\n"
        f"    pathlib.Path({str(seen)!r}, w).write_text(os.environ.get('{URI_VAR}', ''))\n"
    )
    (tmp_path / "test_tiny.py").write_text(
        "import os, pathlib\n" + "".join(f"def test_{i}():\n{body}" for i in range(8))
    )
    config = ["-c", str(ROOT / "pyproject.toml"), "--rootdir", str(ROOT)]
    return subprocess.run(
        [*PYTEST, *config, "-n", "2", "-q", str(tmp_path / "test_tiny.py")],
        cwd=ROOT,
        env=env,
        capture_output=True,
        text=True,
        timeout=240,
    )


def test_a_parallel_run_hands_each_worker_its_own(tmp_path: Path) -> None:
    env = {
        k: v for k, v in os.environ.items() if not k.startswith(("KENNING_ENCOUNTER_", "PYTEST_"))
    }
    done = _tiny_run(tmp_path, {**env, URIS_VAR: f"{A},{B}"})
    assert done.returncode == 0, done.stdout + done.stderr
    seen = {p.name: p.read_text() for p in (tmp_path / "seen").iterdir()}
    assert seen == {"gw0": A, "gw1": B}
