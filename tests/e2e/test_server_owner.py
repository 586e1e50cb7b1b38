"""One owner per embedded store: a second server on the same data dir stops at once, saying whom to ask."""

from __future__ import annotations

import socket
import subprocess
from pathlib import Path

import pytest

from tests.e2e.conftest import clean_environ, run_server, server_command

pytestmark = pytest.mark.usefixtures("clean_env")


def test_a_second_server_fails_fast_naming_the_owner(tmp_path: Path) -> None:
    data_dir = tmp_path / "memory"
    with run_server(data_dir) as first:
        second = subprocess.run(
            server_command("serve", "--data-dir", str(data_dir), "--port", "0", "--matcher", "off"),
            capture_output=True,
            text=True,
            env=clean_environ(),
            timeout=60,
        )
        assert second.returncode == 1
        assert f"process {first.proc.pid}" in second.stderr
        assert first.url in second.stderr
        assert "listening" not in second.stderr
        # It stopped on its own while the owner still held the store: it did not wait its turn.
        assert first.proc.poll() is None

        doctor = subprocess.run(
            server_command("doctor", "--data-dir", str(data_dir), "--matcher", "off"),
            capture_output=True,
            text=True,
            env=clean_environ(),
            timeout=60,
        )
        assert doctor.returncode == 0, doctor.stdout
        assert (
            f"served by the running server (process {first.proc.pid}) at {first.url}"
            in doctor.stdout
        )
    # Once the owner has stopped, the store is free again.
    with run_server(data_dir) as again:
        assert again.url.startswith("http://127.0.0.1:")


def test_a_port_in_use_is_a_clear_error(tmp_path: Path) -> None:
    with socket.socket() as held:
        held.bind(("127.0.0.1", 0))
        held.listen()
        port = held.getsockname()[1]
        done = subprocess.run(
            server_command(
                "serve",
                "--data-dir",
                str(tmp_path / "memory"),
                "--port",
                str(port),
                "--matcher",
                "off",
            ),
            capture_output=True,
            text=True,
            env=clean_environ(),
            timeout=60,
        )
    assert done.returncode == 1
    assert f"could not listen on 127.0.0.1:{port}" in done.stderr
    assert "listening on" not in done.stderr
    assert not (tmp_path / "memory" / "owner.json").exists()  # the store was closed again
