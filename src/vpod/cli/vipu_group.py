"""What `vipu` and `vipu-admin` share: global options, the session, one error exit.

:class:`VipuGroup` is the top-level Click group of both CLIs. Its ``main``
runs the command and turns every failure into one line on stderr and an exit
status (docs/cli.md "Exit status"): 2 for usage errors (Click's own, bad
settings, the server's INVALID_ARGUMENT), 1 for everything else. No
traceback reaches the user unless ``VIPU_CLI_DEBUG=1``.

Global options are accepted before the command (``vipu -H ctl list
partitions``) and after it (``vipu list partitions -H ctl``), as V-IPU's
own CLI allows; a value given after the command wins.
"""

from __future__ import annotations

import os
import sys
import traceback
from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any, NoReturn, TypeVar

import click

from vpod.client import UserClient, VpodError
from vpod.client.command_line import os_error_text
from vpod.client.config import (
    MAX_TIMEOUT_S,
    Settings,
    admin_endpoint,
    load_settings,
    user_endpoint,
)
from vpod.client.wire_values import UINT32_MAX
from vpod.domain.excerpts import bounded, excerpt

from .exit_status import EXIT_FAILURE, EXIT_USAGE, CliError, exit_code_of, one_line
from .render import json_text, message_dict, table
from .short_help import CONTEXT, FittingGroup
from .vipu_views import IPU_ATTRIBUTE_HEADERS, attributes_reply, ipu_attribute_rows

if TYPE_CHECKING:
    from google.protobuf.message import Message

    from vpod.client import AdminClient  # loaded on first use: `vipu` rarely needs it

F = TypeVar("F", bound=Callable[..., Any])

CREDENTIALS_HINT = "set --api-user-id and --api-access-key, or use your vipu-cli.hcl"

GLOBAL_FLAGS: tuple[str, ...] = (
    "api-host",
    "api-port",
    "api-user-id",
    "api-access-key",
    "config",
    "timeout",
)


@dataclass
class Session:
    """One run of a CLI: the flags given, the settings they resolve to, open clients."""

    prog: str
    admin_cli: bool
    """``vipu-admin``: ``-H``/``--api-port`` name the admin endpoint."""
    env: Mapping[str, str] | None = None
    flags: dict[str, Any] = field(default_factory=dict)
    _settings: Settings | None = None
    _user: UserClient | None = None
    _admin: AdminClient | None = None

    def settings(self) -> Settings:
        if self._settings is None:
            options: dict[str, Any] = {
                key: self.flags.get(key) for key in ("api-user-id", "api-access-key", "timeout")
            }
            prefix = "admin-" if self.admin_cli else ""
            options[prefix + "api-host"] = self.flags.get("api-host")
            options[prefix + "api-port"] = self.flags.get("api-port")
            self._settings = load_settings(
                options, env=self.env, config_path=self.flags.get("config")
            )
        return self._settings

    def _config_name(self) -> str:
        path = self.settings().path
        return str(path) if path is not None else "vipu-cli.hcl"

    def user(self) -> UserClient:
        """The user endpoint (``vipu``; it serves ``vipu list allocations`` too)."""
        if self._user is None:
            config = self._config_name()
            settings = self.settings()
            self._user = UserClient(
                user_endpoint(settings),
                hint=f"--api-host/--api-port or {config}",
                credentials_hint=CREDENTIALS_HINT,
            )
        return self._user

    def admin(self) -> AdminClient:
        """The admin endpoint (``vipu-admin``)."""
        if self._admin is None:
            from vpod.client.admin import AdminClient

            self._admin = AdminClient(
                admin_endpoint(self.settings()),
                hint=self._admin_hint(self._config_name()),
                credentials_hint=CREDENTIALS_HINT,
            )
        return self._admin

    def _admin_hint(self, config: str) -> str:
        if self.admin_cli:
            return f"--api-host/--api-port, or admin-api-host/admin-api-port in {config}"
        return (
            f"admin-api-host/admin-api-port in {config} or VIPU_CLI_ADMIN_API_PORT;"
            " the admin port defaults to 8091"
        )

    def close(self) -> None:
        for client in (self._user, self._admin):
            if client is not None:
                client.close()
        self._user = self._admin = None


