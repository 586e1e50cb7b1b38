"""docker-compose.yml, its load balancer's config and the Dockerfile, checked by reading
them: no Docker engine runs here.

The compose file is filled in as Compose fills it (``${VAR:-default}``, ``${VAR:?why}``,
``$$``), validated against the Compose Specification's JSON schema (vendored in
deploy/compose-spec), and the replicas' settings are loaded as a container would load
them, through the server's own CLI parser and settings.
"""

from __future__ import annotations

import copy
import json
import re
from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import jsonschema
import pytest
import yaml

from kenning_encounter.cli import build_parser, settings_from
from kenning_encounter.server.holds import KEY_FILE, load_session_key
from kenning_encounter.server.transports import MCP_MAX_BODY

ROOT = Path(__file__).resolve().parents[2]
SCHEMA = ROOT / "deploy" / "compose-spec" / "compose-spec.json"
SECRETS = {
    "NEO4J_PASSWORD": "neo4j-secret-pw",
    "KENNING_ENCOUNTER_TOKEN": "t" * 40,
    "KENNING_ENCOUNTER_SESSION_KEY": "0123456789abcdef" * 4,
}
SECRET_NAME = re.compile(r"PASSWORD|TOKEN|SECRET|_KEY$|AUTH")


# --- Compose's interpolation, as the spec describes it -------------------------------------
_VARIABLE = re.compile(
    r"\$(?:(?P<escaped>\$)|\{(?P<braced>[A-Za-z_][A-Za-z0-9_]*)"
    r"(?:(?P<op>:?[-?])(?P<arg>[^}]*))?\}|(?P<bare>[A-Za-z_][A-Za-z0-9_]*))"
)


class Unset(LookupError):
    pass


def interpolate(text: str, env: Mapping[str, str]) -> str:
    def one(m: re.Match[str]) -> str:
        if m["escaped"]:
            return "$"
        name = m["braced"] or m["bare"]
        value = env.get(name)
        op, arg = m["op"], m["arg"] or ""
        missing = value is None or (value == "" and op is not None and op.startswith(":"))
        if op in ("-", ":-"):
            return arg if missing else str(value)
        if op in ("?", ":?"):
            if missing:
                raise Unset(f"{name}: {arg}")
            return str(value)
        return "" if value is None else value

    return _VARIABLE.sub(one, text)


def filled(node: Any, env: Mapping[str, str]) -> Any:
    if isinstance(node, str):
        return interpolate(node, env)
    if isinstance(node, list):
        return [filled(v, env) for v in node]
    if isinstance(node, dict):
        return {k: filled(v, env) for k, v in node.items()}
    return node


@pytest.fixture(scope="module")
def raw() -> dict[str, Any]:
    data = yaml.safe_load((ROOT / "docker-compose.yml").read_text())
    assert isinstance(data, dict)
    return data


@pytest.fixture(scope="module")
def compose(raw: dict[str, Any]) -> dict[str, Any]:
    """The file as Compose runs it for a caller who set the secrets and nothing else."""
    return filled(raw, SECRETS)


def _service(compose: dict[str, Any], name: str) -> dict[str, Any]:
    service = compose["services"][name]
    assert isinstance(service, dict)
    return service


def _port_parts(spec: str) -> tuple[str, str, str]:
    host_ip, host_port, container_port = spec.rsplit(":", 2)
    return host_ip, host_port, container_port


# --- the load balancer's config, read as nginx reads it ------------------------------------
@dataclass
class Directive:
    name: str
    args: list[str]
    block: list[Directive] | None = None

    def all(self, name: str) -> list[Directive]:
        return [d for d in self.block or [] if d.name == name]

    def one(self, name: str) -> Directive:
        found = self.all(name)
        assert len(found) == 1, f"expected one {name!r} in {self.name}, found {len(found)}"
        return found[0]

    def arg(self, name: str) -> str:
        return " ".join(self.one(name).args)


_TOKEN = re.compile(r"#[^\n]*|\"(?:[^\"\\]|\\.)*\"|'(?:[^'\\]|\\.)*'|[{};]|[^\s{};\"'#]+")


