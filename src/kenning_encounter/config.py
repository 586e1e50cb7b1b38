"""One settings object. Precedence, declared once: CLI flag > env var > .env > default.

Our own variables carry the ``KENNING_ENCOUNTER_`` prefix; Neo4j's follow the
names Neo4j's own MCP servers use (``NEO4J_URI``, ``NEO4J_USERNAME``, ...), and
the Gemini key is ``GEMINI_API_KEY``. CLI flags arrive as init arguments,
which pydantic-settings ranks above every other source.
"""

from __future__ import annotations

import io
import re
from pathlib import Path
from typing import Annotated, Any, Literal

from platformdirs import user_data_dir
from pydantic import (
    AliasChoices,
    Field,
    SecretStr,
    ValidationError,
    ValidationInfo,
    field_validator,
    model_validator,
)
from pydantic_settings import BaseSettings, NoDecode, SettingsConfigDict

from kenning_encounter.errors import ConfigError
from kenning_encounter.plaintext import lone_surrogate
from kenning_encounter.vocabulary import ACTIVATION_HALF_LIFE_DAYS, CLASSIFICATIONS

ENV_PREFIX = "KENNING_ENCOUNTER_"
ENV_FILE = ".env"  # read from the working directory
# Durations are bounded so every use of one stays a time a clock can hold: an infinite
# or astronomic timeout or horizon failed each call that set a deadline from it.
MAX_WAIT_S = 3_600.0  # a timeout: an hour
MAX_IDLE_S = 3_650 * 86_400.0  # an idle horizon: ten years
LOOPBACK = frozenset({"127.0.0.1", "localhost", "::1"})
# The server's own HTTP routes beside the MCP endpoint (server/routes.py) and the root
# of the inspector's pages (ui/access.py): an MCP path on one of them would take it
# from the hook or be answered by the inspector.
OWN_ROUTES = ("/healthz", "/session-start", "/session-end", "/infuse")
INSPECTOR_ROOT = "/ui"

CsvList = Annotated[list[str], NoDecode]


def _split_csv(value: Any) -> Any:
    if isinstance(value, str):
        return [part.strip() for part in value.split(",") if part.strip()]
    return value


