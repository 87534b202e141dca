"""The security options of ``vipu-server``: ``--init``, ``--tls-init``, ``--tls*``, ``--insecure``.

- ``--tls-init`` writes a CA, a server and a client certificate into
  ``DATA_DIR/tls`` (:mod:`vpod.controller.tls_material`), then exits.
- ``--init [--secure]`` migrates the store; with ``--secure`` it creates the
  default administrator, prints its access key once and writes
  ``DATA_DIR/admin.vipu-cli.hcl`` (mode 0600) for ``vipu-admin --config``;
  then exits (:mod:`vpod.controller.initialise`).
- ``--tls`` serves every endpoint over TLS; ``--tls-client-auth`` also
  requires client certificates; ``--tls-cert/--tls-key/--tls-ca`` name
  other files than ``DATA_DIR/tls``.
- ``--insecure`` serves a store initialised with ``--secure`` without
  authentication anyway (otherwise refused).

docs/security.md explains the modes and the steps.
"""

from __future__ import annotations

import functools
import logging
import shlex
from collections.abc import Callable
from dataclasses import dataclass, fields
from pathlib import Path
from typing import Any

import click

from vpod.cli.config import render_hcl
from vpod.cli.errors import fail
from vpod.controller.initialise import (
    DEFAULT_ADMIN_ID,
    ModeRefused,
    check_serving_mode,
    initialise,
)
from vpod.controller.settings import Settings
from vpod.controller.tls import ServerTls, TlsFiles, TlsSetupError
from vpod.store.errors import StoreError

log = logging.getLogger("vpod.server")

ADMIN_CONFIG_NAME = "admin.vipu-cli.hcl"
_UNSPECIFIED = {"0.0.0.0", "::", ""}


@dataclass(frozen=True)
class SecurityOptions:
    init: bool = False
    default_user_id: str = DEFAULT_ADMIN_ID
    new_admin_key: bool = False
    insecure: bool = False
    tls_init: bool = False
    tls_san: tuple[str, ...] = ()
    tls: bool = False
    tls_cert: Path | None = None
    tls_key: Path | None = None
    tls_ca: Path | None = None
    tls_client_auth: bool = False

    @property
    def setup_only(self) -> bool:
        """``--init`` or ``--tls-init``: prepare, then exit without serving."""
        return self.init or self.tls_init


_FILE = click.Path(dir_okay=False, path_type=Path)
_OPTIONS = (
    click.option(
        "--init",
        is_flag=True,
        help="Initialise the store (with --secure: create the default administrator and print"
        " its access key once), then exit.",
    ),
    click.option(
        "--default-user-id",
        default=DEFAULT_ADMIN_ID,
        show_default=True,
        metavar="ID",
        help="Id of the administrator that --init --secure creates.",
    ),
    click.option(
        "--new-admin-key",
        is_flag=True,
        help="With --init --secure: give the existing administrator a new access key.",
    ),
    click.option(
        "--insecure",
        is_flag=True,
        help="Serve a store initialised with --secure without authentication anyway; with"
        " --init, turn authentication off for good.",
    ),
    click.option(
        "--tls-init",
        is_flag=True,
        help="Write a CA, a server and a client certificate into DATA_DIR/tls, then exit.",
    ),
    click.option(
        "--tls-san",
        multiple=True,
        metavar="NAME",
        help="Extra host name or address the server certificate is valid for (repeat).",
    ),
    click.option(
        "--tls", is_flag=True, help="Serve every endpoint over TLS (files from DATA_DIR/tls)."
    ),
    click.option("--tls-cert", type=_FILE, help="Server certificate (PEM) [DATA_DIR/tls]."),
    click.option("--tls-key", type=_FILE, help="Server private key (PEM) [DATA_DIR/tls]."),
    click.option("--tls-ca", type=_FILE, help="CA that signs client certificates [DATA_DIR/tls]."),
    click.option(
        "--tls-client-auth",
        is_flag=True,
        help="Require a client certificate signed by the CA on every endpoint (implies --tls).",
    ),
)
_NAMES = tuple(f.name for f in fields(SecurityOptions))


def security_options(command: Callable[..., None]) -> Callable[..., None]:
    """Add the options above to a Click command; it receives them as ``security=``."""

    @functools.wraps(command)
    def wrapper(**kwargs: Any) -> None:
        security = SecurityOptions(**{name: kwargs.pop(name) for name in _NAMES})
        command(security=security, **kwargs)

    decorated: Callable[..., None] = wrapper
    for option in reversed(_OPTIONS):
        decorated = option(decorated)
    return decorated


def server_tls(options: SecurityOptions, data_dir: Path) -> ServerTls | None:
    """How to serve TLS, or None for plain connections."""
    named = (options.tls_cert, options.tls_key, options.tls_ca)
    if not (options.tls or options.tls_client_auth or any(named)):
        return None
    files = TlsFiles.in_data_dir(data_dir)
    ca = options.tls_ca
    if ca is None and (options.tls_client_auth or files.ca_cert.exists()):
        ca = files.ca_cert  # without client certificates to check, no CA is needed
    return ServerTls(
        cert=options.tls_cert or files.server_cert,
        key=options.tls_key or files.server_key,
        ca=ca,
        require_client_auth=options.tls_client_auth,
    )