def parse_nginx(text: str) -> Directive:
    tokens = [t for t in _TOKEN.findall(text) if not t.startswith("#")]
    stack: list[Directive] = [Directive("main", [], [])]
    words: list[str] = []
    for token in tokens:
        if token in (";", "{"):
            assert words, f"a {token!r} with no directive before it"
            directive = Directive(words[0], [w.strip("\"'") for w in words[1:]])
            top = stack[-1].block
            assert top is not None
            top.append(directive)
            if token == "{":
                directive.block = []
                stack.append(directive)
            words = []
        elif token == "}":
            assert not words and len(stack) > 1, "a '}' nginx would refuse"
            stack.pop()
        else:
            words.append(token)
    assert not words and len(stack) == 1, "the config ends inside a directive or block"
    return stack[0]


@pytest.fixture(scope="module")
def nginx(compose: dict[str, Any]) -> Directive:
    mounts = [str(v).split(":") for v in _service(compose, "lb")["volumes"]]
    assert mounts == [["./deploy/nginx.conf", "/etc/nginx/nginx.conf", "ro"]]
    return parse_nginx((ROOT / "deploy" / "nginx.conf").read_text())


# --- the stack ------------------------------------------------------------------------------
def test_the_stack_is_neo4j_with_gds_the_replicated_server_and_a_balancer(
    compose: dict[str, Any],
) -> None:
    assert set(compose["services"]) == {"neo4j", "server", "lb"}
    neo4j = _service(compose, "neo4j")
    assert re.fullmatch(r"neo4j:5\.26(\.\d+)?-community", neo4j["image"])
    assert yaml.safe_load(neo4j["environment"]["NEO4J_PLUGINS"]) == ["graph-data-science"]
    assert _service(compose, "server")["build"] == "."
    # nginx follows replicas by DNS inside an upstream (``resolve``) from 1.27.3 on.
    image = re.fullmatch(r"nginx:(\d+)\.(\d+)(?:\.(\d+))?-alpine", _service(compose, "lb")["image"])
    assert image is not None
    assert tuple(int(p or 0) for p in image.groups()) >= (1, 27, 3)


def test_one_replica_by_default_and_as_many_as_asked(raw: dict[str, Any]) -> None:
    assert int(_service(filled(raw, SECRETS), "server")["deploy"]["replicas"]) == 1
    three = filled(raw, {**SECRETS, "KENNING_ENCOUNTER_REPLICAS": "3"})
    assert int(_service(three, "server")["deploy"]["replicas"]) == 3
    # Every replica is one service definition: one environment, one command, for all.
    assert [n for n, s in three["services"].items() if s.get("build") == "."] == ["server"]


def test_the_file_is_valid_compose(raw: dict[str, Any]) -> None:
    schema = json.loads(SCHEMA.read_text())
    validator = jsonschema.Draft7Validator(schema)
    for env in (SECRETS, {**SECRETS, "KENNING_ENCOUNTER_REPLICAS": "3"}):
        errors = [f"{list(e.path)}: {e.message}" for e in validator.iter_errors(filled(raw, env))]
        assert errors == []
    # The validator does refuse what Compose refuses.
    broken = copy.deepcopy(filled(raw, SECRETS))
    broken["services"]["server"]["deploy"]["replicas"] = ["3"]
    broken["services"]["lb"]["healthcheck"]["intervall"] = "10s"
    assert len(list(validator.iter_errors(broken))) == 2


def test_every_published_port_is_bound_to_loopback_and_the_replicas_publish_none(
    compose: dict[str, Any],
) -> None:
    published = {
        name: [_port_parts(str(p)) for p in service.get("ports", [])]
        for name, service in compose["services"].items()
    }
    assert {c for _, _, c in published["neo4j"]} == {"7474", "7687"}
    assert [(h, c) for _, h, c in published["lb"]] == [("8765", "8765")]
    # A host port on a replicated service would be taken by the first replica only.
    assert published["server"] == []
    assert _service(compose, "server")["expose"] == ["8765"]
    for name, ports in published.items():
        assert all(ip == "127.0.0.1" for ip, _, _ in ports), (name, ports)


def test_the_replicas_share_no_volume(compose: dict[str, Any]) -> None:
    assert set(compose["volumes"]) == {"neo4j-data"}
    assert "/data" in [v.split(":")[1] for v in _service(compose, "neo4j")["volumes"]]
    assert "volumes" not in _service(compose, "server")
    # Each replica's /data is the image's own volume, one per container.
    assert re.search(r'^VOLUME \["/data"\]$', (ROOT / "Dockerfile").read_text(), re.MULTILINE)


