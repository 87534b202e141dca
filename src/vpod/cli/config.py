"""Where `vipu` and `vipu-admin` find their endpoints and credentials.

The settings live in the client package (:mod:`vpod.client.config`), so
every tool reads ``vipu-cli.hcl`` and ``VIPU_CLI_*`` the same way; this
module keeps the CLIs' import path.
"""

from __future__ import annotations

from vpod.client.config import (
    DEFAULT_ADMIN_PORT,
    DEFAULT_CONFIG_PATH,
    DEFAULT_HOST,
    DEFAULT_TIMEOUT_S,
    DEFAULT_USER_PORT,
    KEYS,
    LOCAL_CONFIG_NAME,
    Endpoint,
    Settings,
    admin_endpoint,
    env_var,
    find_config_file,
    load_settings,
    parse_hcl,
    render_hcl,
    resolve_endpoint,
    user_endpoint,
)
from vpod.client.errors import ConfigError

__all__ = [
    "DEFAULT_ADMIN_PORT",
    "DEFAULT_CONFIG_PATH",
    "DEFAULT_HOST",
    "DEFAULT_TIMEOUT_S",
    "DEFAULT_USER_PORT",
    "KEYS",
    "LOCAL_CONFIG_NAME",
    "ConfigError",
    "Endpoint",
    "Settings",
    "admin_endpoint",
    "env_var",
    "find_config_file",
    "load_settings",
    "parse_hcl",
    "render_hcl",
    "resolve_endpoint",
    "user_endpoint",
]
