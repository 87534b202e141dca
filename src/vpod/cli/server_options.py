"""Options the commands that start a controller share: its data directory and ports.

``vpod up``, ``vpod slurm up`` and ``vipu-server`` name the same data directory
and the controller's three ports with the same defaults (the V-IPU ports:
user 8090, admin 8091, HTTP 8080). Each is declared once here; a command words
its own help where what the option means to it differs.
"""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path
from typing import Any, TypeVar

import click

from vpod.client.config import DEFAULT_ADMIN_PORT, DEFAULT_USER_PORT

F = TypeVar("F", bound=Callable[..., Any])

DEFAULT_HTTP_PORT = 8080
"""As ``vpod.client.rest``'s, which a command line does not import at start-up (pydantic)."""


def data_dir_option(help: str, **extra: Any) -> Callable[[F], F]:
    """``--data-dir`` (default ``vpod-data``): where a pod's store and files live."""
    return click.option(
        "--data-dir",
        type=click.Path(file_okay=False, path_type=Path),
        default=Path("vpod-data"),
        show_default=True,
        help=help,
        **extra,
    )


def port_option(*decls: str, default: int, help: str) -> Callable[[F], F]:
    """A TCP port a server listens on (0 to 65535), its default shown in ``--help``."""
    return click.option(
        *decls, type=click.IntRange(0, 65535), default=default, show_default=True, help=help
    )


def user_port_option(help: str, *decls: str) -> Callable[[F], F]:
    """``--port``: the V-IPU user API's (gRPC)."""
    return port_option("--port", *decls, default=DEFAULT_USER_PORT, help=help)


def admin_port_option(help: str) -> Callable[[F], F]:
    """``--admin-port``: the admin API's (gRPC)."""
    return port_option("--admin-port", default=DEFAULT_ADMIN_PORT, help=help)


def http_port_option(help: str) -> Callable[[F], F]:
    """``--http-port``: the REST API's, with /healthz, /readyz and /metrics."""
    return port_option("--http-port", default=DEFAULT_HTTP_PORT, help=help)