class Settings(BaseSettings):
    model_config = SettingsConfigDict(
        env_prefix=ENV_PREFIX,
        env_file=ENV_FILE,
        env_file_encoding="utf-8",
        extra="ignore",
        populate_by_name=True,
    )

    # --- the memory and its store -------------------------------------------
    memory: str = Field("default", description="Name of the memory (a folder under the data root).")
    data_dir: Path | None = Field(
        None, description="Where the embedded store lives. Default: <user data dir>/<memory>."
    )
    store: Literal["embedded", "neo4j"] = Field(
        "embedded", description="Which backend holds the graph."
    )
    neo4j_uri: str | None = Field(
        None, validation_alias=AliasChoices("neo4j_uri", "NEO4J_URI", "NEO4J_URL")
    )
    neo4j_username: str = Field(
        "neo4j", validation_alias=AliasChoices("neo4j_username", "NEO4J_USERNAME")
    )
    neo4j_password: SecretStr | None = Field(
        None, validation_alias=AliasChoices("neo4j_password", "NEO4J_PASSWORD")
    )
    neo4j_database: str = Field(
        "neo4j", validation_alias=AliasChoices("neo4j_database", "NEO4J_DATABASE")
    )

    # --- serving --------------------------------------------------------------
    transport: Literal["stdio", "sse", "streamable-http"] = "streamable-http"
    namespace: str = Field("", description="Tool-name prefix: 'myapp' serves 'myapp-search'.")
    host: str = "127.0.0.1"
    port: int = Field(8765, ge=0, le=65535)
    path: str = "/mcp/"
    # stateful: the MCP SDK keeps each client's session in this process (Mcp-Session-Id);
    # stateless: every request stands alone, so any replica behind a load balancer can
    # answer it. The tools keep no per-connection state either way (handles, the store).
    http_sessions: Literal["stateful", "stateless"] = "stateful"
    allowed_origins: CsvList = Field(default_factory=list)
    allowed_hosts: CsvList = Field(default_factory=list)
    read_timeout: float = Field(30.0, gt=0, le=MAX_WAIT_S)
    # Seconds an HTTP client has to send a request's head, and may pause within its body
    # (server/deadline.py): a connection that dawdles holds a socket for nothing.
    request_timeout: float = Field(10.0, gt=0, le=MAX_WAIT_S)
    token: SecretStr | None = None
    # Signs session handles. Unset: a session.key file beside the memory, minted once.
    # Every server sharing one database must be given the same key.
    session_key: SecretStr | None = Field(None, min_length=16)
    face: Literal["full", "reader"] = "full"
    hide_loci: CsvList = Field(default_factory=list)
    # Classes of classified nodes (vocabulary.CLASSIFICATIONS) this server's callers may
    # read: the full face reads ``grant``, the reader face ``reader_grant`` alone, so
    # opening a reader on a granted writer's memory shows nothing classified by default.
    grant: CsvList = Field(default_factory=list)
    reader_grant: CsvList = Field(default_factory=list)
    # An export (kenning-encounter export) holds back classified nodes it is not granted.
    export_grant: CsvList = Field(default_factory=list)
    # Who directs a session when advance_encounter names no one (#17, memory/directors.py).
    # Unset: the operating-system user, keyed by user and host. Set to "" for none, which
    # require_director then refuses. A director without a key is a Person of one session.
    director: str | None = None
    director_key: str | None = None
    require_director: bool = True
    log_level: str = "INFO"
    # An open encounter whose session shows no activity for this long is dissolved.
    idle_horizon: float = Field(86_400.0, gt=0, le=MAX_IDLE_S)
    # A store statement slower than this many ms is logged at WARNING (0: never).
    slow_query_ms: float = Field(500.0, ge=0, le=MAX_WAIT_S * 1000)
    # Embedded: MiB of page memory the engine may hold (its buffer pool); a memory of a
    # million nodes reads its whole graph in 1024, one of several million needs more.
    buffer_pool_mib: int = Field(1024, ge=64, le=1 << 20)
    # Neo4j: nodes a server keeps read in memory (store/neo4j/nodecache.py), and reads in,
    # newest first, on a thread of its own once the memory is open (0: no node cache).
    neo4j_cache_nodes: int = Field(100_000, ge=0)

    # --- read_cypher ------------------------------------------------------------
    # Caps on one answer: bounded, so a setting cannot make one read hold the process.
    cypher_row_cap: int = Field(500, ge=1, le=100_000)
    cypher_char_cap: int = Field(100_000, ge=1_000, le=10_000_000)
    cypher_timeout: float = Field(10.0, gt=0, le=MAX_WAIT_S)

    # --- the meaning matcher ------------------------------------------------------
    matcher: Literal["auto", "gemini", "openai", "off"] = "auto"
    matcher_model: str | None = None
    matcher_timeout: float = Field(5.0, gt=0, le=MAX_WAIT_S)
    matcher_reasons: bool = False
    matcher_base_url: str | None = None
    matcher_api_key_env: str = "OPENAI_API_KEY"
    # Characters sent to a model on each call: bounded (about a million tokens).
    matcher_prompt_budget: int = Field(200_000, ge=1_000, le=4_000_000)
    gemini_api_key: SecretStr | None = Field(
        None, validation_alias=AliasChoices("gemini_api_key", "GEMINI_API_KEY")
    )

    # --- infusion ---------------------------------------------------------------
    infusion_budget: int = Field(4_000, ge=500, le=9_000)
    infusion_preset: str = "balanced"
    # The inspector's infusion log (store/infusion_log.py): bounded by age and per session.
    # The prompt's text is kept only when asked; by default its SHA-256 and length.
    infusion_log_prompts: bool = False
    infusion_log_days: float = Field(14.0, gt=0, le=3_650)
    infusion_log_per_session: int = Field(500, ge=1, le=100_000)

    # --- relevance over time (memory/activation.py) --------------------------------
    # A node's activation halves for every this many days of the memory's work in which
    # nothing used it; its tier (hot, warm, cold, frozen) is read from that at each read,
    # so changing it refiles the whole memory at once and rewrites nothing. Days of work,
    # not of the calendar (memory/activation.py): a pause counts for at most a day. On the
    # calendar, 30 days made LoCoMo's dev conversations, which span months, lose their
    # older sessions (infusion any@5 0.774 -> 0.428); in working time 30 gives 0.768.
    activation_half_life_days: float = Field(ACTIVATION_HALF_LIFE_DAYS, gt=0, le=36_500)

    _split = field_validator(
        "allowed_origins",
        "allowed_hosts",
        "hide_loci",
        "grant",
        "reader_grant",
        "export_grant",
        mode="before",
    )(_split_csv)

    @field_validator("allowed_origins", "allowed_hosts")
    @classmethod
    def _listed_places(cls, value: list[str], info: ValidationInfo) -> list[str]:
        # Read as serving reads them, so a bad entry is refused before a memory is made
        # (and by doctor), not when the web app is built.
        from kenning_encounter.server.security import allowed_host, allowed_origin

        hosts = info.field_name == "allowed_hosts"
        read = allowed_host if hosts else allowed_origin
        for entry in value:
            # '*' turns the Host check off (allowed_hosts); no Origin is '*'.
            if entry.strip() and not (hosts and entry.strip() == "*"):
                try:
                    read(entry)
                except ConfigError as exc:
                    raise ValueError(str(exc)) from None
        return value

    @field_validator("grant", "reader_grant", "export_grant")
    @classmethod
    def _grant_classes(cls, value: list[str]) -> list[str]:
        return grant_classes(value)

    @field_validator("token")
    @classmethod
    def _header_token(cls, value: SecretStr | None) -> SecretStr | None:
        # It travels as "Authorization: Bearer <token>": an empty one made every request
        # a 401, and one a header cannot carry as written (a space at its ends, a
        # character past ASCII) could never be matched. The value is never quoted.
        if value is None:
            return None
        token = value.get_secret_value()
        if not token:
            raise ValueError(
                f"token ({ENV_PREFIX}TOKEN): is empty, so no request could match it; unset "
                "it to serve without one on loopback, or set a long random secret "
                "(openssl rand -hex 32)"
            )
        if not all("!" <= ch <= "~" for ch in token):
            raise ValueError(
                f"token ({ENV_PREFIX}TOKEN): holds a space, a control character or a "
                "character past ASCII, which an HTTP header does not carry as written; use "
                "printable ASCII only (openssl rand -hex 32)"
            )
        return value

    @field_validator("path")
    @classmethod
    def _path_slashes(cls, value: str) -> str:
        value = "/" + value.strip("/") + "/"
        bare = value.rstrip("/")
        if bare in OWN_ROUTES or f"{bare}/".startswith(f"{INSPECTOR_ROOT}/"):
            own = f"route {bare}" if bare in OWN_ROUTES else f"pages under {INSPECTOR_ROOT}/"
            raise ValueError(
                f"path (--path, {ENV_PREFIX}PATH): {value} is taken by this server's own {own}; "
                "choose another path for the MCP endpoint, e.g. /mcp/"
            )
        return value

    @field_validator("memory")
    @classmethod
    def _memory_name(cls, value: str) -> str:
        # It names a folder (embedded) and part of a label (Neo4j): no paths, no syntax.
        if not re.fullmatch(r"[A-Za-z0-9][A-Za-z0-9_.-]{0,63}", value):
            raise ValueError(
                f"memory {value!r}: name a memory with letters, digits, '_', '-' and '.' "
                "(up to 64, starting with a letter or digit), e.g. team_notes; on Neo4j "
                "use letters, digits and '_' only"
            )
        return value

    @model_validator(mode="after")
    def _neo4j_memory_name(self) -> Settings:
        if self.store == "neo4j" and not re.fullmatch(r"[A-Za-z0-9_]{1,64}", self.memory):
            raise ValueError(
                f"memory {self.memory!r}: on Neo4j a memory's name becomes part of a label, "
                "so use letters, digits and '_' only, e.g. team_notes"
            )
        return self

    @field_validator("namespace")
    @classmethod
    def _namespace_chars(cls, value: str) -> str:
        # It begins every tool's name, which MCP clients hold to ASCII letters, digits,
        # '-' and '_' (and to 64 characters: the longest tool name leaves 32 here).
        if value and not re.fullmatch(r"[A-Za-z0-9_-]{1,32}", value):
            raise ValueError(
                f"namespace ({ENV_PREFIX}NAMESPACE): use up to 32 ASCII letters, digits, '-' "
                "and '_' (e.g. myapp)"
            )
        return value

    @field_validator("neo4j_uri", "matcher_base_url")
    @classmethod
    def _endpoint(cls, value: str | None, info: ValidationInfo) -> str | None:
        # Checked before any client sees it: the Neo4j driver dials a port past 65535
        # modulo 65536, reads an http URI as a missing module and quotes credentials
        # back in its errors; the matcher would send them with every request.
        if value is None:
            return None
        from kenning_encounter.urlcheck import BOLT, HTTP, shown, url_problem

        field = info.field_name or ""
        bolt = field == "neo4j_uri"
        problem = url_problem(
            value,
            secret_from="NEO4J_PASSWORD" if bolt else "the key's variable (--matcher-api-key-env)",
            schemes=BOLT if bolt else HTTP,
        )
        if problem is not None:
            example = "bolt://127.0.0.1:7687" if bolt else "http://127.0.0.1:11434/v1"
            raise ValueError(
                f"{field} ({env_name(field)}) {shown(value)}: {problem}; e.g. {example}"
            )
        return value

    @field_validator("neo4j_database")
    @classmethod
    def _database_name(cls, value: str) -> str:
        # Neo4j's own rule for a database's name; the driver would send any text, and
        # every statement would fail.
        if not re.fullmatch(r"[A-Za-z][A-Za-z0-9.-]{2,62}", value):
            raise ValueError(
                f"neo4j_database (NEO4J_DATABASE) {value[:80]!r}: a Neo4j database's name is "
                "3 to 63 ASCII letters, digits, '.' and '-', starting with a letter, e.g. neo4j"
            )
        return value

    @field_validator("matcher_api_key_env")
    @classmethod
    def _key_variable(cls, value: str) -> str:
        if not re.fullmatch(r"[A-Za-z_][A-Za-z0-9_]{0,127}", value):
            raise ValueError(
                f"matcher_api_key_env ({ENV_PREFIX}MATCHER_API_KEY_ENV): {value[:80]!r} is not "
                "the name of an environment variable; use letters, digits and '_', e.g. "
                "OPENAI_API_KEY"
            )
        return value

    @field_validator("matcher_model")
    @classmethod
    def _model_name(cls, value: str | None) -> str | None:
        if value is not None and not re.fullmatch(r"[!-~]{1,200}", value):
            raise ValueError(
                f"matcher_model ({ENV_PREFIX}MATCHER_MODEL): name the model in up to 200 "
                "visible ASCII characters, without spaces, e.g. gemini-2.5-flash"
            )
        return value

    @field_validator("infusion_preset")
    @classmethod
    def _preset_name(cls, value: str) -> str:
        from kenning_encounter.infusion.config import Preset

        names = [p.value for p in Preset]
        if value not in names:
            raise ValueError(
                f"infusion_preset ({ENV_PREFIX}INFUSION_PRESET): {value[:80]!r} is not a "
                f"preset; use one of: {', '.join(names)}"
            )
        return value

    @model_validator(mode="after")
    def _all_text(self) -> Settings:
        # A variable's or flag's bytes that are not UTF-8 arrive as lone surrogates, which
        # no path, engine, driver or secret's encoding takes; named here, never shown.
        for name in type(self).model_fields:
            value: object = getattr(self, name)
            texts = value if isinstance(value, list) else [value]
            for text in texts:
                if isinstance(text, SecretStr):
                    text = text.get_secret_value()
                if isinstance(text, Path):
                    text = str(text)
                if isinstance(text, str) and (at := lone_surrogate(text)) is not None:
                    raise ValueError(
                        f"{name} ({env_name(name)}): holds a byte that is not UTF-8 at "
                        f"character {at + 1}; settings are read as UTF-8 text"
                    )
        return self

    @model_validator(mode="after")
    def _director_as_written(self) -> Settings:
        # The default director is written as a Person's name and key: the same rules as
        # a director named by advance_encounter, checked at the start, not at a write.
        if self.director is None or not self.director.strip():
            return self
        from kenning_encounter.errors import InvalidInput
        from kenning_encounter.memory.directors import checked

        try:
            checked(self.director, self.director_key, "director")
        except InvalidInput as exc:
            rule = str(exc).removeprefix(f"{exc.field}: ")
            raise ValueError(f"{exc.field} ({env_name(exc.field)}): {rule}") from None
        return self

    @model_validator(mode="after")
    def _neo4j_needs_uri(self) -> Settings:
        if self.store == "neo4j" and not self.neo4j_uri:
            raise ValueError(
                "store=neo4j needs NEO4J_URI (or --neo4j-uri), e.g. bolt://127.0.0.1:7687"
            )
        return self

    # --- derived ------------------------------------------------------------------
    @property
    def matcher_provider(self) -> Literal["gemini", "openai", "off"]:
        """The matcher that runs: ``auto`` is Gemini when its key is set, otherwise off,
        which makes the lexical path the deliberate channel (not a degraded one)."""
        if self.matcher == "auto":
            return "gemini" if self.gemini_api_key is not None else "off"
        return self.matcher

    @property
    def resolved_data_dir(self) -> Path:
        if self.data_dir is not None:
            return self.data_dir.expanduser()
        return Path(user_data_dir("kenning-encounter", appauthor=False)) / self.memory

    @property
    def granted(self) -> frozenset[str]:
        """The classes this server's face may read (memory/gates.py)."""
        return frozenset(self.reader_grant if self.face == "reader" else self.grant)

    @property
    def loopback(self) -> bool:
        return self.host in LOOPBACK

    def require_safe_bind(self) -> None:
        if self.transport != "stdio" and not self.loopback and self.token is None:
            raise ConfigError(
                f"refusing to listen on {self.host}: a non-loopback address needs a bearer token. "
                f"Set {ENV_PREFIX}TOKEN (or --token) to a long random secret, or bind 127.0.0.1"
            )

    def tool_name(self, name: str) -> str:
        return f"{self.namespace}-{name}" if self.namespace else name


