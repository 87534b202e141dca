"""``vipu-admin`` commands for users, and the ``ID.vipu-cli.hcl`` that ``create user`` and
``update user --new-key`` write (:class:`KeyFile`).

The controller returns a new access key once and keeps only a hash, so
these commands write a config file (before printing the key) the
user can hand to ``vipu --config`` (mode 0600: it holds the key). The file
names the **user** endpoint (``api-host``/``api-port``): by default the
``api-host``/``api-port`` of the admin's own settings (environment or config
file), else the admin endpoint's host and port 8090; ``--user-api-host`` and
``--user-api-port`` override them. When the admin endpoint is not on port
8091, ``admin-api-port`` is written too, so ``vipu list allocations`` finds
it; a configured ``tls-ca`` is copied (as an absolute path).
"""

from __future__ import annotations

import contextlib
import os
import shlex
import tempfile
from collections.abc import Callable
from pathlib import Path

import click

from vpod.domain.naming import natural_key
from vpod.wire import admin_pb2 as apb

from .config import DEFAULT_ADMIN_PORT, DEFAULT_USER_PORT, Endpoint, Settings, render_hcl
from .exit_status import EXIT_USAGE, CliError
from .render import joined, message_dict, table, timestamp_text
from .short_help import CONTEXT
from .vipu_admin_inventory import admin_client
from .vipu_group import PORT, csv_list, echo_json, json_option, removed, session_of, success

USER_HEADERS = ("User", "Admin", "Allocations", "Created")
CONFIG_SUFFIX = ".vipu-cli.hcl"


def user_config_values(
    settings: Settings,
    admin: Endpoint,
    *,
    user_id: str,
    access_key: str,
    host: str | None = None,
    port: int | None = None,
) -> dict[str, str | int]:
    """The keys of a new user's config file, in the order they are written."""
    configured = settings.get("api-port", from_options=False)
    if port is None and configured is not None and not configured.isdigit():
        raise CliError(
            f"{settings.source_of('api-port')} is not a port: fix it or give --user-api-port",
            EXIT_USAGE,
        )
    user_port = port or int(configured or DEFAULT_USER_PORT)
    values: dict[str, str | int] = {
        "api-host": host or settings.get("api-host", from_options=False) or admin.host,
        "api-port": user_port,
    }
    if admin.port != DEFAULT_ADMIN_PORT:
        values["admin-api-port"] = admin.port
    values["api-user-id"] = user_id
    values["api-access-key"] = access_key
    if admin.tls_ca:
        values["tls-ca"] = str(Path(admin.tls_ca).expanduser().resolve())
    if admin.tls_server_name:
        values["tls-server-name"] = admin.tls_server_name
    return values


def write_private(path: Path, text: str) -> None:
    """Write ``text`` readable by its owner only, all or nothing (also when the file existed).

    A private temporary file beside ``path`` is written, flushed to disk and renamed over
    it, so a crash leaves the old file or the new one, never a truncated key.
    """
    descriptor, tmp = tempfile.mkstemp(prefix=f".{path.name}.", dir=path.parent)
    try:
        with os.fdopen(descriptor, "w", encoding="utf-8") as handle:
            os.fchmod(handle.fileno(), 0o600)
            handle.write(text)
            handle.flush()
            os.fsync(handle.fileno())
        os.replace(tmp, path)
    except BaseException:
        with contextlib.suppress(OSError):
            os.unlink(tmp)
        raise


def key_file_options(command: Callable[..., None]) -> Callable[..., None]:
    """``--output``, ``--user-api-host`` and ``--user-api-port``: where a user's new
    ``ID.vipu-cli.hcl`` goes and the user endpoint it names."""
    for option in reversed(
        (
            click.option(
                "--output",
                type=click.Path(file_okay=False, dir_okay=True, writable=True, exists=True),
                default=".",
                show_default=True,
                metavar="DIR",
                help="Where to write ID.vipu-cli.hcl.",
            ),
            click.option(
                "--user-api-host", metavar="HOST", help="api-host to write [from your settings]."
            ),
            click.option(
                "--user-api-port",
                type=PORT,
                metavar="PORT",
                help="api-port to write [from your settings, else 8090].",
            ),
        )
    ):
        command = option(command)
    return command


