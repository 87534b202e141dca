"""Steps several operations share, each idempotent: running it twice does it once.

A step looks at what exists (store rows, driver state) before acting, so a
task that a controller restart interrupted can simply run again from the
start: servers already created are not created again, an allocation that
exists is reused, a volume already attached stays attached.
"""

from __future__ import annotations

import ipaddress
from collections.abc import Awaitable, Callable, Sequence
from enum import StrEnum
from typing import TypeVar

from vpod.placement import Rejected
from vpod.wire.field_copy import copy_all_fields

from .. import server_setup
from ..drivers import ServerSpec
from ..flavors import Flavor, find_flavor
from ..host_placement import place_servers
from ..metering import cluster_entry, volume_entry
from ..model import errors
from ..model.metering import MeterEntry
from ..model.records import Cluster, Server, Volume
from ..model.results import ClusterChange
from ..runner import Job, Outcome
from ..services.dataset_access import apply_dataset_change
from ..services.gpu_hosts import host_views
from ..services.keypairs import authorized_lines
from ..services.ssh_ports import assign_ports
from ..states import ClusterStatus, ServerStatus, VolumeStatus
from ..validation import network_cidr
from ..vipu import saved_spec

R = TypeVar("R")

PLACE_ATTEMPTS = 3


def ended_as(job: Job, cluster: Cluster, status: ClusterStatus, error: str = "") -> Outcome:
    """The operation leaves ``cluster`` at ``status`` (``error`` says why, empty: clears it),
    billed at that status from now on."""
    return Outcome(
        cluster=ClusterChange(status, error=error),
        meter=[cluster_entry(cluster, status, job.now)],
    )


def flavor_of(cluster: Cluster) -> Flavor:
    return find_flavor(cluster.flavor)


async def servers_of(job: Job, cluster_id: str) -> list[Server]:
    return await job.ctx.records.list_servers([cluster_id])


async def volumes_of(job: Job, cluster_id: str) -> list[Volume]:
    return await job.ctx.records.list_volumes(cluster_id=cluster_id)


def server_address(cluster: Cluster, position: int) -> str:
    return address_in(cluster.network.get("cidr") or network_cidr(cluster.id), position)


def address_in(cidr: str, position: int) -> str:
    """The address of the server at ``position`` in the cluster's subnet."""
    return str(ipaddress.ip_network(cidr).network_address + 10 + position)


def boot_volume_of(server: Server, volumes: Sequence[Volume]) -> Volume | None:
    return next((v for v in volumes if v.boot and v.server_id == server.id), None)


async def set_status(
    job: Job, cluster: Cluster, status: ClusterStatus, *, holds_servers: bool = True
) -> Cluster:
    """Move the cluster to ``status`` now, with its metering entry."""
    entry = cluster_entry(cluster, status, job.now, holds_servers=holds_servers)
    return await _metered(job, job.ctx.records.update_cluster, cluster.id, status, entry)


async def _metered(
    job: Job,
    update: Callable[..., Awaitable[R]],
    resource_id: str,
    status: StrEnum,
    entry: MeterEntry,
) -> R:
    """``update`` a resource to ``status`` now with its metering entry; the sink hears of the
    entry once it is stored."""
    updated = await update(resource_id, meter=[entry], status=status.value, updated_at=job.now)
    job.ctx.published([entry])
    return updated


async def set_server_status(job: Job, server: Server, status: ServerStatus) -> None:
    await job.ctx.records.update_server(server.id, status=status.value, updated_at=job.now)


# -- hosts --------------------------------------------------------------------------------------


async def place_on_hosts(job: Job, cluster: Cluster, servers: Sequence[Server]) -> None:
    """Give each server without a host the host slots its flavor needs (NoCapacity if none)."""
    flavor = flavor_of(cluster)
    if flavor.host_role is None:
        return
    waiting = [s for s in servers if s.host_id is None]
    if not waiting:
        return
    records = job.ctx.records
    for _ in range(PLACE_ATTEMPTS):
        views = await host_views(job.ctx)
        chosen = place_servers(views, flavor, len(waiting), fabric=cluster.fabric)
        if isinstance(chosen, Rejected):
            raise errors.NoCapacity(f"no capacity for cluster {cluster.name}: {chosen}")
        taken = True
        for server, choice in zip(waiting, chosen, strict=True):
            taken = await records.take_slots(server.id, choice.host_id, choice.slots)
            if not taken:
                break
        if not taken:  # another request took a slot first: place again on a fresh view
            for server in waiting:
                await records.release_slots(server.id)
            continue
        fabric = chosen[0].fabric if flavor.infiniband else None
        if fabric and fabric != cluster.fabric:
            await job.ctx.records.update_cluster(cluster.id, fabric=fabric)
        return
    raise errors.Unavailable(
        f"cluster {cluster.name}: other requests kept taking the chosen hosts; retry"
    )