def grant_classes(value: list[str]) -> list[str]:
    """A grant's classes checked against the vocabulary; ``all`` names every one."""
    words = sorted({v.strip().lower() for v in value if v.strip()})
    if words in (["none"], []):
        return []
    if words == ["all"]:
        return list(CLASSIFICATIONS)
    unknown = [w for w in words if w not in CLASSIFICATIONS]
    if unknown:
        raise ValueError(
            f"grant: {unknown[0]!r} is not a classification; grant some of "
            f"{', '.join(CLASSIFICATIONS)} (comma-separated), 'all' or 'none', "
            "e.g. KENNING_ENCOUNTER_GRANT=pii,phi"
        )
    return words


def read_env_names(settings: Settings | None) -> frozenset[str]:
    """The variables without our prefix that the settings read (the Neo4j and Gemini names,
    and the matcher's key variable when ``settings`` are given): with the prefix, all that
    may change a server."""
    names = {settings.matcher_api_key_env.upper()} if settings is not None else set[str]()
    for info in Settings.model_fields.values():
        choices = getattr(info.validation_alias, "choices", ())
        names.update(c.upper() for c in choices if isinstance(c, str) and c.isupper())
    return frozenset(names)


def check_env_file(path: Path = Path(ENV_FILE)) -> None:
    """Refuse a .env the settings would read wrongly without saying so: bytes that are not
    UTF-8, or a line naming one of our variables that the parser cannot read (it skips
    such a line, so the setting would quietly fall back to its default). A value is never
    quoted: it may be a secret."""
    try:
        raw = path.read_bytes()
    except OSError:
        return  # no file (or a folder, or unreadable): the settings read none either
    try:
        text = raw.decode("utf-8-sig")
    except UnicodeDecodeError as exc:
        line = raw[: exc.start].count(b"\n") + 1
        raise ConfigError(
            f"{path}: line {line} is not UTF-8 (byte {exc.start + 1}); save the file as UTF-8"
        ) from None
    from dotenv.parser import parse_stream

    ours = tuple(sorted(read_env_names(None) | {ENV_PREFIX}))
    for binding in parse_stream(io.StringIO(text)):
        if not binding.error:
            continue
        start = binding.original.string.lstrip().removeprefix("export ").lstrip()
        named = next((n for n in ours if start.upper().startswith(n)), None)
        if named is not None:
            name = start.split("=", 1)[0].strip()
            raise ConfigError(
                f"{path}: line {binding.original.line} ({name}) cannot be read, so the "
                "setting would be left out; close its quotes or remove the line"
            )