def _replica_settings(server: dict[str, Any], monkeypatch: pytest.MonkeyPatch) -> Any:
    """The settings a replica runs with: its environment, then its command's flags."""
    for key, value in server["environment"].items():
        monkeypatch.setenv(key, "passed-through" if value is None else str(value))
    command = server["command"]
    assert command[0] == "kenning-encounter"
    return settings_from(build_parser().parse_args(command[1:]))


def test_the_replicas_serve_one_memory_statelessly_with_one_key(
    compose: dict[str, Any], monkeypatch: pytest.MonkeyPatch, tmp_path: Path
) -> None:
    server = _service(compose, "server")
    settings = _replica_settings(server, monkeypatch)
    assert settings.store == "neo4j" and settings.neo4j_uri == "bolt://neo4j:7687"
    assert settings.neo4j_username == "neo4j"
    assert settings.memory == "default"
    assert settings.http_sessions == "stateless"
    assert settings.host == "0.0.0.0" and settings.port == 8765
    assert str(settings.resolved_data_dir) == "/data"
    settings.require_safe_bind()  # a non-loopback bind with a token is allowed
    assert settings.token.get_secret_value() == SECRETS["KENNING_ENCOUNTER_TOKEN"]
    assert settings.neo4j_password.get_secret_value() == SECRETS["NEO4J_PASSWORD"]
    assert settings.session_key.get_secret_value() == SECRETS["KENNING_ENCOUNTER_SESSION_KEY"]

    # The key comes from the environment: no replica mints a session.key of its own,
    # and two replicas hand out the same handle for a session.
    local = {**server, "environment": {**server["environment"]}}
    local["environment"]["KENNING_ENCOUNTER_DATA_DIR"] = str(tmp_path)
    one, other = (_replica_settings(local, monkeypatch) for _ in range(2))
    assert load_session_key(one).handle("s1") == load_session_key(other).handle("s1")
    assert not (tmp_path / KEY_FILE).exists()


def test_one_variable_names_the_memory_every_replica_serves(
    raw: dict[str, Any], monkeypatch: pytest.MonkeyPatch
) -> None:
    named = filled(raw, {**SECRETS, "KENNING_ENCOUNTER_MEMORY": "team_notes"})
    assert _replica_settings(_service(named, "server"), monkeypatch).memory == "team_notes"


def test_secrets_come_only_from_the_callers_environment(
    raw: dict[str, Any], compose: dict[str, Any]
) -> None:
    for name, service in raw["services"].items():
        for key, value in service.get("environment", {}).items():
            if not SECRET_NAME.search(key) or key == "NEO4J_AUTH":
                continue
            assert value is None or re.fullmatch(rf"\$\{{{key}:\?[^}}]+\}}", value), (name, key)
    assert raw["services"]["neo4j"]["environment"]["NEO4J_AUTH"].startswith(
        "neo4j/${NEO4J_PASSWORD:?"
    )
    assert _service(compose, "server")["environment"]["GEMINI_API_KEY"] is None
    # Each one is demanded: without it Compose stops, naming it.
    for name in SECRETS:
        with pytest.raises(Unset, match=name):
            filled(raw, {k: v for k, v in SECRETS.items() if k != name})


def test_health_checks_and_start_order(compose: dict[str, Any], nginx: Directive) -> None:
    neo4j_check = " ".join(_service(compose, "neo4j")["healthcheck"]["test"])
    assert "cypher-shell" in neo4j_check and "gds.version()" in neo4j_check
    assert "${NEO4J_AUTH" in neo4j_check  # $$ in the file: read inside the container
    server = _service(compose, "server")
    server_check = " ".join(server["healthcheck"]["test"])
    assert "urllib.request" in server_check and "http://127.0.0.1:8765/healthz" in server_check
    assert server["depends_on"] == {"neo4j": {"condition": "service_healthy"}}
    lb = _service(compose, "lb")
    listen = nginx.one("http").one("server").arg("listen")
    assert f"http://127.0.0.1:{listen}/healthz" in " ".join(lb["healthcheck"]["test"])
    assert lb["depends_on"] == {"server": {"condition": "service_healthy"}}
    for service in compose["services"].values():
        assert {"interval", "timeout", "retries"} <= set(service["healthcheck"])