# -- servers and volumes --------------------------------------------------------------------


async def build_servers(job: Job, cluster: Cluster, servers: Sequence[Server]) -> None:
    """Create boot volumes and servers that do not exist yet, each with its direct SSH port
    where the operator gives servers one; mark them ACTIVE."""
    flavor = flavor_of(cluster)
    await assign_ports(job.ctx, [s.id for s in servers], f"cluster {cluster.name}")
    volumes = await volumes_of(job, cluster.id)
    # The keypairs given to the cluster, for a back end that takes keys only at boot (Nova:
    # a keypair and cloud-init); the local driver writes them again once servers are up.
    public_keys = await authorized_lines(job.ctx, cluster.id)
    for server in servers:
        boot = boot_volume_of(server, volumes)
        if boot is not None and boot.status == VolumeStatus.CREATING:
            await job.ctx.volumes.create(boot.id, boot.size_gib, boot.volume_type, boot.image)
            await _volume_status(job, boot, VolumeStatus.IN_USE)
        await job.ctx.compute.create_server(
            copy_all_fields(
                ServerSpec,
                server,  # its name, cluster, image, address and host
                server_id=server.id,
                cluster_name=cluster.name,
                flavor=flavor.name,
                bare_metal=flavor.bare_metal,
                boot_volume_id=boot.id if boot is not None else None,
                local_disk_gib=0 if flavor.bare_metal else flavor.disk_gib,
                public_keys=public_keys,
            )
        )
        if server.status != ServerStatus.ACTIVE:
            await set_server_status(job, server, ServerStatus.ACTIVE)


async def _volume_status(job: Job, volume: Volume, status: VolumeStatus) -> Volume:
    entry = volume_entry(volume, status, job.now)
    return await _metered(job, job.ctx.records.update_volume, volume.id, status, entry)


async def attach_data_volumes(
    job: Job, cluster: Cluster, servers: Sequence[Server], volume_ids: Sequence[str]
) -> None:
    """Create (if new) and attach the cluster's data volumes to its first server."""
    if not volume_ids or not servers:
        return
    target = servers[0]
    for volume_id in volume_ids:
        volume = await job.ctx.records.get_volume(volume_id)
        if volume.status == VolumeStatus.CREATING:
            await job.ctx.volumes.create(volume.id, volume.size_gib, volume.volume_type, None)
            volume = await _volume_status(job, volume, VolumeStatus.ATTACHING)
        await job.ctx.volumes.attach(volume.id, target.id, volume.name)
        if volume.status != VolumeStatus.IN_USE or volume.server_id != target.id:
            await job.ctx.records.update_volume(
                volume.id,
                cluster_id=cluster.id,
                server_id=target.id,
                updated_at=job.now,
            )
            await _volume_status(job, volume, VolumeStatus.IN_USE)


async def remove_servers(job: Job, servers: Sequence[Server], *, delete_data_volumes: bool) -> None:
    """Delete servers: detach their data volumes (or delete them), delete boot volumes."""
    for server in servers:
        boot_volumes = []
        for volume in await volumes_of(job, server.cluster_id):
            if volume.server_id != server.id:
                continue
            if volume.boot:
                boot_volumes.append(volume)  # after the server: a back end keeps it in use
            elif volume.delete_with_cluster or delete_data_volumes:
                await delete_volume(job, volume, server_id=server.id)
            else:
                await job.ctx.volumes.detach(volume.id, server.id)
                await job.ctx.records.update_volume(
                    volume.id,
                    cluster_id=None,
                    server_id=None,
                    updated_at=job.now,
                )
                await _volume_status(job, volume, VolumeStatus.AVAILABLE)
        await job.ctx.compute.delete_server(server.id)
        for volume in boot_volumes:
            await delete_volume(job, volume, server_id=server.id)
        await job.ctx.records.delete_server(server.id)