def check_options(settings: Settings, options: SecurityOptions) -> None:
    """Usage errors that no run could fix (exit 2)."""
    if settings.secure and options.insecure:
        fail("give --secure or --insecure, not both", 2)
    if options.new_admin_key and not (options.init and settings.secure):
        fail("--new-admin-key goes with --init --secure", 2)
    if bool(options.tls_cert) != bool(options.tls_key):
        fail("give --tls-cert and --tls-key together (the certificate and its key)", 2)


def run_setup(settings: Settings, options: SecurityOptions) -> None:
    """``--tls-init`` and/or ``--init``: prepare the data directory and say what comes next."""
    if options.tls_init:
        _tls_init(settings, options)
    if options.init:
        _init(settings, options)
    click.echo(
        "Done; nothing is served by --init/--tls-init. Next: run vipu-server with the same"
        " options but without --init/--tls-init" + (" (keep --secure)." if settings.secure else ".")
    )


def _tls_init(settings: Settings, options: SecurityOptions) -> None:
    # cryptography is imported to make certificates only, not by every start (see tls.py).
    from vpod.controller.tls_material import write_tls_material

    files = TlsFiles.in_data_dir(settings.data_dir)
    hosts = [settings.host, settings.admin_host, settings.http_host, *options.tls_san]
    try:
        write_tls_material(files, hosts=hosts)
    except TlsSetupError as exc:
        fail(str(exc))
    click.echo(f"TLS material written to {files.directory}:")
    click.echo(f"  CA:     {files.ca_cert} (key {files.ca_key}: keep it private)")
    click.echo(f"  server: {files.server_cert}, {files.server_key}")
    click.echo(f"  client: {files.client_cert}, {files.client_key}")
    click.echo(
        "Serve with --tls (add --tls-client-auth to require client certificates); clients set"
        f" tls-ca={files.ca_cert} (and tls-cert/tls-key) in vipu-cli.hcl."
    )


def _init(settings: Settings, options: SecurityOptions) -> None:
    try:
        result = initialise(
            settings,
            secure=settings.secure,
            admin_id=options.default_user_id,
            allow_insecure=options.insecure,
            new_admin_key=options.new_admin_key,
        )
    except ModeRefused as exc:
        fail(str(exc), 2)
    except StoreError as exc:
        fail(f"cannot initialise the store: {exc}")
    mode = "secure: every call is authenticated" if result.secure else "open: no authentication"
    click.echo(f"store initialised: {result.store_url} ({mode})")
    if not result.secure:
        return
    if not result.access_key:
        click.echo(
            f"administrator {result.admin_id} exists already; its access key was shown when it"
            " was created (--new-admin-key makes a new one)"
        )
        return
    # The admin CLI's module (and with it the admin client) only for --init --secure.
    from vpod.cli.vipu_admin_users import write_private

    path = settings.data_dir / ADMIN_CONFIG_NAME
    settings.data_dir.mkdir(parents=True, exist_ok=True)
    write_private(path, admin_config_text(settings, options, result.admin_id, result.access_key))
    click.echo(f"administrator: {result.admin_id}")
    click.echo(f"access key: {result.access_key}")
    click.echo(
        "The access key is shown only this once; it is also in"
        f" {path} (mode 0600): vipu-admin --config {shlex.quote(str(path))} list users"
    )


def _reachable(host: str) -> str:
    return "127.0.0.1" if host in _UNSPECIFIED else host


def admin_config_text(
    settings: Settings, options: SecurityOptions, user_id: str, access_key: str
) -> str:
    """The administrator's vipu-cli.hcl: both endpoints, credentials and, with TLS, the files."""
    values: dict[str, str | int] = {
        "api-host": _reachable(settings.host),
        "api-port": settings.user_port,
        "admin-api-host": _reachable(settings.admin_host),
        "admin-api-port": settings.admin_port,
        "api-user-id": user_id,
        "api-access-key": access_key,
    }
    tls = server_tls(options, settings.data_dir)
    if tls is not None and tls.ca is not None:
        files = TlsFiles.in_data_dir(settings.data_dir)
        values["tls-ca"] = str(tls.ca.resolve())
        if tls.require_client_auth and files.client_cert.exists():
            values["tls-cert"] = str(files.client_cert.resolve())
            values["tls-key"] = str(files.client_key.resolve())
    header = f"# vipu-cli.hcl for administrator {user_id}, written by vipu-server --init --secure\n"
    return header + render_hcl(values)


def prepare_serving(settings: Settings, options: SecurityOptions) -> ServerTls | None:
    """Before serving: check the TLS files and the store's remembered mode."""
    tls = server_tls(options, settings.data_dir)
    if tls is not None:
        try:
            tls.check()
        except TlsSetupError as exc:
            fail(str(exc), 2)
    try:
        warning = check_serving_mode(settings, allow_insecure=options.insecure)
    except ModeRefused as exc:
        fail(str(exc), 2)
    except StoreError as exc:
        fail(f"cannot open the store: {exc}")
    if warning:
        log.warning("%s", warning)
    return tls