def session_of(ctx: click.Context) -> Session:
    session = ctx.find_object(Session)
    if session is None:  # only when a command is invoked outside its CLI
        raise CliError("internal error: no CLI session")
    return session


def _remember(flag: str) -> Callable[[click.Context, click.Parameter, Any], Any]:
    def callback(ctx: click.Context, _param: click.Parameter, value: Any) -> Any:
        if value is not None:
            session_of(ctx).flags[flag] = value
        return value

    return callback


def global_options(*, hidden: bool) -> Callable[[F], F]:
    """Add the global options to a command (hidden on subcommands, where they also work)."""
    specs: list[tuple[Sequence[str], dict[str, Any]]] = [
        (
            ("-H", "--api-host"),
            {"metavar": "HOST", "help": "Controller host [env VIPU_CLI_API_HOST]."},
        ),
        (
            ("--api-port",),
            {
                "type": PORT,
                "metavar": "PORT",
                "help": "Controller port [env VIPU_CLI_API_PORT; default 8090, admin 8091].",
            },
        ),
        (("--api-user-id",), {"metavar": "ID", "help": "User id sent with every call."}),
        (("--api-access-key",), {"metavar": "KEY", "help": "Access key sent with every call."}),
        (
            ("--config",),
            {
                "metavar": "FILE.hcl",
                "help": "Config file [env VIPU_CLI_CONFIG; default ./vipu-cli.hcl,"
                " then /etc/vipu/vipu-cli.hcl].",
            },
        ),
        (
            ("--timeout",),
            {
                "type": Seconds(),
                "metavar": "SECONDS",
                "help": "Deadline of each call [env VIPU_CLI_TIMEOUT; default 60].",
            },
        ),
    ]

    def decorate(command: F) -> F:
        for (names, extra), flag in zip(reversed(specs), reversed(GLOBAL_FLAGS), strict=True):
            command = click.option(
                *names,
                expose_value=False,
                hidden=hidden,
                callback=_remember(flag),
                **extra,
            )(command)
        return command

    return decorate


def json_option(command: F) -> F:
    """``--json``: print the wire reply as JSON instead of a table."""
    return click.option(
        "--json",
        "as_json",
        is_flag=True,
        help="Print the reply as JSON (field names of the .proto).",
    )(command)


def success(verb: str, kind: str, entity_id: str) -> None:
    """The one line a change prints: ``create partition (p1): success.``"""
    click.echo(f"{verb} {kind} ({entity_id}): success.")


def removed(kind: str, entity_id: str, as_json: bool) -> None:
    """What a removal prints: its success line, or with ``--json`` an object naming what went
    (``{"partition_id": "p1", "removed": true}``; the API's reply to a removal is empty)."""
    if as_json:
        echo_json({f"{kind.replace(' ', '_').replace('-', '_')}_id": entity_id, "removed": True})
    else:
        success("remove", kind, entity_id)


def removal(
    kind: str, force_help: str, remover: Callable[[click.Context], Callable[..., object]]
) -> Callable[[Callable[[], None]], click.Command]:
    """``remove KIND ID [--force]``, from a function holding its help.

    ``remover`` gives the client's call that removes one, taking the id and ``force``.
    """

    def decorate(described: Callable[[], None]) -> click.Command:
        @click.command(kind, context_settings=CONTEXT, help=described.__doc__)
        @click.argument("entity_id", metavar="ID")
        @click.option("--force", is_flag=True, help=force_help)
        @json_option
        @click.pass_context
        def remove(ctx: click.Context, entity_id: str, force: bool, as_json: bool) -> None:
            remover(ctx)(entity_id, force=force)
            removed(kind, entity_id, as_json)

        return remove

    return decorate