class KeyFile:
    """A user's ``ID.vipu-cli.hcl``, checked before the call that makes its key (a bad
    setting or an unwritable file must stop it) and written before the key is printed."""

    def __init__(
        self, ctx: click.Context, user_id: str, output: str, host: str | None, port: int | None
    ) -> None:
        session = session_of(ctx)
        self.user_id = user_id
        self.path = Path(output) / f"{user_id}{CONFIG_SUFFIX}"
        if self.path.exists() and not os.access(self.path, os.W_OK):
            raise CliError(f"cannot overwrite {self.path}: choose another --output", EXIT_USAGE)
        self._values = user_config_values(
            session.settings(),
            admin_client(ctx).endpoint,
            user_id=user_id,
            access_key="",
            host=host,
            port=port,
        )

    def write(self, access_key: str, verb: str) -> None:
        """Write the file with ``access_key`` (``verb``: what was done to the user, for the
        message when the file cannot be written: the key exists nowhere else then)."""
        self._values["api-access-key"] = access_key
        # Before anything is printed, so a reader that closes stdout early (`| head -1`) or a
        # terminal that goes away cannot lose the key.
        try:
            write_private(
                self.path, f"# vipu-cli.hcl for user {self.user_id}\n" + render_hcl(self._values)
            )
        except OSError as exc:
            click.echo(f"access key of user {self.user_id}: {access_key}", err=True)
            raise CliError(
                f"user {self.user_id} was {verb} but {self.path} could not be written"
                f" ({exc.strerror}): put the access key above into a vipu-cli.hcl yourself"
            ) from None

    def echo(self, user: apb.User, access_key: str, as_json: bool, verb: str) -> None:
        """What the command prints once the file is written."""
        if as_json:
            echo_json(
                {
                    "user": message_dict(user),
                    "access_key": access_key,
                    "config_file": str(self.path),
                }
            )
            return
        success(verb, "user", self.user_id)
        click.echo(f"access key: {access_key}")
        click.echo("The access key is shown only this once: keep it, or give the file below.")
        click.echo(
            f"config file: {self.path} (use it with: vipu --config"
            f" {shlex.quote(str(self.path))} list partitions)"
        )


@click.command(
    "user",
    context_settings=CONTEXT,
    short_help="Create user ID; print its key once, write ID.vipu-cli.hcl",
)
@click.argument("user_id", metavar="ID")
@click.option(
    "--allocations", metavar="A,B", callback=csv_list, help="Allocations the user may use."
)
@click.option("--admin", "is_admin", is_flag=True, help="Make the user an administrator.")
@key_file_options
@json_option
@click.pass_context
def create_user(
    ctx: click.Context,
    user_id: str,
    allocations: list[str],
    is_admin: bool,
    output: str,
    user_api_host: str | None,
    user_api_port: int | None,
    as_json: bool,
) -> None:
    """Create user ID, print its access key once and write ID.vipu-cli.hcl.

    \b
    Examples:
      vipu-admin create user alice --allocations team-a
      vipu --config alice.vipu-cli.hcl list partitions
    """
    key_file = KeyFile(ctx, user_id, output, user_api_host, user_api_port)
    reply = admin_client(ctx).create_user(user_id, allocation_ids=allocations, admin=is_admin).raw
    key_file.write(reply.access_key, "created")
    key_file.echo(reply.user, reply.access_key, as_json, "create")


