"""Where the V-IPU clients (and `vipu`, `vipu-admin`) find their endpoints and credentials.

Every setting has a key (``api-host``, ``api-port`` ...). Precedence, highest
first: the command-line option, the ``VIPU_CLI_<KEY>`` environment variable
(``api-host`` -> ``VIPU_CLI_API_HOST``), the config file, the built-in
default. The config file is HCL as V-IPU writes it (``vipu-cli.hcl``): one
``key = value`` per line, strings in double quotes, numbers bare, ``#`` and
``//`` comments. Its location is ``--config``, else ``VIPU_CLI_CONFIG``, else
``./vipu-cli.hcl`` when present, else ``/etc/vipu/vipu-cli.hcl`` when present.

Two endpoints (decision, see docs/cli.md "Endpoints"):

- the **user endpoint** (``vipu``): ``api-host`` (default ``localhost``) and
  ``api-port`` (default 8090);
- the **admin endpoint** (``vipu-admin``, and ``vipu list allocations``):
  ``admin-api-host`` falling back to ``api-host``, and ``admin-api-port``
  with its own default 8091. The admin port never falls back to ``api-port``:
  a config file written for users names the user port there, and reaching the
  user port with admin calls would only fail later and more obscurely.
  ``vipu-admin`` feeds its ``-H``/``--api-host``/``--api-port`` options into
  the ``admin-api-*`` keys, so on its command line they mean the admin
  endpoint, as an admin expects.
"""

from __future__ import annotations

import os
import re
from collections.abc import Mapping
from dataclasses import dataclass, field
from pathlib import Path

from .errors import ConfigError

DEFAULT_CONFIG_PATH = Path("/etc/vipu/vipu-cli.hcl")
LOCAL_CONFIG_NAME = "vipu-cli.hcl"
DEFAULT_HOST = "localhost"
DEFAULT_USER_PORT = 8090
DEFAULT_ADMIN_PORT = 8091
DEFAULT_TIMEOUT_S = 60.0
MAX_TIMEOUT_S = 7 * 86400.0
"""The longest deadline of a call: gRPC's deadline arithmetic overflows past about 30 years
(a call given ``1e10`` s or ``inf`` failed at once with "did not answer within inf s")."""

KEYS: tuple[str, ...] = (
    "api-host",
    "api-port",
    "api-user-id",
    "api-access-key",
    "admin-api-host",
    "admin-api-port",
    "tls-ca",
    "tls-cert",
    "tls-key",
    "tls-server-name",
    "timeout",
)
"""Every key the CLIs read; other keys in a config file are ignored."""

_KEY = re.compile(r"[A-Za-z][A-Za-z0-9_-]*")
_BARE_VALUE = re.compile(r"[^\s\"#]+")


def env_var(key: str) -> str:
    """The environment variable that sets ``key``: ``api-host`` -> ``VIPU_CLI_API_HOST``."""
    return "VIPU_CLI_" + key.upper().replace("-", "_")


def _strip_comment(rest: str, source: str, number: int) -> None:
    rest = rest.strip()
    if rest and not rest.startswith(("#", "//")):
        raise ConfigError(f"{source}:{number}: unexpected {rest!r} after the value")


def _quoted(text: str, source: str, number: int) -> tuple[str, str]:
    """Read a double-quoted string at the start of ``text``: (value, rest of the line)."""
    out: list[str] = []
    escapes = {"n": "\n", "t": "\t", '"': '"', "\\": "\\"}
    i = 1
    while i < len(text):
        char = text[i]
        if char == "\\" and i + 1 < len(text):
            out.append(escapes.get(text[i + 1], "\\" + text[i + 1]))
            i += 2
            continue
        if char == '"':
            return "".join(out), text[i + 1 :]
        out.append(char)
        i += 1
    raise ConfigError(f"{source}:{number}: the string is not closed: add the final '\"'")