def echo_listing(
    as_json: bool, reply: Message, headers: Sequence[str], rows: Iterable[Sequence[object]]
) -> None:
    """What a list command prints: the reply as ``--json`` gives it, else a table of ``rows``."""
    if as_json:
        echo_json(message_dict(reply))
    else:
        click.echo(table(headers, rows))


def echo_json(data: object) -> None:
    click.echo(json_text(data))


class WholeNumber(click.ParamType):  # type: ignore[type-arg]
    """A whole number from ``minimum`` to ``maximum``, with messages that say so. The
    maximum is at most what the V-IPU wire carries (``uint32``), so a number the request
    could not hold is a usage error here, not a failure on the way out."""

    name = "N"

    def __init__(self, minimum: int = 1, maximum: int = UINT32_MAX) -> None:
        self.minimum = minimum
        self.maximum = maximum

    def convert(self, value: Any, param: click.Parameter | None, ctx: click.Context | None) -> int:
        if isinstance(value, int):
            number = value
        else:
            text = str(value).strip()
            try:
                number = int(text)
            except ValueError:
                if not text.lstrip("+-").isdigit():
                    self.fail(f"{excerpt(value, quote=True)} is not a whole number", param, ctx)
                # digits, but more than int() reads (4,300): out of range either way
                self._refuse(excerpt(text, quote=True), text.startswith("-"), param, ctx)
        if not self.minimum <= number <= self.maximum:
            self._refuse(excerpt(number), number < self.minimum, param, ctx)
        return number

    def _refuse(
        self, shown: str, small: bool, param: click.Parameter | None, ctx: click.Context | None
    ) -> NoReturn:
        bound = f"{self.minimum} or more" if small else f"at most {self.maximum}"
        self.fail(f"{shown} is too {'small' if small else 'large'}: use {bound}", param, ctx)


PORT = WholeNumber(1, 65535)


class Seconds(click.ParamType):  # type: ignore[type-arg]
    """A positive number of seconds (fractions allowed), at most a call's longest deadline."""

    name = "SECONDS"

    def convert(
        self, value: Any, param: click.Parameter | None, ctx: click.Context | None
    ) -> float:
        try:
            seconds = float(value)
        except (TypeError, ValueError):
            self.fail(f"{value!r} is not a number of seconds", param, ctx)
        if not seconds > 0:
            self.fail(f"{value!r} is not a positive number of seconds", param, ctx)
        if not seconds <= MAX_TIMEOUT_S:  # inf too
            self.fail(
                f"{value!r} seconds is too long: use at most {MAX_TIMEOUT_S:.0f} (a week)",
                param,
                ctx,
            )
        return seconds


def csv_list(_ctx: click.Context, _param: click.Parameter, value: str | None) -> list[str]:
    """Callback for ``a,b,c`` options: the items, blanks dropped."""
    if not value:
        return []
    return [item.strip() for item in value.split(",") if item.strip()]


def print_server_version(client: UserClient | AdminClient) -> None:
    version = client.version()
    click.echo(f"version: {version.version}")
    click.echo(f"host: {version.endpoint}")


def ipu_attributes_command(
    client_of: Callable[[click.Context], UserClient | AdminClient],
    *,
    summary: str,
    agents_help: str,
) -> click.Command:
    """``list ipu-attrs`` of either CLI, through the client ``client_of`` gives."""

    @click.command(
        "ipu-attrs",
        context_settings=CONTEXT,
        help=f"{summary}\n\nTable columns: Agent | IPU | Attribute | Value"
        " (one row per attribute).",
    )
    @click.option("--agents", metavar="A,B", callback=csv_list, help=agents_help)
    @json_option
    @click.pass_context
    def list_ipu_attrs(ctx: click.Context, agents: list[str], as_json: bool) -> None:
        entries = client_of(ctx).list_ipu_attributes(agents)
        if as_json:
            echo_json(message_dict(attributes_reply(entries)))
            return
        click.echo(table(IPU_ATTRIBUTE_HEADERS, ipu_attribute_rows(entries)))

    return list_ipu_attrs


