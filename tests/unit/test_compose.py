"""docker-compose.yml and the Dockerfile, checked by reading them (no Docker engine here)."""

from __future__ import annotations

import re
from pathlib import Path
from typing import Any

import pytest
import yaml

from kenning_encounter.config import Settings

ROOT = Path(__file__).resolve().parents[2]


@pytest.fixture(scope="module")
def compose() -> dict[str, Any]:
    data = yaml.safe_load((ROOT / "docker-compose.yml").read_text())
    assert isinstance(data, dict)
    return data


def _service(compose: dict[str, Any], name: str) -> dict[str, Any]:
    service = compose["services"][name]
    assert isinstance(service, dict)
    return service


def _port_parts(spec: str) -> tuple[str, str, str]:
    host_ip, host_port, container_port = spec.rsplit(":", 2)
    return host_ip, host_port, container_port


def test_the_stack_is_neo4j_with_gds_and_the_server_built_here(compose: dict[str, Any]) -> None:
    assert set(compose["services"]) == {"neo4j", "server"}
    neo4j = _service(compose, "neo4j")
    assert re.fullmatch(r"neo4j:5\.26(\.\d+)?-community", neo4j["image"])
    assert yaml.safe_load(neo4j["environment"]["NEO4J_PLUGINS"]) == ["graph-data-science"]
    assert _service(compose, "server")["build"] == "."


def test_every_port_is_bound_to_loopback(compose: dict[str, Any]) -> None:
    published = {
        name: [_port_parts(str(p)) for p in service.get("ports", [])]
        for name, service in compose["services"].items()
    }
    assert {c for _, _, c in published["neo4j"]} == {"7474", "7687"}
    assert [c for _, _, c in published["server"]] == ["8765"]
    for ports in published.values():
        assert ports and all(ip == "127.0.0.1" for ip, _, _ in ports), ports


def test_data_and_the_meaning_sidecar_live_on_named_volumes(compose: dict[str, Any]) -> None:
    named = set(compose["volumes"])
    assert "/data" in [v.split(":")[1] for v in _service(compose, "neo4j")["volumes"]]
    mounts = dict(v.split(":")[::-1] for v in _service(compose, "server")["volumes"])
    assert mounts["/data"] in named
    assert set(v.split(":")[0] for v in _service(compose, "neo4j")["volumes"]) <= named
    env = _service(compose, "server")["environment"]
    assert env["KENNING_ENCOUNTER_DATA_DIR"] == "/data"  # the sidecar is <data_dir>/sidecar


def test_the_server_is_wired_to_neo4j_through_its_settings(
    compose: dict[str, Any], monkeypatch: pytest.MonkeyPatch
) -> None:
    server = _service(compose, "server")
    env = server["environment"]
    assert env["NEO4J_URI"] == "bolt://neo4j:7687"
    assert env["NEO4J_USERNAME"] == "neo4j"
    assert env["KENNING_ENCOUNTER_STORE"] == "neo4j"
    assert server["command"][:2] == ["kenning-encounter", "serve"]
    assert server["command"][2:] == ["--store", "neo4j", "--host", "0.0.0.0"]
    # Secrets are demanded from the caller's environment, never written here.
    assert env["NEO4J_PASSWORD"].startswith("${NEO4J_PASSWORD:?")
    assert env["KENNING_ENCOUNTER_TOKEN"].startswith("${KENNING_ENCOUNTER_TOKEN:?")
    assert env["GEMINI_API_KEY"] is None  # passed through only when the shell has it
    assert _service(compose, "neo4j")["environment"]["NEO4J_AUTH"].startswith(
        "neo4j/${NEO4J_PASSWORD:?"
    )
    # The names really are the ones the settings read: load them as the container would.
    for key, value in env.items():
        monkeypatch.setenv(
            key, "secret-value" if value is None or "${" in str(value) else str(value)
        )
    settings = Settings()
    assert settings.store == "neo4j" and settings.neo4j_uri == "bolt://neo4j:7687"
    assert settings.host == "0.0.0.0" and settings.port == 8765
    assert settings.token is not None and settings.neo4j_password is not None
    assert str(settings.resolved_data_dir) == "/data"
    settings.require_safe_bind()  # a non-loopback bind with a token is allowed


def test_health_checks_and_start_order(compose: dict[str, Any]) -> None:
    neo4j_check = " ".join(_service(compose, "neo4j")["healthcheck"]["test"])
    assert "cypher-shell" in neo4j_check and "gds.version()" in neo4j_check
    assert "$${NEO4J_AUTH" in neo4j_check  # read inside the container, not interpolated
    server = _service(compose, "server")
    server_check = " ".join(server["healthcheck"]["test"])
    assert "urllib.request" in server_check and "http://127.0.0.1:8765/healthz" in server_check
    assert server["depends_on"] == {"neo4j": {"condition": "service_healthy"}}
    for service in compose["services"].values():
        assert {"interval", "timeout", "retries"} <= set(service["healthcheck"])


def test_the_dockerfile_builds_the_server_with_the_neo4j_extra() -> None:
    text = (ROOT / "Dockerfile").read_text()
    assert re.search(r"^FROM python:3\.11-slim$", text, re.MULTILINE)
    assert 'pip install ".[neo4j]"' in text
    assert re.search(r"^USER (?!root)\w+", text, re.MULTILINE), "run as a non-root user"
    assert 'CMD ["kenning-encounter", "serve", "--store", "neo4j", "--host", "0.0.0.0"]' in text
    ignored = (ROOT / ".dockerignore").read_text().split()
    assert {".git", ".venv", ".neo4j-test"} <= set(ignored)