def parse_hcl(text: str, *, source: str = "config") -> dict[str, str]:
    """Parse the flat ``key = value`` subset of HCL that vipu-cli.hcl uses.

    Keys are lower-cased and ``_`` becomes ``-`` (``api_host`` is ``api-host``);
    a later line wins over an earlier one with the same key.
    """
    values: dict[str, str] = {}
    for number, raw in enumerate(text.splitlines(), start=1):
        line = raw.strip()
        if not line or line.startswith(("#", "//")):
            continue
        key_match = _KEY.match(line)
        rest = line[key_match.end() :].lstrip() if key_match else ""
        if key_match is None or not rest.startswith("="):
            raise ConfigError(f'{source}:{number}: expected key = "value", got {line!r}')
        rest = rest[1:].lstrip()
        if rest.startswith('"'):
            value, rest = _quoted(rest, source, number)
        else:
            bare = _BARE_VALUE.match(rest)
            if bare is None:
                raise ConfigError(f"{source}:{number}: {key_match[0]} has no value")
            value, rest = bare[0], rest[bare.end() :]
        _strip_comment(rest, source, number)
        values[key_match[0].replace("_", "-").lower()] = value
    return values


def render_hcl(values: Mapping[str, str | int]) -> str:
    """Write values in the format `parse_hcl` reads (numbers bare, strings quoted)."""
    lines = []
    for key, value in values.items():
        if isinstance(value, int):
            lines.append(f"{key}={value}")
        else:
            escaped = value.replace("\\", "\\\\").replace('"', '\\"').replace("\n", "\\n")
            lines.append(f'{key}="{escaped}"')
    return "\n".join(lines) + "\n"


def _config_file(path: Path, missing: str) -> Path:
    """``path`` when it is a file; a ConfigError saying what it is otherwise (``missing``
    when there is nothing there)."""
    if path.is_dir():
        raise ConfigError(
            f"config file {path} is a directory: give the file in it ({path / LOCAL_CONFIG_NAME}?)"
        )
    if not path.is_file():
        raise ConfigError(missing)
    return path


def find_config_file(explicit: str | None, env: Mapping[str, str]) -> Path | None:
    """The config file to read, or None when there is none (an explicit one must exist)."""
    if explicit:
        return _config_file(
            Path(explicit), f"config file {explicit} does not exist: check --config"
        )
    if env.get("VIPU_CLI_CONFIG"):
        path = Path(env["VIPU_CLI_CONFIG"])
        return _config_file(path, f"config file {path} (from VIPU_CLI_CONFIG) does not exist")
    for candidate in (Path(LOCAL_CONFIG_NAME), DEFAULT_CONFIG_PATH):
        if candidate.is_file():
            return candidate
    return None


@dataclass(frozen=True)
class Endpoint:
    """Where to call and as whom."""

    host: str
    port: int
    user_id: str = ""
    access_key: str = ""
    tls_ca: str = ""
    tls_cert: str = ""
    tls_key: str = ""
    tls_server_name: str = ""
    timeout_s: float = DEFAULT_TIMEOUT_S

    @property
    def target(self) -> str:
        """``host:port``, with brackets around an IPv6 address."""
        host = f"[{self.host}]" if ":" in self.host and not self.host.startswith("[") else self.host
        return f"{host}:{self.port}"

    @property
    def secure(self) -> bool:
        """TLS is used when a CA is configured (mutual TLS when a cert and key are too)."""
        return bool(self.tls_ca)


