"""Parallel test workers never share a test Neo4j: each empties the database it uses."""

from __future__ import annotations

import os
import re
import subprocess
import sys
from pathlib import Path

import pytest

from tests.support.neo4j_target import (
    NEO4J_GROUP,
    URI_VAR,
    URIS_VAR,
    group_of,
    in_neo4j_group,
    worker_uri,
)

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


# --- make test's way: the Neo4j tests together on one worker and one server ---------------
def test_the_neo4j_group_is_read_from_the_test_id() -> None:
    assert in_neo4j_group("tests/contract/test_dump.py::test_a_dump_round_trips[neo4j]")
    assert in_neo4j_group("tests/contract/test_invariants.py::test_1_nodes[neo4j-Locus]")
    assert in_neo4j_group("tests/integration/test_neo4j_soak.py::test_sixteen_sessions")
    assert in_neo4j_group("tests/unit/test_erase_cli.py::test_erase_on_neo4j_through_the_cli")
    assert in_neo4j_group("tests/unit/test_peers_bench.py::test_quick_mode_measures_ours")
    assert not in_neo4j_group("tests/contract/test_dump.py::test_a_dump_round_trips[embedded]")
    assert group_of("tests/contract/test_kndl.py::test_facts[neo4j]") == NEO4J_GROUP
    assert group_of("tests/contract/test_kndl.py::test_facts[embedded]") == (
        "tests/contract/test_kndl.py"
    )


def test_every_file_marked_neo4j_whole_is_in_the_group() -> None:
    for path in sorted((ROOT / "tests").rglob("test_*.py")):
        if re.search(r"^pytestmark = .*\bpytest\.mark\.neo4j\b", path.read_text("utf-8"), re.M):
            nodeid = f"{path.relative_to(ROOT).as_posix()}::test_any"
            assert in_neo4j_group(nodeid), f"{nodeid}: add its file to NEO4J_FILES"


def _grouped_run(tmp_path: Path, env: dict[str, str], body: str) -> tuple[str, dict[str, str]]:
    seen = tmp_path / "seen"
    seen.mkdir()
    record = (
        f"    pathlib.Path({str(seen)!r}, request.node.name).write_text(\n"
        f"        os.environ['PYTEST_XDIST_WORKER'] + ' ' + os.environ.get('{URI_VAR}', '-'))\n"
    )
    (tmp_path / "test_tiny.py").write_text(
        "import os, pathlib, pytest\n"
        + "".join(f"def test_{i}(request):\n{record}" for i in range(6))
        + "".join(f"def test_{i}_on_neo4j(request):\n{record}" for i in range(6))
        + body
    )
    config = ["-c", str(ROOT / "pyproject.toml"), "--rootdir", str(ROOT)]
    done = subprocess.run(
        [*PYTEST, *config, "-n", "2", "--dist", "loadgroup", "-q", str(tmp_path / "test_tiny.py")],
        cwd=ROOT,
        env=env,
        capture_output=True,
        text=True,
        timeout=240,
    )
    return done.stdout + done.stderr, {p.name: p.read_text() for p in seen.iterdir()}


def _bare_env() -> dict[str, str]:
    return {
        k: v for k, v in os.environ.items() if not k.startswith(("KENNING_ENCOUNTER_", "PYTEST_"))
    }


def test_a_grouped_run_hands_the_one_server_to_the_neo4j_group_alone(tmp_path: Path) -> None:
    out, seen = _grouped_run(tmp_path, {**_bare_env(), URIS_VAR: A}, "")
    assert "12 passed" in out, out
    on_neo4j = {v for k, v in seen.items() if k.endswith("_on_neo4j")}
    assert len(on_neo4j) == 1 and on_neo4j.pop().endswith(f" {A}")  # one worker, the URI
    assert {v.split()[1] for k, v in seen.items() if not k.endswith("_on_neo4j")} == {"-"}


def test_a_test_marked_neo4j_outside_the_group_fails_naming_the_fix(tmp_path: Path) -> None:
    marked = "@pytest.mark.neo4j\ndef test_marked():\n    pass\n"
    out, _ = _grouped_run(tmp_path, {**_bare_env(), URIS_VAR: A}, marked)
    assert "12 passed, 1 error" in out and "add its file to NEO4J_FILES" in out, out
