"""Options every ``vpod`` cloud command takes: where the API is, the token, output, waiting."""

from __future__ import annotations

import functools
from collections.abc import Callable, Sequence
from datetime import UTC, datetime
from pathlib import Path
from typing import TYPE_CHECKING, Any, Protocol, TypeVar

import click

from vpod.client.cloud_config import resolve_cloud

from .cloud_output import emit, started, task_text, wait_for
from .errors import run_cli

if TYPE_CHECKING:
    from vpod.client import CloudClient, Task

F = TypeVar("F", bound=Callable[..., Any])

FILE = click.Path(dir_okay=False, path_type=Path)
"""A file named on the command line (a directory is refused), as a :class:`~pathlib.Path`."""


def connection_options(command: F) -> F:
    """``--url``, ``--token``, ``--config`` and ``--json``; passes ``client`` and ``as_json``."""

    @click.option("--url", default=None, metavar="URL", help="Cloud API base URL (VPOD_URL).")
    @click.option("--token", default=None, metavar="TOKEN", help="API token (VPOD_TOKEN).")
    @click.option(
        "--config",
        "config",
        type=FILE,
        default=None,
        help="Config file (VPOD_CONFIG; default: vpod-data/vpod-cli.toml).",
    )
    @click.option("--json", "as_json", is_flag=True, help="Print the API's JSON.")
    @functools.wraps(command)
    def wrapper(url: str | None, token: str | None, config: Path | None, **kwargs: Any) -> None:
        def body() -> None:
            # The cloud client (httpx, pydantic, every cloud shape) is imported when a
            # command runs, not when `vpod --help` lists the commands.
            from vpod.client import CloudClient

            with CloudClient(resolve_cloud(url, token, config)) as client:
                command(client=client, **kwargs)

        run_cli(body)

    return wrapper  # type: ignore[return-value]


class ApiRecord(Protocol):
    """A record of the cloud API as :mod:`vpod.client` reads it."""

    @property
    def raw(self) -> Any:
        """The API's JSON of it, which ``--json`` prints."""


def shows(
    text: Callable[[Any], str],
) -> Callable[[Callable[..., ApiRecord | Sequence[ApiRecord]]], Callable[..., None]]:
    """A command that prints what its function returns: a record of the API or a list of them.

    ``--json`` prints the API's JSON, else ``text`` of it; the connection options come too.
    """

    def decorate(command: Callable[..., ApiRecord | Sequence[ApiRecord]]) -> Callable[..., None]:
        @functools.wraps(command)
        def printing(client: CloudClient, as_json: bool, **kwargs: Any) -> None:
            found = command(client=client, **kwargs)
            raw = [r.raw for r in found] if isinstance(found, Sequence) else found.raw
            emit(raw, as_json, text)

        return connection_options(printing)

    return decorate


def list_command(
    group: click.Group,
    listing: Callable[[CloudClient], Sequence[ApiRecord]],
    text: Callable[[Any], str],
    help_text: str,
) -> None:
    """Add ``list`` to a resource's ``group``: the project's records that ``listing`` reads,
    printed as ``text`` (a table) or, with ``--json``, as the API's JSON."""

    @group.command("list", help=help_text)
    @shows(text)
    def list_records(client: CloudClient) -> Sequence[ApiRecord]:
        return listing(client)


def show_command(
    group: click.Group,
    metavar: str,
    fetch: Callable[[CloudClient, str], ApiRecord],
    text: Callable[[Any], str],
    help_text: str,
) -> None:
    """Add ``show METAVAR`` to a resource's ``group``: the one record ``fetch`` finds by the
    name or id given, printed as ``text`` or, with ``--json``, as the API's JSON."""

    @group.command("show", help=help_text)
    @click.argument("ref", metavar=metavar)
    @shows(text)
    def show_record(client: CloudClient, ref: str) -> ApiRecord:
        return fetch(client, ref)


def wait_option(command: F) -> F:
    return click.option(
        "--wait", is_flag=True, help="Block until the task ends, showing its phases."
    )(command)


def task_command(command: Callable[..., Task]) -> Callable[..., None]:
    """A command that starts a cloud task: ``--wait`` and the connection options.

    The decorated function returns the task its call started; it is reported as
    :func:`report_task` says.
    """

    @functools.wraps(command)
    def reporting(client: CloudClient, wait: bool, as_json: bool, **kwargs: Any) -> None:
        report_task(client, command(client=client, **kwargs), wait=wait, as_json=as_json)

    return wait_option(connection_options(reporting))


def moment(value: str | None, option: str) -> datetime | None:
    """The date or time an option such as ``--from`` gives (UTC unless it says otherwise)."""
    if value is None:
        return None
    try:
        found = datetime.fromisoformat(value.replace("Z", "+00:00"))
    except ValueError:
        raise click.BadParameter(
            f"{value!r} is not a date: use 2026-01-01 or 2026-01-01T12:00:00Z", param_hint=option
        ) from None
    return found if found.tzinfo is not None else found.replace(tzinfo=UTC)


def report_task(client: CloudClient, task: Task, *, wait: bool, as_json: bool) -> None:
    """After a mutating call: wait if asked, then print the task (or how to follow it)."""
    if wait:
        task = wait_for(client, task, quiet=as_json)
        emit(task.raw, as_json, task_text)
    elif as_json:
        emit(task.raw, True, task_text)
    else:
        click.echo(started(task.raw))