def test_the_balancer_sends_every_request_to_the_replicas(
    compose: dict[str, Any], nginx: Directive
) -> None:
    http = nginx.one("http")
    upstream = http.one("upstream")
    (target,) = [d.args for d in upstream.all("server")]
    port = _service(compose, "server")["environment"]["KENNING_ENCOUNTER_PORT"]
    assert target[0] == f"server:{port}" and port in _service(compose, "server")["expose"]
    # Replicas are found again as they come and go: Docker's DNS, re-read.
    assert "resolve" in target and upstream.all("zone")
    assert http.one("resolver").args[0] == "127.0.0.11"
    site = http.one("server")
    published = [_port_parts(str(p)) for p in _service(compose, "lb")["ports"]]
    assert [c for _, _, c in published] == [site.arg("listen")]
    (location,) = site.all("location")
    assert location.args == ["/"]
    assert location.arg("proxy_pass") == f"http://{upstream.args[0]}"


def test_the_balancer_passes_mcp_through_unchanged(nginx: Directive) -> None:
    site = nginx.one("http").one("server")
    location = site.one("location")
    size = re.fullmatch(r"(\d+)([km]?)", site.arg("client_max_body_size"))
    assert size is not None
    scale = {"": 1, "k": 1024, "m": 1024 * 1024}[size[2]]
    assert int(size[1]) * scale > MCP_MAX_BODY  # the server's own 413 is what a client meets
    assert location.arg("proxy_buffering") == "off"  # event streams arrive as they are sent
    assert location.arg("proxy_http_version") == "1.1"
    headers = {d.args[0].lower(): d.args[1] for d in location.all("proxy_set_header")}
    assert headers["host"] == "$http_host"  # the server's Host check sees the client's
    # A request a replica already received is never sent to another one.
    assert "non_idempotent" not in location.arg("proxy_next_upstream")
    read_timeout = re.fullmatch(r"(\d+)s", location.arg("proxy_read_timeout"))
    assert read_timeout is not None and int(read_timeout[1]) >= 60


def test_the_nginx_reader_itself() -> None:
    parsed = parse_nginx('a 1; # note\nb { c "x y"; d; }\n')
    assert [(d.name, d.args) for d in parsed.block or []] == [("a", ["1"]), ("b", [])]
    assert parsed.one("b").arg("c") == "x y"
    for broken in ("a {", "a; }", "a"):
        with pytest.raises(AssertionError):
            parse_nginx(broken)


def test_the_interpolation_reads_variables_as_compose_does() -> None:
    env = {"SET": "v", "EMPTY": ""}
    assert interpolate("$$x ${SET} $SET ${NONE}", env) == "$x v v "
    assert interpolate("${EMPTY:-d} ${EMPTY-d} ${NONE-d}", env) == "d  d"
    assert interpolate("${EMPTY?ok}", env) == ""
    with pytest.raises(Unset, match="EMPTY: give it"):
        interpolate("${EMPTY:?give it}", env)
    with pytest.raises(Unset, match="NONE"):
        interpolate("${NONE?}", env)


def test_every_variable_the_file_reads_is_documented(raw: dict[str, Any]) -> None:
    text = (ROOT / "docker-compose.yml").read_text()
    used = set(re.findall(r"(?<!\$)\$\{([A-Za-z_][A-Za-z0-9_]*)", text))
    assert {"KENNING_ENCOUNTER_REPLICAS", "KENNING_ENCOUNTER_SESSION_KEY"} <= used
    readme = (ROOT / "README.md").read_text()
    section = readme[readme.index("### Docker compose") :]
    section = re.split(r"\n##+ ", section[4:], maxsplit=1)[0]
    assert sorted(v for v in used if v not in section) == []
    assert "docker compose up" in section and "--http-sessions stateless" in section


def test_the_dockerfile_builds_the_server_with_the_neo4j_extra() -> None:
    text = (ROOT / "Dockerfile").read_text()
    assert re.search(r"^FROM python:3\.11-slim$", text, re.MULTILINE)
    assert 'pip install ".[neo4j]"' in text
    assert re.search(r"^USER (?!root)\w+", text, re.MULTILINE), "run as a non-root user"
    assert 'CMD ["kenning-encounter", "serve", "--store", "neo4j", "--host", "0.0.0.0"]' in text
    ignored = (ROOT / ".dockerignore").read_text().split()
    assert {".git", ".venv", ".neo4j-test"} <= set(ignored)
