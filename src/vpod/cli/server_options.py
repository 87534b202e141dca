"""Options the commands that start a controller share: data directory, ports, tenants' hosts.

``vpod up``, ``vpod slurm up`` and ``vipu-server`` name the same data directory
and the controller's three ports with the same defaults (the V-IPU ports:
user 8090, admin 8091, HTTP 8080); ``vpod up`` hands the options on how
tenants' servers run to ``vipu-server``. Each is declared once here; a command
words its own help where what the option means to it differs.
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


def cloud_option(help: str) -> Callable[[F], F]:
    """``--cloud/--no-cloud`` (default: on)."""
    return click.option("--cloud/--no-cloud", default=True, show_default=True, help=help)


def tenant_host_options(command: F) -> F:
    """How tenants' servers run on this host: unsandboxed if asked, direct SSH ports."""
    for option in reversed(
        (
            click.option(
                "--unsafe-shared-host",
                is_flag=True,
                help="UNSAFE: where this host cannot sandbox tenants' servers (no bwrap, not"
                " root), run them anyway, on the host as this controller's user: every tenant"
                " can read the controller's files and every other tenant's (docs/cloud.md).",
            ),
            click.option(
                "--ssh-direct-ports",
                default=None,
                metavar="FIRST-LAST",
                help="Give every tenant's server a host port of this range forwarded to its"
                " sshd (e.g. 20000-20999; overrides ssh_direct_ports of cloud.toml;"
                " docs/ssh.md). Default: off, ssh goes through the controller's tunnel.",
            ),
            click.option(
                "--ssh-direct-bind",
                default=None,
                metavar="ADDRESS",
                help="Address the direct SSH ports listen on (overrides ssh_direct_bind;"
                " default 127.0.0.1; 0.0.0.0 for every address).",
            ),
        )
    ):
        command = option(command)
    return command
