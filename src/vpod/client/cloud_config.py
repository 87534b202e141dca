"""Where the cloud API is and which token to send: ``vpod-cli.toml`` and ``VPOD_*``.

Highest precedence first (docs/cloud.md "CLI"):

1. arguments (``url=``, ``token=``; the ``vpod`` CLI's ``--url`` and ``--token``);
2. ``VPOD_URL`` and ``VPOD_TOKEN`` in the environment;
3. a config file: the ``config`` argument, else ``$VPOD_CONFIG``, else
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
from dataclasses import dataclass, field
from pathlib import Path

from .errors import NotConfigured

CONFIG_NAME = "vpod-cli.toml"
DEFAULT_DATA_DIR = Path("vpod-data")
API_PREFIX = "/api/cloud/v1"


@dataclass(frozen=True)
class CloudSettings:
    """The cloud API's base URL and the caller's project token."""

    url: str
    token: str = field(repr=False)
    source: str = "arguments"
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
    """The ``url``, ``token`` and ``project`` of a ``vpod-cli.toml``."""
    try:
        raw = tomllib.loads(path.read_text())
    except FileNotFoundError:
        raise NotConfigured(
            f"config file {path} does not exist: check --config or VPOD_CONFIG"
        ) from None
    except OSError as exc:  # a directory, say
        why = exc.strerror or str(exc)
        raise NotConfigured(f"config file {path} cannot be read: {why}") from None
    except tomllib.TOMLDecodeError as exc:
        raise NotConfigured(f"config file {path} cannot be read: {exc}") from None
    return {k: str(v) for k, v in raw.items() if k in ("url", "token", "project")}


def resolve_cloud(
    url: str | None = None,
    token: str | None = None,
    config: Path | str | None = None,
    env: Mapping[str, str] | None = None,
) -> CloudSettings:
    """The API's URL and the caller's token, from the first place that gives each."""
    env = os.environ if env is None else env
    path = config_path(Path(config) if config is not None else None, env)
    values = read_config(path) if path is not None else {}
    found_url = url or env.get("VPOD_URL") or values.get("url")
    found_token = token or env.get("VPOD_TOKEN") or values.get("token")
    source = str(path) if path is not None else "the command line and environment"
    if not found_url or not found_token:
        missing = "URL" if not found_url else "token"
        raise NotConfigured(
            f"no cloud API {missing}: give --url and --token, set VPOD_URL and VPOD_TOKEN, or"
            f" point VPOD_CONFIG at the {CONFIG_NAME} that `vpod up` writes in its data"
            " directory"
        )
    return CloudSettings(url=found_url.rstrip("/"), token=found_token, source=source)


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
