"""Settings precedence, declared once in config.py: CLI flag > env var > .env > default."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest

from kenning_encounter.config import load_settings
from kenning_encounter.errors import ConfigError


@pytest.fixture(autouse=True)
def _clean_env(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    monkeypatch.chdir(tmp_path)  # no stray .env
    for var in (
        "KENNING_ENCOUNTER_PORT",
        "KENNING_ENCOUNTER_DATA_DIR",
        "NEO4J_URI",
        "NEO4J_URL",
        "KENNING_ENCOUNTER_STORE",
    ):
        monkeypatch.delenv(var, raising=False)


def test_default() -> None:
    s = load_settings()
    assert s.port == 8765 and s.host == "127.0.0.1" and s.path == "/mcp/"
    assert s.resolved_data_dir.parts[-2:] == ("kenning-encounter", "default")


def test_dotenv_beats_default(tmp_path: Path) -> None:
    (tmp_path / ".env").write_text("KENNING_ENCOUNTER_PORT=7001\n")
    assert load_settings().port == 7001


def test_env_beats_dotenv(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    (tmp_path / ".env").write_text("KENNING_ENCOUNTER_PORT=7001\n")
    monkeypatch.setenv("KENNING_ENCOUNTER_PORT", "7002")
    assert load_settings().port == 7002


def test_cli_beats_env(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("KENNING_ENCOUNTER_PORT", "7002")
    assert load_settings(port=7003).port == 7003
    assert load_settings(port=None).port == 7002  # a flag not given does not override


def test_memory_name_picks_the_data_dir(tmp_path: Path) -> None:
    assert load_settings(memory="work").resolved_data_dir.name == "work"
    assert load_settings(data_dir=tmp_path / "x").resolved_data_dir == tmp_path / "x"


def test_neo4j_names_follow_neo4j_conventions(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("NEO4J_URL", "bolt://127.0.0.1:7999")
    assert load_settings(store="neo4j").neo4j_uri == "bolt://127.0.0.1:7999"
    monkeypatch.setenv("NEO4J_URI", "bolt://127.0.0.1:7888")
    assert load_settings().neo4j_uri == "bolt://127.0.0.1:7888"


def test_neo4j_store_without_uri_is_refused() -> None:
    with pytest.raises(ConfigError, match="NEO4J_URI"):
        load_settings(store="neo4j")


def test_lists_from_env(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("KENNING_ENCOUNTER_ALLOWED_HOSTS", "a.example:8765, b.example:8765")
    assert load_settings().allowed_hosts == ["a.example:8765", "b.example:8765"]


def test_non_loopback_bind_needs_a_token() -> None:
    with pytest.raises(ConfigError, match="TOKEN"):
        load_settings(host="0.0.0.0").require_safe_bind()
    load_settings(host="0.0.0.0", token="s3cret-s3cret").require_safe_bind()


def test_bad_namespace_names_the_fix() -> None:
    with pytest.raises(ConfigError, match="namespace"):
        load_settings(namespace="my app!")


@pytest.mark.parametrize("name", ["../elsewhere", "a/b", "", ".hidden", "x" * 65, "a b"])
def test_a_memory_name_that_is_not_a_plain_name_is_refused(name: str) -> None:
    with pytest.raises(ConfigError, match="memory") as info:
        load_settings(memory=name)
    assert "letters, digits" in str(info.value)


def test_on_neo4j_a_memory_name_must_be_a_label_part() -> None:
    assert load_settings(memory="team-notes.v2").memory == "team-notes.v2"  # a fine folder
    uri = "bolt://127.0.0.1:7687"
    assert load_settings(memory="team_notes", store="neo4j", neo4j_uri=uri).memory == "team_notes"
    with pytest.raises(ConfigError, match="on Neo4j"):
        load_settings(memory="team-notes", store="neo4j", neo4j_uri=uri)


@pytest.mark.parametrize(
    "setting",
    ["read_timeout", "idle_horizon", "slow_query_ms", "cypher_timeout", "matcher_timeout"],
)
@pytest.mark.parametrize("value", ["inf", "nan", "1e300", "-inf"])
def test_a_duration_no_clock_can_hold_is_refused_by_its_variable(
    monkeypatch: pytest.MonkeyPatch, setting: str, value: str
) -> None:
    # An infinite cypher timeout failed every read_cypher call, an infinite idle horizon
    # every sweep: each set a deadline no datetime holds.
    variable = f"KENNING_ENCOUNTER_{setting.upper()}"
    monkeypatch.setenv(variable, value)
    with pytest.raises(ConfigError) as refused:
        load_settings()
    assert str(refused.value).startswith(f"{setting} ({variable}): must be ")
    assert "pydantic" not in str(refused.value)


def test_a_secret_given_wrong_is_never_shown(tmp_path: Path) -> None:
    # Through the command line as a user meets it: the error names the variable and the
    # rule, and the key given (too short, still a key) appears nowhere in the output.
    secret = "hunter2-secret"
    env = {**os.environ, "KENNING_ENCOUNTER_SESSION_KEY": secret}
    memory = tmp_path / "memory"
    command = [sys.executable, "-m", "kenning_encounter", "serve", "--transport", "stdio"]
    done = subprocess.run(
        [*command, "--data-dir", str(memory)],
        env=env,
        stdin=subprocess.DEVNULL,
        capture_output=True,
        text=True,
        timeout=60,
    )
    assert done.returncode != 0
    assert "session_key (KENNING_ENCOUNTER_SESSION_KEY): must have at least 16" in done.stderr
    assert secret not in done.stderr + done.stdout
    assert not memory.exists()  # refused before anything was opened


# --- a .env the settings would read wrongly without saying so -------------------------
def test_a_dotenv_saved_with_a_bom_is_read_from_its_first_line(tmp_path: Path) -> None:
    """Windows editors begin a UTF-8 file with a BOM: it must not become part of the
    first name (python-dotenv drops it; check_env_file reads past it too)."""
    (tmp_path / ".env").write_bytes(b"\xef\xbb\xbfKENNING_ENCOUNTER_PORT=7001\n")
    assert load_settings().port == 7001


def test_a_dotenv_that_is_not_utf8_is_refused_by_line(tmp_path: Path) -> None:
    (tmp_path / ".env").write_bytes(b"OTHER=1\nKENNING_ENCOUNTER_PORT=\xff7001\n")
    with pytest.raises(ConfigError, match=r"\.env: line 2 is not UTF-8 \(byte 32\)"):
        load_settings()


@pytest.mark.parametrize(
    "line",
    [
        'KENNING_ENCOUNTER_TOKEN="a secret value\n',
        "export KENNING_ENCOUNTER_PORT='7001\n",
        '  NEO4J_PASSWORD="a secret value\n',
    ],
)
def test_a_line_of_ours_the_parser_skips_is_refused_without_its_value(
    tmp_path: Path, line: str
) -> None:
    """python-dotenv skips a statement it cannot parse (an unclosed quote) with a warning
    naming no file; the setting then fell back to its default without a word."""
    (tmp_path / ".env").write_text("OTHER=1\n" + line + "KENNING_ENCOUNTER_STORE=embedded\n")
    with pytest.raises(ConfigError) as refused:
        load_settings()
    said = str(refused.value)
    assert ".env: line 2 (" in said and "close its quotes or remove the line" in said
    assert "secret" not in said and "7001" not in said


def test_a_line_of_another_tool_the_parser_skips_is_left_to_it(tmp_path: Path) -> None:
    (tmp_path / ".env").write_text('OTHER_TOOL="unclosed\nKENNING_ENCOUNTER_PORT=7001\n')
    assert load_settings().port == 7001


def test_serve_refuses_an_unreadable_line_of_ours_before_it_opens(tmp_path: Path) -> None:
    (tmp_path / ".env").write_text('KENNING_ENCOUNTER_TOKEN="a secret value\n')
    memory = tmp_path / "memory"
    env = {k: v for k, v in os.environ.items() if not k.startswith("KENNING_ENCOUNTER_")}
    done = subprocess.run(
        [sys.executable, "-m", "kenning_encounter", "serve", "--data-dir", str(memory)],
        env=env,
        cwd=tmp_path,
        stdin=subprocess.DEVNULL,
        capture_output=True,
        text=True,
        timeout=60,
    )
    assert done.returncode == 2, done.stderr
    assert ".env: line 1 (KENNING_ENCOUNTER_TOKEN) cannot be read" in done.stderr
    assert "secret" not in done.stderr + done.stdout
    assert not memory.exists()


# --- settings a server would take and then fail on, or carry a secret in ----------------
@pytest.mark.parametrize(
    ("given", "said"),
    [
        # Before: doctor said "all good" and the first call to the model failed (or sent
        # the password in the URL with every request).
        ({"matcher_base_url": "ftp://127.0.0.1/v1"}, "not an http(s) URL"),
        ({"matcher_base_url": "http://[::1/v1"}, "does not parse"),
        ({"matcher_base_url": "http://127.0.0.1:99999/v1"}, "does not parse"),
        ({"matcher_base_url": "http://user:pw@127.0.0.1:9/v1"}, "carries credentials"),
        ({"matcher_base_url": "http://127.0.0.1:9/v1\n"}, "white space or a control"),
        ({"matcher_api_key_env": "A B"}, "not the name of an environment variable"),
        ({"matcher_api_key_env": ""}, "not the name of an environment variable"),
        ({"matcher_model": "gemini 2.5"}, "visible ASCII characters"),
        ({"matcher_model": "m" * 201}, "up to 200"),
        # Before: doctor passed it; serve made the memory, then failed on it.
        ({"infusion_preset": "../wide"}, "is not a preset; use one of: balanced"),
        # Before: any size; one read_cypher could hold the process, one matcher call cost.
        ({"cypher_row_cap": 10**12}, "less than or equal to 100000"),
        ({"cypher_char_cap": 10**12}, "less than or equal to 10000000"),
        ({"matcher_prompt_budget": 10**14}, "less than or equal to 4000000"),
        # Tool names are ASCII for MCP clients, and 64 characters at most.
        ({"namespace": "café"}, "ASCII letters"),
        ({"namespace": "n" * 33}, "up to 32"),
    ],
)
def test_a_setting_the_server_would_fail_on_later_is_refused_at_the_start(
    given: dict[str, object], said: str
) -> None:
    with pytest.raises(ConfigError) as refused:
        load_settings(**given)
    assert said in str(refused.value)
    assert "user:pw" not in str(refused.value)  # a credential is a secret: masked


def test_good_matcher_settings_still_pass() -> None:
    s = load_settings(
        matcher_base_url="http://127.0.0.1:11434/v1",
        matcher_api_key_env="LOCAL_MODEL_KEY",
        matcher_model="llama3.1:8b",
        infusion_preset="wide",
        namespace="team-notes_2",
    )
    assert s.matcher_base_url == "http://127.0.0.1:11434/v1" and s.infusion_preset == "wide"


@pytest.mark.parametrize(
    ("given", "said"),
    [
        # Before: "No module named 'aiohttp'" from the driver.
        ({"neo4j_uri": "http://127.0.0.1:7474"}, "not a bolt/bolt+s/bolt+ssc/neo4j"),
        # Before: the driver dialled port 34463 (99999 modulo 65536).
        ({"neo4j_uri": "bolt://127.0.0.1:99999"}, "does not parse"),
        ({"neo4j_uri": "bolt://[::1"}, "does not parse"),
        # Before: refused by the driver, which quoted the password back in its error.
        ({"neo4j_uri": "bolt://neo4j:hunter2@127.0.0.1:7687"}, "carries credentials"),
        ({"neo4j_uri": "bolt://127.0.0.1:7687\n"}, "white space or a control"),
        # Before: doctor said "all good"; every statement would fail.
        ({"neo4j_database": "x y"}, "a Neo4j database's name is 3 to 63"),
        ({"neo4j_database": "`; DROP"}, "a Neo4j database's name is 3 to 63"),
    ],
)
def test_a_neo4j_setting_the_driver_would_misread_is_refused(
    given: dict[str, object], said: str
) -> None:
    with pytest.raises(ConfigError) as refused:
        load_settings(**given)
    assert said in str(refused.value)
    assert "hunter2" not in str(refused.value)


def test_good_neo4j_settings_still_pass() -> None:
    for uri in ("bolt://127.0.0.1:7687", "neo4j+s://db.example.org", "bolt+ssc://[::1]:7687"):
        assert load_settings(neo4j_uri=uri).neo4j_uri == uri
    assert load_settings(neo4j_database="team-notes.v2").neo4j_database == "team-notes.v2"


@pytest.mark.parametrize(
    ("given", "said"),
    [
        ({"allowed_origins": "https://app.example,javascript:alert(1)"}, "is not an origin"),
        ({"allowed_origins": "null"}, "is not an origin"),
        ({"allowed_hosts": "good.example,bad host"}, "is not a host name"),
    ],
)
def test_a_bad_origin_or_host_is_refused_when_the_settings_are_read(
    given: dict[str, object], said: str
) -> None:
    """Before, they were read when the web app was built: doctor said "all good", and
    serve made the memory and then failed."""
    with pytest.raises(ConfigError, match=said):
        load_settings(**given)


def test_serve_refuses_a_bad_origin_before_it_makes_a_memory(tmp_path: Path) -> None:
    memory = tmp_path / "memory"
    env = {k: v for k, v in os.environ.items() if not k.startswith("KENNING_ENCOUNTER_")}
    done = subprocess.run(
        [
            *(sys.executable, "-m", "kenning_encounter", "serve", "--port", "0"),
            *("--data-dir", str(memory), "--allowed-origins", "javascript:x"),
        ],
        env=env,
        stdin=subprocess.DEVNULL,
        capture_output=True,
        text=True,
        timeout=60,
    )
    assert done.returncode == 2, done.stderr
    assert "allowed_origins: 'javascript:x' is not an origin" in done.stderr
    assert not memory.exists()


def test_no_origin_is_a_wildcard_but_the_host_check_may_be_turned_off() -> None:
    with pytest.raises(ConfigError, match="is not an origin"):
        load_settings(allowed_origins="*")
    assert load_settings(allowed_hosts="*").allowed_hosts == ["*"]


@pytest.mark.parametrize(
    ("token", "says"),
    [
        ("", "is empty"),
        ("   ", "holds a space"),
        ("padded-secret-value ", "holds a space"),
        ("s3cret with a space", "holds a space"),
        ("t€k-s3cret-value", "past ASCII"),
        ("line\nbreak-s3cret", "control character"),
    ],
)
def test_a_token_no_header_carries_is_refused_and_never_shown(
    monkeypatch: pytest.MonkeyPatch, token: str, says: str
) -> None:
    monkeypatch.setenv("KENNING_ENCOUNTER_TOKEN", token)
    with pytest.raises(ConfigError) as refused:
        load_settings()
    message = str(refused.value)
    assert message.startswith("token (KENNING_ENCOUNTER_TOKEN): ") and says in message
    assert not token.strip() or token.strip() not in message
    assert load_settings(token="printable-ASCII_token.1~!").token is not None
