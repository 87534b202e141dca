"""Suspend and resume, as the spec decides; both idempotent and safe to run again.

Suspend (CLUSTER_SUSPEND): the vPOD's V-IPU user loses its allocation (no
new partitions meanwhile), every partition's spec is saved on the cluster
and the partition removed, the allocation is released (its IPU-Machines are
free for others), the servers are shelved (VMs: offloaded, boot and data
volumes kept) or powered off (bare metal), then the cluster is SUSPENDED and
compute billing stops (virtual clusters only; bare metal bills on).

Resume (CLUSTER_RESUME, POST_DEPLOY_SETUP): a new allocation of the same id
and size, wherever it fits now; the user is granted it and keeps its id and
key; servers are unshelved (or started) and their V-IPU endpoint rewritten
(it may have moved); the saved partitions are created again with the same
ids; the cluster is ACTIVE and billed again. No capacity: the task ends
ERROR with a sentence saying so, nothing was changed, the cluster stays
SUSPENDED.
"""

from __future__ import annotations

from ..flavors import Flavor
from ..metering import cluster_entry
from ..model import errors
from ..model.records import Server
from ..model.results import ClusterChange
from ..runner import Job, Outcome
from ..states import ClusterStatus, Phase, ServerStatus
from ..vipu import allocation_id_of
from .common import (
    configure_servers,
    ended_as,
    flavor_of,
    save_and_remove_partitions,
    servers_of,
    set_server_status,
)

_STEADY = (ClusterStatus.ACTIVE, ClusterStatus.DEGRADED)


class SuspendCluster:
    async def run(self, job: Job) -> Outcome:
        ctx = job.ctx
        cluster = await job.cluster()
        if cluster.status == ClusterStatus.SUSPENDED:
            return Outcome()
        flavor = flavor_of(cluster)
        await job.phase(Phase.CLUSTER_SUSPEND)
        allocation_id = cluster.allocation_id
        if flavor.is_vpod and allocation_id is not None:
            if cluster.vipu_user_id is not None:
                await ctx.vipu.revoke(cluster.vipu_user_id, allocation_id)
            cluster = await save_and_remove_partitions(job, cluster)
            try:
                await ctx.vipu.remove_allocation(allocation_id)
            except errors.FailedPrecondition:
                # A partition appeared after the last listing: save and remove it too.
                cluster = await save_and_remove_partitions(job, cluster)
                await ctx.vipu.remove_allocation(allocation_id)
        for server in await servers_of(job, cluster.id):
            await _put_down(job, server, flavor)
        entry = cluster_entry(cluster, ClusterStatus.SUSPENDED, job.now)
        return Outcome(
            cluster=ClusterChange(
                ClusterStatus.SUSPENDED, error="", allocation_released=flavor.is_vpod
            ),
            meter=[entry],
        )

    async def fail(self, job: Job, error: str) -> Outcome:
        """Partly suspended: ERROR, saved specs kept; suspending again finishes the job."""
        cluster = await job.cluster()
        entry = cluster_entry(cluster, ClusterStatus.ERROR, job.now)
        return Outcome(
            cluster=ClusterChange(
                ClusterStatus.ERROR,
                error=f"suspend failed: {error}; suspend again to finish, or delete it",
            ),
            meter=[entry],
        )


class ResumeCluster:
    async def run(self, job: Job) -> Outcome:
        ctx = job.ctx
        cluster = await job.cluster()
        if cluster.status in _STEADY:
            return Outcome()
        flavor = flavor_of(cluster)
        await job.phase(Phase.CLUSTER_RESUME)
        if flavor.is_vpod:
            allocation_id = cluster.allocation_id or allocation_id_of(cluster.id)
            try:
                allocation = await ctx.vipu.ensure_allocation(
                    allocation_id, flavor.ipus, prefer=cluster.vipu_cluster_id
                )
            except errors.NoCapacity as exc:
                raise errors.NoCapacity(
                    f"cannot resume cluster {cluster.name}: {exc}; it stays SUSPENDED, retry"
                    " `vpod cluster resume` later"
                ) from None
            cluster = await ctx.records.update_cluster(
                cluster.id,
                allocation_id=allocation.id,
                vipu_cluster_id=allocation.cluster_id,
            )
        servers = await servers_of(job, cluster.id)
        for server in servers:
            if flavor.bare_metal:
                await ctx.compute.start(server.id)
            else:
                await ctx.compute.unshelve(server.id)
            await set_server_status(job, server, ServerStatus.ACTIVE)

        await job.phase(Phase.POST_DEPLOY_SETUP)
        await configure_servers(job, cluster, servers)
        if flavor.is_vpod and cluster.allocation_id is not None:
            # Partitions first, then the user's grant: the tenant cannot take their IPUs.
            for saved in cluster.saved_partitions or []:
                try:
                    await ctx.vipu.restore_partition(saved, cluster.allocation_id)
                except (errors.AlreadyExists, errors.NoCapacity, errors.InvalidArgument) as exc:
                    job.warn(f"partition {saved['id']} was not re-created: {exc}")
            if cluster.vipu_user_id is not None:
                await ctx.vipu.grant(cluster.vipu_user_id, cluster.allocation_id)
            await ctx.records.update_cluster(cluster.id, saved_partitions=None)
        return ended_as(job, cluster, ClusterStatus.ACTIVE)

    async def fail(self, job: Job, _error: str) -> Outcome:
        """Undo what resume did: no allocation, servers shelved again; still SUSPENDED."""
        ctx = job.ctx
        cluster = await job.cluster()
        flavor = flavor_of(cluster)
        allocation_id = cluster.allocation_id
        if flavor.is_vpod and allocation_id is not None:
            if cluster.vipu_user_id is not None:
                await ctx.vipu.revoke(cluster.vipu_user_id, allocation_id)
            cluster = await save_and_remove_partitions(job, cluster)
            await ctx.vipu.remove_allocation(allocation_id)
        for server in await servers_of(job, cluster.id):
            if server.status == ServerStatus.ACTIVE:
                await _put_down(job, server, flavor)
        return Outcome(
            cluster=ClusterChange(ClusterStatus.SUSPENDED, allocation_released=flavor.is_vpod)
        )


async def _put_down(job: Job, server: Server, flavor: Flavor) -> None:
    """A suspended server: bare metal is stopped (it keeps its disk), a VM shelved."""
    if flavor.bare_metal:
        await job.ctx.compute.stop(server.id)
        await set_server_status(job, server, ServerStatus.SHUTOFF)
    else:
        await job.ctx.compute.shelve(server.id)
        await set_server_status(job, server, ServerStatus.SHELVED_OFFLOADED)
