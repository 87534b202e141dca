"""Where the ``vpod`` cloud commands find the API: kept for its import path.

The settings and the client live in :mod:`vpod.client` (``cloud_config``,
``cloud``); ``vpod up`` writes the config file with :func:`write_config`.
"""

from __future__ import annotations

from vpod.client.cloud_config import (
    API_PREFIX,
    CONFIG_NAME,
    DEFAULT_DATA_DIR,
    config_path,
    read_config,
    resolve_cloud,
    write_config,
)

__all__ = [
    "API_PREFIX",
    "CONFIG_NAME",
    "DEFAULT_DATA_DIR",
    "config_path",
    "read_config",
    "resolve_cloud",
    "write_config",
]