def root_group(
    name: str, *, admin_cli: bool, example: str
) -> Callable[[Callable[[], None]], VipuGroup]:
    """The top-level group of ``vipu`` or ``vipu-admin``, from a function holding its help.

    Both take the global options and ``--server-version`` (the version of the endpoint the
    tool dials: the admin endpoint for ``vipu-admin``), before or after the command (the
    epilog says so with ``example``), and print their help when no command is given.
    """

    def decorate(described: Callable[[], None]) -> VipuGroup:
        @click.pass_context
        def root(ctx: click.Context, server_version: bool) -> None:
            if server_version:
                session = session_of(ctx)
                print_server_version(session.admin() if admin_cli else session.user())
                ctx.exit(0)
            if ctx.invoked_subcommand is None:
                click.echo(ctx.get_help())

        root.__doc__ = described.__doc__
        server_version = click.option(
            "--server-version",
            is_flag=True,
            help="Print the controller's version and address, then exit.",
        )
        epilog = f"Global options may also follow the command: {name} {example} -H ctl."
        group = click.group(name, cls=VipuGroup, admin_cli=admin_cli, epilog=epilog)
        made: VipuGroup = group(global_options(hidden=False)(server_version(root)))
        return made

    return decorate


class SubcommandGroup(FittingGroup):
    """``create``, ``list``, ... : groups whose commands carry the global options too."""

    def add_command(self, cmd: click.Command, name: str | None = None) -> None:
        global_options(hidden=True)(cmd)
        super().add_command(cmd, name)


class VipuGroup(FittingGroup):
    """The top-level group: runs the command and owns the one error exit."""

    def __init__(self, *args: Any, admin_cli: bool = False, **kwargs: Any) -> None:
        # Without a command it prints its help (the callback does).
        kwargs.setdefault("invoke_without_command", True)
        kwargs.setdefault("context_settings", CONTEXT)
        super().__init__(*args, **kwargs)
        self.admin_cli = admin_cli

    def main(
        self,
        args: Sequence[str] | None = None,
        prog_name: str | None = None,
        complete_var: str | None = None,
        standalone_mode: bool = True,
        **extra: Any,
    ) -> NoReturn:
        del standalone_mode  # always False inside: this main owns the exit status
        prog = prog_name or self.name or "vipu"
        session = Session(prog=prog, admin_cli=self.admin_cli)
        extra.setdefault("obj", session)
        code = EXIT_FAILURE
        try:
            result = super().main(
                args, prog_name=prog, complete_var=complete_var, standalone_mode=False, **extra
            )
            code = result if isinstance(result, int) else 0
        except click.exceptions.NoArgsIsHelpError as exc:
            click.echo(exc.ctx.get_help() if exc.ctx else exc.format_message(), err=True)
            code = EXIT_USAGE
        except click.UsageError as exc:
            command = exc.ctx.command_path if exc.ctx else prog
            _fail(prog, f"{exc.format_message()} (see '{command} --help')")
            code = EXIT_USAGE
        except click.ClickException as exc:
            _fail(prog, exc.format_message())
            code = exc.exit_code
        except CliError as exc:
            _fail(prog, str(exc))
            code = exc.exit_code
        except VpodError as exc:
            _fail(prog, str(exc))
            code = exit_code_of(exc)
        except click.Abort:
            _fail(prog, "aborted")
            code = EXIT_FAILURE
        except KeyboardInterrupt:
            _fail(prog, "interrupted")
            code = 130
        except OSError as exc:  # a file it reads or writes, or stdout (a full disk)
            _fail(prog, os_error_text(exc))
            code = EXIT_FAILURE
        except Exception as exc:
            if os.environ.get("VIPU_CLI_DEBUG"):
                traceback.print_exc()
            _fail(
                prog,
                f"internal error: {type(exc).__name__}: {exc}; please report it"
                " (VIPU_CLI_DEBUG=1 shows the traceback)",
            )
            code = EXIT_FAILURE
        finally:
            session.close()
        sys.exit(code)


def _fail(prog: str, message: str) -> None:
    click.echo(f"{prog}: error: {one_line(bounded(message))}", err=True)
