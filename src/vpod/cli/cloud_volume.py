"""``vpod volume ...``: a project's external volumes (create, attach, detach, delete)."""

from __future__ import annotations

from typing import TYPE_CHECKING

import click

from .cloud_options import list_command, show_command, task_command
from .cloud_output import (
    volumes_table,
)
from .short_help import CONTEXT, FittingGroup

if TYPE_CHECKING:
    from vpod.client import CloudClient, Task


@click.group("volume", context_settings=CONTEXT, cls=FittingGroup)
def volume() -> None:
    """Volumes: boot and data; data volumes attach to VM clusters (not bare metal)."""


@volume.command("create")
@click.argument("name")
@click.option("--size", "size_gib", type=click.IntRange(1), required=True, help="GiB.")
@click.option(
    "--type", "volume_type", default="standard", show_default=True, help="standard or ssd."
)
@task_command
def volume_create(client: CloudClient, name: str, size_gib: int, volume_type: str) -> Task:
    """Create data volume NAME."""
    return client.create_volume(name, size_gib, volume_type)


list_command(volume, lambda client: client.list_volumes(), volumes_table, "Your project's volumes.")
show_command(
    volume,
    "VOLUME",
    lambda client, ref: client.get_volume(ref),
    lambda v: volumes_table([v]),
    "One volume, by name or id.",
)


@volume.command("attach")
@click.argument("volume_ref", metavar="VOLUME")
@click.argument("cluster_ref", metavar="CLUSTER")
@click.option("--server", type=click.IntRange(1), default=1, show_default=True)
@task_command
def volume_attach(
    client: CloudClient,
    volume_ref: str,
    cluster_ref: str,
    server: int,
) -> Task:
    """Attach VOLUME to a server of CLUSTER (it appears as /mnt/VOLUME)."""
    return client.attach_volume(volume_ref, cluster_ref, server)


@volume.command("detach")
@click.argument("volume_ref", metavar="VOLUME")
@task_command
def volume_detach(client: CloudClient, volume_ref: str) -> Task:
    """Detach VOLUME from its cluster."""
    return client.detach_volume(volume_ref)


@volume.command("delete")
@click.argument("volume_ref", metavar="VOLUME")
@task_command
def volume_delete(client: CloudClient, volume_ref: str) -> Task:
    """Delete VOLUME (detach it first)."""
    return client.delete_volume(volume_ref)


# -- tasks -------------------------------------------------------------------------------------
