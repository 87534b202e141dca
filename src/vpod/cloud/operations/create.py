"""Creating a cluster, phase by phase; rolled back to an ERROR cluster holding nothing on failure.

vPOD (the spec's order): NETWORK (the network record), VIPU_CONTROLLER (the
V-IPU allocation of the flavor's size and a V-IPU user scoped to it),
IPU_SERVERS (the allocation's IPU-Machines answer), POPLAR_SERVERS (boot
volumes, servers, data volumes), POST_DEPLOY_SETUP (``vipu-cli.hcl`` and the
``IPUOF_VIPU_API_*`` environment on every server). GPU clusters skip the
V-IPU phases and take host slots in POPLAR_SERVERS (the phase names the
cluster's servers, whatever they are).
"""

from __future__ import annotations

from ..metering import cluster_entry
from ..model import errors
from ..model.results import ClusterChange, VolumeChange
from ..model.task_params import CreateParams
from ..runner import Job, Outcome
from ..states import ClusterStatus, Phase, VolumeStatus
from ..vipu import allocation_id_of, user_id_of
from .common import (
    attach_data_volumes,
    build_servers,
    configure_servers,
    create_network,
    delete_volume,
    ended_as,
    flavor_of,
    place_on_hosts,
    servers_of,
    set_status,
    tear_down,
)


class CreateCluster:
    async def run(self, job: Job) -> Outcome:
        ctx = job.ctx
        cluster = await job.cluster()
        flavor = flavor_of(cluster)
        if cluster.status != ClusterStatus.CREATING:
            cluster = await set_status(job, cluster, ClusterStatus.CREATING)

        await job.phase(Phase.NETWORK)
        cluster = await create_network(job, cluster)

        if flavor.is_vpod:
            await job.phase(Phase.VIPU_CONTROLLER)
            allocation = await ctx.vipu.ensure_allocation(
                allocation_id_of(cluster.id), flavor.ipus, prefer=cluster.vipu_cluster_id
            )
            user_id = user_id_of(cluster.id)
            cluster = await ctx.records.update_cluster(
                cluster.id,
                allocation_id=allocation.id,
                vipu_cluster_id=allocation.cluster_id,
                vipu_user_id=user_id,
            )
            key = await ctx.vipu.ensure_user(user_id, allocation.id)
            if key is not None:
                job.secrets["vipu_key"] = key

            await job.phase(Phase.IPU_SERVERS)
            silent = await ctx.vipu.unreachable_agents(allocation)
            if silent:
                raise errors.Unavailable(
                    f"the IPU-Machines of cluster {cluster.name} do not answer"
                    f" ({', '.join(silent)}): retry once they are back"
                )

        await job.phase(Phase.POPLAR_SERVERS)
        await place_on_hosts(job, cluster, await servers_of(job, cluster.id))
        cluster = await job.cluster()
        servers = await servers_of(job, cluster.id)
        await build_servers(job, cluster, servers)
        await attach_data_volumes(
            job, cluster, servers, job.params_as(CreateParams).data_volume_ids
        )

        await job.phase(Phase.POST_DEPLOY_SETUP)
        await configure_servers(job, cluster, servers)
        return ended_as(job, cluster, ClusterStatus.ACTIVE)

    async def fail(self, job: Job, error: str) -> Outcome:
        """Undo everything: the cluster stays, in ERROR, holding nothing and billed nothing."""
        ctx = job.ctx
        cluster = await job.cluster()
        if flavor_of(cluster).is_vpod:  # name what a create cut short may have made
            cluster = await ctx.records.update_cluster(
                cluster.id,
                allocation_id=cluster.allocation_id or allocation_id_of(cluster.id),
                vipu_user_id=cluster.vipu_user_id or user_id_of(cluster.id),
            )
        await tear_down(job, cluster, delete_data_volumes=False)
        params = job.params_as(CreateParams)
        new_ids = set(params.new_volume_ids)
        released: dict[str, VolumeChange] = {}
        for volume in await ctx.records.list_volumes(project_id=cluster.project_id):
            if volume.id in new_ids:
                await delete_volume(job, volume)
            elif volume.id in params.data_volume_ids:
                released[volume.id] = VolumeChange(VolumeStatus.AVAILABLE, detached=True)
        entry = cluster_entry(cluster, ClusterStatus.ERROR, job.now, holds_servers=False)
        return Outcome(
            cluster=ClusterChange(ClusterStatus.ERROR, error=error, vipu_released=True),
            volumes=released,
            meter=[entry],
        )
