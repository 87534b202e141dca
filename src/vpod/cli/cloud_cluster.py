"""``vpod cluster ...``: create, list, show, suspend, resume, resize, rebuild, reboot,
delete, metadata; ssh, ssh-proxy, ssh-config and keypair (``cloud_cluster_ssh``)."""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

import click

from .cloud_cluster_ssh import cluster_keypair, console, ssh, ssh_config, ssh_proxy
from .cloud_options import connection_options, list_command, show_command, task_command
from .cloud_output import cluster_text, clusters_table, emit
from .short_help import CONTEXT, FittingGroup

if TYPE_CHECKING:
    from vpod.client import CloudClient, ClusterOptions, Task


@click.group("cluster", context_settings=CONTEXT, cls=FittingGroup)
def cluster() -> None:
    """AI clusters: vPODs (virtual or dedicated) and GPU clusters.

    \b
      vpod cluster create train-1 --flavor g2a-ai-fast-v1pod-16 --volume data:200 --wait
      vpod cluster ssh train-1 -- vipu create partition p1 --size 4
      vpod cluster suspend train-1 --wait
    """


def _volumes(specs: tuple[str, ...], attach: tuple[str, ...]) -> list[dict[str, Any]]:
    volumes: list[dict[str, Any]] = []
    for spec in specs:
        parts = spec.split(":")
        if len(parts) not in (2, 3) or not parts[1].isdigit():
            raise click.BadParameter(
                f"{spec!r}: use NAME:GIB or NAME:GIB:TYPE, e.g. data:200", param_hint="--volume"
            )
        volume: dict[str, Any] = {"name": parts[0], "size_gib": int(parts[1])}
        if len(parts) == 3:
            volume["volume_type"] = parts[2]
        volumes.append(volume)
    return volumes + [{"id": ref} for ref in attach]


def _metadata(pairs: tuple[str, ...], option: str) -> dict[str, str]:
    metadata = {}
    for pair in pairs:
        key, eq, value = pair.partition("=")
        if not eq or not key:
            raise click.BadParameter(f"{pair!r}: use KEY=VALUE", param_hint=option)
        metadata[key] = value
    return metadata


@cluster.command("create", context_settings={"show_default": True})
@click.argument("name")
@click.option("--flavor", required=True, help="A flavor from `vpod flavors`.")
@click.option("--image", default=None, help="Boot image (default: the flavor's first).")
@click.option("--servers", type=click.IntRange(1, 32), default=None, help="GPU clusters only.")
@click.option(
    "--volume",
    "volume_specs",
    multiple=True,
    metavar="NAME:GIB[:TYPE]",
    help="A new data volume (repeatable; VM flavors only).",
)
@click.option("--attach", multiple=True, metavar="VOLUME", help="An available volume to attach.")
@click.option(
    "--boot-gib",
    type=click.IntRange(1),
    default=50,
    help="Boot volume size per server (VM flavors).",
)
@click.option("--meta", multiple=True, metavar="KEY=VALUE", help="Metadata (repeatable).")
@click.option(
    "--keypair",
    "keypairs",
    multiple=True,
    metavar="NAME",
    help="A keypair of yours that may log in over SSH (repeatable; `vpod keypair list`).",
)
@click.option(
    "--storage", default=None, metavar="STORAGE", help="Give the servers this dataset storage."
)
@click.option(
    "--mount", default=None, metavar="PATH", help="With --storage: mount the bucket at PATH."
)
@task_command
def create(
    client: CloudClient,
    name: str,
    flavor: str,
    image: str | None,
    servers: int | None,
    volume_specs: tuple[str, ...],
    attach: tuple[str, ...],
    boot_gib: int,
    meta: tuple[str, ...],
    keypairs: tuple[str, ...],
    storage: str | None,
    mount: str | None,
) -> Task:
    """Create cluster NAME of a flavor (prints the task; --wait follows it to the end)."""
    options: ClusterOptions = {
        "volumes": _volumes(volume_specs, attach),
        "boot_volume_gib": boot_gib,
        "metadata": _metadata(meta, "--meta"),
    }
    if keypairs:
        options["keypairs"] = list(keypairs)
    if image is not None:
        options["image"] = image
    if servers is not None:
        options["server_count"] = servers
    if mount is not None and storage is None:
        raise click.UsageError("--mount needs --storage: name the dataset storage to mount")
    if storage is not None:
        options["dataset_storage"] = storage
    if mount is not None:
        options["dataset_mount"] = mount
    return client.create_cluster(name, flavor, **options)