async def delete_volume(job: Job, volume: Volume, *, server_id: str | None = None) -> None:
    if server_id is not None and not volume.boot:
        await job.ctx.volumes.detach(volume.id, server_id)
    await job.ctx.volumes.delete(volume.id)
    entry = volume_entry(volume, VolumeStatus.DELETED, job.now)
    await job.ctx.records.delete_volume(volume.id, [entry])
    job.ctx.published([entry])


# -- the cluster's network ------------------------------------------------------------------


async def create_network(job: Job, cluster: Cluster) -> Cluster:
    """NETWORK: the cluster's own network on the compute back end. The driver may hand out
    another subnet than the one asked for (taken on this host): the servers are then
    addressed in the one it gave, before anything is built."""
    asked = cluster.network.get("cidr") or network_cidr(cluster.id)
    subnet = await job.ctx.compute.create_network(cluster.id, asked)
    if cluster.network and subnet == asked:
        return cluster
    network = {
        "name": f"{cluster.name}-net",
        "interfaces": cluster.interfaces,
        **cluster.network,
        "cidr": subnet,
    }
    if subnet != asked:
        for server in await servers_of(job, cluster.id):
            await job.ctx.records.update_server(
                server.id, address=address_in(subnet, server.position)
            )
    return await job.ctx.records.update_cluster(cluster.id, network=network)


async def delete_network(job: Job, cluster: Cluster) -> None:
    await job.ctx.compute.delete_network(cluster.id)


async def tear_down(job: Job, cluster: Cluster, *, delete_data_volumes: bool) -> None:
    """Release what the cluster holds: a vPOD's partitions, allocation and V-IPU user, the
    servers and their boot volumes (data volumes detached, or deleted when asked), the
    network. Each step skips what is gone already, so a tear-down that stopped halfway runs
    again."""
    if flavor_of(cluster).is_vpod:
        await release_vipu(job, cluster, remove_user=True)
    servers = await servers_of(job, cluster.id)
    await remove_servers(job, servers, delete_data_volumes=delete_data_volumes)
    await delete_network(job, cluster)


# -- configuration --------------------------------------------------------------------------


async def configure_servers(job: Job, cluster: Cluster, servers: Sequence[Server]) -> None:
    """POST_DEPLOY_SETUP (see :func:`..server_setup.configure_servers`), after the dataset
    storage change the task asks for, if any."""
    await apply_dataset_change(job.ctx, cluster.id, job.params)
    change = job.params.dataset_change
    attaching = change is not None and change.storage_id is not None  # one it cannot serve fails
    warn = None if attaching else job.warn
    await server_setup.configure_servers(job.ctx, cluster, servers, job.secrets, warn)


# -- the V-IPU side of a vPOD ---------------------------------------------------------------


async def save_and_remove_partitions(job: Job, cluster: Cluster) -> Cluster:
    """Keep every partition's spec on the cluster, then remove the partitions (idempotent).

    Specs are stored before anything is removed and merged with what an
    earlier, interrupted attempt saved, so a restart never loses one.
    """
    allocation_id = cluster.allocation_id
    if allocation_id is None:
        return cluster
    saved = {p["id"]: p for p in cluster.saved_partitions or []}
    for _ in range(3):
        records = await job.ctx.vipu.partitions(allocation_id)
        if not records:
            break
        for record in records:
            saved.setdefault(record.id, saved_spec(record))
        cluster = await job.ctx.records.update_cluster(
            cluster.id, saved_partitions=list(saved.values())
        )
        for record in records:
            await job.ctx.vipu.remove_partition(record.id)
    if cluster.saved_partitions is None:
        cluster = await job.ctx.records.update_cluster(cluster.id, saved_partitions=[])
    return cluster


async def release_vipu(job: Job, cluster: Cluster, *, remove_user: bool) -> None:
    """Remove the vPOD's partitions (not saved) and allocation, and its user if asked."""
    user_id = cluster.vipu_user_id
    if cluster.allocation_id is not None:
        if user_id is not None:
            await job.ctx.vipu.revoke(user_id, cluster.allocation_id)
        for record in await job.ctx.vipu.partitions(cluster.allocation_id):
            await job.ctx.vipu.remove_partition(record.id)
        await job.ctx.vipu.remove_allocation(cluster.allocation_id)
    if remove_user and user_id is not None:
        await job.ctx.vipu.remove_user(user_id)