def load_settings(**cli: Any) -> Settings:
    """Settings from CLI values (None means 'not given'), the environment, .env, defaults."""
    given = {k: v for k, v in cli.items() if v is not None}
    check_env_file()
    try:
        return Settings(**given)
    except ValidationError as exc:
        # Not chained: the validation error holds each value given, secrets among them.
        raise ConfigError(settings_problem(exc)) from None
    except ValueError as exc:
        raise ConfigError(str(exc)) from exc


def env_name(setting: str) -> str:
    """The environment variable a setting is read from."""
    alias = Settings.model_fields[setting].validation_alias
    choices = getattr(alias, "choices", ())
    upper = [c for c in choices if isinstance(c, str) and c.isupper()]
    return upper[0] if upper else ENV_PREFIX + setting.upper()


def settings_problem(exc: ValidationError) -> str:
    """What is wrong with the settings, each by its name and variable, the value given
    shown unless the setting is a secret (a key too short is still a key)."""
    found: list[str] = []
    for error in exc.errors(include_url=False):
        name = str(error["loc"][0]) if error["loc"] else ""
        if error["type"] == "value_error":  # our own checks name the setting and the fix
            found.append(str(error.get("ctx", {}).get("error", error["msg"])))
            continue
        info = Settings.model_fields.get(name)
        where = f"{name} ({env_name(name)})" if info is not None else name or "settings"
        rule = error["msg"].replace("Input should be", "must be").replace("Value should", "must")
        secret = info is not None and "SecretStr" in str(info.annotation)
        given = "" if secret else f", not {str(error['input'])[:80]!r}"
        found.append(f"{where}: {rule}{given}")
    return "; ".join(found)