list_command(
    cluster, lambda client: client.list_clusters(), clusters_table, "Your project's clusters."
)
show_command(
    cluster,
    "CLUSTER",
    lambda client, ref: client.get_cluster(ref),
    cluster_text,
    "One cluster (by name or id) with its servers and volumes.",
)


def _action(name: str, doc: str) -> None:
    @cluster.command(name, help=doc)
    @click.argument("cluster_ref", metavar="CLUSTER")
    @task_command
    def command(client: CloudClient, cluster_ref: str) -> Task:
        act = {
            "suspend": client.suspend_cluster,
            "resume": client.resume_cluster,
            "reboot": client.reboot_cluster,
        }[name]
        return act(cluster_ref)


_action("suspend", "Suspend CLUSTER: free its compute (and IPUs), keep its volumes, stop paying.")
_action("resume", "Resume CLUSTER: new IPUs, servers back, partitions re-created.")
_action("reboot", "Reboot every server of CLUSTER.")


@cluster.command("resize")
@click.argument("cluster_ref", metavar="CLUSTER")
@click.option("--servers", type=click.IntRange(1, 32), required=True, help="New server count.")
@task_command
def resize(client: CloudClient, cluster_ref: str, servers: int) -> Task:
    """Change the number of servers of a GPU cluster."""
    return client.resize_cluster(cluster_ref, servers)


@cluster.command("rebuild")
@click.argument("cluster_ref", metavar="CLUSTER")
@click.option("--image", default=None, help="New image (default: the flavor's first).")
@task_command
def rebuild(client: CloudClient, cluster_ref: str, image: str | None) -> Task:
    """Re-image every server of CLUSTER (data volumes stay)."""
    return client.rebuild_cluster(cluster_ref, image)


@cluster.command("delete", short_help="Delete CLUSTER (keeps data volumes unless --with-volumes)")
@click.argument("cluster_ref", metavar="CLUSTER")
@click.option("--with-volumes", is_flag=True, help="Delete its data volumes too.")
@task_command
def delete(client: CloudClient, cluster_ref: str, with_volumes: bool) -> Task:
    """Delete CLUSTER (data volumes are detached and kept unless --with-volumes)."""
    return client.delete_cluster(cluster_ref, delete_volumes=with_volumes)


@cluster.command("metadata")
@click.argument("cluster_ref", metavar="CLUSTER")
@click.argument("pairs", nargs=-1, metavar="[KEY=VALUE]...")
@click.option("--replace", is_flag=True, help="Replace all metadata with PAIRS.")
@connection_options
def metadata(
    client: CloudClient, cluster_ref: str, pairs: tuple[str, ...], replace: bool, as_json: bool
) -> None:
    """Show CLUSTER's metadata, or set KEY=VALUE pairs."""
    if pairs or replace:
        wanted = _metadata(pairs, "KEY=VALUE")
        current = dict(client.set_cluster_metadata(cluster_ref, wanted, replace=replace).metadata)
    else:
        current = client.cluster_metadata(cluster_ref)
    emit(current, as_json, lambda m: "\n".join(f"{k}={v}" for k, v in sorted(m.items())))


cluster.add_command(ssh)
cluster.add_command(ssh_proxy)
cluster.add_command(ssh_config)
cluster.add_command(cluster_keypair)
cluster.add_command(console)
