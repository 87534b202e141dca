"""How the ``vpod`` cloud commands reach the API: where, with which token, and failures.

Where and who, highest precedence first (decision, docs/cloud.md "CLI"):

1. ``--url`` and ``--token`` on the command line;
2. ``VPOD_URL`` and ``VPOD_TOKEN`` in the environment;
3. a config file: ``--config PATH``, else ``$VPOD_CONFIG``, else
   ``$VPOD_DATA_DIR/vpod-cli.toml``, else ``./vpod-data/vpod-cli.toml`` (what
   ``vpod up`` writes for its default project).

The config file is TOML with ``url`` and ``token`` (and ``project``, for
people). Each setting is looked up on its own, so ``VPOD_TOKEN`` may go with
a URL from the file.
"""

from __future__ import annotations

import os
import tomllib
from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import httpx

from .errors import CliFailure

CONFIG_NAME = "vpod-cli.toml"
DEFAULT_DATA_DIR = Path("vpod-data")
API_PREFIX = "/api/cloud/v1"
TIMEOUT_S = 60.0


@dataclass(frozen=True)
class Connection:
    url: str
    token: str
    source: str
    """Where the settings came from, for error messages."""


def config_path(explicit: Path | None, env: Mapping[str, str]) -> Path | None:
    """The config file to read, or None when there is none."""
    if explicit is not None:
        return explicit
    if env.get("VPOD_CONFIG"):
        return Path(env["VPOD_CONFIG"])
    data_dir = Path(env["VPOD_DATA_DIR"]) if env.get("VPOD_DATA_DIR") else DEFAULT_DATA_DIR
    candidate = data_dir / CONFIG_NAME
    return candidate if candidate.exists() else None


def read_config(path: Path) -> dict[str, str]:
    try:
        raw = tomllib.loads(path.read_text())
    except FileNotFoundError:
        raise CliFailure(
            f"config file {path} does not exist: check --config or VPOD_CONFIG"
        ) from None
    except (OSError, tomllib.TOMLDecodeError) as exc:
        raise CliFailure(f"config file {path} cannot be read: {exc}") from None
    return {k: str(v) for k, v in raw.items() if k in ("url", "token", "project")}


def resolve(
    url: str | None,
    token: str | None,
    config: Path | None,
    env: Mapping[str, str] | None = None,
) -> Connection:
    """The API's URL and the caller's token, from the first place that gives each."""
    env = os.environ if env is None else env
    path = config_path(config, env)
    values = read_config(path) if path is not None else {}
    found_url = url or env.get("VPOD_URL") or values.get("url")
    found_token = token or env.get("VPOD_TOKEN") or values.get("token")
    source = str(path) if path is not None else "the command line and environment"
    if not found_url or not found_token:
        missing = "URL" if not found_url else "token"
        raise CliFailure(
            f"no cloud API {missing}: give --url and --token, set VPOD_URL and VPOD_TOKEN, or"
            f" point VPOD_CONFIG at the {CONFIG_NAME} that `vpod up` writes in its data"
            " directory"
        )
    return Connection(url=found_url.rstrip("/"), token=found_token, source=source)


def write_config(path: Path, url: str, token: str, project: str) -> None:
    """Write a config file readable by its owner only (it holds a token)."""
    text = (
        "# vpod CLI settings, written by `vpod up` (see docs/cloud.md)\n"
        f'url = "{url}"\n'
        f'project = "{project}"\n'
        f'token = "{token}"\n'
    )
    tmp = path.with_name(path.name + ".tmp")
    fd = os.open(tmp, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o600)
    with os.fdopen(fd, "w") as handle:
        handle.write(text)
    tmp.replace(path)


class ApiError(CliFailure):
    """The API answered with an error; ``code`` is its error code (``NOT_FOUND``...)."""

    def __init__(self, message: str, code: str, status: int) -> None:
        super().__init__(message, 2 if status == 400 else 1)
        self.code = code
        self.status = status


class CloudClient:
    """A thin JSON client of ``/api/cloud/v1``; failures become one-line CliFailures."""

    def __init__(self, connection: Connection, *, timeout: float = TIMEOUT_S) -> None:
        self.connection = connection
        self._http = httpx.Client(
            base_url=connection.url + API_PREFIX,
            headers={"Authorization": f"Bearer {connection.token}"},
            timeout=timeout,
        )

    def close(self) -> None:
        self._http.close()

    def __enter__(self) -> CloudClient:
        return self

    def __exit__(self, *_exc: object) -> None:
        self.close()

    def call(self, method: str, path: str, **kwargs: Any) -> Any:
        try:
            reply = self._http.request(method, path, **kwargs)
        except httpx.TimeoutException:
            raise CliFailure(
                f"the cloud API at {self.connection.url} did not answer in time: retry"
            ) from None
        except httpx.HTTPError as exc:
            raise CliFailure(
                f"cannot reach the cloud API at {self.connection.url} ({exc}): is `vpod up`"
                " (or vipu-server) running there?"
            ) from None
        if reply.status_code >= 400:
            raise _api_error(reply)
        if reply.status_code == 204 or not reply.content:
            return None
        return reply.json()

    def get(self, path: str, **params: Any) -> Any:
        return self.call("GET", path, params={k: v for k, v in params.items() if v is not None})

    def post(self, path: str, body: Any = None) -> Any:
        return self.call("POST", path, json=body if body is not None else {})

    def put(self, path: str, body: Any) -> Any:
        return self.call("PUT", path, json=body)

    def delete(self, path: str, **params: Any) -> Any:
        return self.call("DELETE", path, params=params)


def _api_error(reply: httpx.Response) -> ApiError:
    try:
        error = reply.json()["error"]
        return ApiError(str(error["message"]), str(error["code"]), reply.status_code)
    except (ValueError, KeyError, TypeError):
        text = reply.text.strip()[:200] or reply.reason_phrase
        return ApiError(
            f"the cloud API answered {reply.status_code}: {text}", "", reply.status_code
        )