@click.command(
    "user",
    context_settings=CONTEXT,
    short_help="Give user ID a new access key",
)
@click.argument("user_id", metavar="ID")
@click.option(
    "--new-key",
    is_flag=True,
    help="Issue a new access key; the old one stops working at its next call.",
)
@key_file_options
@json_option
@click.pass_context
def update_user(
    ctx: click.Context,
    user_id: str,
    new_key: bool,
    output: str,
    user_api_host: str | None,
    user_api_port: int | None,
    as_json: bool,
) -> None:
    """Change user ID: --new-key replaces its access key (a leaked or lost one).

    The new key is printed once and written to ID.vipu-cli.hcl, as by create
    user; the old key stops working at its next call, on every controller. The
    user keeps its allocations and its admin right, and its partitions stay.

    \b
    Example:
      vipu-admin update user alice --new-key --output /secure/dir
    """
    if not new_key:
        raise CliError("say what to change: --new-key issues a new access key", EXIT_USAGE)
    key_file = KeyFile(ctx, user_id, output, user_api_host, user_api_port)
    reply = admin_client(ctx).rotate_user_key(user_id).raw
    key_file.write(reply.access_key, "given a new key")
    key_file.echo(reply.user, reply.access_key, as_json, "update")


@click.command("users", context_settings=CONTEXT)
@json_option
@click.pass_context
def list_users(ctx: click.Context, as_json: bool) -> None:
    """List users and the allocations they may use.

    Table columns: User | Admin | Allocations | Created.
    """
    reply = apb.ListUsersReply(users=[u.raw for u in admin_client(ctx).list_users()])
    if as_json:
        echo_json(message_dict(reply))
        return
    rows = [
        [u.id, u.admin, joined(u.allocation_ids), timestamp_text(u.created_at)]
        for u in sorted(reply.users, key=lambda u: natural_key(u.id))
    ]
    click.echo(table(USER_HEADERS, rows))


@click.command("user", context_settings=CONTEXT)
@click.argument("user_id", metavar="ID")
@json_option
@click.pass_context
def remove_user(ctx: click.Context, user_id: str, as_json: bool) -> None:
    """Remove user ID: its access key stops working at once."""
    admin_client(ctx).remove_user(user_id)
    removed("user", user_id, as_json)


def _allocation_access(verb: str, user_help: str) -> Callable[[Callable[[], None]], click.Command]:
    """``grant allocation`` or ``revoke allocation`` (``verb``), from a function holding its help.

    Both change which allocations user USER may use, then print what the user may use now.
    """

    def decorate(described: Callable[[], None]) -> click.Command:
        @click.command("allocation", context_settings=CONTEXT, help=described.__doc__)
        @click.argument("allocation_id", metavar="ALLOCATION")
        @click.option("--user", "user_id", required=True, metavar="USER", help=user_help)
        @json_option
        @click.pass_context
        def command(ctx: click.Context, allocation_id: str, user_id: str, as_json: bool) -> None:
            client = admin_client(ctx)
            change = client.grant_allocation if verb == "grant" else client.revoke_allocation
            user = change(allocation_id, user_id)
            if as_json:
                echo_json(message_dict(user.raw))
                return
            click.echo(f"{verb} allocation ({allocation_id}) for user {user.id}: success.")
            usable = ",".join(user.allocation_ids) or "no allocation"
            click.echo(f"user {user.id} may use: {usable}")

        return command

    return decorate


@_allocation_access("grant", user_help="The user to grant it to.")
def grant_allocation() -> None:
    """Let existing user USER use ALLOCATION too; its access key stays the same.

    The user's vipu-cli.hcl keeps working; the grant applies at its next call.
    Granting twice is harmless.

    \b
    Examples:
      vipu-admin grant allocation default --user default
      vipu-admin grant allocation team-b --user alice --json
    """


@_allocation_access("revoke", user_help="The user to take it from.")
def revoke_allocation() -> None:
    """Stop user USER using ALLOCATION, from its next call; its key and other grants stay.

    Revoking what was not granted is harmless; its partitions stay in the allocation.

    \b
    Examples:
      vipu-admin revoke allocation team-a --user alice
    """