@dataclass(frozen=True)
class Settings:
    """The settings one run of a CLI sees: options, environment and config file, merged."""

    options: Mapping[str, str | None] = field(default_factory=dict)
    env: Mapping[str, str] = field(default_factory=dict)
    file_values: Mapping[str, str] = field(default_factory=dict)
    path: Path | None = None

    def get(self, key: str, *, from_options: bool = True) -> str | None:
        """The value of ``key`` by precedence (option, environment, file), or None."""
        if from_options:
            option = self.options.get(key)
            if option is not None and option != "":
                return option
        from_env = self.env.get(env_var(key))
        if from_env:
            return from_env
        return self.file_values.get(key) or None

    def source_of(self, key: str) -> str:
        """Where ``key`` came from, for error messages."""
        if self.options.get(key):
            return "--" + key.removeprefix("admin-")
        if self.env.get(env_var(key)):
            return env_var(key)
        if key in self.file_values and self.path is not None:
            return f"{key} in {self.path}"
        return key


def load_settings(
    options: Mapping[str, str | int | float | None],
    *,
    env: Mapping[str, str] | None = None,
    config_path: str | None = None,
) -> Settings:
    """Read the config file (if any) and keep options and environment beside it."""
    environ = dict(os.environ if env is None else env)
    path = find_config_file(config_path, environ)
    file_values: dict[str, str] = {}
    if path is not None:
        try:
            text = path.read_text(encoding="utf-8")
        except OSError as exc:
            raise ConfigError(f"cannot read config file {path}: {exc.strerror}") from None
        file_values = parse_hcl(text, source=str(path))
    plain = {k: None if v is None else str(v) for k, v in options.items()}
    return Settings(options=plain, env=environ, file_values=file_values, path=path)


def _port(settings: Settings, key: str, default: int, *, from_options: bool = True) -> int:
    text = settings.get(key, from_options=from_options)
    if text is None:
        return default
    try:
        port = int(text)
    except ValueError:
        raise ConfigError(
            f"{settings.source_of(key)} must be a port number, not {text!r}"
        ) from None
    if not 0 < port < 65536:
        raise ConfigError(f"{settings.source_of(key)} must be between 1 and 65535, not {port}")
    return port


def _timeout(settings: Settings) -> float:
    text = settings.get("timeout")
    if text is None:
        return DEFAULT_TIMEOUT_S
    try:
        value = float(text)
    except ValueError:
        value = -1.0
    if not 0 < value <= MAX_TIMEOUT_S:
        raise ConfigError(
            f"{settings.source_of('timeout')} must be a positive number of seconds, at most"
            f" {MAX_TIMEOUT_S:.0f} (a week)"
        )
    return value


def _endpoint(settings: Settings, host: str, port: int) -> Endpoint:
    return Endpoint(
        host=host,
        port=port,
        user_id=settings.get("api-user-id") or "",
        access_key=settings.get("api-access-key") or "",
        tls_ca=settings.get("tls-ca") or "",
        tls_cert=settings.get("tls-cert") or "",
        tls_key=settings.get("tls-key") or "",
        tls_server_name=settings.get("tls-server-name") or "",
        timeout_s=_timeout(settings),
    )


def user_endpoint(settings: Settings) -> Endpoint:
    """The user endpoint: ``api-host`` / ``api-port`` (default port 8090)."""
    host = settings.get("api-host") or DEFAULT_HOST
    return _endpoint(settings, host, _port(settings, "api-port", DEFAULT_USER_PORT))


def admin_endpoint(settings: Settings) -> Endpoint:
    """The admin endpoint: ``admin-api-host`` else ``api-host``; ``admin-api-port`` else 8091."""
    host = settings.get("admin-api-host") or settings.get("api-host") or DEFAULT_HOST
    return _endpoint(settings, host, _port(settings, "admin-api-port", DEFAULT_ADMIN_PORT))


def resolve_endpoint(
    options: Mapping[str, str | int | None],
    *,
    admin: bool,
    env: Mapping[str, str] | None = None,
    config_path: str | None = None,
) -> Endpoint:
    """One call for other tools: load the settings and pick the user or admin endpoint.

    ``options`` uses the config keys (``api-host`` ...); ``None`` means unset.
    """
    settings = load_settings(options, env=env, config_path=config_path)
    return admin_endpoint(settings) if admin else user_endpoint(settings)
