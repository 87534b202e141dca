"""``vpod flavors``, ``vpod volume ...``, ``vpod task ...``, ``vpod invoice``, ``vpod project``."""

from __future__ import annotations

from datetime import UTC, datetime
from typing import Any

import click

from vpod.client import CloudClient

from .cloud_options import connection_options, report_task, wait_option
from .cloud_output import (
    emit,
    flavors_table,
    invoice_text,
    task_text,
    tasks_table,
    volumes_table,
    wait_for,
)
from .render import details, table
from .short_help import FittingGroup

CONTEXT = {"help_option_names": ["-h", "--help"], "max_content_width": 100}


@click.command("flavors", context_settings=CONTEXT)
@connection_options
def flavors(client: CloudClient, as_json: bool) -> None:
    """The flavor catalog: what each gives, its price and how many fit now (Capacity)."""
    emit([f.raw for f in client.flavors()], as_json, flavors_table)


# -- volumes -----------------------------------------------------------------------------------


@click.group("volume", context_settings=CONTEXT, cls=FittingGroup)
def volume() -> None:
    """Volumes: boot and data; data volumes attach to VM clusters (not bare metal)."""


@volume.command("create")
@click.argument("name")
@click.option("--size", "size_gib", type=click.IntRange(1), required=True, help="GiB.")
@click.option(
    "--type", "volume_type", default="standard", show_default=True, help="standard or ssd."
)
@wait_option
@connection_options
def volume_create(
    client: CloudClient, name: str, size_gib: int, volume_type: str, wait: bool, as_json: bool
) -> None:
    """Create data volume NAME."""
    task = client.create_volume(name, size_gib, volume_type)
    report_task(client, task, wait=wait, as_json=as_json)


@volume.command("list")
@connection_options
def volume_list(client: CloudClient, as_json: bool) -> None:
    """Your project's volumes."""
    emit([v.raw for v in client.list_volumes()], as_json, volumes_table)


@volume.command("show")
@click.argument("volume_ref", metavar="VOLUME")
@connection_options
def volume_show(client: CloudClient, volume_ref: str, as_json: bool) -> None:
    """One volume, by name or id."""
    emit(client.get_volume(volume_ref).raw, as_json, lambda v: volumes_table([v]))


@volume.command("attach")
@click.argument("volume_ref", metavar="VOLUME")
@click.argument("cluster_ref", metavar="CLUSTER")
@click.option("--server", type=click.IntRange(1), default=1, show_default=True)
@wait_option
@connection_options
def volume_attach(
    client: CloudClient,
    volume_ref: str,
    cluster_ref: str,
    server: int,
    wait: bool,
    as_json: bool,
) -> None:
    """Attach VOLUME to a server of CLUSTER (it appears as /mnt/VOLUME)."""
    task = client.attach_volume(volume_ref, cluster_ref, server)
    report_task(client, task, wait=wait, as_json=as_json)


@volume.command("detach")
@click.argument("volume_ref", metavar="VOLUME")
@wait_option
@connection_options
def volume_detach(client: CloudClient, volume_ref: str, wait: bool, as_json: bool) -> None:
    """Detach VOLUME from its cluster."""
    report_task(client, client.detach_volume(volume_ref), wait=wait, as_json=as_json)


@volume.command("delete")
@click.argument("volume_ref", metavar="VOLUME")
@wait_option
@connection_options
def volume_delete(client: CloudClient, volume_ref: str, wait: bool, as_json: bool) -> None:
    """Delete VOLUME (detach it first)."""
    report_task(client, client.delete_volume(volume_ref), wait=wait, as_json=as_json)


# -- tasks -------------------------------------------------------------------------------------


@click.group("task", context_settings=CONTEXT, cls=FittingGroup)
def task() -> None:
    """Tasks: what mutating calls started, their state and phases."""


@task.command("list")
@click.option("--resource", default=None, metavar="ID", help="Only this cluster's or volume's.")
@click.option("--state", default=None, type=click.Choice(["NEW", "RUNNING", "FINISHED", "ERROR"]))
@click.option("--limit", type=click.IntRange(1, 500), default=20, show_default=True)
@connection_options
def task_list(
    client: CloudClient, resource: str | None, state: str | None, limit: int, as_json: bool
) -> None:
    """Your project's tasks, newest first."""
    found = client.list_tasks(resource=resource, state=state, limit=limit)
    emit([t.raw for t in found], as_json, tasks_table)


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


def _moment(value: str | None, option: str) -> datetime | None:
    if value is None:
        return None
    try:
        moment = datetime.fromisoformat(value.replace("Z", "+00:00"))
    except ValueError:
        raise click.BadParameter(
            f"{value!r} is not a date: use 2026-01-01 or 2026-01-01T12:00:00Z", param_hint=option
        ) from None
    if moment.tzinfo is None:
        moment = moment.replace(tzinfo=UTC)
    return moment


@click.command("invoice", context_settings=CONTEXT)
@click.option(
    "--from",
    "start",
    default=None,
    metavar="DATE",
    help="Start (UTC unless zoned; default: the 1st of the month).",
)
@click.option("--to", "end", default=None, metavar="DATE", help="End, excluded (default: now).")
@connection_options
def invoice(client: CloudClient, start: str | None, end: str | None, as_json: bool) -> None:
    """Your project's invoice for a period, per minute and per resource."""
    found = client.invoice(_moment(start, "--from"), _moment(end, "--to"))
    emit(found.raw, as_json, invoice_text)


def _project_text(project: dict[str, Any]) -> str:
    head = details([("Project", project["id"]), ("Name", project["name"])])
    rows = [
        [name, project["usage"].get(name, 0), "unlimited" if limit == -1 else limit]
        for name, limit in project["quotas"].items()
    ]
    return f"{head}\n\n{table(['Quota', 'Used', 'Limit'], rows)}"


@click.command("project", context_settings=CONTEXT)
@click.option(
    "--check-flavor",
    default=None,
    metavar="FLAVOR",
    help="Also say whether a cluster of FLAVOR would fit the quotas.",
)
@click.option("--servers", type=click.IntRange(1, 32), default=None, help="With --check-flavor.")
@connection_options
def project(
    client: CloudClient, check_flavor: str | None, servers: int | None, as_json: bool
) -> None:
    """Your project: quotas and what is used; --check-flavor runs check_limits."""
    found = client.project().raw
    if check_flavor is None:
        emit(found, as_json, _project_text)
        return
    limits = client.check_limits(check_flavor, server_count=servers).raw
    if as_json:
        emit({"project": found, "limits": limits}, True, str)
        return
    click.echo(_project_text(found))
    if limits["fits"]:
        click.echo(f"\n{check_flavor}: fits the quotas")
    else:
        click.echo(f"\n{check_flavor}: does not fit:")
        for over in limits["exceeded"]:
            click.echo(f"  {over['message']}")
