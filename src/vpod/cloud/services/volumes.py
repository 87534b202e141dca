"""Volume use-cases: create, attach, detach, delete (each returns a task), and reading.

Only VMs take external volumes: attaching to a dedicated vPOD or a bare-metal
GPU cluster is refused before anything happens. Boot volumes belong to their
server: they cannot be detached or deleted on their own (deleting the
cluster deletes them).
"""

from __future__ import annotations

from collections.abc import Awaitable, Mapping

from ..flavors import find_flavor
from ..metering import volume_entry
from ..model import errors
from ..model.records import Task, Volume
from ..model.task_params import VolumeAttachParams, VolumeDetachParams
from ..quotas import admit_within, volume_demand
from ..states import ALLOWED_FROM, Operation, VolumeStatus
from ..states import check_operation as check_state
from ..validation import check_name, check_volume_size, check_volume_type
from .context import CloudContext
from .project_resources import ProjectResources
from .projects import Principal
from .tasks import new_task


def new_volume(
    ctx: CloudContext,
    project_id: str,
    name: str,
    size_gib: int,
    volume_type: str,
    *,
    cluster_id: str | None = None,
) -> Volume:
    """The record of a data volume about to be created (CREATING), made now."""
    now = ctx.clock.now()
    return Volume(
        id=ctx.ids.new("vol"),
        project_id=project_id,
        name=name,
        size_gib=size_gib,
        volume_type=volume_type,
        boot=False,
        status=VolumeStatus.CREATING,
        created_at=now,
        updated_at=now,
        cluster_id=cluster_id,
    )


CLAIMS: Mapping[Operation, tuple[tuple[VolumeStatus, ...], VolumeStatus]] = {
    Operation.VOLUME_DELETE: ((VolumeStatus.AVAILABLE, VolumeStatus.ERROR), VolumeStatus.DELETING),
    Operation.VOLUME_ATTACH: ((VolumeStatus.AVAILABLE,), VolumeStatus.ATTACHING),
    Operation.VOLUME_DETACH: ((VolumeStatus.IN_USE,), VolumeStatus.DETACHING),
}
"""A volume's task: the statuses its operation may start from, and the volume's status
while it runs."""

OnCluster = VolumeAttachParams | VolumeDetachParams
"""An attachment's task parameters: they name the cluster its task claims too."""


class Volumes(ProjectResources[Volume]):
    what = "volume"
    lists_them = "vpod volume list"

    def _lookup(self, project_id: str, ref: str) -> Awaitable[Volume | None]:
        return self._ctx.records.find_volume(project_id, ref)

    async def find(self, principal: Principal, ref: str) -> Volume:
        return await self._find(principal, ref)

    async def list_volumes(self, principal: Principal) -> list[Volume]:
        return await self._ctx.records.list_volumes(project_id=principal.project())

    async def create(
        self, principal: Principal, name: str, size_gib: int, volume_type: str = "standard"
    ) -> Task:
        ctx = self._ctx
        project_id = principal.project()
        check_name("volume", name)
        check_volume_size(size_gib)
        check_volume_type(volume_type)
        volume = new_volume(ctx, project_id, name, size_gib, volume_type)
        now = volume.created_at
        task = new_task(ctx, Operation.VOLUME_CREATE, volume)
        entry = volume_entry(volume, VolumeStatus.CREATING, now)
        demand = volume_demand([size_gib])
        await ctx.records.create_volume(
            volume,
            task,
            meter=[entry],
            admit=admit_within(demand),
        )
        ctx.published([entry])
        ctx.submit(task.id)
        return task

    def _not_boot(self, volume: Volume, doing: str) -> None:
        if volume.boot:
            raise errors.FailedPrecondition(
                f"volume {volume.name} is the boot volume of a server: it cannot be {doing} on"
                " its own; delete the cluster to delete it"
            )

    async def delete(self, principal: Principal, ref: str) -> Task:
        volume = await self.find(principal, ref)
        self._not_boot(volume, "deleted")
        if volume.status == VolumeStatus.IN_USE:
            raise errors.FailedPrecondition(
                f"volume {volume.name} is attached: detach it first (`vpod volume detach`)"
            )
        return await self._claim(volume, Operation.VOLUME_DELETE)

    async def attach(
        self, principal: Principal, ref: str, cluster_ref: str, server: int = 1
    ) -> Task:
        volume = await self.find(principal, ref)
        cluster = await self._views.find(principal, cluster_ref)
        flavor = find_flavor(cluster.flavor)
        if not flavor.takes_volumes:
            raise errors.FailedPrecondition(
                f"cluster {cluster.name} is bare metal ({flavor.name}): bare-metal servers take"
                " no external volumes; use their local disk, or a virtual cluster"
            )
        self._not_boot(volume, "attached elsewhere")
        if volume.status != VolumeStatus.AVAILABLE:
            raise errors.FailedPrecondition(
                f"volume {volume.name} is {volume.status}: only an available volume can be attached"
            )
        check_state(Operation.VOLUME_ATTACH, cluster.status, flavor, cluster.name)
        if not 1 <= server <= cluster.server_count:
            raise errors.InvalidArgument(
                f"cluster {cluster.name} has servers 1 to {cluster.server_count}, not {server}"
            )
        params = VolumeAttachParams(cluster_id=cluster.id, server=server)
        return await self._claim(volume, Operation.VOLUME_ATTACH, params)

    async def detach(self, principal: Principal, ref: str) -> Task:
        volume = await self.find(principal, ref)
        self._not_boot(volume, "detached")
        if volume.status != VolumeStatus.IN_USE or volume.cluster_id is None:
            raise errors.FailedPrecondition(
                f"volume {volume.name} is {volume.status}: only an attached (in-use) volume can"
                " be detached"
            )
        params = VolumeDetachParams(cluster_id=volume.cluster_id)
        return await self._claim(volume, Operation.VOLUME_DETACH, params)

    async def _claim(
        self, volume: Volume, operation: Operation, params: OnCluster | None = None
    ) -> Task:
        """Start ``operation``'s task on the volume (and on the cluster ``params`` names, in a
        status the operation is allowed from), if the volume's status allows it."""
        ctx = self._ctx
        cluster_id = params.cluster_id if params is not None else None
        allowed, status = CLAIMS[operation]
        task = new_task(ctx, operation, volume, params)
        entry = volume_entry(volume, status, ctx.clock.now())
        await ctx.records.start_volume_task(
            volume.id,
            task,
            allowed=list(allowed),
            changes={"status": status, "updated_at": ctx.clock.now()},
            cluster=(cluster_id, sorted(ALLOWED_FROM[operation])) if cluster_id else None,
            meter=[entry],
        )
        ctx.published([entry])
        ctx.submit(task.id)
        return task
