"""``vpod task ...``: the cloud's long operations (list, show, wait)."""

from __future__ import annotations

from collections.abc import Sequence
from typing import TYPE_CHECKING

import click

from .cloud_options import ApiRecord, connection_options, shows, wait_option
from .cloud_output import (
    emit,
    task_text,
    tasks_table,
    wait_for,
)
from .short_help import CONTEXT, FittingGroup

if TYPE_CHECKING:
    from vpod.client import CloudClient


@click.group("task", context_settings=CONTEXT, cls=FittingGroup)
def task() -> None:
    """Tasks: what mutating calls started, their state and phases."""


@task.command("list")
@click.option("--resource", default=None, metavar="ID", help="Only this cluster's or volume's.")
@click.option("--state", default=None, type=click.Choice(["NEW", "RUNNING", "FINISHED", "ERROR"]))
@click.option("--limit", type=click.IntRange(1, 500), default=20, show_default=True)
@shows(tasks_table)
def task_list(
    client: CloudClient, resource: str | None, state: str | None, limit: int
) -> Sequence[ApiRecord]:
    """Your project's tasks, newest first."""
    return client.list_tasks(resource=resource, state=state, limit=limit)


@task.command("show")
@click.argument("task_id", metavar="TASK")
@wait_option
@connection_options
def task_show(client: CloudClient, task_id: str, wait: bool, as_json: bool) -> None:
    """One task; --wait follows it until it ends (exit status 1 if it ends in ERROR)."""
    found = client.get_task(task_id)
    if wait:
        found = wait_for(client, found, quiet=as_json)
    emit(found.raw, as_json, task_text)


# -- invoices and the project ------------------------------------------------------------------
