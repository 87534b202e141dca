"""Resize (GPU clusters), rebuild, reboot and delete.

Resize: the API call already recorded the new server count (so quotas see
it at once), the new servers (BUILD) and their boot volumes, or which
servers go. CLUSTER_RESIZE takes host slots in the cluster's InfiniBand
fabric and builds the new servers, or deletes the leaving ones (their data
volumes are detached, not deleted); POST_DEPLOY_SETUP tells every server its
new peers. A failed growth removes what it added and leaves the cluster
ACTIVE at its old size; the task says why.

Rebuild re-images every server (data volumes stay attached) and, for vPODs,
writes a fresh ``vipu-cli.hcl`` with a new access key. Reboot restarts
every server. Delete releases the V-IPU side, deletes servers and boot
volumes, detaches data volumes (or deletes them when asked) and forgets the
cluster; metering keeps its history.
"""

from __future__ import annotations

from ..metering import cluster_entry
from ..model import errors
from ..model.results import ClusterChange
from ..model.task_params import DeleteParams, RebuildParams, ResizeParams
from ..runner import Job, Outcome
from ..states import ClusterStatus, Phase, ServerStatus
from .common import (
    build_servers,
    configure_servers,
    ended_as,
    flavor_of,
    place_on_hosts,
    remove_servers,
    servers_of,
    set_server_status,
    tear_down,
)


class ResizeCluster:
    async def run(self, job: Job) -> Outcome:
        cluster = await job.cluster()
        await job.phase(Phase.CLUSTER_RESIZE)
        params = job.params_as(ResizeParams)
        new_ids = set(params.new_server_ids)
        leaving = set(params.remove_server_ids)
        servers = await servers_of(job, cluster.id)
        if new_ids:
            await place_on_hosts(job, cluster, [s for s in servers if s.id in new_ids])
            cluster = await job.cluster()
            servers = await servers_of(job, cluster.id)
            await build_servers(job, cluster, [s for s in servers if s.id in new_ids])
        if leaving:
            await remove_servers(
                job, [s for s in servers if s.id in leaving], delete_data_volumes=False
            )
        remaining = await servers_of(job, cluster.id)
        await job.phase(Phase.POST_DEPLOY_SETUP)
        await configure_servers(job, cluster, remaining)
        return ended_as(job, cluster, ClusterStatus.ACTIVE)

    async def fail(self, job: Job, error: str) -> Outcome:
        cluster = await job.cluster()
        params = job.params_as(ResizeParams)
        new_ids = set(params.new_server_ids)
        if not new_ids:
            return ended_as(job, cluster, ClusterStatus.ERROR, f"resize failed: {error}")
        servers = await servers_of(job, cluster.id)
        await remove_servers(
            job, [s for s in servers if s.id in new_ids], delete_data_volumes=False
        )
        previous = params.previous
        flavor = flavor_of(cluster)
        entry = cluster_entry(cluster, ClusterStatus.ACTIVE, job.now, server_count=previous)
        return Outcome(
            cluster=ClusterChange(
                ClusterStatus.ACTIVE,
                server_count=previous,
                gpus=previous * flavor.gpus_per_server,
            ),
            meter=[entry],
        )


class RebuildCluster:
    async def run(self, job: Job) -> Outcome:
        cluster = await job.cluster()
        image = job.params_as(RebuildParams).image
        await job.phase(Phase.CLUSTER_REBUILD)
        servers = await servers_of(job, cluster.id)
        for server in servers:
            await job.ctx.compute.rebuild(server.id, image)
            await job.ctx.records.update_server(
                server.id,
                image=image,
                status=ServerStatus.ACTIVE.value,
                updated_at=job.now,
            )
        cluster = await job.ctx.records.update_cluster(cluster.id, image=image)
        await job.phase(Phase.POST_DEPLOY_SETUP)
        await configure_servers(job, cluster, await servers_of(job, cluster.id))
        return ended_as(job, cluster, ClusterStatus.ACTIVE)

    async def fail(self, job: Job, error: str) -> Outcome:
        return await _in_error(job, f"rebuild failed: {error}")


class RebootCluster:
    async def run(self, job: Job) -> Outcome:
        cluster = await job.cluster()
        await job.phase(Phase.POPLAR_SERVERS)
        for server in await servers_of(job, cluster.id):
            await set_server_status(job, server, ServerStatus.REBOOT)
            await job.ctx.compute.reboot(server.id)
            await set_server_status(job, server, ServerStatus.ACTIVE)
        return ended_as(job, cluster, ClusterStatus.ACTIVE)

    async def fail(self, job: Job, error: str) -> Outcome:
        return await _in_error(job, f"reboot failed: {error}")


class DeleteCluster:
    async def run(self, job: Job) -> Outcome:
        try:
            cluster = await job.cluster()
        except errors.NotFound:
            return Outcome()  # gone already: a restart interrupted the task after the end
        await job.phase(Phase.CLUSTER_CLEAN_UP)
        await tear_down(
            job, cluster, delete_data_volumes=job.params_as(DeleteParams).delete_volumes
        )
        entry = cluster_entry(cluster, ClusterStatus.DELETED, job.now, holds_servers=False)
        await job.ctx.records.delete_cluster(cluster.id, [entry])
        job.ctx.published([entry])
        return Outcome()

    async def fail(self, job: Job, error: str) -> Outcome:
        return await _in_error(job, f"delete failed: {error}; delete again")


async def _in_error(job: Job, why: str) -> Outcome:
    """The task's cluster ends in ERROR, ``why`` saying what failed."""
    return ended_as(job, await job.cluster(), ClusterStatus.ERROR, why)
